// SPDX-License-Identifier: GPL-2.0
/*
 * mw_test: memory windows (ALLOC_MW / DEALLOC_MW, binds, invalidation) for
 * rdma-rs and the upstream peer (rdma_rxe), compared line by line by
 * tests/vm/breadth.sh (vm_mw).
 *
 * The errno cases go through the raw write() commands on the context's
 * command fd, in upstream ib_uverbs_alloc_mw()'s order: an unknown PD handle
 * ENOENT, a type other than 1 or 2 EINVAL; DEALLOC_MW of an unknown handle
 * ENOENT; DEALLOC_PD of a PD with a window EBUSY.
 *
 * The data path, through libibverbs and the provider (libmlx5 for mlx5), on
 * an RC pair: a requester QP and a responder QP, one CQ:
 *  - type 1: ibv_bind_mw() (posted on the responder QP) over part of an MR;
 *    RDMA WRITE and READ through the window's rkey inside its range (bytes
 *    checked), a WRITE past its end and a WRITE into a read-only window
 *    (IBV_WC_REM_ACCESS_ERR), a rebind changes the rkey (the old one then
 *    fails);
 *  - type 2: IBV_WR_BIND_MW by ibv_post_send() on the responder QP, WRITE
 *    through it, IBV_WR_LOCAL_INV, then the rkey fails; bound again, a SEND
 *    with invalidate from the requester frees it (the receive completion has
 *    IBV_WC_WITH_INV and the rkey), then the rkey fails;
 *  - bind errors (IBV_WC_MW_BIND_ERR): a window with remote write over an MR
 *    without local write, a range past the MR's end;
 *  - I lines, where rxe and mlx5 differ (tests/vm/breadth.sh checks mlx5's
 *    values): a READ across a window's end inside its MR, the status of a
 *    failing bind (a second type 2 bind, a writable window over an MR without
 *    local write, a window past the MR: MW_BIND_ERR on mlx5, a flush on rxe),
 *    IBV_WC_WITH_INV, a bind over an MR without IBV_ACCESS_MW_BIND (rxe
 *    checks it, an mlx5 mkey has no such right), deregistering an MR a window
 *    is bound to (rxe: EINVAL; mlx5 leaves it to the device, whose window
 *    then fails).
 *
 * Output, one line each (tests/vm/lib.sh t_import):
 *   R ok|fail <description>       a check
 *   C <case> <value>              a fact compared with the other stack
 *   I <key> <value>               informational (device-specific)
 */
#include <errno.h>
#include <infiniband/verbs.h>
#include <rdma/ib_user_verbs.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rdmars_test.h"

#define BUF 8192

struct env {
	struct ibv_context *ctx;
	struct ibv_port_attr port;
	union ibv_gid gid;
	int gid_index;
	struct ibv_pd *pd;
};

/* The raw ALLOC_MW write command: 0 or the errno. */
static int raw_alloc_mw(struct env *e, uint32_t pd_handle, uint8_t type, uint32_t *handle)
{
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_alloc_mw cmd;
	} req;
	struct ib_uverbs_alloc_mw_resp resp;

	memset(&req, 0, sizeof(req));
	memset(&resp, 0, sizeof(resp));
	req.hdr.command = IB_USER_VERBS_CMD_ALLOC_MW;
	req.hdr.in_words = sizeof(req) / 4;
	req.hdr.out_words = sizeof(resp) / 4;
	req.cmd.response = (uintptr_t)&resp;
	req.cmd.pd_handle = pd_handle;
	req.cmd.mw_type = type;
	if (write(e->ctx->cmd_fd, &req, sizeof(req)) != (ssize_t)sizeof(req))
		return errno;
	if (handle)
		*handle = resp.mw_handle;
	return 0;
}

