// SPDX-License-Identifier: GPL-2.0
/*
 * traffic: a byte-checking libibverbs data-path test for rdma-rs and the
 * upstream peer (rdma_rxe), one process, two RC QPs of one device connected
 * to each other (loopback through the port; a GID address vector on RoCE).
 *
 *   traffic -d DEV [-g GID_INDEX] [-s SEED] [-n ITERATIONS]
 *
 * Cases: SENDs of random sizes with random SGE lists on both sides, SEND
 * with immediate, inline SENDs, zero-length SENDs, RDMA WRITE, WRITE with
 * immediate, RDMA READ, atomic compare-and-swap and fetch-and-add (when the
 * device reports atomics), unsignaled runs retired by one signaled WQE, a
 * small send queue wrapped many times; errors: a bad lkey, a bad rkey
 * (remote access), RNR retries exhausted, a destination QP that is gone
 * (transport retries exhausted), a QP moved to ERR with receives
 * outstanding (all flushed), destroy while sends are in flight.
 *
 * Output for the VM harness (tests/vm/lib.sh t_import):
 *   R ok <description> / R fail <description>: <why>
 *   C <case> <n> op=<wc opcode> st=<wc status> len=<byte_len> imm=<imm> data=<crc>
 * The C lines are what two stacks are compared on (same seed, same lines).
 * Exit status: 0 if every check passed.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <infiniband/verbs.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rdmars_test.h"

static uint64_t rng_state = 1;

static uint32_t rnd(void)
{
	/* xorshift64*: the same sequence on every stack for one seed. */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return (uint32_t)((rng_state * 2685821657736338717ULL) >> 32);
}

static uint32_t crc32(const uint8_t *p, size_t n)
{
	uint32_t c = 0xffffffff;

	while (n--) {
		c ^= *p++;
		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (0xedb88320 & -(c & 1));
	}
	return ~c;
}

#define BUF_LEN (1 << 20)
#define MAX_SGE 4
#define CQ_DEPTH 256

struct side {
	struct ibv_qp *qp;
	struct ibv_cq *cq;
	uint8_t *buf;
	struct ibv_mr *mr;
};

struct env {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_port_attr port;
	union ibv_gid gid;
	int gid_index;
	int roce;
	int atomics;
	int rxe;
	uint32_t max_inline;
	struct side a, b;
};

static const char *wc_name(enum ibv_wc_status s)
{
	return ibv_wc_status_str(s);
}

/* Polls one completion within ~10 s; 0 if one arrived. */
static int poll_one(struct ibv_cq *cq, struct ibv_wc *wc)
{
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		int n = ibv_poll_cq(cq, 1, wc);

		if (n < 0) {
			printf("I ibv_poll_cq returned %d\n", n);
			return -1;
		}
		if (n == 1)
			return 0;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (t.tv_sec - t0.tv_sec > 10)
			return -1;
	}
}

/* Nothing more arrives within ~50 ms. */
static int cq_quiet(struct ibv_cq *cq)
{
	struct ibv_wc wc;

	usleep(50000);
	return ibv_poll_cq(cq, 1, &wc) == 0;
}

static void report(const char *name, int n, const struct ibv_wc *wc, const uint8_t *data,
		   size_t len)
{
	printf("C %s %d op=%d st=%d len=%u imm=%u data=%08x\n", name, n,
	       wc->status == IBV_WC_SUCCESS ? (int)wc->opcode : -1, wc->status,
	       wc->status == IBV_WC_SUCCESS ? wc->byte_len : 0,
	       (wc->wc_flags & IBV_WC_WITH_IMM) ? ntohl(wc->imm_data) : 0,
	       data ? crc32(data, len) : 0);
}

