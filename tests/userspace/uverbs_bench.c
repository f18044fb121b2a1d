// SPDX-License-Identifier: GPL-2.0
/*
 * uverbs control-path benchmark (a tool, not a test), through libibverbs.
 *
 *   uverbs_bench -d DEV [-n N] [-c N_OBJ] [-s N_SLAB] [-S SLAB_SRQ] [-A SLAB_AH] [-m MR_MAX_MIB] [-k SCALE_MAX] [-f FIGURES]
 *
 * FIGURES is a comma-separated list (default rt):
 *   rt    QUERY_PORT calls/s, PD alloc+dealloc pairs/s, and raw ioctls: one
 *         rejected by the header check, an unknown method, QUERY_CONTEXT (with
 *         the mlx5 response on mlx5)
 *   raw   the three raw ioctls of rt alone; bad: the header-rejected one alone;
 *         qc: QUERY_CONTEXT alone
 *   cq    CQ create+destroy pairs/s (64 CQEs)
 * N_OBJ: iterations of the cq, qp and mr figures (default 500).
 *   qp    RC QP create -> INIT -> RTR -> RTS -> destroy cycles/s (looped back
 *         to itself), and the microseconds of each step
 *   qpinit one RC QP moved RESET -> INIT -> RESET N_OBJ times: the microseconds
 *         of each transition alone (no create before the INIT, as in qp)
 *   mr    MR registration and deregistration, 4 KiB .. MR_MAX_MIB MiB, in GB/s
 *   pin   the same buffers pinned and unpinned alone (io_uring fixed-buffer
 *         registration: pin_user_pages_fast(FOLL_LONGTERM) and a bvec array,
 *         no RDMA code), in GB/s: the physical limit of the MR path
 *   slab  slab (and vmalloc) bytes per PD, CQ, QP, MR, SRQ and AH with N_SLAB
 *         alive (SLAB_SRQ SRQs); beside each, `slabcache KIND CACHE OBJS BYTES` lines:
 *         the caches of /proc/slabinfo that grew by at least one object per two, with
 *         their objects and bytes per object
 *   scale a handle lookup (CQ_DESTROY given a PD's handle: EINVAL after the
 *         lookup) and a PD destroy, with 10, 1k, 10k, 100k PDs alive
 *   obj   SRQ (16 WRs), AH (to the own port, by the write() command: libmlx5
 *         builds InfiniBand AHs in user space without one) and 4 KiB MR
 *         create+destroy pairs/s, N_OBJ each
 *   ah    the AH pairs of obj alone (for profiles)
 *   ctx   ibv_open_device() + ibv_close_device() pairs/s, N_OBJ of them
 * SLAB_SRQ, SLAB_AH: the SRQs and AHs alive for slab (default N_SLAB; a
 * device's SRQ table can be smaller than its others, and AHs use no device
 * object).
 *
 * Every figure is one line: `fig DEV NAME VALUE`. A figure the device cannot
 * produce prints `skip DEV NAME reason` and the others go on.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <linux/io_uring.h>
#include <infiniband/verbs.h>
#include <rdma/ib_user_ioctl_cmds.h>
#include <rdma/rdma_user_ioctl_cmds.h>

static const char *dev_name = "rxe_mock0";
static long n = 20000, n_obj = 500, n_slab = 10000, mr_max_mib = 1024, scale_max = 100000;
static long n_slab_srq = -1, n_slab_ah = -1;
/* The ioctl header's driver_id: upstream's uverbs refuses another driver's (EINVAL). */
static uint16_t drv_id = RDMA_DRIVER_RXE;

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

static void fig(const char *name, double v)
{
	printf("fig %s %s %.6g\n", dev_name, name, v);
	fflush(stdout);
}

static void skip(const char *name, const char *why)
{
	printf("skip %s %s %s (%s)\n", dev_name, name, why, strerror(errno));
	fflush(stdout);
}

/* ns per raw ioctl on the context's command fd: where the fixed cost is. */
static double raw_ns(int fd, uint16_t obj, uint16_t meth, uint16_t reserved, long iters)
{
	struct ib_uverbs_ioctl_hdr h = {
		.length = sizeof(h), .object_id = obj, .method_id = meth,
		.reserved1 = reserved, .driver_id = drv_id,
	};
	double t0 = now();

	for (long i = 0; i < iters; i++)
		ioctl(fd, RDMA_VERBS_IOCTL, &h);
	return (now() - t0) * 1e9 / iters;
}

