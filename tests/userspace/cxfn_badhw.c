// SPDX-License-Identifier: GPL-2.0
/*
 * cxfn_badhw: drives the emulated ConnectX function's test window (the last page
 * of BAR 0, host/cxfn/src/regs.rs, Documentation/pcifn.md) from the guest through
 * /sys/bus/pci/devices/BDF/resource0, and runs the one verb a bad-device case
 * needs, printing what a user sees.
 *
 *   cxfn_badhw ctl BDF CMD [ARG0 [ARG1 [ARG2]]]
 *       writes the arguments and the command; prints "result N"; exit 0 if N is 0.
 *   cxfn_badhw port DEV     ibv_query_port(port 1): "query_port: ok state N" or
 *                           "query_port: errno N"
 *   cxfn_badhw hangport DEV BDF OPCODE
 *       opens DEV, then makes the function hold every command of OPCODE
 *       (command 2), then ibv_query_port: "query_port: errno N after S s"
 *       (libmlx5's own port query at open is not held).
 *   cxfn_badhw pd DEV       ibv_alloc_pd: "alloc_pd: ok" or "alloc_pd: errno N"
 *   cxfn_badhw portev DEV BDF
 *       takes port 1 down, then up again (command 8); after each, prints the
 *       async event ("event N port P": 10 IB_EVENT_PORT_ERR, 9 PORT_ACTIVE, or
 *       "event none") and ibv_query_port's state ("state N": 1 DOWN, 4 ACTIVE).
 *   cxfn_badhw fatal DEV BDF
 *       opens DEV, creates a PD and a CQ, raises the firmware fatal error
 *       (command 7) and reads the async events for up to 60 s; prints one
 *       "event N" line per event ("event 8" is IB_EVENT_DEVICE_FATAL), then
 *       "alloc_pd after fatal: errno N" after the first one, and
 *       "fatal events: N" at the end (when the device was removed, or 60 s).
 *
 * Numbers may be decimal or 0x hex.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#define TW_PAGE 0xff000UL	/* BAR0_SIZE - UAR_PAGE */
#define TW_ID 0x00
#define TW_ARG0 0x04
#define TW_CMD 0x10
#define TW_RESULT 0x14
#define TW_MAGIC 0x57545843u	/* "CXTW" little-endian */
#define TW_HANG 2
#define TW_FATAL 7
#define TW_PORT 8

static volatile uint32_t *tw_map(const char *bdf)
{
	char path[256];
	void *p;
	int fd;

	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/resource0", bdf);
	fd = open(path, O_RDWR | O_SYNC);
	if (fd < 0) {
		fprintf(stderr, "%s: %s\n", path, strerror(errno));
		return NULL;
	}
	p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, TW_PAGE);
	close(fd);
	if (p == MAP_FAILED) {
		fprintf(stderr, "mmap %s: %s\n", path, strerror(errno));
		return NULL;
	}
	if (((volatile uint32_t *)p)[TW_ID / 4] != TW_MAGIC) {
		fprintf(stderr, "%s: no test window (id 0x%x)\n", bdf,
			((volatile uint32_t *)p)[TW_ID / 4]);
		munmap(p, 4096);
		return NULL;
	}
	return p;
}

/* Runs one window command; returns its result, or -1 if the window is absent. */
static long tw_run(const char *bdf, uint32_t cmd, const uint32_t args[3])
{
	volatile uint32_t *w = tw_map(bdf);
	long r;
	int i;

	if (!w)
		return -1;
	for (i = 0; i < 3; i++)
		w[TW_ARG0 / 4 + i] = args[i];
	w[TW_CMD / 4] = cmd;
	r = w[TW_RESULT / 4];
	munmap((void *)w, 4096);
	return r;
}

static struct ibv_context *open_dev(const char *name)
{
	struct ibv_device **l = ibv_get_device_list(NULL);
	struct ibv_context *c = NULL;
	int i;

	for (i = 0; l && l[i]; i++)
		if (!strcmp(ibv_get_device_name(l[i]), name))
			c = ibv_open_device(l[i]);
	if (l)
		ibv_free_device_list(l);
	if (!c)
		fprintf(stderr, "cannot open %s\n", name);
	return c;
}

static uint32_t num(const char *s)
{
	return (uint32_t)strtoul(s, NULL, 0);
}

static int do_port(const char *dev)
{
	struct ibv_context *c = open_dev(dev);
	struct ibv_port_attr pa;
	int r;

	if (!c)
		return 1;
	r = ibv_query_port(c, 1, &pa);
	if (r)
		printf("query_port: errno %d\n", r > 0 ? r : errno);
	else
		printf("query_port: ok state %d\n", pa.state);
	ibv_close_device(c);
	return 0;
}