static int qp_to_rts(struct env *e, struct ibv_qp *qp, uint32_t dqpn, uint8_t rnr_retry,
		     uint8_t timeout, uint8_t retry)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT,
		.pkey_index = 0,
		.port_num = 1,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
				   IBV_ACCESS_REMOTE_ATOMIC,
	};

	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				  IBV_QP_ACCESS_FLAGS))
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = dqpn;
	a.rq_psn = 0x100;
	a.max_dest_rd_atomic = 4;
	a.min_rnr_timer = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.dlid = e->port.lid;
	if (e->roce || e->gid_index >= 0) {
		a.ah_attr.is_global = 1;
		a.ah_attr.grh.dgid = e->gid;
		a.ah_attr.grh.sgid_index = e->gid_index < 0 ? 0 : e->gid_index;
		a.ah_attr.grh.hop_limit = 1;
	}
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
				  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
				  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0x100;
	a.timeout = timeout;
	a.retry_cnt = retry;
	a.rnr_retry = rnr_retry;
	a.max_rd_atomic = 4;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				     IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
				     IBV_QP_MAX_QP_RD_ATOMIC);
}

static int side_init(struct env *e, struct side *s, uint32_t sq_depth)
{
	struct ibv_qp_init_attr qa = {
		.qp_type = IBV_QPT_RC,
		.cap = {
			.max_send_wr = sq_depth,
			.max_recv_wr = 128,
			.max_send_sge = MAX_SGE,
			.max_recv_sge = MAX_SGE,
			.max_inline_data = 64,
		},
	};

	s->cq = ibv_create_cq(e->ctx, CQ_DEPTH, NULL, NULL, 0);
	if (!s->cq)
		return -1;
	qa.send_cq = s->cq;
	qa.recv_cq = s->cq;
	s->qp = ibv_create_qp(e->pd, &qa);
	if (!s->qp)
		return -1;
	e->max_inline = qa.cap.max_inline_data;
	if (!s->buf) {
		s->buf = aligned_alloc(4096, BUF_LEN);
		if (!s->buf)
			return -1;
		s->mr = ibv_reg_mr(e->pd, s->buf, BUF_LEN,
				   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
					   IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
		if (!s->mr)
			return -1;
	}
	return 0;
}

static void side_fini(struct side *s)
{
	if (s->qp)
		ibv_destroy_qp(s->qp);
	if (s->cq)
		ibv_destroy_cq(s->cq);
	s->qp = NULL;
	s->cq = NULL;
}

/* A connected pair with the given retry settings. */
static int pair_up(struct env *e, uint32_t sq_depth, uint8_t rnr_retry, uint8_t timeout,
		   uint8_t retry)
{
	if (side_init(e, &e->a, sq_depth) || side_init(e, &e->b, sq_depth))
		return -1;
	if (qp_to_rts(e, e->a.qp, e->b.qp->qp_num, rnr_retry, timeout, retry) ||
	    qp_to_rts(e, e->b.qp, e->a.qp->qp_num, rnr_retry, timeout, retry))
		return -1;
	return 0;
}

static void pair_down(struct env *e)
{
	side_fini(&e->a);
	side_fini(&e->b);
}

/* Splits [off, off+len) of a side's buffer into n SGEs. */
static int make_sges(struct side *s, size_t off, uint32_t len, int n, struct ibv_sge *sg)
{
	uint32_t left = len;

	for (int i = 0; i < n; i++) {
		uint32_t l = (i == n - 1) ? left : (left ? rnd() % (left + 1) : 0);

		sg[i].addr = (uintptr_t)(s->buf + off);
		sg[i].length = l;
		sg[i].lkey = s->mr->lkey;
		off += l;
		left -= l;
	}
	return n;
}

static void fill(uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)rnd();
}

static int post_recv(struct side *s, uint64_t id, size_t off, uint32_t len, int nsge)
{
	struct ibv_sge sg[MAX_SGE];
	struct ibv_recv_wr wr = { .wr_id = id, .sg_list = sg }, *bad;

	wr.num_sge = make_sges(s, off, len, nsge, sg);
	return ibv_post_recv(s->qp, &wr, &bad);
}

