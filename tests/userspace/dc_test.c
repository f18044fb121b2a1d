// SPDX-License-Identifier: GPL-2.0
/*
 * Dynamically connected transport through libmlx5 (Debian's rdma-core 44): one DCI
 * (mlx5dv_create_qp, MLX5DV_DCTYPE_DCI, the extended send API with
 * mlx5dv_wr_set_dc_addr()) reaching three DCTs (MLX5DV_DCTYPE_DCT, each on an SRQ with its
 * own DC access key): one on the DCI's function, two on a second function.
 *  - SEND to each DCT: the DCI's completion, the receive completion on the DCT's CQ with its
 *    number (the DCT number the modify to RTR answered) and the byte count, every byte.
 *  - RDMA WRITE through one DCT into the second function's MR, RDMA READ through another
 *    back into the DCI's memory: every byte.
 *  - A wrong DC access key: the message is dropped at the DCT (nothing arrives) and the
 *    DCI's send completes with IBV_WC_RETRY_EXC_ERR once its retries are spent; the DCI is
 *    in ERR afterwards. The DCT still takes messages with its right key.
 *  - ibv_query_qp() of a DCT reports RTR; every object is destroyed (0).
 *
 *   dc_test -d DEV_A -e DEV_B [-g GID_INDEX]
 *
 * -g: RoCE, every address with a GRH from that GID index to the target port's GID there (else
 * InfiniBand, by LID). Prints one line per check: "R ok <what>" or "R fail <what>: <why>";
 * exit status 1 on a failed check.
 *
 * LDLIBS: -lmlx5
 */
#define _GNU_SOURCE
#include <infiniband/mlx5dv.h>
#include <stdlib.h>
#include <unistd.h>

#include "rdmars_test.h"

#define BUF (64 * 1024)
#define NDCT 3

struct side {
	struct ibv_context *ctx;
	struct ibv_port_attr port;
	union ibv_gid gid;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_srq *srq;
	struct ibv_mr *mr;
	unsigned char *buf;
};

static int gid_index = -1;

static int side_open(struct side *s, const char *dev)
{
	int g = gid_index;

	if (rt_open(dev, &s->ctx, &s->port, &s->gid, &g))
		return -1;
	s->pd = ibv_alloc_pd(s->ctx);
	s->cq = ibv_create_cq(s->ctx, 64, NULL, NULL, 0);
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 16, .max_sge = 1 } };
	s->srq = s->pd ? ibv_create_srq(s->pd, &sa) : NULL;
	s->buf = aligned_alloc(4096, BUF);
	s->mr = s->pd && s->buf ? ibv_reg_mr(s->pd, s->buf, BUF,
					    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
					    IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)
				  : NULL;
	check(s->pd && s->cq && s->srq && s->mr, "%s: PD, CQ, SRQ, MR", dev);
	if (!s->mr)
		return -1;
	memset(s->buf, 0, BUF);
	return 0;
}

/* The address of side `t`'s port as an AH attribute (LID, or GRH on RoCE). */
static void to_port(struct ibv_ah_attr *ah, const struct side *t)
{
	memset(ah, 0, sizeof(*ah));
	ah->port_num = 1;
	ah->dlid = t->port.lid;
	if (gid_index >= 0) {
		ah->is_global = 1;
		ah->grh.dgid = t->gid;
		ah->grh.sgid_index = gid_index;
		ah->grh.hop_limit = 1;
	}
}

/* A DCT on side s with DC access key `key`, through RESET->INIT->RTR (the DCT's number is
 * qp_num afterwards). */
static struct ibv_qp *dct_create(struct side *s, uint64_t key)
{
	struct ibv_qp_init_attr_ex a = {
		.qp_type = IBV_QPT_DRIVER,
		.send_cq = s->cq,
		.recv_cq = s->cq,
		.srq = s->srq,
		.pd = s->pd,
		.comp_mask = IBV_QP_INIT_ATTR_PD,
	};
	struct mlx5dv_qp_init_attr dv = {
		.comp_mask = MLX5DV_QP_INIT_ATTR_MASK_DC,
		.dc_init_attr = { .dc_type = MLX5DV_DCTYPE_DCT, .dct_access_key = key },
	};
	struct ibv_qp *qp = mlx5dv_create_qp(s->ctx, &a, &dv);
	struct ibv_qp_attr m = {
		.qp_state = IBV_QPS_INIT,
		.port_num = 1,
		.qp_access_flags = IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE |
				   IBV_ACCESS_REMOTE_ATOMIC,
	};
	int rc;

