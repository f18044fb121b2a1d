// SPDX-License-Identifier: GPL-2.0
/*
 * A CQ and two RC QPs made entirely through DEVX (libmlx5's mlx5dv_devx_*, Debian's
 * rdma-core 44 mlx5dv.h): umems for their buffers and doorbell records, the UAR of
 * mlx5dv_devx_alloc_uar(), the EQ of mlx5dv_devx_query_eqn(), CREATE_CQ/CREATE_QP with
 * the umem ids, RST2INIT/INIT2RTR/RTR2RTS as DEVX modify commands on a loopback pair of
 * the same function (IB: the port's LID), then WQEs written by this program (SEND and
 * RDMA WRITE: the WQE, the doorbell record, the UAR doorbell) and CQEs polled by it, the
 * bytes and the CQE status checked. Then the errnos: a command no allow-list takes, a
 * context without DEVX, a second DEVX context naming the first one's CQ, umem and QP,
 * and the destroy order (a umem or CQ still in use is EBUSY).
 * Async commands: the async query of a QP/CQ returns the sync query's bytes and the wr_id,
 * several in flight come back in order, a short read is ENOSPC, the 1 MiB budget EAGAIN,
 * the errnos of MLX5_IB_METHOD_DEVX_OBJ_ASYNC_QUERY, an fd closed with 1 MiB pending.
 * Events: two channels (with the EQE, OMIT_DATA) subscribed to the DEVX CQ's completions
 * (armed through the UAR: one event per arm) and to QP B's WQ_ACCESS_ERROR (an RDMA WRITE with
 * a bad rkey), the subscription errnos, short reads EINVAL. The fds outlive the context's
 * close and the unplug: POLLRDHUP, a blocking read EIO, a non-blocking one EAGAIN.
 *
 *   devx_test -d mlx5_0 [-g GID_INDEX] [-f FWSIM_DIR] [-x | -w FILE]
 *
 * -f: the function's simulator debugfs directory: its fail_opcode knob makes libmlx5 open a
 * context without DEVX (CREATE_UCTX refused, libmlx5 falls back), whose DEVX calls must fail.
 * -g: RoCE, the path's GRH from that GID index to the port's GID there (else IB, by LID).
 * -x: create the objects (and an async cmd fd with two queries pending, an event channel
 * subscribed to the CQ), then exit without destroying anything (the kernel's cleanup at
 * close must free them in order: DEVX objects, umems, the UCTX last).
 * -w FILE: create the objects and pass the traffic, print "I holding", wait until FILE
 * exists (the harness unbinds the function meanwhile), then exit without destroying.
 * Prints one line per check: "R ok <what>" or "R fail <what>: <why>"; exit status 1 on
 * any failure.
 *
 * PRM offsets are mlx5_ifc.h's (bit offsets, MLX5_SET semantics); the umem ids in
 * create_cq_in, cqc and qpc are the PRM's (DPDK's mlx5_prm.h), bits mlx5_ifc.h leaves
 * reserved.
 *
 * LDLIBS: -lmlx5
 */
#define _GNU_SOURCE /* POLLRDHUP */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>

static int failures;

static void check(int ok, const char *what, const char *fmt, long a, long b)
{
	if (ok) {
		printf("R ok %s\n", what);
	} else {
		printf("R fail %s: ", what);
		printf(fmt, a, b);
		printf("\n");
		failures++;
	}
}

#define CHECK(c, what) check(!!(c), what, "(%ld %ld)", 0, 0)
#define EXPECT_ERRNO(got, want, what) check((got) == (want), what, "errno %ld, want %ld", (got), (want))

/* MLX5_SET / MLX5_GET on a big-endian PRM mailbox. */
static void set(void *buf, unsigned int off, unsigned int width, uint64_t v)
{
	if (width == 64) {
		uint64_t be = htobe64(v);

		memcpy((char *)buf + off / 8, &be, 8);
		return;
	}
	uint32_t *dw = (uint32_t *)buf + off / 32;
	unsigned int shift = 32 - width - (off & 31);
	uint32_t mask = (width == 32 ? 0xffffffffu : ((1u << width) - 1)) << shift;
	uint32_t x = be32toh(*dw);

	x = (x & ~mask) | (((uint32_t)v << shift) & mask);
	*dw = htobe32(x);
}

static uint32_t get(const void *buf, unsigned int off, unsigned int width)
{
	uint32_t x = be32toh(((const uint32_t *)buf)[off / 32]);
	unsigned int shift = 32 - width - (off & 31);

	return width == 32 ? x : (x >> shift) & ((1u << width) - 1);
}

/* Opcodes and statuses (mlx5_ifc.h, device.h). */
enum {
	OP_QUERY_HCA_CAP = 0x100,
	OP_CREATE_CQ = 0x400,
	OP_QUERY_CQ = 0x402,
	OP_CREATE_QP = 0x500,
	OP_RST2INIT = 0x502,
	OP_INIT2RTR = 0x503,
	OP_RTR2RTS = 0x504,
	OP_2ERR = 0x507,
	OP_2RST = 0x50a,
	OP_QUERY_QP = 0x50b,
	OP_ALLOC_PD = 0x800,
	STAT_BAD_RES = 0x5,
};

/* Header: opcode @0/16, uid @16/16, op_mod @48/16; out: status @0/8, syndrome @32/32. */
#define HDR_OPCODE 0, 16
#define OUT_STATUS 0, 8
#define OUT_SYNDROME 32, 32
#define OUT_ID24 72, 24 /* cqn, qpn, pd */
/* create_cq_in: cq_context @0x80; the umem of the buffer. */
#define CQC 0x80
#define CQ_UMEM_OFFSET 0x280, 64
#define CQ_UMEM_ID 0x2c0, 32
/* cqc members. */
#define CQC_DBR_UMEM_ID 0x20, 32
#define CQC_OI 14, 1
#define CQC_LOG_CQ_SIZE 99, 5
#define CQC_UAR_PAGE 104, 24
#define CQC_C_EQN 160, 32
#define CQC_DBR_ADDR 448, 64
/* create_qp_in: qpc @0xc0, the umem of the work queue; modify: qpn @0x48. */
#define QPC 0xc0
#define WQ_UMEM_OFFSET 0x800, 64
#define WQ_UMEM_ID 0x840, 32
#define QPN_IN 72, 24
/* qpc members. */
#define QPC_ST 8, 8
#define QPC_PM_STATE 19, 2
#define QPC_PD 40, 24
#define QPC_MTU 64, 3
#define QPC_LOG_MSG_MAX 67, 5
#define QPC_LOG_RQ_SIZE 73, 4
#define QPC_LOG_RQ_STRIDE 77, 3
#define QPC_LOG_SQ_SIZE 81, 4
#define QPC_UAR_PAGE 104, 24
#define QPC_REMOTE_QPN 168, 24
#define QPC_PATH 192 /* ads */
#define ADS_PKEY_INDEX 16, 16
#define ADS_RLID 48, 16
#define ADS_ACK_TIMEOUT 64, 5
#define ADS_VHCA_PORT 296, 8
#define ADS_GRH 40, 1
#define ADS_SRC_ADDR_INDEX 72, 8
#define ADS_HOP_LIMIT 88, 8
#define ADS_RGID 128 /* 16 bytes */
#define QPC_LOG_SRA_MAX 904, 3
#define QPC_RETRY_COUNT 909, 3
#define QPC_RNR_RETRY 912, 3
#define QPC_NEXT_SEND_PSN 968, 24
#define QPC_CQN_SND 1000, 24
#define QPC_LOG_RRA_MAX 1160, 3
#define QPC_RRE 1168, 1
#define QPC_RWE 1169, 1
#define QPC_RAE 1170, 1
#define QPC_MIN_RNR_NAK 1187, 5
#define QPC_NEXT_RCV_PSN 1192, 24
#define QPC_CQN_RCV 1256, 24
#define QPC_DBR_ADDR 1280, 64
#define QPC_STATE 0, 4
#define QPC_DBR_UMEM_ID 0x720, 32
#define QPC_RQ_TYPE 0x565, 3
#define QPC_SRQN 0x568, 24

/* A field is "offset, width": SETF/GETF pass it on expanded, as two arguments. */
#define SETF_(buf, base, o, w, v) set((buf), (base) + (o), (w), (v))
#define GETF_(buf, base, o, w) get((buf), (base) + (o), (w))
#define SETF(buf, base, f, v) SETF_(buf, base, f, v)
#define GETF(buf, base, f) GETF_(buf, base, f)

enum { CQ_LOG = 6, RQ_LOG = 4, SQ_LOG = 4, PAGE = 4096, MSG = 3000 };

