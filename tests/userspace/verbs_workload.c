// SPDX-License-Identifier: GPL-2.0
/*
 * verbs_workload: a libibverbs workload for rdma-rs and the upstream peer.
 *
 * Opens a device, allocates PDs, registers MRs from 4 KiB up to a maximum
 * size with several access-flag sets, creates CQs of several sizes and RC
 * and UD QPs, moves the QPs RST->INIT->RTR->RTS with real attributes (a
 * GID-based address vector on RoCE), queries them back, checks that
 * destroying an object that still has users fails with EBUSY, and destroys
 * everything in the order chosen by -o. With -x it exits without destroying
 * anything (the kernel must clean up at close). With -w FILE it prints
 * "I holding <pid>" once everything exists and waits (up to 120 s) until
 * FILE exists, so that a script can look at `rdma res` meanwhile. -k sets the
 * largest MR in KiB instead of MiB, -c caps the CQ sizes (for a device that
 * cannot translate many scattered pages per object; the emulated PCI function
 * keeps such page lists itself since the data-path work: Documentation/pcifn.md).
 *
 * Output, one line each, for the VM harness (tests/vm/lib.sh t_import):
 *   R ok <description>
 *   R fail <description>: <why>
 *   I <key> <value>          facts for comparing stacks (errnos, limits)
 * Exit status: 0 if every check passed.
 */
#include <errno.h>
#include <infiniband/verbs.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "rdmars_test.h"

/* An ibv_destroy_* / ibv_dealloc_* / ibv_dereg_* call returns an errno value. */
static void check_ret(int ret, int want, const char *what)
{
	if (ret == want) {
		printf("R ok %s returns %d\n", what, want);
	} else {
		printf("R fail %s: returned %d (%s), expected %d\n", what, ret,
		       strerror(ret), want);
		failures++;
	}
}

#define MAX_PD 4
#define MAX_MR 32
#define MAX_CQ 4

struct ctx {
	struct ibv_context *ctx;
	struct ibv_port_attr port;
	union ibv_gid gid;
	int roce;
	struct ibv_pd *pd[MAX_PD];
	struct ibv_mr *mr[MAX_MR];
	void *buf[MAX_MR];
	size_t len[MAX_MR];
	int nmr;
	struct ibv_cq *cq[MAX_CQ];
	struct ibv_qp *rc, *ud;
};

static void setup_mrs(struct ctx *c, size_t max_len)
{
	static const int access[] = {
		IBV_ACCESS_LOCAL_WRITE,
		IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE,
		IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_ATOMIC,
		0,
	};
	size_t len;
	int i = 0;

	for (len = 4096; len <= max_len && c->nmr < MAX_MR; len *= 16, i++) {
		int a = access[i % 4];
		void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (p == MAP_FAILED) {
			check(0, "mmap %zu bytes", len);
			continue;
		}
		memset(p, 0x5a, len < 65536 ? len : 65536);
		c->mr[c->nmr] = ibv_reg_mr(c->pd[i % MAX_PD], p, len, a);
		check(c->mr[c->nmr] != NULL, "reg_mr %zu bytes access 0x%x", len, a);
		if (c->mr[c->nmr] && len == 4096)
			printf("I mr4k_lkey_nonzero %d\n", c->mr[c->nmr]->lkey != 0);
		c->buf[c->nmr] = p;
		c->len[c->nmr] = len;
		if (c->mr[c->nmr])
			c->nmr++;
		else
			munmap(p, len);
		if (len * 16 > max_len && len < max_len)
			len = max_len / 16;
	}

	/* Remote write without local write is refused (upstream ib_check_mr_access). */
	{
		char *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		struct ibv_mr *bad;

		errno = 0;
		bad = ibv_reg_mr(c->pd[0], p, 4096, IBV_ACCESS_REMOTE_WRITE);
		check(bad == NULL && errno == EINVAL,
		      "reg_mr REMOTE_WRITE without LOCAL_WRITE fails with EINVAL");
		printf("I reg_mr_remote_write_no_local_errno %d\n", bad ? 0 : errno);
		if (bad)
			ibv_dereg_mr(bad);
		/* MR over memory that is not mapped. */
		errno = 0;
		munmap(p, 4096);
		bad = ibv_reg_mr(c->pd[0], p, 4096, IBV_ACCESS_LOCAL_WRITE);
		check(bad == NULL, "reg_mr over unmapped memory fails");
		printf("I reg_mr_unmapped_errno %d\n", bad ? 0 : errno);
		if (bad)
			ibv_dereg_mr(bad);
	}
}