/*
 * ns per QUERY_CONTEXT as libmlx5's mlx5_import_context() sends it: NUM_COMP_VECTORS,
 * CORE_SUPPORT and, on mlx5, the driver's MLX5_IB_ATTR_QUERY_CONTEXT_RESP_UCTX (72 bytes,
 * struct mlx5_ib_alloc_ucontext_resp; a driver without query_ucontext answers EOPNOTSUPP).
 */
static double query_context_ns(int fd, long iters)
{
	struct {
		struct ib_uverbs_ioctl_hdr hdr;
		struct ib_uverbs_attr attrs[3];
	} r;
	uint64_t core_support, uctx[9];
	uint32_t ncv;
	double t0;

	memset(&r, 0, sizeof(r));
	r.hdr.object_id = UVERBS_OBJECT_DEVICE;
	r.hdr.method_id = UVERBS_METHOD_QUERY_CONTEXT;
	r.hdr.driver_id = drv_id;
	r.hdr.num_attrs = drv_id == RDMA_DRIVER_MLX5 ? 3 : 2;
	r.hdr.length = sizeof(r.hdr) + r.hdr.num_attrs * sizeof(r.attrs[0]);
	r.attrs[0] = (struct ib_uverbs_attr){ .attr_id = UVERBS_ATTR_QUERY_CONTEXT_NUM_COMP_VECTORS,
					      .len = sizeof(ncv), .data = (uintptr_t)&ncv };
	r.attrs[1] = (struct ib_uverbs_attr){ .attr_id = UVERBS_ATTR_QUERY_CONTEXT_CORE_SUPPORT,
					      .len = sizeof(core_support),
					      .data = (uintptr_t)&core_support };
	/* MLX5_IB_ATTR_QUERY_CONTEXT_RESP_UCTX: the first id of the driver namespace. */
	r.attrs[2] = (struct ib_uverbs_attr){ .attr_id = 1U << UVERBS_ID_NS_SHIFT,
					      .len = sizeof(uctx), .data = (uintptr_t)uctx };
	t0 = now();
	for (long i = 0; i < iters; i++)
		ioctl(fd, RDMA_VERBS_IOCTL, &r);
	return (now() - t0) * 1e9 / iters;
}

/* Rejected by the header check (reserved1), an unknown method (after the
 * tree lookup), QUERY_CONTEXT (query_context_ns()); `bad_only`: the first alone (what a
 * profile of the fixed cost of an ioctl samples). */
static void fig_raw(struct ibv_context *ctx, int bad_only)
{
	fig("bad_header_ns", raw_ns(ctx->cmd_fd, UVERBS_OBJECT_DEVICE, UVERBS_METHOD_QUERY_CONTEXT, 1, n));
	if (bad_only)
		return;
	fig("unknown_method_ns", raw_ns(ctx->cmd_fd, UVERBS_OBJECT_DEVICE, 31, 0, n));
	fig("query_context_ns", query_context_ns(ctx->cmd_fd, n));
}

static void fig_rt(struct ibv_context *ctx)
{
	struct ibv_port_attr pa;
	double t0;

	for (int i = 0; i < 100; i++)
		if (ibv_query_port(ctx, 1, &pa)) {
			skip("query_port", "ibv_query_port");
			return;
		}
	t0 = now();
	for (long i = 0; i < n; i++)
		ibv_query_port(ctx, 1, &pa);
	fig("query_port_ops", n / (now() - t0));
	t0 = now();
	for (long i = 0; i < n; i++) {
		struct ibv_pd *pd = ibv_alloc_pd(ctx);

		if (!pd || ibv_dealloc_pd(pd)) {
			skip("pd_pairs_per_s", "PD alloc/dealloc");
			return;
		}
	}
	fig("pd_pairs_per_s", n / (now() - t0));
	fig_raw(ctx, 0);
}

static void fig_cq(struct ibv_context *ctx)
{
	double t0 = now();

	for (long i = 0; i < n_obj; i++) {
		struct ibv_cq *cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);

		if (!cq || ibv_destroy_cq(cq)) {
			skip("cq_pairs_per_s", "CQ create/destroy");
			return;
		}
	}
	fig("cq_pairs_per_s", n_obj / (now() - t0));
}

