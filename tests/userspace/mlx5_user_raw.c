// SPDX-License-Identifier: GPL-2.0
/*
 * Raw mlx5 user objects through uverbs write() commands with libmlx5's driver
 * data (mlx5-abi.h), without libibverbs: a context (DYN_UAR, CQE version 1),
 * a PD (pdn answered), an NC UAR object and its mmap, a CQ and an RC QP on that UAR
 * page whose buffers and doorbell records are
 * in this process's memory (pinned by the kernel), an MR; the errnos of
 * malformed requests; and an injected firmware failure of each create command
 * through the simulator's debugfs fault knob. Prints one line per check:
 *   R ok <desc> | R fail <desc>: <why>
 *
 *   mlx5_user_raw /dev/infiniband/uverbsN /sys/kernel/debug/mlx5_fwsim/<fn> [-e]
 *
 * -e: also CQ_CREATE by ioctl with UVERBS_ATTR_CREATE_CQ_EVENT_FD, as libibverbs sends it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>
#include <rdma/ib_user_ioctl_cmds.h>
#include <rdma/ib_user_verbs.h>
#include <rdma/mlx5-abi.h>
#include <rdma/mlx5_user_ioctl_cmds.h>
#include <rdma/mlx5_user_ioctl_verbs.h>
#include <rdma/rdma_user_ioctl_cmds.h>

enum { IB_QPT_RC = 2, IB_ACCESS_LOCAL_WRITE = 1 };

static int failures;
static const char *dbg;

static void expect(const char *desc, int got, int want)
{
	if (got == want) {
		printf("R ok %s (errno %d)\n", desc, got);
	} else {
		printf("R fail %s: errno %d (%s), want %d\n", desc, got, strerror(got), want);
		failures++;
	}
}

static int do_write(int fd, uint32_t cmd, void *body, size_t body_len, size_t out_words)
{
	char buf[1024];
	struct ib_uverbs_cmd_hdr *h = (void *)buf;

	h->command = cmd;
	h->in_words = (sizeof(*h) + body_len) / 4;
	h->out_words = out_words;
	memcpy(buf + sizeof(*h), body, body_len);
	return write(fd, buf, sizeof(*h) + body_len) < 0 ? errno : 0;
}

/* What the last GET_CONTEXT answered: the driver's response and NUM_COMP_VECTORS. */
static struct mlx5_ib_alloc_ucontext_resp alloc_resp;
static uint32_t alloc_ncv;

static int get_context(int fd)
{
	struct {
		struct ib_uverbs_ioctl_hdr hdr;
		struct ib_uverbs_attr attrs[3];
	} r;
	struct mlx5_ib_alloc_ucontext_req_v2 req = {
		.max_cqe_version = 1,
		.lib_caps = MLX5_LIB_CAP_4K_UAR | MLX5_LIB_CAP_DYN_UAR,
	};
	struct mlx5_ib_alloc_ucontext_resp resp = {};
	uint32_t ncv = 0;

	memset(&r, 0, sizeof(r));
	r.hdr.length = sizeof(r);
	r.hdr.object_id = UVERBS_OBJECT_DEVICE;
	r.hdr.method_id = UVERBS_METHOD_GET_CONTEXT;
	r.hdr.num_attrs = 3;
	r.hdr.driver_id = RDMA_DRIVER_MLX5;
	r.attrs[0] = (struct ib_uverbs_attr){ .attr_id = UVERBS_ATTR_UHW_IN, .len = sizeof(req),
					      .data = (uintptr_t)&req };
	r.attrs[1] = (struct ib_uverbs_attr){ .attr_id = UVERBS_ATTR_UHW_OUT, .len = sizeof(resp),
					      .data = (uintptr_t)&resp };
	r.attrs[2] = (struct ib_uverbs_attr){ .attr_id = UVERBS_ATTR_GET_CONTEXT_NUM_COMP_VECTORS,
					      .len = 4, .data = (uintptr_t)&ncv };
	if (ioctl(fd, RDMA_VERBS_IOCTL, &r))
		return errno;
	alloc_resp = resp;
	alloc_ncv = ncv;
	return resp.cqe_version == 1 ? 0 : EPROTO;
}

/*
 * UVERBS_METHOD_QUERY_CONTEXT as libmlx5's mlx5_import_context() sends it (ibv_cmd_query_context()
 * plus MLX5_IB_ATTR_QUERY_CONTEXT_RESP_UCTX), into `resp` (`uctx_len` bytes of it; 0: the
 * mandatory driver attribute left out); `ncv_len`: the length given for NUM_COMP_VECTORS.
 */
static int query_context(int fd, void *resp, uint16_t uctx_len, uint16_t ncv_len, uint32_t *ncv,
			 uint64_t *core_support)
{
	struct {
		struct ib_uverbs_ioctl_hdr hdr;
		struct ib_uverbs_attr attrs[3];
	} r;
	int n = 0;

	memset(&r, 0, sizeof(r));
	r.hdr.object_id = UVERBS_OBJECT_DEVICE;
	r.hdr.method_id = UVERBS_METHOD_QUERY_CONTEXT;
	r.hdr.driver_id = RDMA_DRIVER_MLX5;
	r.attrs[n++] = (struct ib_uverbs_attr){ .attr_id = UVERBS_ATTR_QUERY_CONTEXT_NUM_COMP_VECTORS,
						.len = ncv_len, .data = (uintptr_t)ncv };
	r.attrs[n++] = (struct ib_uverbs_attr){ .attr_id = UVERBS_ATTR_QUERY_CONTEXT_CORE_SUPPORT,
						.len = 8, .data = (uintptr_t)core_support };
	if (uctx_len)
		r.attrs[n++] = (struct ib_uverbs_attr){ .attr_id = MLX5_IB_ATTR_QUERY_CONTEXT_RESP_UCTX,
							.len = uctx_len, .data = (uintptr_t)resp };
	r.hdr.num_attrs = n;
	r.hdr.length = sizeof(r.hdr) + n * sizeof(r.attrs[0]);
	return ioctl(fd, RDMA_VERBS_IOCTL, &r) ? errno : 0;
}

/*
 * QUERY_CONTEXT (upstream UVERBS_HANDLER(UVERBS_METHOD_QUERY_CONTEXT) and
 * mlx5_ib_query_ucontext()): the core's comp vectors and core support, and the driver's
 * response, which is the one GET_CONTEXT answered (both set_ucontext_resp()); the rest of a
 * longer buffer zeroed; the errnos of a file without a context and of bad attributes.
 */
