// SPDX-License-Identifier: GPL-2.0
/*
 * counter_traffic: known RDMA traffic for the per-QP counter suite
 * (tests/vm/counters.sh, vm_qp_counters).
 *
 * Two connected RC QPs on one device (a requester and a responder, one CQ),
 * then, in steps driven by lines on stdin so that the shell can bind, unbind
 * and read counters while the QPs exist:
 *   "Q <requester qpn> <responder qpn>"  printed once both are in RTS;
 *   with -x N, N more RC QPs left in RESET (for binding past the device's
 *   counter sets), "X <qpn> ..." after the Q line;
 *   on each input line "w N" / "r N": N RDMA WRITEs / READs of 64 bytes from
 *   the requester to the responder's MR, each completed with success, then
 *   "D w|r N" (the responder's counters, rx_write_requests and
 *   rx_read_requests, count exactly N);
 *   "q" (or end of input): everything destroyed, "E ok", exit 0.
 * Any failure prints "E fail <what>" and exits 1.
 */
#include <errno.h>
#include <infiniband/verbs.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rdmars_test.h"

static struct ibv_port_attr port;
static union ibv_gid gid;
static int gid_index = -1;

static void die(const char *what)
{
	printf("E fail %s: errno %d (%s)\n", what, errno, strerror(errno));
	exit(1);
}

static int to_rts(struct ibv_qp *qp, uint32_t dqpn)
{
	return rt_qp_to_rts(qp, dqpn, &port, &gid, gid_index,
			    IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ, 0x200);
}

/* One signalled RDMA op on the requester, waited for: its status or -1. */
static int one(struct ibv_qp *qp, struct ibv_cq *cq, enum ibv_wr_opcode op, void *l,
	       uint32_t lkey, void *r, uint32_t rkey)
{
	struct ibv_sge sg = { .addr = (uintptr_t)l, .length = 64, .lkey = lkey };
	struct ibv_send_wr wr = { .wr_id = 1, .sg_list = &sg, .num_sge = 1, .opcode = op,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct timespec t0, t;
	struct ibv_wc wc;

	wr.wr.rdma.remote_addr = (uintptr_t)r;
	wr.wr.rdma.rkey = rkey;
	if (ibv_post_send(qp, &wr, &bad))
		return -1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		int n = ibv_poll_cq(cq, 1, &wc);

		if (n < 0)
			return -1;
		if (n == 1)
			return wc.status;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (t.tv_sec - t0.tv_sec > 10)
			return -1;
	}
}

int main(int argc, char **argv)
{
	const char *dev_name = NULL;
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	struct ibv_qp_init_attr qa = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 8, .max_send_sge = 1, .max_recv_wr = 8,
			 .max_recv_sge = 1 },
	};
	struct ibv_qp *req, *resp, *extra[64];
	int nextra = 0;
	struct ibv_cq *cq;
	struct ibv_pd *pd;
	struct ibv_mr *lmr, *rmr;
	char line[64];
	uint8_t *lb, *rb;
	int opt, i;

	while ((opt = getopt(argc, argv, "d:g:x:")) != -1) {
		switch (opt) {
		case 'd': dev_name = optarg; break;
		case 'g': gid_index = atoi(optarg); break;
		case 'x': nextra = atoi(optarg); break;
		default: return 2;
		}
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	list = ibv_get_device_list(NULL);
	for (i = 0; list && list[i]; i++)
		if (!dev_name || !strcmp(ibv_get_device_name(list[i]), dev_name))
			ctx = ibv_open_device(list[i]);
	if (!ctx)
		die("open device");
	if (ibv_query_port(ctx, 1, &port))
		die("query port");
	if (gid_index >= 0 && ibv_query_gid(ctx, 1, gid_index, &gid))
		die("query gid");
	pd = ibv_alloc_pd(ctx);
	cq = pd ? ibv_create_cq(ctx, 16, NULL, NULL, 0) : NULL;
	if (!cq)
		die("pd/cq");
	lb = aligned_alloc(4096, 4096);
	rb = aligned_alloc(4096, 4096);
	if (!lb || !rb)
		die("buffers");
	memset(lb, 0x5a, 4096);
	memset(rb, 0, 4096);
	lmr = ibv_reg_mr(pd, lb, 4096, IBV_ACCESS_LOCAL_WRITE);
	rmr = ibv_reg_mr(pd, rb, 4096, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				       IBV_ACCESS_REMOTE_READ);
	if (!lmr || !rmr)
		die("reg_mr");
	qa.send_cq = qa.recv_cq = cq;
	req = ibv_create_qp(pd, &qa);
	resp = ibv_create_qp(pd, &qa);
	if (!req || !resp)
		die("create_qp");
	if (to_rts(req, resp->qp_num) || to_rts(resp, req->qp_num))
		die("to rts");
	printf("Q %u %u\n", req->qp_num, resp->qp_num);
	if (nextra < 0 || nextra > 64)
		die("-x");
	for (i = 0; i < nextra; i++) {
		extra[i] = ibv_create_qp(pd, &qa);
		if (!extra[i])
			die("create extra qp");
	}
	if (nextra) {
		printf("X");
		for (i = 0; i < nextra; i++)
			printf(" %u", extra[i]->qp_num);
		printf("\n");
	}
	while (fgets(line, sizeof(line), stdin)) {
		char k = line[0];
		int n = atoi(line + 1);

		if (k == 'q')
			break;
		if (k != 'w' && k != 'r')
			continue;
		for (i = 0; i < n; i++) {
			int st = one(req, cq, k == 'w' ? IBV_WR_RDMA_WRITE : IBV_WR_RDMA_READ, lb,
				     lmr->lkey, rb, rmr->rkey);

			if (st != IBV_WC_SUCCESS) {
				printf("E fail %s %d: status %d\n", k == 'w' ? "write" : "read", i,
				       st);
				return 1;
			}
		}
		printf("D %c %d\n", k, n);
	}
	for (i = 0; i < nextra; i++)
		if (ibv_destroy_qp(extra[i]))
			die("destroy extra qp");
	if (ibv_destroy_qp(req) || ibv_destroy_qp(resp) || ibv_dereg_mr(lmr) ||
	    ibv_dereg_mr(rmr) || ibv_destroy_cq(cq) || ibv_dealloc_pd(pd) ||
	    ibv_close_device(ctx))
		die("teardown");
	ibv_free_device_list(list);
	free(lb);
	free(rb);
	printf("E ok\n");
	return 0;
}
