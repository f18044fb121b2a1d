// SPDX-License-Identifier: GPL-2.0
/*
 * fault_sweep: one verb under fault injection, one failure point at a time.
 *
 *   fault_sweep -d DEV -v VERB -k slab|fw [-f FWSIM_DIR] [-m MAX] [-s STEP] [-g INDEX]
 *
 * VERB is one of ctx uctx pd mr cq qp modify ah srq xrcd xsrq mw umem dobj dmkey dci dct rereg rmp mcast
 * (the create paths; "ctx" is ibv_open_device, "uctx" its kernel part alone
 * (see open_uctx()), "modify" moves a fresh RC QP RST->INIT->RTR->RTS, "xrcd"
 * ibv_open_xrcd, "xsrq" an XRC SRQ on that XRC domain, "mw" a type 2 memory
 * window, "umem" mlx5dv_devx_umem_reg of 64 KiB, "dobj" a DEVX object (ALLOC_PD
 * through mlx5dv_devx_obj_create) on a context opened with DEVX, "dmkey" an
 * indirect mkey of mlx5dv_create_mkey(), a DEVX CREATE_MKEY), "dci" a DC
 * initiator (mlx5dv_create_qp), "dct" a DC target on an SRQ moved to RTR, where
 * its CREATE_DCT runs, "rereg" ibv_rereg_mr() of a fresh MR's access flags and then
 * its translation, which mlx5 makes in place by UMR WQEs on a UMR QP of its own, "rmp" a DEVX cyclic RMP whose
 * WQEs and doorbell record are in a DEVX umem made at setup, as UCX creates its receive
 * queue, "mcast" ibv_attach_mcast() of a UD QP made at setup to a group, ATTACH_TO_MCG; no
 * d_mcast: upstream forgets an attachment before its detach, which a failed detach leaves
 * behind; "cmid" an rdma_cm id through the raw ucma ABI, bound to the IPv4 address of the GID of
 * -g and joined to a group, on a file opened at setup; "cmmig" MIGRATE_ID of an id with a user
 * event pending from its file to a second one, "cmev" WRITE_CM_EVENT of a user event: the id
 * and its files are made unarmed (new files each time: their queues have no room yet, so the
 * command allocates as on a fresh file) and the command armed; after it the event is on the file
 * the command's outcome says, and nowhere else) or d_ctx d_uctx d_pd d_mr d_cq d_qp d_ah d_srq d_xrcd d_xsrq d_mw d_umem d_dobj d_dmkey
 * d_dci d_dct d_rmp (the
 * destroy paths: the object is created unarmed, its destroy is armed).
 *
 * -g INDEX: on RoCE the AVs ("ah", "modify") go from GID index INDEX (default 0, the link-local
 *   RoCE v1 GID) to that GID itself: an IP GID's own address, resolved through the route
 *   (upstream ib_resolve_eth_dmac(), a local destination).
 * -k slab: the kernel's allocation fault injection through the task's own
 *   counter, /proc/thread-self/fail-nth (failslab and fail_page_alloc, set up
 *   by the caller in debugfs): writing N makes the N-th fault-injection site
 *   this thread passes fail, and only this thread's. Reading it back after
 *   the verb says whether the point was reached (0) or not (the verb has
 *   fewer than N points: the sweep is over).
 * -k fw: the firmware simulator's one-shot knob FWSIM_DIR/fail_nth: the N-th
 *   firmware command from now completes with a bad status (odd N: INT_ERR,
 *   which upstream maps to EIO; even N: LIM_ERR, ENOMEM), without executing.
 *
 * Points N = 1, 1+STEP, 1+2*STEP, ... are failed until one is not reached (or
 * MAX points were hit). For each: a create verb must fail with the point's
 * errno (slab: ENOMEM; fw: the status's; a DEVX object create: EREMOTEIO,
 * upstream's errno for a command the firmware refused) or, for an allocation, succeed
 * because something absorbed the failure (a fallback: kmemleak's own object
 * cache falls back to its pool, libibverbs/libmlx5 tolerate some failed
 * calls of ibv_open_device); a create whose firmware command failed must
 * fail (but "ctx": libmlx5 tolerates failed port queries and a failed UAR
 * allocation while opening); a destroy verb may fail with that errno,
 * and then the object must still exist and its destroy succeed unarmed.
 * After each point the device's restrack counts (`rdma res show`) and the
 * simulator's tables (FWSIM_DIR/resources, iommu) must be what they were
 * before it. Prints one line per failed check, `R ok/fail` per point class,
 * and one summary line:
 *   S <verb> <kind> points <hit> failed <n> absorbed <n> reached <last N>
 *
 * LDLIBS: -lmlx5
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>
#include <rdma/ib_user_ioctl_cmds.h>
#include <rdma/mlx5-abi.h>
#include <rdma/rdma_cma_abi.h>
#include <rdma/rdma_user_ioctl_cmds.h>
#include <sys/ioctl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

enum kind { SLAB, FW };

static const char *devname, *fwdir, *verb;
static enum kind kind;
static int failnth_fd = -1, fwknob_fd = -1, sgid_index;
static int failures;

struct env {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_xrcd *xrcd;
	struct ibv_srq *srq;
	struct mlx5dv_devx_umem *umem;
	/* The UD QP of "mcast", made at setup. */
	struct ibv_qp *ud;
	/* The /dev/infiniband/rdma_cm file of "cmid", opened non-blocking at setup. */
	int cmfd;
	struct ibv_device *dev;
	struct ibv_port_attr port;
	union ibv_gid gid;
	int roce;
	void *buf;
	size_t len;
};

static void fail(const char *fmt, const char *a, long n, int e)
{
	printf("R fail %s %s point %ld: ", verb, kind == SLAB ? "slab" : "fw", n);
	printf(fmt, a, e, strerror(e));
	printf("\n");
	failures++;
}

