// SPDX-License-Identifier: GPL-2.0
/*
 * limits_probe: a full receive queue as libmlx5 (v44) stops it, and what
 * mlx5dv_dr (software steering) makes of the device, on one device opened
 * with DEVX.
 *
 *  - an RC QP of ibv_create_qp_ex() with the extended send interface
 *    (IBV_QP_INIT_ATTR_SEND_OPS_FLAGS), left in INIT (the device consumes
 *    nothing): ibv_post_recv() until it fails: libmlx5 mlx5_post_recv()'s
 *    mlx5_wq_overflow() gives ENOMEM after cap.max_recv_wr receives, as on
 *    hardware;
 *  - mlx5dv_dr_domain_create(NIC_RX), and on success mlx5dv_dr_table_create()
 *    of levels 0 and 1: each works or fails cleanly (an errno other than
 *    EREMOTEIO, which would be a command the device refused): the device has
 *    no steering capabilities (cmd_hca_cap.nic_flow_table 0), and the errnos
 *    are printed as I lines;
 *  - steering as DEVX sees it: QUERY_HCA_CAP (general, current) has
 *    nic_flow_table 0; the NIC flow table page (MLX5_CAP_FLOW_TABLE, max and
 *    current) answers, all zero (no table type has ft_support); a DEVX
 *    CREATE_FLOW_TABLE and CREATE_FLOW_GROUP object are EREMOTEIO with the
 *    outbox status BAD_OP (0x2), as the device's other unknown commands; and
 *    mlx5dv_create_flow_matcher() fails with EPROTONOSUPPORT (the driver has
 *    no flow matcher object: the kernel's answer for an unknown object).
 *
 * usage: limits_probe -d DEV
 * Output: R lines (checks) and I lines (informational facts).
 *
 * LDLIBS: -lmlx5
 */
#include <errno.h>
#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rdmars_test.h"

/* PRM: QUERY_HCA_CAP 0x100, CREATE_FLOW_TABLE 0x930, CREATE_FLOW_GROUP 0x933; the cap types
 * MLX5_CAP_GENERAL 0 and MLX5_CAP_FLOW_TABLE 7 (op_mod = type << 1 | cur); the status
 * MLX5_CMD_STAT_BAD_OP_ERR 0x2. cmd_hca_cap.nic_flow_table is bit 0x1a6 of the page. */
#define OP_QUERY_HCA_CAP 0x100
#define CAP_PAGE 4096

static void set_op(uint8_t *in, uint16_t opcode, uint16_t op_mod)
{
	in[0] = opcode >> 8;
	in[1] = opcode & 0xff;
	in[6] = op_mod >> 8;
	in[7] = op_mod & 0xff;
}

static int query_cap(struct ibv_context *ctx, int type, int cur, uint8_t *out)
{
	uint8_t in[16] = { 0 };

	set_op(in, OP_QUERY_HCA_CAP, type << 1 | cur);
	memset(out, 0xff, 16 + CAP_PAGE);
	return mlx5dv_devx_general_cmd(ctx, in, sizeof(in), out, 16 + CAP_PAGE) ? errno : 0;
}

static void steering(struct ibv_context *ctx)
{
	static uint8_t out[16 + CAP_PAGE];
	struct mlx5dv_flow_match_parameters *mask;
	struct mlx5dv_flow_matcher_attr ma = { .type = IBV_FLOW_ATTR_NORMAL };
	struct mlx5dv_flow_matcher *fm;
	static const struct {
		uint16_t op;
		const char *name;
	} objs[] = { { 0x930, "CREATE_FLOW_TABLE" }, { 0x933, "CREATE_FLOW_GROUP" } };
	int r, zero, cur;

	r = query_cap(ctx, 0, 1, out);
	printf("I caps_general errno %d nic_flow_table %d\n", r, (out[16 + 0x1a6 / 8] >> 1) & 1);
	check(r == 0 && !(out[16 + 0x1a6 / 8] & 0x02),
	      "DEVX QUERY_HCA_CAP general: nic_flow_table 0");
	for (cur = 0; cur < 2; cur++) {
		r = query_cap(ctx, 7, cur, out);
		zero = out[0] == 0;
		for (int i = 16; i < 16 + CAP_PAGE; i++)
			zero = zero && out[i] == 0;
		printf("I caps_flow_table_%s errno %d status %d all_zero %d\n", cur ? "cur" : "max", r,
		       out[0], zero);
		check(r == 0 && zero, "DEVX QUERY_HCA_CAP flow table (%s): answered, no ft_support",
		      cur ? "cur" : "max");
	}
	for (unsigned int i = 0; i < sizeof(objs) / sizeof(objs[0]); i++) {
		uint8_t in[0x400 / 8] = { 0 }, o[64];
		struct mlx5dv_devx_obj *obj;

		set_op(in, objs[i].op, 0);
		memset(o, 0, sizeof(o));
		errno = 0;
		obj = mlx5dv_devx_obj_create(ctx, in, sizeof(in), o, sizeof(o));
		r = obj ? 0 : errno;
		printf("I devx_%s errno %d status %d\n", objs[i].name, r, o[0]);
		check(!obj && r == EREMOTEIO && o[0] == 0x2,
		      "DEVX %s: EREMOTEIO, status BAD_OP (the device has no steering)", objs[i].name);
		if (obj)
			mlx5dv_devx_obj_destroy(obj);
	}
	mask = calloc(1, sizeof(*mask) + 0x200);
	if (!mask)
		return;
	mask->match_sz = 0x200;
	ma.match_mask = mask;
	errno = 0;
	fm = mlx5dv_create_flow_matcher(ctx, &ma);
	r = fm ? 0 : errno;
	printf("I flow_matcher %s errno %d\n", fm ? "created" : "failed", r);
	check(r == EPROTONOSUPPORT,
	      "mlx5dv_create_flow_matcher: EPROTONOSUPPORT, no flow matcher object (errno %d)", r);
	if (fm)
		mlx5dv_destroy_flow_matcher(fm);
	free(mask);
}

