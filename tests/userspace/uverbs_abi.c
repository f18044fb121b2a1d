// SPDX-License-Identifier: GPL-2.0
/*
 * Raw uverbs ABI checks: ioctl header and attribute rules, write() rules,
 * handles, close with objects open. Sends bytes straight to
 * /dev/infiniband/uverbsN (no libibverbs) and prints one line per check:
 *   R ok <desc>            R fail <desc>: <why>
 * Every line also shows the errno seen, so the same program run against the
 * upstream stack (rdma_rxe) gives a comparable list.
 *
 *   uverbs_abi [-d /dev/infiniband/uverbs0] [-i driver_id] [-u]
 *
 * -u (upstream): skip the second GET_CONTEXT. Linux 7.3's
 * UVERBS_HANDLER(UVERBS_METHOD_GET_CONTEXT) frees the new ucontext with
 * kfree() when ib_init_ucontext() fails (EINVAL: the file has one already)
 * without rdma_restrack_put(), leaking the task reference that
 * rdma_restrack_set_name() took: kmemleak then reports the process's
 * task_struct, signal_struct, creds and exec state.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <rdma/ib_user_ioctl_cmds.h>
#include <rdma/ib_user_ioctl_verbs.h>
#include <rdma/ib_user_verbs.h>
#include <rdma/rdma_user_ioctl_cmds.h>

/* enum ib_qp_attr_mask, ib_qp_state, ib_qp_type and IB_ACCESS_* live in the
 * kernel's ib_verbs.h, not in uapi: the values used here. */
enum {
	IB_QP_STATE = 1 << 0, IB_QP_ACCESS_FLAGS = 1 << 3, IB_QP_PKEY_INDEX = 1 << 4,
	IB_QP_PORT = 1 << 5, IB_QP_QKEY = 1 << 6, IB_QP_SQ_PSN = 1 << 16, IB_QPS_INIT = 1, IB_QPS_RTS = 3, IB_QPT_RC = 2, IB_QPT_UD = 4,
	IB_ACCESS_LOCAL_WRITE = 1, IB_ACCESS_REMOTE_WRITE = 2, IB_ACCESS_REMOTE_READ = 4,
};

static const char *dev = "/dev/infiniband/uverbs0";
static uint32_t driver_id = 14; /* RDMA_DRIVER_RXE */
static int failures;
static int upstream;

struct req {
	struct ib_uverbs_ioctl_hdr hdr;
	struct ib_uverbs_attr attrs[8];
};

static void req_init(struct req *r, uint16_t obj, uint16_t meth, int n)
{
	memset(r, 0, sizeof(*r));
	r->hdr.length = sizeof(r->hdr) + n * sizeof(struct ib_uverbs_attr);
	r->hdr.object_id = obj;
	r->hdr.method_id = meth;
	r->hdr.num_attrs = n;
	r->hdr.driver_id = driver_id;
}

static int do_ioctl(int fd, struct req *r)
{
	return ioctl(fd, RDMA_VERBS_IOCTL, r) ? errno : 0;
}

static void expect(const char *desc, int got, int want)
{
	if (got == want) {
		printf("R ok %s (errno %d)\n", desc, got);
	} else {
		printf("R fail %s: errno %d (%s), expected %d (%s)\n", desc, got,
		       strerror(got), want, strerror(want));
		failures++;
	}
}

static void attr_const(struct ib_uverbs_attr *a, uint16_t id, uint64_t v, int mandatory)
{
	a->attr_id = id;
	a->len = 8;
	a->flags = mandatory ? UVERBS_ATTR_F_MANDATORY : 0;
	a->data = v;
}

static void attr_out(struct ib_uverbs_attr *a, uint16_t id, void *p, uint16_t len)
{
	a->attr_id = id;
	a->len = len;
	a->flags = UVERBS_ATTR_F_MANDATORY;
	a->data = (uintptr_t)p;
}

static int get_context(int fd)
{
	struct req r;
	uint32_t ncv = 0;
	uint64_t core = 0;

	req_init(&r, UVERBS_OBJECT_DEVICE, UVERBS_METHOD_GET_CONTEXT, 2);
	attr_out(&r.attrs[0], UVERBS_ATTR_GET_CONTEXT_NUM_COMP_VECTORS, &ncv, 4);
	attr_out(&r.attrs[1], UVERBS_ATTR_GET_CONTEXT_CORE_SUPPORT, &core, 8);
	return do_ioctl(fd, &r);
}

static int query_port(int fd, int port, int twice, int with_port)
{
	struct req r;
	unsigned char resp[48]; /* struct ib_uverbs_query_port_resp_ex */
	int n = 0;

	req_init(&r, UVERBS_OBJECT_DEVICE, UVERBS_METHOD_QUERY_PORT, 0);
	if (with_port)
		attr_const(&r.attrs[n++], UVERBS_ATTR_QUERY_PORT_PORT_NUM, port, 1);
	if (twice)
		attr_const(&r.attrs[n++], UVERBS_ATTR_QUERY_PORT_PORT_NUM, port, 1);
	attr_out(&r.attrs[n++], UVERBS_ATTR_QUERY_PORT_RESP, &resp, sizeof(resp));
	req_init(&r, UVERBS_OBJECT_DEVICE, UVERBS_METHOD_QUERY_PORT, n);
	/* req_init cleared the attributes: fill again. */
	n = 0;
	if (with_port)
		attr_const(&r.attrs[n++], UVERBS_ATTR_QUERY_PORT_PORT_NUM, port, 1);
	if (twice)
		attr_const(&r.attrs[n++], UVERBS_ATTR_QUERY_PORT_PORT_NUM, port, 1);
	attr_out(&r.attrs[n++], UVERBS_ATTR_QUERY_PORT_RESP, &resp, sizeof(resp));
	return do_ioctl(fd, &r);
}

/* write() of a legacy command: header + body; returns errno or 0. */
static int do_write(int fd, uint32_t cmd, void *body, size_t body_len, size_t out_words)
{
	char buf[512];
	struct ib_uverbs_cmd_hdr *h = (void *)buf;

	h->command = cmd;
	h->in_words = (sizeof(*h) + body_len) / 4;
	h->out_words = out_words;
	memcpy(buf + sizeof(*h), body, body_len);
	return write(fd, buf, sizeof(*h) + body_len) < 0 ? errno : 0;
}

static int alloc_pd(int fd, uint32_t *handle)
{
	struct ib_uverbs_alloc_pd_resp resp = {};
	struct ib_uverbs_alloc_pd cmd = { .response = (uintptr_t)&resp };
	int e = do_write(fd, IB_USER_VERBS_CMD_ALLOC_PD, &cmd, sizeof(cmd), sizeof(resp) / 4);

	*handle = resp.pd_handle;
	return e;
}

static int dealloc_pd(int fd, uint32_t handle)
{
	struct ib_uverbs_dealloc_pd cmd = { .pd_handle = handle };

	return do_write(fd, IB_USER_VERBS_CMD_DEALLOC_PD, &cmd, sizeof(cmd), 0);
}

/* ioctl DESTROY of a PD (UVERBS_METHOD_PD_DESTROY); returns errno or 0. */
static int destroy_pd_ioctl(int fd, uint32_t handle)
{
	struct req r;

	req_init(&r, UVERBS_OBJECT_PD, UVERBS_METHOD_PD_DESTROY, 1);
	r.attrs[0].attr_id = UVERBS_ATTR_DESTROY_PD_HANDLE;
	r.attrs[0].flags = UVERBS_ATTR_F_MANDATORY;
	r.attrs[0].data = handle;
	return do_ioctl(fd, &r);
}

/* write() of an extended command: both headers + body; returns errno or 0. */
static int do_write_ex(int fd, uint32_t cmd, void *body, size_t body_len, uint16_t in_words,
		       uint16_t out_words, void *resp, uint32_t reserved)
{
	char buf[512];
	struct ib_uverbs_cmd_hdr *h = (void *)buf;
	struct ib_uverbs_ex_cmd_hdr *x = (void *)(h + 1);

	memset(buf, 0, sizeof(*h) + sizeof(*x));
	h->command = IB_USER_VERBS_CMD_FLAG_EXTENDED | cmd;
	h->in_words = in_words;
	h->out_words = out_words;
	x->response = (uintptr_t)resp;
	x->cmd_hdr_reserved = reserved;
	memcpy(x + 1, body, body_len);
	return write(fd, buf, sizeof(*h) + sizeof(*x) + body_len) < 0 ? errno : 0;
}

/* CQ/QP write commands; every response has room for 64 bytes of driver
 * data after the core part (rdma_rxe answers mmap info there). */
static int create_cq(int fd, uint32_t cqe, uint32_t vec, int32_t chan, uint32_t *handle)
{
	struct {
		struct ib_uverbs_create_cq_resp core;
		char drv[64];
	} resp;
	struct ib_uverbs_create_cq cmd = { .response = (uintptr_t)&resp, .user_handle = 1,
					   .cqe = cqe, .comp_vector = vec, .comp_channel = chan };
	int e;

	memset(&resp, 0, sizeof(resp));
	e = do_write(fd, IB_USER_VERBS_CMD_CREATE_CQ, &cmd, sizeof(cmd), sizeof(resp) / 4);
	if (handle)
		*handle = resp.core.cq_handle;
	return e;
}

static int destroy_cq(int fd, uint32_t h)
{
	struct ib_uverbs_destroy_cq_resp resp;
	struct ib_uverbs_destroy_cq cmd = { .response = (uintptr_t)&resp, .cq_handle = h };

	return do_write(fd, IB_USER_VERBS_CMD_DESTROY_CQ, &cmd, sizeof(cmd), sizeof(resp) / 4);
}

static int create_qp(int fd, uint32_t pd, uint32_t scq, uint32_t rcq, uint8_t type, uint32_t *handle,
		     uint32_t *qpn)
{
	struct {
		struct ib_uverbs_create_qp_resp core;
		char drv[64];
	} resp;
	struct ib_uverbs_create_qp cmd = {
		.response = (uintptr_t)&resp, .user_handle = 2, .pd_handle = pd,
		.send_cq_handle = scq, .recv_cq_handle = rcq, .max_send_wr = 16,
		.max_recv_wr = 16, .max_send_sge = 1, .max_recv_sge = 1, .qp_type = type,
	};
	int e;

	memset(&resp, 0, sizeof(resp));
	e = do_write(fd, IB_USER_VERBS_CMD_CREATE_QP, &cmd, sizeof(cmd), sizeof(resp) / 4);
	if (handle)
		*handle = resp.core.qp_handle;
	if (qpn)
		*qpn = resp.core.qpn;
	return e;
}

static int destroy_qp(int fd, uint32_t h)
{
	struct ib_uverbs_destroy_qp_resp resp;
	struct ib_uverbs_destroy_qp cmd = { .response = (uintptr_t)&resp, .qp_handle = h };

	return do_write(fd, IB_USER_VERBS_CMD_DESTROY_QP, &cmd, sizeof(cmd), sizeof(resp) / 4);
}

static int modify_qp(int fd, uint32_t h, uint32_t mask, uint8_t state, uint8_t port)
{
	struct ib_uverbs_modify_qp cmd = { .qp_handle = h, .attr_mask = mask, .qp_state = state,
					   .port_num = port, .pkey_index = 0,
					   .qp_access_flags = IB_ACCESS_LOCAL_WRITE };

	return do_write(fd, IB_USER_VERBS_CMD_MODIFY_QP, &cmd, sizeof(cmd), 0);
}

static int query_qp(int fd, uint32_t h, struct ib_uverbs_query_qp_resp *resp)
{
	struct ib_uverbs_query_qp cmd = { .response = (uintptr_t)resp, .qp_handle = h };

	memset(resp, 0, sizeof(*resp));
	return do_write(fd, IB_USER_VERBS_CMD_QUERY_QP, &cmd, sizeof(cmd), sizeof(*resp) / 4);
}

/* write() of an extended command with its core request in body (in_words * 8
 * bytes, no driver request), out_words * 8 bytes of core response at resp,
 * then pout words for the driver (rdma_rxe answers its mmap info there and
 * fails a CQ or QP create without room for it). */
static int ex_cmd(int fd, uint32_t cmd, const void *body, uint16_t in_words, uint16_t out_words,
		  uint16_t pout, void *resp)
{
	char buf[512];
	struct ib_uverbs_cmd_hdr *h = (void *)buf;
	struct ib_uverbs_ex_cmd_hdr *x = (void *)(h + 1);

	memset(buf, 0, sizeof(*h) + sizeof(*x));
	h->command = IB_USER_VERBS_CMD_FLAG_EXTENDED | cmd;
	h->in_words = in_words;
	h->out_words = out_words;
	x->response = (uintptr_t)resp;
	x->provider_out_words = pout;
	memcpy(x + 1, body, in_words * 8);
	return write(fd, buf, sizeof(*h) + sizeof(*x) + in_words * 8) < 0 ? errno : 0;
}

/* The extended-command response buffer: out_words * 8 core bytes, then the
 * driver's 64. Filled with 0xff before each command, so that the bytes the
 * kernel zero-fills past the response can be seen. */
#define EX_OUT_DRV_WORDS 8
union ex_out {
	uint64_t w[32];
	struct ib_uverbs_ex_create_cq_resp cq;
	struct ib_uverbs_ex_create_qp_resp qp;
	struct ib_uverbs_ex_modify_qp_resp mod;
};

/* 0 if bytes [from, to) of the response are zero (the kernel's fill). */
static int zero_from(const union ex_out *o, size_t from, size_t to)
{
	const unsigned char *p = (const void *)o;

	for (size_t i = from; i < to; i++)
		if (p[i])
			return EINVAL;
	return 0;
}

/* EX_CREATE_CQ: *c, then the 8 bytes `trailing` past it (sent when in_words
 * is 5). */
static int ex_create_cq(int fd, const struct ib_uverbs_ex_create_cq *c, uint64_t trailing,
			uint16_t in_words, uint16_t out_words, union ex_out *o)
{
	uint64_t body[8] = { 0 };

	memcpy(body, c, sizeof(*c));
	body[sizeof(*c) / 8] = trailing;
	memset(o, 0xff, sizeof(*o));
	return ex_cmd(fd, IB_USER_VERBS_EX_CMD_CREATE_CQ, body, in_words, out_words,
		      EX_OUT_DRV_WORDS, o);
}

