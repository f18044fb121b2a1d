// SPDX-License-Identifier: GPL-2.0
/*
 * dm_test: device memory (MEMIC) through Debian's libibverbs + libmlx5 on an
 * mlx5 device of rdma-rs (tests/vm/dm.sh, vm_dm). rdma_rxe has no device
 * memory, so the expected values are upstream's code, cited per check:
 *
 *  - max_dm_size from ibv_query_device_ex() (mlx5_ib_query_device():
 *    device_mem_cap.max_memic_size);
 *  - the kernel's errnos through raw ioctls on the context's command fd:
 *    DM_ALLOC of length 0 and an alignment past log_max_memic_addr_alignment
 *    EINVAL (mlx5_cmd_alloc_memic()), more than the memory ENOMEM (no range
 *    of free pages), a SW ICM type EOPNOTSUPP (no sw_owner caps), no
 *    PAGE_INDEX attribute ENOENT (uverbs_copy_to() of an absent attribute);
 *    DM_MR_REG without IB_ZERO_BASED, past the DM's end, remote write
 *    without local write (uverbs_std_types_mr.c, ib_check_mr_access()), an
 *    access flag outside MLX5_IB_DM_MEMIC_ALLOWED_ACCESS (mlx5_ib_reg_dm_mr())
 *    EINVAL; FREE_DM with an MR on it EBUSY (uverbs_free_dm());
 *  - the memory: ibv_memcpy_to_dm()/from_dm() round trips through
 *    libmlx5's mapping of the device's memory, at offsets;
 *  - traffic on an RC pair (one device, two QPs), the DM MR's keys: RDMA
 *    WRITE from host memory into DM (read back with memcpy_from_dm), RDMA
 *    READ of what memcpy_to_dm wrote, a SEND gathered from DM, a receive
 *    scattered into DM, FETCH_ADD and CMP_SWAP on a DM word, a WRITE past the
 *    DM MR (IBV_WC_REM_ACCESS_ERR);
 *  - the memory comes back: the whole memory in 64 KiB pieces, one more is
 *    ENOMEM, after freeing them the whole memory again in one piece; a DM
 *    mapped by hand keeps its memory after DM_FREE until it is unmapped
 *    (mlx5_ib_dm_memic_free() from mlx5_ib_mmap_free()), an mmap of the wrong
 *    size is EINVAL (rdma_user_mmap_io()).
 *
 * -x: exit right after the DM MR is registered, holding the DM, the MR and
 * the mapping (the file's close cleanup and the exit's munmap free them).
 * -H FILE: hold them until FILE exists (tests/vm/dm.sh removes the device
 * meanwhile), then touch the zapped mapping and free what is left.
 *
 * Output, one line each (tests/vm/lib.sh t_import):
 *   R ok|fail <description>       a check
 *   I <key> <value>               informational
 */
#include <errno.h>
#include <infiniband/verbs.h>
#include <rdma/ib_user_ioctl_cmds.h>
#include <rdma/ib_user_ioctl_verbs.h>
#include <rdma/mlx5_user_ioctl_cmds.h>
#include <rdma/mlx5_user_ioctl_verbs.h>
#include <rdma/rdma_user_ioctl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "rdmars_test.h"

static void expect(int got, int want, const char *desc)
{
	if (got == want) {
		printf("R ok %s (errno %d)\n", desc, got);
		passes++;
	} else {
		printf("R fail %s: errno %d (%s), want %d\n", desc, got, strerror(got), want);
		failures++;
	}
}

#define DM_LEN 8192
#define BUF 8192

struct env {
	struct ibv_context *ctx;
	struct ibv_port_attr port;
	union ibv_gid gid;
	int gid_index;
	struct ibv_pd *pd;
};

#define ATTR_IN(id_, v_, l_) \
	((struct ib_uverbs_attr){ .attr_id = (id_), .len = (l_), .flags = UVERBS_ATTR_F_MANDATORY, \
				  .data = (v_) })