/* debugfs files do not seek: the fw knob is written with write(). */
static int write_str(int fd, const char *s)
{
	ssize_t r = fd == failnth_fd ? pwrite(fd, s, strlen(s), 0) : write(fd, s, strlen(s));

	return r < 0 ? errno : 0;
}

/* Arms point n. Nothing but the verb may run between arm() and disarm(). */
static int arm(long n)
{
	char b[64];

	if (kind == SLAB) {
		snprintf(b, sizeof(b), "%ld", n);
		return write_str(failnth_fd, b);
	}
	/* Odd points INT_ERR (0x1, EIO), even points LIM_ERR (0x8, ENOMEM). */
	snprintf(b, sizeof(b), "%ld %s", n, n % 2 ? "0x1" : "0x8");
	return write_str(fwknob_fd, b);
}

/* Disarms; returns 1 if the armed point was reached (the fault fired). */
static int disarm(void)
{
	char b[64] = "";
	ssize_t r;

	if (kind == SLAB) {
		r = pread(failnth_fd, b, sizeof(b) - 1, 0);
		write_str(failnth_fd, "0");
		return r > 0 && atol(b) == 0;
	}
	{
		char p[512];
		int fd;

		snprintf(p, sizeof(p), "%s/fail_nth", fwdir);
		fd = open(p, O_RDONLY);
		r = fd < 0 ? -1 : read(fd, b, sizeof(b) - 1);
		if (fd >= 0)
			close(fd);
	}
	write_str(fwknob_fd, "0");
	return r > 0 && b[0] == '0' && (b[1] == '\n' || b[1] == 0);
}

static int want_errno(long n, int devx_cmd)
{
	if (kind == SLAB)
		return ENOMEM;
	/*
	 * A DEVX command the firmware refused is EREMOTEIO, its outbox copied to the
	 * user (upstream MLX5_IB_METHOD_DEVX_OBJ_CREATE: mlx5_cmd_do()'s -EREMOTEIO).
	 */
	if (devx_cmd)
		return EREMOTEIO;
	return n % 2 ? EIO : ENOMEM;
}

/* What must come back after each point: restrack and the simulator's tables. */
static void snapshot(char *out, size_t sz)
{
	char cmd[256], line[512];
	const char *files[] = { "resources", "iommu" };
	size_t used = 0;
	FILE *f;
	unsigned int i;

	out[0] = 0;
	snprintf(cmd, sizeof(cmd), "rdma res show 2>&1 | grep ' %s: '", devname);
	f = popen(cmd, "r");
	if (f) {
		while (fgets(line, sizeof(line), f) && used + strlen(line) < sz)
			used += snprintf(out + used, sz - used, "%s", line);
		pclose(f);
	}
	if (!fwdir)
		return;
	for (i = 0; i < 2; i++) {
		snprintf(cmd, sizeof(cmd), "%s/%s", fwdir, files[i]);
		f = fopen(cmd, "r");
		if (!f)
			continue;
		while (fgets(line, sizeof(line), f) && used + strlen(line) < sz)
			used += snprintf(out + used, sz - used, "%s", line);
		fclose(f);
	}
}

static void flat(char *s)
{
	for (; *s; s++)
		if (*s == '\n')
			*s = ' ';
}

/*
 * Mappings of uverbs files in this process that `base` (a /proc/self/maps
 * excerpt) does not list are unmapped: libmlx5 ignores a failed munmap() at
 * ibv_close_device() (an injected allocation failure in the VMA split), and a
 * page still mapped rightly holds its UAR. Returns how many went.
 */
static int unmap_leftovers(const char *base)
{
	char line[512];
	unsigned long a, b;
	int n = 0;
	FILE *f = fopen("/proc/self/maps", "r");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		if (!strstr(line, "/dev/infiniband/") || strstr(base, line))
			continue;
		if (sscanf(line, "%lx-%lx", &a, &b) == 2 && !munmap((void *)a, b - a))
			n++;
	}
	fclose(f);
	return n;
}

static void uverbs_maps(char *out, size_t sz)
{
	char line[512];
	size_t used = 0;
	FILE *f = fopen("/proc/self/maps", "r");

	out[0] = 0;
	if (!f)
		return;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, "/dev/infiniband/") && used + strlen(line) < sz)
			used += snprintf(out + used, sz - used, "%s", line);
	fclose(f);
}

static int same(const char *a, const char *b, long n, const char *when)
{
	char x[4096], y[4096];

	if (!strcmp(a, b))
		return 1;
	snprintf(x, sizeof(x), "%s", a);
	snprintf(y, sizeof(y), "%s", b);
	flat(x);
	flat(y);
	printf("R fail %s %s point %ld: state %s differs: before [%s] after [%s]\n", verb,
	       kind == SLAB ? "slab" : "fw", n, when, x, y);
	failures++;
	return 0;
}

static struct ibv_qp *make_qp(struct env *e)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = e->cq,
		.recv_cq = e->cq,
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};

	return ibv_create_qp(e->pd, &ia);
}

/* RST -> INIT -> RTR -> RTS, connected to itself: 0 or the first errno. */
static int to_rts(struct env *e, struct ibv_qp *qp)
{
	struct ibv_qp_attr a;
	int r;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE;
	r = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			  IBV_QP_ACCESS_FLAGS);
	if (r)
		return r;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = qp->qp_num;
	a.rq_psn = 0x1234;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.port_num = 1;
	if (e->roce) {
		a.ah_attr.is_global = 1;
		a.ah_attr.grh.dgid = e->gid;
		a.ah_attr.grh.sgid_index = sgid_index;
		a.ah_attr.grh.hop_limit = 1;
	} else {
		a.ah_attr.dlid = e->port.lid;
	}
	r = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
			  IBV_QP_MIN_RNR_TIMER);
	if (r)
		return r;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = 0x4321;
	a.max_rd_atomic = 1;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			     IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
}