	if (!qp) {
		printf("I DCT: mlx5dv_create_qp: errno %d\n", errno);
		return NULL;
	}
	rc = ibv_modify_qp(qp, &m, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				   IBV_QP_ACCESS_FLAGS);
	if (rc) {
		printf("I DCT: RESET->INIT: %d\n", rc);
		goto fail;
	}
	memset(&m, 0, sizeof(m));
	m.qp_state = IBV_QPS_RTR;
	m.path_mtu = IBV_MTU_1024;
	m.min_rnr_timer = 1;
	to_port(&m.ah_attr, s);
	rc = ibv_modify_qp(qp, &m, IBV_QP_STATE | IBV_QP_MIN_RNR_TIMER | IBV_QP_AV |
				   IBV_QP_PATH_MTU);
	if (rc) {
		printf("I DCT: INIT->RTR: %d\n", rc);
		goto fail;
	}
	return qp;
fail:
	errno = rc;
	ibv_destroy_qp(qp);
	return NULL;
}

/* A DCI on side s in RTS with ACK timeout `timeout` and `retry` transport retries. */
static struct ibv_qp *dci_create(struct side *s, int timeout, int retry)
{
	struct ibv_qp_init_attr_ex a = {
		.qp_type = IBV_QPT_DRIVER,
		.send_cq = s->cq,
		.recv_cq = s->cq,
		.pd = s->pd,
		.cap = { .max_send_wr = 16, .max_send_sge = 1 },
		.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_RDMA_WRITE |
				  IBV_QP_EX_WITH_RDMA_READ,
	};
	struct mlx5dv_qp_init_attr dv = {
		.comp_mask = MLX5DV_QP_INIT_ATTR_MASK_DC,
		.dc_init_attr = { .dc_type = MLX5DV_DCTYPE_DCI },
	};
	struct ibv_qp *qp = mlx5dv_create_qp(s->ctx, &a, &dv);
	struct ibv_qp_attr m = { .qp_state = IBV_QPS_INIT, .port_num = 1 };
	int rc, mask;

	if (!qp) {
		printf("I DCI: mlx5dv_create_qp: errno %d\n", errno);
		return NULL;
	}
	rc = ibv_modify_qp(qp, &m, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT);
	if (rc)
		goto fail;
	memset(&m, 0, sizeof(m));
	m.qp_state = IBV_QPS_RTR;
	m.path_mtu = IBV_MTU_1024;
	mask = IBV_QP_STATE | IBV_QP_PATH_MTU;
	if (gid_index >= 0) {
		/* RoCE: the source GID the DCI sends from. */
		to_port(&m.ah_attr, s);
		mask |= IBV_QP_AV;
	}
	rc = ibv_modify_qp(qp, &m, mask);
	if (rc)
		goto fail;
	memset(&m, 0, sizeof(m));
	m.qp_state = IBV_QPS_RTS;
	m.timeout = timeout;
	m.retry_cnt = retry;
	m.rnr_retry = 7;
	m.max_rd_atomic = 1;
	rc = ibv_modify_qp(qp, &m, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				   IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
	if (rc)
		goto fail;
	return qp;
fail:
	errno = rc;
	ibv_destroy_qp(qp);
	return NULL;
}

/* One WR on DCI `qp` to DCT `dctn` (key `key`) through `ah`: SEND of `len` bytes at `off` of
 * s's buffer, or RDMA WRITE/READ with the remote address and rkey. 0 or the errno. */
static int dc_post(struct ibv_qp *qp, struct side *s, struct ibv_ah *ah, uint32_t dctn,
		   uint64_t key, enum ibv_wr_opcode op, size_t off, uint32_t len,
		   uint64_t raddr, uint32_t rkey)
{
	struct ibv_qp_ex *qx = ibv_qp_to_qp_ex(qp);
	struct mlx5dv_qp_ex *mx = mlx5dv_qp_ex_from_ibv_qp_ex(qx);

	ibv_wr_start(qx);
	qx->wr_id = off;
	qx->wr_flags = IBV_SEND_SIGNALED;
	if (op == IBV_WR_SEND)
		ibv_wr_send(qx);
	else if (op == IBV_WR_RDMA_WRITE)
		ibv_wr_rdma_write(qx, rkey, raddr);
	else
		ibv_wr_rdma_read(qx, rkey, raddr);
	mlx5dv_wr_set_dc_addr(mx, ah, dctn, key);
	ibv_wr_set_sge(qx, s->mr->lkey, (uintptr_t)(s->buf + off), len);
	return ibv_wr_complete(qx);
}

static int post_srq(struct side *s, size_t off, uint32_t len)
{
	struct ibv_sge sge = { (uintptr_t)(s->buf + off), len, s->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = off, .sg_list = &sge, .num_sge = 1 }, *bad;

	return ibv_post_srq_recv(s->srq, &wr, &bad);
}

static void fill(unsigned char *p, size_t len, unsigned int seed)
{
	for (size_t i = 0; i < len; i++)
		p[i] = (unsigned char)(i * 31 + seed);
}

static int same(const unsigned char *p, size_t len, unsigned int seed)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] != (unsigned char)(i * 31 + seed))
			return 0;
	return 1;
}