/* EX_CREATE_QP: an RC QP (16 WRs, 1 SGE each way) on pd with scq/rcq, with
 * comp_mask, create_flags and the reserved byte as given. */
static void ex_qp_cmd(struct ib_uverbs_ex_create_qp *c, uint32_t pd, uint32_t scq, uint32_t rcq)
{
	memset(c, 0, sizeof(*c));
	c->user_handle = 3;
	c->pd_handle = pd;
	c->send_cq_handle = scq;
	c->recv_cq_handle = rcq;
	c->max_send_wr = 16;
	c->max_recv_wr = 16;
	c->max_send_sge = 1;
	c->max_recv_sge = 1;
	c->qp_type = IB_QPT_RC;
}

static int ex_create_qp(int fd, const struct ib_uverbs_ex_create_qp *c, uint64_t trailing,
			uint16_t in_words, uint16_t out_words, union ex_out *o)
{
	uint64_t body[12] = { 0 };

	memcpy(body, c, sizeof(*c));
	body[sizeof(*c) / 8] = trailing;
	memset(o, 0xff, sizeof(*o));
	return ex_cmd(fd, IB_USER_VERBS_EX_CMD_CREATE_QP, body, in_words, out_words,
		      EX_OUT_DRV_WORDS, o);
}

/* EX_MODIFY_QP of qp with attr_mask mask to state (port 1, pkey 0, local
 * write); reserved is struct ib_uverbs_ex_modify_qp's last member. With
 * o NULL: no response buffer (out_words must then be 0). */
static int ex_modify_qp(int fd, uint32_t qp, uint32_t mask, uint8_t state, uint32_t reserved,
			uint64_t trailing, uint16_t in_words, uint16_t out_words, union ex_out *o)
{
	uint64_t body[16] = { 0 };
	struct ib_uverbs_ex_modify_qp c = {
		.base = { .qp_handle = qp, .attr_mask = mask, .qp_state = state, .port_num = 1,
			  .pkey_index = 0, .qp_access_flags = IB_ACCESS_LOCAL_WRITE },
		.reserved = reserved,
	};

	memcpy(body, &c, sizeof(c));
	body[sizeof(c) / 8] = trailing;
	if (o)
		memset(o, 0xff, sizeof(*o));
	return ex_cmd(fd, IB_USER_VERBS_EX_CMD_MODIFY_QP, body, in_words, out_words, 0, o);
}

static int reg_mr(int fd, uint32_t pd, void *addr, uint64_t len, uint64_t hca_va, uint32_t access,
		  uint32_t *handle)
{
	struct ib_uverbs_reg_mr_resp resp = {};
	struct ib_uverbs_reg_mr cmd = { .response = (uintptr_t)&resp, .start = (uintptr_t)addr,
					.length = len, .hca_va = hca_va, .pd_handle = pd,
					.access_flags = access };
	int e = do_write(fd, IB_USER_VERBS_CMD_REG_MR, &cmd, sizeof(cmd), sizeof(resp) / 4);

	if (handle)
		*handle = resp.mr_handle;
	return e;
}

static int dereg_mr(int fd, uint32_t h)
{
	struct ib_uverbs_dereg_mr cmd = { .mr_handle = h };

	return do_write(fd, IB_USER_VERBS_CMD_DEREG_MR, &cmd, sizeof(cmd), 0);
}

/* enum ib_mr_rereg_flags (kernel rdma/ib_verbs.h; libibverbs: IBV_REREG_MR_CHANGE_*). */
#define IB_MR_REREG_TRANS (1 << 0)
#define IB_MR_REREG_PD (1 << 1)
#define IB_MR_REREG_ACCESS (1 << 2)

/* write REREG_MR (ib_uverbs_rereg_mr()); returns errno or 0, the new keys in lkey, rkey. */
static int rereg_mr(int fd, uint32_t mr, uint32_t flags, void *start, uint64_t len, uint32_t pd,
		    uint32_t access, uint32_t *lkey, uint32_t *rkey)
{
	struct ib_uverbs_rereg_mr_resp resp = { .lkey = ~0u, .rkey = ~0u };
	struct ib_uverbs_rereg_mr cmd = { .response = (uintptr_t)&resp, .mr_handle = mr,
					  .flags = flags, .start = (uintptr_t)start, .length = len,
					  .hca_va = (uintptr_t)start, .pd_handle = pd,
					  .access_flags = access };
	int e = do_write(fd, IB_USER_VERBS_CMD_REREG_MR, &cmd, sizeof(cmd), sizeof(resp) / 4);

	if (lkey)
		*lkey = resp.lkey;
	if (rkey)
		*rkey = resp.rkey;
	return e;
}

/*
 * REREG_MR on an rxe device (rdma_rxe, and the mock that is compared with it):
 * rxe_rereg_user_mr() changes the PD and the access flags in place (the keys stay)
 * and answers EOPNOTSUPP for a new translation; ib_umem_check_rereg(): writable
 * access on memory pinned read-only is EACCES; access bits past
 * RXE_ACCESS_SUPPORTED_MR (zero-based, huge pages) are EOPNOTSUPP. A PD change
 * moves the PD's use: the old PD can go, the new one is EBUSY.
 */
static void rereg_rxe_test(int fd)
{
	long pg = sysconf(_SC_PAGESIZE);
	uint32_t pd1, pd2, mr, ro, lk = 0, rk = 0, lk2, rk2;
	struct ib_uverbs_reg_mr_resp resp = {};
	struct ib_uverbs_reg_mr cmd = { .response = (uintptr_t)&resp };
	void *buf = NULL;

	if (driver_id != 14 || posix_memalign(&buf, pg, 2 * pg))
		return;
	memset(buf, 0, 2 * pg);
	if (alloc_pd(fd, &pd1) || alloc_pd(fd, &pd2)) {
		printf("R fail rereg: two PDs\n");
		failures++;
		free(buf);
		return;
	}
	cmd.start = cmd.hca_va = (uintptr_t)buf;
	cmd.length = pg;
	cmd.pd_handle = pd1;
	cmd.access_flags = IB_UVERBS_ACCESS_LOCAL_WRITE;
	expect("write: REG_MR for REREG_MR",
	       do_write(fd, IB_USER_VERBS_CMD_REG_MR, &cmd, sizeof(cmd), sizeof(resp) / 4), 0);
	mr = resp.mr_handle;
	lk = resp.lkey;
	rk = resp.rkey;
	expect("write: REG_MR read-only for REREG_MR", reg_mr(fd, pd1, (char *)buf + pg, pg,
	       (uintptr_t)buf + pg, 0, &ro), 0);
	expect("write: REREG_MR without a flag is EINVAL",
	       rereg_mr(fd, mr, 0, NULL, 0, 0, 0, NULL, NULL), EINVAL);
	expect("write: REREG_MR with an unknown flag is EOPNOTSUPP",
	       rereg_mr(fd, mr, 1 << 3, NULL, 0, 0, 0, NULL, NULL), EOPNOTSUPP);
	expect("write: REREG_MR of ACCESS to local write + remote read",
	       rereg_mr(fd, mr, IB_MR_REREG_ACCESS, NULL, 0, 0,
			IB_UVERBS_ACCESS_LOCAL_WRITE | IB_UVERBS_ACCESS_REMOTE_READ, &lk2, &rk2), 0);
	expect("write: REREG_MR of ACCESS keeps the keys (rxe changes the MR in place)",
	       lk2 == lk && rk2 == rk ? 0 : EINVAL, 0);
	expect("write: REREG_MR of ACCESS with ZERO_BASED is EOPNOTSUPP (RXE_ACCESS_SUPPORTED_MR)",
	       rereg_mr(fd, mr, IB_MR_REREG_ACCESS, NULL, 0, 0,
			IB_UVERBS_ACCESS_LOCAL_WRITE | IB_UVERBS_ACCESS_ZERO_BASED, NULL, NULL),
	       EOPNOTSUPP);
	expect("write: REREG_MR of ACCESS with HUGETLB is EOPNOTSUPP (RXE_ACCESS_SUPPORTED_MR)",
	       rereg_mr(fd, mr, IB_MR_REREG_ACCESS, NULL, 0, 0, IB_UVERBS_ACCESS_HUGETLB, NULL,
			NULL),
	       EOPNOTSUPP);
	expect("write: REREG_MR of ACCESS to local write on memory pinned read-only is EACCES",
	       rereg_mr(fd, ro, IB_MR_REREG_ACCESS, NULL, 0, 0, IB_UVERBS_ACCESS_LOCAL_WRITE,
			NULL, NULL),
	       EACCES);
	expect("write: REREG_MR of a new translation is EOPNOTSUPP (rxe: PD and ACCESS only)",
	       rereg_mr(fd, mr, IB_MR_REREG_TRANS, buf, pg, 0, 0, NULL, NULL), EOPNOTSUPP);
	expect("write: REREG_MR of the PD", rereg_mr(fd, mr, IB_MR_REREG_PD, NULL, 0, pd2, 0,
						       &lk2, &rk2), 0);
	expect("write: REREG_MR of the PD keeps the keys", lk2 == lk && rk2 == rk ? 0 : EINVAL, 0);
	expect("write: REREG_MR of ACCESS and PD back at once",
	       rereg_mr(fd, mr, IB_MR_REREG_ACCESS | IB_MR_REREG_PD, NULL, 0, pd1,
			IB_UVERBS_ACCESS_LOCAL_WRITE, NULL, NULL), 0);
	expect("write: REREG_MR of the PD to a second one again",
	       rereg_mr(fd, mr, IB_MR_REREG_PD, NULL, 0, pd2, 0, NULL, NULL), 0);
	expect("write: DEREG_MR of the read-only MR", dereg_mr(fd, ro), 0);
	expect("write: the MR's old PD deallocates after REREG_MR moved it", dealloc_pd(fd, pd1), 0);
	expect("write: the MR's new PD is EBUSY", dealloc_pd(fd, pd2), EBUSY);
	expect("write: DEREG_MR of the re-registered MR", dereg_mr(fd, mr), 0);
	expect("write: REREG_MR of a deregistered MR is ENOENT",
	       rereg_mr(fd, mr, IB_MR_REREG_ACCESS, NULL, 0, 0, 0, NULL, NULL), ENOENT);
	expect("write: the new PD deallocates after DEREG_MR", dealloc_pd(fd, pd2), 0);
	free(buf);
}

/* UVERBS_METHOD_QUERY_GID_TABLE with entries of esize bytes into buf (len bytes). */
static int query_gid_table(int fd, uint64_t esize, void *buf, uint16_t len, uint64_t *num)
{
	struct req r;

	req_init(&r, UVERBS_OBJECT_DEVICE, UVERBS_METHOD_QUERY_GID_TABLE, 3);
	attr_const(&r.attrs[0], UVERBS_ATTR_QUERY_GID_TABLE_ENTRY_SIZE, esize, 1);
	attr_out(&r.attrs[1], UVERBS_ATTR_QUERY_GID_TABLE_RESP_ENTRIES, buf, len);
	attr_out(&r.attrs[2], UVERBS_ATTR_QUERY_GID_TABLE_RESP_NUM_ENTRIES, num, 8);
	return do_ioctl(fd, &r);
}

/* Destroy racing a use: two threads DEALLOC_PD the same handle at once. */
struct race {
	int fd;
	uint32_t handle;
	pthread_barrier_t *bar;
	int err;
	int ioctl_path;
};

/* Event delivery and accounting on the mock (upstream uverbs_cmd.c and
 * ev_queue handling in uverbs_main.c): the mock reports, for a QP moved to
 * ERR, a completion on its send CQ, IB_EVENT_CQ_ERR on that CQ and
 * IB_EVENT_QP_FATAL on the QP, from interrupt-like context. Each read
 * returns one event; an object's destroy drops its unread events and its
 * response counts those read (what libibverbs waits for before it frees). */
enum { IB_QPS_ERR = 6, IB_EVENT_CQ_ERR = 0, IB_EVENT_QP_FATAL = 1 };