/* The RTR address of a QP looped back to itself: the port's LID on IB, GID 0 on RoCE. */
static int self_ah(struct ibv_context *ctx, struct ibv_ah_attr *ah, enum ibv_mtu *mtu)
{
	struct ibv_port_attr pa;

	if (ibv_query_port(ctx, 1, &pa))
		return -1;
	memset(ah, 0, sizeof(*ah));
	ah->port_num = 1;
	ah->dlid = pa.lid;
	*mtu = pa.active_mtu < IBV_MTU_1024 ? pa.active_mtu : IBV_MTU_1024;
	if (pa.link_layer == IBV_LINK_LAYER_ETHERNET || !pa.lid) {
		ah->is_global = 1;
		ah->grh.sgid_index = 0;
		ah->grh.hop_limit = 1;
		if (ibv_query_gid(ctx, 1, 0, &ah->grh.dgid))
			return -1;
	}
	return 0;
}

static struct ibv_qp *create_qp(struct ibv_pd *pd, struct ibv_cq *cq)
{
	struct ibv_qp_init_attr a = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1, .max_recv_sge = 1 },
	};

	return ibv_create_qp(pd, &a);
}

static int qp_to_rts(struct ibv_qp *qp, const struct ibv_ah_attr *ah, enum ibv_mtu mtu, double *t)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = 1,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ,
	};
	double t0 = now();

	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		return -1;
	t[1] += now() - t0;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = mtu;
	a.dest_qp_num = qp->qp_num;
	a.rq_psn = 0;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr = *ah;
	t0 = now();
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				  IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		return -1;
	t[2] += now() - t0;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = 0;
	a.max_rd_atomic = 1;
	t0 = now();
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
				  IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC))
		return -1;
	t[3] += now() - t0;
	return 0;
}

static void fig_qp(struct ibv_context *ctx)
{
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_cq *cq = pd ? ibv_create_cq(ctx, 64, NULL, NULL, 0) : NULL;
	struct ibv_ah_attr ah;
	enum ibv_mtu mtu;
	double t[5] = { 0 }, t0, all;

	if (!cq || self_ah(ctx, &ah, &mtu)) {
		skip("qp_cycles_per_s", "PD, CQ or port query");
		goto out;
	}
	all = now();
	for (long i = 0; i < n_obj; i++) {
		struct ibv_qp *qp;

		t0 = now();
		qp = create_qp(pd, cq);
		t[0] += now() - t0;
		if (!qp) {
			skip("qp_cycles_per_s", "ibv_create_qp");
			goto out;
		}
		if (qp_to_rts(qp, &ah, mtu, t)) {
			skip("qp_cycles_per_s", "ibv_modify_qp");
			ibv_destroy_qp(qp);
			goto out;
		}
		t0 = now();
		if (ibv_destroy_qp(qp)) {
			skip("qp_cycles_per_s", "ibv_destroy_qp");
			goto out;
		}
		t[4] += now() - t0;
	}
	fig("qp_cycles_per_s", n_obj / (now() - all));
	fig("qp_create_us", t[0] * 1e6 / n_obj);
	fig("qp_init_us", t[1] * 1e6 / n_obj);
	fig("qp_rtr_us", t[2] * 1e6 / n_obj);
	fig("qp_rts_us", t[3] * 1e6 / n_obj);
	fig("qp_destroy_us", t[4] * 1e6 / n_obj);
out:
	if (cq)
		ibv_destroy_cq(cq);
	if (pd)
		ibv_dealloc_pd(pd);
}

/* The INIT transition without a create before it: one QP, RESET -> INIT -> RESET. */
static void fig_qpinit(struct ibv_context *ctx)
{
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_cq *cq = pd ? ibv_create_cq(ctx, 64, NULL, NULL, 0) : NULL;
	struct ibv_qp *qp = cq ? create_qp(pd, cq) : NULL;
	double t[2] = { 0 }, t0;

	if (!qp) {
		skip("qp_loop_init_us", "PD, CQ or QP");
		goto out;
	}
	for (long i = 0; i < n_obj; i++) {
		struct ibv_qp_attr a = {
			.qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = 1,
			.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ,
		};

		t0 = now();
		if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					  IBV_QP_ACCESS_FLAGS)) {
			skip("qp_loop_init_us", "ibv_modify_qp to INIT");
			goto out;
		}
		t[0] += now() - t0;
		memset(&a, 0, sizeof(a));
		a.qp_state = IBV_QPS_RESET;
		t0 = now();
		if (ibv_modify_qp(qp, &a, IBV_QP_STATE)) {
			skip("qp_loop_init_us", "ibv_modify_qp to RESET");
			goto out;
		}
		t[1] += now() - t0;
	}
	fig("qp_loop_init_us", t[0] * 1e6 / n_obj);
	fig("qp_loop_reset_us", t[1] * 1e6 / n_obj);