int main(int argc, char **argv)
{
	struct mlx5dv_context_attr da = { .flags = MLX5DV_CONTEXT_FLAGS_DEVX };
	struct ibv_qp_init_attr_ex qx = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 8, .max_send_sge = 1, .max_recv_wr = 8, .max_recv_sge = 1 },
		.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.send_ops_flags = IBV_QP_EX_WITH_SEND,
	};
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1 };
	struct mlx5dv_dr_domain *dmn;
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	const char *dev = NULL;
	struct ibv_mr *mr;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	static char buf[4096];
	int opt, n, i, err = 0;

	while ((opt = getopt(argc, argv, "d:")) != -1)
		if (opt == 'd')
			dev = optarg;
	list = ibv_get_device_list(&n);
	for (i = 0; list && i < n; i++)
		if (dev && !strcmp(ibv_get_device_name(list[i]), dev))
			ctx = mlx5dv_open_device(list[i], &da);
	if (list)
		ibv_free_device_list(list);
	check(ctx != NULL, "mlx5dv_open_device %s (DEVX)", dev ? dev : "(none)");
	if (!ctx)
		return 1;
	pd = ibv_alloc_pd(ctx);
	cq = pd ? ibv_create_cq(ctx, 64, NULL, NULL, 0) : NULL;
	mr = pd ? ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE) : NULL;
	if (!cq || !mr)
		return 1;
	qx.pd = pd;
	qx.send_cq = qx.recv_cq = cq;
	qp = ibv_create_qp_ex(ctx, &qx);
	check(qp != NULL, "ibv_create_qp_ex RC with IBV_QP_EX_WITH_SEND");
	if (!qp)
		return 1;
	printf("I caps max_send_wr %u max_recv_wr %u\n", qx.cap.max_send_wr, qx.cap.max_recv_wr);
	check(!ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				     IBV_QP_ACCESS_FLAGS), "RC QP to INIT");
	for (i = 0; i < 1000; i++) {
		struct ibv_sge sg = { .addr = (uintptr_t)buf, .length = 64, .lkey = mr->lkey };
		struct ibv_recv_wr rw = { .wr_id = i, .sg_list = &sg, .num_sge = 1 }, *bad;

		err = ibv_post_recv(qp, &rw, &bad);
		if (err)
			break;
	}
	printf("I rq_full posted %d then errno %d\n", i, err);
	check(i == (int)qx.cap.max_recv_wr && err == ENOMEM,
	      "ibv_post_recv: %d receives (cap.max_recv_wr %u), then ENOMEM (got %d)", i,
	      qx.cap.max_recv_wr, err);
	ibv_destroy_qp(qp);

	errno = 0;
	dmn = mlx5dv_dr_domain_create(ctx, MLX5DV_DR_DOMAIN_TYPE_NIC_RX);
	err = dmn ? 0 : errno;
	printf("I dr_domain_nic_rx %s errno %d\n", dmn ? "created" : "failed", err);
	check(err != EREMOTEIO, "mlx5dv_dr_domain_create(NIC_RX) works or fails cleanly");
	if (dmn) {
		for (i = 0; i < 2; i++) {
			struct mlx5dv_dr_table *t;

			errno = 0;
			t = mlx5dv_dr_table_create(dmn, i);
			err = t ? 0 : errno;
			printf("I dr_table_level_%d %s errno %d\n", i, t ? "created" : "failed", err);
			check(err != EREMOTEIO,
			      "mlx5dv_dr_table_create(level %d) works or fails cleanly", i);
			if (t)
				mlx5dv_dr_table_destroy(t);
		}
		mlx5dv_dr_domain_destroy(dmn);
	}
	steering(ctx);
	ibv_dereg_mr(mr);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	printf("limits_probe: %d passed, %d failed\n", passes, failures);
	return failures ? 1 : 0;
}