static void events_test(int fd, int afd)
{
	struct ib_uverbs_create_comp_channel_resp cr = { .fd = -1 };
	struct ib_uverbs_create_comp_channel cc = { .response = (uintptr_t)&cr };
	struct ib_uverbs_destroy_cq_resp cq_resp = { 7, 7 };
	struct ib_uverbs_destroy_qp_resp qp_resp = { 7 };
	struct ib_uverbs_destroy_cq dcq = { .response = (uintptr_t)&cq_resp };
	struct ib_uverbs_async_event_desc d[2];
	uint32_t pd = ~0u, cq = ~0u, qp = ~0u;
	uint64_t ce[2];
	struct req r;
	int ch;

	expect("events: CREATE_COMP_CHANNEL",
	       do_write(fd, IB_USER_VERBS_CMD_CREATE_COMP_CHANNEL, &cc, sizeof(cc), sizeof(cr) / 4), 0);
	ch = (int)cr.fd;
	fcntl(ch, F_SETFL, O_NONBLOCK);
	expect("events: CQ (user handle 1) on the channel", create_cq(fd, 16, 0, ch, &cq), 0);
	expect("events: PD", alloc_pd(fd, &pd), 0);
	expect("events: RC QP (user handle 2)", create_qp(fd, pd, cq, cq, IB_QPT_RC, &qp, NULL), 0);
	/* RESET -> ERR is illegal (ib_modify_qp_is_ok()): INIT first. */
	expect("events: MODIFY_QP RESET->INIT",
	       modify_qp(fd, qp, IB_QP_STATE | IB_QP_PKEY_INDEX | IB_QP_PORT | IB_QP_ACCESS_FLAGS,
			 IB_QPS_INIT, 1), 0);
	expect("events: MODIFY_QP to ERR (the mock reports three events)",
	       modify_qp(fd, qp, IB_QP_STATE, IB_QPS_ERR, 0), 0);
	expect("comp channel: one event of 8 bytes is read",
	       read(ch, ce, sizeof(ce)) == 8 ? 0 : errno ? errno : EINVAL, 0);
	expect("comp channel: the event is the CQ's user handle", ce[0] == 1 ? 0 : EINVAL, 0);
	expect("comp channel: then empty (EAGAIN)", read(ch, ce, sizeof(ce)) < 0 ? errno : 0, EAGAIN);
	expect("async fd: one event per read, even with room for two",
	       read(afd, d, sizeof(d)) == sizeof(d[0]) ? 0 : errno ? errno : EINVAL, 0);
	expect("async fd: IB_EVENT_CQ_ERR with the CQ's user handle",
	       d[0].event_type == IB_EVENT_CQ_ERR && d[0].element == 1 ? 0 : EINVAL, 0);
	expect("async fd: IB_EVENT_QP_FATAL with the QP's user handle",
	       read(afd, d, sizeof(d)) == sizeof(d[0]) && d[0].event_type == IB_EVENT_QP_FATAL &&
	       d[0].element == 2 ? 0 : EINVAL, 0);
	/* A second round, left unread. */
	expect("events: MODIFY_QP to ERR again", modify_qp(fd, qp, IB_QP_STATE, IB_QPS_ERR, 0), 0);
	/* The QP through the ioctl destroy, the CQ through the write command. */
	req_init(&r, UVERBS_OBJECT_QP, UVERBS_METHOD_QP_DESTROY, 2);
	r.attrs[0].attr_id = UVERBS_ATTR_DESTROY_QP_HANDLE;
	r.attrs[0].flags = UVERBS_ATTR_F_MANDATORY;
	r.attrs[0].data = qp;
	attr_out(&r.attrs[1], UVERBS_ATTR_DESTROY_QP_RESP, &qp_resp, sizeof(qp_resp));
	expect("events: ioctl QP_DESTROY", do_ioctl(fd, &r), 0);
	expect("QP_DESTROY: events_reported 1 (the QP_FATAL read; the second one was not)",
	       qp_resp.events_reported == 1 ? 0 : EINVAL, 0);
	expect("async fd: the QP's unread event went with it; the CQ's second one is next",
	       read(afd, d, sizeof(d)) == sizeof(d[0]) && d[0].event_type == IB_EVENT_CQ_ERR &&
	       d[0].element == 1 ? 0 : EINVAL, 0);
	expect("async fd: then empty (EAGAIN)", read(afd, d, sizeof(d)) < 0 ? errno : 0, EAGAIN);
	dcq.cq_handle = cq;
	expect("events: DESTROY_CQ",
	       do_write(fd, IB_USER_VERBS_CMD_DESTROY_CQ, &dcq, sizeof(dcq), sizeof(cq_resp) / 4), 0);
	expect("DESTROY_CQ: comp_events_reported 1, async_events_reported 2",
	       cq_resp.comp_events_reported == 1 && cq_resp.async_events_reported == 2 ? 0 : EINVAL, 0);
	expect("comp channel: the CQ's unread completion went with it (EAGAIN)",
	       read(ch, ce, sizeof(ce)) < 0 ? errno : 0, EAGAIN);
	expect("events: DEALLOC_PD", dealloc_pd(fd, pd), 0);
	close(ch);
}

static void *race_thread(void *arg)
{
	struct race *r = arg;

	pthread_barrier_wait(r->bar);
	r->err = r->ioctl_path ? destroy_pd_ioctl(r->fd, r->handle) : dealloc_pd(r->fd, r->handle);
	return NULL;
}

static volatile int stop_users;

/* Keeps the file busy (QUERY_PORT, ioctl and write) while the race runs. It
 * allocates nothing: a PD allocated here could reuse the raced handle between
 * the two destroys (both stacks hand out the lowest free handle). */
static void *user_thread(void *arg)
{
	struct ib_uverbs_query_device_resp resp;
	struct ib_uverbs_query_device cmd = { .response = (uintptr_t)&resp };
	int fd = *(int *)arg;

	while (!stop_users) {
		query_port(fd, 1, 0, 1);
		do_write(fd, IB_USER_VERBS_CMD_QUERY_DEVICE, &cmd, sizeof(cmd), sizeof(resp) / 4);
	}
	return NULL;
}

/* FZ_METHOD_REG_MR and its attributes, from the Linux 7.3 uapi
 * (enum uverbs_methods_mr, enum uverbs_attrs_reg_mr_cmd_attr_ids): the
 * host's rdma-core 44 headers predate them. */
#define FZ_METHOD_REG_MR 5
enum {
	FZ_REG_MR_HANDLE,
	FZ_REG_MR_PD_HANDLE,
	FZ_REG_MR_DMA_HANDLE,
	FZ_REG_MR_IOVA,
	FZ_REG_MR_ADDR,
	FZ_REG_MR_LENGTH,
	FZ_REG_MR_ACCESS_FLAGS,
	FZ_REG_MR_FD,
	FZ_REG_MR_FD_OFFSET,
	FZ_REG_MR_RESP_LKEY,
	FZ_REG_MR_RESP_RKEY,
};

/* Found by the fuzzer's differential mode (host/uverbs-fuzz): the errnos
 * where ours differed from upstream's (Documentation/testing.md). */