static int modify(struct ibv_qp *qp, struct ibv_qp_attr *a, int mask, const char *what)
{
	int ret = ibv_modify_qp(qp, a, mask);

	errno = ret;
	check(ret == 0, "modify_qp %s", what);
	return ret;
}

static void setup_qps(struct ctx *c)
{
	struct ibv_qp_init_attr ia;
	struct ibv_qp_attr a, q;
	struct ibv_qp_init_attr qi;
	int ret;

	memset(&ia, 0, sizeof(ia));
	ia.send_cq = c->cq[1];
	ia.recv_cq = c->cq[1]; /* same CQ twice: counted twice */
	ia.qp_type = IBV_QPT_RC;
	ia.cap.max_send_wr = 16;
	ia.cap.max_recv_wr = 16;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = 1;
	c->rc = ibv_create_qp(c->pd[0], &ia);
	check(c->rc != NULL, "create RC QP");

	memset(&ia, 0, sizeof(ia));
	ia.send_cq = c->cq[2];
	ia.recv_cq = c->cq[3];
	ia.qp_type = IBV_QPT_UD;
	ia.cap.max_send_wr = 8;
	ia.cap.max_recv_wr = 8;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = 1;
	c->ud = ibv_create_qp(c->pd[1], &ia);
	check(c->ud != NULL, "create UD QP");
	if (!c->rc || !c->ud)
		return;

	/* RC: RST -> INIT -> RTR -> RTS, connected to itself. */
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = 1;
	a.qp_access_flags = IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE;
	if (modify(c->rc, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
		   IBV_QP_ACCESS_FLAGS, "RC RST->INIT"))
		return;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = c->rc->qp_num;
	a.rq_psn = 0x1234;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.port_num = 1;
	if (c->roce) {
		a.ah_attr.is_global = 1;
		a.ah_attr.grh.dgid = c->gid;
		a.ah_attr.grh.sgid_index = 0;
		a.ah_attr.grh.hop_limit = 1;
	} else {
		a.ah_attr.dlid = c->port.lid;
	}
	if (modify(c->rc, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
		   IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
		   IBV_QP_MIN_RNR_TIMER, "RC INIT->RTR"))
		return;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = 0x4321;
	a.max_rd_atomic = 1;
	if (modify(c->rc, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
		   IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC,
		   "RC RTR->RTS"))
		return;
	memset(&q, 0, sizeof(q));
	ret = ibv_query_qp(c->rc, &q, IBV_QP_STATE | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			   IBV_QP_RQ_PSN | IBV_QP_SQ_PSN, &qi);
	errno = ret;
	check(ret == 0, "query RC QP");
	check(q.qp_state == IBV_QPS_RTS, "RC QP state is RTS (%d)", q.qp_state);
	check(q.path_mtu == IBV_MTU_1024, "RC QP path_mtu is 1024 (%d)", q.path_mtu);
	check(q.dest_qp_num == c->rc->qp_num, "RC QP dest_qp_num reads back");
	check(q.rq_psn == 0x1234, "RC QP rq_psn reads back (0x%x)", q.rq_psn);
	check(q.sq_psn == 0x4321, "RC QP sq_psn reads back (0x%x)", q.sq_psn);

	/* A transition from the wrong state is refused. */
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	ret = ibv_modify_qp(c->rc, &a, IBV_QP_STATE);
	check(ret != 0, "RC RTS->RTR without attributes is refused");
	printf("I modify_qp_rts_to_rtr_ret %d\n", ret);

	/* UD: RST -> INIT -> RTR -> RTS. */
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = 1;
	a.qkey = 0x11111111;
	if (modify(c->ud, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY,
		   "UD RST->INIT"))
		return;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	if (modify(c->ud, &a, IBV_QP_STATE, "UD INIT->RTR"))
		return;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 7;
	if (modify(c->ud, &a, IBV_QP_STATE | IBV_QP_SQ_PSN, "UD RTR->RTS"))
		return;
	memset(&q, 0, sizeof(q));
	ret = ibv_query_qp(c->ud, &q, IBV_QP_STATE | IBV_QP_QKEY, &qi);
	errno = ret;
	check(ret == 0 && q.qp_state == IBV_QPS_RTS && q.qkey == 0x11111111,
	      "UD QP queries back RTS and its qkey");
}