static int post_send(struct side *s, uint64_t id, enum ibv_wr_opcode op, size_t off,
		     uint32_t len, int nsge, unsigned int flags, uint32_t imm,
		     uint64_t raddr, uint32_t rkey)
{
	struct ibv_sge sg[MAX_SGE];
	struct ibv_send_wr wr = {
		.wr_id = id,
		.sg_list = sg,
		.opcode = op,
		.send_flags = flags,
		.imm_data = htonl(imm),
	}, *bad;

	wr.num_sge = make_sges(s, off, len, nsge, sg);
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	return ibv_post_send(s->qp, &wr, &bad);
}

/* SEND (imm/inline as asked) of random sizes with random SGE lists. */
static void case_send(struct env *e, const char *name, int iters, uint32_t max_len,
		      enum ibv_wr_opcode op, unsigned int flags)
{
	int ok = 1;

	for (int i = 0; i < iters && ok; i++) {
		uint32_t len = max_len ? rnd() % (max_len + 1) : 0;
		int ssge = (flags & IBV_SEND_INLINE) ? 1 : 1 + rnd() % MAX_SGE;
		int rsge = 1 + rnd() % MAX_SGE;
		uint32_t imm = rnd();
		struct ibv_wc sw, rw;

		fill(e->a.buf, len);
		memset(e->b.buf, 0xee, len + 64);
		if (post_recv(&e->b, 1000 + i, 0, len + (rnd() % 64), rsge) ||
		    post_send(&e->a, i, op, 0, len, ssge, flags | IBV_SEND_SIGNALED, imm, 0, 0)) {
			check(0, "%s %d: post", name, i);
			return;
		}
		if (poll_one(e->a.cq, &sw) || poll_one(e->b.cq, &rw)) {
			check(0, "%s %d: completions arrive", name, i);
			return;
		}
		/* One CQ per side: the receive CQE is b's. */
		report(name, i, &rw, e->b.buf, len);
		ok = sw.status == IBV_WC_SUCCESS && sw.wr_id == (uint64_t)i &&
		     sw.opcode == IBV_WC_SEND && rw.status == IBV_WC_SUCCESS &&
		     rw.wr_id == (uint64_t)(1000 + i) && rw.byte_len == len &&
		     rw.qp_num == e->b.qp->qp_num &&
		     !memcmp(e->a.buf, e->b.buf, len) && e->b.buf[len] == 0xee;
		if (op == IBV_WR_SEND_WITH_IMM)
			ok = ok && rw.opcode == IBV_WC_RECV && (rw.wc_flags & IBV_WC_WITH_IMM) &&
			     ntohl(rw.imm_data) == imm;
		else
			ok = ok && rw.opcode == IBV_WC_RECV && !(rw.wc_flags & IBV_WC_WITH_IMM);
		if (!ok)
			printf("I %s %d: send %s id %llu op %d, recv %s id %llu op %d len %u (want %u)\n",
			       name, i, wc_name(sw.status), (unsigned long long)sw.wr_id, sw.opcode,
			       wc_name(rw.status), (unsigned long long)rw.wr_id, rw.opcode,
			       rw.byte_len, len);
	}
	check(ok, "%s: %d messages, every byte and completion field", name, iters);
}