struct devx_ctx {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	uint32_t pdn;
	struct mlx5dv_devx_uar *uar;
	uint32_t eqn;
	void *dbr; /* one page: CQ record at 0, QP i's at 64 * (i + 1) */
	struct mlx5dv_devx_umem *dbr_umem;
	void *cqbuf;
	struct mlx5dv_devx_umem *cq_umem;
	struct mlx5dv_devx_obj *cq;
	uint32_t cqn;
	uint32_t ci;
	void *qbuf[2];
	struct mlx5dv_devx_umem *q_umem[2];
	struct mlx5dv_devx_obj *qp[2];
	uint32_t qpn[2];
	uint32_t sq_pi[2], rq_pi[2];
};

static struct ibv_device *find_dev(const char *name)
{
	struct ibv_device **l = ibv_get_device_list(NULL);

	for (int i = 0; l && l[i]; i++)
		if (!strcmp(ibv_get_device_name(l[i]), name))
			return l[i];
	return NULL;
}

static struct ibv_context *open_devx(struct ibv_device *d)
{
	struct mlx5dv_context_attr a = { .flags = MLX5DV_CONTEXT_FLAGS_DEVX };

	return mlx5dv_open_device(d, &a);
}

static void *page_alloc(void)
{
	void *p = NULL;

	if (posix_memalign(&p, PAGE, PAGE))
		return NULL;
	memset(p, 0, PAGE);
	return p;
}

/* CREATE_CQ with its buffer and doorbell record in umems. Returns errno. */
static int create_cq(struct devx_ctx *c, uint32_t buf_umem, uint32_t dbr_umem, uint32_t *out_status)
{
	uint32_t in[0x880 / 32] = { 0 }, out[4] = { 0 };

	SETF(in, 0, HDR_OPCODE, OP_CREATE_CQ);
	SETF(in, CQC, CQC_LOG_CQ_SIZE, CQ_LOG);
	SETF(in, CQC, CQC_UAR_PAGE, c->uar->page_id);
	SETF(in, CQC, CQC_C_EQN, c->eqn);
	SETF(in, CQC, CQC_DBR_ADDR, 0);
	SETF(in, CQC, CQC_DBR_UMEM_ID, dbr_umem);
	SETF(in, 0, CQ_UMEM_ID, buf_umem);
	SETF(in, 0, CQ_UMEM_OFFSET, 0);
	errno = 0;
	c->cq = mlx5dv_devx_obj_create(c->ctx, in, sizeof(in), out, sizeof(out));
	if (out_status)
		*out_status = GETF(out, 0, OUT_STATUS);
	if (!c->cq)
		return errno;
	c->cqn = GETF(out, 0, OUT_ID24);
	return 0;
}

/* CREATE_QP (RC) on CQ cqn, its work queue and doorbell record in umems. */
static struct mlx5dv_devx_obj *create_qp(struct devx_ctx *c, int i, uint32_t cqn, uint32_t wq_umem,
					 uint32_t *qpn, uint32_t *out_status, int *err)
{
	uint32_t in[0x880 / 32] = { 0 }, out[4] = { 0 };
	struct mlx5dv_devx_obj *o;

	SETF(in, 0, HDR_OPCODE, OP_CREATE_QP);
	SETF(in, QPC, QPC_ST, 0); /* RC */
	SETF(in, QPC, QPC_PM_STATE, 3); /* migrated */
	SETF(in, QPC, QPC_PD, c->pdn);
	SETF(in, QPC, QPC_LOG_MSG_MAX, 30);
	SETF(in, QPC, QPC_LOG_RQ_SIZE, RQ_LOG);
	SETF(in, QPC, QPC_LOG_RQ_STRIDE, 0); /* 16 bytes: one data segment */
	SETF(in, QPC, QPC_LOG_SQ_SIZE, SQ_LOG);
	SETF(in, QPC, QPC_UAR_PAGE, c->uar->page_id);
	SETF(in, QPC, QPC_CQN_SND, cqn);
	SETF(in, QPC, QPC_CQN_RCV, cqn);
	SETF(in, QPC, QPC_DBR_ADDR, 64 * (i + 1));
	SETF(in, QPC, QPC_DBR_UMEM_ID, c->dbr_umem->umem_id);
	SETF(in, 0, WQ_UMEM_ID, wq_umem);
	SETF(in, 0, WQ_UMEM_OFFSET, 0);
	errno = 0;
	o = mlx5dv_devx_obj_create(c->ctx, in, sizeof(in), out, sizeof(out));
	*err = o ? 0 : errno;
	if (out_status)
		*out_status = GETF(out, 0, OUT_STATUS);
	if (o)
		*qpn = GETF(out, 0, OUT_ID24);
	return o;
}

/* RoCE: the GID index of the path (-g), and the port's GID there (the loopback destination). */
static int gid_index = -1;
static union ibv_gid port_gid;

/* A QP transition through DEVX modify; returns errno. */
static int modify(struct mlx5dv_devx_obj *o, uint16_t opcode, uint32_t qpn, uint32_t remote, uint16_t lid)
{
	uint32_t in[0x880 / 32] = { 0 }, out[4] = { 0 };

	SETF(in, 0, HDR_OPCODE, opcode);
	SETF(in, 0, QPN_IN, qpn);
	switch (opcode) {
	case OP_RST2INIT:
		SETF(in, QPC + QPC_PATH, ADS_VHCA_PORT, 1);
		SETF(in, QPC + QPC_PATH, ADS_PKEY_INDEX, 0);
		SETF(in, QPC, QPC_RRE, 1);
		SETF(in, QPC, QPC_RWE, 1);
		SETF(in, QPC, QPC_RAE, 1);
		break;
	case OP_INIT2RTR:
		SETF(in, QPC, QPC_MTU, 3); /* 1024 */
		SETF(in, QPC, QPC_LOG_MSG_MAX, 30);
		SETF(in, QPC, QPC_REMOTE_QPN, remote);
		SETF(in, QPC + QPC_PATH, ADS_RLID, lid);
		SETF(in, QPC + QPC_PATH, ADS_VHCA_PORT, 1);
		if (gid_index >= 0) { /* RoCE: a GRH to the port's own GID */
			SETF(in, QPC + QPC_PATH, ADS_GRH, 1);
			SETF(in, QPC + QPC_PATH, ADS_SRC_ADDR_INDEX, gid_index);
			SETF(in, QPC + QPC_PATH, ADS_HOP_LIMIT, 64);
			memcpy((char *)in + (QPC + QPC_PATH + ADS_RGID) / 8, port_gid.raw, 16);
		}
		SETF(in, QPC, QPC_NEXT_RCV_PSN, 0);
		SETF(in, QPC, QPC_LOG_RRA_MAX, 0);
		SETF(in, QPC, QPC_MIN_RNR_NAK, 12);
		break;
	case OP_RTR2RTS:
		SETF(in, QPC, QPC_NEXT_SEND_PSN, 0);
		SETF(in, QPC, QPC_RETRY_COUNT, 7);
		SETF(in, QPC, QPC_RNR_RETRY, 7);
		SETF(in, QPC, QPC_LOG_SRA_MAX, 0);
		SETF(in, QPC + QPC_PATH, ADS_ACK_TIMEOUT, 14);
		break;
	}
	return mlx5dv_devx_obj_modify(o, in, sizeof(in), out, sizeof(out)) ? errno : 0;
}

static int qp_state(struct mlx5dv_devx_obj *o, uint32_t qpn)
{
	uint32_t in[4] = { 0 }, out[(0xc0 + 0x740 + 0x80) / 32 + 64] = { 0 };

	SETF(in, 0, HDR_OPCODE, OP_QUERY_QP);
	SETF(in, 0, QPN_IN, qpn);
	if (mlx5dv_devx_obj_query(o, in, sizeof(in), out, sizeof(out)))
		return -errno;
	/* query_qp_out: qpc at 0xc0. */
	return GETF(out, 0xc0, QPC_STATE);
}

/* The WQEs (libmlx5's formats): control segment, [remote address], data segment. */
static void post_send(struct devx_ctx *c, int i, uint8_t opcode, void *buf, uint32_t len, uint32_t lkey,
		      uint64_t raddr, uint32_t rkey)
{
	uint32_t idx = c->sq_pi[i] & ((1 << SQ_LOG) - 1);
	uint8_t *wqe = (uint8_t *)c->qbuf[i] + (16 << RQ_LOG) + 64 * idx;
	uint32_t *ctrl = (uint32_t *)wqe;
	uint8_t *seg = wqe + 16;
	int ds = 2;

	memset(wqe, 0, 64);
	if (opcode == 0x08) { /* RDMA_WRITE: remote address segment */
		uint64_t ra = htobe64(raddr);

		memcpy(seg, &ra, 8);
		*(uint32_t *)(seg + 8) = htobe32(rkey);
		seg += 16;
		ds = 3;
	}
	*(uint32_t *)seg = htobe32(len);
	*(uint32_t *)(seg + 4) = htobe32(lkey);
	uint64_t a = htobe64((uintptr_t)buf);

	memcpy(seg + 8, &a, 8);
	ctrl[0] = htobe32(((c->sq_pi[i] & 0xffff) << 8) | opcode);
	ctrl[1] = htobe32((c->qpn[i] << 8) | ds);
	wqe[11] = 0x08; /* fm_ce_se: MLX5_WQE_CTRL_CQ_UPDATE */
	c->sq_pi[i]++;
	__sync_synchronize();
	((volatile uint32_t *)c->dbr)[16 * (i + 1) + 1] = htobe32(c->sq_pi[i] & 0xffff);
	__sync_synchronize();
	/* The UAR doorbell: the first 8 bytes of the control segment. */
	*(volatile uint64_t *)c->uar->reg_addr = *(uint64_t *)ctrl;
	__sync_synchronize();
}