#define ATTR_OUT(id_, p_, l_) \
	((struct ib_uverbs_attr){ .attr_id = (id_), .len = (l_), .data = (uintptr_t)(p_) })

static int run_ioctl(struct env *e, uint16_t obj, uint16_t method, struct ib_uverbs_attr *a,
		     int n)
{
	struct {
		struct ib_uverbs_ioctl_hdr hdr;
		struct ib_uverbs_attr attrs[10];
	} r;

	memset(&r, 0, sizeof(r));
	r.hdr.length = sizeof(r.hdr) + n * sizeof(*a);
	r.hdr.object_id = obj;
	r.hdr.method_id = method;
	r.hdr.num_attrs = n;
	r.hdr.driver_id = RDMA_DRIVER_MLX5;
	memcpy(r.attrs, a, n * sizeof(*a));
	if (ioctl(e->ctx->cmd_fd, RDMA_VERBS_IOCTL, &r))
		return errno;
	memcpy(a, r.attrs, n * sizeof(*a));
	return 0;
}

/* UVERBS_METHOD_DM_ALLOC as libmlx5 sends it (type < 0: no REQ_TYPE; no_page: no PAGE_INDEX). */
static uint16_t last_page_index;

static int raw_dm_alloc(struct env *e, uint64_t len, uint32_t align, int type, int no_page,
			uint32_t *handle)
{
	uint64_t start = 0;
	uint16_t page = 0;
	struct ib_uverbs_attr a[6];
	int n = 0, r;

	a[n++] = (struct ib_uverbs_attr){ .attr_id = UVERBS_ATTR_ALLOC_DM_HANDLE,
					  .flags = UVERBS_ATTR_F_MANDATORY };
	a[n++] = ATTR_IN(UVERBS_ATTR_ALLOC_DM_LENGTH, len, 8);
	a[n++] = ATTR_IN(UVERBS_ATTR_ALLOC_DM_ALIGNMENT, align, 4);
	a[n++] = ATTR_OUT(MLX5_IB_ATTR_ALLOC_DM_RESP_START_OFFSET, &start, 8);
	if (!no_page)
		a[n++] = ATTR_OUT(MLX5_IB_ATTR_ALLOC_DM_RESP_PAGE_INDEX, &page, 2);
	if (type >= 0)
		a[n++] = ATTR_IN(MLX5_IB_ATTR_ALLOC_DM_REQ_TYPE, (uint64_t)type, 8);
	r = run_ioctl(e, UVERBS_OBJECT_DM, UVERBS_METHOD_DM_ALLOC, a, n);
	if (!r && handle)
		*handle = a[0].data;
	last_page_index = page;
	return r;
}

static int raw_dm_free(struct env *e, uint32_t handle)
{
	struct ib_uverbs_attr a[1] = { ATTR_IN(UVERBS_ATTR_FREE_DM_HANDLE, handle, 0) };

	return run_ioctl(e, UVERBS_OBJECT_DM, UVERBS_METHOD_DM_FREE, a, 1);
}

/* UVERBS_METHOD_DM_MR_REG; the MR is deregistered again on success. */
static int raw_dm_mr(struct env *e, uint32_t dm_handle, uint64_t off, uint64_t len,
		     uint32_t access)
{
	uint32_t lkey = 0, rkey = 0;
	struct ib_uverbs_attr a[8] = {
		{ .attr_id = UVERBS_ATTR_REG_DM_MR_HANDLE, .flags = UVERBS_ATTR_F_MANDATORY },
		ATTR_IN(UVERBS_ATTR_REG_DM_MR_OFFSET, off, 8),
		ATTR_IN(UVERBS_ATTR_REG_DM_MR_LENGTH, len, 8),
		ATTR_IN(UVERBS_ATTR_REG_DM_MR_PD_HANDLE, e->pd->handle, 0),
		ATTR_IN(UVERBS_ATTR_REG_DM_MR_ACCESS_FLAGS, access, 4),
		ATTR_IN(UVERBS_ATTR_REG_DM_MR_DM_HANDLE, dm_handle, 0),
		ATTR_OUT(UVERBS_ATTR_REG_DM_MR_RESP_LKEY, &lkey, 4),
		ATTR_OUT(UVERBS_ATTR_REG_DM_MR_RESP_RKEY, &rkey, 4),
	};
	int r = run_ioctl(e, UVERBS_OBJECT_MR, UVERBS_METHOD_DM_MR_REG, a, 8);

	if (!r) {
		struct ib_uverbs_attr d[1] = { ATTR_IN(UVERBS_ATTR_DESTROY_MR_HANDLE, a[0].data, 0) };

		run_ioctl(e, UVERBS_OBJECT_MR, UVERBS_METHOD_MR_DESTROY, d, 1);
	}
	return r;
}