static void busy_checks(struct ctx *c)
{
	/* Destroying what still has users fails with EBUSY (upstream usecnt). */
	check_ret(ibv_dealloc_pd(c->pd[0]), EBUSY, "dealloc_pd of a PD with a QP and MRs");
	check_ret(ibv_destroy_cq(c->cq[1]), EBUSY, "destroy_cq of a CQ used by a QP");
	check_ret(ibv_destroy_cq(c->cq[3]), EBUSY, "destroy_cq of a UD QP's recv CQ");
}

static void teardown(struct ctx *c, int order)
{
	int i;

	if (order == 1) {
		/* MRs first, then QPs, CQs, PDs. */
		for (i = 0; i < c->nmr; i++)
			check_ret(ibv_dereg_mr(c->mr[i]), 0, "dereg_mr");
		c->nmr = 0;
	}
	if (c->rc)
		check_ret(ibv_destroy_qp(c->rc), 0, "destroy RC QP");
	if (c->ud)
		check_ret(ibv_destroy_qp(c->ud), 0, "destroy UD QP");
	for (i = 0; i < MAX_CQ; i++)
		if (c->cq[i])
			check_ret(ibv_destroy_cq(c->cq[i]), 0, "destroy_cq");
	if (order == 0) {
		/* A PD with MRs is still busy after its QPs are gone. */
		if (c->nmr)
			check_ret(ibv_dealloc_pd(c->pd[0]), EBUSY,
				  "dealloc_pd of a PD with MRs only");
		for (i = 0; i < c->nmr; i++)
			check_ret(ibv_dereg_mr(c->mr[i]), 0, "dereg_mr");
	}
	for (i = 0; i < MAX_PD; i++)
		if (c->pd[i])
			check_ret(ibv_dealloc_pd(c->pd[i]), 0, "dealloc_pd");
	for (i = 0; i < MAX_MR; i++)
		if (c->buf[i])
			munmap(c->buf[i], c->len[i]);
	check_ret(ibv_close_device(c->ctx), 0, "close_device");
}

