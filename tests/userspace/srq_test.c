// SPDX-License-Identifier: GPL-2.0
/*
 * srq_test: shared receive queues through libibverbs, for rdma-rs and the
 * upstream peer (rdma_rxe), compared line by line by tests/vm/traffic.sh.
 *
 * An SRQ is created, queried, armed; bad sizes are refused; two RC QPs
 * receive from it (four QPs on one device: two senders, two receivers on the
 * SRQ), the receives complete with the SRQ's wr_ids and the bytes sent, the
 * consumption that leaves fewer WQEs than the armed limit raises
 * IBV_EVENT_SRQ_LIMIT_REACHED once on the async fd (and disarms the SRQ);
 * destroying the SRQ or its PD while QPs use it is EBUSY; after the QPs are
 * gone the SRQ is destroyed. An empty SRQ makes an RC sender retry on RNR
 * until a receive is posted. With -w FILE it prints "I holding <pid>" once the
 * QPs are on the SRQ and waits (up to 60 s) until FILE exists, so that a
 * script can look at `rdma res show srq` meanwhile.
 *
 * Output, one line each (tests/vm/lib.sh t_import):
 *   R ok|fail <description>       a check
 *   C <case> <value>              a fact compared with the other stack
 *   I <key> <value>               informational (device-specific)
 */
#include <errno.h>
#include <infiniband/verbs.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rdmars_test.h"

#define BUF 4096
#define NRECV 6
#define LIMIT 4

struct env {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_srq *srq;
	struct ibv_port_attr port;
	union ibv_gid gid;
	int gid_index;
	uint8_t *buf;
	struct ibv_mr *mr;
};

static int to_rts(struct env *e, struct ibv_qp *qp, uint32_t dqpn)
{
	return rt_qp_to_rts(qp, dqpn, &e->port, &e->gid, e->gid_index, 0, 0x100);
}

static struct ibv_qp *rc_qp(struct env *e, struct ibv_srq *srq)
{
	struct ibv_qp_init_attr qa = {
		.send_cq = e->cq,
		.recv_cq = e->cq,
		.srq = srq,
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 16, .max_send_sge = 1,
			 .max_recv_wr = srq ? 0 : 16, .max_recv_sge = srq ? 0 : 1 },
	};

	return ibv_create_qp(e->pd, &qa);
}

/* Polls one completion within ~10 s. */
static int poll_one(struct ibv_cq *cq, struct ibv_wc *wc)
{
	return rt_poll(cq, wc, 10) == 1 ? 0 : -1;
}

static int post_srq(struct env *e, uint64_t id, size_t off)
{
	struct ibv_sge sg = { .addr = (uintptr_t)e->buf + off, .length = 256,
			      .lkey = e->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = id, .sg_list = &sg, .num_sge = 1 }, *bad;

	return ibv_post_srq_recv(e->srq, &wr, &bad);
}

static int post_send(struct env *e, struct ibv_qp *qp, uint64_t id, size_t off, uint32_t len)
{
	struct ibv_sge sg = { .addr = (uintptr_t)e->buf + off, .length = len,
			      .lkey = e->mr->lkey };
	struct ibv_send_wr wr = { .wr_id = id, .sg_list = &sg, .num_sge = 1,
				  .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED },
			   *bad;

	return ibv_post_send(qp, &wr, &bad);
}

/* The next async event within ~2 s: its type, or -1. */
static int async_event(struct env *e, struct ibv_async_event *ev)
{
	struct pollfd p = { .fd = e->ctx->async_fd, .events = POLLIN };

	if (poll(&p, 1, 2000) != 1)
		return -1;
	if (ibv_get_async_event(e->ctx, ev))
		return -1;
	return ev->event_type;
}

static void create_errno(struct env *e, const char *name, uint32_t wr, uint32_t sge)
{
	struct ibv_srq_init_attr a = { .attr = { .max_wr = wr, .max_sge = sge } };
	struct ibv_srq *s;

	errno = 0;
	s = ibv_create_srq(e->pd, &a);
	printf("C %s %d\n", name, s ? 0 : errno);
	check(!s && errno == EINVAL, "%s: EINVAL", name);
	if (s)
		ibv_destroy_srq(s);
}

