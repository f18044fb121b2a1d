// SPDX-License-Identifier: GPL-2.0
/*
 * gid_table DEVICE: the device's GID table as libibverbs' ibv_query_gid_table() reads it
 * (UVERBS_METHOD_QUERY_GID_TABLE), one line per entry: `index port gid_type ndev_ifindex`,
 * then each entry again through ibv_query_gid_ex() (QUERY_GID_ENTRY) as `entry index port
 * gid_type ndev_ifindex`.
 */
#include <infiniband/verbs.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
	struct ibv_gid_entry entries[64], e;
	struct ibv_device **list;
	struct ibv_context *c = NULL;
	ssize_t n;
	int i, nd;

	if (argc != 2) {
		fprintf(stderr, "usage: %s DEVICE\n", argv[0]);
		return 2;
	}
	list = ibv_get_device_list(&nd);
	for (i = 0; list && i < nd; i++)
		if (!strcmp(ibv_get_device_name(list[i]), argv[1]))
			c = ibv_open_device(list[i]);
	if (list)
		ibv_free_device_list(list);
	if (!c) {
		printf("cannot open %s\n", argv[1]);
		return 1;
	}
	n = ibv_query_gid_table(c, entries, 64, 0);
	if (n < 0) {
		printf("ibv_query_gid_table: %zd\n", n);
		return 1;
	}
	for (i = 0; i < n; i++)
		printf("%u %u %u %u\n", entries[i].gid_index, entries[i].port_num,
		       entries[i].gid_type, entries[i].ndev_ifindex);
	for (i = 0; i < n; i++) {
		if (ibv_query_gid_ex(c, entries[i].port_num, entries[i].gid_index, &e, 0)) {
			printf("ibv_query_gid_ex %u failed\n", entries[i].gid_index);
			return 1;
		}
		printf("entry %u %u %u %u\n", e.gid_index, e.port_num, e.gid_type,
		       e.ndev_ifindex);
	}
	ibv_close_device(c);
	return 0;
}
