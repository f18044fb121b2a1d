// SPDX-License-Identifier: GPL-2.0
/*
 * Hot-unplug and close-cleanup helper, through libibverbs. Prints one line per
 * check (`R ok <desc>` / `R fail <desc>: <why>`, see tests/vm/lib.sh).
 *
 *   uverbs_unplug -d DEV hold GOFILE   open DEV, allocate PDs, print READY,
 *       wait until GOFILE exists (the script removes the device meanwhile),
 *       then check that every call fails with EIO, read the async event
 *       file, close cleanly.
 *   uverbs_unplug -d DEV exit N        open DEV, allocate N PDs, print READY
 *       and exit without destroying anything (close cleanup).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <infiniband/verbs.h>
#include <rdma/ib_user_verbs.h>

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
	void *buf = NULL;
	int opt, n, e, objs = 0;

	while ((opt = getopt(argc, argv, "d:o")) != -1) {
		if (opt == 'd')
			name = optarg;
		if (opt == 'o')
			objs = 1; /* also a CQ, an RC QP and a 64 KiB MR */
	}
	if (argc - optind != 2) {
		fprintf(stderr, "usage: uverbs_unplug -d DEV [-o] hold GOFILE | exit N\n");
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
	printf("READY\n");
	fflush(stdout);
	for (int i = 0; access(argv[optind + 1], F_OK); i++) {
		/* 10 min: under TCG with KASAN, 100 holders take minutes to start and
		 * their removal tens of seconds. */
		if (i > 6000) {
			fail("go file", "never appeared");
			return 1;
		}
		usleep(100000);
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
	/* libibverbs frees the PD on EIO (verbs.c: ibv_cmd_dealloc_pd treats EIO as done). */
	e = ibv_dealloc_pd(pd[0]);
	printf("R ok after remove: ibv_dealloc_pd of a held PD returns %d (%s)\n", e,
	       e ? strerror(e) : "success");

	if (objs) {
		/* The kernel destroyed them at the disassociate; the destroy
		 * commands see EIO, which libibverbs passes on unless
		 * RDMAV_ALLOW_DISASSOC_DESTROY is set (verbs_is_destroy_err()). */
		expect_errno("after remove: ibv_destroy_qp of the held QP is EIO", ibv_destroy_qp(qp), EIO);
		expect_errno("after remove: ibv_destroy_cq of the held CQ is EIO", ibv_destroy_cq(cq), EIO);
		expect_errno("after remove: ibv_dereg_mr of the held MR is EIO", ibv_dereg_mr(mr), EIO);
	}

	/* The async event file: IB_EVENT_DEVICE_FATAL, then? */
	{
		struct ib_uverbs_async_event_desc ev;
		ssize_t r;

		fcntl(ctx->async_fd, F_SETFL, fcntl(ctx->async_fd, F_GETFL) | O_NONBLOCK);
		r = read(ctx->async_fd, &ev, sizeof(ev));
		if (r == sizeof(ev) && ev.event_type == IBV_EVENT_DEVICE_FATAL)
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
