/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rdmars_test.h: what the project's libibverbs test programs share (static
 * inline, one header, no library): the R-line check, opening a device by
 * name with its port 1 and GID, an RC QP through INIT/RTR/RTS to a QP of the
 * same port (loopback), and polling one completion with a deadline.
 *
 * The VM suites (the scripts in tests/vm) compare these programs' output lines
 * exactly; the helpers print what the programs printed before they were
 * shared, nothing more.
 *
 * A program includes it as "rdmars_test.h" (the directory of the .c file is
 * on the quote include path: tools/vm.sh builds each program of this directory with
 * plain gcc and rebuilds them when this header changes).
 */
#ifndef RDMARS_TEST_H
#define RDMARS_TEST_H

#include <errno.h>
#include <infiniband/verbs.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* Checks that failed, and those that passed. */
static int failures;
static int passes;

/*
 * One check as an R line (tests/vm/lib.sh t_import): "R ok <what>", or
 * "R fail <what>: errno N (text)" with the errno at the time of the call;
 * flushed, so that the lines stand in order with a child's or a crash's.
 */
static inline void __attribute__((format(printf, 2, 3))) check(int cond, const char *fmt, ...)
{
	va_list ap;
	char buf[256];

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (cond) {
		printf("R ok %s\n", buf);
		passes++;
	} else {
		printf("R fail %s: errno %d (%s)\n", buf, errno, strerror(errno));
		failures++;
	}
	fflush(stdout);
}

/*
 * Opens the device named dev_name (NULL: every device in turn, the last one
 * stays; the device list is freed again) and checks it ("open <name>"); queries port 1 and the GID at
 * *gid_index (-1: none on InfiniBand, index 0 on Ethernet). 0, or -1 if any
 * step failed.
 */
static inline int rt_open(const char *dev_name, struct ibv_context **ctx,
			  struct ibv_port_attr *port, union ibv_gid *gid, int *gid_index)
{
	struct ibv_device **list;
	int n, i;

	list = ibv_get_device_list(&n);
	for (i = 0; list && i < n; i++)
		if (!dev_name || !strcmp(ibv_get_device_name(list[i]), dev_name))
			*ctx = ibv_open_device(list[i]);
	if (list)
		ibv_free_device_list(list);
	check(*ctx != NULL, "open %s", dev_name ? dev_name : "(first)");
	if (!*ctx || ibv_query_port(*ctx, 1, port))
		return -1;
	if (port->link_layer == IBV_LINK_LAYER_ETHERNET && *gid_index < 0)
		*gid_index = 0;
	if (*gid_index >= 0 && ibv_query_gid(*ctx, 1, *gid_index, gid))
		return -1;
	return 0;
}

/*
 * An RC QP through INIT (port 1, P_Key index 0, remote access `access`),
 * RTR and RTS to QP dqpn on the same port: path MTU 1024, one outstanding
 * RDMA READ/atomic each way, both PSNs `psn`, RNR timer 1, timeout 14,
 * seven retries of each kind; a GRH to *gid when gid_index is not -1.
 * 0, or -1 with errno from the failing ibv_modify_qp().
 */
static inline int rt_qp_to_rts(struct ibv_qp *qp, uint32_t dqpn, const struct ibv_port_attr *port,
			       const union ibv_gid *gid, int gid_index, unsigned int access,
			       uint32_t psn)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT,
		.port_num = 1,
		.qp_access_flags = access,
	};

	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				  IBV_QP_ACCESS_FLAGS))
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = dqpn;
	a.rq_psn = psn;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.dlid = port->lid;
	if (gid_index >= 0) {
		a.ah_attr.is_global = 1;
		a.ah_attr.grh.dgid = *gid;
		a.ah_attr.grh.sgid_index = gid_index;
		a.ah_attr.grh.hop_limit = 1;
	}
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
				  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
				  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = psn;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				     IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
				     IBV_QP_MAX_QP_RD_ATOMIC);
}

/*
 * Polls cq for one completion for up to `seconds` (busy, as the programs
 * did): 1 with *wc filled, 0 when the time ran out, or the negative value of
 * ibv_poll_cq().
 */
static inline int rt_poll(struct ibv_cq *cq, struct ibv_wc *wc, int seconds)
{
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		int n = ibv_poll_cq(cq, 1, wc);

		if (n != 0)
			return n;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (t.tv_sec - t0.tv_sec > seconds)
			return 0;
	}
}

#endif /* RDMARS_TEST_H */