static void query_context_checks(int fd, int fd_no_ctx)
{
	unsigned char buf[sizeof(struct mlx5_ib_alloc_ucontext_resp) + 8];
	const size_t rl = sizeof(struct mlx5_ib_alloc_ucontext_resp);
	uint64_t cs = 0;
	uint32_t ncv = 0;
	size_t i;
	int z;

	memset(buf, 0xff, sizeof(buf));
	expect("QUERY_CONTEXT with the mlx5 response", query_context(fd, buf, rl, 4, &ncv, &cs), 0);
	printf("I query_context num_comp_vectors %u core_support %llu qp_tab_size %u "
	       "max_send_wqebb %u max_recv_wr %u max_srq_recv_wr %u cqe_version %u num_ports %u "
	       "cmds_supp_uhw %u log_uar_size %u num_uars_per_page %u comp_mask 0x%x "
	       "response_length %u\n",
	       ncv, (unsigned long long)cs, alloc_resp.qp_tab_size, alloc_resp.max_send_wqebb,
	       alloc_resp.max_recv_wr, alloc_resp.max_srq_recv_wr, alloc_resp.cqe_version,
	       alloc_resp.num_ports, alloc_resp.cmds_supp_uhw, alloc_resp.log_uar_size,
	       alloc_resp.num_uars_per_page, alloc_resp.comp_mask, alloc_resp.response_length);
	expect("QUERY_CONTEXT: NUM_COMP_VECTORS as GET_CONTEXT's",
	       ncv == alloc_ncv && ncv > 0 ? 0 : EPROTO, 0);
	expect("QUERY_CONTEXT: CORE_SUPPORT is OPTIONAL_MR_ACCESS",
	       cs == IB_UVERBS_CORE_SUPPORT_OPTIONAL_MR_ACCESS ? 0 : EPROTO, 0);
	expect("QUERY_CONTEXT: the mlx5 response is GET_CONTEXT's",
	       memcmp(buf, &alloc_resp, rl) ? EPROTO : 0, 0);
	memset(buf, 0xff, sizeof(buf));
	expect("QUERY_CONTEXT with 8 bytes more than the response",
	       query_context(fd, buf, sizeof(buf), 4, &ncv, &cs), 0);
	for (z = 1, i = rl; i < sizeof(buf); i++)
		z &= buf[i] == 0;
	expect("QUERY_CONTEXT: the response as before, its length the struct's, the excess zeroed",
	       !memcmp(buf, &alloc_resp, rl) && z ? 0 : EPROTO, 0);
	expect("QUERY_CONTEXT without the mandatory mlx5 attribute: EINVAL",
	       query_context(fd, buf, 0, 4, &ncv, &cs), EINVAL);
	expect("QUERY_CONTEXT with a response shorter than dump_fill_mkey's end: EINVAL",
	       query_context(fd, buf, rl - 4, 4, &ncv, &cs), EINVAL);
	expect("QUERY_CONTEXT with 8 bytes for the u32 NUM_COMP_VECTORS: EINVAL",
	       query_context(fd, buf, rl, 8, &ncv, &cs), EINVAL);
	expect("QUERY_CONTEXT on a file without a context: EINVAL",
	       query_context(fd_no_ctx, buf, rl, 4, &ncv, &cs), EINVAL);
}

/* MLX5_IB_METHOD_UAR_OBJ_ALLOC as libmlx5's mlx5_alloc_dyn_uar() sends it. */
static int uar_alloc(int fd, uint32_t type, uint32_t *handle, uint32_t *page_id,
		     uint32_t *length, uint64_t *offset)
{
	struct {
		struct ib_uverbs_ioctl_hdr hdr;
		struct ib_uverbs_attr attrs[5];
	} r;

	memset(&r, 0, sizeof(r));
	r.hdr.length = sizeof(r);
	r.hdr.object_id = MLX5_IB_OBJECT_UAR;
	r.hdr.method_id = MLX5_IB_METHOD_UAR_OBJ_ALLOC;
	r.hdr.num_attrs = 5;
	r.hdr.driver_id = RDMA_DRIVER_MLX5;
	r.attrs[0] = (struct ib_uverbs_attr){ .attr_id = MLX5_IB_ATTR_UAR_OBJ_ALLOC_HANDLE,
					      .flags = UVERBS_ATTR_F_MANDATORY };
	r.attrs[1] = (struct ib_uverbs_attr){ .attr_id = MLX5_IB_ATTR_UAR_OBJ_ALLOC_TYPE, .len = 8,
					      .flags = UVERBS_ATTR_F_MANDATORY, .data = type };
	r.attrs[2] = (struct ib_uverbs_attr){ .attr_id = MLX5_IB_ATTR_UAR_OBJ_ALLOC_MMAP_OFFSET,
					      .len = 8, .flags = UVERBS_ATTR_F_MANDATORY,
					      .data = (uintptr_t)offset };
	r.attrs[3] = (struct ib_uverbs_attr){ .attr_id = MLX5_IB_ATTR_UAR_OBJ_ALLOC_MMAP_LENGTH,
					      .len = 4, .flags = UVERBS_ATTR_F_MANDATORY,
					      .data = (uintptr_t)length };
	r.attrs[4] = (struct ib_uverbs_attr){ .attr_id = MLX5_IB_ATTR_UAR_OBJ_ALLOC_PAGE_ID,
					      .len = 4, .flags = UVERBS_ATTR_F_MANDATORY,
					      .data = (uintptr_t)page_id };
	if (ioctl(fd, RDMA_VERBS_IOCTL, &r))
		return errno;
	*handle = r.attrs[0].data;
	return 0;
}

static int uar_destroy(int fd, uint32_t handle)
{
	struct {
		struct ib_uverbs_ioctl_hdr hdr;
		struct ib_uverbs_attr attrs[1];
	} r;

	memset(&r, 0, sizeof(r));
	r.hdr.length = sizeof(r);
	r.hdr.object_id = MLX5_IB_OBJECT_UAR;
	r.hdr.method_id = MLX5_IB_METHOD_UAR_OBJ_DESTROY;
	r.hdr.num_attrs = 1;
	r.hdr.driver_id = RDMA_DRIVER_MLX5;
	r.attrs[0] = (struct ib_uverbs_attr){ .attr_id = MLX5_IB_ATTR_UAR_OBJ_DESTROY_HANDLE,
					      .flags = UVERBS_ATTR_F_MANDATORY, .data = handle };
	return ioctl(fd, RDMA_VERBS_IOCTL, &r) ? errno : 0;
}