static void fuzz_found_test(int fd)
{
	long pg = sysconf(_SC_PAGESIZE);
	char *two = mmap(NULL, 2 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint32_t pd = 0, mr = 0, lkey = 0, rkey = 0;
	uint64_t iova, len = 4096, fdoff = 0;
	void *buf = NULL;
	struct req r;

	if (two == MAP_FAILED) {
		printf("R fail fuzz-found: mmap\n");
		failures++;
		return;
	}
	mprotect(two + pg, pg, PROT_NONE);

	/* ib_uverbs_write(): the 8-byte header is copied alone; a legacy
	 * command whose buffer faults after it fails in verify_hdr(). */
	{
		struct ib_uverbs_cmd_hdr *h = (void *)(two + pg - sizeof(*h));

		h->command = IB_USER_VERBS_CMD_QUERY_DEVICE;
		h->in_words = 2; /* not count / 4 */
		h->out_words = 0;
		expect("write: a legacy header readable, the rest faulting, in_words != count/4 is EINVAL",
		       write(fd, h, 24) < 0 ? errno : 0, EINVAL);
		expect("write: count < 8 is EINVAL before any copy",
		       write(fd, two + pg, 4) < 0 ? errno : 0, EINVAL);
		expect("write: an unreadable header is EFAULT",
		       write(fd, two + pg, 24) < 0 ? errno : 0, EFAULT);
	}

	/* ib_safe_file_access(): a forked child has its own struct cred, so
	 * its write() on the inherited fd is EACCES (CVE-2016-4565); its
	 * ioctl() is not checked. */
	{
		pid_t c = fork();
		int st = 0;

		if (c == 0) {
			uint32_t h = 0;
			int we = alloc_pd(fd, &h);
			struct req q;

			req_init(&q, UVERBS_OBJECT_DEVICE, UVERBS_METHOD_QUERY_CONTEXT, 0);
			_exit(we == EACCES && do_ioctl(fd, &q) != EACCES ? 0 : 1);
		}
		if (c > 0)
			waitpid(c, &st, 0);
		expect("write: from a forked child on the inherited fd is EACCES (its ioctl is not)",
		       c > 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : EINVAL, 0);
	}

	/* ib_uverbs_get_context(): the response is written before
	 * ib_init_ucontext() finds the existing context. */
	{
		struct ib_uverbs_get_context gc = { .response = (uintptr_t)(two + pg) };

		expect("write: GET_CONTEXT with a context and an unwritable response is EFAULT",
		       do_write(fd, IB_USER_VERBS_CMD_GET_CONTEXT, &gc, sizeof(gc), 2), EFAULT);
	}
	/* alloc_uobj(): a NEW attribute needs the context when it is parsed,
	 * before a later unknown mandatory attribute. */
	{
		int nf = open(dev, O_RDWR | O_CLOEXEC);
		struct req a;

		req_init(&a, UVERBS_OBJECT_ASYNC_EVENT, UVERBS_METHOD_ASYNC_EVENT_ALLOC, 2);
		a.attrs[0].attr_id = UVERBS_ATTR_ASYNC_EVENT_ALLOC_FD_HANDLE;
		a.attrs[0].flags = UVERBS_ATTR_F_MANDATORY;
		attr_const(&a.attrs[1], 0x28, 0, 1);
		expect("ioctl: ASYNC_EVENT_ALLOC without a context, then an unknown mandatory attribute, is EINVAL",
		       do_ioctl(nf, &a), EINVAL);
		/* verify_hdr(): an extended command's response range must pass
		 * access_ok() before the handler (and its context check) runs. */
		{
			struct ib_uverbs_ex_query_device q = {};
			union ex_out o;

			expect("write: EX_QUERY_DEVICE with a kernel response address, no context, is EFAULT",
			       ex_cmd(nf, IB_USER_VERBS_EX_CMD_QUERY_DEVICE, &q, sizeof(q) / 8,
				      sizeof(o.w) / 8, 0, (void *)0xffffffff81000000ull), EFAULT);
			expect("write: EX_QUERY_DEVICE with a user response, no context, is EINVAL",
			       ex_cmd(nf, IB_USER_VERBS_EX_CMD_QUERY_DEVICE, &q, sizeof(q) / 8,
				      sizeof(o.w) / 8, 0, &o), EINVAL);
		}
		close(nf);
	}

	if (alloc_pd(fd, &pd)) {
		printf("R fail fuzz-found: ALLOC_PD\n");
		failures++;
		return;
	}
	/* lookup_get_idr_uobject(): ids are 32-bit, a larger one is ENOENT. */
	{
		struct req d;

		req_init(&d, UVERBS_OBJECT_PD, UVERBS_METHOD_PD_DESTROY, 1);
		d.attrs[0].attr_id = UVERBS_ATTR_DESTROY_PD_HANDLE;
		d.attrs[0].flags = UVERBS_ATTR_F_MANDATORY;
		d.attrs[0].data = (1ull << 32) | pd;
		expect("ioctl: PD_DESTROY of handle 2^32 + a live one is ENOENT", do_ioctl(fd, &d),
		       ENOENT);
	}

	/* rxe_cq_chk_attr(): cqe 0 or past max_cqe is EINVAL (the mock as rxe). */
	expect("write: CREATE_CQ with cqe 0x10000 (past max_cqe) is EINVAL",
	       create_cq(fd, 0x10000, 0, -1, NULL), EINVAL);
	expect("write: CREATE_CQ with cqe 0 is EINVAL", create_cq(fd, 0, 0, -1, NULL), EINVAL);

	/* UVERBS_HANDLER(UVERBS_METHOD_QP_CREATE): the handles by type, an
	 * absent PD or CQ is ENOENT (uverbs_attr_get_obj()); an unknown type
	 * EINVAL. Each request drops one attribute of nine. */
	{
		struct ib_uverbs_qp_cap cap = { .max_send_wr = 4, .max_recv_wr = 4,
						.max_send_sge = 1, .max_recv_sge = 1 }, rcap;
		uint32_t cq = 0, qpn;
		struct req q;
		int drop;
		static const char *const what[] = {
			"ioctl: QP_CREATE without PD_HANDLE is ENOENT",
			"ioctl: QP_CREATE without SEND_CQ_HANDLE is ENOENT",
			"ioctl: QP_CREATE (RC) without RECV_CQ_HANDLE is ENOENT",
		};
		static const uint16_t dropped[] = { UVERBS_ATTR_CREATE_QP_PD_HANDLE,
						    UVERBS_ATTR_CREATE_QP_SEND_CQ_HANDLE,
						    UVERBS_ATTR_CREATE_QP_RECV_CQ_HANDLE };

		expect("write: CREATE_CQ for the ioctl QP creates", create_cq(fd, 16, 0, -1, &cq), 0);
		for (drop = 0; drop < 4; drop++) {
			struct ib_uverbs_attr all[9] = {
				{ .attr_id = UVERBS_ATTR_CREATE_QP_HANDLE, .flags = UVERBS_ATTR_F_MANDATORY },
				{ .attr_id = UVERBS_ATTR_CREATE_QP_PD_HANDLE, .data = pd },
				{ .attr_id = UVERBS_ATTR_CREATE_QP_SEND_CQ_HANDLE, .data = cq },
				{ .attr_id = UVERBS_ATTR_CREATE_QP_RECV_CQ_HANDLE, .data = cq },
			};
			int i, n = 0;

			attr_const(&all[4], UVERBS_ATTR_CREATE_QP_TYPE, drop == 3 ? 7 : IB_UVERBS_QPT_RC, 1);
			attr_const(&all[5], UVERBS_ATTR_CREATE_QP_USER_HANDLE, 5, 1);
			attr_out(&all[6], UVERBS_ATTR_CREATE_QP_CAP, &cap, sizeof(cap));
			attr_out(&all[7], UVERBS_ATTR_CREATE_QP_RESP_CAP, &rcap, sizeof(rcap));
			attr_out(&all[8], UVERBS_ATTR_CREATE_QP_RESP_QP_NUM, &qpn, 4);
			req_init(&q, UVERBS_OBJECT_QP, UVERBS_METHOD_QP_CREATE, 8);
			for (i = 0; i < 9; i++)
				if (drop == 3 ? i != 3 : all[i].attr_id != dropped[drop] || i > 3)
					q.attrs[n++] = all[i];
			expect(drop == 3 ? "ioctl: QP_CREATE of an unknown type (7), no RECV_CQ, is EINVAL (the type first)" : what[drop],
			       do_ioctl(fd, &q), drop == 3 ? EINVAL : ENOENT);
		}
		expect("write: DESTROY_CQ of the ioctl QP creates' CQ", destroy_cq(fd, cq), 0);
	}

	/* lookup_get_fd_uobject(): an fd attribute's value that is no int is
	 * EINVAL (before fget(): EBADF). */
	{
		uint32_t cqe_out = 0;
		struct req c;

		req_init(&c, UVERBS_OBJECT_CQ, UVERBS_METHOD_CQ_CREATE, 6);
		c.attrs[0].attr_id = UVERBS_ATTR_CREATE_CQ_HANDLE;
		c.attrs[0].flags = UVERBS_ATTR_F_MANDATORY;
		attr_const(&c.attrs[1], UVERBS_ATTR_CREATE_CQ_CQE, 16, 1);
		attr_const(&c.attrs[2], UVERBS_ATTR_CREATE_CQ_USER_HANDLE, 1, 1);
		attr_const(&c.attrs[3], UVERBS_ATTR_CREATE_CQ_COMP_VECTOR, 0, 1);
		attr_out(&c.attrs[4], UVERBS_ATTR_CREATE_CQ_RESP_CQE, &cqe_out, 4);
		c.attrs[5].attr_id = UVERBS_ATTR_CREATE_CQ_EVENT_FD;
		c.attrs[5].data = 1ull << 40;
		expect("ioctl: CQ_CREATE with an EVENT_FD value past int is EINVAL", do_ioctl(fd, &c),
		       EINVAL);
	}
	/* UVERBS_HANDLER(UVERBS_METHOD_SRQ_CREATE): a tag-matching SRQ needs a
	 * CQ (absent: ENOENT), an unknown type is EINVAL, both before the driver. */
	{
		struct {
			struct ib_uverbs_ioctl_hdr hdr;
			struct ib_uverbs_attr attrs[9];
		} q;
		uint32_t rwr, rsge;
		int k;

		for (k = 0; k < 2; k++) {
			memset(&q, 0, sizeof(q));
			q.hdr.length = sizeof(q);
			q.hdr.object_id = UVERBS_OBJECT_SRQ;
			q.hdr.method_id = UVERBS_METHOD_SRQ_CREATE;
			q.hdr.num_attrs = 9;
			q.hdr.driver_id = driver_id;
			q.attrs[0].attr_id = UVERBS_ATTR_CREATE_SRQ_HANDLE;
			q.attrs[0].flags = UVERBS_ATTR_F_MANDATORY;
			q.attrs[1].attr_id = UVERBS_ATTR_CREATE_SRQ_PD_HANDLE;
			q.attrs[1].flags = UVERBS_ATTR_F_MANDATORY;
			q.attrs[1].data = pd;
			attr_const(&q.attrs[2], UVERBS_ATTR_CREATE_SRQ_TYPE, k == 0 ? 2 : 3, 1);
			attr_const(&q.attrs[3], UVERBS_ATTR_CREATE_SRQ_USER_HANDLE, 1, 1);
			attr_const(&q.attrs[4], UVERBS_ATTR_CREATE_SRQ_MAX_WR, 16, 1);
			attr_const(&q.attrs[5], UVERBS_ATTR_CREATE_SRQ_MAX_SGE, 1, 1);
			attr_const(&q.attrs[6], UVERBS_ATTR_CREATE_SRQ_LIMIT, 0, 1);
			q.attrs[4].len = q.attrs[5].len = q.attrs[6].len = 4;
			attr_out(&q.attrs[7], UVERBS_ATTR_CREATE_SRQ_RESP_MAX_WR, &rwr, 4);
			attr_out(&q.attrs[8], UVERBS_ATTR_CREATE_SRQ_RESP_MAX_SGE, &rsge, 4);
			expect(k == 0 ? "ioctl: SRQ_CREATE of a tag-matching SRQ without a CQ is ENOENT"
				      : "ioctl: SRQ_CREATE of an unknown type (3) is EINVAL",
			       ioctl(fd, RDMA_VERBS_IOCTL, &q) ? errno : 0, k == 0 ? ENOENT : EINVAL);
		}
	}

	/* FZ_METHOD_REG_MR (uverbs_std_types_mr.c). */
	if (posix_memalign(&buf, 4096, 4096) == 0) {
		iova = (uintptr_t)buf;
		req_init(&r, UVERBS_OBJECT_MR, FZ_METHOD_REG_MR, 8);
		r.attrs[0].attr_id = FZ_REG_MR_HANDLE;
		r.attrs[0].flags = UVERBS_ATTR_F_MANDATORY;
		r.attrs[1].attr_id = FZ_REG_MR_PD_HANDLE;
		r.attrs[1].flags = UVERBS_ATTR_F_MANDATORY;
		r.attrs[1].data = pd;
		attr_const(&r.attrs[2], FZ_REG_MR_IOVA, iova, 1);
		attr_const(&r.attrs[3], FZ_REG_MR_LENGTH, len, 1);
		attr_const(&r.attrs[4], FZ_REG_MR_ACCESS_FLAGS, IB_UVERBS_ACCESS_LOCAL_WRITE, 1);
		attr_const(&r.attrs[5], FZ_REG_MR_ADDR, iova, 0);
		attr_out(&r.attrs[6], FZ_REG_MR_RESP_LKEY, &lkey, 4);
		attr_out(&r.attrs[7], FZ_REG_MR_RESP_RKEY, &rkey, 4);
		expect("ioctl: REG_MR", do_ioctl(fd, &r), 0);
		mr = r.attrs[0].data;
		/* UVERBS_HANDLER(UVERBS_METHOD_QUERY_MR): the keys, mr->length and
		 * mr->iova as REG_MR set them; IOVA is optional. */
		{
			uint32_t ql = 0, qr = 0;
			uint64_t qlen = 0, qiova = 0;
			struct req q;

			req_init(&q, UVERBS_OBJECT_MR, UVERBS_METHOD_QUERY_MR, 5);
			q.attrs[0].attr_id = UVERBS_ATTR_QUERY_MR_HANDLE;
			q.attrs[0].flags = UVERBS_ATTR_F_MANDATORY;
			q.attrs[0].data = mr;
			attr_out(&q.attrs[1], UVERBS_ATTR_QUERY_MR_RESP_LKEY, &ql, 4);
			attr_out(&q.attrs[2], UVERBS_ATTR_QUERY_MR_RESP_RKEY, &qr, 4);
			attr_out(&q.attrs[3], UVERBS_ATTR_QUERY_MR_RESP_LENGTH, &qlen, 8);
			attr_out(&q.attrs[4], UVERBS_ATTR_QUERY_MR_RESP_IOVA, &qiova, 8);
			expect("ioctl: QUERY_MR", do_ioctl(fd, &q), 0);
			/* mr->length and mr->iova are the driver's after an ioctl
			 * REG_MR (its handler sets neither; rxe leaves them 0, mlx5
			 * sets them): only the keys are compared here. */
			expect("ioctl: QUERY_MR answers REG_MR's lkey and rkey",
			       ql == lkey && qr == rkey ? 0 : EINVAL, 0);
			req_init(&q, UVERBS_OBJECT_MR, UVERBS_METHOD_QUERY_MR, 4);
			q.attrs[0].attr_id = UVERBS_ATTR_QUERY_MR_HANDLE;
			q.attrs[0].flags = UVERBS_ATTR_F_MANDATORY;
			q.attrs[0].data = mr;
			attr_out(&q.attrs[1], UVERBS_ATTR_QUERY_MR_RESP_LKEY, &ql, 4);
			attr_out(&q.attrs[2], UVERBS_ATTR_QUERY_MR_RESP_RKEY, &qr, 4);
			attr_out(&q.attrs[3], UVERBS_ATTR_QUERY_MR_RESP_LENGTH, &qlen, 8);
			expect("ioctl: QUERY_MR without the optional IOVA", do_ioctl(fd, &q), 0);
			q.attrs[3].data = 1;
			expect("ioctl: QUERY_MR with an unwritable LENGTH is EFAULT", do_ioctl(fd, &q),
			       EFAULT);
			expect("ioctl: REG_MR's handle deregisters", dereg_mr(fd, mr), 0);
			q.attrs[3].data = (uintptr_t)&qlen;
			expect("ioctl: QUERY_MR of a deregistered MR is ENOENT", do_ioctl(fd, &q), ENOENT);
			/* The write command sets them (ib_uverbs_reg_mr(): mr->iova =
			 * cmd.hca_va, mr->length = cmd.length). */
			expect("write: REG_MR with hca_va 0x10000 + the buffer's page offset",
			       reg_mr(fd, pd, buf, len, 0x10000 + (iova & 4095),
				      IB_UVERBS_ACCESS_LOCAL_WRITE, &mr), 0);
			q.attrs[0].data = mr;
			q.hdr.num_attrs = 5;
			q.hdr.length = sizeof(q.hdr) + 5 * sizeof(struct ib_uverbs_attr);
			attr_out(&q.attrs[4], UVERBS_ATTR_QUERY_MR_RESP_IOVA, &qiova, 8);
			expect("ioctl: QUERY_MR of a write-registered MR", do_ioctl(fd, &q), 0);
			expect("ioctl: QUERY_MR answers the write's length and hca_va",
			       qlen == len && qiova == 0x10000 + (iova & 4095) ? 0 : EINVAL, 0);
			expect("write: DEREG_MR of the write-registered MR", dereg_mr(fd, mr), 0);
		}

		r.attrs[0].data = 0;
		attr_const(&r.attrs[5], FZ_REG_MR_FD_OFFSET, fdoff, 0);
		expect("ioctl: REG_MR with FD_OFFSET and no FD is EINVAL", do_ioctl(fd, &r), EINVAL);
		r.hdr.num_attrs = 5;
		r.hdr.length = sizeof(r.hdr) + 5 * sizeof(struct ib_uverbs_attr);
		expect("ioctl: REG_MR without ADDR (and no FD) is EINVAL", do_ioctl(fd, &r), EINVAL);
		r.hdr.num_attrs = 8;
		r.hdr.length = sizeof(r.hdr) + 8 * sizeof(struct ib_uverbs_attr);
		attr_const(&r.attrs[5], FZ_REG_MR_ADDR, iova + 1, 0);
		expect("ioctl: REG_MR with ADDR and IOVA in different page offsets is EINVAL",
		       do_ioctl(fd, &r), EINVAL);
		attr_const(&r.attrs[5], FZ_REG_MR_ADDR, iova, 0);
		attr_const(&r.attrs[4], FZ_REG_MR_ACCESS_FLAGS, IB_UVERBS_ACCESS_REMOTE_WRITE, 1);
		expect("ioctl: REG_MR with REMOTE_WRITE without LOCAL_WRITE is EINVAL",
		       do_ioctl(fd, &r), EINVAL);
		r.attrs[4].attr_id = FZ_REG_MR_FD;
		r.attrs[4].len = 0;
		r.attrs[4].flags = 0;
		r.attrs[4].data = 0;
		attr_const(&r.attrs[5], FZ_REG_MR_ACCESS_FLAGS, IB_UVERBS_ACCESS_LOCAL_WRITE, 1);
		expect("ioctl: REG_MR with a dma-buf FD is EOPNOTSUPP (no reg_user_mr_dmabuf)",
		       do_ioctl(fd, &r), EOPNOTSUPP);
		free(buf);
	}
	dealloc_pd(fd, pd);
	munmap(two, 2 * pg);
}

/*
 * CREATE_SRQ with room for rxe's driver response (struct rxe_create_srq_resp:
 * struct mminfo { u64 offset; u32 size, pad; }, srq_num, reserved): the offset
 * user space passes to mmap() for the SRQ's queue, an offset of this context
 * (rxe_create_mmap_info(); the mock: an entry of the context's mmap registry).
 */
struct srq_mminfo {
	uint64_t offset;
	uint32_t size, pad;
	uint32_t srq_num, reserved;
};

static int create_srq_mm(int fd, uint32_t pd, uint32_t *handle, struct srq_mminfo *mi)
{
	struct {
		struct ib_uverbs_create_srq_resp core;
		struct srq_mminfo drv;
	} resp = {};
	struct ib_uverbs_create_srq cmd = { .response = (uintptr_t)&resp, .pd_handle = pd,
					    .max_wr = 16, .max_sge = 1 };
	int e = do_write(fd, IB_USER_VERBS_CMD_CREATE_SRQ, &cmd, sizeof(cmd), sizeof(resp) / 4);

	*handle = resp.core.srq_handle;
	*mi = resp.drv;
	return e;
}

static int destroy_srq(int fd, uint32_t h)
{
	struct ib_uverbs_destroy_srq_resp resp;
	struct ib_uverbs_destroy_srq cmd = { .response = (uintptr_t)&resp, .srq_handle = h };

	return do_write(fd, IB_USER_VERBS_CMD_DESTROY_SRQ, &cmd, sizeof(cmd), sizeof(resp) / 4);
}

/* mmap() of len bytes at offset off of fd (shared, as providers map): 0 or errno. */
static int try_mmap(int fd, uint64_t off, size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)off);

	if (p == MAP_FAILED)
		return errno;
	munmap(p, len);
	return 0;
}

/* Sends fd over a unix socket (SCM_RIGHTS). */
static int send_fd(int sock, int fd)
{
	char c = 'f', cbuf[CMSG_SPACE(sizeof(int))] = {};
	struct iovec iov = { .iov_base = &c, .iov_len = 1 };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			    .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *h = CMSG_FIRSTHDR(&m);

	h->cmsg_level = SOL_SOCKET;
	h->cmsg_type = SCM_RIGHTS;
	h->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(h), &fd, sizeof(int));
	return sendmsg(sock, &m, 0) == 1 ? 0 : -1;
}

static int recv_fd(int sock)
{
	char c, cbuf[CMSG_SPACE(sizeof(int))] = {};
	struct iovec iov = { .iov_base = &c, .iov_len = 1 };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			    .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *h;
	int fd = -1;

	if (recvmsg(sock, &m, 0) != 1)
		return -1;
	h = CMSG_FIRSTHDR(&m);
	if (h && h->cmsg_type == SCM_RIGHTS)
		memcpy(&fd, CMSG_DATA(h), sizeof(int));
	return fd;
}

/* Runs fn(fd, arg) in a child; its failures count as ours. */
static void in_child(void (*fn)(int, int), int fd, int arg)
{
	int st = 0;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		failures = 0;
		fn(fd, arg);
		fflush(stdout);
		_exit(failures ? 1 : 0);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st)) {
		printf("R fail isolation: child (pid %d) status 0x%x\n", pid, st);
		failures++;
	}
}

/* The SRQ (and its PD) whose queue offset the socket child maps (size 0: none). */
static struct srq_mminfo passed_mi;
static uint32_t passed_h, passed_pd = ~0u;

