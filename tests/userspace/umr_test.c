// SPDX-License-Identifier: GPL-2.0
/*
 * umr_test: indirect memory keys built by UMR WQEs through mlx5dv (libmlx5),
 * as a program using mlx5dv_create_mkey() sees them on a ConnectX.
 *
 * On an RC pair of one port (a requester QP, and a responder QP created with
 * mlx5dv_create_qp() and the MR_LIST/MR_INTERLEAVED send ops):
 *  - mlx5dv_create_mkey() (INDIRECT, REMOTE_INVALIDATE, 4 entries);
 *  - mlx5dv_wr_mr_list() on the responder QP: three entries over two MRs, a
 *    completion IBV_WC_SUCCESS / IBV_WC_DRIVER1; the requester's RDMA WRITE
 *    through the key (zero-based, across all entries) lands in the entries'
 *    bytes, every byte checked, and an RDMA READ of the whole layout returns
 *    the entries' bytes in order; a WRITE past the layout's length fails
 *    with IBV_WC_REM_ACCESS_ERR (on a pair of its own);
 *  - mlx5dv_wr_mr_interleaved(): 3 repetitions of (64 bytes every 256 of MR
 *    1, 32 bytes every 100 of MR 2): a WRITE then a READ of the 288 bytes,
 *    every byte checked against where the layout puts it;
 *  - a SEND with invalidate of the key from the requester: the receive
 *    completion has IBV_WC_WITH_INV and the key, and a WRITE with the key
 *    afterwards fails with IBV_WC_REM_ACCESS_ERR.
 *
 * usage: umr_test -d DEV [-g GID_INDEX]
 * Output: R lines (tests/vm/lib.sh t_import).
 *
 * LDLIBS: -lmlx5
 */
#include <errno.h>
#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rdmars_test.h"

#define BUF 4096

struct env {
	struct ibv_context *ctx;
	struct ibv_port_attr port;
	union ibv_gid gid;
	int gid_index;
	struct ibv_pd *pd;
	/* Two target MRs and a local buffer MR (requester side). */
	uint8_t *m1, *m2, *loc;
	struct ibv_mr *mr1, *mr2, *lmr;
};

struct pair {
	struct ibv_cq *cq, *rcq;
	struct ibv_qp *req, *resp;
	struct ibv_qp_ex *qpx;
	struct mlx5dv_qp_ex *dvqp;
};

static int pair_up(struct env *e, struct pair *p)
{
	struct ibv_qp_init_attr qa = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 16, .max_send_sge = 1, .max_recv_wr = 8,
			 .max_recv_sge = 1 },
	};
	struct ibv_qp_init_attr_ex qx = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 16, .max_send_sge = 1, .max_recv_wr = 8,
			 .max_recv_sge = 1, .max_inline_data = 256 },
		.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.send_ops_flags = IBV_QP_EX_WITH_SEND,
	};
	struct mlx5dv_qp_init_attr dv = {
		.comp_mask = MLX5DV_QP_INIT_ATTR_MASK_SEND_OPS_FLAGS,
		.send_ops_flags = MLX5DV_QP_EX_WITH_MR_LIST | MLX5DV_QP_EX_WITH_MR_INTERLEAVED,
	};

	memset(p, 0, sizeof(*p));
	p->cq = ibv_create_cq(e->ctx, 32, NULL, NULL, 0);
	p->rcq = ibv_create_cq(e->ctx, 32, NULL, NULL, 0);
	if (!p->cq || !p->rcq)
		return -1;
	qa.send_cq = qa.recv_cq = p->cq;
	p->req = ibv_create_qp(e->pd, &qa);
	qx.pd = e->pd;
	qx.send_cq = qx.recv_cq = p->rcq;
	p->resp = mlx5dv_create_qp(e->ctx, &qx, &dv);
	check(p->resp != NULL, "mlx5dv_create_qp with the MR_LIST and MR_INTERLEAVED send ops");
	if (!p->req || !p->resp)
		return -1;
	p->qpx = ibv_qp_to_qp_ex(p->resp);
	p->dvqp = mlx5dv_qp_ex_from_ibv_qp_ex(p->qpx);
	if (!p->qpx || !p->dvqp)
		return -1;
	if (rt_qp_to_rts(p->req, p->resp->qp_num, &e->port, &e->gid, e->gid_index,
			 IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ, 0x100) ||
	    rt_qp_to_rts(p->resp, p->req->qp_num, &e->port, &e->gid, e->gid_index,
			 IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ, 0x100))
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