static int fault(const char *opcode)
{
	char p[256];
	int fd, r;

	snprintf(p, sizeof(p), "%s/fail_opcode", dbg);
	fd = open(p, O_WRONLY);
	if (fd < 0)
		return errno;
	r = write(fd, opcode, strlen(opcode)) < 0 ? errno : 0;
	close(fd);
	return r;
}

/* The simulator's live objects of a kind (debugfs `resources`). */
static int count(const char *kind)
{
	char p[256], k[32];
	int n = -1, v;
	FILE *f;

	snprintf(p, sizeof(p), "%s/resources", dbg);
	f = fopen(p, "r");
	if (!f)
		return -1;
	while (fscanf(f, "%31s %d", k, &v) == 2)
		if (!strcmp(k, kind))
			n = v;
	fclose(f);
	return n;
}

/* A counter of the simulator's debugfs `stats` ("name value" lines), -1 if absent. */
static long long stat_of(const char *name)
{
	char p[256], line[256], k[64];
	long long n = -1, v;
	FILE *f;

	snprintf(p, sizeof(p), "%s/stats", dbg);
	f = fopen(p, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%63s %lld", k, &v) == 2 && !strcmp(k, name))
			n = v;
	fclose(f);
	return n;
}

/* Whether mlx5_ib_rs emulates UAR stores (uar_emulate=1, the default). */
static int emulating(void)
{
	FILE *f = fopen("/sys/module/mlx5_ib_rs/parameters/uar_emulate", "r");
	int c = f ? fgetc(f) : 0;

	if (f)
		fclose(f);
	return c == 'Y' || c == '1';
}

/*
 * User stores to UAR pages (Documentation/datapath.md, "Doorbells"): with uar_emulate=1 (the
 * default) a MOV of 32 or 64 bits is emulated in its fault (its bytes land in the page, the
 * registers are the program's, execution continues after it); a form the decoder refuses (a
 * 16-bit store), or a store to the page that faulted last, is executed by the CPU on the
 * installed page. `uar` is the context's UAR page,
 * `uar2` a second one. Offsets 0x400.. are no doorbell. Everything is read back through the
 * mappings afterwards (a read installs a page).
 */
static void uar_store_checks(volatile uint8_t *uar, volatile uint8_t *uar2)
{
	long long t0 = stat_of("uar_traps"), e0 = stat_of("fabric_stores_emulated");
	uint64_t v64 = 0x0123456789abcdefull, after = 0;
	uint16_t v16 = 0xbeef;
	volatile uint8_t *p = uar + 0x400, *q = uar2 + 0x400;

	if (t0 < 0 || e0 < 0) {
		expect("debugfs stats has uar_traps and fabric_stores_emulated", EPROTO, 0);
		return;
	}
#if defined(__x86_64__)
	/* mov %rax,(%rdx), then %rax read back: the emulation left it alone. */
	__asm__ volatile("movq %1, (%2)\n\tmovq %1, %0"
			 : "=&r"(after)
			 : "a"(v64), "d"(p)
			 : "memory");
	/* movl $0x5a5aa5a5, 8(%rdx) (C7 /0 with a disp8), to the other page. */
	__asm__ volatile("movl $0x5a5aa5a5, 8(%0)" : : "d"(q) : "memory");
	expect("two MOV stores to two UAR pages: both emulated in their fault",
	       stat_of("fabric_stores_emulated") - e0 == 2 && stat_of("uar_traps") - t0 == 2 ?
		       0 : EPROTO, 0);
	expect("the emulated store's source register is unchanged", after == v64 ? 0 : EPROTO, 0);
	/* movw %ax,16(%rdx) to the first page: an operand-size prefix, refused: installed. */
	__asm__ volatile("movw %0, 16(%1)" : : "a"(v16), "d"(p) : "memory");
	expect("a 16-bit store: a trap, not emulated",
	       stat_of("fabric_stores_emulated") - e0 == 2 && stat_of("uar_traps") - t0 == 3 ?
		       0 : EPROTO, 0);
	/*
	 * Stores in a row to the second page: once one follows another with no worker pass in
	 * between, it goes to the page that faulted last (a stream's), which is installed and
	 * polled rather than a fault per store: of 20 stores, fewer than 20 are emulated and
	 * fewer than 20 fault (with every store emulated, all 20 would be).
	 */
	{
		long long e1 = stat_of("fabric_stores_emulated"), t1 = stat_of("uar_traps");
		int i;

		for (i = 0; i < 20; i++)
			__asm__ volatile("movq %0, 24(%1)" : : "a"(v64 + i), "d"(q) : "memory");
		expect("20 stores in a row to one UAR page: fewer than 20 emulated (a stream's take the installed page)",
		       stat_of("fabric_stores_emulated") - e1 < 20 && stat_of("uar_traps") - t1 < 20 ?
			       0 : EPROTO, 0);
		expect("the last of them is in the page",
		       *(volatile uint64_t *)(q + 24) == v64 + 19 ? 0 : EPROTO, 0);
	}
	expect("the emulated 64-bit store is in the page", *(volatile uint64_t *)p == v64 ?
	       0 : EPROTO, 0);
	expect("the emulated 32-bit immediate store is in the page",
	       *(volatile uint32_t *)(q + 8) == 0x5a5aa5a5 ? 0 : EPROTO, 0);
	expect("the 16-bit store the CPU executed is in the page",
	       *(volatile uint16_t *)(p + 16) == v16 ? 0 : EPROTO, 0);
#endif
}

static int alloc_pd(int fd, uint32_t *handle, uint32_t *pdn)
{
	struct {
		struct ib_uverbs_alloc_pd_resp core;
		struct mlx5_ib_alloc_pd_resp drv;
	} resp = {};
	struct ib_uverbs_alloc_pd cmd = { .response = (uintptr_t)&resp };
	int e = do_write(fd, IB_USER_VERBS_CMD_ALLOC_PD, &cmd, sizeof(cmd), sizeof(resp) / 4);

	*handle = resp.core.pd_handle;
	*pdn = resp.drv.pdn;
	return e;
}

static int create_cq(int fd, struct mlx5_ib_create_cq *drv, uint32_t *handle, uint32_t *cqn)
{
	struct {
		struct ib_uverbs_create_cq core;
		struct mlx5_ib_create_cq drv;
	} cmd = {};
	struct {
		struct ib_uverbs_create_cq_resp core;
		struct mlx5_ib_create_cq_resp drv;
	} resp = {};
	int e;

	cmd.core = (struct ib_uverbs_create_cq){ .response = (uintptr_t)&resp, .user_handle = 1,
						 .cqe = 15, .comp_channel = -1 };
	cmd.drv = *drv;
	e = do_write(fd, IB_USER_VERBS_CMD_CREATE_CQ, &cmd, sizeof(cmd), sizeof(resp) / 4);
	*handle = resp.core.cq_handle;
	*cqn = resp.drv.cqn;
	return e;
}

/* UVERBS_METHOD_CQ_CREATE as libibverbs' ibv_icmd_create_cq() sends it, the mlx5
 * request in UHW_IN; with an async event fd when async_fd >= 0. */
static int create_cq_ioctl(int fd, struct mlx5_ib_create_cq *drv, int async_fd, uint32_t *handle,
			   uint32_t *cqn)
{
	struct {
		struct ib_uverbs_ioctl_hdr hdr;
		struct ib_uverbs_attr attrs[8];
	} r;
	struct mlx5_ib_create_cq_resp resp = {};
	uint32_t resp_cqe = 0;
	int n = 0;

	memset(&r, 0, sizeof(r));
	r.hdr.object_id = UVERBS_OBJECT_CQ;
	r.hdr.method_id = UVERBS_METHOD_CQ_CREATE;
	r.hdr.driver_id = RDMA_DRIVER_MLX5;
	r.attrs[n++] = (struct ib_uverbs_attr){ .attr_id = UVERBS_ATTR_CREATE_CQ_HANDLE };
	r.attrs[n++] = (struct ib_uverbs_attr){ .attr_id = UVERBS_ATTR_CREATE_CQ_RESP_CQE, .len = 4,
						.data = (uintptr_t)&resp_cqe };
	r.attrs[n++] = (struct ib_uverbs_attr){ .attr_id = UVERBS_ATTR_CREATE_CQ_CQE, .len = 4,
						.data = 15 };
	r.attrs[n++] = (struct ib_uverbs_attr){ .attr_id = UVERBS_ATTR_CREATE_CQ_USER_HANDLE,
						.len = 8, .data = 1 };
	r.attrs[n++] = (struct ib_uverbs_attr){ .attr_id = UVERBS_ATTR_CREATE_CQ_COMP_VECTOR,
						.len = 4, .data = 0 };
	if (async_fd >= 0)
		r.attrs[n++] = (struct ib_uverbs_attr){ .attr_id = UVERBS_ATTR_CREATE_CQ_EVENT_FD,
							.len = 4, .data = async_fd };
	r.attrs[n++] = (struct ib_uverbs_attr){ .attr_id = UVERBS_ATTR_UHW_IN,
						.len = sizeof(*drv), .data = (uintptr_t)drv };
	r.attrs[n++] = (struct ib_uverbs_attr){ .attr_id = UVERBS_ATTR_UHW_OUT,
						.len = sizeof(resp), .data = (uintptr_t)&resp };
	r.hdr.num_attrs = n;
	r.hdr.length = sizeof(r.hdr) + n * sizeof(r.attrs[0]);
	if (ioctl(fd, RDMA_VERBS_IOCTL, &r))
		return errno;
	*handle = r.attrs[0].data;
	*cqn = resp.cqn;
	return 0;
}

static int async_fd_alloc(int fd)
{
	struct {
		struct ib_uverbs_ioctl_hdr hdr;
		struct ib_uverbs_attr attrs[1];
	} r;

	memset(&r, 0, sizeof(r));
	r.hdr.length = sizeof(r);
	r.hdr.object_id = UVERBS_OBJECT_ASYNC_EVENT;
	r.hdr.method_id = UVERBS_METHOD_ASYNC_EVENT_ALLOC;
	r.hdr.num_attrs = 1;
	r.hdr.driver_id = RDMA_DRIVER_MLX5;
	r.attrs[0] = (struct ib_uverbs_attr){ .attr_id = UVERBS_ATTR_ASYNC_EVENT_ALLOC_FD_HANDLE };
	if (ioctl(fd, RDMA_VERBS_IOCTL, &r))
		return -errno;
	return (int)r.attrs[0].data;
}

static int destroy_cq(int fd, uint32_t h)
{
	struct ib_uverbs_destroy_cq_resp resp;
	struct ib_uverbs_destroy_cq cmd = { .response = (uintptr_t)&resp, .cq_handle = h };

	return do_write(fd, IB_USER_VERBS_CMD_DESTROY_CQ, &cmd, sizeof(cmd), sizeof(resp) / 4);
}

static int create_qp(int fd, uint32_t pd, uint32_t cq, struct mlx5_ib_create_qp *drv,
		     uint32_t *handle, struct mlx5_ib_create_qp_resp *dresp)
{
	struct {
		struct ib_uverbs_create_qp core;
		struct mlx5_ib_create_qp drv;
	} cmd = {};
	struct {
		struct ib_uverbs_create_qp_resp core;
		struct mlx5_ib_create_qp_resp drv;
	} resp = {};
	int e;

	cmd.core = (struct ib_uverbs_create_qp){
		.response = (uintptr_t)&resp, .user_handle = 2, .pd_handle = pd,
		.send_cq_handle = cq, .recv_cq_handle = cq, .max_send_wr = 16,
		.max_recv_wr = 16, .max_send_sge = 1, .max_recv_sge = 1, .qp_type = IB_QPT_RC,
	};
	cmd.drv = *drv;
	e = do_write(fd, IB_USER_VERBS_CMD_CREATE_QP, &cmd, sizeof(cmd), sizeof(resp) / 4);
	*handle = resp.core.qp_handle;
	*dresp = resp.drv;
	return e;
}

static int destroy_qp(int fd, uint32_t h)
{
	struct ib_uverbs_destroy_qp_resp resp;
	struct ib_uverbs_destroy_qp cmd = { .response = (uintptr_t)&resp, .qp_handle = h };

	return do_write(fd, IB_USER_VERBS_CMD_DESTROY_QP, &cmd, sizeof(cmd), sizeof(resp) / 4);
}

static int reg_mr(int fd, uint32_t pd, void *addr, size_t len, uint32_t *handle, uint32_t *lkey)
{
	struct ib_uverbs_reg_mr_resp resp = {};
	struct ib_uverbs_reg_mr cmd = { .response = (uintptr_t)&resp, .start = (uintptr_t)addr,
					.length = len, .hca_va = (uintptr_t)addr, .pd_handle = pd,
					.access_flags = IB_ACCESS_LOCAL_WRITE };
	int e = do_write(fd, IB_USER_VERBS_CMD_REG_MR, &cmd, sizeof(cmd), sizeof(resp) / 4);

	*handle = resp.mr_handle;
	*lkey = resp.lkey;
	return e;
}

/* Whether the function's port is Ethernet (debugfs identity). */
static int is_ethernet(void)
{
	char p[256], line[128];
	int eth = 0;
	FILE *f;

	snprintf(p, sizeof(p), "%s/identity", dbg);
	f = fopen(p, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "link_layer Ethernet", 19))
			eth = 1;
	fclose(f);
	return eth;
}

