// SPDX-License-Identifier: GPL-2.0
/*
 * Hot-unplug and close-cleanup helper, through libibverbs. Prints one line per
 * check (`R ok <desc>` / `R fail <desc>: <why>`, see tests/vm/lib.sh).
 *
 *   uverbs_unplug -d DEV hold GOFILE   open DEV, allocate PDs, print READY,
 *       wait until GOFILE exists (the script removes the device meanwhile),
 *       then check that every call fails with EIO, read the async event
 *       file, close cleanly. A GOFILE that is a FIFO is opened before READY
 *       and waited on (poll) until a writer has written to it or closed it:
 *       a hundred holders then sleep instead of waking ten times a second
 *       each (under TCG that polling took most of the two vCPUs).
 *   uverbs_unplug -d DEV exit N        open DEV, allocate N PDs, print READY
 *       and exit without destroying anything (close cleanup).
 *
 * -o: also a CQ, an RC QP and a 64 KiB MR. -t TRAFFICFILE [-g GIDX] (with -o):
 * traffic in flight during the remove: a second RC QP connected to the first
 * (loopback on port 1; GIDX: the GID of a RoCE port) and a 64 KiB MR on their
 * PD; once TRAFFICFILE exists (or, a FIFO, was written), 4 KiB RDMA WRITEs are
 * posted (up to 4 in flight) and their completions polled, the data of the
 * first checked, until the async fd reports IB_EVENT_DEVICE_FATAL (the
 * remove); nothing may hang: no FATAL within 10 minutes is a failure.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <infiniband/verbs.h>
#include <rdma/ib_user_verbs.h>
#include <rdma/ib_user_ioctl_cmds.h>
#include <rdma/rdma_user_ioctl_cmds.h>
#include <sys/ioctl.h>

static int failures;

static void ok(const char *d) { printf("R ok %s\n", d); }

static void fail(const char *d, const char *why)
{
	printf("R fail %s: %s\n", d, why);
	failures++;
}

static void expect_errno(const char *d, int got, int want)
{
	char why[96];

	if (got == want) {
		printf("R ok %s (errno %d)\n", d, got);
		return;
	}
	snprintf(why, sizeof(why), "errno %d (%s), expected %d (%s)", got, strerror(got), want,
		 strerror(want));
	fail(d, why);
}

/* A FIFO go signal: opened (non-blocking) before READY, so no writer can come and go unseen. */
static int open_fifo(const char *path)
{
	struct stat st;

	if (stat(path, &st) || !S_ISFIFO(st.st_mode))
		return -1;
	return open(path, O_RDONLY | O_NONBLOCK);
}

/*
 * Waits for the go signal: on a FIFO until a writer wrote or closed it (sleeping),
 * else until the file exists (polling every 100 ms). 0, or -1 after 10 minutes.
 */
static int wait_go(int fifo, const char *path)
{
	if (fifo >= 0) {
		struct pollfd p = { .fd = fifo, .events = POLLIN };
		int r = poll(&p, 1, 600 * 1000);

		return r == 1 ? 0 : -1;
	}
	/* 10 min: under TCG with KASAN, 100 holders take minutes to start and
	 * their removal tens of seconds. */
	for (int i = 0; access(path, F_OK); i++) {
		if (i > 6000)
			return -1;
		usleep(100000);
	}
	return 0;
}

static struct ibv_context *open_dev(const char *name)
{
	struct ibv_device **l = ibv_get_device_list(NULL);
	struct ibv_context *ctx = NULL;

	for (int i = 0; l && l[i]; i++)
		if (!strcmp(ibv_get_device_name(l[i]), name))
			ctx = ibv_open_device(l[i]);
	if (l)
		ibv_free_device_list(l);
	return ctx;
}

static int to_rts(struct ibv_qp *qp, uint32_t dqpn, const struct ibv_port_attr *pa,
		  const union ibv_gid *gid, int gidx)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1,
				 .qp_access_flags = IBV_ACCESS_REMOTE_WRITE };

	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				  IBV_QP_ACCESS_FLAGS))
		return errno;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = dqpn;
	a.rq_psn = 0x10;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.dlid = pa->lid;
	if (gidx >= 0) {
		a.ah_attr.is_global = 1;
		a.ah_attr.grh.dgid = *gid;
		a.ah_attr.grh.sgid_index = gidx;
		a.ah_attr.grh.hop_limit = 1;
	}
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				  IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
				  IBV_QP_MIN_RNR_TIMER))
		return errno;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0x10;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				  IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC))
		return errno;
	return 0;
}

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

#define TR_CHUNK 4096
#define TR_SLOTS 8