static void case_write(struct env *e, int iters, int with_imm)
{
	const char *name = with_imm ? "write_imm" : "write";
	int ok = 1;

	for (int i = 0; i < iters && ok; i++) {
		uint32_t len = rnd() % 16384;
		size_t roff = 4096 * (rnd() % 16);
		int nsge = 1 + rnd() % MAX_SGE;
		uint32_t imm = rnd();
		struct ibv_wc sw, rw;

		fill(e->a.buf, len);
		memset(e->b.buf + roff, 0x5a, len + 16);
		if (with_imm && post_recv(&e->b, 2000 + i, 0, 0, 1)) {
			check(0, "%s %d: post_recv", name, i);
			return;
		}
		if (post_send(&e->a, i, with_imm ? IBV_WR_RDMA_WRITE_WITH_IMM : IBV_WR_RDMA_WRITE,
			      0, len, nsge, IBV_SEND_SIGNALED, imm,
			      (uintptr_t)(e->b.buf + roff), e->b.mr->rkey)) {
			check(0, "%s %d: post", name, i);
			return;
		}
		if (poll_one(e->a.cq, &sw)) {
			check(0, "%s %d: completion", name, i);
			return;
		}
		if (with_imm) {
			if (poll_one(e->b.cq, &rw)) {
				check(0, "%s %d: receive completion", name, i);
				return;
			}
			report(name, i, &rw, e->b.buf + roff, len);
			ok = rw.status == IBV_WC_SUCCESS && rw.opcode == IBV_WC_RECV_RDMA_WITH_IMM &&
			     ntohl(rw.imm_data) == imm && rw.byte_len == len;
		} else {
			/*
			 * byte_len of a requester WRITE completion is not defined (only
			 * READ, atomics and receives have one): mlx5 leaves it 0, rxe
			 * reports the length. Compare the data, not that.
			 */
			struct ibv_wc w = sw;

			w.byte_len = 0;
			report(name, i, &w, e->b.buf + roff, len);
		}
		ok = ok && sw.status == IBV_WC_SUCCESS && sw.opcode == IBV_WC_RDMA_WRITE &&
		     !memcmp(e->a.buf, e->b.buf + roff, len) && e->b.buf[roff + len] == 0x5a;
	}
	check(ok, "%s: %d writes land byte for byte", name, iters);
}

static void case_read(struct env *e, int iters)
{
	int ok = 1;

	for (int i = 0; i < iters && ok; i++) {
		uint32_t len = rnd() % 16384;
		size_t roff = 4096 * (rnd() % 16);
		int nsge = 1 + rnd() % MAX_SGE;
		struct ibv_wc sw;

		fill(e->b.buf + roff, len);
		memset(e->a.buf, 0xa5, len + 16);
		if (post_send(&e->a, i, IBV_WR_RDMA_READ, 0, len, nsge, IBV_SEND_SIGNALED, 0,
			      (uintptr_t)(e->b.buf + roff), e->b.mr->rkey) ||
		    poll_one(e->a.cq, &sw)) {
			check(0, "read %d: post and completion", i);
			return;
		}
		report("read", i, &sw, e->a.buf, len);
		ok = sw.status == IBV_WC_SUCCESS && sw.opcode == IBV_WC_RDMA_READ &&
		     sw.byte_len == len && !memcmp(e->a.buf, e->b.buf + roff, len) &&
		     e->a.buf[len] == 0xa5;
	}
	check(ok, "read: %d reads copy byte for byte", iters);
}