/* CREATE_AH (struct ib_uverbs_create_ah + the mlx5 response with the dmac), from source GID
 * index sgid. */
static int create_ah_sgid(int fd, uint32_t pd, uint8_t port, int global, uint8_t sgid,
			  const uint8_t *dgid, uint32_t *handle,
			  struct mlx5_ib_create_ah_resp *drv, size_t drv_len)
{
	struct {
		struct ib_uverbs_create_ah_resp core;
		struct mlx5_ib_create_ah_resp drv;
	} resp = {};
	struct ib_uverbs_create_ah cmd = {
		.response = (uintptr_t)&resp,
		.pd_handle = pd,
		.attr = { .dlid = 2, .port_num = port, .is_global = global,
			  .grh = { .sgid_index = sgid, .hop_limit = 64 } },
	};
	int e;

	if (dgid)
		memcpy(cmd.attr.grh.dgid, dgid, 16);
	e = do_write(fd, IB_USER_VERBS_CMD_CREATE_AH, &cmd, sizeof(cmd),
		     (sizeof(resp.core) + drv_len) / 4);
	*handle = resp.core.ah_handle;
	*drv = resp.drv;
	return e;
}

/* CREATE_AH from source GID index 0. */
static int create_ah(int fd, uint32_t pd, uint8_t port, int global, const uint8_t *dgid,
		     uint32_t *handle, struct mlx5_ib_create_ah_resp *drv, size_t drv_len)
{
	return create_ah_sgid(fd, pd, port, global, 0, dgid, handle, drv, drv_len);
}

