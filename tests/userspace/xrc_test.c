// SPDX-License-Identifier: GPL-2.0
/*
 * xrc_test: XRC domains, XRC SRQs and XRC QPs through libibverbs, the rules
 * upstream enforces (rdma_rxe has no XRC: each expectation cites the upstream
 * function it comes from).
 *
 *  - ibv_open_xrcd by inode (ib_uverbs_open_xrcd(), uverbs_cmd.c): an unknown
 *    inode without O_CREAT is EAGAIN; a known one with O_EXCL is EINVAL; a
 *    second open of the same inode is the same domain (a target QP created
 *    through one handle opens through the other); fd -1 is a domain of its own.
 *  - ibv_close_xrcd while an XRC SRQ or a target QP created through that
 *    handle lives is EBUSY (uverbs_free_xrcd() -> ib_destroy_usecnt() on
 *    uxrcd->refcnt).
 *  - ibv_open_qp (ib_uverbs_open_qp(), ib_open_qp()): a QP number the domain
 *    does not have, a type other than XRC_RECV, and another domain's QP are
 *    EINVAL; a child process opening the same file's domain opens the QP.
 *  - The data path: an XRC send naming an XRC SRQ of the target's domain
 *    completes on that SRQ's CQ with the target's QP number; one naming an
 *    SRQ of another domain fails with IBV_WC_REM_INV_REQ_ERR (IB spec: an
 *    XRCETH naming an XRC SRQ outside the target's XRC domain is an Invalid
 *    Request) and every opener of the target QP gets IBV_EVENT_QP_REQ_ERR
 *    (__ib_shared_qp_event_handler()).
 *  - The target QP lives while a handle is open (__ib_destroy_shared_qp()):
 *    destroying the creator's handle leaves the opened one usable; a child's
 *    handle goes with its exit. Opened handles are closed by closing the
 *    context (libmlx5 44's mlx5_destroy_qp() crashes on an opened QP: it frees
 *    a doorbell record the QP does not have), the kernel's file cleanup; then
 *    a second context finds the QP gone (ib_open_qp(): EINVAL).
 *  - After the last close the inode's domain is gone (xrcd_table_delete()):
 *    an open without O_CREAT is EAGAIN again.
 *
 * Output as srq_test.c: R ok|fail lines, C facts, I informational.
 */
#include <errno.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "rdmars_test.h"

/* A call that must fail with `want` (ibverbs returns the errno or sets it). */
static void check_errno(int err, int want, const char *what)
{
	printf("C %s %s\n", what, err == want ? "ok" : strerror(err));
	errno = err;
	check(err == want, "%s is %s", what, strerror(want));
}

#define BUF 4096

struct env {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_port_attr port;
	union ibv_gid gid;
	int gid_index;
	uint8_t *buf;
	struct ibv_mr *mr;
};

static struct ibv_xrcd *open_xrcd(struct ibv_context *ctx, int fd, int oflags)
{
	struct ibv_xrcd_init_attr a = {
		.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS,
		.fd = fd,
		.oflags = oflags,
	};

	return ibv_open_xrcd(ctx, &a);
}

static struct ibv_srq *xrc_srq(struct env *e, struct ibv_xrcd *x)
{
	struct ibv_srq_init_attr_ex a = {
		.attr = { .max_wr = 8, .max_sge = 1 },
		.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_XRCD |
			     IBV_SRQ_INIT_ATTR_CQ | IBV_SRQ_INIT_ATTR_PD,
		.srq_type = IBV_SRQT_XRC,
		.pd = e->pd,
		.xrcd = x,
		.cq = e->cq,
	};

	return ibv_create_srq_ex(e->ctx, &a);
}

static struct ibv_qp *tgt_qp(struct ibv_context *ctx, struct ibv_xrcd *x)
{
	struct ibv_qp_init_attr_ex a = {
		.qp_type = IBV_QPT_XRC_RECV,
		.comp_mask = IBV_QP_INIT_ATTR_XRCD,
		.xrcd = x,
	};

	return ibv_create_qp_ex(ctx, &a);
}

static struct ibv_qp *open_qp(struct ibv_context *ctx, struct ibv_xrcd *x, uint32_t qpn,
			      enum ibv_qp_type t)
{
	struct ibv_qp_open_attr a = {
		.comp_mask = IBV_QP_OPEN_ATTR_NUM | IBV_QP_OPEN_ATTR_XRCD |
			     IBV_QP_OPEN_ATTR_CONTEXT | IBV_QP_OPEN_ATTR_TYPE,
		.qp_num = qpn,
		.xrcd = x,
		.qp_context = NULL,
		.qp_type = t,
	};