out:
	if (qp)
		ibv_destroy_qp(qp);
	if (cq)
		ibv_destroy_cq(cq);
	if (pd)
		ibv_dealloc_pd(pd);
}

/* A populated, touched buffer of `len` bytes (both figures pin the same pages). */
static void *buffer(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	memset(p, 0x5a, len);
	return p;
}

/* An AH to the own port by the write() command CREATE_AH (what ibv_cmd_create_ah() sends):
 * libmlx5 builds an InfiniBand AH in user space and never asks the kernel. The handle, or
 * -1 (errno set). */
static long write_create_ah(struct ibv_context *ctx, struct ibv_pd *pd, const struct ibv_ah_attr *ah)
{
	struct {
		struct ib_uverbs_create_ah_resp r;
		uint8_t drv[16];
	} resp;
	struct {
		struct ib_uverbs_cmd_hdr h;
		struct ib_uverbs_create_ah c;
	} req;

	memset(&req, 0, sizeof(req));
	memset(&resp, 0, sizeof(resp));
	req.h.command = IB_USER_VERBS_CMD_CREATE_AH;
	req.h.in_words = sizeof(req) / 4;
	req.h.out_words = sizeof(resp) / 4;
	req.c.response = (uintptr_t)&resp;
	req.c.pd_handle = pd->handle;
	req.c.attr.dlid = ah->dlid;
	req.c.attr.port_num = ah->port_num;
	req.c.attr.is_global = ah->is_global;
	if (ah->is_global) {
		memcpy(req.c.attr.grh.dgid, ah->grh.dgid.raw, 16);
		req.c.attr.grh.sgid_index = ah->grh.sgid_index;
		req.c.attr.grh.hop_limit = ah->grh.hop_limit;
	}
	if (write(ctx->cmd_fd, &req, sizeof(req)) != sizeof(req))
		return -1;
	return resp.r.ah_handle;
}

static int write_destroy_ah(struct ibv_context *ctx, uint32_t handle)
{
	struct {
		struct ib_uverbs_cmd_hdr h;
		struct ib_uverbs_destroy_ah c;
	} req = {
		.h = { .command = IB_USER_VERBS_CMD_DESTROY_AH, .in_words = sizeof(req) / 4 },
		.c = { .ah_handle = handle },
	};

	return write(ctx->cmd_fd, &req, sizeof(req)) == sizeof(req) ? 0 : -1;
}

static struct ibv_srq *create_srq(struct ibv_pd *pd)
{
	struct ibv_srq_init_attr a = { .attr = { .max_wr = 16, .max_sge = 1 } };

	return ibv_create_srq(pd, &a);
}

/* AH create+destroy pairs/s (ah_pairs_per_s), N_OBJ of them. */
static void ah_pairs(struct ibv_context *ctx, struct ibv_pd *pd, const struct ibv_ah_attr *ah)
{
	double t0 = now();
	long i;

	for (i = 0; i < n_obj; i++) {
		long h = write_create_ah(ctx, pd, ah);

		if (h < 0 || write_destroy_ah(ctx, h)) {
			skip("ah_pairs_per_s", "CREATE_AH/DESTROY_AH");
			return;
		}
	}
	fig("ah_pairs_per_s", n_obj / (now() - t0));
}

/* The AH figure of obj alone (for profiles). */
static void fig_ah(struct ibv_context *ctx)
{
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_ah_attr ah;
	enum ibv_mtu mtu;

	if (!pd || self_ah(ctx, &ah, &mtu))
		skip("ah", "PD or port query");
	else
		ah_pairs(ctx, pd, &ah);
	if (pd)
		ibv_dealloc_pd(pd);
}

/* SRQ, AH and 4 KiB MR create+destroy pairs/s. */
static void fig_obj(struct ibv_context *ctx)
{
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_ah_attr ah;
	enum ibv_mtu mtu;
	char *buf = NULL;
	double t0;
	long i;

	if (!pd || self_ah(ctx, &ah, &mtu)) {
		skip("obj", "PD or port query");
		goto out;
	}
	t0 = now();
	for (i = 0; i < n_obj; i++) {
		struct ibv_srq *srq = create_srq(pd);

		if (!srq || ibv_destroy_srq(srq)) {
			skip("srq_pairs_per_s", "SRQ create/destroy");
			break;
		}
	}
	if (i == n_obj)
		fig("srq_pairs_per_s", n_obj / (now() - t0));
	ah_pairs(ctx, pd, &ah);
	buf = buffer(4096);
	t0 = now();
	for (i = 0; buf && i < n_obj; i++) {
		struct ibv_mr *mr = ibv_reg_mr(pd, buf, 4096, IBV_ACCESS_LOCAL_WRITE);

		if (!mr || ibv_dereg_mr(mr)) {
			skip("mr_pairs_per_s", "4 KiB MR reg/dereg");
			break;
		}
	}
	if (buf && i == n_obj)
		fig("mr_pairs_per_s", n_obj / (now() - t0));
out:
	if (buf)
		munmap(buf, 4096);
	if (pd)
		ibv_dealloc_pd(pd);
}