static int do_hangport(const char *dev, const char *bdf, uint32_t opcode)
{
	struct ibv_context *c = open_dev(dev);
	uint32_t args[3] = { opcode, 0, 0 };
	struct timespec t0, t1;
	struct ibv_port_attr pa;
	long r;
	int e;

	if (!c)
		return 1;
	r = tw_run(bdf, TW_HANG, args);
	if (r != 0) {
		printf("hang: result %ld\n", r);
		return 1;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	e = ibv_query_port(c, 1, &pa);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("query_port: errno %d after %ld s\n", e > 0 ? e : (e ? errno : 0),
	       (long)(t1.tv_sec - t0.tv_sec));
	ibv_close_device(c);
	return 0;
}

static int do_pd(const char *dev)
{
	struct ibv_context *c = open_dev(dev);
	struct ibv_pd *pd;

	if (!c)
		return 1;
	pd = ibv_alloc_pd(c);
	if (pd) {
		printf("alloc_pd: ok\n");
		ibv_dealloc_pd(pd);
	} else {
		printf("alloc_pd: errno %d\n", errno);
	}
	ibv_close_device(c);
	return 0;
}

/* The next async event within 10 s, acknowledged; -1 if none. */
static int next_event(struct ibv_context *c, int *port)
{
	struct pollfd p = { .fd = c->async_fd, .events = POLLIN };
	struct ibv_async_event ev;
	int t;

	if (poll(&p, 1, 10000) <= 0 || ibv_get_async_event(c, &ev))
		return -1;
	t = ev.event_type;
	*port = ev.element.port_num;
	ibv_ack_async_event(&ev);
	return t;
}

static int do_portev(const char *dev, const char *bdf)
{
	struct ibv_context *c = open_dev(dev);
	struct ibv_port_attr pa;
	uint32_t args[3] = { 0, 0, 0 };
	int up, t, port = 0;
	long r;

	if (!c)
		return 1;
	for (up = 0; up <= 1; up++) {
		args[0] = up;
		r = tw_run(bdf, TW_PORT, args);
		printf("port %s: result %ld\n", up ? "up" : "down", r);
		t = next_event(c, &port);
		if (t < 0)
			printf("event none\n");
		else
			printf("event %d port %d\n", t, port);
		if (ibv_query_port(c, 1, &pa))
			printf("state errno %d\n", errno);
		else
			printf("state %d\n", pa.state);
	}
	ibv_close_device(c);
	return 0;
}

static int do_fatal(const char *dev, const char *bdf)
{
	static const uint32_t none[3];
	struct ibv_context *c = open_dev(dev);
	struct ibv_async_event ev;
	struct timespec t0, t;
	struct ibv_pd *pd, *pd2;
	struct ibv_cq *cq;
	int fatal = 0, flags;
	long r;

	if (!c)
		return 1;
	pd = ibv_alloc_pd(c);
	cq = ibv_create_cq(c, 16, NULL, NULL, 0);
	if (!pd || !cq) {
		fprintf(stderr, "setup: %s\n", strerror(errno));
		return 1;
	}
	flags = fcntl(c->async_fd, F_GETFL);
	fcntl(c->async_fd, F_SETFL, flags | O_NONBLOCK);
	r = tw_run(bdf, TW_FATAL, none);
	printf("fatal raised: result %ld\n", r);
	fflush(stdout);
	if (r != 0)
		return 1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		struct pollfd p = { .fd = c->async_fd, .events = POLLIN };

		clock_gettime(CLOCK_MONOTONIC, &t);
		if (t.tv_sec - t0.tv_sec > 60)
			break;
		if (poll(&p, 1, 1000) <= 0) {
			/* The device left and came back: its old node is gone. */
			if (fatal >= 2 && access("/sys/class/infiniband/mlx5_0", F_OK) == 0)
				break;
			continue;
		}
		if (ibv_get_async_event(c, &ev))
			continue;
		printf("event %d after %ld s\n", ev.event_type,
		       (long)(t.tv_sec - t0.tv_sec));
		if (ev.event_type == IBV_EVENT_DEVICE_FATAL && ++fatal == 1) {
			pd2 = ibv_alloc_pd(c);
			if (pd2) {
				printf("alloc_pd after fatal: ok\n");
				ibv_dealloc_pd(pd2);
			} else {
				printf("alloc_pd after fatal: errno %d\n", errno);
			}
		}
		ibv_ack_async_event(&ev);
		fflush(stdout);
	}
	printf("fatal events: %d\n", fatal);
	/* The device may be gone: these may fail, as after any unplug. */
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(c);
	return 0;
}

int main(int argc, char **argv)
{
	uint32_t args[3] = { 0, 0, 0 };
	long r;
	int i;

	if (argc >= 4 && !strcmp(argv[1], "ctl")) {
		for (i = 0; i < 3 && 4 + i < argc; i++)
			args[i] = num(argv[4 + i]);
		r = tw_run(argv[2], num(argv[3]), args);
		printf("result %ld\n", r);
		return r == 0 ? 0 : 1;
	}
	if (argc == 3 && !strcmp(argv[1], "port"))
		return do_port(argv[2]);
	if (argc == 3 && !strcmp(argv[1], "pd"))
		return do_pd(argv[2]);
	if (argc == 5 && !strcmp(argv[1], "hangport"))
		return do_hangport(argv[2], argv[3], num(argv[4]));
	if (argc == 4 && !strcmp(argv[1], "portev"))
		return do_portev(argv[2], argv[3]);
	if (argc == 4 && !strcmp(argv[1], "fatal"))
		return do_fatal(argv[2], argv[3]);
	fprintf(stderr,
		"usage: cxfn_badhw ctl BDF CMD [ARG0 [ARG1 [ARG2]]] | port DEV | hangport DEV BDF OPCODE | pd DEV | portev DEV BDF | fatal DEV BDF\n");
	return 2;
}