static void post_recv(struct devx_ctx *c, int i, void *buf, uint32_t len, uint32_t lkey)
{
	uint32_t idx = c->rq_pi[i] & ((1 << RQ_LOG) - 1);
	uint8_t *seg = (uint8_t *)c->qbuf[i] + 16 * idx;
	uint64_t a = htobe64((uintptr_t)buf);

	*(uint32_t *)seg = htobe32(len);
	*(uint32_t *)(seg + 4) = htobe32(lkey);
	memcpy(seg + 8, &a, 8);
	c->rq_pi[i]++;
	__sync_synchronize();
	((volatile uint32_t *)c->dbr)[16 * (i + 1)] = htobe32(c->rq_pi[i] & 0xffff);
}

/* Polls one CQE (up to 5 s); returns its opcode, or -1. */
static int poll_cqe(struct devx_ctx *c, uint32_t *qpn, uint32_t *bytes, uint8_t *syndrome)
{
	for (int t = 0; t < 50000; t++) {
		uint8_t *cqe = (uint8_t *)c->cqbuf + 64 * (c->ci & ((1 << CQ_LOG) - 1));
		uint8_t op_own = ((volatile uint8_t *)cqe)[63];

		if ((op_own >> 4) != 0xf && (op_own & 1) == ((c->ci >> CQ_LOG) & 1)) {
			__sync_synchronize();
			*qpn = be32toh(*(uint32_t *)(cqe + 0x38)) & 0xffffff;
			*bytes = be32toh(*(uint32_t *)(cqe + 0x2c));
			*syndrome = cqe[0x37];
			c->ci++;
			((volatile uint32_t *)c->dbr)[0] = htobe32(c->ci & 0xffffff);
			return op_own >> 4;
		}
		usleep(100);
	}
	return -1;
}

static int setup(struct devx_ctx *c, struct ibv_device *d)
{
	struct mlx5dv_obj o = { 0 };
	struct mlx5dv_pd dpd;
	int err;

	memset(c, 0, sizeof(*c));
	c->ctx = open_devx(d);
	CHECK(c->ctx, "mlx5dv_open_device with MLX5DV_CONTEXT_FLAGS_DEVX");
	if (!c->ctx)
		return -1;
	c->pd = ibv_alloc_pd(c->ctx);
	o.pd.in = c->pd;
	o.pd.out = &dpd;
	CHECK(c->pd && !mlx5dv_init_obj(&o, MLX5DV_OBJ_PD), "PD and its pdn (mlx5dv_init_obj)");
	if (!c->pd)
		return -1;
	c->pdn = dpd.pdn;
	c->uar = mlx5dv_devx_alloc_uar(c->ctx, MLX5DV_UAR_ALLOC_TYPE_NC);
	CHECK(c->uar, "mlx5dv_devx_alloc_uar (NC)");
	err = mlx5dv_devx_query_eqn(c->ctx, 0, &c->eqn);
	EXPECT_ERRNO((long)err, 0L, "mlx5dv_devx_query_eqn(0)");
	c->dbr = page_alloc();
	c->cqbuf = page_alloc();
	for (int i = 0; i < 2; i++)
		c->qbuf[i] = page_alloc();
	for (int i = 0; i < (1 << CQ_LOG); i++)
		((uint8_t *)c->cqbuf)[64 * i + 63] = 0xf0; /* MLX5_CQE_INVALID << 4 */
	c->dbr_umem = mlx5dv_devx_umem_reg(c->ctx, c->dbr, PAGE, IBV_ACCESS_LOCAL_WRITE);
	c->cq_umem = mlx5dv_devx_umem_reg(c->ctx, c->cqbuf, PAGE, IBV_ACCESS_LOCAL_WRITE);
	for (int i = 0; i < 2; i++)
		c->q_umem[i] = mlx5dv_devx_umem_reg(c->ctx, c->qbuf[i], PAGE, IBV_ACCESS_LOCAL_WRITE);
	CHECK(c->dbr_umem && c->cq_umem && c->q_umem[0] && c->q_umem[1], "mlx5dv_devx_umem_reg x4");
	if (!c->uar || !c->dbr_umem || !c->cq_umem || !c->q_umem[0] || !c->q_umem[1])
		return -1;
	err = create_cq(c, c->cq_umem->umem_id, c->dbr_umem->umem_id, NULL);
	EXPECT_ERRNO((long)err, 0L, "DEVX CREATE_CQ over umems");
	if (err)
		return -1;
	for (int i = 0; i < 2; i++) {
		c->qp[i] = create_qp(c, i, c->cqn, c->q_umem[i]->umem_id, &c->qpn[i], NULL, &err);
		EXPECT_ERRNO((long)err, 0L, i ? "DEVX CREATE_QP B over umems" : "DEVX CREATE_QP A over umems");
		if (err)
			return -1;
	}
	return 0;
}

static void teardown(struct devx_ctx *c)
{
	for (int i = 0; i < 2; i++)
		if (c->qp[i])
			mlx5dv_devx_obj_destroy(c->qp[i]);
	if (c->cq)
		mlx5dv_devx_obj_destroy(c->cq);
	for (int i = 0; i < 2; i++)
		if (c->q_umem[i])
			mlx5dv_devx_umem_dereg(c->q_umem[i]);
	if (c->cq_umem)
		mlx5dv_devx_umem_dereg(c->cq_umem);
	if (c->dbr_umem)
		mlx5dv_devx_umem_dereg(c->dbr_umem);
	if (c->uar)
		mlx5dv_devx_free_uar(c->uar);
	if (c->pd)
		ibv_dealloc_pd(c->pd);
	if (c->ctx)
		ibv_close_device(c->ctx);
}

/*
 * Event channels (mlx5dv_devx_create_event_channel, mlx5dv_devx_subscribe_devx_event,
 * mlx5dv_devx_get_event; upstream MLX5_IB_METHOD_DEVX_SUBSCRIBE_EVENT, deliver_event(),
 * devx_async_event_read()).
 */
static short poll_events(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN | POLLRDHUP };

	return poll(&p, 1, 0) == 1 ? p.revents : 0;
}

static int read_errno(int fd, size_t len, int nonblock)
{
	char *buf = malloc(len ? len : 1);
	int fl = fcntl(fd, F_GETFL), e;
	ssize_t n;

	fcntl(fd, F_SETFL, nonblock ? fl | O_NONBLOCK : fl & ~O_NONBLOCK);
	n = read(fd, buf, len);
	e = n < 0 ? errno : 0;
	fcntl(fd, F_SETFL, fl);
	free(buf);
	return e;
}

enum { EV_COMP = 0x00, EV_PORT_CHANGE = 0x09, EV_WQ_ACCESS_ERROR = 0x11 };

static struct mlx5dv_devx_event_channel *ev_data, *ev_omit;
static int redirect_fd = -1;

static int subscribe(struct mlx5dv_devx_event_channel *ch, struct mlx5dv_devx_obj *o, uint16_t *evs,
		     int n, uint64_t cookie)
{
	int r = mlx5dv_devx_subscribe_devx_event(ch, o, n * sizeof(uint16_t), evs, cookie);

	return r < 0 ? errno : r;
}

/* Waits up to 5 s for the fd to be readable. */
static int wait_readable(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, 5000) == 1 && (p.revents & POLLIN);
}

/* Arms the CQ for the next completion (libmlx5's mlx5_arm_cq(): the doorbell record's arm
 * word, then the 64-bit store at UAR + MLX5_CQ_DOORBELL). */
static void arm_cq(struct devx_ctx *c, uint32_t sn)
{
	uint32_t v = (sn & 3) << 28 | (c->ci & 0xffffff), db[2];
	uint64_t w;

	((volatile uint32_t *)c->dbr)[1] = htobe32(v);
	__sync_synchronize();
	db[0] = htobe32(v);
	db[1] = htobe32(c->cqn);
	memcpy(&w, db, 8);
	*(volatile uint64_t *)((char *)c->uar->base_addr + 0x20) = w;
	__sync_synchronize();
}