/*
 * RDMA WRITEs from the first half of buf to the second (qp -> its loopback
 * peer), up to 4 in flight, until the async fd reports DEVICE_FATAL. Returns
 * 1 when FATAL was read, 0 when it never came.
 */
static int traffic(struct ibv_context *ctx, struct ibv_cq *cq, struct ibv_qp *qp,
		   struct ibv_mr *mr, uint8_t *buf)
{
	long posted = 0, done = 0, bad = 0, post_err = 0, other_ev = 0;
	int first_bad = -1, first_post_err = 0, fatal = 0, checked = 0, inflight = 0;
	double t0 = now_s(), t_fatal = 0;

	for (int i = 0; i < TR_SLOTS * TR_CHUNK; i++)
		buf[i] = (uint8_t)(i * 13 + 5);
	fcntl(ctx->async_fd, F_SETFL, fcntl(ctx->async_fd, F_GETFL) | O_NONBLOCK);
	for (;;) {
		struct ib_uverbs_async_event_desc ev;
		struct ibv_wc wc[4];
		int n;

		while (!fatal && inflight < 4) {
			long k = posted % TR_SLOTS;
			struct ibv_sge sg = { .addr = (uintptr_t)buf + k * TR_CHUNK,
					      .length = TR_CHUNK, .lkey = mr->lkey };
			struct ibv_send_wr wr = { .wr_id = posted, .sg_list = &sg, .num_sge = 1,
						  .opcode = IBV_WR_RDMA_WRITE,
						  .send_flags = IBV_SEND_SIGNALED }, *badwr;
			int e;

			wr.wr.rdma.remote_addr = (uintptr_t)buf + (TR_SLOTS + k) * TR_CHUNK;
			wr.wr.rdma.rkey = mr->rkey;
			e = ibv_post_send(qp, &wr, &badwr);
			if (e) {
				if (!post_err++)
					first_post_err = e;
				break;
			}
			posted++;
			inflight++;
		}
		n = ibv_poll_cq(cq, 4, wc);
		for (int i = 0; i < n; i++) {
			inflight--;
			if (wc[i].status != IBV_WC_SUCCESS) {
				if (!bad++)
					first_bad = wc[i].status;
				continue;
			}
			done++;
			if (!checked && wc[i].wr_id == 0) {
				checked = 1;
				if (memcmp(buf, buf + TR_SLOTS * TR_CHUNK, TR_CHUNK))
					fail("traffic: the first RDMA WRITE's bytes arrived", "differ");
				else
					ok("traffic: the first RDMA WRITE's bytes arrived");
				printf("TRAFFIC\n");
				fflush(stdout);
			}
		}
		if (n < 0 && !bad++)
			first_bad = -1;
		if (read(ctx->async_fd, &ev, sizeof(ev)) == sizeof(ev)) {
			if (ev.event_type == IBV_EVENT_DEVICE_FATAL) {
				fatal = 1;
				t_fatal = now_s();
				break;
			}
			other_ev++;
		}
		if (n <= 0)
			usleep(4000); /* a jiffy or two: the processes share two vCPUs */
		if (now_s() - t0 > 600)
			break;
	}
	printf("I traffic: %ld posted, %ld completed ok, %ld with an error status (first %d), "
	       "%ld posts refused (first errno %d), %ld other async events, FATAL after %.1f s\n",
	       posted, done, bad, first_bad, post_err, first_post_err, other_ev,
	       fatal ? t_fatal - t0 : -1.0);
	if (done > 0)
		ok("traffic: RDMA WRITEs completed before the remove");
	else
		fail("traffic: RDMA WRITEs completed before the remove", "none");
	if (fatal)
		ok("traffic: IB_EVENT_DEVICE_FATAL read while posting and polling");
	else
		fail("traffic: IB_EVENT_DEVICE_FATAL read while posting and polling",
		     "not within 10 minutes");
	return fatal;
}