static struct ibv_ah *make_ah(struct env *e)
{
	struct ibv_ah_attr a = { .port_num = 1 };

	if (e->roce) {
		a.is_global = 1;
		a.grh.dgid = e->gid;
		a.grh.sgid_index = sgid_index;
		a.grh.hop_limit = 1;
	} else {
		a.dlid = e->port.lid;
	}
	return ibv_create_ah(e->pd, &a);
}

/*
 * uctx: the kernel's part of opening a device without libibverbs around it,
 * open() of the uverbs file and GET_CONTEXT with libmlx5's request (DYN_UAR,
 * CQE version 1), so that the errno seen is the kernel's: libibverbs turns a
 * failed open() into a search of /dev (ENOENT when it finds nothing more) and
 * libmlx5 retries a failed GET_CONTEXT with its legacy request lengths.
 */
struct uctx {
	int fd;
};

static struct uctx *open_uctx(struct env *e)
{
	struct {
		struct ib_uverbs_ioctl_hdr hdr;
		struct ib_uverbs_attr attrs[2];
	} r;
	struct mlx5_ib_alloc_ucontext_req_v2 req = {
		.max_cqe_version = 1,
		.lib_caps = MLX5_LIB_CAP_4K_UAR | MLX5_LIB_CAP_DYN_UAR,
	};
	struct mlx5_ib_alloc_ucontext_resp resp;
	static struct uctx u;
	char path[128];
	int err;

	snprintf(path, sizeof(path), "/dev/infiniband/%s", e->dev->dev_name);
	u.fd = open(path, O_RDWR | O_CLOEXEC);
	if (u.fd < 0)
		return NULL;
	memset(&r, 0, sizeof(r));
	r.hdr.length = sizeof(r);
	r.hdr.object_id = UVERBS_OBJECT_DEVICE;
	r.hdr.method_id = UVERBS_METHOD_GET_CONTEXT;
	r.hdr.num_attrs = 2;
	r.hdr.driver_id = RDMA_DRIVER_MLX5;
	r.attrs[0] = (struct ib_uverbs_attr){ .attr_id = UVERBS_ATTR_UHW_IN, .len = sizeof(req),
					      .data = (uintptr_t)&req };
	r.attrs[1] = (struct ib_uverbs_attr){ .attr_id = UVERBS_ATTR_UHW_OUT, .len = sizeof(resp),
					      .data = (uintptr_t)&resp };
	if (ioctl(u.fd, RDMA_VERBS_IOCTL, &r)) {
		err = errno;
		close(u.fd);
		errno = err;
		return NULL;
	}
	return &u;
}

static struct ibv_srq *make_srq(struct env *e, int xrc)
{
	struct ibv_srq_init_attr_ex a = {
		.attr = { .max_wr = 16, .max_sge = 1 },
		.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD,
		.srq_type = IBV_SRQT_BASIC,
		.pd = e->pd,
	};

	if (xrc) {
		a.srq_type = IBV_SRQT_XRC;
		a.comp_mask |= IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ;
		a.xrcd = e->xrcd;
		a.cq = e->cq;
	}
	return ibv_create_srq_ex(e->ctx, &a);
}

static struct ibv_xrcd *make_xrcd(struct env *e)
{
	struct ibv_xrcd_init_attr a = {
		.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS,
		.fd = -1,
		.oflags = O_CREAT,
	};

	return ibv_open_xrcd(e->ctx, &a);
}

/* A DEVX object: ALLOC_PD (opcode 0x800 in the first big-endian dword). */
static struct mlx5dv_devx_obj *make_dobj(struct env *e)
{
	uint32_t in[4] = { htobe32(0x800u << 16) }, out[4];

	return mlx5dv_devx_obj_create(e->ctx, in, sizeof(in), out, sizeof(out));
}

/* A DEVX cyclic RMP (CREATE_RMP 0x90c) of 16 WQEs of 16 bytes at offset 0 of the umem
 * e->umem (e->buf), its doorbell record at 4 KiB into it, as UCX makes its receive queue:
 * NULL with errno. The PRM offsets (mlx5_ifc.h): rmpc at byte 0x20 of create_rmp_in, its wq
 * at byte 0x30 of rmpc. */
static struct mlx5dv_devx_obj *make_rmp(struct env *e)
{
	uint8_t in[0x880 / 8] = { 0 }, out[16], *wq = in + 0x20 + 0x30;
	struct mlx5dv_pd dpd;
	struct mlx5dv_obj dobj = { .pd = { .in = e->pd, .out = &dpd } };
	uint32_t v;

	if (mlx5dv_init_obj(&dobj, MLX5DV_OBJ_PD))
		return NULL;
	in[0] = 0x09;
	in[1] = 0x0c;
	in[0x20 + 1] = 1 << 4;			/* rmpc.state RDY */
	wq[0] = 1 << 4;				/* wq_type cyclic */
	v = htobe32(dpd.pdn);
	memcpy(wq + 8, &v, 4);			/* pd (24 bits) */
	wq[16 + 6] = 0x10;			/* dbr_addr 4096 (be64) */
	wq[33] = 4;				/* log_wq_stride 16 bytes */
	wq[35] = 4;				/* log_wq_sz 16 */
	v = htobe32(e->umem->umem_id);
	memcpy(wq + 40, &v, 4);			/* dbr_umem_id */
	memcpy(wq + 44, &v, 4);			/* wq_umem_id */
	return mlx5dv_devx_obj_create(e->ctx, in, sizeof(in), out, sizeof(out));
}