/*
 * mmap offsets are the context's (upstream: rdma_user_mmap_entry_get() looks
 * in ucontext->mmap_xa, so mlx5_ib_mmap() finds no entry of another context:
 * EINVAL; rxe_mmap() matches ip->context: EINVAL). An SRQ's queue offset from
 * this file's context is refused on another file with a context of its own,
 * on a file without one (ib_uverbs_get_ucontext_file(): EINVAL), and after
 * the SRQ is destroyed; the socket child then maps it through the passed file.
 * rxe hands each offset out for one mmap() (list_del_init() of the pending
 * entry), so the owner's own mapping is the socket child's.
 */
static void mmap_isolation(int fd)
{
	struct srq_mminfo mi = {}, mi2 = {};
	uint32_t pd, srq, srq2;
	int fd2, fd3;

	expect("isolation: ALLOC_PD for an SRQ", alloc_pd(fd, &pd), 0);
	expect("isolation: CREATE_SRQ with rxe's driver response", create_srq_mm(fd, pd, &srq, &mi), 0);
	expect("isolation: the SRQ's queue has an mmap offset and size",
	       mi.size && mi.offset && !(mi.offset % sysconf(_SC_PAGESIZE)) ? 0 : EINVAL, 0);
	if (!mi.size) {
		dealloc_pd(fd, pd);
		return;
	}
	fd2 = open(dev, O_RDWR | O_CLOEXEC);
	expect("isolation: another file's GET_CONTEXT", fd2 >= 0 ? get_context(fd2) : errno, 0);
	expect("isolation: mmap() of one context's SRQ queue offset on another context's file is EINVAL",
	       try_mmap(fd2, mi.offset, mi.size), EINVAL);
	fd3 = open(dev, O_RDWR | O_CLOEXEC);
	expect("isolation: mmap() of a context's offset on a file without a context is EINVAL",
	       fd3 >= 0 ? try_mmap(fd3, mi.offset, mi.size) : errno, EINVAL);
	if (fd3 >= 0)
		close(fd3);

	/* A destroyed SRQ's offset maps nothing (rxe_mmap_release(), rdma_user_mmap_entry_remove()). */
	expect("isolation: a second SRQ", create_srq_mm(fd, pd, &srq2, &mi2), 0);
	expect("isolation: the second SRQ's offset is another one", mi2.offset != mi.offset ? 0 : EINVAL, 0);
	expect("isolation: DESTROY_SRQ of the second SRQ", destroy_srq(fd, srq2), 0);
	expect("isolation: mmap() of a destroyed SRQ's queue offset is EINVAL",
	       try_mmap(fd, mi2.offset, mi2.size ? mi2.size : 4096), EINVAL);
	/* The other file's context still works, the offset still ours. */
	if (fd2 >= 0)
		close(fd2);
	passed_mi = mi;
	passed_h = srq;
	passed_pd = pd;
}

/* A child of the opener: other credentials (fork copies them), same file. */
static void forked_child(int fd, int hp)
{
	uint32_t h;

	expect("isolation: write() on a file inherited through fork is EACCES",
	       alloc_pd(fd, &h), EACCES);
	expect("isolation: ioctl() on a file inherited through fork works",
	       query_port(fd, 1, 0, 1), 0);
	expect("isolation: ioctl DESTROY of the parent's PD from the forked child works",
	       destroy_pd_ioctl(fd, hp), 0);
}

/* A child that gets the file only over a unix socket. */
static void socket_child(int sock, int unused)
{
	uint32_t h;
	int fd = recv_fd(sock);

	(void)unused;
	expect("isolation: a file received over a unix socket arrives", fd >= 0 ? 0 : EBADF, 0);
	if (fd < 0)
		return;
	expect("isolation: write() on a file received over a unix socket is EACCES",
	       alloc_pd(fd, &h), EACCES);
	expect("isolation: ioctl() on a file received over a unix socket works",
	       query_port(fd, 1, 0, 1), 0);
	/* ib_uverbs_mmap() checks no credentials: the file's context maps. */
	if (passed_mi.size)
		expect("isolation: mmap() of the sender's SRQ queue offset on the received file works",
		       try_mmap(fd, passed_mi.offset, passed_mi.size), 0);
	close(fd);
}

/* Another user: the opener's file refuses its write(); its own file works. */
static void other_user_child(int fd, int hp)
{
	uint32_t h = ~0u;
	int fd2;

	if (setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534)) {
		printf("R fail isolation: setresuid(65534): %s\n", strerror(errno));
		failures++;
		return;
	}
	expect("isolation: write() by another user on root's file is EACCES",
	       alloc_pd(fd, &h), EACCES);
	fd2 = open(dev, O_RDWR | O_CLOEXEC);
	expect("isolation: another user opens the device (mode 0666)", fd2 >= 0 ? 0 : errno, 0);
	if (fd2 < 0)
		return;
	expect("isolation: another user's GET_CONTEXT", get_context(fd2), 0);
	expect("isolation: DEALLOC_PD of root's PD handle in another user's file is ENOENT",
	       dealloc_pd(fd2, hp), ENOENT);
	expect("isolation: ioctl PD_DESTROY of root's PD handle in another user's file is ENOENT",
	       destroy_pd_ioctl(fd2, hp), ENOENT);
	expect("isolation: another user's own ALLOC_PD", alloc_pd(fd2, &h), 0);
	expect("isolation: another user's own DEALLOC_PD", dealloc_pd(fd2, h), 0);
	close(fd2);
}

/*
 * Isolation (upstream ib_safe_file_access(), per-file handle spaces): fd has
 * a context. write() is refused (EACCES) to any task whose credentials are
 * not the opener's: a forked child, the receiver of the fd over a socket,
 * another user; ioctl() has no such check. The opener itself may use a copy
 * of its fd passed to itself. A handle means nothing in another file.
 */
static void isolation_test(int fd)
{
	uint32_t hp, hc, h;
	int sv[2], fd2;

	expect("isolation: ALLOC_PD", alloc_pd(fd, &hp), 0);
	in_child(forked_child, fd, (int)hp);
	expect("isolation: the PD the child destroyed is gone (DEALLOC_PD is ENOENT)",
	       dealloc_pd(fd, hp), ENOENT);

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv)) {
		printf("R fail isolation: socketpair: %s\n", strerror(errno));
		failures++;
		return;
	}
	/* To itself: the same task, the same credentials: write() works. */
	fd2 = send_fd(sv[0], fd) ? -1 : recv_fd(sv[1]);
	expect("isolation: the opener passes its file to itself", fd2 >= 0 ? 0 : errno, 0);
	if (fd2 >= 0) {
		expect("isolation: write() on the opener's own passed copy works",
		       alloc_pd(fd2, &hc), 0);
		expect("isolation: the passed copy is the same file (its PD is seen through fd)",
		       dealloc_pd(fd, hc), 0);
		close(fd2);
	}
	mmap_isolation(fd);
	send_fd(sv[0], fd);
	in_child(socket_child, sv[1], 0);
	close(sv[0]);
	close(sv[1]);
	if (passed_mi.size)
		expect("isolation: DESTROY_SRQ of the SRQ whose queue was mapped", destroy_srq(fd, passed_h), 0);
	if (passed_pd != ~0u)
		expect("isolation: DEALLOC_PD under the SRQ", dealloc_pd(fd, passed_pd), 0);

	expect("isolation: ALLOC_PD for another user to name", alloc_pd(fd, &hp), 0);
	if (geteuid() == 0)
		in_child(other_user_child, fd, (int)hp);
	else
		printf("R ok isolation: another user # SKIP not root\n");
	expect("isolation: the PD another user named is still ours", dealloc_pd(fd, hp), 0);
	(void)h;
}