static void case_atomics(struct env *e)
{
	uint64_t *remote = (uint64_t *)(e->b.buf + 8192);
	uint64_t *local = (uint64_t *)e->a.buf;
	struct ibv_sge sg = { .addr = (uintptr_t)local, .length = 8, .lkey = e->a.mr->lkey };
	struct ibv_send_wr wr = { .sg_list = &sg, .num_sge = 1, .send_flags = IBV_SEND_SIGNALED },
			   *bad;
	struct ibv_wc wc;
	int ok;

	if (!e->atomics) {
		printf("R ok atomics: not reported by the device (atomic_cap NONE)\n");
		return;
	}
	*remote = 0x1122334455667788ULL;
	*local = 0;
	wr.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
	wr.wr.atomic.remote_addr = (uintptr_t)remote;
	wr.wr.atomic.rkey = e->b.mr->rkey;
	wr.wr.atomic.compare_add = 0x1122334455667788ULL;
	wr.wr.atomic.swap = 0xdeadbeefcafef00dULL;
	ok = !ibv_post_send(e->a.qp, &wr, &bad) && !poll_one(e->a.cq, &wc);
	report("atomic_cs_hit", 0, &wc, (uint8_t *)local, 8);
	check(ok && wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_COMP_SWAP &&
		      *local == 0x1122334455667788ULL && *remote == 0xdeadbeefcafef00dULL,
	      "atomic compare-and-swap (equal): old value returned, new value stored");
	wr.wr.atomic.compare_add = 1;
	wr.wr.atomic.swap = 2;
	ok = !ibv_post_send(e->a.qp, &wr, &bad) && !poll_one(e->a.cq, &wc);
	report("atomic_cs_miss", 0, &wc, (uint8_t *)local, 8);
	check(ok && wc.status == IBV_WC_SUCCESS && *local == 0xdeadbeefcafef00dULL &&
		      *remote == 0xdeadbeefcafef00dULL,
	      "atomic compare-and-swap (different): old value returned, memory unchanged");
	wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
	wr.wr.atomic.compare_add = 0x10;
	*remote = 100;
	for (int i = 0; i < 5; i++) {
		ok = !ibv_post_send(e->a.qp, &wr, &bad) && !poll_one(e->a.cq, &wc);
		report("atomic_fa", i, &wc, (uint8_t *)local, 8);
		if (!ok || wc.status != IBV_WC_SUCCESS || wc.opcode != IBV_WC_FETCH_ADD ||
		    *local != 100 + 0x10ULL * i)
			break;
	}
	check(ok && *remote == 100 + 0x50, "atomic fetch-and-add x5: each returns the old value");
}

/* Runs of unsignaled sends retired by one signaled send; the small SQ wraps. */
/*
 * CQ resize with completions outstanding: they survive, in order (libmlx5 copies them
 * up to the device's RESIZE CQE), and the CQ then holds more than it did.
 */
static void case_resize(struct env *e)
{
	struct ibv_cq *cqs[2] = { e->a.cq, e->b.cq };
	struct ibv_wc wc;
	int ok = 1;

	check(ibv_resize_cq(e->a.cq, 0) == EINVAL, "resize to 0 entries: EINVAL");
	for (int i = 0; i < 12; i++)
		post_recv(&e->b, 500 + i, 0, 256, 1);
	for (int i = 0; i < 12; i++)
		post_send(&e->a, 400 + i, IBV_WR_SEND, 0, 64, 1, IBV_SEND_SIGNALED, 0, 0, 0);
	usleep(200000);
	/* Below the completions it holds (at least 2 by now): EINVAL (mlx5 firmware, rxe). */
	for (int c = 0; c < 2; c++) {
		int before = cqs[c]->cqe;

		check(ibv_resize_cq(cqs[c], 1) == EINVAL && cqs[c]->cqe == before,
		      "resize %s CQ to 1 entry below its outstanding completions: EINVAL, size kept",
		      c ? "receiver" : "sender");
	}
	for (int c = 0; c < 2; c++)
		check(!ibv_resize_cq(cqs[c], 40) && cqs[c]->cqe >= 40,
		      "resize %s CQ to 40 with 12 completions outstanding", c ? "receiver" : "sender");
	for (int i = 0; i < 12 && ok; i++) {
		ok = !poll_one(e->a.cq, &wc) && wc.status == IBV_WC_SUCCESS &&
		     wc.wr_id == (uint64_t)(400 + i) && wc.opcode == IBV_WC_SEND;
		ok = ok && !poll_one(e->b.cq, &wc) && wc.status == IBV_WC_SUCCESS &&
		     wc.wr_id == (uint64_t)(500 + i) && wc.byte_len == 64;
		report("resize_small", i, &wc, NULL, 0);
	}
	check(ok && cq_quiet(e->a.cq) && cq_quiet(e->b.cq),
	      "the 12 completions after the resize, in order, and no more");
	for (int c = 0; c < 2; c++)
		check(!ibv_resize_cq(cqs[c], 1000) && cqs[c]->cqe >= 1000,
		      "resize %s CQ to 1000", c ? "receiver" : "sender");
	for (int i = 0; i < 60; i++)
		post_recv(&e->b, 700 + i, 0, 256, 1);
	for (int i = 0; i < 60; i++)
		post_send(&e->a, 600 + i, IBV_WR_SEND, 0, 32, 1, IBV_SEND_SIGNALED, 0, 0, 0);
	for (int i = 0; i < 60 && ok; i++) {
		ok = !poll_one(e->a.cq, &wc) && wc.status == IBV_WC_SUCCESS &&
		     wc.wr_id == (uint64_t)(600 + i);
		ok = ok && !poll_one(e->b.cq, &wc) && wc.status == IBV_WC_SUCCESS &&
		     wc.wr_id == (uint64_t)(700 + i) && wc.byte_len == 32;
		report("resize_large", i, &wc, NULL, 0);
	}
	check(ok, "60 messages through the resized CQs");
}