/*
 * The DCI's send completion from scq and the DCT's receive completion from rcq, which are one
 * CQ when the DCT is on the DCI's own function (either may then come first). Bit 0 set: the
 * send's in *s; bit 1: the receive's in *r.
 */
static int poll_send_recv(struct ibv_cq *scq, struct ibv_cq *rcq, struct ibv_wc *s,
			  struct ibv_wc *r)
{
	struct ibv_wc wc;
	int got = 0, k;

	if (scq != rcq) {
		if (rt_poll(scq, s, 5) == 1)
			got |= 1;
		if (rt_poll(rcq, r, 5) == 1)
			got |= 2;
		return got;
	}
	for (k = 0; k < 2; k++) {
		if (rt_poll(scq, &wc, 5) != 1)
			break;
		if (wc.opcode & IBV_WC_RECV) {
			*r = wc;
			got |= 2;
		} else {
			*s = wc;
			got |= 1;
		}
	}
	return got;
}

int main(int argc, char **argv)
{
	const char *da = NULL, *db = NULL;
	struct side a = { 0 }, b = { 0 };
	struct side *where[NDCT] = { &a, &b, &b };
	const uint64_t keys[NDCT] = { 0x1111222233334444ull, 0x5555, 0xdc0000000000beefull };
	struct ibv_qp *dct[NDCT] = { 0 }, *dci, *dci2;
	struct ibv_ah *ah[2];
	struct ibv_ah_attr aa;
	struct ibv_wc wc, sw;
	int opt, i, n;

	while ((opt = getopt(argc, argv, "d:e:g:")) != -1) {
		if (opt == 'd')
			da = optarg;
		else if (opt == 'e')
			db = optarg;
		else if (opt == 'g')
			gid_index = atoi(optarg);
	}
	if (!da || !db) {
		fprintf(stderr, "usage: dc_test -d DEV_A -e DEV_B [-g GID_INDEX]\n");
		return 2;
	}
	if (side_open(&a, da) || side_open(&b, db))
		return 1;
	for (i = 0; i < NDCT; i++) {
		dct[i] = dct_create(where[i], keys[i]);
		check(dct[i] != NULL, "DCT %d created and moved to RTR (number %u)", i,
		      dct[i] ? dct[i]->qp_num : 0);
		if (!dct[i])
			return 1;
	}
	check(dct[1]->qp_num != dct[2]->qp_num && dct[1]->qp_num != 0,
	      "the DCTs of one function have numbers of their own");
	dci = dci_create(&a, 14, 7);
	check(dci != NULL, "DCI created and moved to RTS");
	if (!dci)
		return 1;
	to_port(&aa, &a);
	ah[0] = ibv_create_ah(a.pd, &aa);
	to_port(&aa, &b);
	ah[1] = ibv_create_ah(a.pd, &aa);
	check(ah[0] && ah[1], "AHs to both ports");
	if (!ah[0] || !ah[1])
		return 1;

	/* SENDs from a's buffer at 4096 * i; DCT i receives at 12288 + 4096 * i of its side's. */
	fill(a.buf, 3 * 4096, 7);
	for (i = 0; i < NDCT; i++)
		check(post_srq(where[i], 12288 + 4096 * i, 4096) == 0, "SRQ receive for DCT %d", i);
	for (i = 0; i < NDCT; i++) {
		uint32_t len = 1000 + 1000 * i;
		int r = dc_post(dci, &a, ah[where[i] == &b], dct[i]->qp_num, keys[i], IBV_WR_SEND,
				4096 * i, len, 0, 0);

		check(r == 0, "SEND %u bytes to DCT %d posted", len, i);
		n = poll_send_recv(a.cq, where[i]->cq, &sw, &wc);
		check((n & 1) && sw.status == IBV_WC_SUCCESS && sw.opcode == IBV_WC_SEND &&
			      sw.qp_num == dci->qp_num,
		      "DCI: SEND to DCT %d completes (status %d)", i,
		      (n & 1) ? (int)sw.status : -1);
		n = (n & 2) ? 1 : 0;
		check(n == 1 && wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RECV &&
			      wc.qp_num == dct[i]->qp_num && wc.byte_len == len &&
			      wc.src_qp == dci->qp_num,
		      "DCT %d: receive of %u bytes from the DCI (qp %u, len %u)", i, len,
		      n == 1 ? wc.qp_num : 0, n == 1 ? wc.byte_len : 0);
		check(!memcmp(where[i]->buf + 12288 + 4096 * i, a.buf + 4096 * i, len),
		      "DCT %d: every byte of the SEND", i);
	}

	/* RDMA WRITE through DCT 1 into b at 32 KiB, READ through DCT 2 from b at 48 KiB. */
	fill(a.buf + 16384, 8192, 99);
	fill(b.buf + 49152, 8192, 55);
	n = dc_post(dci, &a, ah[1], dct[1]->qp_num, keys[1], IBV_WR_RDMA_WRITE, 16384, 8192,
		    (uintptr_t)(b.buf + 32768), b.mr->rkey);
	check(n == 0 && rt_poll(a.cq, &wc, 5) == 1 && wc.status == IBV_WC_SUCCESS &&
		      wc.opcode == IBV_WC_RDMA_WRITE,
	      "RDMA WRITE of 8192 bytes through DCT 1 completes");
	check(same(b.buf + 32768, 8192, 99), "RDMA WRITE: every byte at the target");
	n = dc_post(dci, &a, ah[1], dct[2]->qp_num, keys[2], IBV_WR_RDMA_READ, 24576, 8192,
		    (uintptr_t)(b.buf + 49152), b.mr->rkey);
	check(n == 0 && rt_poll(a.cq, &wc, 5) == 1 && wc.status == IBV_WC_SUCCESS &&
		      wc.opcode == IBV_WC_RDMA_READ && wc.byte_len == 8192,
	      "RDMA READ of 8192 bytes through DCT 2 completes");
	check(same(a.buf + 24576, 8192, 55), "RDMA READ: every byte back at the DCI");

	/* A wrong key: nothing arrives, the DCI's send exceeds its retries (timeout 8: ~1 ms). */
	dci2 = dci_create(&a, 8, 2);
	check(dci2 != NULL, "second DCI (timeout 8, 2 retries)");
	if (!dci2)
		return 1;
	check(post_srq(&b, 61440, 4096) == 0, "SRQ receive for the wrong-key test");
	n = dc_post(dci2, &a, ah[1], dct[1]->qp_num, keys[1] ^ 1, IBV_WR_SEND, 0, 64, 0, 0);
	check(n == 0, "SEND with a wrong DC key posted");
	n = rt_poll(a.cq, &wc, 10);
	check(n == 1 && wc.status == IBV_WC_RETRY_EXC_ERR && wc.qp_num == dci2->qp_num,
	      "wrong DC key: the DCI's send completes with IBV_WC_RETRY_EXC_ERR (status %d)",
	      n == 1 ? (int)wc.status : -1);
	n = rt_poll(b.cq, &wc, 1);
	check(n == 0, "wrong DC key: nothing arrives at the DCT");
	{
		struct ibv_qp_attr qa;
		struct ibv_qp_init_attr qi;

		check(ibv_query_qp(dci2, &qa, IBV_QP_STATE, &qi) == 0 && qa.qp_state == IBV_QPS_ERR,
		      "the failed DCI is in ERR");
		check(ibv_query_qp(dct[1], &qa, IBV_QP_STATE, &qi) == 0 &&
			      qa.qp_state == IBV_QPS_RTR,
		      "ibv_query_qp of a DCT: RTR");
	}
	/* The DCT still takes the right key (the receive posted above). */
	n = dc_post(dci, &a, ah[1], dct[1]->qp_num, keys[1], IBV_WR_SEND, 0, 64, 0, 0);
	check(n == 0 && rt_poll(a.cq, &wc, 5) == 1 && wc.status == IBV_WC_SUCCESS,
	      "the right key still reaches DCT 1");
	n = rt_poll(b.cq, &wc, 5);
	check(n == 1 && wc.status == IBV_WC_SUCCESS && wc.byte_len == 64 &&
		      !memcmp(b.buf + 61440, a.buf, 64),
	      "DCT 1: the 64 bytes arrive");

	check(ibv_destroy_qp(dci2) == 0 && ibv_destroy_qp(dci) == 0, "DCIs destroyed");
	for (i = 0; i < NDCT; i++)
		check(ibv_destroy_qp(dct[i]) == 0, "DCT %d destroyed", i);
	check(ibv_destroy_ah(ah[0]) == 0 && ibv_destroy_ah(ah[1]) == 0, "AHs destroyed");
	for (i = 0; i < 2; i++) {
		struct side *s = i ? &b : &a;

		check(ibv_dereg_mr(s->mr) == 0 && ibv_destroy_srq(s->srq) == 0 &&
			      ibv_destroy_cq(s->cq) == 0 && ibv_dealloc_pd(s->pd) == 0 &&
			      ibv_close_device(s->ctx) == 0,
		      "side %d: MR, SRQ, CQ, PD, context released", i);
		free(s->buf);
	}
	printf("I %d passed, %d failed\n", passes, failures);
	return failures ? 1 : 0;
}