static int raw_dealloc_mw(struct env *e, uint32_t handle)
{
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_dealloc_mw cmd;
	} req;

	memset(&req, 0, sizeof(req));
	req.hdr.command = IB_USER_VERBS_CMD_DEALLOC_MW;
	req.hdr.in_words = sizeof(req) / 4;
	req.cmd.mw_handle = handle;
	if (write(e->ctx->cmd_fd, &req, sizeof(req)) != (ssize_t)sizeof(req))
		return errno;
	return 0;
}

static int to_rts(struct env *e, struct ibv_qp *qp, uint32_t dqpn)
{
	return rt_qp_to_rts(qp, dqpn, &e->port, &e->gid, e->gid_index,
			    IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ, 0x100);
}

/* A requester QP connected to a responder QP, both on the env's PD; a CQ each. */
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

/* One completion of cq within 10 s: its status, or -1. */
static int wait_wc(struct ibv_cq *cq, struct ibv_wc *wc)
{
	return rt_poll(cq, wc, 10) == 1 ? (int)wc->status : -1;
}

/* One RDMA WRITE or READ on the requester; the completion status or -1. */
static int rdma(struct pair *p, enum ibv_wr_opcode op, void *laddr, uint32_t len, uint32_t lkey,
		void *raddr, uint32_t rkey)
{
	struct ibv_sge sg = { .addr = (uintptr_t)laddr, .length = len, .lkey = lkey };
	struct ibv_send_wr wr = { .wr_id = 7, .sg_list = &sg, .num_sge = 1, .opcode = op,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct ibv_wc wc;

	wr.wr.rdma.remote_addr = (uintptr_t)raddr;
	wr.wr.rdma.rkey = rkey;
	if (ibv_post_send(p->req, &wr, &bad))
		return -1;
	return wait_wc(p->cq, &wc);
}

/* Type 1: ibv_bind_mw() on the responder QP; the completion status (opcode checked). */
static int bind1(struct pair *p, struct ibv_mw *mw, struct ibv_mr *mr, void *addr, size_t len,
		 unsigned int access)
{
	struct ibv_mw_bind b = { .wr_id = 9, .send_flags = IBV_SEND_SIGNALED };
	struct ibv_wc wc;
	int r;

	b.bind_info.mr = mr;
	b.bind_info.addr = (uintptr_t)addr;
	b.bind_info.length = len;
	b.bind_info.mw_access_flags = access;
	uint32_t old = mw->rkey;

	if (ibv_bind_mw(p->resp, mw, &b))
		return -1;
	r = wait_wc(p->rcq, &wc);
	if (r == IBV_WC_SUCCESS && wc.opcode != IBV_WC_BIND_MW)
		return -2;
	/* The provider took the new rkey when it posted: a failed bind keeps the old one. */
	if (r != IBV_WC_SUCCESS)
		mw->rkey = old;
	return r;
}

/* Type 2: IBV_WR_BIND_MW on the responder QP with rkey *rkey + 1; the status. */
static int bind2(struct pair *p, struct ibv_mw *mw, uint32_t *rkey, struct ibv_mr *mr,
		 void *addr, size_t len, unsigned int access)
{
	struct ibv_send_wr wr = { .wr_id = 10, .opcode = IBV_WR_BIND_MW,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct ibv_wc wc;
	int r;

	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = ibv_inc_rkey(*rkey);
	wr.bind_mw.bind_info.mr = mr;
	wr.bind_mw.bind_info.addr = (uintptr_t)addr;
	wr.bind_mw.bind_info.length = len;
	wr.bind_mw.bind_info.mw_access_flags = access;
	if (ibv_post_send(p->resp, &wr, &bad))
		return -1;
	r = wait_wc(p->rcq, &wc);
	if (r == IBV_WC_SUCCESS) {
		if (wc.opcode != IBV_WC_BIND_MW)
			return -2;
		*rkey = wr.bind_mw.rkey;
		mw->rkey = *rkey;
	}
	return r;
}

static int local_inv(struct pair *p, uint32_t rkey)
{
	struct ibv_send_wr wr = { .wr_id = 11, .opcode = IBV_WR_LOCAL_INV,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct ibv_wc wc;
	int r;

	wr.invalidate_rkey = rkey;
	if (ibv_post_send(p->resp, &wr, &bad))
		return -1;
	r = wait_wc(p->rcq, &wc);
	if (r == IBV_WC_SUCCESS && wc.opcode != IBV_WC_LOCAL_INV)
		return -2;
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
#define RRW (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)
#define MRACC (LW | RRW | IBV_ACCESS_MW_BIND)

int main(int argc, char **argv)
{
	const char *dev_name = NULL;
	struct env e = { .gid_index = -1 };
	struct ibv_device_attr da;
	struct ibv_mr *src, *mr, *nolw, *nobind;
	struct ibv_mw *mw1, *mw2;
	struct pair p = { 0 };
	uint8_t *bs, *bm, *bn, *bo;
	uint32_t h, rkey, old;
	int opt, r;

	while ((opt = getopt(argc, argv, "d:g:")) != -1) {
		switch (opt) {
		case 'd': dev_name = optarg; break;
		case 'g': e.gid_index = atoi(optarg); break;
		default: fprintf(stderr, "usage: %s -d DEV [-g GIDX]\n", argv[0]);
			return 2;
		}
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (rt_open(dev_name, &e.ctx, &e.port, &e.gid, &e.gid_index))
		return 1;
	if (ibv_query_device(e.ctx, &da))
		return 1;
	printf("C cap_mem_window %d\n", !!(da.device_cap_flags & IBV_DEVICE_MEM_WINDOW));
	check(da.device_cap_flags & IBV_DEVICE_MEM_WINDOW, "IBV_DEVICE_MEM_WINDOW");
	printf("I max_mw %d\n", da.max_mw);
	printf("I cap_type_2a %d\n", !!(da.device_cap_flags & IBV_DEVICE_MEM_WINDOW_TYPE_2A));
	printf("I cap_type_2b %d\n", !!(da.device_cap_flags & IBV_DEVICE_MEM_WINDOW_TYPE_2B));
	check(da.max_mw > 0, "max_mw > 0");
	e.pd = ibv_alloc_pd(e.ctx);
	bs = page_buf();
	bm = page_buf();
	bn = page_buf();
	bo = page_buf();
	check(e.pd && bs && bm && bn && bo, "a PD, buffers");
	if (!e.pd || !bs || !bm || !bn || !bo)
		return 1;
	src = ibv_reg_mr(e.pd, bs, BUF, LW);
	mr = ibv_reg_mr(e.pd, bm, BUF, MRACC);
	nolw = ibv_reg_mr(e.pd, bn, BUF, IBV_ACCESS_REMOTE_READ | IBV_ACCESS_MW_BIND);
	nobind = ibv_reg_mr(e.pd, bo, BUF, LW | RRW);
	check(src && mr && nolw && nobind, "four MRs");
	if (!src || !mr || !nolw || !nobind)
		return 1;

	/* The command checks, in upstream's order. */
	r = raw_alloc_mw(&e, 9999, IBV_MW_TYPE_1, NULL);
	printf("C alloc_unknown_pd %d\n", r);
	check(r == ENOENT, "ALLOC_MW of an unknown PD: ENOENT (the handle lookup's)");
	r = raw_alloc_mw(&e, e.pd->handle, 0, NULL);
	printf("C alloc_type_0 %d\n", r);
	check(r == EINVAL, "ALLOC_MW type 0: EINVAL");
	r = raw_alloc_mw(&e, e.pd->handle, 3, NULL);
	printf("C alloc_type_3 %d\n", r);
	check(r == EINVAL, "ALLOC_MW type 3: EINVAL");
	r = raw_alloc_mw(&e, e.pd->handle, IBV_MW_TYPE_2, &h);
	printf("C alloc_raw %d\n", r);
	check(r == 0, "ALLOC_MW type 2 by the write command");
	r = ibv_dealloc_pd(e.pd);
	printf("C dealloc_pd_with_mw %d\n", r);
	check(r == EBUSY, "DEALLOC_PD while a window uses it: EBUSY");
	r = raw_dealloc_mw(&e, h);
	printf("C dealloc_raw %d\n", r);
	check(r == 0, "DEALLOC_MW");
	r = raw_dealloc_mw(&e, h);
	printf("C dealloc_again %d\n", r);
	check(r == ENOENT, "DEALLOC_MW of a freed handle: ENOENT");

	mw1 = ibv_alloc_mw(e.pd, IBV_MW_TYPE_1);
	mw2 = ibv_alloc_mw(e.pd, IBV_MW_TYPE_2);
	check(mw1 && mw2, "ibv_alloc_mw type 1 and type 2");
	if (!mw1 || !mw2)
		return 1;
	printf("C mw_types %d %d\n", mw1->type, mw2->type);

	/* Type 1. */
	check(pair_up(&e, &p) == 0, "an RC pair");
	r = bind1(&p, mw1, mr, bm + 1024, 2048, RRW);
	printf("C t1_bind %d\n", r);
	check(r == IBV_WC_SUCCESS, "type 1: ibv_bind_mw over [1024, 3072) of the MR");
	fill(bs, 0x21, 512);
	r = rdma(&p, IBV_WR_RDMA_WRITE, bs, 512, src->lkey, bm + 1024 + 100, mw1->rkey);
	printf("C t1_write %d\n", r);
	check(r == IBV_WC_SUCCESS && filled(bm + 1124, 0x21, 512) && bm[1123] == 0,
	      "RDMA WRITE through the window: the bytes land, nothing before");
	memset(bs, 0, BUF);
	r = rdma(&p, IBV_WR_RDMA_READ, bs + 4096, 512, src->lkey, bm + 1124, mw1->rkey);
	printf("C t1_read %d\n", r);
	check(r == IBV_WC_SUCCESS && filled(bs + 4096, 0x21, 512), "RDMA READ through the window");
	old = mw1->rkey;
	r = bind1(&p, mw1, mr, bm, 1024, IBV_ACCESS_REMOTE_READ);
	printf("C t1_rebind %d %d\n", r, mw1->rkey != old);
	check(r == IBV_WC_SUCCESS && mw1->rkey != old, "type 1 rebind to [0, 1024) read only: a new rkey");
	r = rdma(&p, IBV_WR_RDMA_READ, bs, 64, src->lkey, bm, mw1->rkey);
	printf("C t1_read_rebound %d\n", r);
	check(r == IBV_WC_SUCCESS, "RDMA READ through the rebound window");
	r = rdma(&p, IBV_WR_RDMA_WRITE, bs, 64, src->lkey, bm, mw1->rkey);
	printf("C t1_write_read_only %d\n", r);
	check(r == IBV_WC_REM_ACCESS_ERR, "RDMA WRITE into a read-only window: remote access error");
	pair_down(&p);
	check(pair_up(&e, &p) == 0, "an RC pair");
	r = rdma(&p, IBV_WR_RDMA_READ, bs, 64, src->lkey, bm + 1024 - 32, mw1->rkey);
	/* rdma_rxe checks the MR's range here, not the window's (rxe_resp.c check_rkey()). */
	printf("I t1_read_past_end %d\n", r);
	pair_down(&p);
	check(pair_up(&e, &p) == 0, "an RC pair");
	r = rdma(&p, IBV_WR_RDMA_READ, bs, 64, src->lkey, bm, old);
	printf("C t1_old_rkey %d\n", r);
	check(r == IBV_WC_REM_ACCESS_ERR, "the rkey before the rebind: remote access error");
	pair_down(&p);

	/* Type 2: bind, write, local invalidate. */
	check(pair_up(&e, &p) == 0, "an RC pair");
	rkey = mw2->rkey;
	r = bind2(&p, mw2, &rkey, mr, bm + 4096, 4096, RRW);
	printf("C t2_bind %d\n", r);
	check(r == IBV_WC_SUCCESS, "type 2: IBV_WR_BIND_MW over [4096, 8192) on the responder QP");
	fill(bs, 0x42, 4096);
	r = rdma(&p, IBV_WR_RDMA_WRITE, bs, 4096, src->lkey, bm + 4096, rkey);
	printf("C t2_write %d\n", r);
	check(r == IBV_WC_SUCCESS && filled(bm + 4096, 0x42, 4096), "RDMA WRITE of the whole window");
	r = bind2(&p, mw2, &rkey, mr, bm + 4096, 64, RRW);
	/* mlx5: MW_BIND_ERR; rdma_rxe flushes the failing bind (IBV_WC_WR_FLUSH_ERR). */
	printf("I t2_bind_bound %d\n", r);
	check(r == IBV_WC_MW_BIND_ERR || r == IBV_WC_WR_FLUSH_ERR,
	      "a type 2 bind of a bound window: an error completion");
	/* The window goes before the QP it is bound to: rdma_rxe 7.3 destroys a QP that a
	 * bound type 2 window still holds after a refcount timeout (WARN in __rxe_cleanup())
	 * and then touches it when the window is freed (KASAN use-after-free in
	 * rxe_mw_cleanup()). */
	r = ibv_dealloc_mw(mw2);
	check(r == 0, "dealloc the type 2 window");
	pair_down(&p);
	mw2 = ibv_alloc_mw(e.pd, IBV_MW_TYPE_2);
	check(mw2 != NULL, "a new type 2 window");
	if (!mw2)
		return 1;
	check(pair_up(&e, &p) == 0, "an RC pair");
	rkey = mw2->rkey;
	r = bind2(&p, mw2, &rkey, mr, bm, 4096, RRW);
	printf("C t2_bind_again %d\n", r);
	check(r == IBV_WC_SUCCESS, "type 2 bind over [0, 4096)");
	r = local_inv(&p, rkey);
	printf("C t2_local_inv %d\n", r);
	check(r == IBV_WC_SUCCESS, "IBV_WR_LOCAL_INV of the window");
	r = rdma(&p, IBV_WR_RDMA_READ, bs, 64, src->lkey, bm, rkey);
	printf("C t2_after_local_inv %d\n", r);
	check(r == IBV_WC_REM_ACCESS_ERR, "the invalidated rkey: remote access error");
	pair_down(&p);

	/* Type 2: remote invalidation by SEND with invalidate. */
	check(pair_up(&e, &p) == 0, "an RC pair");
	r = bind2(&p, mw2, &rkey, mr, bm, 4096, RRW);
	printf("C t2_bind_free %d\n", r);
	check(r == IBV_WC_SUCCESS, "type 2 bind of the invalidated window");
	{
		struct ibv_sge rs = { .addr = (uintptr_t)bs + 4096, .length = 64, .lkey = src->lkey };
		struct ibv_recv_wr rw = { .wr_id = 12, .sg_list = &rs, .num_sge = 1 }, *rbad;
		struct ibv_sge ss = { .addr = (uintptr_t)bs, .length = 32, .lkey = src->lkey };
		struct ibv_send_wr sw = { .wr_id = 13, .sg_list = &ss, .num_sge = 1,
					  .opcode = IBV_WR_SEND_WITH_INV,
					  .send_flags = IBV_SEND_SIGNALED }, *sbad;
		struct ibv_wc wc;

		sw.invalidate_rkey = rkey;
		r = ibv_post_recv(p.resp, &rw, &rbad) || ibv_post_send(p.req, &sw, &sbad);
		check(r == 0, "post a receive and a SEND with invalidate");
		r = wait_wc(p.cq, &wc);
		printf("C t2_send_inv %d\n", r);
		check(r == IBV_WC_SUCCESS, "SEND with invalidate completes");
		r = wait_wc(p.rcq, &wc);
		printf("C t2_send_inv_recv %d %d %d\n", r, wc.opcode, wc.invalidated_rkey == rkey);
		check(r == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RECV && wc.invalidated_rkey == rkey,
		      "the receive: the window's rkey as invalidated_rkey");
		/* rdma_rxe sets the kernel's IB_WC_WITH_INVALIDATE (1 << 2), which libibverbs
		 * reads as IBV_WC_IP_CSUM_OK; libmlx5 sets IBV_WC_WITH_INV. */
		printf("I t2_send_inv_with_inv %d\n", !!(wc.wc_flags & IBV_WC_WITH_INV));
	}
	r = rdma(&p, IBV_WR_RDMA_READ, bs, 64, src->lkey, bm, rkey);
	printf("C t2_after_remote_inv %d\n", r);
	check(r == IBV_WC_REM_ACCESS_ERR, "the remotely invalidated rkey: remote access error");
	pair_down(&p);

	/* Bind errors. */
	check(pair_up(&e, &p) == 0, "an RC pair");
	r = bind1(&p, mw1, nolw, bn, 1024, IBV_ACCESS_REMOTE_WRITE);
	printf("I bind_write_without_local_write %d\n", r);
	check(r == IBV_WC_MW_BIND_ERR || r == IBV_WC_WR_FLUSH_ERR,
	      "a writable window over an MR without local write: an error completion");
	pair_down(&p);
	check(pair_up(&e, &p) == 0, "an RC pair");
	r = bind1(&p, mw1, mr, bm + BUF - 512, 1024, IBV_ACCESS_REMOTE_READ);
	printf("I bind_past_mr_end %d\n", r);
	check(r == IBV_WC_MW_BIND_ERR || r == IBV_WC_WR_FLUSH_ERR,
	      "a window past the MR's end: an error completion");
	pair_down(&p);
	check(pair_up(&e, &p) == 0, "an RC pair");
	r = bind1(&p, mw1, nobind, bo, 1024, IBV_ACCESS_REMOTE_READ);
	printf("I bind_without_mw_bind %d\n", r);
	pair_down(&p);

	/* Deregistering an MR under a bound window. */
	check(pair_up(&e, &p) == 0, "an RC pair");
	r = bind1(&p, mw1, nobind, bo, 1024, IBV_ACCESS_REMOTE_READ);
	if (r != IBV_WC_SUCCESS) {
		pair_down(&p);
		check(pair_up(&e, &p) == 0, "an RC pair");
		r = bind1(&p, mw1, mr, bm, 1024, IBV_ACCESS_REMOTE_READ);
		r = r == IBV_WC_SUCCESS ? ibv_dereg_mr(mr) : -1;
		if (!r)
			mr = NULL;
	} else {
		r = ibv_dereg_mr(nobind);
		if (!r)
			nobind = NULL;
	}
	printf("I dereg_bound_mr %d\n", r);
	if (!r) {
		r = rdma(&p, IBV_WR_RDMA_READ, bs, 64, src->lkey, mr ? bo : bm, mw1->rkey);
		printf("I read_after_dereg %d\n", r);
		check(r == IBV_WC_REM_ACCESS_ERR, "the window of a deregistered MR: remote access error");
	}
	pair_down(&p);

	r = ibv_dealloc_mw(mw1) || ibv_dealloc_mw(mw2);
	check(r == 0, "dealloc the windows");
	r = (mr && ibv_dereg_mr(mr)) || (nobind && ibv_dereg_mr(nobind)) || ibv_dereg_mr(nolw) ||
	    ibv_dereg_mr(src);
	check(r == 0, "deregister the MRs");
	r = ibv_dealloc_pd(e.pd);
	printf("C dealloc_pd %d\n", r);
	check(r == 0, "deallocate the PD");
	ibv_close_device(e.ctx);
	printf("I failures %d\n", failures);
	return failures ? 1 : 0;
}