/* ibv_open_device() + ibv_close_device() pairs/s: a context with its driver's mappings. */
static void fig_ctx(struct ibv_device *dev)
{
	double t0 = now();

	for (long i = 0; i < n_obj; i++) {
		struct ibv_context *c = ibv_open_device(dev);

		if (!c || ibv_close_device(c)) {
			skip("ctx_pairs_per_s", "ibv_open_device/ibv_close_device");
			return;
		}
	}
	fig("ctx_pairs_per_s", n_obj / (now() - t0));
}

/* Iterations for one size: enough bytes to time, at least 3. */
static long iters_for(size_t len)
{
	long it = (long)((512UL << 20) / len);

	if (it > n_obj)
		it = n_obj;
	return it < 3 ? 3 : it;
}

static void size_name(char *out, size_t cap, const char *what, size_t len)
{
	if (len >= 1UL << 30)
		snprintf(out, cap, "%s_%zuG", what, len >> 30);
	else if (len >= 1UL << 20)
		snprintf(out, cap, "%s_%zuM", what, len >> 20);
	else
		snprintf(out, cap, "%s_%zuK", what, len >> 10);
}

static void fig_mr(struct ibv_context *ctx)
{
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	char name[64];

	if (!pd) {
		skip("mr", "ibv_alloc_pd");
		return;
	}
	for (size_t len = 4096; len <= ((size_t)mr_max_mib << 20); len *= 16) {
		void *p = buffer(len);
		long it = iters_for(len);
		double reg = 0, dereg = 0, t0;

		if (!p) {
			size_name(name, sizeof(name), "mr_reg_gbps", len);
			skip(name, "mmap");
			break;
		}
		for (long i = 0; i < it; i++) {
			struct ibv_mr *mr;

			t0 = now();
			mr = ibv_reg_mr(pd, p, len, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
			reg += now() - t0;
			if (!mr) {
				size_name(name, sizeof(name), "mr_reg_gbps", len);
				skip(name, "ibv_reg_mr");
				munmap(p, len);
				goto out;
			}
			t0 = now();
			ibv_dereg_mr(mr);
			dereg += now() - t0;
		}
		munmap(p, len);
		size_name(name, sizeof(name), "mr_reg_gbps", len);
		fig(name, len * it / reg / 1e9);
		size_name(name, sizeof(name), "mr_dereg_gbps", len);
		fig(name, len * it / dereg / 1e9);
		/* The loop goes 4K, 64K, 1M, 16M, 256M, then the cap itself. */
		if (len < ((size_t)mr_max_mib << 20) && len * 16 > ((size_t)mr_max_mib << 20))
			len = ((size_t)mr_max_mib << 20) / 16;
	}
out:
	ibv_dealloc_pd(pd);
}

static void fig_pin(void)
{
	struct io_uring_params par = { 0 };
	int fd = syscall(__NR_io_uring_setup, 1, &par);
	char name[64];

	if (fd < 0) {
		skip("pin", "io_uring_setup");
		return;
	}
	for (size_t len = 4096; len <= ((size_t)mr_max_mib << 20); len *= 16) {
		void *p = buffer(len);
		struct iovec iov = { .iov_base = p, .iov_len = len };
		long it = iters_for(len);
		double pin = 0, unpin = 0, t0;

		if (!p) {
			size_name(name, sizeof(name), "pin_gbps", len);
			skip(name, "mmap");
			break;
		}
		for (long i = 0; i < it; i++) {
			t0 = now();
			if (syscall(__NR_io_uring_register, fd, IORING_REGISTER_BUFFERS, &iov, 1)) {
				size_name(name, sizeof(name), "pin_gbps", len);
				skip(name, "IORING_REGISTER_BUFFERS");
				munmap(p, len);
				goto out;
			}
			pin += now() - t0;
			t0 = now();
			syscall(__NR_io_uring_register, fd, IORING_UNREGISTER_BUFFERS, NULL, 0);
			unpin += now() - t0;
		}
		munmap(p, len);
		size_name(name, sizeof(name), "pin_gbps", len);
		fig(name, len * it / pin / 1e9);
		size_name(name, sizeof(name), "unpin_gbps", len);
		fig(name, len * it / unpin / 1e9);
		if (len < ((size_t)mr_max_mib << 20) && len * 16 > ((size_t)mr_max_mib << 20))
			len = ((size_t)mr_max_mib << 20) / 16;
	}
out:
	close(fd);
}

/* kB of a /proc/meminfo line. */
static long meminfo(const char *key)
{
	FILE *f = fopen("/proc/meminfo", "r");
	char line[256];
	long v = -1;
	size_t kl = strlen(key);

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, kl) && line[kl] == ':') {
			v = atol(line + kl + 1);
			break;
		}
	fclose(f);
	return v;
}