/* Reads one event of a data channel: the cookie and the EQE; checks type and object. */
static void expect_eqe(const char *what, uint64_t cookie, uint8_t type, uint32_t num, int qp)
{
	uint8_t buf[8 + 64 + 16];
	ssize_t n;
	uint64_t ck;
	uint32_t got;

	if (!wait_readable(ev_data->fd)) {
		check(0, what, "no event in 5 s%.0ld%.0ld", 0, 0);
		return;
	}
	n = mlx5dv_devx_get_event(ev_data, (void *)buf, sizeof(buf));
	memcpy(&ck, buf, 8);
	got = be32toh(*(uint32_t *)(buf + 8 + 0x38)) & 0xffffff;
	check(n == 72 && ck == cookie && buf[8 + 1] == type && got == num && (!qp || buf[8 + 0x34] == 0), what,
	      "bytes %ld, object 0x%lx", n, got);
}

static void expect_cookie(const char *what, uint64_t cookie)
{
	uint64_t buf[4] = { 0 };
	ssize_t n;

	if (!wait_readable(ev_omit->fd)) {
		check(0, what, "no event in 5 s%.0ld%.0ld", 0, 0);
		return;
	}
	n = mlx5dv_devx_get_event(ev_omit, (void *)buf, sizeof(buf));
	check(n == 8 && buf[0] == cookie, what, "bytes %ld, cookie 0x%lx", n, (long)buf[0]);
}

static void event_errnos(struct devx_ctx *c)
{
	uint16_t evs[17] = { 0 };
	int err, efd;

	evs[0] = EV_PORT_CHANGE;
	err = subscribe(ev_data, c->cq, evs, 1, 1);
	EXPECT_ERRNO((long)err, (long)EINVAL, "subscribe a CQ to PORT_CHANGE (unaffiliated): EINVAL");
	evs[0] = EV_COMP;
	err = subscribe(ev_data, NULL, evs, 1, 1);
	EXPECT_ERRNO((long)err, (long)EINVAL, "subscribe no object to COMP (affiliated): EINVAL");
	evs[0] = EV_PORT_CHANGE;
	err = subscribe(ev_data, NULL, evs, 1, 0x9090);
	EXPECT_ERRNO((long)err, 0L, "subscribe no object to PORT_CHANGE (unaffiliated)");
	memset(evs, 0, sizeof(evs));
	err = subscribe(ev_data, c->cq, evs, 17, 1);
	EXPECT_ERRNO((long)err, (long)EINVAL, "17 event numbers (MAX_NUM_EVENTS 16): EINVAL");
	err = mlx5dv_devx_subscribe_devx_event(ev_data, c->cq, 3, evs, 1);
	err = err < 0 ? errno : err;
	EXPECT_ERRNO((long)err, (long)EINVAL, "an event list of 3 bytes: EINVAL");
	{
		/* libmlx5 44 finds the context in its struct around the channel
		 * (struct mlx5_devx_event_channel: the context, then the channel). */
		struct mlx5dv_devx_cmd_comp *cc = mlx5dv_devx_create_cmd_comp(c->ctx);
		struct {
			struct ibv_context *context;
			struct mlx5dv_devx_event_channel ch;
		} fake = { c->ctx, { cc ? cc->fd : -1 } };

		err = mlx5dv_devx_subscribe_devx_event(&fake.ch, c->cq, 2, evs, 1);
		err = err < 0 ? errno : err;
		EXPECT_ERRNO((long)err, (long)EBADF, "subscribe through an async cmd fd: EBADF");
		if (cc)
			mlx5dv_devx_destroy_cmd_comp(cc);
	}
	err = mlx5dv_devx_subscribe_devx_event_fd(ev_data, 1, c->cq, EV_COMP);
	err = err < 0 ? errno : err;
	EXPECT_ERRNO((long)err, (long)EINVAL, "a redirect to fd 1 (no eventfd): EINVAL (eventfd_ctx_fdget())");
	err = mlx5dv_devx_subscribe_devx_event_fd(ev_data, 1000, c->cq, EV_COMP);
	err = err < 0 ? errno : err;
	EXPECT_ERRNO((long)err, (long)EBADF, "a redirect to a closed fd: EBADF");
	efd = eventfd(0, EFD_NONBLOCK);
	err = efd < 0 ? errno : mlx5dv_devx_subscribe_devx_event_fd(ev_data, efd, c->cq, EV_COMP);
	err = err < 0 ? errno : err;
	EXPECT_ERRNO((long)err, 0L, "subscribe the CQ's COMP with an eventfd redirect");
	redirect_fd = err ? -1 : efd;
}

/*
 * A DEVX QP's error event: both QPs back to RST and to RTS (fresh PSNs and queues), B
 * subscribed to WQ_ACCESS_ERROR on both channels, then an RDMA WRITE from A with a bad
 * rkey: B (the responder) reports the access error, A gets an error CQE.
 */
static void qp_error_event(struct devx_ctx *c, struct ibv_port_attr *pa, char *src, struct ibv_mr *smr,
			   char *wdst, struct ibv_mr *wmr)
{
	uint16_t ev = EV_WQ_ACCESS_ERROR;
	uint32_t qpn, bytes;
	uint8_t syn;
	int err = 0, op, found = 0;

	for (int i = 0; i < 2 && !err; i++) {
		err = modify(c->qp[i], OP_2RST, c->qpn[i], 0, 0);
		c->sq_pi[i] = c->rq_pi[i] = 0;
		((volatile uint32_t *)c->dbr)[16 * (i + 1)] = 0;
		((volatile uint32_t *)c->dbr)[16 * (i + 1) + 1] = 0;
	}
	for (int i = 0; i < 2 && !err; i++) {
		err = modify(c->qp[i], OP_RST2INIT, c->qpn[i], 0, 0);
		if (!err)
			err = modify(c->qp[i], OP_INIT2RTR, c->qpn[i], c->qpn[!i], pa->lid);
		if (!err)
			err = modify(c->qp[i], OP_RTR2RTS, c->qpn[i], 0, 0);
	}
	EXPECT_ERRNO((long)err, 0L, "both QPs 2RST, then RST2INIT, INIT2RTR, RTR2RTS again");
	err = subscribe(ev_data, c->qp[1], &ev, 1, 0x5151);
	EXPECT_ERRNO((long)err, 0L, "subscribe QP B to WQ_ACCESS_ERROR (cookie 0x5151)");
	err = subscribe(ev_omit, c->qp[1], &ev, 1, 0x5252);
	EXPECT_ERRNO((long)err, 0L, "and on the OMIT_DATA channel (cookie 0x5252)");
	post_send(c, 0, 0x08, src, MSG, smr->lkey, (uintptr_t)wdst, wmr->rkey ^ 0x5500);
	for (int n = 0; n < 4 && !found; n++) {
		op = poll_cqe(c, &qpn, &bytes, &syn);
		if (op < 0)
			break;
		found = op == 0xd && qpn == c->qpn[0];
	}
	CHECK(found, "RDMA WRITE with a bad rkey: an error CQE on A");
	expect_eqe("B's WQ_ACCESS_ERROR event: the cookie, the EQE (type 0x11, QP, B's qpn)", 0x5151,
		   EV_WQ_ACCESS_ERROR, c->qpn[1], 1);
	expect_cookie("and its cookie on the OMIT_DATA channel", 0x5252);
}