int main(int argc, char **argv)
{
	const char *dev_name = NULL, *wait_file = NULL;
	struct env e = { .gid_index = -1 };
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 16, .max_sge = 1 } };
	struct ibv_srq_attr q;
	struct ibv_qp *s1, *s2, *r1, *r2;
	struct ibv_async_event ev;
	struct ibv_wc wc;
	int opt, n, i, got[2] = { 0, 0 }, ids = 0, data_ok = 1, t;

	while ((opt = getopt(argc, argv, "d:g:w:")) != -1) {
		switch (opt) {
		case 'd': dev_name = optarg; break;
		case 'w': wait_file = optarg; break;
		case 'g': e.gid_index = atoi(optarg); break;
		default: fprintf(stderr, "usage: %s -d DEV [-g GIDX] [-w FILE]\n", argv[0]);
			return 2;
		}
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (rt_open(dev_name, &e.ctx, &e.port, &e.gid, &e.gid_index))
		return 1;
	e.pd = ibv_alloc_pd(e.ctx);
	e.cq = ibv_create_cq(e.ctx, 64, NULL, NULL, 0);
	e.buf = aligned_alloc(4096, BUF);
	e.mr = e.buf ? ibv_reg_mr(e.pd, e.buf, BUF, IBV_ACCESS_LOCAL_WRITE) : NULL;
	check(e.pd && e.cq && e.mr, "PD, CQ and MR");
	if (!e.pd || !e.cq || !e.mr)
		return 1;

	/* Create and query. */
	e.srq = ibv_create_srq(e.pd, &sa);
	check(e.srq != NULL, "create an SRQ (max_wr 16, max_sge 1)");
	if (!e.srq)
		return 1;
	check(sa.attr.max_wr >= 16 && sa.attr.max_sge >= 1, "the SRQ holds what was asked");
	printf("I srq_max_wr %u\nI srq_max_sge %u\n", sa.attr.max_wr, sa.attr.max_sge);
	check(!ibv_query_srq(e.srq, &q), "query the SRQ");
	printf("C query_limit %u\n", q.srq_limit);
	check(q.srq_limit == 0 && q.max_wr >= 16, "query: limit 0, max_wr at least 16");

	/* Bad sizes (the driver's or the provider's checks: EINVAL on both stacks). */
	create_errno(&e, "create_max_wr_1g", 1u << 30, 1);
	create_errno(&e, "create_max_sge_1000", 16, 1000);

	/* The limit. */
	q.srq_limit = 1u << 20;
	errno = 0;
	n = ibv_modify_srq(e.srq, &q, IBV_SRQ_LIMIT);
	printf("C modify_limit_too_big %d\n", n);
	check(n == EINVAL, "modify: a limit above the SRQ's size is EINVAL");
	q.srq_limit = LIMIT;
	check(!ibv_modify_srq(e.srq, &q, IBV_SRQ_LIMIT), "arm the limit at %d", LIMIT);
	memset(&q, 0, sizeof(q));
	check(!ibv_query_srq(e.srq, &q), "query after arming");
	printf("C query_armed %u\n", q.srq_limit);
	check(q.srq_limit == LIMIT, "query reads the armed limit back");

	/* Two senders, two receivers on the SRQ. */
	s1 = rc_qp(&e, NULL);
	s2 = rc_qp(&e, NULL);
	r1 = rc_qp(&e, e.srq);
	r2 = rc_qp(&e, e.srq);
	check(s1 && s2 && r1 && r2, "two RC QPs on the SRQ, two senders");
	if (!s1 || !s2 || !r1 || !r2)
		return 1;
	check(!to_rts(&e, s1, r1->qp_num) && !to_rts(&e, r1, s1->qp_num) &&
		      !to_rts(&e, s2, r2->qp_num) && !to_rts(&e, r2, s2->qp_num),
	      "connected (RTS)");

	if (wait_file) {
		printf("I holding %d\n", (int)getpid());
		for (i = 0; i < 600 && access(wait_file, F_OK); i++)
			usleep(100000);
	}

	/* EBUSY while QPs use the SRQ, and for its PD. */
	n = ibv_destroy_srq(e.srq);
	printf("C destroy_srq_busy %d\n", n);
	check(n == EBUSY, "destroy the SRQ while QPs use it: EBUSY");
	n = ibv_dealloc_pd(e.pd);
	printf("C dealloc_pd_busy %d\n", n);
	check(n == EBUSY, "dealloc the PD of the SRQ: EBUSY");

	for (i = 0; i < NRECV; i++)
		check(!post_srq(&e, 100 + i, 1024 + 256 * i), "post SRQ receive %d", i);
	for (i = 0; i < 1024; i++)
		e.buf[i] = (uint8_t)(i * 7 + 3);
	/* 3 sends: 6 -> 3 posted, below the limit 4 once the third is consumed. */
	check(!post_send(&e, s1, 1, 0, 200) && !post_send(&e, s2, 2, 200, 200) &&
		      !post_send(&e, s1, 3, 400, 200),
	      "three SENDs through both pairs");
	for (i = 0; i < 6; i++) {
		if (poll_one(e.cq, &wc)) {
			check(0, "completion %d", i);
			break;
		}
		if (wc.opcode & IBV_WC_RECV) {
			size_t off = (size_t)(wc.wr_id - 100) * 256 + 1024;
			size_t src = (wc.qp_num == r1->qp_num) ? (got[0] ? 400 : 0) : 200;

			if (wc.status != IBV_WC_SUCCESS || wc.byte_len != 200 ||
			    wc.wr_id < 100 || wc.wr_id >= 100 + NRECV)
				data_ok = 0;
			else if (memcmp(e.buf + off, e.buf + src, 200))
				data_ok = 0;
			ids |= 1 << (wc.wr_id - 100);
			got[wc.qp_num == r1->qp_num ? 0 : 1]++;
		} else if (wc.status != IBV_WC_SUCCESS) {
			data_ok = 0;
		}
	}
	printf("C recvs_r1 %d\nC recvs_r2 %d\nC recv_ids %#x\n", got[0], got[1], ids);
	check(got[0] == 2 && got[1] == 1, "the receives complete on the QPs they arrived on");
	check(ids == 0x7, "the SRQ's receives are consumed in posting order (wr_ids 100..102)");
	check(data_ok, "every completion succeeded with the bytes sent");

	t = async_event(&e, &ev);
	printf("C limit_event %d\n", t);
	check(t == IBV_EVENT_SRQ_LIMIT_REACHED && ev.element.srq == e.srq,
	      "IBV_EVENT_SRQ_LIMIT_REACHED for the SRQ on the async fd");
	if (t >= 0)
		ibv_ack_async_event(&ev);
	memset(&q, 0xff, sizeof(q));
	check(!ibv_query_srq(e.srq, &q), "query after the limit event");
	printf("C query_after_event %u\n", q.srq_limit);
	check(q.srq_limit == 0, "the limit event disarmed the SRQ");
	/* One more consumption: no second event. */
	check(!post_send(&e, s2, 4, 600, 100), "a fourth SEND");
	for (i = 0; i < 2 && !poll_one(e.cq, &wc); i++)
		;
	t = async_event(&e, &ev);
	printf("C second_event %d\n", t);
	check(t == -1, "no second limit event without re-arming");
	if (t >= 0)
		ibv_ack_async_event(&ev);

	/* Drain the SRQ (2 left), then an empty SRQ: RNR until a receive comes. */
	check(!post_send(&e, s1, 5, 0, 10) && !post_send(&e, s1, 6, 0, 10), "two more SENDs");
	for (i = 0; i < 4 && !poll_one(e.cq, &wc); i++)
		;
	check(!post_send(&e, s2, 7, 0, 32), "a SEND to an empty SRQ");
	usleep(200000);
	n = ibv_poll_cq(e.cq, 1, &wc);
	printf("C empty_srq_polled %d\n", n);
	check(n == 0, "nothing completes while the SRQ is empty (RNR retries)");
	check(!post_srq(&e, 200, 3072), "post one receive");
	for (i = 0, got[0] = 0; i < 2 && !poll_one(e.cq, &wc); i++)
		if (wc.status == IBV_WC_SUCCESS && wc.wr_id == (wc.opcode & IBV_WC_RECV ? 200 : 7))
			got[0]++;
	printf("C after_rnr %d\n", got[0]);
	check(got[0] == 2, "the retried SEND completes on both sides");

	/* Teardown in dependency order. */
	check(!ibv_destroy_qp(r1) && !ibv_destroy_qp(r2), "destroy the SRQ's QPs");
	check(!ibv_destroy_qp(s1) && !ibv_destroy_qp(s2), "destroy the senders");
	n = ibv_destroy_srq(e.srq);
	printf("C destroy_srq %d\n", n);
	check(n == 0, "destroy the SRQ once no QP uses it");
	check(!ibv_dereg_mr(e.mr) && !ibv_destroy_cq(e.cq) && !ibv_dealloc_pd(e.pd),
	      "destroy MR, CQ, PD");
	check(!ibv_close_device(e.ctx), "close");
	free(e.buf);
	return failures ? 1 : 0;
}
