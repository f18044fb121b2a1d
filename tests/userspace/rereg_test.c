// SPDX-License-Identifier: GPL-2.0
/*
 * rereg_test: IB_USER_VERBS_CMD_REREG_MR for rdma-rs and the upstream peer
 * (rdma_rxe), compared line by line by tests/vm/traffic.sh (vm_rereg).
 *
 * The errno cases go through the raw write() command on the context's
 * command fd (librxe has no rereg_mr: libibverbs' ibv_rereg_mr() answers
 * EOPNOTSUPP for it without asking the kernel), in upstream
 * ib_uverbs_rereg_mr()'s order: no flag EINVAL, an unknown flag EOPNOTSUPP,
 * a translation whose start and hca_va differ within a page EINVAL, an
 * unknown MR handle ENOENT, a PD handle as the MR EINVAL, bad access flags
 * EINVAL, an unknown PD ENOENT, writable access on memory pinned read-only
 * EACCES (ib_umem_check_rereg()), the same PD accepted.
 *
 * The effects, seen through the data path of two RC QPs on the device:
 *  - ACCESS: the keys stay; an MR made remote-read-only serves an RDMA READ
 *    through its old rkey (the bytes checked) and refuses an RDMA WRITE
 *    (IBV_WC_REM_ACCESS_ERR); given remote write back, a write through the
 *    old rkey lands;
 *  - PD: the keys stay; an MR moved to another PD serves a responder QP of the new PD and
 *    refuses one of the old PD (IBV_WC_REM_ACCESS_ERR); the old PD can then
 *    be deallocated, the new one is EBUSY (the usecnt moved);
 *  - TRANS (-t; rdma_rxe 7.3 answers EOPNOTSUPP, printed as an I line): an MR
 *    moved to a new buffer receives an RDMA WRITE there, the old buffer
 *    untouched; then TRANS|PD|ACCESS at once.
 * With -l the rereg calls of the effect cases go through libibverbs'
 * ibv_rereg_mr() (the provider's rereg_mr, libmlx5's for mlx5), which must
 * update mr->lkey/rkey.
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

#define BUF 4096

struct env {
	struct ibv_context *ctx;
	struct ibv_port_attr port;
	union ibv_gid gid;
	int gid_index;
	int use_lib;
};

/* An MR and the keys its last (re-)registration answered. */
struct mr {
	struct ibv_mr *mr;
	uint32_t lkey, rkey;
};

/* The raw REREG_MR write command: 0 or the errno. */
static int raw_rereg(struct env *e, uint32_t handle, uint32_t flags, void *start, uint64_t len,
		     uint64_t hca_va, uint32_t pd_handle, uint32_t access, struct mr *out)
{
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_rereg_mr cmd;
	} req;
	struct ib_uverbs_rereg_mr_resp resp;

	memset(&req, 0, sizeof(req));
	memset(&resp, 0, sizeof(resp));
	req.hdr.command = IB_USER_VERBS_CMD_REREG_MR;
	req.hdr.in_words = sizeof(req) / 4;
	req.hdr.out_words = sizeof(resp) / 4;
	req.cmd.response = (uintptr_t)&resp;
	req.cmd.mr_handle = handle;
	req.cmd.flags = flags;
	req.cmd.start = (uintptr_t)start;
	req.cmd.length = len;
	req.cmd.hca_va = hca_va;
	req.cmd.pd_handle = pd_handle;
	req.cmd.access_flags = access;
	if (write(e->ctx->cmd_fd, &req, sizeof(req)) != (ssize_t)sizeof(req))
		return errno;
	if (out) {
		out->lkey = resp.lkey;
		out->rkey = resp.rkey;
	}
	return 0;
}

/* A rereg of m, through libibverbs with -l: 0 or the errno. */
static int rereg(struct env *e, struct mr *m, int flags, struct ibv_pd *pd, void *addr,
		 size_t len, int access)
{
	int r;

	if (!e->use_lib)
		return raw_rereg(e, m->mr->handle, flags, addr, len, (uintptr_t)addr,
				 pd ? pd->handle : 0, access, m);
	errno = 0;
	r = ibv_rereg_mr(m->mr, flags, pd, addr, len, access);
	if (r)
		return errno ? errno : EIO;
	m->lkey = m->mr->lkey;
	m->rkey = m->mr->rkey;
	return 0;
}