/* /proc/slabinfo's active objects per cache (name, count, object size), for the
 * per-cache growth the slab figure prints beside its total. */
#define SLABINFO_MAX 512
struct slabcache {
	char name[48];
	long active, size;
};
static struct slabcache slab_before[SLABINFO_MAX];
static int slab_before_n;

static int slabinfo(struct slabcache *c)
{
	FILE *f = fopen("/proc/slabinfo", "r");
	char line[512];
	int k = 0;

	if (!f)
		return 0;
	while (k < SLABINFO_MAX && fgets(line, sizeof(line), f))
		if (sscanf(line, "%47s %ld %*d %ld", c[k].name, &c[k].active, &c[k].size) == 3)
			k++;
	fclose(f);
	return k;
}

/* Snapshot of /proc/slabinfo before the objects of a slab figure are created. */
static void slab_mark(void)
{
	slab_before_n = slabinfo(slab_before);
}

/* `slabcache KIND CACHE OBJS BYTES`: each cache whose active objects grew by at least one per
 * two objects of the figure since slab_mark(), the growth in objects per object and its
 * bytes per object (where the figure's bytes go; kB-granular Slab cannot split them). */
static void slab_caches(const char *kind, long count)
{
	static struct slabcache now_[SLABINFO_MAX];
	int k = slabinfo(now_);

	for (int i = 0; i < k; i++)
		for (int j = 0; j < slab_before_n; j++) {
			long d;

			if (strcmp(now_[i].name, slab_before[j].name))
				continue;
			d = now_[i].active - slab_before[j].active;
			if (d * 2 >= count)
				printf("slabcache %s %s %.2f %.0f\n", kind, now_[i].name,
				       (double)d / count, (double)d * now_[i].size / count);
			break;
		}
}

static void slab_report(const char *kind, long slab0, long vm0)
{
	char name[64];

	snprintf(name, sizeof(name), "slab_bytes_%s", kind);
	fig(name, (meminfo("Slab") - slab0) * 1024.0 / n_slab);
	slab_caches(kind, n_slab);
	snprintf(name, sizeof(name), "vmalloc_bytes_%s", kind);
	fig(name, (meminfo("VmallocUsed") - vm0) * 1024.0 / n_slab);
}