static int to_rts(struct env *e, struct ibv_qp *qp, uint32_t dqpn)
{
	return rt_qp_to_rts(qp, dqpn, &e->port, &e->gid, e->gid_index,
			    IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			    IBV_ACCESS_REMOTE_ATOMIC, 0x100);
}

struct pair {
	struct ibv_cq *cq, *rcq;
	struct ibv_qp *req, *resp;
};

static int pair_up(struct env *e, struct pair *p)
{
	struct ibv_qp_init_attr qa = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 16, .max_send_sge = 1, .max_recv_wr = 8,
			 .max_recv_sge = 1 },
	};

	p->cq = ibv_create_cq(e->ctx, 32, NULL, NULL, 0);
	p->rcq = ibv_create_cq(e->ctx, 32, NULL, NULL, 0);
	if (!p->cq || !p->rcq)
		return -1;
	qa.send_cq = qa.recv_cq = p->cq;
	p->req = ibv_create_qp(e->pd, &qa);
	qa.send_cq = qa.recv_cq = p->rcq;
	p->resp = ibv_create_qp(e->pd, &qa);
	if (!p->req || !p->resp)
		return -1;
	if (to_rts(e, p->req, p->resp->qp_num) || to_rts(e, p->resp, p->req->qp_num))
		return -1;
	return 0;
}

static void pair_down(struct pair *p)
{
	if (p->req)
		ibv_destroy_qp(p->req);
	if (p->resp)
		ibv_destroy_qp(p->resp);
	if (p->cq)
		ibv_destroy_cq(p->cq);
	if (p->rcq)
		ibv_destroy_cq(p->rcq);
	memset(p, 0, sizeof(*p));
}

/* One completion of cq within 20 s: its status, or -1. */
static int wait_wc(struct ibv_cq *cq, struct ibv_wc *wc)
{
	return rt_poll(cq, wc, 20) == 1 ? (int)wc->status : -1;
}

/* One work request on the requester (RDMA or atomic); the completion status or -1. */
static int post(struct pair *p, struct ibv_send_wr *wr)
{
	struct ibv_send_wr *bad;
	struct ibv_wc wc;

	wr->wr_id = 7;
	wr->send_flags |= IBV_SEND_SIGNALED;
	if (ibv_post_send(p->req, wr, &bad))
		return -1;
	return wait_wc(p->cq, &wc);
}

static int rdma(struct pair *p, enum ibv_wr_opcode op, uint64_t laddr, uint32_t len,
		uint32_t lkey, uint64_t raddr, uint32_t rkey)
{
	struct ibv_sge sg = { .addr = laddr, .length = len, .lkey = lkey };
	struct ibv_send_wr wr = { .sg_list = &sg, .num_sge = 1, .opcode = op };

	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	return post(p, &wr);
}

static int atomic(struct pair *p, enum ibv_wr_opcode op, uint64_t *res, uint32_t lkey,
		  uint64_t raddr, uint32_t rkey, uint64_t add_or_cmp, uint64_t swap)
{
	struct ibv_sge sg = { .addr = (uintptr_t)res, .length = 8, .lkey = lkey };
	struct ibv_send_wr wr = { .sg_list = &sg, .num_sge = 1, .opcode = op };

	wr.wr.atomic.remote_addr = raddr;
	wr.wr.atomic.rkey = rkey;
	wr.wr.atomic.compare_add = add_or_cmp;
	wr.wr.atomic.swap = swap;
	return post(p, &wr);
}