/* A DC initiator (dct 0) or a DC target on e->srq moved RESET->INIT->RTR (dct 1, the
 * move is where CREATE_DCT runs; a failed move destroys it again): NULL with errno. */
static struct ibv_qp *make_dc(struct env *e, int dct)
{
	struct ibv_qp_init_attr_ex a = {
		.qp_type = IBV_QPT_DRIVER,
		.send_cq = e->cq,
		.recv_cq = e->cq,
		.srq = dct ? e->srq : NULL,
		.pd = e->pd,
		.cap = { .max_send_wr = dct ? 0 : 16, .max_send_sge = dct ? 0 : 1 },
		.comp_mask = IBV_QP_INIT_ATTR_PD,
	};
	struct mlx5dv_qp_init_attr dv = {
		.comp_mask = MLX5DV_QP_INIT_ATTR_MASK_DC,
		.dc_init_attr = { .dc_type = dct ? MLX5DV_DCTYPE_DCT : MLX5DV_DCTYPE_DCI,
				  .dct_access_key = dct ? 0xdc : 0 },
	};
	struct ibv_qp *qp = mlx5dv_create_qp(e->ctx, &a, &dv);
	struct ibv_qp_attr m = { .qp_state = IBV_QPS_INIT, .port_num = 1,
				 .qp_access_flags = IBV_ACCESS_REMOTE_WRITE };
	int r;

	if (!qp || !dct)
		return qp;
	r = ibv_modify_qp(qp, &m, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			  IBV_QP_ACCESS_FLAGS);
	if (!r) {
		memset(&m, 0, sizeof(m));
		m.qp_state = IBV_QPS_RTR;
		m.path_mtu = IBV_MTU_1024;
		m.min_rnr_timer = 12;
		m.ah_attr.port_num = 1;
		if (e->roce) {
			m.ah_attr.is_global = 1;
			m.ah_attr.grh.dgid = e->gid;
			m.ah_attr.grh.hop_limit = 1;
		}
		r = ibv_modify_qp(qp, &m, IBV_QP_STATE | IBV_QP_MIN_RNR_TIMER | IBV_QP_AV |
				  IBV_QP_PATH_MTU);
	}
	if (r) {
		ibv_destroy_qp(qp);
		errno = r;
		return NULL;
	}
	return qp;
}

/* The object a verb creates or destroys, kind-tagged for destroy(). */
enum obj { O_CTX, O_UCTX, O_PD, O_MR, O_CQ, O_QP, O_AH, O_MODIFY, O_SRQ, O_XRCD, O_XSRQ, O_MW,
	   O_UMEM, O_DOBJ, O_DMKEY, O_DCI, O_DCT, O_REREG, O_RMP, O_MCAST, O_CMID,
	   O_CMMIG, O_CMEV };

struct verbdef {
	const char *name;
	enum obj obj;
	int destroy;
};

static const struct verbdef verbs[] = {
	{ "ctx", O_CTX, 0 },  { "uctx", O_UCTX, 0 }, { "d_uctx", O_UCTX, 1 }, { "pd", O_PD, 0 },     { "mr", O_MR, 0 },     { "cq", O_CQ, 0 },
	{ "qp", O_QP, 0 },    { "modify", O_MODIFY, 0 }, { "ah", O_AH, 0 },
	{ "d_ctx", O_CTX, 1 }, { "d_pd", O_PD, 1 },  { "d_mr", O_MR, 1 },   { "d_cq", O_CQ, 1 },
	{ "d_qp", O_QP, 1 },  { "d_ah", O_AH, 1 },
	{ "srq", O_SRQ, 0 },   { "d_srq", O_SRQ, 1 },   { "xrcd", O_XRCD, 0 }, { "d_xrcd", O_XRCD, 1 },
	{ "xsrq", O_XSRQ, 0 }, { "d_xsrq", O_XSRQ, 1 }, { "mw", O_MW, 0 },     { "d_mw", O_MW, 1 },
	{ "umem", O_UMEM, 0 }, { "d_umem", O_UMEM, 1 }, { "dobj", O_DOBJ, 0 }, { "d_dobj", O_DOBJ, 1 },
	{ "dmkey", O_DMKEY, 0 }, { "d_dmkey", O_DMKEY, 1 },
	{ "dci", O_DCI, 0 },   { "d_dci", O_DCI, 1 },   { "dct", O_DCT, 0 },   { "d_dct", O_DCT, 1 },
	{ "rereg", O_REREG, 0 }, { "rmp", O_RMP, 0 },   { "d_rmp", O_RMP, 1 },
	{ "mcast", O_MCAST, 0 }, { "cmid", O_CMID, 0 }, { "cmmig", O_CMMIG, 0 },
	{ "cmev", O_CMEV, 0 },
};

/* The group of "mcast": ::ffff:239.1.2.5 on RoCE, ff12:401b::1 with LID 0xc001 on
 * InfiniBand. */
static union ibv_gid mcast_gid(const struct env *e)
{
	union ibv_gid g = { .raw = { 0xff, 0x12, 0x40, 0x1b, [15] = 1 } };

	if (e->roce) {
		memset(&g, 0, sizeof(g));
		g.raw[10] = g.raw[11] = 0xff;
		g.raw[12] = 239;
		g.raw[13] = 1;
		g.raw[14] = 2;
		g.raw[15] = 5;
	}
	return g;
}

/* ibv_attach_mcast() of the UD QP to the group: the QP, or NULL with errno. */
static void *attach_mcast(struct env *e)
{
	union ibv_gid g = mcast_gid(e);
	int r = ibv_attach_mcast(e->ud, &g, e->roce ? 0 : 0xc001);

	if (r) {
		errno = r;
		return NULL;
	}
	return e->ud;
}

static struct env *the_env;