static int destroy_ah(int fd, uint32_t h)
{
	struct ib_uverbs_destroy_ah cmd = { .ah_handle = h };

	return do_write(fd, IB_USER_VERBS_CMD_DESTROY_AH, &cmd, sizeof(cmd), 0);
}

static int dealloc_pd(int fd, uint32_t h)
{
	struct ib_uverbs_dealloc_pd cmd = { .pd_handle = h };

	return do_write(fd, IB_USER_VERBS_CMD_DEALLOC_PD, &cmd, sizeof(cmd), 0);
}

/*
 * Address handles (upstream ib_uverbs_create_ah() + mlx5_ib_create_ah()): a
 * bad port or PD is EINVAL; on RoCE a GRH is mandatory and the response
 * carries the destination MAC of the link-local GID (what libmlx5 copies into
 * the AV); the PD is busy while an AH uses it.
 */
static void ah_checks(int fd, uint32_t pd)
{
	/* fe80::0e42:a1ff:fe00:0300, the modified EUI-64 of 0c:42:a1:00:03:00. */
	static const uint8_t dgid[16] = { 0xfe, 0x80, 0, 0, 0, 0, 0, 0,
					  0x0e, 0x42, 0xa1, 0xff, 0xfe, 0x00, 0x03, 0x00 };
	static const uint8_t dmac[6] = { 0x0c, 0x42, 0xa1, 0x00, 0x03, 0x00 };
	struct mlx5_ib_create_ah_resp r;
	uint32_t ah, ah2, pd2, pdn2;
	int eth = is_ethernet();

	expect("CREATE_AH on port 2 of a one-port function: EINVAL",
	       create_ah(fd, pd, 2, 1, dgid, &ah, &r, sizeof(r)), EINVAL);
	expect("CREATE_AH with a PD handle that does not exist: EINVAL",
	       create_ah(fd, pd + 100, 1, 1, dgid, &ah, &r, sizeof(r)), EINVAL);
	/* upstream rdma_fill_sgid_attr() -> rdma_get_gid_attr(): an index past the GID table
	 * (8 entries on InfiniBand) is EINVAL, an empty entry (RoCE: 100) ENODATA. */
	if (eth)
		expect("CREATE_AH from the empty RoCE GID entry 100: ENODATA",
		       create_ah_sgid(fd, pd, 1, 1, 100, dgid, &ah, &r, sizeof(r)), ENODATA);
	else
		expect("CREATE_AH from GID index 255, past the table: EINVAL",
		       create_ah_sgid(fd, pd, 1, 1, 255, dgid, &ah, &r, sizeof(r)), EINVAL);
	if (eth) {
		expect("CREATE_AH without GRH on RoCE: EINVAL",
		       create_ah(fd, pd, 1, 0, NULL, &ah, &r, sizeof(r)), EINVAL);
		expect("CREATE_AH on RoCE with a response too short for the dmac: EINVAL",
		       create_ah(fd, pd, 1, 1, dgid, &ah, &r, 4), EINVAL);
		expect("CREATE_AH with a link-local GID on RoCE",
		       create_ah(fd, pd, 1, 1, dgid, &ah, &r, sizeof(r)), 0);
		expect("CREATE_AH answers response_length 10 and the GID's MAC as dmac",
		       r.response_length == 10 && !memcmp(r.dmac, dmac, 6) ? 0 : EPROTO, 0);
	} else {
		expect("CREATE_AH with a LID on InfiniBand",
		       create_ah(fd, pd, 1, 0, NULL, &ah, &r, sizeof(r)), 0);
	}
	expect("a second PD", alloc_pd(fd, &pd2, &pdn2), 0);
	expect("CREATE_AH on the second PD",
	       create_ah(fd, pd2, 1, 1, dgid, &ah2, &r, sizeof(r)), 0);
	expect("DEALLOC_PD while an AH uses it: EBUSY", dealloc_pd(fd, pd2), EBUSY);
	expect("DESTROY_AH", destroy_ah(fd, ah2), 0);
	expect("DESTROY_AH of a destroyed AH: ENOENT", destroy_ah(fd, ah2), ENOENT);
	expect("DEALLOC_PD after its AH is gone", dealloc_pd(fd, pd2), 0);
	expect("DESTROY_AH", destroy_ah(fd, ah), 0);
}