/* A receive on the responder, then a SEND from the requester; the receive's status. */
static int send_recv(struct pair *p, uint64_t saddr, uint32_t slkey, uint64_t raddr,
		     uint32_t rlkey, uint32_t len, uint32_t *byte_len)
{
	struct ibv_sge rs = { .addr = raddr, .length = len, .lkey = rlkey };
	struct ibv_recv_wr rwr = { .wr_id = 3, .sg_list = &rs, .num_sge = 1 }, *rbad;
	struct ibv_sge sg = { .addr = saddr, .length = len, .lkey = slkey };
	struct ibv_send_wr wr = { .sg_list = &sg, .num_sge = 1, .opcode = IBV_WR_SEND };
	struct ibv_wc wc;
	int r;

	if (ibv_post_recv(p->resp, &rwr, &rbad))
		return -1;
	r = post(p, &wr);
	if (r != IBV_WC_SUCCESS)
		return r;
	r = wait_wc(p->rcq, &wc);
	*byte_len = wc.byte_len;
	return r;
}

static void fill(uint8_t *b, uint8_t seed, int len)
{
	for (int i = 0; i < len; i++)
		b[i] = (uint8_t)(seed + i * 7);
}

static int filled(const uint8_t *b, uint8_t seed, int len)
{
	for (int i = 0; i < len; i++)
		if (b[i] != (uint8_t)(seed + i * 7))
			return 0;
	return 1;
}

static uint8_t *page_buf(void)
{
	uint8_t *b = aligned_alloc(4096, BUF);

	if (b)
		memset(b, 0, BUF);
	return b;
}

#define LW IBV_ACCESS_LOCAL_WRITE
#define ZB IBV_ACCESS_ZERO_BASED
#define DMACC (ZB | LW | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | \
	       IBV_ACCESS_REMOTE_ATOMIC)

