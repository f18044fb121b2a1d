// SPDX-License-Identifier: GPL-2.0
/*
 * ah_resolve DEVICE SGID_INDEX ADDRESS [nogrh]: ibv_create_ah() on port 1 of DEVICE to the GID
 * of ADDRESS (IPv4, as ::ffff:a.b.c.d, or IPv6) from GID index SGID_INDEX, as a RoCE v2 user
 * would (with `nogrh`: an AV without a GRH). Prints `dmac xx:xx:xx:xx:xx:xx` (the MAC libmlx5
 * put in the AV from the kernel's create_ah response, read through mlx5dv), `created` on a
 * device that is not mlx5 (rxe), or `errno N`.
 *
 * LDLIBS: -lmlx5
 */
#include <arpa/inet.h>
#include <errno.h>
#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
	struct ibv_ah_attr a = { 0 };
	struct ibv_device **list;
	struct ibv_context *c = NULL;
	struct mlx5dv_obj o = { 0 };
	struct mlx5dv_ah dah = { 0 };
	struct ibv_pd *pd;
	struct ibv_ah *ah;
	unsigned char *g = a.grh.dgid.raw;
	int i, nd, mlx5 = 0;

	if (argc != 4 && !(argc == 5 && !strcmp(argv[4], "nogrh"))) {
		fprintf(stderr, "usage: %s DEVICE SGID_INDEX ADDRESS [nogrh]\n", argv[0]);
		return 2;
	}
	if (inet_pton(AF_INET, argv[3], g + 12) == 1) {
		g[10] = 0xff;
		g[11] = 0xff;
	} else if (inet_pton(AF_INET6, argv[3], g) != 1) {
		fprintf(stderr, "bad address %s\n", argv[3]);
		return 2;
	}
	list = ibv_get_device_list(&nd);
	for (i = 0; list && i < nd; i++)
		if (!strcmp(ibv_get_device_name(list[i]), argv[1])) {
			c = ibv_open_device(list[i]);
			mlx5 = mlx5dv_is_supported(list[i]);
		}
	if (list)
		ibv_free_device_list(list);
	if (!c) {
		printf("cannot open %s\n", argv[1]);
		return 1;
	}
	pd = ibv_alloc_pd(c);
	if (!pd) {
		printf("ibv_alloc_pd failed\n");
		return 1;
	}
	a.is_global = argc == 4;
	a.grh.sgid_index = atoi(argv[2]);
	a.grh.hop_limit = 64;
	a.port_num = 1;
	ah = ibv_create_ah(pd, &a);
	if (!ah) {
		printf("errno %d\n", errno);
		ibv_dealloc_pd(pd);
		ibv_close_device(c);
		return 0;
	}
	if (!mlx5) {
		printf("created\n");
		ibv_destroy_ah(ah);
		ibv_dealloc_pd(pd);
		ibv_close_device(c);
		return 0;
	}
	o.ah.in = ah;
	o.ah.out = &dah;
	if (mlx5dv_init_obj(&o, MLX5DV_OBJ_AH) || !dah.av) {
		printf("mlx5dv_init_obj failed\n");
		return 1;
	}
	printf("dmac %02x:%02x:%02x:%02x:%02x:%02x\n", dah.av->rmac[0], dah.av->rmac[1],
	       dah.av->rmac[2], dah.av->rmac[3], dah.av->rmac[4], dah.av->rmac[5]);
	ibv_destroy_ah(ah);
	ibv_dealloc_pd(pd);
	ibv_close_device(c);
	return 0;
}