static int dereg_mr(int fd, uint32_t h)
{
	struct ib_uverbs_dereg_mr cmd = { .mr_handle = h };

	return do_write(fd, IB_USER_VERBS_CMD_DEREG_MR, &cmd, sizeof(cmd), 0);
}

/* RESIZE_CQ with libmlx5's struct mlx5_ib_resize_cq of drv_len bytes; *cqe_out is
 * the response's cqe. */
static int resize_cq(int fd, uint32_t h, uint32_t cqe, struct mlx5_ib_resize_cq *drv,
		     size_t drv_len, uint32_t *cqe_out)
{
	struct {
		struct ib_uverbs_resize_cq core;
		struct mlx5_ib_resize_cq drv;
	} cmd = {};
	struct ib_uverbs_resize_cq_resp resp = {};
	int e;

	cmd.core = (struct ib_uverbs_resize_cq){ .response = (uintptr_t)&resp, .cq_handle = h,
						 .cqe = cqe };
	cmd.drv = *drv;
	e = do_write(fd, IB_USER_VERBS_CMD_RESIZE_CQ, &cmd, sizeof(cmd.core) + drv_len,
		     sizeof(resp) / 4);
	*cqe_out = resp.cqe;
	return e;
}

/* IB_USER_VERBS_EX_CMD_MODIFY_CQ (no response). */
static int modify_cq(int fd, uint32_t h, uint32_t mask, uint16_t count, uint16_t period,
		     uint32_t reserved)
{
	struct {
		struct ib_uverbs_cmd_hdr h;
		struct ib_uverbs_ex_cmd_hdr x;
		struct ib_uverbs_ex_modify_cq c;
	} w = {};

	w.h.command = IB_USER_VERBS_CMD_FLAG_EXTENDED | IB_USER_VERBS_EX_CMD_MODIFY_CQ;
	w.h.in_words = sizeof(w.c) / 8;
	w.c = (struct ib_uverbs_ex_modify_cq){ .cq_handle = h, .attr_mask = mask,
					       .attr = { .cq_count = count, .cq_period = period },
					       .reserved = reserved };
	return write(fd, &w, sizeof(w)) < 0 ? errno : 0;
}

/* RESIZE_CQ and MODIFY_CQ on the CQ `cq` (16 CQEs of 64 bytes): upstream
 * ib_uverbs_resize_cq(), mlx5_ib_resize_cq(), ib_uverbs_ex_modify_cq(),
 * mlx5_ib_modify_cq(). */
static void cq_resize_checks(int fd, uint32_t cq, const char *old)
{
	char *nbuf = aligned_alloc(4096, 2 * 4096);
	struct mlx5_ib_resize_cq r = { .buf_addr = (uintptr_t)nbuf, .cqe_size = 64 }, bad;
	uint32_t got = 0;

	memset(nbuf, 0, 2 * 4096);
	expect("RESIZE_CQ cqe 0: EINVAL", resize_cq(fd, cq, 0, &r, sizeof(r), &got), EINVAL);
	expect("RESIZE_CQ of a handle that is no CQ: ENOENT",
	       resize_cq(fd, cq + 1000, 31, &r, sizeof(r), &got), ENOENT);
	expect("RESIZE_CQ to more than 2^log_max_cq_sz: EINVAL",
	       resize_cq(fd, cq, (1u << 24) + 1, &r, sizeof(r), &got), EINVAL);
	expect("RESIZE_CQ to its own size (15): nothing to do",
	       resize_cq(fd, cq, 15, &r, sizeof(r), &got), 0);
	expect("... and the response says 15", got == 15 ? 0 : EPROTO, 0);
	expect("RESIZE_CQ with an 8-byte request: EINVAL", resize_cq(fd, cq, 31, &r, 8, &got),
	       EINVAL);
	bad = r;
	bad.reserved0 = 1;
	expect("RESIZE_CQ with reserved0 set: EINVAL", resize_cq(fd, cq, 31, &bad, sizeof(bad), &got),
	       EINVAL);
	bad = r;
	bad.buf_addr = 0x1000;
	expect("RESIZE_CQ with an unmapped buffer: EFAULT",
	       resize_cq(fd, cq, 31, &bad, sizeof(bad), &got), EFAULT);
	expect("fault knob: MODIFY_CQ fails", fault("0x403"), 0);
	expect("RESIZE_CQ refused by firmware: EIO", resize_cq(fd, cq, 31, &r, sizeof(r), &got), EIO);
	expect("clear the knob", fault("0"), 0);
	got = 0;
	expect("RESIZE_CQ to 31 CQEs in a new buffer", resize_cq(fd, cq, 31, &r, sizeof(r), &got), 0);
	expect("... the response says 31", got == 31 ? 0 : EPROTO, 0);
	expect("... the device wrote a RESIZE CQE (opcode 5) into the old buffer's first entry",
	       (((volatile uint8_t *)old)[63] >> 4) == 5 ? 0 : EPROTO, 0);

	expect("MODIFY_CQ without an attribute: EINVAL", modify_cq(fd, cq, 0, 4, 16, 0), EINVAL);
	expect("MODIFY_CQ with an unknown attribute: EOPNOTSUPP", modify_cq(fd, cq, 3, 4, 16, 0),
	       EOPNOTSUPP);
	expect("MODIFY_CQ with reserved set: EINVAL", modify_cq(fd, cq, 1, 4, 16, 1), EINVAL);
	expect("MODIFY_CQ with a period over 4095: EINVAL", modify_cq(fd, cq, 1, 4, 4096, 0), EINVAL);
	expect("MODIFY_CQ of a handle that is no CQ: ENOENT", modify_cq(fd, cq + 1000, 1, 4, 16, 0),
	       ENOENT);
	expect("MODIFY_CQ moderation count 4, period 16", modify_cq(fd, cq, 1, 4, 16, 0), 0);
	/* nbuf stays allocated: the CQ's buffer until DESTROY_CQ. */
}

