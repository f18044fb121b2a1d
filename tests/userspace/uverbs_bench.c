// SPDX-License-Identifier: GPL-2.0
/*
 * uverbs round-trip benchmark (a tool, not a test), through libibverbs:
 * ns per ibv_query_port() (one QUERY_PORT ioctl) and PD alloc+dealloc pairs
 * per second (two INVOKE_WRITE ioctls, or write()s, per pair).
 *
 *   uverbs_bench -d DEV [-n N]
 *
 * Prints `bench DEV query_port_ns X query_port_ops Y pd_pairs_per_s Z`.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <infiniband/verbs.h>
#include <rdma/ib_user_ioctl_cmds.h>
#include <rdma/rdma_user_ioctl_cmds.h>

/* ns per raw ioctl on the context's command fd: where the fixed cost is. */
static double raw_ns(int fd, uint16_t obj, uint16_t meth, uint16_t reserved, long n)
{
	struct ib_uverbs_ioctl_hdr h = {
		.length = sizeof(h), .object_id = obj, .method_id = meth,
		.reserved1 = reserved, .driver_id = 14,
	};
	struct timespec a, b;

	clock_gettime(CLOCK_MONOTONIC, &a);
	for (long i = 0; i < n; i++)
		ioctl(fd, RDMA_VERBS_IOCTL, &h);
	clock_gettime(CLOCK_MONOTONIC, &b);
	return ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / n;
}

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	const char *name = "rxe_mock0";
	struct ibv_device **l;
	struct ibv_context *ctx = NULL;
	struct ibv_port_attr pa;
	long n = 20000;
	double t0, qp_s, pd_s;
	int opt;

	while ((opt = getopt(argc, argv, "d:n:")) != -1) {
		if (opt == 'd')
			name = optarg;
		else if (opt == 'n')
			n = atol(optarg);
	}
	l = ibv_get_device_list(NULL);
	for (int i = 0; l && l[i]; i++)
		if (!strcmp(ibv_get_device_name(l[i]), name))
			ctx = ibv_open_device(l[i]);
	if (!ctx) {
		fprintf(stderr, "uverbs_bench: cannot open %s\n", name);
		return 1;
	}
	/* Warm up. */
	for (int i = 0; i < 100; i++)
		if (ibv_query_port(ctx, 1, &pa)) {
			fprintf(stderr, "ibv_query_port: %s\n", strerror(errno));
			return 1;
		}
	t0 = now();
	for (long i = 0; i < n; i++)
		ibv_query_port(ctx, 1, &pa);
	qp_s = now() - t0;
	t0 = now();
	for (long i = 0; i < n; i++) {
		struct ibv_pd *pd = ibv_alloc_pd(ctx);

		if (!pd || ibv_dealloc_pd(pd)) {
			fprintf(stderr, "PD alloc/dealloc: %s\n", strerror(errno));
			return 1;
		}
	}
	pd_s = now() - t0;
	printf("bench %s n %ld query_port_ns %.0f query_port_ops %.0f pd_pairs_per_s %.0f\n", name, n,
	       qp_s * 1e9 / n, n / qp_s, n / pd_s);
	/* Raw ioctls: rejected by the header check (reserved1), an unknown
	 * method (after the tree lookup), QUERY_CONTEXT (EOPNOTSUPP after the
	 * attribute parse and the file lock, on both stacks). */
	printf("raw %s ns bad_header %.0f unknown_method %.0f query_context %.0f\n", name,
	       raw_ns(ctx->cmd_fd, UVERBS_OBJECT_DEVICE, UVERBS_METHOD_QUERY_CONTEXT, 1, n),
	       raw_ns(ctx->cmd_fd, UVERBS_OBJECT_DEVICE, 31, 0, n),
	       raw_ns(ctx->cmd_fd, UVERBS_OBJECT_DEVICE, UVERBS_METHOD_QUERY_CONTEXT, 0, n));
	ibv_close_device(ctx);
	ibv_free_device_list(l);
	return 0;
}