static void traffic(struct devx_ctx *c)
{
	struct ibv_port_attr pa;
	char *src = malloc(MSG), *dst = calloc(1, MSG), *wdst = calloc(1, MSG);
	struct ibv_mr *smr, *dmr, *wmr;
	uint32_t qpn, bytes;
	uint8_t syn;
	int op, err, ok;

	CHECK(!ibv_query_port(c->ctx, 1, &pa), "ibv_query_port (the loopback LID)");
	if (gid_index >= 0)
		CHECK(!ibv_query_gid(c->ctx, 1, gid_index, &port_gid), "ibv_query_gid (the loopback GID)");
	for (int i = 0; i < MSG; i++)
		src[i] = (char)(i * 7 + 3);
	smr = ibv_reg_mr(c->pd, src, MSG, IBV_ACCESS_LOCAL_WRITE);
	dmr = ibv_reg_mr(c->pd, dst, MSG, IBV_ACCESS_LOCAL_WRITE);
	wmr = ibv_reg_mr(c->pd, wdst, MSG, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	CHECK(smr && dmr && wmr, "MRs (verbs) in the DEVX context's PD");
	if (!smr || !dmr || !wmr)
		return;
	for (int i = 0; i < 2; i++) {
		char what[64];

		err = modify(c->qp[i], OP_RST2INIT, c->qpn[i], 0, 0);
		if (!err)
			err = modify(c->qp[i], OP_INIT2RTR, c->qpn[i], c->qpn[!i], pa.lid);
		if (!err)
			err = modify(c->qp[i], OP_RTR2RTS, c->qpn[i], 0, 0);
		snprintf(what, sizeof(what), "QP %c: RST2INIT, INIT2RTR, RTR2RTS by DEVX modify", 'A' + i);
		EXPECT_ERRNO((long)err, 0L, what);
		snprintf(what, sizeof(what), "QP %c: DEVX QUERY_QP says RTS", 'A' + i);
		ok = qp_state(c->qp[i], c->qpn[i]);
		check(ok == 3, what, "state %ld, want %ld", ok, 3);
	}
	/* SEND from A into a receive of B. */
	post_recv(c, 1, dst, MSG, dmr->lkey);
	post_send(c, 0, 0x0a, src, MSG, smr->lkey, 0, 0);
	int got_req = 0, got_resp = 0;

	for (int n = 0; n < 2; n++) {
		op = poll_cqe(c, &qpn, &bytes, &syn);
		if (op == 0 && qpn == c->qpn[0])
			got_req = 1;
		else if (op == 2 && qpn == c->qpn[1] && bytes == MSG)
			got_resp = 1;
		else
			check(0, "SEND: an unexpected CQE", "opcode %ld syndrome %ld", op, syn);
	}
	CHECK(got_req, "SEND: requester CQE (opcode REQ) on A's QPN, polled from the umem CQ");
	CHECK(got_resp, "SEND: responder CQE (RESP_SEND) on B's QPN with byte_cnt 3000");
	CHECK(!memcmp(src, dst, MSG), "SEND: the 3000 bytes arrived intact");
	/* RDMA WRITE from B into A's memory. */
	post_send(c, 1, 0x08, src, MSG, smr->lkey, (uintptr_t)wdst, wmr->rkey);
	op = poll_cqe(c, &qpn, &bytes, &syn);
	check(op == 0 && qpn == c->qpn[1], "RDMA WRITE: requester CQE on B's QPN", "opcode %ld syndrome %ld", op, syn);
	CHECK(!memcmp(src, wdst, MSG), "RDMA WRITE: the 3000 bytes arrived intact");
	/* Completion events of the DEVX CQ on two channels (with the EQE, and OMIT_DATA). */
	ev_data = mlx5dv_devx_create_event_channel(c->ctx, 0);
	ev_omit = mlx5dv_devx_create_event_channel(c->ctx, MLX5DV_DEVX_CREATE_EVENT_CHANNEL_FLAGS_OMIT_EV_DATA);
	CHECK(ev_data && ev_omit, "mlx5dv_devx_create_event_channel (0 and OMIT_EV_DATA)");
	if (ev_data && ev_omit) {
		uint16_t comp = EV_COMP;
		uint8_t buf[128];

		err = subscribe(ev_data, c->cq, &comp, 1, 0xc0ffee);
		EXPECT_ERRNO((long)err, 0L, "subscribe the DEVX CQ to COMP (cookie 0xc0ffee)");
		err = subscribe(ev_omit, c->cq, &comp, 1, 0xbeef);
		EXPECT_ERRNO((long)err, 0L, "subscribe it on the OMIT_DATA channel too (cookie 0xbeef)");
		event_errnos(c);
		check(poll_events(ev_data->fd) == 0, "no event before the CQ is armed", "revents %#lx%.0ld",
		      poll_events(ev_data->fd), 0);
		EXPECT_ERRNO((long)read_errno(ev_data->fd, 128, 1), (long)EAGAIN, "empty channel: EAGAIN");
		for (int round = 0; round < 2; round++) {
			arm_cq(c, round);
			post_recv(c, 1, dst, MSG, dmr->lkey);
			post_send(c, 0, 0x0a, src, MSG, smr->lkey, 0, 0);
			for (int n = 0; n < 2; n++)
				poll_cqe(c, &qpn, &bytes, &syn);
			if (round == 0) {
				expect_eqe("armed CQ + SEND: a COMP event with the cookie and the EQE (type 0, cqn)",
					   0xc0ffee, EV_COMP, c->cqn, 0);
				expect_cookie("the same event on the OMIT_DATA channel: 8 bytes, the cookie", 0xbeef);
				if (redirect_fd >= 0) {
					uint64_t cnt = 0;

					wait_readable(redirect_fd);
					check(read(redirect_fd, &cnt, 8) == 8 && cnt == 1,
					      "the redirect's eventfd was signalled once (counter 1)", "counter %ld%.0ld",
					      (long)cnt, 0);
				}
			} else {
				wait_readable(ev_data->fd);
				wait_readable(ev_omit->fd);
				EXPECT_ERRNO((long)read_errno(ev_data->fd, 71, 0), (long)EINVAL,
					     "a read of 71 bytes (< cookie + EQE): EINVAL");
				EXPECT_ERRNO((long)read_errno(ev_omit->fd, 7, 0), (long)EINVAL,
					     "OMIT_DATA: a read of 7 bytes (< cookie): EINVAL");
				ssize_t rn = read(ev_data->fd, buf, sizeof(buf));

				check(rn == 72, "then the event is read whole (72 bytes)", "n %ld%.0ld", rn, 0);
				expect_cookie("and the OMIT_DATA one", 0xbeef);
			}
		}
		check(poll_events(ev_data->fd) == 0 && poll_events(ev_omit->fd) == 0,
		      "one event per arm: nothing more queued", "%#lx %#lx", poll_events(ev_data->fd),
		      poll_events(ev_omit->fd));
	}
	/* A bad lkey: an error CQE (opcode REQ_ERR 0xd) with the local protection syndrome. */
	post_send(c, 0, 0x0a, src, MSG, smr->lkey ^ 0x5500, 0, 0);
	post_recv(c, 1, dst, MSG, dmr->lkey);
	op = poll_cqe(c, &qpn, &bytes, &syn);
	check(op == 0xd && syn == 0x04, "bad lkey: REQ_ERR CQE with syndrome LOCAL_PROT_ERR (0x4)",
	      "opcode %ld syndrome %ld", op, syn);
	if (ev_data && ev_omit)
		qp_error_event(c, &pa, src, smr, wdst, wmr);
	ibv_dereg_mr(smr);
	ibv_dereg_mr(dmr);
	ibv_dereg_mr(wmr);
	free(src);
	free(dst);
	free(wdst);
}

/*
 * Async commands (mlx5dv_devx_create_cmd_comp, mlx5dv_devx_obj_query_async,
 * mlx5dv_devx_get_async_cmd_comp; upstream MLX5_IB_METHOD_DEVX_OBJ_ASYNC_QUERY and
 * devx_async_cmd_event_read()).
 */
#define QP_OUT_LEN ((0xc0 + 0x740 + 0x80) / 8 + 256)

static void query_in(uint32_t *in, uint16_t opcode, uint32_t id)
{
	memset(in, 0, 16);
	SETF(in, 0, HDR_OPCODE, opcode);
	SETF(in, 0, QPN_IN, id); /* cqn and qpn are both at 0x48 */
}

/* execute_ioctl() answers a positive errno. */
static int aq(struct mlx5dv_devx_obj *o, uint16_t opcode, uint32_t id, size_t outlen, uint64_t wr_id,
	      struct mlx5dv_devx_cmd_comp *cc)
{
	uint32_t in[4];
	int r;

	query_in(in, opcode, id);
	r = mlx5dv_devx_obj_query_async(o, in, sizeof(in), outlen, wr_id, cc);
	return r < 0 ? errno : r;
}

static int sync_query(struct mlx5dv_devx_obj *o, uint16_t opcode, uint32_t id, void *out, size_t outlen)
{
	uint32_t in[4];

	query_in(in, opcode, id);
	memset(out, 0, outlen);
	return mlx5dv_devx_obj_query(o, in, sizeof(in), out, outlen) ? errno : 0;
}

/* The completions of a closed uverbs file or a removed device: EIO, EAGAIN, RDHUP. */
static void check_destroyed_fd(int fd, const char *when, const char *which)
{
	char what[160];
	short ev = poll_events(fd);
	int e;

	snprintf(what, sizeof(what), "%s: poll of the %s is POLLIN|POLLRDHUP", when, which);
	check((ev & (POLLIN | POLLRDHUP)) == (POLLIN | POLLRDHUP), what, "revents %#lx%.0ld", ev, 0);
	if (!(ev & POLLRDHUP))
		return; /* a blocking read would wait */
	e = read_errno(fd, 4096, 0);
	snprintf(what, sizeof(what), "%s: a blocking read of the %s is EIO (pending ones freed)", when, which);
	EXPECT_ERRNO((long)e, (long)EIO, what);
	e = read_errno(fd, 4096, 1);
	snprintf(what, sizeof(what), "%s: a non-blocking read of the %s is EAGAIN", when, which);
	EXPECT_ERRNO((long)e, (long)EAGAIN, what);
}

static void async_cmds(struct devx_ctx *c)
{
	static uint8_t sync_out[3][QP_OUT_LEN];
	uint8_t *resp = malloc(8 + 65535);
	struct mlx5dv_devx_async_cmd_hdr *h = (void *)resp;
	struct mlx5dv_devx_obj *objs[3] = { c->qp[0], c->qp[1], c->cq };
	uint16_t ops[3] = { OP_QUERY_QP, OP_QUERY_QP, OP_QUERY_CQ };
	uint32_t ids[3] = { c->qpn[0], c->qpn[1], c->cqn };
	struct mlx5dv_devx_cmd_comp *cc, *cc2;
	struct ibv_comp_channel *ch;
	int err, n, ok;

	cc = mlx5dv_devx_create_cmd_comp(c->ctx);
	CHECK(cc && cc->fd >= 0, "mlx5dv_devx_create_cmd_comp: an fd");
	if (!cc)
		return;
	CHECK(fcntl(cc->fd, F_GETFD) & FD_CLOEXEC, "the async cmd fd is O_CLOEXEC");
	for (int i = 0; i < 3; i++) {
		err = sync_query(objs[i], ops[i], ids[i], sync_out[i], QP_OUT_LEN);
		EXPECT_ERRNO((long)err, 0L, i == 2 ? "sync QUERY_CQ" : "sync QUERY_QP");
	}
	check(poll_events(cc->fd) == 0, "no completion yet: poll 0", "revents %#lx%.0ld", poll_events(cc->fd), 0);
	EXPECT_ERRNO((long)read_errno(cc->fd, 4096, 1), (long)EAGAIN, "empty fd: non-blocking read EAGAIN");
	/* One query: the same bytes as the sync query, the wr_id. */
	err = aq(c->qp[0], OP_QUERY_QP, c->qpn[0], QP_OUT_LEN, 0x1122334455667788ull, cc);
	EXPECT_ERRNO((long)err, 0L, "mlx5dv_devx_obj_query_async QUERY_QP A");
	check(poll_events(cc->fd) & POLLIN, "a completion: poll POLLIN", "revents %#lx%.0ld", poll_events(cc->fd), 0);
	err = mlx5dv_devx_get_async_cmd_comp(cc, h, 8 + QP_OUT_LEN);
	EXPECT_ERRNO((long)err, 0L, "mlx5dv_devx_get_async_cmd_comp");
	check(!err && h->wr_id == 0x1122334455667788ull, "the completion's wr_id", "%#lx%.0ld", (long)h->wr_id, 0);
	CHECK(!err && !memcmp(h->out_data, sync_out[0], QP_OUT_LEN), "async QUERY_QP output = sync QUERY_QP output");
	/* Three in flight, read back in order. */
	for (int i = 0; i < 3; i++) {
		err = aq(objs[i], ops[i], ids[i], QP_OUT_LEN, 100 + i, cc);
		EXPECT_ERRNO((long)err, 0L, "three queries in flight (QP A, QP B, CQ)");
	}
	ok = 1;
	for (int i = 0; i < 3; i++) {
		err = mlx5dv_devx_get_async_cmd_comp(cc, h, 8 + QP_OUT_LEN);
		if (err || h->wr_id != (uint64_t)(100 + i) || memcmp(h->out_data, sync_out[i], QP_OUT_LEN))
			ok = 0;
	}
	CHECK(ok, "three completions in order: wr_ids 100..102, each the sync query's bytes");
	EXPECT_ERRNO((long)read_errno(cc->fd, 4096, 1), (long)EAGAIN, "all read: non-blocking read EAGAIN");
	/* A read shorter than header + output: ENOSPC, the completion stays. */
	err = aq(c->qp[1], OP_QUERY_QP, c->qpn[1], QP_OUT_LEN, 7, cc);
	EXPECT_ERRNO((long)err, 0L, "query for the short read");
	EXPECT_ERRNO((long)read_errno(cc->fd, 8 + QP_OUT_LEN - 1, 0), (long)ENOSPC,
		     "read of one byte less than the completion: ENOSPC");
	n = read(cc->fd, resp, 8 + QP_OUT_LEN + 100);
	check(n == 8 + QP_OUT_LEN && h->wr_id == 7, "then a long enough read returns it (8 + outlen bytes)",
	      "n %ld wr_id %ld", n, (long)h->wr_id);
	/* The errnos of upstream's handler. */
	err = aq(c->qp[0], OP_RST2INIT, c->qpn[0], QP_OUT_LEN, 1, cc);
	EXPECT_ERRNO((long)err, (long)EINVAL, "async RST2INIT (not a query command): EINVAL");
	err = aq(c->qp[0], OP_QUERY_QP, c->qpn[1], QP_OUT_LEN, 1, cc);
	EXPECT_ERRNO((long)err, (long)EINVAL, "async QUERY_QP of B through A's handle: EINVAL");
	ch = ibv_create_comp_channel(c->ctx);
	if (ch) {
		struct mlx5dv_devx_cmd_comp fake = { .fd = ch->fd };

		err = aq(c->qp[0], OP_QUERY_QP, c->qpn[0], QP_OUT_LEN, 1, &fake);
		EXPECT_ERRNO((long)err, (long)EBADF, "async query with a completion channel's fd: EBADF");
		ibv_destroy_comp_channel(ch);
	}
	{
		struct mlx5dv_devx_cmd_comp bad = { .fd = 1 };

		err = aq(c->qp[0], OP_QUERY_QP, c->qpn[0], QP_OUT_LEN, 1, &bad);
		EXPECT_ERRNO((long)err, (long)EBADF, "async query with fd 1 (stdout): EBADF");
	}
	EXPECT_ERRNO((long)read_errno(cc->fd, 4096, 1), (long)EAGAIN, "refused queries queue nothing");
	/* The budget: MAX_ASYNC_BYTES_IN_USE (1 MiB) of unread output per fd. */
	for (n = 0; n < 17; n++) {
		err = aq(c->qp[0], OP_QUERY_QP, c->qpn[0], 65535, 1000 + n, cc);
		if (err)
			break;
	}
	check(n == 16 && err == EAGAIN, "16 queries of 65535 bytes fit 1 MiB, the 17th is EAGAIN",
	      "accepted %ld, then errno %ld", n, err);
	err = mlx5dv_devx_get_async_cmd_comp(cc, h, 8 + 65535);
	check(!err && h->wr_id == 1000, "read the first of them", "errno %ld wr_id %ld", err, (long)h->wr_id);
	err = aq(c->qp[0], OP_QUERY_QP, c->qpn[0], 65535, 2000, cc);
	EXPECT_ERRNO((long)err, 0L, "after one read, room for one more");
	err = aq(c->qp[0], OP_QUERY_QP, c->qpn[0], 65535, 2001, cc);
	EXPECT_ERRNO((long)err, (long)EAGAIN, "and no more");
	/* A second fd has its own budget. */
	cc2 = mlx5dv_devx_create_cmd_comp(c->ctx);
	CHECK(cc2, "a second async cmd fd");
	if (cc2) {
		err = aq(c->qp[0], OP_QUERY_QP, c->qpn[0], QP_OUT_LEN, 5, cc2);
		EXPECT_ERRNO((long)err, 0L, "the second fd has its own budget");
		err = mlx5dv_devx_get_async_cmd_comp(cc2, h, 8 + QP_OUT_LEN);
		check(!err && h->wr_id == 5, "its completion arrives on it", "errno %ld wr_id %ld", err,
		      (long)h->wr_id);
		mlx5dv_devx_destroy_cmd_comp(cc2);
	}
	/* Closing the fd with 16 completions (1 MiB) pending frees them (kmemleak). */
	mlx5dv_devx_destroy_cmd_comp(cc);
	printf("R ok closed the async cmd fd with 16 completions pending\n");
	free(resp);
}

/* Writes VAL to the simulator's fail_opcode knob of the function; 0 if there is none. */
static const char *fwsim_dir;

static int fwsim_knob(const char *dir, const char *val)
{
	char path[512];
	FILE *f;

	if (!dir)
		return 0;
	snprintf(path, sizeof(path), "%s/fail_opcode", dir);
	f = fopen(path, "w");
	if (!f)
		return 0;
	fprintf(f, "%s\n", val);
	return fclose(f) == 0;
}

/*
 * Verbs objects of a DEVX context carry its uid (upstream mlx5_ib: a user CQ gets the context's
 * devx_uid, a QP and an SRQ their PD's uid): DEVX queries of them run with that uid, and a DEVX
 * QP of the context may name the verbs CQ and SRQ, as UCX's rc_mlx5 does. Another DEVX context
 * may not name them (the firmware's uid check).
 */
static void verbs_objects(struct devx_ctx *c, struct devx_ctx *c2)
{
	struct ibv_cq *cq = ibv_create_cq(c->ctx, 16, NULL, NULL, 0);
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 16, .max_sge = 1 } };
	struct ibv_srq *srq = ibv_create_srq(c->pd, &sa);
	struct ibv_qp_init_attr qa = {
		.send_cq = cq,
		.recv_cq = cq,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};
	struct ibv_qp *qp = cq ? ibv_create_qp(c->pd, &qa) : NULL;
	uint32_t in[0x880 / 32] = { 0 }, out[QP_OUT_LEN / 4], dout[4] = { 0 };
	struct mlx5dv_obj o = { 0 };
	struct mlx5dv_cq dcq;
	struct mlx5dv_srq dsrq = { .comp_mask = MLX5DV_SRQ_MASK_SRQN }; /* else srqn is not filled */
	struct mlx5dv_devx_obj *dqp;
	void *wq = page_alloc();
	struct mlx5dv_devx_umem *wq_umem = wq ? mlx5dv_devx_umem_reg(c->ctx, wq, PAGE, IBV_ACCESS_LOCAL_WRITE) : NULL;
	uint32_t qpn = 0, st = 0;
	int err;

	CHECK(cq && srq && qp && wq_umem, "verbs CQ, SRQ and RC QP (and a umem) in a DEVX context");
	if (!cq || !srq || !qp || !wq_umem)
		goto out;
	o.cq.in = cq;
	o.cq.out = &dcq;
	o.srq.in = srq;
	o.srq.out = &dsrq;
	if (mlx5dv_init_obj(&o, MLX5DV_OBJ_CQ | MLX5DV_OBJ_SRQ)) {
		CHECK(0, "mlx5dv_init_obj of the verbs CQ and SRQ");
		goto out;
	}
	query_in(in, OP_QUERY_CQ, dcq.cqn);
	err = mlx5dv_devx_cq_query(cq, in, 16, out, sizeof(out)) ? errno : 0;
	EXPECT_ERRNO((long)err, 0L, "DEVX QUERY_CQ of a verbs CQ of the DEVX context (it carries the uid)");
	query_in(in, OP_QUERY_QP, qp->qp_num);
	err = mlx5dv_devx_qp_query(qp, in, 16, out, sizeof(out)) ? errno : 0;
	EXPECT_ERRNO((long)err, 0L, "DEVX QUERY_QP of a verbs QP of the DEVX context (it carries the PD's uid)");
	/*
	 * A CQ created with IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN (UCX's flag): accepted, and the
	 * device's CQ context has `oi` (upstream mlx5_ib_create_cq()); a plain CQ has not.
	 */
	{
		struct ibv_cq_init_attr_ex ca = {
			.cqe = 4,
			.wc_flags = IBV_WC_STANDARD_FLAGS,
			.comp_mask = IBV_CQ_INIT_ATTR_MASK_FLAGS,
			.flags = IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN,
		};
		struct ibv_cq_ex *cqx = ibv_create_cq_ex(c->ctx, &ca);
		struct mlx5dv_cq dcqx;

		check(cqx != NULL, "ibv_create_cq_ex with IGNORE_OVERRUN is accepted", "errno %ld%.0ld",
		      cqx ? 0 : errno, 0);
		query_in(in, OP_QUERY_CQ, dcq.cqn);
		err = mlx5dv_devx_cq_query(cq, in, 16, out, sizeof(out)) ? errno : 0;
		check(!err && GETF(out, CQC, CQC_OI) == 0, "a plain CQ's context has no oi", "errno %ld oi %ld",
		      err, (long)GETF(out, CQC, CQC_OI));
		if (cqx) {
			struct mlx5dv_obj ox = { 0 };

			ox.cq.in = ibv_cq_ex_to_cq(cqx);
			ox.cq.out = &dcqx;
			err = mlx5dv_init_obj(&ox, MLX5DV_OBJ_CQ);
			query_in(in, OP_QUERY_CQ, dcqx.cqn);
			err = err ? err : mlx5dv_devx_cq_query(ibv_cq_ex_to_cq(cqx), in, 16, out, sizeof(out)) ? errno : 0;
			check(!err && GETF(out, CQC, CQC_OI) == 1, "the IGNORE_OVERRUN CQ's context has oi",
			      "errno %ld oi %ld", err, (long)GETF(out, CQC, CQC_OI));
			ibv_destroy_cq(ibv_cq_ex_to_cq(cqx));
		}
	}
	/* UCX's rc_mlx5 QP: DEVX CREATE_QP on the verbs CQ, receiving from the verbs SRQ. */
	memset(in, 0, sizeof(in));
	SETF(in, 0, HDR_OPCODE, OP_CREATE_QP);
	SETF(in, QPC, QPC_ST, 0); /* RC */
	SETF(in, QPC, QPC_PM_STATE, 3);
	SETF(in, QPC, QPC_PD, c->pdn);
	SETF(in, QPC, QPC_LOG_MSG_MAX, 30);
	SETF(in, QPC, QPC_LOG_SQ_SIZE, SQ_LOG);
	SETF(in, QPC, QPC_RQ_TYPE, 1); /* SRQ */
	SETF(in, QPC, QPC_SRQN, dsrq.srqn);
	SETF(in, QPC, QPC_UAR_PAGE, c->uar->page_id);
	SETF(in, QPC, QPC_CQN_SND, dcq.cqn);
	SETF(in, QPC, QPC_CQN_RCV, dcq.cqn);
	SETF(in, QPC, QPC_DBR_ADDR, 64 * 3);
	SETF(in, QPC, QPC_DBR_UMEM_ID, c->dbr_umem->umem_id);
	SETF(in, 0, WQ_UMEM_ID, wq_umem->umem_id);
	errno = 0;
	dqp = mlx5dv_devx_obj_create(c->ctx, in, sizeof(in), dout, sizeof(dout));
	check(dqp != NULL, "DEVX CREATE_QP naming the context's verbs CQ and SRQ succeeds",
	      "errno %ld syndrome 0x%lx", dqp ? 0 : errno, (long)GETF(dout, 0, OUT_SYNDROME));
	if (dqp) {
		err = mlx5dv_devx_obj_destroy(dqp) ? errno : 0;
		EXPECT_ERRNO((long)err, 0L, "destroy that DEVX QP");
	}
	if (c2 && c2->uar && c2->dbr_umem) {
		c2->qp[1] = create_qp(c2, 1, dcq.cqn, c2->dbr_umem->umem_id, &qpn, &st, &err);
		check(!c2->qp[1] && err == EREMOTEIO && st == STAT_BAD_RES,
		      "another DEVX context's CREATE_QP on this context's verbs CQ: EREMOTEIO, BAD_RES",
		      "errno %ld status %ld", err, st);
		if (c2->qp[1])
			mlx5dv_devx_obj_destroy(c2->qp[1]);
		c2->qp[1] = NULL;
	}