/* What "cmid" made: an rdma_cm id and its group. */
struct cmid {
	int fd;
	uint32_t id, mc;
	/* "cmmig" and "cmev": the id's own file and MIGRATE_ID's destination (-1 for "cmev"). */
	int src, dst;
};

#define UCMD(fd, s, c, o)                                                                          \
	((s).cmd = (c), (s).in = sizeof(s) - 8, (s).out = (o), write((fd), &(s), sizeof(s)))

/* DESTROY_ID: 0 or errno. */
static int cm_destroy(int fd, uint32_t id)
{
	uint32_t reported;
	struct ucma_abi_destroy_id d = { .response = (uintptr_t)&reported, .id = id };

	return UCMD(fd, d, UCMA_CMD_DESTROY_ID, 4) < 0 ? errno : 0;
}

/*
 * "cmid" through the raw ucma ABI on the setup's rdma_cm file: CREATE_ID (UDP), BIND_IP to the
 * IPv4 address of the GID of -g, JOIN_IP_MCAST of 239.1.2.6. NULL with errno (the id made so
 * far destroyed) on failure.
 */
static void *make_cmid(struct env *e)
{
	struct cmid *c = calloc(1, sizeof(*c));
	struct ucma_abi_create_id ci = { .uid = 1, .ps = 0x0111 /* RDMA_PS_UDP */ };
	struct ucma_abi_bind_ip b = { 0 };
	struct ucma_abi_join_ip_mcast j = { .uid = 2 };
	struct sockaddr_in *sa = (struct sockaddr_in *)&b.addr, *ga = (struct sockaddr_in *)&j.addr;
	int err;

	if (!c)
		return NULL;
	c->fd = e->cmfd;
	ci.response = (uintptr_t)&c->id;
	if (UCMD(c->fd, ci, UCMA_CMD_CREATE_ID, 4) < 0)
		goto out_free;
	b.id = c->id;
	sa->sin_family = AF_INET;
	memcpy(&sa->sin_addr, e->gid.raw + 12, 4);
	j.id = c->id;
	j.response = (uintptr_t)&c->mc;
	ga->sin_family = AF_INET;
	ga->sin_addr.s_addr = htobe32(0xef010206);
	if (UCMD(c->fd, b, UCMA_CMD_BIND_IP, 0) < 0 || UCMD(c->fd, j, UCMA_CMD_JOIN_IP_MCAST, 4) < 0) {
		err = errno;
		cm_destroy(c->fd, c->id);
		errno = err;
		goto out_free;
	}
	return c;
out_free:
	err = errno;
	free(c);
	errno = err;
	return NULL;
}

/* LEAVE_MCAST and DESTROY_ID: 0 or errno. */
static int destroy_cmid(struct cmid *c)
{
	uint32_t reported;
	struct ucma_abi_destroy_id l = { .response = (uintptr_t)&reported, .id = c->mc };
	int err = UCMD(c->fd, l, UCMA_CMD_LEAVE_MCAST, 4) < 0 ? errno : 0;

	err = cm_destroy(c->fd, c->id) ?: err;
	free(c);
	return err;
}

/* rdma_user_cm.h's struct rdma_ucm_write_cm_event (rdma-core 44's header has no such command):
 * the id, the event (RDMA_CM_EVENT_USER 18), its status and the parameter union (the largest
 * member, struct rdma_ucm_ud_param, is 304 bytes). */
#define UCMA_CMD_WRITE_CM_EVENT 24
#define CM_EVENT_USER 18
#define CMEV_STATUS 77
struct cm_write_event {
	__u32 cmd;
	__u16 in;
	__u16 out;
	__u32 id, reserved, event;
	__s32 status;
	__u8 param[304];
};

/* WRITE_CM_EVENT of a user event (status CMEV_STATUS) on the id: 0 or errno. */
static int cm_write_event(struct cmid *c)
{
	struct cm_write_event w = { .id = c->id, .event = CM_EVENT_USER, .status = CMEV_STATUS };

	return UCMD(c->fd, w, UCMA_CMD_WRITE_CM_EVENT, 0) < 0 ? errno : 0;
}

/* An id (TCP, uid 1) on the setup's first rdma_cm file; for "cmmig" with a user event pending.
 * NULL with errno. */
static void free_cm_user(struct cmid *c)
{
	if (c->src >= 0)
		close(c->src);
	if (c->dst >= 0)
		close(c->dst);
	free(c);
}

static void *make_cm_user(int with_event)
{
	struct cmid *c = calloc(1, sizeof(*c));
	struct ucma_abi_create_id ci = { .uid = 1, .ps = 0x0106 /* RDMA_PS_TCP */ };
	int err;

	if (!c)
		return NULL;
	c->src = open("/dev/infiniband/rdma_cm", O_RDWR | O_NONBLOCK);
	c->dst = with_event ? open("/dev/infiniband/rdma_cm", O_RDWR | O_NONBLOCK) : -1;
	c->fd = c->src;
	ci.response = (uintptr_t)&c->id;
	if (c->src < 0 || (with_event && c->dst < 0) ||
	    UCMD(c->fd, ci, UCMA_CMD_CREATE_ID, 4) < 0) {
		err = errno;
		free_cm_user(c);
		errno = err;
		return NULL;
	}
	if (with_event && (err = cm_write_event(c))) {
		cm_destroy(c->fd, c->id);
		free_cm_user(c);
		errno = err;
		return NULL;
	}
	return c;
}

/* The armed command of "cmmig" (MIGRATE_ID from the id's file to its second; the id follows
 * on success) or "cmev" (WRITE_CM_EVENT): 0 or errno. */