	return ibv_open_qp(ctx, &a);
}

static void set_av(struct env *e, struct ibv_ah_attr *ah)
{
	ah->port_num = 1;
	ah->dlid = e->port.lid;
	if (e->gid_index >= 0) {
		ah->is_global = 1;
		ah->grh.dgid = e->gid;
		ah->grh.sgid_index = e->gid_index;
		ah->grh.hop_limit = 1;
	}
}

/* The target to RTR towards `ini`, the initiator to RTS towards `tgt`. */
static int connect(struct env *e, struct ibv_qp *tgt, struct ibv_qp *ini)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1 };
	int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;

	if (ibv_modify_qp(tgt, &a, mask) || ibv_modify_qp(ini, &a, mask))
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = ini->qp_num;
	a.rq_psn = 0x10;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 1;
	set_av(e, &a.ah_attr);
	if (ibv_modify_qp(tgt, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
					   IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
					   IBV_QP_MIN_RNR_TIMER))
		return -1;
	a.dest_qp_num = tgt->qp_num;
	if (ibv_modify_qp(ini, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
					   IBV_QP_RQ_PSN))
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0x10;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	return ibv_modify_qp(ini, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
					   IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
}

static int post_recv(struct env *e, struct ibv_srq *s, uint64_t id, int off)
{
	struct ibv_sge sge = { .addr = (uintptr_t)e->buf + off, .length = 512,
			       .lkey = e->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = 1 }, *bad;

	return ibv_post_srq_recv(s, &wr, &bad);
}

static int send_to(struct env *e, struct ibv_qp *ini, uint32_t srqn, int len)
{
	struct ibv_sge sge = { .addr = (uintptr_t)e->buf + 3072, .length = len,
			       .lkey = e->mr->lkey };
	struct ibv_send_wr wr = { .wr_id = 7, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED },
			   *bad;

	wr.qp_type.xrc.remote_srqn = srqn;
	return ibv_post_send(ini, &wr, &bad);
}

/* Polls up to 2 s for one completion. */
static int poll1(struct ibv_cq *cq, struct ibv_wc *wc)
{
	int i, n;

	for (i = 0; i < 2000; i++) {
		n = ibv_poll_cq(cq, 1, wc);
		if (n)
			return n;
		usleep(1000);
	}
	return 0;
}

/* The child: the same file's domain from another process opens the target QP. */
static int child(const char *dev, const char *path, uint32_t qpn)
{
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	struct ibv_xrcd *x;
	struct ibv_qp *qp;
	int n, i, fd;

	list = ibv_get_device_list(&n);
	for (i = 0; list && i < n; i++)
		if (!strcmp(ibv_get_device_name(list[i]), dev))
			ctx = ibv_open_device(list[i]);
	if (!ctx)
		return 10;
	fd = open(path, O_RDONLY);
	x = fd >= 0 ? open_xrcd(ctx, fd, 0) : NULL;
	if (!x)
		return 11;
	qp = open_qp(ctx, x, qpn, IBV_QPT_XRC_RECV);
	if (!qp)
		return 12;
	/* No ibv_destroy_qp() of an opened QP: libmlx5 44's mlx5_destroy_qp() frees a
	 * doorbell record such a QP does not have (mlx5_free_db(NULL) crashes). The exit
	 * closes the handle (the kernel's cleanup of the file). */
	return 0;
}