static void fig_slab(struct ibv_context *ctx)
{
	void **o = calloc(n_slab > n_slab_srq ? n_slab : n_slab_srq, sizeof(*o));
	long *h = calloc(n_slab_ah, sizeof(*h));
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_ah_attr ah;
	enum ibv_mtu mtu;
	struct ibv_cq *cq = pd ? ibv_create_cq(ctx, 64, NULL, NULL, 0) : NULL;
	char *buf = NULL;
	long s0, v0, i;

	if (!o || !h || !cq) {
		skip("slab", "PD or CQ");
		goto out;
	}
	/* PDs. */
	slab_mark();
	s0 = meminfo("Slab"), v0 = meminfo("VmallocUsed");
	for (i = 0; i < n_slab && (o[i] = ibv_alloc_pd(ctx)); i++)
		;
	if (i == n_slab)
		slab_report("pd", s0, v0);
	else
		skip("slab_bytes_pd", "ibv_alloc_pd");
	while (i-- > 0)
		ibv_dealloc_pd(o[i]);
	/* CQs. */
	slab_mark();
	s0 = meminfo("Slab"), v0 = meminfo("VmallocUsed");
	for (i = 0; i < n_slab && (o[i] = ibv_create_cq(ctx, 64, NULL, NULL, 0)); i++)
		;
	if (i == n_slab)
		slab_report("cq", s0, v0);
	else
		skip("slab_bytes_cq", "ibv_create_cq");
	while (i-- > 0)
		ibv_destroy_cq(o[i]);
	/* QPs (RESET, 16 WRs each way). */
	slab_mark();
	s0 = meminfo("Slab"), v0 = meminfo("VmallocUsed");
	for (i = 0; i < n_slab && (o[i] = create_qp(pd, cq)); i++)
		;
	if (i == n_slab)
		slab_report("qp", s0, v0);
	else
		skip("slab_bytes_qp", "ibv_create_qp");
	while (i-- > 0)
		ibv_destroy_qp(o[i]);
	/* MRs of one page each, over one buffer. */
	buf = buffer(4096UL * n_slab);
	slab_mark();
	s0 = meminfo("Slab"), v0 = meminfo("VmallocUsed");
	for (i = 0; buf && i < n_slab &&
		    (o[i] = ibv_reg_mr(pd, buf + 4096 * i, 4096, IBV_ACCESS_LOCAL_WRITE)); i++)
		;
	if (i == n_slab)
		slab_report("mr", s0, v0);
	else
		skip("slab_bytes_mr", "ibv_reg_mr");
	while (i-- > 0)
		ibv_dereg_mr(o[i]);
	if (buf)
		munmap(buf, 4096UL * n_slab);
	/* SRQs (16 WRs): n_slab_srq of them; the per-object figure is over that count. */
	slab_mark();
	s0 = meminfo("Slab"), v0 = meminfo("VmallocUsed");
	for (i = 0; i < n_slab_srq && (o[i] = create_srq(pd)); i++)
		;
	if (i == n_slab_srq) {
		long keep = n_slab;

		n_slab = n_slab_srq;
		slab_report("srq", s0, v0);
		n_slab = keep;
	} else {
		skip("slab_bytes_srq", "ibv_create_srq");
	}
	while (i-- > 0)
		ibv_destroy_srq(o[i]);
	/* AHs to the own port (the write() command: kernel AHs on both stacks). */
	if (self_ah(ctx, &ah, &mtu) == 0) {
		slab_mark();
		s0 = meminfo("Slab"), v0 = meminfo("VmallocUsed");
		for (i = 0; i < n_slab_ah && (h[i] = write_create_ah(ctx, pd, &ah)) >= 0; i++)
			;
		if (i == n_slab_ah) {
			long keep = n_slab;

			n_slab = n_slab_ah;
			slab_report("ah", s0, v0);
			n_slab = keep;
		} else
			skip("slab_bytes_ah", "CREATE_AH");
		while (i-- > 0)
			write_destroy_ah(ctx, h[i]);
	}
out:
	free(h);
	if (cq)
		ibv_destroy_cq(cq);
	if (pd)
		ibv_dealloc_pd(pd);
	free(o);
}

/* CQ_DESTROY naming a PD: the handle is looked up, found to be no CQ, EINVAL. */
static double lookup_ns(struct ibv_context *ctx, uint32_t handle, long iters)
{
	struct ib_uverbs_destroy_cq_resp resp;
	struct {
		struct ib_uverbs_ioctl_hdr h;
		struct ib_uverbs_attr a[2];
	} req = {
		.h = { .length = sizeof(req), .object_id = UVERBS_OBJECT_CQ,
		       .method_id = UVERBS_METHOD_CQ_DESTROY, .num_attrs = 2, .driver_id = drv_id },
		.a = {
			{ .attr_id = UVERBS_ATTR_DESTROY_CQ_HANDLE, .data = handle },
			{ .attr_id = UVERBS_ATTR_DESTROY_CQ_RESP, .len = sizeof(resp),
			  .data = (uintptr_t)&resp },
		},
	};
	double t0;

	if (ioctl(ctx->cmd_fd, RDMA_VERBS_IOCTL, &req) == 0 || errno != EINVAL)
		return -1;
	t0 = now();
	for (long i = 0; i < iters; i++)
		ioctl(ctx->cmd_fd, RDMA_VERBS_IOCTL, &req);
	return (now() - t0) * 1e9 / iters;
}