static int cm_armed(enum obj o, struct cmid *c)
{
	struct ucma_abi_migrate_resp r;
	struct ucma_abi_migrate_id m = { .response = (uintptr_t)&r, .id = c->id, .fd = c->src };

	if (o == O_CMEV)
		return cm_write_event(c);
	if (UCMD(c->dst, m, UCMA_CMD_MIGRATE_ID, sizeof(r)) < 0)
		return errno;
	c->fd = c->dst;
	return 0;
}

/* GET_EVENT on a non-blocking rdma_cm file: 0 and the event, or errno (EAGAIN: none). */
static int cm_get_event(int fd, struct ucma_abi_event_resp *ev)
{
	struct ucma_abi_get_event g = { .response = (uintptr_t)ev };

	return UCMD(fd, g, UCMA_CMD_GET_EVENT, sizeof(*ev)) < 0 ? errno : 0;
}

/* After the armed command (err its outcome): the user event is on the id's file exactly when it
 * was written or moved there ("cmev" failed: nowhere; "cmmig" failed: still on the first file,
 * with the id), and no file holds another. */
static void cm_check(enum obj o, struct cmid *c, int err, long n)
{
	struct ucma_abi_event_resp ev;
	int want = !(o == O_CMEV && err), fds[2] = { c->src, c->dst }, i, r;

	for (i = 0; i < 2 && fds[i] >= 0; i++) {
		r = cm_get_event(fds[i], &ev);
		if (want && fds[i] == c->fd) {
			if (r || ev.id != c->id || ev.event != CM_EVENT_USER ||
			    ev.status != CMEV_STATUS)
				fail("%s: the user event is not on the id's file (GET_EVENT errno %d, %s)",
				     "", n, r);
		} else if (r != EAGAIN) {
			fail("%s: an event where none belongs (GET_EVENT errno %d, %s)", "", n, r);
		}
	}
}

/* The armed part of "rereg": remote write taken away, then a new translation (32 KiB
 * from 4 KiB into the MR's 64 KiB, which mlx5 loads into the mkey by UMR WQEs), keys kept
 * (checked unarmed). */
static int rereg_access(struct ibv_mr *mr)
{
	uint32_t l = mr->lkey, r = mr->rkey;

	errno = 0;
	if (ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
			 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ))
		return errno ? errno : EIO;
	if (mr->lkey != l || mr->rkey != r)
		return EBADE;
	if (ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, (char *)mr->addr + 4096,
			 32768, 0))
		return errno ? errno : EIO;
	return mr->lkey == l && mr->rkey == r ? 0 : EBADE;
}

/* Creates the object; NULL with errno on failure. */
static void *create(struct env *e, enum obj o)
{
	switch (o) {
	case O_CTX:
		return ibv_open_device(e->dev);
	case O_UCTX:
		return open_uctx(e);
	case O_PD:
		return ibv_alloc_pd(e->ctx);
	case O_MR:
	case O_REREG:
		return ibv_reg_mr(e->pd, e->buf, e->len, IBV_ACCESS_LOCAL_WRITE |
				  IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE);
	case O_CQ:
		return ibv_create_cq(e->ctx, 16, NULL, NULL, 0);
	case O_QP:
	case O_MODIFY:
		return make_qp(e);
	case O_AH:
		return make_ah(e);
	case O_SRQ:
		return make_srq(e, 0);
	case O_XRCD:
		return make_xrcd(e);
	case O_XSRQ:
		return make_srq(e, 1);
	case O_MW:
		return ibv_alloc_mw(e->pd, IBV_MW_TYPE_2);
	case O_UMEM:
		return mlx5dv_devx_umem_reg(e->ctx, e->buf, e->len, IBV_ACCESS_LOCAL_WRITE);
	case O_DOBJ:
		return make_dobj(e);
	case O_DMKEY: {
		struct mlx5dv_mkey_init_attr a = {
			.pd = e->pd,
			.create_flags = MLX5DV_MKEY_INIT_ATTR_FLAGS_INDIRECT,
			.max_entries = 4,
		};

		return mlx5dv_create_mkey(&a);
	}
	case O_DCI:
		return make_dc(e, 0);
	case O_DCT:
		return make_dc(e, 1);
	case O_RMP:
		return make_rmp(e);
	case O_MCAST:
		return attach_mcast(e);
	case O_CMID:
		return make_cmid(e);
	case O_CMMIG:
		return make_cm_user(1);
	case O_CMEV:
		return make_cm_user(0);
	}
	return NULL;
}

/* Destroys it: 0 or an errno. */
static int destroy(enum obj o, void *p)
{
	switch (o) {
	case O_CTX:
		return ibv_close_device(p);
	case O_UCTX:
		return close(((struct uctx *)p)->fd) ? errno : 0;
	case O_PD:
		return ibv_dealloc_pd(p);
	case O_MR:
	case O_REREG:
		return ibv_dereg_mr(p);
	case O_CQ:
		return ibv_destroy_cq(p);
	case O_QP:
	case O_MODIFY:
	case O_DCI:
	case O_DCT:
		return ibv_destroy_qp(p);
	case O_AH:
		return ibv_destroy_ah(p);
	case O_SRQ:
	case O_XSRQ:
		return ibv_destroy_srq(p);
	case O_XRCD:
		return ibv_close_xrcd(p);
	case O_MW:
		return ibv_dealloc_mw(p);
	case O_UMEM:
		return mlx5dv_devx_umem_dereg(p);
	case O_DOBJ:
		return mlx5dv_devx_obj_destroy(p);
	case O_DMKEY:
		return mlx5dv_destroy_mkey(p);
	case O_RMP:
		return mlx5dv_devx_obj_destroy(p);
	case O_MCAST: {
		union ibv_gid g = mcast_gid(the_env);

		return ibv_detach_mcast(p, &g, the_env->roce ? 0 : 0xc001);
	}
	case O_CMID:
		return destroy_cmid(p);
	case O_CMMIG:
	case O_CMEV: {
		struct cmid *c = p;
		int err = cm_destroy(c->fd, c->id);

		free_cm_user(c);
		return err;
	}
	}
	return EINVAL;
}