static void case_unsignaled_wrap(struct env *e, int runs)
{
	int ok = 1, rounds = 0;

	for (int r = 0; r < runs && ok; r++) {
		int k = 1 + rnd() % 7;
		struct ibv_wc wc;

		for (int j = 0; j < k; j++)
			if (post_recv(&e->b, 3000 + j, 0, 256, 1))
				ok = 0;
		for (int j = 0; j < k && ok; j++)
			if (post_send(&e->a, 5000 + j, IBV_WR_SEND, 4096 + 256 * j, 1 + rnd() % 200,
				      1, j == k - 1 ? IBV_SEND_SIGNALED : 0, 0, 0, 0))
				ok = 0;
		/* Exactly one send completion, the signaled one. */
		ok = ok && !poll_one(e->a.cq, &wc) && wc.status == IBV_WC_SUCCESS &&
		     wc.wr_id == (uint64_t)(5000 + k - 1);
		for (int j = 0; j < k && ok; j++)
			ok = !poll_one(e->b.cq, &wc) && wc.status == IBV_WC_SUCCESS &&
			     wc.wr_id == (uint64_t)(3000 + j);
		if (ok && r == runs - 1)
			ok = cq_quiet(e->a.cq);
		rounds += k;
	}
	check(ok, "unsignaled runs retired by the signaled WQE; SQ of 16 wrapped (%d sends)",
	      rounds);
}

/*
 * One completion with status `want`; `alt` (if not `want`) is also taken, for a
 * documented divergence of the stack under test from upstream mlx5 hardware.
 */
static void expect_status2(struct side *s, const char *name, enum ibv_wc_status want,
			   enum ibv_wc_status alt, uint64_t id)
{
	struct ibv_wc wc = { 0 };
	int got = !poll_one(s->cq, &wc);

	report(name, 0, &wc, NULL, 0);
	check(got && (wc.status == want || wc.status == alt) && wc.wr_id == id,
	      "%s: %s (got %s, wr_id %llu)", name, wc_name(want),
	      got ? wc_name(wc.status) : "nothing", (unsigned long long)wc.wr_id);
}

static void expect_status(struct side *s, const char *name, enum ibv_wc_status want,
			  uint64_t id)
{
	expect_status2(s, name, want, want, id);
}

static enum ibv_qp_state qp_state(struct ibv_qp *qp)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;

	if (ibv_query_qp(qp, &a, IBV_QP_STATE, &ia))
		return -1;
	return a.qp_state;
}