out:
	if (qp)
		ibv_destroy_qp(qp);
	if (srq)
		ibv_destroy_srq(srq);
	if (cq)
		ibv_destroy_cq(cq);
	if (wq_umem)
		mlx5dv_devx_umem_dereg(wq_umem);
	free(wq);
}

static void errnos(struct devx_ctx *c, struct ibv_device *d)
{
	uint32_t in[0x880 / 32] = { 0 }, out[0x1100 / 4] = { 0 };
	struct ibv_context *plain;
	struct devx_ctx c2;
	uint32_t st = 0, qpn;
	int err;

	/* A general command: QUERY_HCA_CAP (general, current) answers log_max_uctx. */
	SETF(in, 0, HDR_OPCODE, OP_QUERY_HCA_CAP);
	set(in, 48, 16, 1); /* op_mod: HCA_CAP_OPMOD_GET_CUR | general */
	err = mlx5dv_devx_general_cmd(c->ctx, in, 16, out, sizeof(out)) ? errno : 0;
	EXPECT_ERRNO((long)err, 0L, "DEVX_OTHER QUERY_HCA_CAP");
	check(get(out, 0x80 + 1123, 5) != 0, "QUERY_HCA_CAP: log_max_uctx is set", "%ld %ld", 0, 0);
	/* Commands no allow-list takes: EINVAL (upstream devx.c). */
	memset(in, 0, sizeof(in));
	SETF(in, 0, HDR_OPCODE, OP_CREATE_CQ);
	err = mlx5dv_devx_general_cmd(c->ctx, in, sizeof(in), out, 16) ? errno : 0;
	EXPECT_ERRNO((long)err, (long)EINVAL, "DEVX_OTHER with CREATE_CQ (not a general command)");
	SETF(in, 0, HDR_OPCODE, OP_QUERY_HCA_CAP);
	errno = 0;
	CHECK(!mlx5dv_devx_obj_create(c->ctx, in, 16, out, 16) && errno == EINVAL,
	      "DEVX_OBJ_CREATE with QUERY_HCA_CAP: EINVAL");
	SETF(in, 0, HDR_OPCODE, 0x401); /* DESTROY_CQ: not a modify command */
	SETF(in, 0, QPN_IN, c->cqn);
	err = mlx5dv_devx_obj_modify(c->cq, in, 16, out, 16) ? errno : 0;
	EXPECT_ERRNO((long)err, (long)EINVAL, "DEVX_OBJ_MODIFY with DESTROY_CQ: EINVAL");
	/* A modify naming another object than the handle's. */
	SETF(in, 0, HDR_OPCODE, OP_2ERR);
	SETF(in, 0, QPN_IN, c->qpn[1]);
	err = mlx5dv_devx_obj_modify(c->qp[0], in, 16, out, 16) ? errno : 0;
	EXPECT_ERRNO((long)err, (long)EINVAL, "2ERR of QP B through QP A's handle: EINVAL");
	SETF(in, 0, HDR_OPCODE, OP_QUERY_CQ);
	SETF(in, 0, QPN_IN, c->cqn);
	err = mlx5dv_devx_obj_query(c->cq, in, 16, out, 0x880 / 8) ? errno : 0;
	EXPECT_ERRNO((long)err, 0L, "DEVX QUERY_CQ of the CQ's own handle");
	/*
	 * A context without DEVX: every DEVX method is EINVAL (devx_get_uid()). libmlx5 asks
	 * every context for DEVX and falls back without it when that fails: the simulator's
	 * fail_opcode knob refuses CREATE_UCTX (0xa04) while this one opens.
	 */
	if (!fwsim_knob(fwsim_dir, "0xa04")) {
		printf("I no simulator directory (-f): the context without DEVX is not tested\n");
		goto second;
	}
	plain = ibv_open_device(d);
	fwsim_knob(fwsim_dir, "0");
	memset(in, 0, sizeof(in));
	SETF(in, 0, HDR_OPCODE, OP_ALLOC_PD);
	errno = 0;
	CHECK(plain && !mlx5dv_devx_obj_create(plain, in, 16, out, 16) && errno == EINVAL,
	      "no DEVX uid: DEVX_OBJ_CREATE ALLOC_PD is EINVAL");
	errno = 0;
	CHECK(plain && !mlx5dv_devx_umem_reg(plain, c->dbr, PAGE, 0) && errno == EINVAL,
	      "no DEVX uid: UMEM_REG is EINVAL");
	if (plain)
		ibv_close_device(plain);
second:
	/* A second DEVX context naming the first one's objects: the firmware's uid check. */
	memset(&c2, 0, sizeof(c2));
	c2.ctx = open_devx(d);
	c2.pd = c2.ctx ? ibv_alloc_pd(c2.ctx) : NULL;
	if (c2.pd) {
		struct mlx5dv_obj o = { 0 };
		struct mlx5dv_pd dpd;

		o.pd.in = c2.pd;
		o.pd.out = &dpd;
		mlx5dv_init_obj(&o, MLX5DV_OBJ_PD);
		c2.pdn = dpd.pdn;
		c2.uar = mlx5dv_devx_alloc_uar(c2.ctx, MLX5DV_UAR_ALLOC_TYPE_NC);
		mlx5dv_devx_query_eqn(c2.ctx, 0, &c2.eqn);
		c2.dbr = page_alloc();
		c2.dbr_umem = mlx5dv_devx_umem_reg(c2.ctx, c2.dbr, PAGE, IBV_ACCESS_LOCAL_WRITE);
	}
	CHECK(c2.uar && c2.dbr_umem, "second DEVX context with a PD, a UAR and a umem");
	if (c2.uar && c2.dbr_umem) {
		err = create_cq(&c2, c->cq_umem->umem_id, c2.dbr_umem->umem_id, &st);
		check(err == EREMOTEIO && st == STAT_BAD_RES, "CREATE_CQ on the first context's umem: EREMOTEIO, BAD_RES",
		      "errno %ld status %ld", err, st);
		c2.cq = NULL;
		/* Its own QP on the first context's CQ. */
		c2.qp[0] = create_qp(&c2, 0, c->cqn, c2.dbr_umem->umem_id, &qpn, &st, &err);
		check(!c2.qp[0] && err == EREMOTEIO && st == STAT_BAD_RES,
		      "CREATE_QP on the first context's CQ: EREMOTEIO, BAD_RES", "errno %ld status %ld", err, st);
	}
	verbs_objects(c, &c2);
	teardown(&c2);
}