int main(int argc, char **argv)
{
	static char base[4096], after[4096], held[4096], maps[8192];
	const struct verbdef *v = NULL;
	struct ibv_device **list;
	struct env e = { 0 };
	long n, max = 100000, step = 1, hit = 0, failed = 0, absorbed = 0, last = 0;
	int opt, i, reached, err, cm;
	char p[512];

	while ((opt = getopt(argc, argv, "d:v:k:f:m:s:g:")) != -1) {
		switch (opt) {
		case 'd': devname = optarg; break;
		case 'v': verb = optarg; break;
		case 'k': kind = strcmp(optarg, "fw") ? SLAB : FW; break;
		case 'f': fwdir = optarg; break;
		case 'm': max = atol(optarg); break;
		case 's': step = atol(optarg) > 0 ? atol(optarg) : 1; break;
		case 'g': sgid_index = atoi(optarg); break;
		default: return 2;
		}
	}
	for (i = 0; verb && i < (int)(sizeof(verbs) / sizeof(verbs[0])); i++)
		if (!strcmp(verbs[i].name, verb))
			v = &verbs[i];
	if (!devname || !v || (kind == FW && !fwdir)) {
		fprintf(stderr, "usage: %s -d DEV -v VERB -k slab|fw [-f FWSIM_DIR] [-m MAX] [-s STEP] [-g INDEX]\n",
			argv[0]);
		return 2;
	}
	if (kind == SLAB) {
		failnth_fd = open("/proc/thread-self/fail-nth", O_RDWR);
		if (failnth_fd < 0) {
			printf("R fail %s slab: open /proc/thread-self/fail-nth: %s\n", verb,
			       strerror(errno));
			return 1;
		}
	} else {
		snprintf(p, sizeof(p), "%s/fail_nth", fwdir);
		fwknob_fd = open(p, O_WRONLY);
		if (fwknob_fd < 0) {
			printf("R fail %s fw: open %s: %s\n", verb, p, strerror(errno));
			return 1;
		}
	}

	list = ibv_get_device_list(NULL);
	for (i = 0; list && list[i]; i++)
		if (!strcmp(ibv_get_device_name(list[i]), devname))
			e.dev = list[i];
	if (!e.dev) {
		printf("R fail %s: device %s not found\n", verb, devname);
		return 1;
	}
	/* The objects the verb needs, created unarmed, kept for the whole sweep. */
	e.len = 65536;
	e.buf = mmap(NULL, e.len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (e.buf == MAP_FAILED)
		return 1;
	memset(e.buf, 0x5a, e.len);
	if (v->obj == O_UMEM || v->obj == O_DOBJ || v->obj == O_DMKEY || v->obj == O_RMP) {
		struct mlx5dv_context_attr da = { .flags = MLX5DV_CONTEXT_FLAGS_DEVX };

		e.ctx = mlx5dv_open_device(e.dev, &da);
	} else {
		e.ctx = ibv_open_device(e.dev);
	}
	e.pd = e.ctx ? ibv_alloc_pd(e.ctx) : NULL;
	e.cq = e.pd ? ibv_create_cq(e.ctx, 16, NULL, NULL, 0) : NULL;
	if (e.cq && v->obj == O_XSRQ && !(e.xrcd = make_xrcd(&e))) {
		printf("R fail %s: setup on %s: ibv_open_xrcd: %s\n", verb, devname, strerror(errno));
		return 1;
	}
	if (e.cq && v->obj == O_RMP &&
	    !(e.umem = mlx5dv_devx_umem_reg(e.ctx, e.buf, 8192, IBV_ACCESS_LOCAL_WRITE))) {
		printf("R fail %s: setup on %s: mlx5dv_devx_umem_reg: %s\n", verb, devname,
		       strerror(errno));
		return 1;
	}
	if (e.cq && v->obj == O_DCT && !(e.srq = make_srq(&e, 0))) {
		printf("R fail %s: setup on %s: ibv_create_srq_ex: %s\n", verb, devname, strerror(errno));
		return 1;
	}
	if (!e.cq || ibv_query_port(e.ctx, 1, &e.port) || ibv_query_gid(e.ctx, 1, sgid_index, &e.gid)) {
		printf("R fail %s: setup on %s: %s\n", verb, devname, strerror(errno));
		return 1;
	}
	e.roce = e.port.link_layer == IBV_LINK_LAYER_ETHERNET;
	the_env = &e;
	if (v->obj == O_CMID &&
	    (e.cmfd = open("/dev/infiniband/rdma_cm", O_RDWR | O_NONBLOCK)) < 0) {
		printf("R fail %s: setup: open /dev/infiniband/rdma_cm: %s\n", verb, strerror(errno));
		return 1;
	}
	if (v->obj == O_MCAST) {
		struct ibv_qp_init_attr a = { .send_cq = e.cq, .recv_cq = e.cq, .qp_type = IBV_QPT_UD,
					      .cap = { .max_send_wr = 4, .max_recv_wr = 4,
						       .max_send_sge = 1, .max_recv_sge = 1 } };

		e.ud = ibv_create_qp(e.pd, &a);
		if (!e.ud) {
			printf("R fail %s: setup on %s: ibv_create_qp (UD): %s\n", verb, devname,
			       strerror(errno));
			return 1;
		}
	}

	/* "cmmig" and "cmev": the object is made unarmed, the command armed. */
	cm = v->obj == O_CMMIG || v->obj == O_CMEV;
	/* One unarmed run first: the verb works, and user-space caches are warm. */
	{
		void *o = create(&e, v->obj);

		if (!o || (v->obj == O_MODIFY && (errno = to_rts(&e, o))) ||
		    (v->obj == O_REREG && (errno = rereg_access(o))) ||
		    (cm && (errno = cm_armed(v->obj, o)))) {
			printf("R fail %s: the verb fails unarmed: %s\n", verb, strerror(errno));
			return 1;
		}
		if (cm)
			cm_check(v->obj, o, 0, 0);
		if ((err = destroy(v->obj, o))) {
			printf("R fail %s: destroy unarmed: %s\n", verb, strerror(err));
			return 1;
		}
	}
	snapshot(base, sizeof(base));
	uverbs_maps(maps, sizeof(maps));

	for (n = 1; hit < max; n += step) {
		void *o = NULL;

		if (v->destroy || v->obj == O_MODIFY || v->obj == O_REREG || cm) {
			o = create(&e, v->obj);
			if (!o) {
				fail("%s: unarmed create fails: errno %d (%s)", "", n, errno);
				break;
			}
			if (v->destroy)
				snapshot(held, sizeof(held));
		}
		if ((err = arm(n))) {
			fail("%s: arming: errno %d (%s)", "", n, err);
			break;
		}
		if (v->destroy) {
			err = destroy(v->obj, o);
		} else if (v->obj == O_MODIFY) {
			err = to_rts(&e, o);
		} else if (v->obj == O_REREG) {
			err = rereg_access(o);
		} else if (cm) {
			err = cm_armed(v->obj, o);
		} else {
			errno = 0;
			o = create(&e, v->obj);
			err = o ? 0 : errno;
		}
		reached = disarm();
		if (cm)
			cm_check(v->obj, o, err, n);
		if (!reached) {
			/* Past the last point: the verb ran without a fault. */
			if (err)
				fail("%s: errno %d (%s) without an injected fault", "", n, err);
			if (!v->destroy && o && (err = destroy(v->obj, o)))
				fail("%s: destroy: errno %d (%s)", "", n, err);
			snapshot(after, sizeof(after));
			same(base, after, n, "after the unarmed run");
			break;
		}
		hit++;
		last = n;
		if (err == 0 && kind == FW && !v->destroy && v->obj != O_CTX &&
		    v->obj != O_REREG) {
			/* A create whose firmware command failed must fail ("rereg": mlx5's
			 * UMR QP is destroyed after the UMR, and a destroy the firmware
			 * refused is made again, so such a point is absorbed). */
			fail("%s: the verb succeeded though a firmware command failed", "", n, 0);
			absorbed++;
		} else if (err == 0) {
			absorbed++;
			printf("I %s %s point %ld absorbed (the verb succeeded)\n", verb,
			       kind == SLAB ? "slab" : "fw", n);
		} else if (v->obj == O_CTX && err != want_errno(n, 0) &&
			   (err == ENOENT || err == EOPNOTSUPP)) {
			/*
			 * libibverbs answers a failed open() by searching /dev
			 * (ENOENT); libmlx5 retries a failed GET_CONTEXT with the
			 * legacy request lengths, which we refuse (EOPNOTSUPP: no
			 * static UARs). The kernel's own errno: verb "uctx".
			 */
			printf("I %s %s point %ld: errno %d after a library fallback\n", verb,
			       kind == SLAB ? "slab" : "fw", n, err);
		} else if (kind == SLAB && sgid_index && err == ENOBUFS &&
			   (v->obj == O_AH || v->obj == O_MODIFY)) {
			/*
			 * An AV from an IP GID is resolved through the route: a failed
			 * route allocation is the IP stack's ENOBUFS (ip_route_output_key()),
			 * which upstream rdma_resolve_ip() passes on as this does.
			 */
			printf("I %s slab point %ld: ENOBUFS from the route lookup\n", verb, n);
		} else if (err != want_errno(n, (v->obj == O_DOBJ || v->obj == O_RMP) &&
						   !v->destroy)) {
			fail("%s: errno %d (%s), want the injected failure's", "", n, err);
			failed++;
		}
		if (v->destroy && err) {
			/* The refused destroy left the object as it was; it goes unarmed. */
			snapshot(after, sizeof(after));
			same(held, after, n, "after a failed destroy");
			if ((err = destroy(v->obj, o)))
				fail("%s: destroy again unarmed: errno %d (%s)", "", n, err);
		} else if (!v->destroy && o) {
			if ((err = destroy(v->obj, o)))
				fail("%s: destroy: errno %d (%s)", "", n, err);
		}
		if (unmap_leftovers(maps))
			printf("I %s %s point %ld: a munmap() inside the verb failed; its mapping "
			       "(which holds its UAR) unmapped afterwards\n", verb,
			       kind == SLAB ? "slab" : "fw", n);
		snapshot(after, sizeof(after));
		if (!same(base, after, n, "after the point"))
			break;
	}
	printf("S %s %s points %ld failed %ld absorbed %ld reached %ld%s\n", verb,
	       kind == SLAB ? "slab" : "fw", hit, failed, absorbed, last,
	       hit >= max ? " (capped)" : "");
	if (failures)
		printf("R fail %s %s sweep: %d failed checks\n", verb, kind == SLAB ? "slab" : "fw",
		       failures);
	else
		printf("R ok %s %s sweep: %ld points, every one unwound\n", verb,
		       kind == SLAB ? "slab" : "fw", hit);
	if (e.xrcd)
		ibv_close_xrcd(e.xrcd);
	if (e.umem)
		mlx5dv_devx_umem_dereg(e.umem);
	ibv_destroy_cq(e.cq);
	ibv_dealloc_pd(e.pd);
	ibv_close_device(e.ctx);
	ibv_free_device_list(list);
	return failures ? 1 : 0;
}
