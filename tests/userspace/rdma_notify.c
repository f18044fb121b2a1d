// SPDX-License-Identifier: GPL-2.0
/*
 * rdma_notify: listens to the RDMA netlink notification group
 * (RDMA_NL_GROUP_NOTIFY, what iproute2's `rdma monitor` joins; the iproute2 of
 * the test VM predates that command) for -t SECONDS and prints one line per
 * RDMA_NLDEV_CMD_MONITOR message:
 *   E <event> dev <index> <name> [port <n>] [netdev <index> <name>]
 * with <event> REGISTER, UNREGISTER, NETDEV_ATTACH, NETDEV_DETACH, RENAME,
 * NETDEV_RENAME or the number (upstream enum rdma_nl_notify_event_type).
 * Prints "I ready" once it has joined the group.
 */
#include <errno.h>
#include <linux/netlink.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#ifndef NETLINK_RDMA
#define NETLINK_RDMA 20
#endif
#define RDMA_NL_NLDEV 5
#define RDMA_NLDEV_CMD_MONITOR 28
#define RDMA_NL_GROUP_NOTIFY 4
#define ATTR_DEV_INDEX 1
#define ATTR_DEV_NAME 2
#define ATTR_PORT_INDEX 3
#define ATTR_NDEV_INDEX 50
#define ATTR_NDEV_NAME 51
#define ATTR_EVENT_TYPE 102

static const char *event_name(int e)
{
	static const char *n[] = { "REGISTER", "UNREGISTER", "NETDEV_ATTACH",
				   "NETDEV_DETACH", "RENAME", "NETDEV_RENAME" };

	return e >= 0 && e < 6 ? n[e] : NULL;
}

int main(int argc, char **argv)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
	int secs = 5, opt, fd, group = RDMA_NL_GROUP_NOTIFY;
	struct timespec t0, t;
	char buf[8192];

	while ((opt = getopt(argc, argv, "t:")) != -1) {
		if (opt == 't')
			secs = atoi(optarg);
		else
			return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_RDMA);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    setsockopt(fd, SOL_NETLINK, NETLINK_ADD_MEMBERSHIP, &group, sizeof(group))) {
		printf("I error %d %s\n", errno, strerror(errno));
		return 1;
	}
	printf("I ready\n");
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		struct nlmsghdr *h;
		ssize_t n;

		clock_gettime(CLOCK_MONOTONIC, &t);
		if (t.tv_sec - t0.tv_sec >= secs)
			break;
		if (poll(&p, 1, 200) != 1)
			continue;
		n = recv(fd, buf, sizeof(buf), 0);
		if (n <= 0)
			break;
		for (h = (struct nlmsghdr *)buf; NLMSG_OK(h, (size_t)n); h = NLMSG_NEXT(h, n)) {
			int ev = -1, port = -1, ndev = -1, idx = -1, len;
			char name[80] = "", ndev_name[80] = "";
			struct nlattr *a;

			if (h->nlmsg_type != ((RDMA_NL_NLDEV << 10) | RDMA_NLDEV_CMD_MONITOR)) {
				printf("I other_type 0x%x\n", h->nlmsg_type);
				continue;
			}
			len = h->nlmsg_len - NLMSG_HDRLEN;
			for (a = (struct nlattr *)NLMSG_DATA(h); len >= (int)NLA_HDRLEN &&
			     a->nla_len >= NLA_HDRLEN && a->nla_len <= len;
			     len -= NLA_ALIGN(a->nla_len),
			     a = (struct nlattr *)((char *)a + NLA_ALIGN(a->nla_len))) {
				void *d = (char *)a + NLA_HDRLEN;
				int dl = a->nla_len - NLA_HDRLEN;

				switch (a->nla_type & NLA_TYPE_MASK) {
				case ATTR_DEV_INDEX: if (dl >= 4) memcpy(&idx, d, 4); break;
				case ATTR_PORT_INDEX: if (dl >= 4) memcpy(&port, d, 4); break;
				case ATTR_NDEV_INDEX: if (dl >= 4) memcpy(&ndev, d, 4); break;
				case ATTR_EVENT_TYPE: if (dl >= 1) ev = *(uint8_t *)d; break;
				case ATTR_DEV_NAME:
					snprintf(name, sizeof(name), "%.*s", dl, (char *)d);
					break;
				case ATTR_NDEV_NAME:
					snprintf(ndev_name, sizeof(ndev_name), "%.*s", dl, (char *)d);
					break;
				}
			}
			if (event_name(ev))
				printf("E %s dev %d %s", event_name(ev), idx, name);
			else
				printf("E %d dev %d %s", ev, idx, name);
			if (port >= 0)
				printf(" port %d", port);
			if (ndev >= 0)
				printf(" netdev %d %s", ndev, ndev_name);
			printf("\n");
		}
	}
	close(fd);
	return 0;
}