static void destroy_order(struct devx_ctx *c)
{
	int err;

	err = mlx5dv_devx_umem_dereg(c->cq_umem) ? errno : 0;
	EXPECT_ERRNO((long)err, (long)EBUSY, "dereg of the CQ's umem while the CQ lives: EBUSY");
	err = mlx5dv_devx_obj_destroy(c->cq) ? errno : 0;
	EXPECT_ERRNO((long)err, (long)EBUSY, "destroy of the CQ while QPs use it: EBUSY");
	for (int i = 0; i < 2; i++) {
		err = mlx5dv_devx_obj_destroy(c->qp[i]) ? errno : 0;
		c->qp[i] = NULL;
		EXPECT_ERRNO((long)err, 0L, i ? "destroy QP B" : "destroy QP A");
	}
	err = mlx5dv_devx_obj_destroy(c->cq) ? errno : 0;
	c->cq = NULL;
	EXPECT_ERRNO((long)err, 0L, "destroy the CQ after its QPs");
	err = mlx5dv_devx_umem_dereg(c->cq_umem) ? errno : 0;
	c->cq_umem = NULL;
	EXPECT_ERRNO((long)err, 0L, "dereg the CQ's umem after the CQ");
}

int main(int argc, char **argv)
{
	const char *name = "mlx5_0";
	struct ibv_device *d;
	struct devx_ctx c;
	const char *hold = NULL;
	int leave = 0, opt;

	while ((opt = getopt(argc, argv, "d:g:f:xw:")) != -1) {
		if (opt == 'd')
			name = optarg;
		else if (opt == 'f')
			fwsim_dir = optarg;
		else if (opt == 'g')
			gid_index = atoi(optarg);
		else if (opt == 'x')
			leave = 1;
		else if (opt == 'w')
			hold = optarg;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	d = find_dev(name);
	if (!d) {
		printf("R fail no device %s\n", name);
		return 1;
	}
	if (setup(&c, d)) {
		teardown(&c);
		return 1;
	}
	if (leave) {
		struct mlx5dv_devx_cmd_comp *cc = mlx5dv_devx_create_cmd_comp(c.ctx);
		int e1 = cc ? aq(c.qp[0], OP_QUERY_QP, c.qpn[0], QP_OUT_LEN, 1, cc) : -1;
		int e2 = cc ? aq(c.cq, OP_QUERY_CQ, c.cqn, QP_OUT_LEN, 2, cc) : -1;

		struct mlx5dv_devx_event_channel *ch = mlx5dv_devx_create_event_channel(c.ctx, 0);
		uint16_t comp = EV_COMP;
		int e3 = ch ? subscribe(ch, c.cq, &comp, 1, 3) : -1;

		check(!e1 && !e2, "an async cmd fd with two completions pending, left open", "%ld %ld", e1, e2);
		EXPECT_ERRNO((long)e3, 0L, "an event channel subscribed to the CQ, left open");
		printf("R ok objects created; exiting without destroying them\n");
		_exit(failures ? 1 : 0);
	}
	traffic(&c);
	if (hold) {
		struct mlx5dv_devx_cmd_comp *cc = mlx5dv_devx_create_cmd_comp(c.ctx);
		int e1 = cc ? aq(c.qp[0], OP_QUERY_QP, c.qpn[0], QP_OUT_LEN, 1, cc) : -1;

		check(!e1, "an async cmd fd with a completion pending, held across the unplug", "%ld%.0ld", e1, 0);
		printf("I holding\n");
		while (access(hold, F_OK))
			usleep(100000);
		printf("I released\n");
		if (cc)
			check_destroyed_fd(cc->fd, "after the unplug", "async cmd fd");
		if (ev_data)
			check_destroyed_fd(ev_data->fd, "after the unplug", "event channel");
		if (ev_omit)
			check_destroyed_fd(ev_omit->fd, "after the unplug", "OMIT_DATA event channel");
		_exit(failures ? 1 : 0);
	}
	errnos(&c, d);
	async_cmds(&c);
	/* The uverbs file closes while an async cmd fd with pending completions is open. */
	struct mlx5dv_devx_cmd_comp *late = mlx5dv_devx_create_cmd_comp(c.ctx);
	int le = late ? aq(c.qp[1], OP_QUERY_QP, c.qpn[1], QP_OUT_LEN, 9, late) : -1;

	EXPECT_ERRNO((long)le, 0L, "an async cmd fd with a completion pending at the context's close");
	destroy_order(&c);
	teardown(&c);
	if (late) {
		check_destroyed_fd(late->fd, "after ibv_close_device", "async cmd fd");
		mlx5dv_devx_destroy_cmd_comp(late);
	}
	/* mlx5dv_devx_destroy_event_channel() needs the (closed) context: close the fds. */
	if (ev_data) {
		check_destroyed_fd(ev_data->fd, "after ibv_close_device", "event channel");
		close(ev_data->fd);
	}
	if (ev_omit) {
		check_destroyed_fd(ev_omit->fd, "after ibv_close_device", "OMIT_DATA event channel");
		close(ev_omit->fd);
	}
	printf("I %s: %d failures\n", failures ? "FAILED" : "passed", failures);
	return failures ? 1 : 0;
}
