// SPDX-License-Identifier: GPL-2.0
/*
 * port_events: prints a device's asynchronous events as they come, one line
 * each, flushed (ibv_asyncwatch's output is block-buffered into a file and
 * lost when it is killed):
 *
 *   port_events DEVICE COUNT SECONDS [EVENT]
 *
 * opens DEVICE, prints "ready", then "event <IBV_EVENT name> <number> port
 * <port>" for each event until COUNT were seen or SECONDS passed without one
 * (then "timeout"). With EVENT (an ibv_event_type number) only events of that
 * type count: the others are printed too (a link going down also changes the
 * GID table, in either order). Exit status 0 when COUNT events came.
 */
#include <infiniband/verbs.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
	struct ibv_device **list;
	struct ibv_context *c = NULL;
	int i, n, count, secs, want = -1, seen = 0;

	if (argc != 4 && argc != 5) {
		fprintf(stderr, "usage: %s DEVICE COUNT SECONDS [EVENT]\n", argv[0]);
		return 2;
	}
	count = atoi(argv[2]);
	secs = atoi(argv[3]);
	if (argc == 5)
		want = atoi(argv[4]);
	list = ibv_get_device_list(&n);
	for (i = 0; list && i < n; i++)
		if (!strcmp(ibv_get_device_name(list[i]), argv[1]))
			c = ibv_open_device(list[i]);
	if (list)
		ibv_free_device_list(list);
	if (!c) {
		printf("cannot open %s\n", argv[1]);
		return 1;
	}
	printf("ready\n");
	fflush(stdout);
	while (seen < count) {
		struct pollfd p = { .fd = c->async_fd, .events = POLLIN };
		struct ibv_async_event ev;

		if (poll(&p, 1, secs * 1000) <= 0) {
			printf("timeout\n");
			break;
		}
		if (ibv_get_async_event(c, &ev))
			continue;
		printf("event %s %d port %d\n", ibv_event_type_str(ev.event_type),
		       ev.event_type, ev.element.port_num);
		fflush(stdout);
		if (want < 0 || (int)ev.event_type == want)
			seen++;
		ibv_ack_async_event(&ev);
	}
	ibv_close_device(c);
	return seen == count ? 0 : 1;
}