int main(int argc, char **argv)
{
	struct req r;
	int fd, e, opt;

	while ((opt = getopt(argc, argv, "d:i:u")) != -1) {
		if (opt == 'u')
			upstream = 1;
		else if (opt == 'd')
			dev = optarg;
		else if (opt == 'i')
			driver_id = strtoul(optarg, NULL, 0);
	}
	fd = open(dev, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		printf("R fail open %s: %s\n", dev, strerror(errno));
		return 1;
	}

	/* Header rules (ib_uverbs_ioctl, ib_uverbs_cmd_verbs). */
	req_init(&r, UVERBS_OBJECT_DEVICE, UVERBS_METHOD_QUERY_CONTEXT, 0);
	r.hdr.length = 23;
	expect("ioctl: hdr.length != 24 + 16*num_attrs is EINVAL", do_ioctl(fd, &r), EINVAL);
	req_init(&r, UVERBS_OBJECT_DEVICE, UVERBS_METHOD_QUERY_CONTEXT, 0);
	r.hdr.reserved1 = 1;
	expect("ioctl: reserved1 != 0 is EPROTONOSUPPORT", do_ioctl(fd, &r), EPROTONOSUPPORT);
	req_init(&r, UVERBS_OBJECT_DEVICE, UVERBS_METHOD_QUERY_CONTEXT, 0);
	r.hdr.reserved2 = 1;
	expect("ioctl: reserved2 != 0 is EPROTONOSUPPORT", do_ioctl(fd, &r), EPROTONOSUPPORT);
	req_init(&r, UVERBS_OBJECT_DEVICE, UVERBS_METHOD_QUERY_CONTEXT, 0);
	r.hdr.driver_id = driver_id + 1;
	expect("ioctl: wrong driver_id is EINVAL", do_ioctl(fd, &r), EINVAL);
	req_init(&r, 0x0ab0, 0, 0);
	expect("ioctl: unknown object is EPROTONOSUPPORT", do_ioctl(fd, &r), EPROTONOSUPPORT);
	req_init(&r, UVERBS_OBJECT_DEVICE, 31, 0);
	expect("ioctl: unknown method is EPROTONOSUPPORT", do_ioctl(fd, &r), EPROTONOSUPPORT);
	expect("ioctl: wrong ioctl number is ENOTTY",
	       ioctl(fd, _IOWR(RDMA_IOCTL_MAGIC, 2, struct ib_uverbs_ioctl_hdr), &r) ? errno : 0,
	       ENOTTY);

	/* Before GET_CONTEXT. */
	expect("ioctl: QUERY_PORT before GET_CONTEXT is EINVAL", query_port(fd, 1, 0, 1), EINVAL);
	{
		struct req w;
		req_init(&w, UVERBS_OBJECT_DEVICE, UVERBS_METHOD_INVOKE_WRITE, 1);
		attr_const(&w.attrs[0], UVERBS_ATTR_WRITE_CMD, IB_USER_VERBS_CMD_QUERY_DEVICE, 1);
		expect("ioctl: INVOKE_WRITE(QUERY_DEVICE) without buffers is ENOSPC",
		       do_ioctl(fd, &w), ENOSPC);
	}

	expect("ioctl: GET_CONTEXT", get_context(fd), 0);
	if (!upstream)
		expect("ioctl: second GET_CONTEXT is EINVAL", get_context(fd), EINVAL);

	/* Attribute rules (uverbs_set_attr, ib_uverbs_run_method). */
	req_init(&r, UVERBS_OBJECT_DEVICE, UVERBS_METHOD_QUERY_CONTEXT, 1);
	attr_const(&r.attrs[0], 50, 0, 1);
	expect("ioctl: unknown mandatory attribute is EPROTONOSUPPORT", do_ioctl(fd, &r),
	       EPROTONOSUPPORT);
	{
		unsigned char resp[48];
		req_init(&r, UVERBS_OBJECT_DEVICE, UVERBS_METHOD_QUERY_PORT, 3);
		attr_const(&r.attrs[0], UVERBS_ATTR_QUERY_PORT_PORT_NUM, 1, 1);
		attr_out(&r.attrs[1], UVERBS_ATTR_QUERY_PORT_RESP, resp, sizeof(resp));
		attr_const(&r.attrs[2], 50, 0, 0);
		expect("ioctl: unknown optional attribute is ignored", do_ioctl(fd, &r), 0);
	}
	{
		unsigned char e[32]; /* struct ib_uverbs_gid_entry */
		req_init(&r, UVERBS_OBJECT_DEVICE, UVERBS_METHOD_QUERY_GID_ENTRY, 4);
		attr_const(&r.attrs[0], UVERBS_ATTR_QUERY_GID_ENTRY_PORT, 1, 1);
		attr_const(&r.attrs[1], UVERBS_ATTR_QUERY_GID_ENTRY_GID_INDEX, 0, 1);
		attr_const(&r.attrs[2], UVERBS_ATTR_QUERY_GID_ENTRY_FLAGS, 0, 1);
		r.attrs[2].len = 4;
		attr_out(&r.attrs[3], UVERBS_ATTR_QUERY_GID_ENTRY_RESP_ENTRY, e, sizeof(e));
		expect("ioctl: QUERY_GID_ENTRY port 1 index 0", do_ioctl(fd, &r), 0);
		attr_const(&r.attrs[1], UVERBS_ATTR_QUERY_GID_ENTRY_GID_INDEX, 4096, 1);
		expect("ioctl: QUERY_GID_ENTRY past the table is EINVAL", do_ioctl(fd, &r), EINVAL);
		attr_const(&r.attrs[2], UVERBS_ATTR_QUERY_GID_ENTRY_FLAGS, 1, 1);
		r.attrs[2].len = 4;
		attr_const(&r.attrs[1], UVERBS_ATTR_QUERY_GID_ENTRY_GID_INDEX, 0, 1);
		expect("ioctl: QUERY_GID_ENTRY with unknown flags is EINVAL", do_ioctl(fd, &r), EINVAL);
	}
	expect("ioctl: QUERY_PORT 1", query_port(fd, 1, 0, 1), 0);
	expect("ioctl: duplicate attribute is EINVAL", query_port(fd, 1, 1, 1), EINVAL);
	expect("ioctl: missing mandatory attribute is EINVAL", query_port(fd, 1, 0, 0), EINVAL);
	expect("ioctl: QUERY_PORT of port 0 is EINVAL", query_port(fd, 0, 0, 1), EINVAL);
	expect("ioctl: QUERY_PORT of port 9 is EINVAL", query_port(fd, 9, 0, 1), EINVAL);
	{
		unsigned char resp[48]; /* struct ib_uverbs_query_port_resp_ex */
		req_init(&r, UVERBS_OBJECT_DEVICE, UVERBS_METHOD_QUERY_PORT, 2);
		attr_const(&r.attrs[0], UVERBS_ATTR_QUERY_PORT_PORT_NUM, 1, 1);
		attr_out(&r.attrs[1], UVERBS_ATTR_QUERY_PORT_RESP, &resp, sizeof(resp));
		do_ioctl(fd, &r);
		expect("ioctl: VALID_OUTPUT set on the written attribute",
		       (r.attrs[1].flags & UVERBS_ATTR_F_VALID_OUTPUT) ? 0 : EINVAL, 0);
		attr_out(&r.attrs[1], UVERBS_ATTR_QUERY_PORT_RESP, &resp, 4);
		expect("ioctl: output shorter than min_len is EINVAL", do_ioctl(fd, &r), EINVAL);
	}

	/* EX_QUERY_DEVICE through INVOKE_WRITE: zero-trailing request bytes. */
	{
		struct ib_uverbs_ex_query_device_resp resp;
		uint64_t in[2] = { 0, 0 };
		struct req w;

		req_init(&w, UVERBS_OBJECT_DEVICE, UVERBS_METHOD_INVOKE_WRITE, 3);
		attr_const(&w.attrs[0], UVERBS_ATTR_WRITE_CMD,
			   IB_USER_VERBS_CMD_FLAG_EXTENDED | IB_USER_VERBS_EX_CMD_QUERY_DEVICE, 1);
		w.attrs[1].attr_id = UVERBS_ATTR_CORE_IN;
		w.attrs[1].len = sizeof(in);
		w.attrs[1].data = (uintptr_t)in;
		attr_out(&w.attrs[2], UVERBS_ATTR_CORE_OUT, &resp, sizeof(resp));
		expect("ioctl: INVOKE_WRITE(EX_QUERY_DEVICE)", do_ioctl(fd, &w), 0);
		in[1] = 1;
		expect("ioctl: INVOKE_WRITE(EX_QUERY_DEVICE) non-zero bytes past the request is EOPNOTSUPP",
		       do_ioctl(fd, &w), EOPNOTSUPP);
	}

	/* write() rules (ib_uverbs_write, verify_hdr). */
	{
		struct ib_uverbs_query_device_resp resp;
		struct ib_uverbs_query_device cmd = { .response = (uintptr_t)&resp };
		char small[8] = { 0 };

		expect("write: QUERY_DEVICE", do_write(fd, IB_USER_VERBS_CMD_QUERY_DEVICE, &cmd,
						   sizeof(cmd), sizeof(resp) / 4), 0);
		expect("write: QUERY_DEVICE with a short response is ENOSPC",
		       do_write(fd, IB_USER_VERBS_CMD_QUERY_DEVICE, &cmd, sizeof(cmd), 2), ENOSPC);
		expect("write: QUERY_DEVICE with no request body is ENOSPC",
		       do_write(fd, IB_USER_VERBS_CMD_QUERY_DEVICE, small, 0, sizeof(resp) / 4), ENOSPC);
		expect("write: in_words not matching the length is EINVAL",
		       write(fd, (uint32_t[]){ IB_USER_VERBS_CMD_QUERY_DEVICE, 0x2c0007 }, 8) < 0 ? errno : 0,
		       EINVAL);
		expect("write: fewer than 8 bytes is EINVAL", write(fd, small, 4) < 0 ? errno : 0, EINVAL);
		expect("write: unknown command is EOPNOTSUPP",
		       do_write(fd, 0x7f, small, 8, 0), EOPNOTSUPP);
		expect("write: command with undefined bits is EINVAL",
		       do_write(fd, 0x100, small, 8, 0), EINVAL);
	}

	/* Handles. */
	{
		uint32_t h1 = ~0u, h2 = ~0u;

		expect("write: ALLOC_PD", alloc_pd(fd, &h1), 0);
		expect("write: second ALLOC_PD", alloc_pd(fd, &h2), 0);
		expect("handles: two PDs get different handles", h1 != h2 ? 0 : EINVAL, 0);
		expect("write: DEALLOC_PD", dealloc_pd(fd, h1), 0);
		e = dealloc_pd(fd, h1);
		printf("R ok DEALLOC_PD of a destroyed handle: errno %d (%s)\n", e, strerror(e));
		expect("write: DEALLOC_PD of a destroyed handle fails", e ? 0 : EINVAL, 0);
		e = dealloc_pd(fd, 4242);
		printf("R ok DEALLOC_PD of a never-allocated handle: errno %d (%s)\n", e, strerror(e));
		expect("write: DEALLOC_PD of a bad handle fails", e ? 0 : EINVAL, 0);
		/* h2 and three more stay: close must destroy them. */
		alloc_pd(fd, &h1);
		alloc_pd(fd, &h1);
		alloc_pd(fd, &h1);
	}

	/* Handle misuse (rdma_core.c: rdma_lookup_get_uobject). */
	{
		uint32_t h = ~0u;
		struct req r2;

		expect("write: ALLOC_PD for the misuse checks", alloc_pd(fd, &h), 0);
		/* A PD handle given as an MR: upstream's lookup finds the uobject
		 * but of another type: EINVAL. */
		req_init(&r2, UVERBS_OBJECT_MR, UVERBS_METHOD_MR_DESTROY, 1);
		r2.attrs[0].attr_id = UVERBS_ATTR_DESTROY_MR_HANDLE;
		r2.attrs[0].flags = UVERBS_ATTR_F_MANDATORY;
		r2.attrs[0].data = h;
		e = do_ioctl(fd, &r2);
		expect("ioctl: MR_DESTROY of a PD handle (wrong type) is EINVAL", e, EINVAL);
		e = do_write(fd, IB_USER_VERBS_CMD_DEREG_MR,
			     (struct ib_uverbs_dereg_mr[]){ { .mr_handle = h } },
			     sizeof(struct ib_uverbs_dereg_mr), 0);
		expect("write: DEREG_MR of a PD handle (wrong type) is EINVAL", e, EINVAL);
		expect("ioctl: PD_DESTROY", destroy_pd_ioctl(fd, h), 0);
		expect("ioctl: PD_DESTROY again (double destroy) is ENOENT", destroy_pd_ioctl(fd, h), ENOENT);
		expect("write: DEALLOC_PD after an ioctl destroy (use after destroy) is ENOENT",
		       dealloc_pd(fd, h), ENOENT);
		expect("ioctl: PD_DESTROY of a never-allocated handle is ENOENT",
		       destroy_pd_ioctl(fd, 0x7fffff), ENOENT);
	}

	/* Destroy racing a use from another thread: two threads destroy the
	 * same PD at once (write and ioctl paths) while a third keeps using
	 * the file; exactly one destroy wins, the other sees ENOENT or EBUSY. */
	{
		pthread_barrier_t bar;
		pthread_t t[3];
		int rounds = 200, bad = 0, busy = 0;
		char why[128] = "";

		pthread_barrier_init(&bar, NULL, 2);
		stop_users = 0;
		pthread_create(&t[2], NULL, user_thread, &fd);
		for (int i = 0; i < rounds; i++) {
			struct race a = { .fd = fd, .bar = &bar, .ioctl_path = 0 };
			struct race b = { .fd = fd, .bar = &bar, .ioctl_path = 1 };
			uint32_t h;

			if (alloc_pd(fd, &h)) {
				bad++;
				snprintf(why, sizeof(why), "ALLOC_PD failed in round %d", i);
				break;
			}
			a.handle = b.handle = h;
			pthread_create(&t[0], NULL, race_thread, &a);
			pthread_create(&t[1], NULL, race_thread, &b);
			pthread_join(t[0], NULL);
			pthread_join(t[1], NULL);
			if (a.err == EBUSY || b.err == EBUSY)
				busy++;
			if (!((a.err == 0) ^ (b.err == 0)) ||
			    (a.err && a.err != ENOENT && a.err != EBUSY) ||
			    (b.err && b.err != ENOENT && b.err != EBUSY)) {
				if (!bad)
					snprintf(why, sizeof(why), "round %d: write %d, ioctl %d", i, a.err,
						 b.err);
				bad++;
			}
		}
		stop_users = 1;
		pthread_join(t[2], NULL);
		pthread_barrier_destroy(&bar);
		if (bad) {
			printf("R fail race: concurrent destroys of one PD, exactly one wins: %s (%d bad rounds)\n",
			       why, bad);
			failures++;
		} else {
			printf("R ok race: concurrent destroys of one PD, exactly one wins (%d rounds, %d EBUSY)\n",
			       rounds, busy);
		}
	}

	/* Truncated and oversized write() commands (verify_hdr). */
	{
		struct ib_uverbs_alloc_pd_resp resp = {};
		char big[512] = { 0 };
		uint64_t *req = (uint64_t *)big;
		struct ib_uverbs_ex_query_device_resp xr;
		uint32_t xin[2] = { 0, 0 };
		uint32_t h = ~0u;

		expect("write: ALLOC_PD truncated to 4 bytes of request is ENOSPC",
		       do_write(fd, IB_USER_VERBS_CMD_ALLOC_PD, big, 4, sizeof(resp) / 4), ENOSPC);
		expect("write: header only (in_words 2) is ENOSPC",
		       do_write(fd, IB_USER_VERBS_CMD_ALLOC_PD, big, 0, sizeof(resp) / 4), ENOSPC);
		expect("write: count beyond in_words is EINVAL",
		       write(fd, (uint32_t[]){ IB_USER_VERBS_CMD_ALLOC_PD, (2 << 16) | 3, 0, 0, 0, 0 },
			     24) < 0 ? errno : 0, EINVAL);
		/* Oversized: ALLOC_PD with 400 bytes of (zero) driver data after the
		 * request: accepted, the extra bytes are the driver's udata. */
		req[0] = (uintptr_t)&resp;
		e = do_write(fd, IB_USER_VERBS_CMD_ALLOC_PD, big, 408, sizeof(resp) / 4);
		expect("write: ALLOC_PD with 400 bytes of driver data is accepted", e, 0);
		if (!e)
			dealloc_pd(fd, resp.pd_handle);
		(void)h;
		/* Extended header rules. */
		expect("write ex: EX_QUERY_DEVICE", do_write_ex(fd, IB_USER_VERBS_EX_CMD_QUERY_DEVICE, xin,
							       8, 1, sizeof(xr) / 8, &xr, 0), 0);
		expect("write ex: in_words not matching the length is EINVAL",
		       do_write_ex(fd, IB_USER_VERBS_EX_CMD_QUERY_DEVICE, xin, 8, 2, sizeof(xr) / 8, &xr, 0),
		       EINVAL);
		/* EX_QUERY_DEVICE's minimum request is empty (req_size 0 upstream). */
		expect("write ex: EX_QUERY_DEVICE with an empty request (in_words 0) is accepted",
		       do_write_ex(fd, IB_USER_VERBS_EX_CMD_QUERY_DEVICE, xin, 0, 0, sizeof(xr) / 8, &xr, 0),
		       0);
		expect("write ex: cmd_hdr_reserved != 0 is EINVAL",
		       do_write_ex(fd, IB_USER_VERBS_EX_CMD_QUERY_DEVICE, xin, 8, 1, sizeof(xr) / 8, &xr, 1),
		       EINVAL);
		expect("write ex: response without out_words is EINVAL",
		       do_write_ex(fd, IB_USER_VERBS_EX_CMD_QUERY_DEVICE, xin, 8, 1, 0, &xr, 0), EINVAL);
		expect("write ex: out_words without a response is EINVAL",
		       do_write_ex(fd, IB_USER_VERBS_EX_CMD_QUERY_DEVICE, xin, 8, 1, sizeof(xr) / 8, NULL, 0),
		       EINVAL);
	}

	/* CQ and QP write commands: core-level rules (uverbs_cmd.c create_cq(),
	 * create_qp(), modify_qp(), the usecnt graph). One PD, CQ and QP stay
	 * open for the close cleanup. */
	{
		struct ib_uverbs_query_qp_resp qr;
		uint32_t pd = ~0u, cq = ~0u, cq2 = ~0u, qp = ~0u, qp2 = ~0u, qpn = 0;
		const uint32_t init_mask = IB_QP_STATE | IB_QP_PKEY_INDEX | IB_QP_PORT | IB_QP_ACCESS_FLAGS;

		expect("write: ALLOC_PD for the CQ/QP checks", alloc_pd(fd, &pd), 0);
		expect("write: CREATE_CQ", create_cq(fd, 16, 0, -1, &cq), 0);
		expect("write: second CREATE_CQ", create_cq(fd, 32, 0, -1, &cq2), 0);
		expect("write: CREATE_CQ with cqe 0 is EINVAL", create_cq(fd, 0, 0, -1, NULL), EINVAL);
		expect("write: CREATE_CQ with comp_vector 1000 is EINVAL",
		       create_cq(fd, 16, 1000, -1, NULL), EINVAL);
		expect("write: CREATE_CQ with a comp_channel fd that is not one is EBADF",
		       create_cq(fd, 16, 0, fd, NULL), EBADF);
		{
			struct ib_uverbs_create_comp_channel_resp cr = { .fd = -1 };
			struct ib_uverbs_create_comp_channel cc = { .response = (uintptr_t)&cr };
			uint32_t ccq = ~0u;
			uint64_t ev;

			expect("write: CREATE_COMP_CHANNEL",
			       do_write(fd, IB_USER_VERBS_CMD_CREATE_COMP_CHANNEL, &cc, sizeof(cc),
					sizeof(cr) / 4), 0);
			fcntl((int)cr.fd, F_SETFL, O_NONBLOCK);
			expect("write: CREATE_CQ on the completion channel",
			       create_cq(fd, 16, 0, (int32_t)cr.fd, &ccq), 0);
			expect("comp channel: empty non-blocking read is EAGAIN",
			       read((int)cr.fd, &ev, sizeof(ev)) < 0 ? errno : 0, EAGAIN);
			expect("comp channel: an empty short read is EAGAIN too (the size is checked on an event)",
			       read((int)cr.fd, &ev, 4) < 0 ? errno : 0, EAGAIN);
			expect("write: DESTROY_CQ of the channel's CQ", destroy_cq(fd, ccq), 0);
			close((int)cr.fd);
		}
		expect("write: CREATE_QP (RC)", create_qp(fd, pd, cq, cq2, IB_QPT_RC, &qp, &qpn), 0);
		expect("write: CREATE_QP returns a QP number", qpn ? 0 : EINVAL, 0);
		expect("write: CREATE_QP (UD, one CQ for both queues)",
		       create_qp(fd, pd, cq, cq, IB_QPT_UD, &qp2, NULL), 0);
		expect("write: CREATE_QP with qp_type 77 is EINVAL",
		       create_qp(fd, pd, cq, cq, 77, NULL, NULL), EINVAL);
		expect("write: CREATE_QP with a CQ handle as PD (wrong type) is EINVAL",
		       create_qp(fd, cq, cq, cq, IB_QPT_RC, NULL, NULL), EINVAL);
		expect("write: CREATE_QP with a never-allocated send CQ is ENOENT",
		       create_qp(fd, pd, 4242, 4242, IB_QPT_RC, NULL, NULL), ENOENT);
		expect("write: DESTROY_CQ of a CQ a QP uses is EBUSY", destroy_cq(fd, cq), EBUSY);
		expect("write: DEALLOC_PD of a PD a QP uses is EBUSY", dealloc_pd(fd, pd), EBUSY);
		expect("write: DESTROY_CQ of a QP handle (wrong type) is EINVAL", destroy_cq(fd, qp), EINVAL);
		/* ib_modify_qp_is_ok() (rxe_qp_chk_attr(); the mock likewise). */
		expect("write: MODIFY_QP RESET->ERR is EINVAL (not a legal transition)",
		       modify_qp(fd, qp, IB_QP_STATE, IB_QPS_ERR, 0), EINVAL);
		/* rxe holds only a mask with IB_QP_STATE against the table
		 * (rxe_qp_from_attr() -> __qp_chk_state()): SQ_PSN alone in
		 * RESET is taken; a timeout past 31 is not (rxe_qp_chk_attr()). */
		expect("write: MODIFY_QP of SQ_PSN alone (no state change) on a RESET QP works",
		       modify_qp(fd, qp, IB_QP_SQ_PSN, 0, 0), 0);
		expect("write: MODIFY_QP of ACCESS_FLAGS alone on a RESET RC QP works",
		       modify_qp(fd, qp, IB_QP_ACCESS_FLAGS, 0, 0), 0);
		expect("write: MODIFY_QP of PORT 2 (the device has one) is EINVAL",
		       modify_qp(fd, qp, IB_QP_PORT, 0, 2), EINVAL);
		expect("write: MODIFY_QP RESET->INIT without PKEY_INDEX/PORT/ACCESS_FLAGS is EINVAL",
		       modify_qp(fd, qp, IB_QP_STATE, IB_QPS_INIT, 1), EINVAL);
		expect("write: MODIFY_QP RESET->INIT with QKEY on an RC QP is EINVAL (not optional)",
		       modify_qp(fd, qp, init_mask | IB_QP_QKEY, IB_QPS_INIT, 1), EINVAL);
		expect("write: MODIFY_QP RESET->RTS is EINVAL", modify_qp(fd, qp, IB_QP_STATE, IB_QPS_RTS, 1),
		       EINVAL);
		expect("write: MODIFY_QP RESET->INIT", modify_qp(fd, qp, init_mask, IB_QPS_INIT, 1), 0);
		expect("write: QUERY_QP", query_qp(fd, qp, &qr), 0);
		expect("write: QUERY_QP reads back state INIT and port 1",
		       qr.qp_state == IB_QPS_INIT && qr.port_num == 1 ? 0 : EINVAL, 0);
		expect("write: MODIFY_QP to port 9 is EINVAL",
		       modify_qp(fd, qp2, init_mask, IB_QPS_INIT, 9), EINVAL);
		expect("write: MODIFY_QP to state 9 is EINVAL",
		       modify_qp(fd, qp2, IB_QP_STATE, 9, 1), EINVAL);
		expect("write: MODIFY_QP with attr_mask bit 21 is EOPNOTSUPP",
		       modify_qp(fd, qp2, IB_QP_STATE | (1 << 21), IB_QPS_INIT, 1), EOPNOTSUPP);
		expect("write: MODIFY_QP of a never-allocated QP is ENOENT",
		       modify_qp(fd, 4242, init_mask, IB_QPS_INIT, 1), ENOENT);
		expect("write: DESTROY_QP", destroy_qp(fd, qp2), 0);
		expect("write: DESTROY_QP again (double destroy) is ENOENT", destroy_qp(fd, qp2), ENOENT);
		expect("write: QUERY_QP after destroy (use after destroy) is ENOENT",
		       query_qp(fd, qp2, &qr), ENOENT);
		expect("write: DESTROY_CQ of an unused CQ", create_cq(fd, 8, 0, -1, &cq2) ||
		       destroy_cq(fd, cq2), 0);
		/* A CQ of another context (another open file): its handle means
		 * nothing in this file (handles are per file, upstream's xarray
		 * per ufile): ENOENT, not that CQ. */
		{
			int fd2 = open(dev, O_RDWR | O_CLOEXEC);
			uint32_t h = 0, other = ~0u;

			expect("second file: GET_CONTEXT", fd2 >= 0 ? get_context(fd2) : errno, 0);
			for (int i = 0; i < 24; i++)
				alloc_pd(fd2, &h);
			expect("second file: CREATE_CQ", create_cq(fd2, 16, 0, -1, &other), 0);
			expect("write: CREATE_QP with a CQ of another context is ENOENT",
			       create_qp(fd, pd, other, other, IB_QPT_RC, NULL, NULL), ENOENT);
			close(fd2);
		}
		/* pd, cq, the first cq2 and qp (RC, INIT) stay open. */
	}

	/* Extended CQ/QP write commands (uverbs_cmd.c ib_uverbs_ex_create_cq(),
	 * ib_uverbs_ex_create_qp(), ib_uverbs_ex_modify_qp(); verify_hdr() and
	 * uverbs_request() for the sizes). Upstream's uapi_merge_write() sets
	 * req_size and resp_size for legacy commands only: an extended command
	 * has no minimum request or response. A short request is zero-filled
	 * (uverbs_request(), copy_struct_from_user()), bytes past the struct
	 * must be zero (EOPNOTSUPP); the response is cut to the user's buffer,
	 * response_length is what the kernel wrote and a longer buffer is
	 * zero-filled past it. What is created here is destroyed here. */
	{
		const uint32_t init_mask = IB_QP_STATE | IB_QP_PKEY_INDEX | IB_QP_PORT | IB_QP_ACCESS_FLAGS;
		const uint32_t rate_limit = 1u << 25; /* IB_QP_RATE_LIMIT: EX_MODIFY_QP only */
		struct ib_uverbs_ex_create_cq c = { .user_handle = 1, .cqe = 16, .comp_channel = -1 };
		struct ib_uverbs_ex_create_cq bc;
		struct ib_uverbs_ex_create_qp q, bq;
		struct ib_uverbs_query_qp_resp qr;
		union ex_out o;
		uint32_t pd = ~0u, cq = ~0u, cq2 = ~0u, qp = ~0u;

		/* EX_CREATE_CQ */
		e = ex_create_cq(fd, &c, 0, 4, 2, &o);
		expect("write ex: EX_CREATE_CQ", e, 0);
		expect("write ex: EX_CREATE_CQ answers response_length 16, comp_mask 0, cqe >= 16",
		       !e && o.cq.response_length == 16 && o.cq.comp_mask == 0 && o.cq.base.cqe >= 16 &&
				       o.cq.base.cqe != ~0u ? 0 : EINVAL, 0);
		expect("write: DESTROY_CQ of an EX_CREATE_CQ CQ", e ? e : destroy_cq(fd, o.cq.base.cq_handle), 0);
		e = ex_create_cq(fd, &c, 0, 4, 4, &o);
		expect("write ex: EX_CREATE_CQ with a 32-byte response buffer", e, 0);
		expect("write ex: EX_CREATE_CQ response_length stays 16, bytes 16..31 are zeroed",
		       !e && o.cq.response_length == 16 ? zero_from(&o, 16, 32) : EINVAL, 0);
		if (!e)
			destroy_cq(fd, o.cq.base.cq_handle);
		/* 8 bytes of response: the base only (the driver's data follows it). */
		e = ex_create_cq(fd, &c, 0, 4, 1, &o);
		expect("write ex: EX_CREATE_CQ with an 8-byte response (out_words 1) is accepted", e, 0);
		expect("write ex: the 8-byte EX_CREATE_CQ response holds the CQ handle (DESTROY_CQ of it)",
		       e ? e : destroy_cq(fd, o.cq.base.cq_handle), 0);
		/* 24 bytes of request: comp_mask, flags and reserved read as zero. */
		e = ex_create_cq(fd, &c, 0, 3, 2, &o);
		expect("write ex: EX_CREATE_CQ with 24 bytes of request (in_words 3) is accepted", e, 0);
		if (!e)
			destroy_cq(fd, o.cq.base.cq_handle);
		expect("write ex: EX_CREATE_CQ with an empty request (in_words 0) is EINVAL (cqe 0)",
		       ex_create_cq(fd, &c, 0, 0, 2, &o), EINVAL);
		e = ex_create_cq(fd, &c, 0, 5, 2, &o);
		expect("write ex: EX_CREATE_CQ with 8 zero bytes past the request is accepted", e, 0);
		if (!e)
			destroy_cq(fd, o.cq.base.cq_handle);
		expect("write ex: EX_CREATE_CQ with a non-zero byte past the request is EOPNOTSUPP",
		       ex_create_cq(fd, &c, 1ull << 56, 5, 2, &o), EOPNOTSUPP);
		bc = c;
		bc.comp_mask = 1;
		expect("write ex: EX_CREATE_CQ with comp_mask 1 is EINVAL", ex_create_cq(fd, &bc, 0, 4, 2, &o),
		       EINVAL);
		bc = c;
		bc.reserved = 1;
		expect("write ex: EX_CREATE_CQ with reserved != 0 is EINVAL",
		       ex_create_cq(fd, &bc, 0, 4, 2, &o), EINVAL);
		bc = c;
		bc.flags = IB_UVERBS_CQ_FLAGS_TIMESTAMP_COMPLETION;
		expect("write ex: EX_CREATE_CQ with flags TIMESTAMP_COMPLETION (rxe has no CQ flags) is EOPNOTSUPP",
		       ex_create_cq(fd, &bc, 0, 4, 2, &o), EOPNOTSUPP);
		bc = c;
		bc.flags = 1u << 31;
		expect("write ex: EX_CREATE_CQ with an unknown flag (1 << 31) is EOPNOTSUPP",
		       ex_create_cq(fd, &bc, 0, 4, 2, &o), EOPNOTSUPP);
		bc = c;
		bc.comp_vector = 1000;
		expect("write ex: EX_CREATE_CQ with comp_vector 1000 is EINVAL",
		       ex_create_cq(fd, &bc, 0, 4, 2, &o), EINVAL);
		bc = c;
		bc.cqe = 0;
		expect("write ex: EX_CREATE_CQ with cqe 0 is EINVAL", ex_create_cq(fd, &bc, 0, 4, 2, &o), EINVAL);
		bc = c;
		bc.comp_channel = fd;
		expect("write ex: EX_CREATE_CQ with a comp_channel fd that is not one is EBADF",
		       ex_create_cq(fd, &bc, 0, 4, 2, &o), EBADF);

		/* EX_CREATE_QP on a PD and two EX_CREATE_CQ CQs. */
		expect("write: ALLOC_PD for the extended QP checks", alloc_pd(fd, &pd), 0);
		e = ex_create_cq(fd, &c, 0, 4, 2, &o);
		cq = o.cq.base.cq_handle;
		expect("write ex: EX_CREATE_CQ (send CQ)", e, 0);
		e = ex_create_cq(fd, &c, 0, 4, 2, &o);
		cq2 = o.cq.base.cq_handle;
		expect("write ex: EX_CREATE_CQ (receive CQ)", e, 0);
		ex_qp_cmd(&q, pd, cq, cq2);
		e = ex_create_qp(fd, &q, 0, 8, 5, &o);
		qp = o.qp.base.qp_handle;
		expect("write ex: EX_CREATE_QP (RC)", e, 0);
		expect("write ex: EX_CREATE_QP answers response_length 40, comp_mask 0, a QP number, the caps",
		       !e && o.qp.response_length == 40 && o.qp.comp_mask == 0 && o.qp.base.qpn &&
				       o.qp.base.max_send_wr >= 16 && o.qp.base.max_recv_wr >= 16 &&
				       o.qp.base.max_send_sge >= 1 && o.qp.base.max_recv_sge >= 1 ? 0 : EINVAL,
		       0);
		e = ex_create_qp(fd, &q, 0, 8, 6, &o);
		expect("write ex: EX_CREATE_QP with a 48-byte response buffer", e, 0);
		expect("write ex: EX_CREATE_QP response_length stays 40, bytes 40..47 are zeroed",
		       !e && o.qp.response_length == 40 ? zero_from(&o, 40, 48) : EINVAL, 0);
		if (!e)
			expect("write: DESTROY_QP of an EX_CREATE_QP QP", destroy_qp(fd, o.qp.base.qp_handle), 0);
		e = ex_create_qp(fd, &q, 0, 8, 4, &o);
		expect("write ex: EX_CREATE_QP with a 32-byte response (the base only) is accepted", e, 0);
		expect("write ex: the 32-byte EX_CREATE_QP response holds the QP handle (DESTROY_QP of it)",
		       e ? e : destroy_qp(fd, o.qp.base.qp_handle), 0);
		e = ex_create_qp(fd, &q, 0, 7, 5, &o);
		expect("write ex: EX_CREATE_QP with the request up to create_flags (in_words 7) is accepted", e,
		       0);
		if (!e)
			destroy_qp(fd, o.qp.base.qp_handle);
		e = ex_create_qp(fd, &q, 0, 6, 5, &o);
		expect("write ex: EX_CREATE_QP with 48 bytes of request (in_words 6) is accepted", e, 0);
		if (!e)
			destroy_qp(fd, o.qp.base.qp_handle);
		expect("write ex: EX_CREATE_QP with a non-zero byte past the request is EOPNOTSUPP",
		       ex_create_qp(fd, &q, 1, 9, 5, &o), EOPNOTSUPP);
		bq = q;
		bq.comp_mask = 2;
		expect("write ex: EX_CREATE_QP with comp_mask bit 1 (unsupported) is EINVAL",
		       ex_create_qp(fd, &bq, 0, 8, 5, &o), EINVAL);
		bq = q;
		bq.comp_mask = IB_UVERBS_CREATE_QP_MASK_IND_TABLE;
		expect("write ex: EX_CREATE_QP with comp_mask IND_TABLE (no RWQ_IND_TBL object on the device) is EINVAL",
		       ex_create_qp(fd, &bq, 0, 8, 5, &o), EINVAL);
		bq = q;
		bq.reserved = 1;
		expect("write ex: EX_CREATE_QP with reserved != 0 is EINVAL",
		       ex_create_qp(fd, &bq, 0, 8, 5, &o), EINVAL);
		bq = q;
		bq.create_flags = 1; /* IB_QP_CREATE_IPOIB_UD_LSO: kernel only */
		expect("write ex: EX_CREATE_QP with create_flags IPOIB_UD_LSO (not for users) is EINVAL",
		       ex_create_qp(fd, &bq, 0, 8, 5, &o), EINVAL);
		bq = q;
		bq.create_flags = 1u << 31;
		expect("write ex: EX_CREATE_QP with an unknown create flag (1 << 31) is EINVAL",
		       ex_create_qp(fd, &bq, 0, 8, 5, &o), EINVAL);
		bq = q;
		bq.create_flags = 1 << 1; /* IB_QP_CREATE_BLOCK_MULTICAST_LOOPBACK */
		expect("write ex: EX_CREATE_QP with BLOCK_MULTICAST_LOOPBACK (no driver has it) is EOPNOTSUPP",
		       ex_create_qp(fd, &bq, 0, 8, 5, &o), EOPNOTSUPP);
		bq = q;
		bq.pd_handle = 4242;
		expect("write ex: EX_CREATE_QP with a never-allocated PD is ENOENT",
		       ex_create_qp(fd, &bq, 0, 8, 5, &o), ENOENT);
		bq = q;
		bq.pd_handle = cq;
		expect("write ex: EX_CREATE_QP with a CQ handle as PD (wrong type) is EINVAL",
		       ex_create_qp(fd, &bq, 0, 8, 5, &o), EINVAL);
		bq = q;
		bq.send_cq_handle = 4242;
		expect("write ex: EX_CREATE_QP with a never-allocated send CQ is ENOENT",
		       ex_create_qp(fd, &bq, 0, 8, 5, &o), ENOENT);
		bq = q;
		bq.recv_cq_handle = pd;
		expect("write ex: EX_CREATE_QP with a PD handle as receive CQ (wrong type) is EINVAL",
		       ex_create_qp(fd, &bq, 0, 8, 5, &o), EINVAL);

		/* EX_MODIFY_QP of the RC QP. */
		e = ex_modify_qp(fd, qp, init_mask, IB_QPS_INIT, 0, 0, 15, 1, &o);
		expect("write ex: EX_MODIFY_QP RESET->INIT", e, 0);
		expect("write ex: EX_MODIFY_QP answers response_length 8, comp_mask 0",
		       !e && o.mod.response_length == 8 && o.mod.comp_mask == 0 ? 0 : EINVAL, 0);
		expect("write: QUERY_QP after EX_MODIFY_QP", query_qp(fd, qp, &qr), 0);
		expect("write: QUERY_QP reads back state INIT and port 1 after EX_MODIFY_QP",
		       qr.qp_state == IB_QPS_INIT && qr.port_num == 1 ? 0 : EINVAL, 0);
		e = ex_modify_qp(fd, qp, init_mask, IB_QPS_INIT, 0, 0, 15, 2, &o);
		expect("write ex: EX_MODIFY_QP INIT->INIT with a 16-byte response buffer", e, 0);
		expect("write ex: EX_MODIFY_QP response_length stays 8, bytes 8..15 are zeroed",
		       !e && o.mod.response_length == 8 ? zero_from(&o, 8, 16) : EINVAL, 0);
		expect("write ex: EX_MODIFY_QP without a response buffer is accepted",
		       ex_modify_qp(fd, qp, init_mask, IB_QPS_INIT, 0, 0, 15, 0, NULL), 0);
		expect("write ex: EX_MODIFY_QP with the base request only (in_words 14) is accepted",
		       ex_modify_qp(fd, qp, init_mask, IB_QPS_INIT, 0, 0, 14, 1, &o), 0);
		expect("write ex: EX_MODIFY_QP cut before port_num (in_words 13) is EINVAL (port 0)",
		       ex_modify_qp(fd, qp, init_mask, IB_QPS_INIT, 0, 0, 13, 1, &o), EINVAL);
		expect("write ex: EX_MODIFY_QP with reserved != 0 is accepted (not checked upstream)",
		       ex_modify_qp(fd, qp, init_mask, IB_QPS_INIT, 1, 0, 15, 1, &o), 0);
		expect("write ex: EX_MODIFY_QP with a non-zero byte past the request is EOPNOTSUPP",
		       ex_modify_qp(fd, qp, init_mask, IB_QPS_INIT, 0, 1, 16, 1, &o), EOPNOTSUPP);
		expect("write ex: EX_MODIFY_QP with attr_mask bit 21 is EOPNOTSUPP",
		       ex_modify_qp(fd, qp, init_mask | (1 << 21), IB_QPS_INIT, 0, 0, 15, 1, &o), EOPNOTSUPP);
		expect("write ex: EX_MODIFY_QP with attr_mask bit 31 is EOPNOTSUPP",
		       ex_modify_qp(fd, qp, init_mask | (1u << 31), IB_QPS_INIT, 0, 0, 15, 1, &o), EOPNOTSUPP);
		/* IB_QP_RATE_LIMIT passes EX_MODIFY_QP's mask check (the handle is
		 * looked up: ENOENT) but not MODIFY_QP's (EOPNOTSUPP first). */
		expect("write ex: EX_MODIFY_QP with RATE_LIMIT of a never-allocated QP is ENOENT",
		       ex_modify_qp(fd, 4242, init_mask | rate_limit, IB_QPS_INIT, 0, 0, 15, 1, &o), ENOENT);
		expect("write: MODIFY_QP with RATE_LIMIT of a never-allocated QP is EOPNOTSUPP",
		       modify_qp(fd, 4242, init_mask | rate_limit, IB_QPS_INIT, 1), EOPNOTSUPP);
		/* The driver gets it: rdma_rxe and the mock refuse it. */
		expect("write ex: EX_MODIFY_QP with RATE_LIMIT reaches the driver, which says EOPNOTSUPP",
		       ex_modify_qp(fd, qp, init_mask | rate_limit, IB_QPS_INIT, 0, 0, 15, 1, &o),
		       EOPNOTSUPP);
		expect("write ex: EX_MODIFY_QP of a never-allocated QP is ENOENT",
		       ex_modify_qp(fd, 4242, init_mask, IB_QPS_INIT, 0, 0, 15, 1, &o), ENOENT);
		expect("write ex: EX_MODIFY_QP of a CQ handle (wrong type) is EINVAL",
		       ex_modify_qp(fd, cq, init_mask, IB_QPS_INIT, 0, 0, 15, 1, &o), EINVAL);
		expect("write ex: EX_MODIFY_QP to state 9 is EINVAL",
		       ex_modify_qp(fd, qp, IB_QP_STATE, 9, 0, 0, 15, 1, &o), EINVAL);
		expect("write: QUERY_QP still reads back INIT", query_qp(fd, qp, &qr) ? EINVAL :
		       qr.qp_state == IB_QPS_INIT ? 0 : EINVAL, 0);
		expect("write: DESTROY_QP of the EX_CREATE_QP QP", destroy_qp(fd, qp), 0);
		e = destroy_cq(fd, cq);
		expect("write: DESTROY_CQ of the EX_CREATE_CQ CQs", e ? e : destroy_cq(fd, cq2), 0);
		expect("write: DEALLOC_PD of the extended QP checks' PD", dealloc_pd(fd, pd), 0);
	}

	/* MR write commands (ib_uverbs_reg_mr(), ib_check_mr_access(),
	 * ib_umem_get()): one MR stays open for the close cleanup. */
	{
		long pg = sysconf(_SC_PAGESIZE);
		char *buf = mmap(NULL, 4 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		uint32_t pd = ~0u, mr = ~0u, mr2 = ~0u;

		memset(buf, 1, 4 * pg);
		munmap(buf + 3 * pg, pg); /* the 4th page is a hole */
		expect("write: ALLOC_PD for the MR checks", alloc_pd(fd, &pd), 0);
		expect("write: REG_MR of 2 pages", reg_mr(fd, pd, buf, 2 * pg, (uintptr_t)buf,
							  IB_ACCESS_LOCAL_WRITE, &mr), 0);
		expect("write: REG_MR of 100 bytes at a page offset, remote read",
		       reg_mr(fd, pd, buf + 100, 100, 0x10000 + 100, IB_ACCESS_REMOTE_READ, &mr2), 0);
		expect("write: REG_MR with start and hca_va at different page offsets is EINVAL",
		       reg_mr(fd, pd, buf, pg, 0x10010, IB_ACCESS_LOCAL_WRITE, NULL), EINVAL);
		expect("write: REG_MR with remote write but no local write is EINVAL",
		       reg_mr(fd, pd, buf, pg, (uintptr_t)buf, IB_ACCESS_REMOTE_WRITE, NULL), EINVAL);
		expect("write: REG_MR with an unknown access bit (1 << 15) is EINVAL",
		       reg_mr(fd, pd, buf, pg, (uintptr_t)buf, 1 << 15, NULL), EINVAL);
		expect("write: REG_MR of a never-allocated PD is ENOENT",
		       reg_mr(fd, 4242, buf, pg, (uintptr_t)buf, IB_ACCESS_LOCAL_WRITE, NULL), ENOENT);
		expect("write: REG_MR running into unmapped memory is EFAULT",
		       reg_mr(fd, pd, buf + 2 * pg, 2 * pg, (uintptr_t)buf + 2 * pg,
			      IB_ACCESS_LOCAL_WRITE, NULL), EFAULT);
		expect("write: DEALLOC_PD of a PD an MR uses is EBUSY", dealloc_pd(fd, pd), EBUSY);
		expect("write: DEREG_MR", dereg_mr(fd, mr2), 0);
		expect("write: DEREG_MR again (double destroy) is ENOENT", dereg_mr(fd, mr2), ENOENT);
		expect("write: DEREG_MR of a PD handle (wrong type) is EINVAL", dereg_mr(fd, pd), EINVAL);
		/* pd and mr stay open; the buffer is unmapped while the MR pins it. */
		munmap(buf, 3 * pg);
	}

	/* QUERY_GID_TABLE (uverbs_std_types_device.c, rdma_query_gid_table()). */
	{
		struct ib_uverbs_gid_entry ge[16];
		uint64_t num = 0;

		memset(ge, 0xff, sizeof(ge));
		expect("ioctl: QUERY_GID_TABLE", query_gid_table(fd, sizeof(ge[0]), ge, sizeof(ge), &num), 0);
		expect("ioctl: QUERY_GID_TABLE lists valid GIDs of port 1, index 0 first",
		       num >= 1 && num <= 16 && ge[0].port_num == 1 && ge[0].gid_index == 0 &&
				       ge[0].netdev_ifindex != 0xffffffff ? 0 : EINVAL, 0);
		expect("ioctl: QUERY_GID_TABLE with entry size 0 is EINVAL",
		       query_gid_table(fd, 0, ge, sizeof(ge), &num), EINVAL);
		expect("ioctl: QUERY_GID_TABLE with an array not a multiple of the entry size is EINVAL",
		       query_gid_table(fd, sizeof(ge[0]), ge, sizeof(ge[0]) + 4, &num), EINVAL);
		expect("ioctl: QUERY_GID_TABLE with 16-byte entries (shorter than the kernel's)",
		       query_gid_table(fd, 16, ge, 16 * 16, &num), 0);
	}

	/* The async event file. */
	{
		struct req a;
		char ev[16];
		int afd;

		req_init(&a, UVERBS_OBJECT_ASYNC_EVENT, UVERBS_METHOD_ASYNC_EVENT_ALLOC, 1);
		a.attrs[0].attr_id = UVERBS_ATTR_ASYNC_EVENT_ALLOC_FD_HANDLE;
		a.attrs[0].flags = UVERBS_ATTR_F_MANDATORY;
		expect("ioctl: ASYNC_EVENT_ALLOC", do_ioctl(fd, &a), 0);
		afd = (int)a.attrs[0].data;
		fcntl(afd, F_SETFL, O_NONBLOCK);
		expect("async fd: empty non-blocking read is EAGAIN",
		       read(afd, ev, sizeof(ev)) < 0 ? errno : 0, EAGAIN);
		if (!upstream) {
			/* The mock raises IB_EVENT_PORT_ERR on port 1 for an ALLOC_PD
			 * with this driver request; the async fd reports it with the
			 * port as element (upstream ib_uverbs_event_handler()). */
			struct ib_uverbs_alloc_pd_resp presp = {};
			struct {
				struct ib_uverbs_alloc_pd cmd;
				uint64_t magic;
				uint32_t port, pad;
			} preq = { .cmd = { .response = (uintptr_t)&presp },
				   .magic = 0x6d6f636b65766e74ull, .port = 1 };
			struct ib_uverbs_async_event_desc d = {};

			expect("mock: ALLOC_PD raising a port event",
			       do_write(fd, IB_USER_VERBS_CMD_ALLOC_PD, &preq, sizeof(preq),
					sizeof(presp) / 4), 0);
			expect("async fd: the port event is read",
			       read(afd, &d, sizeof(d)) == sizeof(d) ? 0 : errno, 0);
			expect("async fd: IB_EVENT_PORT_ERR (10) with element = port 1",
			       d.event_type == 10 && d.element == 1 ? 0 : EINVAL, 0);
			events_test(fd, afd);
		}
		close(afd);
	}

	fuzz_found_test(fd);
	rereg_rxe_test(fd);
	isolation_test(fd);

	close(fd);
	printf("R ok close with PDs, CQs, a QP, an MR and a context open\n");
	return failures ? 1 : 0;
}