/* An RDMA WRITE or READ of len bytes at loc + loff to zero-based addr of rkey. */
static int rdma(struct env *e, struct pair *p, enum ibv_wr_opcode op, size_t loff, uint32_t len,
		uint64_t addr, uint32_t rkey)
{
	struct ibv_sge sg = { .addr = (uintptr_t)(e->loc + loff), .length = len,
			      .lkey = e->lmr->lkey };
	struct ibv_send_wr wr = { .wr_id = 7, .sg_list = &sg, .num_sge = 1, .opcode = op,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct ibv_wc wc;

	wr.wr.rdma.remote_addr = addr;
	wr.wr.rdma.rkey = rkey;
	if (ibv_post_send(p->req, &wr, &bad))
		return -1;
	return wait_wc(p->cq, &wc);
}

/* Posts the UMR WQE the caller builds between wr_start and wr_complete; its status. */
static int umr_done(struct pair *p, const char *what)
{
	struct ibv_wc wc;
	int r;

	if (ibv_wr_complete(p->qpx)) {
		check(0, "%s: ibv_wr_complete", what);
		return -1;
	}
	r = wait_wc(p->rcq, &wc);
	check(r == IBV_WC_SUCCESS && wc.opcode == IBV_WC_DRIVER1,
	      "%s completes (status %d, opcode %d)", what, r, r >= 0 ? (int)wc.opcode : -1);
	return r;
}

static void fill(uint8_t *b, size_t n, uint8_t seed)
{
	for (size_t i = 0; i < n; i++)
		b[i] = (uint8_t)(seed + i * 7 + (i >> 8));
}

static void list_case(struct env *e, struct mlx5dv_mkey *mk)
{
	/* [0, 300) = m1[100..400), [300, 1300) = m2[0..1000), [1300, 1500) = m1[3000..3200). */
	struct ibv_sge sge[3] = {
		{ .addr = (uintptr_t)(e->m1 + 100), .length = 300, .lkey = e->mr1->lkey },
		{ .addr = (uintptr_t)e->m2, .length = 1000, .lkey = e->mr2->lkey },
		{ .addr = (uintptr_t)(e->m1 + 3000), .length = 200, .lkey = e->mr1->lkey },
	};
	uint8_t want[1500];
	struct pair p;
	int ok = 1;

	if (pair_up(e, &p)) {
		check(0, "list: RC pair");
		pair_down(&p);
		return;
	}
	ibv_wr_start(p.qpx);
	p.qpx->wr_id = 1;
	p.qpx->wr_flags = IBV_SEND_INLINE | IBV_SEND_SIGNALED;
	mlx5dv_wr_mr_list(p.dvqp, mk, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			  IBV_ACCESS_REMOTE_READ, 3, sge);
	if (umr_done(&p, "mlx5dv_wr_mr_list (3 entries over 2 MRs)") != IBV_WC_SUCCESS)
		goto out;
	memset(e->m1, 0, BUF);
	memset(e->m2, 0, BUF);
	fill(e->loc, 1400, 0x11);
	check(rdma(e, &p, IBV_WR_RDMA_WRITE, 0, 1400, 50, mk->rkey) == IBV_WC_SUCCESS,
	      "list: RDMA WRITE of 1400 bytes at offset 50 through the key");
	ok = !memcmp(e->m1 + 150, e->loc, 250) && !memcmp(e->m2, e->loc + 250, 1000) &&
	     !memcmp(e->m1 + 3000, e->loc + 1250, 150);
	check(ok, "list: the WRITE's 1400 bytes are in the three entries, in order");
	check(e->m1[149] == 0 && e->m1[3150] == 0 && e->m2[1000] == 0,
	      "list: nothing written outside the entries");
	fill(e->m1 + 100, 50, 0x5a);
	memcpy(want, e->m1 + 100, 300);
	memcpy(want + 300, e->m2, 1000);
	memcpy(want + 1300, e->m1 + 3000, 200);
	memset(e->loc + 2048, 0xee, 1500);
	check(rdma(e, &p, IBV_WR_RDMA_READ, 2048, 1500, 0, mk->rkey) == IBV_WC_SUCCESS,
	      "list: RDMA READ of the whole layout (1500 bytes)");
	check(!memcmp(e->loc + 2048, want, 1500), "list: the READ returns the entries' bytes in order");
	check(rdma(e, &p, IBV_WR_RDMA_WRITE, 0, 200, 1400, mk->rkey) == IBV_WC_REM_ACCESS_ERR,
	      "list: a WRITE past the layout's length: IBV_WC_REM_ACCESS_ERR");
out:
	pair_down(&p);
}

static void interleaved_case(struct env *e, struct mlx5dv_mkey *mk)
{
	struct mlx5dv_mr_interleaved il[2] = {
		{ .addr = (uintptr_t)e->m1, .bytes_count = 64, .bytes_skip = 192,
		  .lkey = e->mr1->lkey },
		{ .addr = (uintptr_t)(e->m2 + 8), .bytes_count = 32, .bytes_skip = 68,
		  .lkey = e->mr2->lkey },
	};
	struct pair p;
	int ok = 1, r;

	if (pair_up(e, &p)) {
		check(0, "interleaved: RC pair");
		pair_down(&p);
		return;
	}
	ibv_wr_start(p.qpx);
	p.qpx->wr_id = 2;
	p.qpx->wr_flags = IBV_SEND_INLINE | IBV_SEND_SIGNALED;
	mlx5dv_wr_mr_interleaved(p.dvqp, mk, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				 IBV_ACCESS_REMOTE_READ, 3, 2, il);
	if (umr_done(&p, "mlx5dv_wr_mr_interleaved (3 x 2 entries)") != IBV_WC_SUCCESS)
		goto out;
	memset(e->m1, 0, BUF);
	memset(e->m2, 0, BUF);
	fill(e->loc, 288, 0x33);
	check(rdma(e, &p, IBV_WR_RDMA_WRITE, 0, 288, 0, mk->rkey) == IBV_WC_SUCCESS,
	      "interleaved: RDMA WRITE of the 288 bytes");
	for (r = 0; r < 3; r++) {
		ok &= !memcmp(e->m1 + 256 * r, e->loc + 96 * r, 64);
		ok &= !memcmp(e->m2 + 8 + 100 * r, e->loc + 96 * r + 64, 32);
		ok &= e->m1[256 * r + 64] == 0 && e->m2[8 + 100 * r + 32] == 0;
	}
	check(ok, "interleaved: each repetition's bytes at its stride in both MRs, nothing between");
	memset(e->loc + 1024, 0, 288);
	check(rdma(e, &p, IBV_WR_RDMA_READ, 1024, 288, 0, mk->rkey) == IBV_WC_SUCCESS,
	      "interleaved: RDMA READ of the 288 bytes");
	check(!memcmp(e->loc + 1024, e->loc, 288), "interleaved: the READ returns what was written");
out:
	pair_down(&p);
}

static void invalidate_case(struct env *e, struct mlx5dv_mkey *mk)
{
	struct ibv_sge sge = { .addr = (uintptr_t)e->m1, .length = 2048, .lkey = e->mr1->lkey };
	struct ibv_sge ssg = { .addr = (uintptr_t)e->loc, .length = 32, .lkey = e->lmr->lkey };
	struct ibv_sge rsg = { .addr = (uintptr_t)(e->m2 + 2048), .length = 64,
			       .lkey = e->mr2->lkey };
	struct ibv_recv_wr rwr = { .wr_id = 3, .sg_list = &rsg, .num_sge = 1 }, *rbad;
	struct ibv_send_wr wr = { .wr_id = 4, .sg_list = &ssg, .num_sge = 1,
				  .opcode = IBV_WR_SEND_WITH_INV,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct ibv_wc wc;
	struct pair p;
	int r;

	if (pair_up(e, &p)) {
		check(0, "invalidate: RC pair");
		pair_down(&p);
		return;
	}
	ibv_wr_start(p.qpx);
	p.qpx->wr_id = 5;
	p.qpx->wr_flags = IBV_SEND_INLINE | IBV_SEND_SIGNALED;
	mlx5dv_wr_mr_list(p.dvqp, mk, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE, 1, &sge);
	if (umr_done(&p, "mlx5dv_wr_mr_list (1 entry)") != IBV_WC_SUCCESS)
		goto out;
	check(rdma(e, &p, IBV_WR_RDMA_WRITE, 0, 64, 0, mk->rkey) == IBV_WC_SUCCESS,
	      "invalidate: a WRITE through the key before");
	if (ibv_post_recv(p.resp, &rwr, &rbad)) {
		check(0, "invalidate: post_recv");
		goto out;
	}
	wr.invalidate_rkey = mk->rkey;
	if (ibv_post_send(p.req, &wr, &bad)) {
		check(0, "invalidate: post_send SEND_WITH_INV");
		goto out;
	}
	r = wait_wc(p.cq, &wc);
	check(r == IBV_WC_SUCCESS, "invalidate: SEND with invalidate completes (status %d)", r);
	r = wait_wc(p.rcq, &wc);
	check(r == IBV_WC_SUCCESS && (wc.wc_flags & IBV_WC_WITH_INV) &&
	      wc.invalidated_rkey == mk->rkey,
	      "invalidate: the receive has IBV_WC_WITH_INV and the key (status %d)", r);
	check(rdma(e, &p, IBV_WR_RDMA_WRITE, 0, 64, 0, mk->rkey) == IBV_WC_REM_ACCESS_ERR,
	      "invalidate: a WRITE with the key afterwards: IBV_WC_REM_ACCESS_ERR");
out:
	pair_down(&p);
}

/*
 * Opens dev with a DEVX context (mlx5dv_create_mkey() creates its mkey through DEVX), as
 * rt_open() does otherwise: port 1 and, on Ethernet, GID index 0 unless given.
 */
static int open_devx(const char *dev, struct env *e)
{
	struct mlx5dv_context_attr attr = { .flags = MLX5DV_CONTEXT_FLAGS_DEVX };
	struct ibv_device **list;
	int n, i;

	list = ibv_get_device_list(&n);
	for (i = 0; list && i < n; i++)
		if (dev && !strcmp(ibv_get_device_name(list[i]), dev))
			e->ctx = mlx5dv_open_device(list[i], &attr);
	if (list)
		ibv_free_device_list(list);
	check(e->ctx != NULL, "mlx5dv_open_device %s (DEVX)", dev ? dev : "(none)");
	if (!e->ctx || ibv_query_port(e->ctx, 1, &e->port))
		return -1;
	if (e->port.link_layer == IBV_LINK_LAYER_ETHERNET && e->gid_index < 0)
		e->gid_index = 0;
	if (e->gid_index >= 0 && ibv_query_gid(e->ctx, 1, e->gid_index, &e->gid))
		return -1;
	return 0;
}

int main(int argc, char **argv)
{
	struct mlx5dv_mkey_init_attr ma = {
		.create_flags = MLX5DV_MKEY_INIT_ATTR_FLAGS_INDIRECT |
				MLX5DV_MKEY_INIT_ATTR_FLAGS_REMOTE_INVALIDATE,
		.max_entries = 4,
	};
	struct mlx5dv_mkey *mk[3] = { NULL, NULL, NULL };
	const char *dev = NULL;
	struct env e;
	int opt, acc, i;

	memset(&e, 0, sizeof(e));
	e.gid_index = -1;
	while ((opt = getopt(argc, argv, "d:g:")) != -1) {
		if (opt == 'd')
			dev = optarg;
		else if (opt == 'g')
			e.gid_index = atoi(optarg);
	}
	if (open_devx(dev, &e))
		return 1;
	e.pd = ibv_alloc_pd(e.ctx);
	e.m1 = aligned_alloc(4096, BUF);
	e.m2 = aligned_alloc(4096, BUF);
	e.loc = aligned_alloc(4096, BUF);
	if (!e.pd || !e.m1 || !e.m2 || !e.loc)
		return 1;
	acc = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	e.mr1 = ibv_reg_mr(e.pd, e.m1, BUF, acc);
	e.mr2 = ibv_reg_mr(e.pd, e.m2, BUF, acc);
	e.lmr = ibv_reg_mr(e.pd, e.loc, BUF, acc);
	if (!e.mr1 || !e.mr2 || !e.lmr)
		return 1;
	ma.pd = e.pd;
	for (i = 0; i < 3; i++) {
		mk[i] = mlx5dv_create_mkey(&ma);
		check(mk[i] != NULL && ma.max_entries == 4,
		      "mlx5dv_create_mkey (indirect, remote invalidate, 4 entries) #%d", i);
		if (!mk[i])
			return 1;
	}
	list_case(&e, mk[0]);
	interleaved_case(&e, mk[1]);
	invalidate_case(&e, mk[2]);
	for (i = 0; i < 3; i++)
		check(mlx5dv_destroy_mkey(mk[i]) == 0, "mlx5dv_destroy_mkey #%d", i);
	ibv_dereg_mr(e.mr1);
	ibv_dereg_mr(e.mr2);
	ibv_dereg_mr(e.lmr);
	ibv_dealloc_pd(e.pd);
	ibv_close_device(e.ctx);
	printf("umr_test: %d passed, %d failed\n", passes, failures);
	return failures ? 1 : 0;
}