int main(int argc, char **argv)
{
	const char *dev_name = NULL;
	struct env e = { .gid_index = -1 };
	struct ibv_device_attr_ex dx;
	struct ibv_alloc_dm_attr da = { .length = DM_LEN };
	struct ibv_dm *dm, *big, *pieces[64];
	struct ibv_mr *dmr, *src, *dst, *bad_mr;
	struct pair p = { 0 };
	uint8_t *bs, *bd, host[DM_LEN], back[DM_LEN];
	uint32_t h, hs[64], blen;
	uint64_t max, word, res;
	int opt, i, r, np, leave = 0;
	const char *hold = NULL;

	while ((opt = getopt(argc, argv, "d:g:xH:")) != -1) {
		switch (opt) {
		case 'd': dev_name = optarg; break;
		case 'g': e.gid_index = atoi(optarg); break;
		case 'x': leave = 1; break;
		case 'H': hold = optarg; break;
		default: fprintf(stderr, "usage: %s -d DEV [-g GIDX] [-x | -H FILE]\n", argv[0]);
			return 2;
		}
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (rt_open(dev_name, &e.ctx, &e.port, &e.gid, &e.gid_index))
		return 1;
	memset(&dx, 0, sizeof(dx));
	check(ibv_query_device_ex(e.ctx, NULL, &dx) == 0, "ibv_query_device_ex");
	max = dx.max_dm_size;
	printf("I max_dm_size %llu\n", (unsigned long long)max);
	check(max >= 64 * 1024, "max_dm_size %llu >= 64 KiB (device_mem_cap.max_memic_size)",
	      (unsigned long long)max);
	e.pd = ibv_alloc_pd(e.ctx);
	bs = page_buf();
	bd = page_buf();
	check(e.pd && bs && bd, "a PD, buffers");
	if (!e.pd || !bs || !bd || max < 64 * 1024)
		return 1;

	/* DM_ALLOC errors, the kernel's (raw ioctls). */
	expect(raw_dm_alloc(&e, 0, 0, -1, 0, NULL), EINVAL,
	       "DM_ALLOC of length 0: EINVAL (mlx5_cmd_alloc_memic)");
	expect(raw_dm_alloc(&e, max + 64, 0, -1, 0, NULL), ENOMEM,
	       "DM_ALLOC past the device's memory: ENOMEM (no range of free pages)");
	expect(raw_dm_alloc(&e, 64, 13, -1, 0, NULL), EINVAL,
	       "DM_ALLOC aligned to 2^13: EINVAL (past log_max_memic_addr_alignment)");
	expect(raw_dm_alloc(&e, 64, 0, MLX5_IB_UAPI_DM_TYPE_STEERING_SW_ICM, 0, NULL), EOPNOTSUPP,
	       "DM_ALLOC of type STEERING_SW_ICM: EOPNOTSUPP");
	expect(raw_dm_alloc(&e, 64, 0, 7, 0, NULL), EOPNOTSUPP,
	       "DM_ALLOC of an unknown type: EOPNOTSUPP");
	expect(raw_dm_alloc(&e, 64, 0, -1, 1, NULL), ENOENT,
	       "DM_ALLOC without the PAGE_INDEX attribute: ENOENT (uverbs_copy_to)");
	expect(raw_dm_alloc(&e, 100, 6, MLX5_IB_UAPI_DM_TYPE_MEMIC, 0, &h), 0,
	       "DM_ALLOC of 100 bytes, type MEMIC, 64-byte aligned");
	expect(raw_dm_free(&e, h), 0, "DM_FREE");
	expect(raw_dm_free(&e, h), ENOENT, "DM_FREE of a freed handle: ENOENT");
	/* libmlx5's own check (alloc_dm_memic()): past max_dm_size is EINVAL. */
	da.length = max + 1;
	errno = 0;
	big = ibv_alloc_dm(e.ctx, &da);
	expect(big ? 0 : errno, EINVAL, "ibv_alloc_dm past max_dm_size: EINVAL (libmlx5)");
	if (big)
		ibv_free_dm(big);

	/* The memory, through libmlx5's mapping of it. */
	da.length = DM_LEN;
	dm = ibv_alloc_dm(e.ctx, &da);
	check(dm != NULL, "ibv_alloc_dm(%d)", DM_LEN);
	if (!dm)
		return 1;
	fill(host, 3, DM_LEN);
	check(ibv_memcpy_to_dm(dm, 0, host, DM_LEN) == 0, "ibv_memcpy_to_dm of the whole DM");
	memset(back, 0, sizeof(back));
	check(ibv_memcpy_from_dm(back, dm, 0, DM_LEN) == 0 && !memcmp(back, host, DM_LEN),
	      "ibv_memcpy_from_dm gives the bytes back");
	fill(host, 99, 256);
	check(ibv_memcpy_to_dm(dm, 4100, host, 256) == 0, "ibv_memcpy_to_dm at offset 4100");
	memset(back, 0, 300);
	check(ibv_memcpy_from_dm(back, dm, 4096, 300) == 0 && filled(back + 4, 99, 256) &&
		      filled(back, (uint8_t)(3 + 4096 * 7 % 256), 4),
	      "ibv_memcpy_from_dm around it: the new bytes and the old ones before");
	expect(ibv_memcpy_to_dm(dm, DM_LEN - 4, host, 8), EFAULT,
	       "ibv_memcpy_to_dm past the end: EFAULT (libmlx5)");

	/* DM MRs. */
	dmr = ibv_reg_dm_mr(e.pd, dm, 0, DM_LEN, DMACC);
	check(dmr != NULL, "ibv_reg_dm_mr of the whole DM, zero-based, remote access");
	if (!dmr)
		return 1;
	printf("I dm_mr lkey 0x%x rkey 0x%x\n", dmr->lkey, dmr->rkey);
	if (hold) {
		/*
		 * -H FILE: hold the DM, its MR and the mapping until FILE exists (the device is
		 * removed meanwhile: the mapping is zapped, the objects destroyed); then the
		 * mapping must not fault and the verbs fail without a crash.
		 */
		printf("READY\n");
		while (access(hold, F_OK))
			usleep(100000);
		memset(back, 0xff, 64);
		check(ibv_memcpy_from_dm(back, dm, 0, 64) == 0,
		      "ibv_memcpy_from_dm after the remove: the zapped mapping does not fault");
		printf("I dereg_dm_mr_after_remove %d\n", ibv_dereg_mr(dmr));
		printf("I free_dm_after_remove %d\n", ibv_free_dm(dm));
		ibv_dealloc_pd(e.pd);
		check(ibv_close_device(e.ctx) == 0, "ibv_close_device after the remove");
		printf("dm_test: %d checks passed, %d failed\n", passes, failures);
		return failures ? 1 : 0;
	}
	if (leave) {
		/* -x: exit holding the DM, its MR and libmlx5's mapping (the close cleanup's). */
		printf("dm_test: %d checks passed, %d failed\n", passes, failures);
		_exit(failures ? 1 : 0);
	}
	errno = 0;
	bad_mr = ibv_reg_dm_mr(e.pd, dm, 4096, DM_LEN, DMACC);
	expect(bad_mr ? 0 : errno, EINVAL, "ibv_reg_dm_mr past the DM's end: EINVAL");
	if (bad_mr)
		ibv_dereg_mr(bad_mr);
	expect(raw_dm_mr(&e, dm->handle, 0, 64, LW), EINVAL,
	       "DM_MR_REG without IB_ZERO_BASED: EINVAL");
	expect(raw_dm_mr(&e, dm->handle, DM_LEN, 1, ZB | LW), EINVAL,
	       "DM_MR_REG of the byte after the DM: EINVAL");
	expect(raw_dm_mr(&e, dm->handle, 64, (uint64_t)-32, ZB | LW), EINVAL,
	       "DM_MR_REG whose length wraps: EINVAL");
	expect(raw_dm_mr(&e, dm->handle, 0, 64, ZB | IBV_ACCESS_REMOTE_WRITE), EINVAL,
	       "DM_MR_REG remote write without local write: EINVAL (ib_check_mr_access)");
	expect(raw_dm_mr(&e, dm->handle, 0, 64, ZB | LW | IBV_ACCESS_MW_BIND), EINVAL,
	       "DM_MR_REG with MW_BIND: EINVAL (MLX5_IB_DM_MEMIC_ALLOWED_ACCESS)");
	expect(raw_dm_mr(&e, dm->handle, 0, 64, ZB | LW | (1u << 30)), EINVAL,
	       "DM_MR_REG with an unknown access bit: EINVAL");
	expect(raw_dm_mr(&e, dm->handle, 4096, 4096, ZB | LW), 0,
	       "DM_MR_REG of the second page (and its MR_DESTROY)");
	expect(raw_dm_mr(&e, 0xdead, 0, 64, ZB | LW), ENOENT,
	       "DM_MR_REG of an unknown DM handle: ENOENT");
	expect(ibv_free_dm(dm), EBUSY, "ibv_free_dm with an MR on it: EBUSY (uverbs_free_dm)");
	expect(ibv_dealloc_pd(e.pd), EBUSY, "ibv_dealloc_pd with a DM MR on it: EBUSY");

	/* Traffic from and to the DM. */
	src = ibv_reg_mr(e.pd, bs, BUF, LW);
	dst = ibv_reg_mr(e.pd, bd, BUF, LW);
	check(src && dst, "two host MRs");
	r = pair_up(&e, &p);
	check(r == 0, "an RC pair in RTS");
	if (r || !src || !dst)
		return 1;

	fill(bs, 11, 1024);
	r = rdma(&p, IBV_WR_RDMA_WRITE, (uintptr_t)bs, 1024, src->lkey, 512, dmr->rkey);
	expect(r, IBV_WC_SUCCESS, "RDMA WRITE of 1 KiB from host memory into the DM MR at 512");
	memset(back, 0, 1024);
	check(ibv_memcpy_from_dm(back, dm, 512, 1024) == 0 && filled(back, 11, 1024),
	      "ibv_memcpy_from_dm sees the bytes the device wrote");

	fill(host, 22, 1024);
	check(ibv_memcpy_to_dm(dm, 2048, host, 1024) == 0, "ibv_memcpy_to_dm at 2048");
	memset(bd, 0, BUF);
	r = rdma(&p, IBV_WR_RDMA_READ, (uintptr_t)bd, 1024, dst->lkey, 2048, dmr->rkey);
	expect(r, IBV_WC_SUCCESS, "RDMA READ of 1 KiB from the DM MR at 2048 into host memory");
	check(filled(bd, 22, 1024), "the READ brought the bytes memcpy_to_dm wrote");

	memset(bd, 0, BUF);
	blen = 0;
	r = send_recv(&p, 2048, dmr->lkey, (uintptr_t)bd, dst->lkey, 1024, &blen);
	expect(r, IBV_WC_SUCCESS, "a SEND gathered from the DM (the DM MR's lkey)");
	check(blen == 1024 && filled(bd, 22, 1024), "the receive got the DM's bytes");

	fill(bs, 33, 512);
	r = send_recv(&p, (uintptr_t)bs, src->lkey, 6000, dmr->lkey, 512, &blen);
	expect(r, IBV_WC_SUCCESS, "a receive scattered into the DM at 6000");
	memset(back, 0, 512);
	check(ibv_memcpy_from_dm(back, dm, 6000, 512) == 0 && filled(back, 33, 512),
	      "the DM holds the SEND's bytes");

	word = 100;
	check(ibv_memcpy_to_dm(dm, 7168, &word, 8) == 0, "a DM word of 100 at 7168");
	/* The original value lands in host memory (the dst MR). */
	memset(bd, 0, 8);
	r = atomic(&p, IBV_WR_ATOMIC_FETCH_AND_ADD, (uint64_t *)bd, dst->lkey, 7168, dmr->rkey, 5,
		   0);
	expect(r, IBV_WC_SUCCESS, "FETCH_ADD 5 on the DM word");
	memcpy(&res, bd, 8);
	word = 0;
	ibv_memcpy_from_dm(&word, dm, 7168, 8);
	check(res == 100 && word == 105, "FETCH_ADD returned %llu, the DM word is %llu",
	      (unsigned long long)res, (unsigned long long)word);
	memset(bd, 0, 8);
	r = atomic(&p, IBV_WR_ATOMIC_CMP_AND_SWP, (uint64_t *)bd, dst->lkey, 7168, dmr->rkey, 105,
		   7);
	expect(r, IBV_WC_SUCCESS, "CMP_SWAP 105 -> 7 on the DM word");
	memcpy(&res, bd, 8);
	word = 0;
	ibv_memcpy_from_dm(&word, dm, 7168, 8);
	check(res == 105 && word == 7, "CMP_SWAP returned %llu, the DM word is %llu",
	      (unsigned long long)res, (unsigned long long)word);

	/* Last on the pair: an error moves the QPs to ERR. */
	r = rdma(&p, IBV_WR_RDMA_WRITE, (uintptr_t)bs, 16, src->lkey, DM_LEN - 8, dmr->rkey);
	expect(r, IBV_WC_REM_ACCESS_ERR, "RDMA WRITE past the DM MR's end: REM_ACCESS_ERR");
	pair_down(&p);
	check(ibv_dereg_mr(src) == 0 && ibv_dereg_mr(dst) == 0, "host MRs deregistered");
	check(ibv_dereg_mr(dmr) == 0, "the DM MR deregistered");
	expect(ibv_free_dm(dm), 0, "ibv_free_dm once its MR is gone");

	/* The memory comes back: all of it in 64 KiB pieces, one more is ENOMEM. */
	np = (int)(max / (64 * 1024));
	if (np > 64)
		np = 64;
	for (i = 0, r = 0; i < np && !r; i++)
		r = raw_dm_alloc(&e, 64 * 1024, 0, -1, 0, &hs[i]);
	expect(r, 0, "the whole memory in 64 KiB pieces");
	expect(raw_dm_alloc(&e, 64, 0, -1, 0, NULL), ENOMEM, "one more DM_ALLOC: ENOMEM");
	while (i-- > 0)
		r |= raw_dm_free(&e, hs[i]);
	expect(r, 0, "the pieces freed");
	da.length = max;
	big = ibv_alloc_dm(e.ctx, &da);
	check(big != NULL, "ibv_alloc_dm of the whole memory after that");
	if (big) {
		fill(host, 44, 64);
		check(ibv_memcpy_to_dm(big, max - 64, host, 64) == 0 &&
			      ibv_memcpy_from_dm(back, big, max - 64, 64) == 0 && filled(back, 44, 64),
		      "its last 64 bytes round trip");
		expect(ibv_free_dm(big), 0, "ibv_free_dm of it");
	}
	for (i = 0; i < 8; i++) {
		da.length = 4096 * (i + 1);
		pieces[i] = ibv_alloc_dm(e.ctx, &da);
		if (!pieces[i])
			break;
	}
	check(i == 8, "eight DMs of 4..32 KiB at once");
	while (i-- > 0)
		if (ibv_free_dm(pieces[i]))
			failures++;

	/*
	 * A DM mapped by hand (libmlx5's dm_mmap() offset: MLX5_IB_MMAP_DEVICE_MEM and the page
	 * index) outlives its free: upstream gives the memory back at the last unmap
	 * (mlx5_ib_dm_memic_free() from mlx5_ib_mmap_free()).
	 */
	r = raw_dm_alloc(&e, 64 * 1024, 0, -1, 0, &h);
	expect(r, 0, "DM_ALLOC of 64 KiB for a mapping by hand");
	if (!r) {
		long ps = sysconf(_SC_PAGESIZE);
		off_t off = ((off_t)8 << 8 | (last_page_index & 0xff) |
			     ((off_t)(last_page_index >> 8) << 16)) * ps;
		volatile uint32_t *va;
		uint32_t h2;

		va = mmap(NULL, 2 * 64 * 1024, PROT_READ | PROT_WRITE, MAP_SHARED, e.ctx->cmd_fd, off);
		expect(va == MAP_FAILED ? errno : 0, EINVAL, "mmap of twice the DM's size: EINVAL");
		if (va != MAP_FAILED)
			munmap((void *)va, 2 * 64 * 1024);
		va = mmap(NULL, 64 * 1024, PROT_READ | PROT_WRITE, MAP_SHARED, e.ctx->cmd_fd, off);
		check(va != MAP_FAILED, "mmap of the DM by its page index");
		if (va != MAP_FAILED) {
			va[100] = 0x12345678;
			expect(raw_dm_free(&e, h), 0, "DM_FREE while it is mapped");
			check(va[100] == 0x12345678, "the mapping still reaches the memory after the free");
			expect(raw_dm_alloc(&e, max, 0, -1, 0, &h2), ENOMEM,
			       "the whole memory while the freed DM is mapped: ENOMEM");
			munmap((void *)va, 64 * 1024);
			r = raw_dm_alloc(&e, max, 0, -1, 0, &h2);
			expect(r, 0, "the whole memory once the mapping is gone");
			if (!r)
				raw_dm_free(&e, h2);
		}
	}
	check(ibv_dealloc_pd(e.pd) == 0, "ibv_dealloc_pd");
	check(ibv_close_device(e.ctx) == 0, "ibv_close_device");
	free(bs);
	free(bd);
	printf("dm_test: %d checks passed, %d failed\n", passes, failures);
	return failures ? 1 : 0;
}