int main(int argc, char **argv)
{
	const char *dev_name = NULL;
	struct env e = { .gid_index = -1 };
	char path_a[] = "/tmp/xrc_test_a.XXXXXX", path_b[] = "/tmp/xrc_test_b.XXXXXX";
	struct ibv_xrcd *xa1, *xa2, *xn, *x;
	struct ibv_srq *sa, *sn;
	struct ibv_qp *tgt, *tgt2, *ini, *q;
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qia;
	struct ibv_async_event ev;
	struct ibv_wc wc;
	uint32_t srqn_a = 0, srqn_n = 0;
	int opt, n, i, fda, fdb, st, got_ev[2] = { 0, 0 };
	pid_t pid;

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
	e.pd = ibv_alloc_pd(e.ctx);
	e.cq = ibv_create_cq(e.ctx, 64, NULL, NULL, 0);
	e.buf = aligned_alloc(4096, BUF);
	e.mr = e.buf ? ibv_reg_mr(e.pd, e.buf, BUF, IBV_ACCESS_LOCAL_WRITE) : NULL;
	check(e.pd && e.cq && e.mr, "PD, CQ and MR");
	if (!e.pd || !e.cq || !e.mr)
		return 1;
	fda = mkstemp(path_a);
	fdb = mkstemp(path_b);
	if (fda < 0 || fdb < 0)
		return 1;

	/* Opening by inode. */
	xa1 = open_xrcd(e.ctx, fda, O_CREAT);
	check(xa1 != NULL, "open_xrcd(file A, O_CREAT): a new domain");
	x = open_xrcd(e.ctx, fda, O_CREAT | O_EXCL);
	check_errno(x ? 0 : errno, EINVAL, "open_xrcd_known_inode_O_EXCL");
	x = open_xrcd(e.ctx, fdb, 0);
	check_errno(x ? 0 : errno, EAGAIN, "open_xrcd_unknown_inode_no_O_CREAT");
	xa2 = open_xrcd(e.ctx, fda, 0);
	check(xa2 != NULL, "open_xrcd(file A, 0): the same domain again");
	xn = open_xrcd(e.ctx, -1, 0);
	check(xn != NULL, "open_xrcd(fd -1): a domain of its own");
	if (!xa1 || !xa2 || !xn)
		return 1;

	/* An XRC SRQ in A (through handle 1), one in the other domain. */
	sa = xrc_srq(&e, xa1);
	check(sa != NULL, "XRC SRQ in domain A");
	sn = xrc_srq(&e, xn);
	check(sn != NULL, "XRC SRQ in the fd -1 domain");
	if (!sa || !sn)
		return 1;
	n = ibv_get_srq_num(sa, &srqn_a) || ibv_get_srq_num(sn, &srqn_n);
	check(!n && srqn_a != 0 && srqn_n != srqn_a, "XRC SRQ numbers (%u, %u)", srqn_a, srqn_n);
	check_errno(ibv_close_xrcd(xa1), EBUSY, "close_xrcd_with_xrc_srq");

	/* A target QP through handle 2; the creator's handle counts it. */
	tgt = tgt_qp(e.ctx, xa2);
	check(tgt != NULL, "XRC target QP in domain A (through the second handle)");
	if (!tgt)
		return 1;
	check_errno(ibv_close_xrcd(xa2), EBUSY, "close_xrcd_with_tgt_qp");

	/* OPEN_QP. */
	q = open_qp(e.ctx, xa1, tgt->qp_num ^ 0x5a5a, IBV_QPT_XRC_RECV);
	check_errno(q ? 0 : errno, EINVAL, "open_qp_unknown_number");
	q = open_qp(e.ctx, xa1, tgt->qp_num, IBV_QPT_RC);
	check_errno(q ? 0 : errno, EINVAL, "open_qp_type_rc");
	q = open_qp(e.ctx, xn, tgt->qp_num, IBV_QPT_XRC_RECV);
	check_errno(q ? 0 : errno, EINVAL, "open_qp_other_domain");
	tgt2 = open_qp(e.ctx, xa1, tgt->qp_num, IBV_QPT_XRC_RECV);
	check(tgt2 != NULL && tgt2->qp_num == tgt->qp_num,
	      "open_qp of the target through the first handle (same domain)");
	if (!tgt2)
		return 1;
	fflush(stdout);
	pid = fork();
	if (pid == 0)
		_exit(child(ibv_get_device_name(e.ctx->device), path_a, tgt->qp_num));
	st = -1;
	waitpid(pid, &st, 0);
	printf("C child_opens_shared_domain_qp %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	check(WIFEXITED(st) && WEXITSTATUS(st) == 0,
	      "a child process opens file A's domain (no O_CREAT) and the target QP (status %d)",
	      WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	check(!ibv_query_qp(tgt, &qa, IBV_QP_STATE, &qia),
	      "the target lives on after the child's handle went with its exit");

	/* The data path. */
	{
		struct ibv_qp_init_attr_ex a = {
			.qp_type = IBV_QPT_XRC_SEND,
			.send_cq = e.cq,
			.cap = { .max_send_wr = 8, .max_send_sge = 1 },
			.comp_mask = IBV_QP_INIT_ATTR_PD,
			.pd = e.pd,
		};

		ini = ibv_create_qp_ex(e.ctx, &a);
	}
	check(ini != NULL, "XRC initiator QP");
	if (!ini)
		return 1;
	check(!connect(&e, tgt, ini), "target to RTR, initiator to RTS");
	memset(e.buf + 3072, 0xa5, 300);
	check(!post_recv(&e, sa, 100, 0) && !post_recv(&e, sn, 200, 1024), "receives posted");
	check(!send_to(&e, ini, srqn_a, 300), "send naming A's SRQ");
	/* Two completions on the one CQ: the send's and the receive's, in either order. */
	{
		struct ibv_wc w[2];
		int k = 0, got_recv = 0, got_send = 0;

		while (k < 2 && poll1(e.cq, &w[k]) == 1)
			k++;
		for (n = 0; n < k; n++) {
			if (w[n].wr_id == 100 && w[n].status == IBV_WC_SUCCESS &&
			    w[n].opcode == IBV_WC_RECV && w[n].byte_len == 300 &&
			    w[n].qp_num == tgt->qp_num)
				got_recv = 1;
			if (w[n].wr_id == 7 && w[n].status == IBV_WC_SUCCESS)
				got_send = 1;
		}
		printf("C xrc_send_same_domain recv %d send %d\n", got_recv, got_send);
		check(got_recv && got_send,
		      "the receive completes on A's SRQ CQ with the target's QP number, 300 bytes");
		check(e.buf[0] == 0xa5 && e.buf[299] == 0xa5, "the bytes landed in A's SRQ buffer");
	}
	check(!send_to(&e, ini, srqn_n, 10), "send naming the other domain's SRQ");
	n = poll1(e.cq, &wc);
	printf("C xrc_send_other_domain_status %s\n", n ? ibv_wc_status_str(wc.status) : "none");
	check(n == 1 && wc.wr_id == 7 && wc.status == IBV_WC_REM_INV_REQ_ERR,
	      "it fails with IBV_WC_REM_INV_REQ_ERR (status %d)", n ? (int)wc.status : -1);
	check(poll1(e.cq, &wc) == 0 || wc.status != IBV_WC_SUCCESS,
	      "no receive completes on the other domain's SRQ");
	/* Both openers of the target get its event. */
	for (i = 0; i < 4; i++) {
		struct pollfd p = { .fd = e.ctx->async_fd, .events = POLLIN };

		if (poll(&p, 1, 2000) != 1 || ibv_get_async_event(e.ctx, &ev))
			break;
		if (ev.event_type == IBV_EVENT_QP_REQ_ERR && ev.element.qp == tgt)
			got_ev[0]++;
		if (ev.event_type == IBV_EVENT_QP_REQ_ERR && ev.element.qp == tgt2)
			got_ev[1]++;
		ibv_ack_async_event(&ev);
		if (got_ev[0] && got_ev[1])
			break;
	}
	printf("C tgt_event_to_each_opener %d %d\n", got_ev[0], got_ev[1]);
	check(got_ev[0] == 1 && got_ev[1] == 1,
	      "IBV_EVENT_QP_REQ_ERR reaches both handles of the target QP");

	/* The QP outlives its creator's handle. */
	check(!ibv_destroy_qp(ini), "destroy the initiator");
	check(!ibv_destroy_qp(tgt), "destroy the creator's target handle");
	n = ibv_query_qp(tgt2, &qa, IBV_QP_STATE, &qia);
	check(!n && qa.qp_state == IBV_QPS_ERR, "the opened handle still queries (state %d: ERR)",
	      n ? -1 : (int)qa.qp_state);
	check(!ibv_close_xrcd(xa2), "close handle 2 (its QP handle is gone)");
	check_errno(ibv_close_xrcd(xa1), EBUSY, "close_xrcd_with_opened_qp_and_srq");
	/* The opened handle is closed by closing the context (libmlx5 cannot destroy an opened
	 * QP, see child()): the kernel's cleanup of the file closes it, then the SRQs, then the
	 * domains' handles. A second context sees the result. */
	{
		struct ibv_context *c2 = ibv_open_device(e.ctx->device);
		struct ibv_xrcd *x2 = c2 ? open_xrcd(c2, fda, 0) : NULL;
		uint32_t qpn = tgt2->qp_num;

		check(x2 != NULL, "a second context opens file A's domain");
		ibv_close_device(e.ctx);
		if (!x2)
			return 1;
		q = open_qp(c2, x2, qpn, IBV_QPT_XRC_RECV);
		check_errno(q ? 0 : errno, EINVAL, "open_qp_after_last_handle_closed");
		check(!ibv_close_xrcd(x2), "close the second context's handle (the domain's last)");
		x = open_xrcd(c2, fda, 0);
		check_errno(x ? 0 : errno, EAGAIN, "open_xrcd_after_last_close");
		ibv_close_device(c2);
	}
	unlink(path_a);
	unlink(path_b);
	printf("I failures %d\n", failures);
	return failures ? 1 : 0;
}