int main(int argc, char **argv)
{
	const char *dev_name = NULL;
	struct ibv_device **list;
	struct ibv_device_attr da;
	struct env e = { .gid_index = -1 };
	int iters = 200, opt, n;

	while ((opt = getopt(argc, argv, "d:g:s:n:")) != -1) {
		switch (opt) {
		case 'd': dev_name = optarg; break;
		case 'g': e.gid_index = atoi(optarg); break;
		case 's': rng_state = strtoull(optarg, NULL, 0) | 1; break;
		case 'n': iters = atoi(optarg); break;
		default: fprintf(stderr, "usage: %s -d DEV [-g GIDX] [-s SEED] [-n N]\n", argv[0]);
			return 2;
		}
	}
	list = ibv_get_device_list(&n);
	for (int i = 0; list && i < n; i++)
		if (!dev_name || !strcmp(ibv_get_device_name(list[i]), dev_name))
			e.ctx = ibv_open_device(list[i]);
	check(e.ctx != NULL, "open %s", dev_name ? dev_name : "(first)");
	if (!e.ctx)
		return 1;
	if (ibv_query_device(e.ctx, &da) || ibv_query_port(e.ctx, 1, &e.port))
		return 1;
	e.roce = e.port.link_layer == IBV_LINK_LAYER_ETHERNET;
	e.rxe = !strncmp(ibv_get_device_name(e.ctx->device), "rxe", 3);
	e.atomics = da.atomic_cap != IBV_ATOMIC_NONE;
	if (e.roce && e.gid_index < 0)
		e.gid_index = 0;
	if (e.gid_index >= 0 && ibv_query_gid(e.ctx, 1, e.gid_index, &e.gid))
		return 1;
	e.pd = ibv_alloc_pd(e.ctx);
	check(e.pd != NULL, "alloc PD");

	/* Good traffic on one pair. */
	check(!pair_up(&e, 64, 7, 14, 7), "two RC QPs connected to each other (RTS)");
	case_send(&e, "send", iters, 8192, IBV_WR_SEND, 0);
	case_send(&e, "send_imm", iters / 4, 4096, IBV_WR_SEND_WITH_IMM, 0);
	/* The same sizes on every stack: at most 60 bytes (rxe offers 64, mlx5 more). */
	case_send(&e, "send_inline", iters / 4, e.max_inline < 60 ? e.max_inline : 60, IBV_WR_SEND,
		  IBV_SEND_INLINE);
	case_send(&e, "send_zero", 4, 0, IBV_WR_SEND, 0);
	case_write(&e, iters / 2, 0);
	case_write(&e, iters / 4, 1);
	case_read(&e, iters / 2);
	case_atomics(&e);
	pair_down(&e);

	check(!pair_up(&e, 64, 7, 14, 7), "pair for the CQ resize");
	case_resize(&e);
	pair_down(&e);

	check(!pair_up(&e, 16, 7, 14, 7), "pair with a 16-entry send queue");
	case_unsignaled_wrap(&e, iters / 2);
	pair_down(&e);

	/* Bad lkey: local protection error, then the QP is in ERR and flushes. */
	check(!pair_up(&e, 64, 7, 14, 7), "pair for the bad-lkey case");
	{
		struct ibv_sge sg = { .addr = (uintptr_t)e.a.buf, .length = 64,
				      .lkey = e.a.mr->lkey ^ 0x80 };
		struct ibv_send_wr wr = { .wr_id = 7, .sg_list = &sg, .num_sge = 1,
					  .opcode = IBV_WR_SEND,
					  .send_flags = IBV_SEND_SIGNALED }, *bad;

		post_recv(&e.b, 70, 0, 4096, 1);
		check(!ibv_post_send(e.a.qp, &wr, &bad), "post a SEND with a bad lkey");
		/*
		 * mlx5 reports the faulting WQE with syndrome 0x04 (local protection);
		 * rdma_rxe moves the QP to ERR first and reports it flushed.
		 */
		expect_status2(&e.a, "bad_lkey", IBV_WC_LOC_PROT_ERR,
			       e.rxe ? IBV_WC_WR_FLUSH_ERR : IBV_WC_LOC_PROT_ERR, 7);
		wr.wr_id = 8;
		sg.lkey = e.a.mr->lkey;
		check(!ibv_post_send(e.a.qp, &wr, &bad), "post after the error");
		expect_status(&e.a, "bad_lkey_then", IBV_WC_WR_FLUSH_ERR, 8);
		check(qp_state(e.a.qp) == IBV_QPS_ERR, "the requester QP is in ERR");
	}
	pair_down(&e);

	/* Bad rkey: remote access error at the requester. */
	check(!pair_up(&e, 64, 7, 14, 7), "pair for the bad-rkey case");
	post_send(&e.a, 9, IBV_WR_RDMA_WRITE, 0, 128, 1, IBV_SEND_SIGNALED, 0,
		  (uintptr_t)e.b.buf, e.b.mr->rkey ^ 0x80);
	expect_status(&e.a, "bad_rkey", IBV_WC_REM_ACCESS_ERR, 9);
	check(qp_state(e.a.qp) == IBV_QPS_ERR, "the requester QP is in ERR after remote access");
	pair_down(&e);

	/* No receive posted and rnr_retry 0: RNR retry exceeded. */
	check(!pair_up(&e, 64, 0, 14, 7), "pair with rnr_retry 0");
	post_send(&e.a, 10, IBV_WR_SEND, 0, 32, 1, IBV_SEND_SIGNALED, 0, 0, 0);
	expect_status(&e.a, "rnr", IBV_WC_RNR_RETRY_EXC_ERR, 10);
	pair_down(&e);

	/* The destination QP is gone: transport retries exceeded. */
	check(!pair_up(&e, 64, 7, 8, 1), "pair with timeout 8, retry_cnt 1");
	ibv_destroy_qp(e.b.qp);
	e.b.qp = NULL;
	post_send(&e.a, 11, IBV_WR_SEND, 0, 32, 1, IBV_SEND_SIGNALED, 0, 0, 0);
	expect_status(&e.a, "dest_gone", IBV_WC_RETRY_EXC_ERR, 11);
	pair_down(&e);

	/* Receives outstanding, QP to ERR: every one flushed, in order. */
	check(!pair_up(&e, 64, 7, 14, 7), "pair for the flush case");
	{
		struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };
		struct ibv_wc wc;
		int ok = 1;

		for (int i = 0; i < 8; i++)
			post_recv(&e.b, 100 + i, 0, 512, 1);
		check(!ibv_modify_qp(e.b.qp, &a, IBV_QP_STATE), "modify the receiver to ERR");
		for (int i = 0; i < 8 && ok; i++) {
			int got = !poll_one(e.b.cq, &wc);

			ok = got && wc.status == IBV_WC_WR_FLUSH_ERR && wc.wr_id == (uint64_t)(100 + i);
			report("flush", i, &wc, NULL, 0);
			if (!ok)
				printf("I flush %d: %s, status %s, wr_id %llu\n", i,
				       got ? "a completion" : "nothing within 10 s",
				       wc_name(wc.status), (unsigned long long)wc.wr_id);
		}
		check(ok, "8 outstanding receives flushed in order (IBV_WC_WR_FLUSH_ERR)");
	}
	pair_down(&e);

	/* Destroy while sends are in flight: both destroys succeed. */
	check(!pair_up(&e, 64, 7, 14, 7), "pair for destroy-in-flight");
	for (int i = 0; i < 32; i++)
		post_recv(&e.b, 200 + i, 0, 8192, 1);
	for (int i = 0; i < 32; i++)
		post_send(&e.a, 300 + i, IBV_WR_SEND, 0, 8192, 1, IBV_SEND_SIGNALED, 0, 0, 0);
	check(ibv_destroy_qp(e.a.qp) == 0, "destroy the sending QP with sends in flight");
	e.a.qp = NULL;
	check(ibv_destroy_qp(e.b.qp) == 0, "destroy the receiving QP");
	e.b.qp = NULL;
	pair_down(&e);

	ibv_dereg_mr(e.a.mr);
	ibv_dereg_mr(e.b.mr);
	free(e.a.buf);
	free(e.b.buf);
	check(ibv_dealloc_pd(e.pd) == 0, "dealloc PD");
	ibv_close_device(e.ctx);
	ibv_free_device_list(list);
	return failures ? 1 : 0;
}