int main(int argc, char **argv)
{
	const char *name = NULL;
	size_t max_mr = 256UL << 20;
	int order = 0, leak = 0, opt, n, i;
	const char *hold = NULL;
	struct ibv_device **list;
	struct ibv_device_attr da;
	struct ctx c;
	int cq_sizes[MAX_CQ] = { 1, 16, 256, 4096 };
	long max_cq_entries = 0;

	while ((opt = getopt(argc, argv, "d:m:k:c:o:xw:")) != -1) {
		switch (opt) {
		case 'd': name = optarg; break;
		case 'm': max_mr = strtoul(optarg, NULL, 0) << 20; break;
		case 'k': max_mr = strtoul(optarg, NULL, 0) << 10; break;
		case 'c': max_cq_entries = strtol(optarg, NULL, 0); break;
		case 'o': order = atoi(optarg); break;
		case 'x': leak = 1; break;
		case 'w': hold = optarg; break;
		default:
			fprintf(stderr, "usage: %s [-d dev] [-m max_mr_MiB | -k max_mr_KiB] [-c max_cq_entries] [-o 0|1] [-x] [-w file]\n", argv[0]);
			return 2;
		}
	}
	memset(&c, 0, sizeof(c));
	list = ibv_get_device_list(&n);
	check(list && n > 0, "device list is not empty");
	if (!list || n == 0)
		return 1;
	for (i = 0; i < n; i++)
		if (!name || !strcmp(ibv_get_device_name(list[i]), name))
			break;
	check(i < n, "device %s found", name ? name : "(first)");
	if (i == n)
		return 1;
	c.ctx = ibv_open_device(list[i]);
	check(c.ctx != NULL, "open %s", ibv_get_device_name(list[i]));
	ibv_free_device_list(list);
	if (!c.ctx)
		return 1;

	errno = ibv_query_device(c.ctx, &da);
	check(errno == 0, "query_device");
	printf("I max_qp %d\nI max_cq %d\nI max_mr %d\nI max_pd %d\nI max_cqe %d\n",
	       da.max_qp, da.max_cq, da.max_mr, da.max_pd, da.max_cqe);
	{
		/*
		 * ibv_import_device() of a dup of the command fd: the provider's import
		 * (libmlx5: mlx5_import_context()) asks the kernel for the context with
		 * QUERY_CONTEXT (EOPNOTSUPP from a driver without query_ucontext, rxe's).
		 */
		int fd = dup(c.ctx->cmd_fd);
		struct ibv_context *ic = fd >= 0 ? ibv_import_device(fd) : NULL;

		printf("I import_device %s num_comp_vectors %s\n", ic ? "ok" : strerror(errno),
		       !ic ? "-" : ic->num_comp_vectors == c.ctx->num_comp_vectors ? "same" : "differ");
		if (ic)
			ibv_close_device(ic);
		else if (fd >= 0)
			close(fd);
	}
	errno = ibv_query_port(c.ctx, 1, &c.port);
	check(errno == 0, "query_port 1");
	c.roce = c.port.link_layer == IBV_LINK_LAYER_ETHERNET;
	errno = ibv_query_gid(c.ctx, 1, 0, &c.gid);
	check(errno == 0, "query_gid 1/0");

	for (i = 0; i < MAX_PD; i++) {
		c.pd[i] = ibv_alloc_pd(c.ctx);
		check(c.pd[i] != NULL, "alloc_pd %d", i);
		if (!c.pd[i])
			return 1;
	}
	for (i = 0; max_cq_entries > 0 && i < MAX_CQ; i++)
		if (cq_sizes[i] > max_cq_entries)
			cq_sizes[i] = max_cq_entries;
	for (i = 0; i < MAX_CQ; i++) {
		c.cq[i] = ibv_create_cq(c.ctx, cq_sizes[i], NULL, NULL, 0);
		check(c.cq[i] != NULL && c.cq[i]->cqe >= cq_sizes[i],
		      "create_cq %d entries (got %d)", cq_sizes[i], c.cq[i] ? c.cq[i]->cqe : -1);
		if (!c.cq[i])
			return 1;
	}
	errno = 0;
	{
		struct ibv_cq *bad = ibv_create_cq(c.ctx, da.max_cqe + 1, NULL, NULL, 0);

		check(bad == NULL, "create_cq beyond max_cqe is refused");
		printf("I create_cq_too_big_errno %d\n", bad ? 0 : errno);
		if (bad)
			ibv_destroy_cq(bad);
	}
	setup_mrs(&c, max_mr);
	setup_qps(&c);
	busy_checks(&c);
	if (hold) {
		printf("I holding %d\n", (int)getpid());
		fflush(stdout);
		for (i = 0; i < 2400 && access(hold, F_OK); i++)
			usleep(50000);
	}
	if (leak) {
		printf("R ok exiting without destroying anything\n");
		return failures ? 1 : 0;
	}
	teardown(&c, order);
	return failures ? 1 : 0;
}