int main(int argc, char **argv)
{
	const char *name = "rxe_mock0";
	struct ibv_context *ctx;
	struct ibv_pd *pd[4];
	struct ibv_port_attr pa;
	struct ibv_pd *p;
	struct ibv_cq *cq = NULL;
	struct ibv_qp *qp = NULL;
	struct ibv_mr *mr = NULL;
	struct ibv_qp *qp2 = NULL;
	struct ibv_mr *tmr = NULL;
	uint8_t *tbuf = NULL;
	const char *trfile = NULL;
	void *buf = NULL;
	int opt, n, e, objs = 0, gidx = -1, fatal_read = 0, gofifo, trfifo;

	while ((opt = getopt(argc, argv, "d:ot:g:")) != -1) {
		if (opt == 'd')
			name = optarg;
		if (opt == 'o')
			objs = 1; /* also a CQ, an RC QP and a 64 KiB MR */
		if (opt == 't')
			trfile = optarg;
		if (opt == 'g')
			gidx = atoi(optarg);
	}
	if (argc - optind != 2 || (trfile && !objs)) {
		fprintf(stderr, "usage: uverbs_unplug -d DEV [-o [-t TRAFFICFILE [-g GIDX]]] hold GOFILE | exit N\n");
		return 2;
	}
	ctx = open_dev(name);
	if (!ctx) {
		fail("open device", strerror(errno));
		return 1;
	}
	if (!strcmp(argv[optind], "exit")) {
		n = atoi(argv[optind + 1]);
		for (int i = 0; i < n; i++)
			if (!ibv_alloc_pd(ctx)) {
				fail("ALLOC_PD", strerror(errno));
				return 1;
			}
		printf("READY\n");
		/* No dealloc, no close: the kernel's close cleanup does it. */
		return 0;
	}

	for (int i = 0; i < 4; i++) {
		pd[i] = ibv_alloc_pd(ctx);
		if (!pd[i]) {
			fail("ALLOC_PD before the remove", strerror(errno));
			return 1;
		}
	}
	ok("context, 4 PDs and the async event file open");
	if (objs) {
		struct ibv_qp_init_attr qa = { .qp_type = IBV_QPT_RC,
					       .cap = { .max_send_wr = 16, .max_recv_wr = 16,
							.max_send_sge = 1, .max_recv_sge = 1 } };

		cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
		qa.send_cq = qa.recv_cq = cq;
		qp = cq ? ibv_create_qp(pd[1], &qa) : NULL;
		buf = aligned_alloc(4096, 65536);
		mr = buf ? ibv_reg_mr(pd[2], buf, 65536, IBV_ACCESS_LOCAL_WRITE) : NULL;
		if (!cq || !qp || !mr) {
			fail("CQ, RC QP and MR before the remove", strerror(errno));
			return 1;
		}
		ok("a CQ, an RC QP and a 64 KiB MR held too");
	}
	if (trfile) {
		struct ibv_qp_init_attr qa = { .qp_type = IBV_QPT_RC, .send_cq = cq, .recv_cq = cq,
					       .cap = { .max_send_wr = 16, .max_recv_wr = 16,
							.max_send_sge = 1, .max_recv_sge = 1 } };
		union ibv_gid gid = {};

		e = ibv_query_port(ctx, 1, &pa);
		if (!e && gidx >= 0)
			e = ibv_query_gid(ctx, 1, gidx, &gid);
		qp2 = e ? NULL : ibv_create_qp(pd[1], &qa);
		tbuf = aligned_alloc(4096, 2 * TR_SLOTS * TR_CHUNK);
		if (tbuf)
			memset(tbuf, 0, 2 * TR_SLOTS * TR_CHUNK);
		tmr = qp2 && tbuf ? ibv_reg_mr(pd[1], tbuf, 2 * TR_SLOTS * TR_CHUNK,
					       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE)
				  : NULL;
		e = tmr ? to_rts(qp, qp2->qp_num, &pa, &gid, gidx) : errno;
		if (!e)
			e = to_rts(qp2, qp->qp_num, &pa, &gid, gidx);
		if (!tmr || e) {
			fail("traffic: a connected RC QP pair and a 64 KiB MR before the remove",
			     strerror(e ? e : errno));
			return 1;
		}
		ok("traffic: a connected RC QP pair and a 64 KiB MR before the remove");
	}
	gofifo = open_fifo(argv[optind + 1]);
	trfifo = trfile ? open_fifo(trfile) : -1;
	printf("READY\n");
	fflush(stdout);
	if (trfile) {
		if (wait_go(trfifo, trfile)) {
			fail("traffic file", "never appeared");
			return 1;
		}
		fatal_read = traffic(ctx, cq, qp, tmr, tbuf);
		/* Whatever the device no longer does, posting and polling must not hang. */
		{
			struct ibv_sge sg = { .addr = (uintptr_t)tbuf, .length = 64, .lkey = tmr->lkey };
			struct ibv_send_wr wr = { .sg_list = &sg, .num_sge = 1,
						  .opcode = IBV_WR_RDMA_WRITE }, *badwr;
			struct ibv_wc wc;

			wr.wr.rdma.remote_addr = (uintptr_t)tbuf + TR_SLOTS * TR_CHUNK;
			wr.wr.rdma.rkey = tmr->rkey;
			e = ibv_post_send(qp, &wr, &badwr);
			n = ibv_poll_cq(cq, 1, &wc);
			printf("R ok after remove: ibv_post_send returns %d, ibv_poll_cq %d (user-space data path: no kernel call)\n",
			       e, n);
		}
	}
	if (wait_go(gofifo, argv[optind + 1])) {
		fail("go file", "never appeared");
		return 1;
	}

	/* The device is gone: every call into the file is EIO. */
	errno = 0;
	p = ibv_alloc_pd(ctx);
	expect_errno("after remove: ibv_alloc_pd fails with EIO", p ? 0 : errno, EIO);
	e = ibv_query_port(ctx, 1, &pa);
	expect_errno("after remove: ibv_query_port fails with EIO", e, EIO);
	{
		struct ibv_device_attr da;

		e = ibv_query_device(ctx, &da);
		expect_errno("after remove: ibv_query_device fails with EIO", e, EIO);
	}
	{
		/*
		 * upstream ib_uverbs_cmd_verbs(): the method is looked up in the device's uapi
		 * tree, which outlives the driver, so an unknown method is still
		 * EPROTONOSUPPORT (not EIO). The driver id: RDMA_DRIVER_MLX5 or _RXE.
		 */
		struct ib_uverbs_ioctl_hdr h = {
			.length = sizeof(h), .object_id = UVERBS_OBJECT_DEVICE, .method_id = 31,
			.driver_id = strncmp(name, "mlx5", 4) ? 14 : 1,
		};

		e = ioctl(ctx->cmd_fd, RDMA_VERBS_IOCTL, &h) ? errno : 0;
		expect_errno("after remove: an unknown ioctl method is EPROTONOSUPPORT", e, EPROTONOSUPPORT);
	}
	/* libibverbs frees the PD on EIO (verbs.c: ibv_cmd_dealloc_pd treats EIO as done). */
	e = ibv_dealloc_pd(pd[0]);
	printf("R ok after remove: ibv_dealloc_pd of a held PD returns %d (%s)\n", e,
	       e ? strerror(e) : "success");

	if (objs) {
		/* The kernel destroyed them at the disassociate; the destroy
		 * commands see EIO, which libibverbs passes on unless
		 * RDMAV_ALLOW_DISASSOC_DESTROY is set (verbs_is_destroy_err()). */
		if (trfile) {
			expect_errno("after remove: ibv_destroy_qp of the traffic peer QP is EIO",
				     ibv_destroy_qp(qp2), EIO);
			expect_errno("after remove: ibv_dereg_mr of the traffic MR is EIO",
				     ibv_dereg_mr(tmr), EIO);
		}
		expect_errno("after remove: ibv_destroy_qp of the held QP is EIO", ibv_destroy_qp(qp), EIO);
		expect_errno("after remove: ibv_destroy_cq of the held CQ is EIO", ibv_destroy_cq(cq), EIO);
		expect_errno("after remove: ibv_dereg_mr of the held MR is EIO", ibv_dereg_mr(mr), EIO);
	}

	/* The async event file: IB_EVENT_DEVICE_FATAL, then? */
	{
		struct ib_uverbs_async_event_desc ev;
		ssize_t r;

		fcntl(ctx->async_fd, F_SETFL, fcntl(ctx->async_fd, F_GETFL) | O_NONBLOCK);
		r = fatal_read ? (ssize_t)sizeof(ev) : read(ctx->async_fd, &ev, sizeof(ev));
		if (fatal_read)
			ok("async fd: IB_EVENT_DEVICE_FATAL after remove (read by the traffic loop)");
		else if (r == sizeof(ev) && ev.event_type == IBV_EVENT_DEVICE_FATAL)
			ok("async fd: IB_EVENT_DEVICE_FATAL after remove");
		else {
			char why[80];

			snprintf(why, sizeof(why), "read %zd errno %d event %u", r, r < 0 ? errno : 0,
				 r == sizeof(ev) ? ev.event_type : ~0u);
			fail("async fd: IB_EVENT_DEVICE_FATAL after remove", why);
		}
		r = read(ctx->async_fd, &ev, sizeof(ev));
		e = r < 0 ? errno : 0;
		/* upstream closes the queue only when the async fd is released:
		 * after the FATAL event an empty non-blocking read is EAGAIN. */
		expect_errno("async fd: a second non-blocking read after DEVICE_FATAL is EAGAIN",
			     r < 0 ? e : (r == 0 ? -1 : 0), EAGAIN);
	}
	for (int i = 1; i < 4; i++)
		ibv_dealloc_pd(pd[i]);
	e = ibv_close_device(ctx);
	expect_errno("after remove: ibv_close_device succeeds", e ? errno : 0, 0);
	return failures ? 1 : 0;
}