static void fig_scale(struct ibv_context *ctx)
{
	struct ibv_pd **pd = calloc(scale_max, sizeof(*pd));
	long live = 0;
	char name[64];

	if (!pd) {
		skip("scale", "calloc");
		return;
	}
	for (long k = 10; k <= scale_max; k = k == 10 ? 1000 : k * 10) {
		long m = k < 1000 ? k : 1000;
		double t0, ns;

		for (; live < k; live++)
			if (!(pd[live] = ibv_alloc_pd(ctx))) {
				snprintf(name, sizeof(name), "lookup_ns_%ld", k);
				skip(name, "ibv_alloc_pd");
				goto out;
			}
		/* Probe a handle from the middle of the table. */
		ns = lookup_ns(ctx, pd[k / 2]->handle, n);
		snprintf(name, sizeof(name), "lookup_ns_%ld", k);
		if (ns < 0)
			skip(name, "CQ_DESTROY of a PD handle did not fail with EINVAL");
		else
			fig(name, ns);
		/* Destroy the newest m (at k alive), then allocate them again. */
		t0 = now();
		for (long i = 0; i < m; i++)
			ibv_dealloc_pd(pd[--live]);
		snprintf(name, sizeof(name), "destroy_ns_%ld", k);
		fig(name, (now() - t0) * 1e9 / m);
		for (; live < k; live++)
			if (!(pd[live] = ibv_alloc_pd(ctx)))
				goto out;
	}
out:
	while (live > 0)
		ibv_dealloc_pd(pd[--live]);
	free(pd);
}

int main(int argc, char **argv)
{
	const char *figs = "rt";
	struct ibv_device **l, *dev = NULL;
	struct ibv_context *ctx = NULL;
	char *list, *f;
	int opt;

	while ((opt = getopt(argc, argv, "d:n:c:s:S:A:m:k:f:")) != -1) {
		switch (opt) {
		case 'd': dev_name = optarg; break;
		case 'n': n = atol(optarg); break;
		case 'c': n_obj = atol(optarg); break;
		case 's': n_slab = atol(optarg); break;
		case 'S': n_slab_srq = atol(optarg); break;
		case 'A': n_slab_ah = atol(optarg); break;
		case 'm': mr_max_mib = atol(optarg); break;
		case 'k': scale_max = atol(optarg); break;
		case 'f': figs = optarg; break;
		default:
			fprintf(stderr, "usage: uverbs_bench -d DEV [-n N] [-c N_OBJ] [-s N_SLAB] [-S SLAB_SRQ] [-A SLAB_AH] [-m MR_MAX_MIB] [-k SCALE_MAX] [-f FIGURES]\n");
			return 2;
		}
	}
	if (n < 1 || n_obj < 1 || n_slab < 1 || mr_max_mib < 1 || scale_max < 10) {
		fprintf(stderr, "uverbs_bench: counts must be positive (SCALE_MAX >= 10)\n");
		return 2;
	}
	if (n_slab_srq < 0)
		n_slab_srq = n_slab;
	if (n_slab_ah < 0)
		n_slab_ah = n_slab;
	if (!strncmp(dev_name, "mlx5", 4))
		drv_id = RDMA_DRIVER_MLX5;
	l = ibv_get_device_list(NULL);
	for (int i = 0; l && l[i]; i++)
		if (!strcmp(ibv_get_device_name(l[i]), dev_name)) {
			dev = l[i];
			ctx = ibv_open_device(dev);
		}
	if (!ctx) {
		fprintf(stderr, "uverbs_bench: cannot open %s\n", dev_name);
		return 1;
	}
	list = strdup(figs);
	for (f = strtok(list, ","); f; f = strtok(NULL, ",")) {
		if (!strcmp(f, "rt"))
			fig_rt(ctx);
		else if (!strcmp(f, "raw") || !strcmp(f, "bad"))
			fig_raw(ctx, !strcmp(f, "bad"));
		else if (!strcmp(f, "qc"))
			fig("query_context_ns", query_context_ns(ctx->cmd_fd, n));
		else if (!strcmp(f, "cq"))
			fig_cq(ctx);
		else if (!strcmp(f, "qp"))
			fig_qp(ctx);
		else if (!strcmp(f, "qpinit"))
			fig_qpinit(ctx);
		else if (!strcmp(f, "mr"))
			fig_mr(ctx);
		else if (!strcmp(f, "pin"))
			fig_pin();
		else if (!strcmp(f, "slab"))
			fig_slab(ctx);
		else if (!strcmp(f, "scale"))
			fig_scale(ctx);
		else if (!strcmp(f, "obj"))
			fig_obj(ctx);
		else if (!strcmp(f, "ah"))
			fig_ah(ctx);
		else if (!strcmp(f, "ctx"))
			fig_ctx(dev);
		else
			fprintf(stderr, "uverbs_bench: unknown figure %s\n", f);
	}
	free(list);
	ibv_close_device(ctx);
	ibv_free_device_list(l);
	return 0;
}