static int to_rts(struct env *e, struct ibv_qp *qp, uint32_t dqpn)
{
	return rt_qp_to_rts(qp, dqpn, &e->port, &e->gid, e->gid_index,
			    IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ, 0x100);
}

/* A requester QP on pd_req connected to a responder QP on pd_resp, one CQ. */
struct pair {
	struct ibv_cq *cq;
	struct ibv_qp *req, *resp;
};

static int pair_up(struct env *e, struct pair *p, struct ibv_pd *pd_req, struct ibv_pd *pd_resp)
{
	struct ibv_qp_init_attr qa = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 8, .max_send_sge = 1, .max_recv_wr = 8,
			 .max_recv_sge = 1 },
	};

	p->cq = ibv_create_cq(e->ctx, 32, NULL, NULL, 0);
	if (!p->cq)
		return -1;
	qa.send_cq = qa.recv_cq = p->cq;
	p->req = ibv_create_qp(pd_req, &qa);
	p->resp = ibv_create_qp(pd_resp, &qa);
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
	memset(p, 0, sizeof(*p));
}

/* One RDMA WRITE or READ on the requester; the completion status or -1. */
static int rdma(struct pair *p, enum ibv_wr_opcode op, void *laddr, uint32_t len, uint32_t lkey,
		void *raddr, uint32_t rkey)
{
	struct ibv_sge sg = { .addr = (uintptr_t)laddr, .length = len, .lkey = lkey };
	struct ibv_send_wr wr = { .wr_id = 7, .sg_list = &sg, .num_sge = 1, .opcode = op,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct timespec t0, t;
	struct ibv_wc wc;

	wr.wr.rdma.remote_addr = (uintptr_t)raddr;
	wr.wr.rdma.rkey = rkey;
	if (ibv_post_send(p->req, &wr, &bad))
		return -1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		int n = ibv_poll_cq(p->cq, 1, &wc);

		if (n < 0)
			return -1;
		if (n == 1)
			return wc.status;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (t.tv_sec - t0.tv_sec > 10)
			return -1;
	}
}