int main(int argc, char **argv)
{
	uint32_t pd, pdn = 0, cq, cqn = 0, qp, mr, lkey = 0, h, uh = 0, page_id = 0, ulen = 0;
	uint64_t uoff = 0;
	void *uar = MAP_FAILED;
	int uar0, afd, with_event_fd;
	struct mlx5_ib_create_qp_resp qresp;
	struct mlx5_ib_create_qp qreq;
	struct mlx5_ib_create_cq creq;
	char *cqbuf, *qpbuf, *dbpage, *mrbuf;
	int fd, cq0, qp0, mkey0;

	if (argc < 3 || argc > 4 || (argc == 4 && strcmp(argv[3], "-e"))) {
		fprintf(stderr, "usage: %s /dev/infiniband/uverbsN FWSIM_DEBUGFS_DIR [-e]\n", argv[0]);
		return 2;
	}
	with_event_fd = argc == 4;
	dbg = argv[2];
	fd = open(argv[1], O_RDWR);
	if (fd < 0) {
		perror(argv[1]);
		return 2;
	}
	cqbuf = aligned_alloc(4096, 4096);
	qpbuf = aligned_alloc(4096, 2 * 4096);
	dbpage = aligned_alloc(4096, 4096);
	mrbuf = aligned_alloc(4096, 4 * 4096);
	memset(cqbuf, 0, 4096);
	memset(qpbuf, 0, 2 * 4096);
	memset(dbpage, 0, 4096);
	memset(mrbuf, 0, 4 * 4096);
	cq0 = count("cq");
	qp0 = count("qp");
	mkey0 = count("mkey");

	expect("GET_CONTEXT with the v2 request (DYN_UAR, CQE version 1)", get_context(fd), 0);
	expect("ALLOC_PD", alloc_pd(fd, &pd, &pdn), 0);
	expect("ALLOC_PD answers a pdn", pdn != 0 ? 0 : EPROTO, 0);
	ah_checks(fd, pd);

	expect("UAR_OBJ_ALLOC type BF without write-combining: EOPNOTSUPP",
	       uar_alloc(fd, MLX5_IB_UAPI_UAR_ALLOC_TYPE_BF, &uh, &page_id, &ulen, &uoff), EOPNOTSUPP);
	uar0 = count("uar");
	expect("UAR_OBJ_ALLOC type NC",
	       uar_alloc(fd, MLX5_IB_UAPI_UAR_ALLOC_TYPE_NC, &uh, &page_id, &ulen, &uoff), 0);
	expect("UAR_OBJ_ALLOC: one page at offset (9 << 8) pages, a new UAR",
	       ulen == 4096 && uoff == (9 << 8) * 4096ull && count("uar") == uar0 + 1 ? 0 : EPROTO, 0);
	uar = mmap(NULL, ulen, PROT_WRITE, MAP_SHARED, fd, uoff);
	expect("mmap of the UAR page", uar == MAP_FAILED ? errno : 0, 0);
	expect("mmap of an offset without an entry: EINVAL",
	       mmap(NULL, 4096, PROT_WRITE, MAP_SHARED, fd, uoff + 4096) == MAP_FAILED ? errno : 0,
	       EINVAL);
	{
		/*
		 * The offset is this context's: upstream mlx5_ib_mmap_offset() looks
		 * it up with rdma_user_mmap_entry_get_pgoff() in the ucontext's own
		 * mmap_xa, so another file's context finds nothing (EINVAL), and a
		 * file without a context is EINVAL (ib_uverbs_get_ucontext_file()).
		 */
		int fd2 = open(argv[1], O_RDWR), fd3 = open(argv[1], O_RDWR);
		void *p;

		query_context_checks(fd, fd3);
		expect("isolation: another file's GET_CONTEXT", fd2 >= 0 ? get_context(fd2) : errno, 0);
		p = mmap(NULL, 4096, PROT_WRITE, MAP_SHARED, fd2, uoff);
		expect("isolation: mmap of one context's UAR offset on another context's file: EINVAL",
		       p == MAP_FAILED ? errno : 0, EINVAL);
		if (p != MAP_FAILED)
			munmap(p, 4096);
		p = mmap(NULL, 4096, PROT_WRITE, MAP_SHARED, fd3, uoff);
		expect("isolation: mmap of a context's UAR offset on a file without a context: EINVAL",
		       p == MAP_FAILED ? errno : 0, EINVAL);
		if (p != MAP_FAILED)
			munmap(p, 4096);
		close(fd3);
		close(fd2);
		expect("isolation: the other context's close gave its UAR back",
		       count("uar") == uar0 + 1 ? 0 : EPROTO, 0);
	}
	if (uar != MAP_FAILED && emulating()) {
		uint32_t uh2, id2, len2;
		uint64_t off2;
		void *uar2 = MAP_FAILED;

		expect("UAR_OBJ_ALLOC type NC, a second page",
		       uar_alloc(fd, MLX5_IB_UAPI_UAR_ALLOC_TYPE_NC, &uh2, &id2, &len2, &off2), 0);
		uar2 = mmap(NULL, len2, PROT_WRITE, MAP_SHARED, fd, off2);
		expect("mmap of the second UAR page", uar2 == MAP_FAILED ? errno : 0, 0);
		if (uar2 != MAP_FAILED) {
			uar_store_checks(uar, uar2);
			munmap(uar2, len2);
		}
		expect("UAR_OBJ_DESTROY of the second page", uar_destroy(fd, uh2), 0);
		expect("the second UAR is gone with its mapping",
		       count("uar") == uar0 + 1 ? 0 : EPROTO, 0);
	}
	if (uar != MAP_FAILED)
		((volatile uint32_t *)uar)[0x800 / 4] = 0x12345678; /* a doorbell write */

	/* CQ: 16 CQEs of 64 bytes in cqbuf, doorbell record at dbpage + 0, the UAR page. */
	creq = (struct mlx5_ib_create_cq){ .buf_addr = (uintptr_t)cqbuf,
					   .db_addr = (uintptr_t)dbpage, .cqe_size = 64,
					   .flags = MLX5_IB_CREATE_CQ_FLAGS_UAR_PAGE_INDEX,
					   .uar_page_index = page_id };
	{
		struct mlx5_ib_create_cq bad = creq;

		bad.cqe_size = 32;
		expect("CREATE_CQ cqe_size 32: EINVAL", create_cq(fd, &bad, &h, &cqn), EINVAL);
		bad = creq;
		bad.flags = 0;
		expect("CREATE_CQ without UAR_PAGE_INDEX (dynamic UARs): EINVAL",
		       create_cq(fd, &bad, &h, &cqn), EINVAL);
		bad = creq;
		bad.buf_addr = 0x1000;
		expect("CREATE_CQ with an unmapped buffer: EFAULT", create_cq(fd, &bad, &h, &cqn),
		       EFAULT);
		bad = creq;
		bad.db_addr = (uintptr_t)dbpage + 4092;
		expect("CREATE_CQ with a doorbell record across a page end: EINVAL",
		       create_cq(fd, &bad, &h, &cqn), EINVAL);
		expect("fault knob: CREATE_CQ fails", fault("0x400"), 0);
		expect("CREATE_CQ refused by firmware: EIO", create_cq(fd, &creq, &h, &cqn), EIO);
		expect("clear the knob", fault("0"), 0);
		expect("no CQ left by the failures", count("cq") == cq0 ? 0 : EPROTO, 0);
	}
	expect("ioctl CQ_CREATE with UHW (libibverbs' way, no event fd)",
	       create_cq_ioctl(fd, &creq, -1, &h, &cqn), 0);
	expect("ioctl CQ destroy", destroy_cq(fd, h), 0);
	if (with_event_fd) {
		/* What libibverbs 44 always sends (attr_optional): EINVAL on ours so far. */
		afd = async_fd_alloc(fd);
		expect("ASYNC_EVENT_ALLOC", afd < 0 ? -afd : 0, 0);
		expect("ioctl CQ_CREATE with UHW and the async event fd",
		       create_cq_ioctl(fd, &creq, afd, &h, &cqn), 0);
		expect("ioctl CQ destroy", destroy_cq(fd, h), 0);
	}
	expect("CREATE_CQ", create_cq(fd, &creq, &cq, &cqn), 0);
	expect("CREATE_CQ answers the cqn", cqn >= 0x40 ? 0 : EPROTO, 0);
	cq_resize_checks(fd, cq, cqbuf);

	/* RC QP: RQ 16 x 16 bytes, then SQ 64 x 64 bytes, in qpbuf; its doorbell record
	 * shares the CQ's page. */
	qreq = (struct mlx5_ib_create_qp){ .buf_addr = (uintptr_t)qpbuf,
					   .db_addr = (uintptr_t)dbpage + 64, .sq_wqe_count = 64,
					   .rq_wqe_count = 16, .rq_wqe_shift = 4,
					   .flags = MLX5_QP_FLAG_UAR_PAGE_INDEX, .uidx = 1,
					   .bfreg_index = page_id };
	{
		struct mlx5_ib_create_qp bad = qreq;

		bad.flags = 0;
		expect("CREATE_QP without a UAR flag (dynamic UARs): EINVAL",
		       create_qp(fd, pd, cq, &bad, &h, &qresp), EINVAL);
		bad = qreq;
		bad.uidx = 0xffffff;
		expect("CREATE_QP without a user index (CQE version 1): EINVAL",
		       create_qp(fd, pd, cq, &bad, &h, &qresp), EINVAL);
		bad = qreq;
		bad.sq_wqe_count = 48;
		expect("CREATE_QP with 48 send WQEBBs: EINVAL", create_qp(fd, pd, cq, &bad, &h, &qresp),
		       EINVAL);
		expect("fault knob: CREATE_QP fails", fault("0x500"), 0);
		expect("CREATE_QP refused by firmware: EIO", create_qp(fd, pd, cq, &qreq, &h, &qresp),
		       EIO);
		expect("clear the knob", fault("0"), 0);
		expect("no QP left by the failures", count("qp") == qp0 ? 0 : EPROTO, 0);
	}
	expect("CREATE_QP", create_qp(fd, pd, cq, &qreq, &qp, &qresp), 0);
	expect("CREATE_QP answers bfreg_index MLX5_IB_INVALID_BFREG",
	       qresp.bfreg_index == 1u << 31 ? 0 : EPROTO, 0);

	expect("fault knob: CREATE_MKEY fails", fault("0x200"), 0);
	expect("REG_MR refused by firmware: EIO", reg_mr(fd, pd, mrbuf + 0x100, 3 * 4096, &h, &lkey),
	       EIO);
	expect("clear the knob", fault("0"), 0);
	expect("no mkey left by the failure", count("mkey") == mkey0 ? 0 : EPROTO, 0);
	expect("REG_MR (3 pages at offset 0x100)", reg_mr(fd, pd, mrbuf + 0x100, 3 * 4096, &mr, &lkey),
	       0);
	expect("the simulator holds the CQ, QP and mkey",
	       count("cq") == cq0 + 1 && count("qp") == qp0 + 1 && count("mkey") == mkey0 + 1 ?
		       0 : EPROTO, 0);

	expect("DESTROY_QP", destroy_qp(fd, qp), 0);
	expect("DESTROY_CQ", destroy_cq(fd, cq), 0);
	expect("DEREG_MR", dereg_mr(fd, mr), 0);
	expect("the simulator is back to where it was",
	       count("cq") == cq0 && count("qp") == qp0 && count("mkey") == mkey0 ? 0 : EPROTO, 0);
	expect("UAR_OBJ_DESTROY", uar_destroy(fd, uh), 0);
	expect("the UAR stays while mapped", count("uar") == uar0 + 1 ? 0 : EPROTO, 0);
	if (uar != MAP_FAILED)
		expect("munmap of the UAR page", munmap(uar, ulen) ? errno : 0, 0);
	expect("the UAR is gone with its last mapping", count("uar") == uar0 ? 0 : EPROTO, 0);
	close(fd);
	printf("%d failures\n", failures);
	return failures ? 1 : 0;
}