static void fill(uint8_t *b, uint8_t seed)
{
	for (int i = 0; i < BUF; i++)
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

#define RW (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)

int main(int argc, char **argv)
{
	const char *dev_name = NULL;
	struct env e = { .gid_index = -1 };
	struct ibv_pd *pd1, *pd2, *pd3;
	struct mr src, t, ro, pm;
	struct pair p = { 0 };
	uint8_t *bs, *ba, *bb, *bc, *bro;
	uint32_t old_l, old_r;
	int opt, r, trans = 0;

	while ((opt = getopt(argc, argv, "d:g:tl")) != -1) {
		switch (opt) {
		case 'd': dev_name = optarg; break;
		case 'g': e.gid_index = atoi(optarg); break;
		case 't': trans = 1; break;
		case 'l': e.use_lib = 1; break;
		default: fprintf(stderr, "usage: %s -d DEV [-g GIDX] [-t] [-l]\n", argv[0]);
			return 2;
		}
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (rt_open(dev_name, &e.ctx, &e.port, &e.gid, &e.gid_index))
		return 1;
	pd1 = ibv_alloc_pd(e.ctx);
	pd2 = ibv_alloc_pd(e.ctx);
	pd3 = ibv_alloc_pd(e.ctx);
	bs = page_buf();
	ba = page_buf();
	bb = page_buf();
	bc = page_buf();
	bro = page_buf();
	check(pd1 && pd2 && pd3 && bs && ba && bb && bc && bro, "three PDs, buffers");
	if (!pd1 || !pd2 || !pd3 || !bs || !ba || !bb || !bc || !bro)
		return 1;
	src.mr = ibv_reg_mr(pd1, bs, BUF, IBV_ACCESS_LOCAL_WRITE);
	t.mr = ibv_reg_mr(pd1, ba, BUF, RW);
	ro.mr = ibv_reg_mr(pd1, bro, BUF, 0);
	pm.mr = ibv_reg_mr(pd3, bc, BUF, RW);
	check(src.mr && t.mr && ro.mr && pm.mr, "four MRs");
	if (!src.mr || !t.mr || !ro.mr || !pm.mr)
		return 1;
	src.lkey = src.mr->lkey;
	t.lkey = t.mr->lkey;
	t.rkey = t.mr->rkey;
	pm.lkey = pm.mr->lkey;
	pm.rkey = pm.mr->rkey;

	/* The request checks, in upstream's order. */
	r = raw_rereg(&e, t.mr->handle, 0, ba, BUF, (uintptr_t)ba, 0, RW, NULL);
	printf("C flags_0 %d\n", r);
	check(r == EINVAL, "no flag: EINVAL");
	r = raw_rereg(&e, t.mr->handle, 1 << 3, ba, BUF, (uintptr_t)ba, 0, RW, NULL);
	printf("C flags_unknown %d\n", r);
	check(r == EOPNOTSUPP, "an unknown flag: EOPNOTSUPP");
	r = raw_rereg(&e, 9999, IBV_REREG_MR_CHANGE_TRANSLATION, ba + 1, BUF - 1,
		      (uintptr_t)ba + 2, 0, 0, NULL);
	printf("C trans_page_offset %d\n", r);
	check(r == EINVAL, "start and hca_va differ within a page: EINVAL (before the handle)");
	r = raw_rereg(&e, 9999, IBV_REREG_MR_CHANGE_ACCESS, NULL, 0, 0, 0, RW, NULL);
	printf("C unknown_mr %d\n", r);
	check(r == ENOENT, "an unknown MR handle: ENOENT");
	r = raw_rereg(&e, pd1->handle, IBV_REREG_MR_CHANGE_ACCESS, NULL, 0, 0, 0, RW, NULL);
	printf("C pd_as_mr %d\n", r);
	check(r == EINVAL, "a PD handle as the MR: EINVAL");
	r = raw_rereg(&e, t.mr->handle, IBV_REREG_MR_CHANGE_ACCESS | IBV_REREG_MR_CHANGE_PD,
		      NULL, 0, 0, 9999, IBV_ACCESS_REMOTE_WRITE, NULL);
	printf("C access_remote_write_alone %d\n", r);
	check(r == EINVAL, "remote write without local write: EINVAL (before the PD)");
	r = raw_rereg(&e, t.mr->handle, IBV_REREG_MR_CHANGE_ACCESS, NULL, 0, 0, 0, 1 << 15, NULL);
	printf("C access_unknown_bit %d\n", r);
	check(r == EINVAL, "an unknown access bit: EINVAL");
	r = raw_rereg(&e, t.mr->handle, IBV_REREG_MR_CHANGE_PD, NULL, 0, 0, 9999, 0, NULL);
	printf("C unknown_pd %d\n", r);
	check(r == ENOENT, "an unknown PD handle: ENOENT");
	r = raw_rereg(&e, ro.mr->handle, IBV_REREG_MR_CHANGE_ACCESS, NULL, 0, 0, 0,
		      IBV_ACCESS_LOCAL_WRITE, NULL);
	printf("C access_writable_on_readonly_pages %d\n", r);
	check(r == EACCES, "local write on memory pinned read-only: EACCES");
	r = raw_rereg(&e, t.mr->handle, IBV_REREG_MR_CHANGE_PD, NULL, 0, 0, pd1->handle, 0, &t);
	printf("C same_pd %d\n", r);
	check(r == 0, "the MR's own PD: accepted");

	/* ACCESS: remote read only; the keys stay (upstream mlx5_ib changes the mkey in place
	 * by UMR, rxe changes its MR in place), so traffic goes through the old rkey. */
	fill(ba, 0x31);
	old_l = t.lkey;
	old_r = t.rkey;
	r = rereg(&e, &t, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
		  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
	printf("C access_to_read_only %d\n", r);
	check(r == 0, "rereg ACCESS to local write + remote read");
	printf("C access_keys_kept %d\n", t.lkey == old_l && t.rkey == old_r);
	check(t.lkey == old_l && t.rkey == old_r, "rereg ACCESS keeps the lkey and rkey");
	check(pair_up(&e, &p, pd1, pd1) == 0, "an RC pair on PD 1");
	memset(bs, 0, BUF);
	r = rdma(&p, IBV_WR_RDMA_READ, bs, 512, src.lkey, ba, old_r);
	printf("C access_read_status %d\n", r);
	check(r == IBV_WC_SUCCESS && filled(bs, 0x31, 512),
	      "RDMA READ through the old rkey: the MR's bytes");
	r = rdma(&p, IBV_WR_RDMA_WRITE, bs, 64, src.lkey, ba, old_r);
	printf("C access_write_status %d\n", r);
	check(r == IBV_WC_REM_ACCESS_ERR, "RDMA WRITE through the old rkey: remote access error");
	pair_down(&p);
	/* Remote write given back, in place: a write through the old rkey lands. */
	r = rereg(&e, &t, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0, RW);
	printf("C access_back_to_rw %d %d\n", r, t.lkey == old_l && t.rkey == old_r);
	check(r == 0 && t.rkey == old_r, "rereg ACCESS back to remote write, keys kept");
	check(pair_up(&e, &p, pd1, pd1) == 0, "an RC pair on PD 1");
	fill(bs, 0x3c);
	r = rdma(&p, IBV_WR_RDMA_WRITE, bs, 256, src.lkey, ba, old_r);
	printf("C access_write_again_status %d\n", r);
	check(r == IBV_WC_SUCCESS && filled(ba, 0x3c, 256) && filled(ba + 256, (uint8_t)(0x31 + 256 * 7), 256),
	      "RDMA WRITE through the old rkey lands, the rest untouched");
	pair_down(&p);
	fill(ba, 0x31);

	/* PD: pm moves from PD 3 to PD 2, keeping its keys. */
	old_l = pm.lkey;
	old_r = pm.rkey;
	r = rereg(&e, &pm, IBV_REREG_MR_CHANGE_PD, pd2, NULL, 0, 0);
	printf("C pd_move %d\n", r);
	check(r == 0, "rereg PD 3 -> PD 2");
	printf("C pd_keys_kept %d\n", pm.lkey == old_l && pm.rkey == old_r);
	check(pm.lkey == old_l && pm.rkey == old_r, "rereg PD keeps the lkey and rkey");
	check(pair_up(&e, &p, pd1, pd2) == 0, "an RC pair, requester on PD 1, responder on PD 2");
	fill(bs, 0x52);
	r = rdma(&p, IBV_WR_RDMA_WRITE, bs, 1024, src.lkey, bc, pm.rkey);
	printf("C pd_write_new_pd %d\n", r);
	check(r == IBV_WC_SUCCESS && filled(bc, 0x52, 1024),
	      "RDMA WRITE to a responder of the new PD: the bytes land");
	pair_down(&p);
	check(pair_up(&e, &p, pd1, pd3) == 0, "an RC pair, responder on PD 3");
	r = rdma(&p, IBV_WR_RDMA_WRITE, bs, 64, src.lkey, bc, pm.rkey);
	printf("C pd_write_old_pd %d\n", r);
	check(r == IBV_WC_REM_ACCESS_ERR, "RDMA WRITE to a responder of the old PD: remote access error");
	pair_down(&p);
	r = ibv_dealloc_pd(pd3);
	printf("C dealloc_old_pd %d\n", r);
	check(r == 0, "the old PD has no user left: deallocated");
	r = ibv_dealloc_pd(pd2);
	printf("C dealloc_new_pd %d\n", r);
	check(r == EBUSY, "the new PD is the MR's: EBUSY");

	/* TRANS: t moves to buffer B. mlx5 loads the new translation into the MR's mkey by UMR
	 * WQEs when the mkey has room for it (upstream umr_rereg_pas()): the keys stay, as they
	 * do for ACCESS and PD on both stacks, and the old rkey reaches the new buffer. Then
	 * everything at once. */
	old_l = t.lkey;
	old_r = t.rkey;
	r = rereg(&e, &t, IBV_REREG_MR_CHANGE_TRANSLATION | IBV_REREG_MR_CHANGE_ACCESS, NULL,
		  bb, BUF, RW);
	if (!trans) {
		printf("I trans %d\n", r);
	} else {
		check(r == 0, "rereg TRANS to a new buffer");
		printf("I trans_rkey_kept %d\n", t.rkey == old_r && t.lkey == old_l);
		fill(ba, 0x11);
		check(pair_up(&e, &p, pd1, pd1) == 0, "an RC pair on PD 1");
		fill(bs, 0x73);
		r = rdma(&p, IBV_WR_RDMA_WRITE, bs, BUF, src.lkey, bb, t.rkey);
		check(r == IBV_WC_SUCCESS && filled(bb, 0x73, BUF) && filled(ba, 0x11, BUF),
		      "RDMA WRITE through it lands in the new buffer, the old one untouched");
		if (t.rkey == old_r) {
			fill(bb, 0x2a);
			memset(bs, 0, BUF);
			r = rdma(&p, IBV_WR_RDMA_READ, bs, 512, src.lkey, bb + 1024, old_r);
			check(r == IBV_WC_SUCCESS && filled(bs, (uint8_t)(0x2a + 1024 * 7), 512),
			      "RDMA READ through the old rkey: the new buffer's bytes");
			fill(bs, 0x5e);
			r = rdma(&p, IBV_WR_RDMA_WRITE, bs, 256, src.lkey, bb + 2048, old_r);
			check(r == IBV_WC_SUCCESS && filled(bb + 2048, 0x5e, 256) &&
				      filled(ba, 0x11, BUF),
			      "RDMA WRITE through the old rkey lands in the new buffer");
		}
		pair_down(&p);
		old_r = t.rkey;
		r = rereg(&e, &t, IBV_REREG_MR_CHANGE_TRANSLATION | IBV_REREG_MR_CHANGE_PD |
				     IBV_REREG_MR_CHANGE_ACCESS,
			  pd2, ba + 256, 1024, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
		check(r == 0, "rereg TRANS+PD+ACCESS: 1 KiB at offset 256 of A, PD 2, read only");
		printf("I trans_pd_access_rkey_kept %d\n", t.rkey == old_r);
		check(pair_up(&e, &p, pd1, pd2) == 0, "an RC pair, responder on PD 2");
		memset(bs, 0, BUF);
		r = rdma(&p, IBV_WR_RDMA_READ, bs, 1024, src.lkey, ba + 256, t.rkey);
		check(r == IBV_WC_SUCCESS && filled(bs, (uint8_t)(0x11 + 256 * 7), 1024),
		      "RDMA READ of the new range through PD 2's responder");
		r = rdma(&p, IBV_WR_RDMA_READ, bs, 64, src.lkey, ba + 256 + 1024, t.rkey);
		check(r == IBV_WC_REM_ACCESS_ERR, "past the new range: remote access error");
		pair_down(&p);
		if (e.use_lib)
			check(t.mr->pd == pd2 && t.mr->addr == ba + 256 && t.mr->length == 1024,
			      "libibverbs: mr->pd, addr and length follow");
	}

	check(!ibv_dereg_mr(t.mr) && !ibv_dereg_mr(pm.mr) && !ibv_dereg_mr(ro.mr) &&
		      !ibv_dereg_mr(src.mr),
	      "deregister the MRs");
	r = ibv_dealloc_pd(pd2);
	check(r == 0 && !ibv_dealloc_pd(pd1), "deallocate the PDs");
	ibv_close_device(e.ctx);
	printf("I failures %d\n", failures);
	return failures ? 1 : 0;
}
