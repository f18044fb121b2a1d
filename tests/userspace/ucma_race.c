// SPDX-License-Identifier: GPL-2.0
/*
 * ucma_race: the lifetime races upstream's ucma.c was fixed for, as raw rdma_cm writes from two
 * threads, with what a user can observe after each; the same checks on any stack (rdma-rs's
 * ucma, upstream rdma_ucm over rxe):
 *   destroy against a pending event: a thread takes events (GET_EVENT) while the id is
 *     destroyed under it: DESTROY_ID's events_reported equals the events the thread got for
 *     the id (librdmacm's rdma_destroy_id() waits for that many acks), and no event of it
 *     comes after;
 *   migrate_id against close: a thread closes the file an id is in while MIGRATE_ID moves it
 *     to another: either the move succeeded (the new file can query and destroy the id) or it
 *     failed with ENOENT and the id went with the closed file;
 *   an id's context on a closed file: a file closed while its ids' address resolutions (a
 *     local one, a silent neighbour's) and a connection request to its listener are in flight;
 * after each class every context is freed: a new id on a new file is number 0 (context numbers
 * are lowest-free, upstream's xa_alloc()), so nothing else may hold an rdma_cm id meanwhile.
 *
 *   ucma_race SRC SILENT
 * SRC is the IPv4 address of an RDMA netdev (its device has the IB CM), SILENT an address of
 * its subnet nobody has.
 *
 * LDLIBS: -lpthread
 */
#include "rdmars_test.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_cma_abi.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#define DEV "/dev/infiniband/rdma_cm"
#define PS_TCP 0x106

/* A command struct of rdma_cma_abi.h (the header first): its header filled, written whole. */
#define UCMD(fd, s, c, o)                                                                          \
	((s).cmd = (c), (s).in = sizeof(s) - 8, (s).out = (o), write((fd), &(s), sizeof(s)))

static struct sockaddr_in6 sin6_of(const char *ip, uint16_t port)
{
	struct sockaddr_in6 a6 = {};
	struct sockaddr_in *a = (struct sockaddr_in *)&a6;

	a->sin_family = AF_INET;
	a->sin_port = htons(port);
	inet_pton(AF_INET, ip, &a->sin_addr);
	return a6;
}

static int create_id(int fd, uint64_t uid, uint32_t *id)
{
	struct ucma_abi_create_id c = { .uid = uid, .response = (uintptr_t)id, .ps = PS_TCP };

	return UCMD(fd, c, UCMA_CMD_CREATE_ID, sizeof(*id)) < 0 ? -errno : 0;
}

static int destroy_id(int fd, uint32_t id, uint32_t *reported)
{
	struct ucma_abi_destroy_id d = { .response = (uintptr_t)reported, .id = id };

	return UCMD(fd, d, UCMA_CMD_DESTROY_ID, sizeof(*reported)) < 0 ? -errno : 0;
}

static int resolve(int fd, uint32_t id, const char *src, const char *dst, uint16_t port,
		   uint32_t ms)
{
	struct ucma_abi_resolve_ip r = { .id = id, .timeout_ms = ms };

	if (src)
		r.src_addr = sin6_of(src, 0);
	r.dst_addr = sin6_of(dst, port);
	return UCMD(fd, r, UCMA_CMD_RESOLVE_IP, 0) < 0 ? -errno : 0;
}

/* GET_EVENT: 0 and the event in *ev, or -errno. */
static int get_event(int fd, struct ucma_abi_event_resp *ev)
{
	struct ucma_abi_get_event g = { .response = (uintptr_t)ev };

	return UCMD(fd, g, UCMA_CMD_GET_EVENT, sizeof(*ev)) < 0 ? -errno : 0;
}

/* Every context freed: a new file's first id is number 0. */
static void all_freed(const char *after)
{
	int fd = open(DEV, O_RDWR | O_NONBLOCK);
	uint32_t id = ~0u;

	int ok = fd >= 0 && create_id(fd, 1, &id) == 0 && id == 0;

	check(ok, "%s: every context freed (a new id is number 0)", after);
	if (!ok)
		printf("I %s: the new id is %u\n", after, id);
	if (fd >= 0)
		close(fd);
}

struct taker {
	int fd;
	uint32_t id;
	atomic_int stop;
	int got; /* events of `id` taken */
};

static void *take_events(void *arg)
{
	struct taker *t = arg;
	struct ucma_abi_event_resp ev;

	while (!atomic_load(&t->stop)) {
		if (get_event(t->fd, &ev) == 0 && ev.id == t->id)
			t->got++;
	}
	return NULL;
}

static void destroy_vs_event(const char *src)
{
	int fd = open(DEV, O_RDWR | O_NONBLOCK), i, bad = 0, late = 0, ok = 0;
	struct ucma_abi_event_resp ev;
	struct pollfd p;

	check(fd >= 0, "destroy vs event: open " DEV);
	if (fd < 0)
		return;
	for (i = 0; i < 40; i++) {
		struct taker t = { .fd = fd };
		uint32_t reported = ~0u;
		pthread_t th;

		if (create_id(fd, 100 + i, &t.id) || resolve(fd, t.id, NULL, src, 0, 2000)) {
			bad++;
			continue;
		}
		pthread_create(&th, NULL, take_events, &t);
		/* Each iteration destroys a little later: before, around and after the event. */
		usleep((i % 8) * 250);
		if (destroy_id(fd, t.id, &reported))
			bad++;
		atomic_store(&t.stop, 1);
		pthread_join(th, NULL);
		if ((int)reported != t.got)
			bad++;
		ok += t.got;
		p = (struct pollfd){ .fd = fd, .events = POLLIN };
		if (poll(&p, 1, 20) > 0 && get_event(fd, &ev) == 0)
			late++;
	}
	check(!bad, "destroy vs event: 40 ids destroyed while a thread takes their events: "
		    "events_reported = the events the thread got (%d mismatches)", bad);
	check(!late, "destroy vs event: no event of a destroyed id after DESTROY_ID (%d)", late);
	printf("I destroy vs event: %d of 40 events taken before their id's destroy\n", ok);
	close(fd);
	all_freed("destroy vs event");
}

struct closer {
	int fd;
	int delay_us;
};

static void *close_file(void *arg)
{
	struct closer *c = arg;

	usleep(c->delay_us);
	close(c->fd);
	return NULL;
}

static void migrate_vs_close(void)
{
	int i, moved = 0, gone = 0, bad = 0;

	for (i = 0; i < 60; i++) {
		int a = open(DEV, O_RDWR | O_NONBLOCK), b = open(DEV, O_RDWR | O_NONBLOCK);
		struct ucma_abi_migrate_resp r;
		struct ucma_abi_migrate_id m = { .response = (uintptr_t)&r };
		struct closer c = { .fd = a, .delay_us = (i % 6) * 40 };
		uint32_t id = ~0u, reported;
		pthread_t th;
		int rc;

		if (a < 0 || b < 0 || create_id(a, 1, &id)) {
			bad++;
			continue;
		}
		m.id = id;
		m.fd = a;
		pthread_create(&th, NULL, close_file, &c);
		rc = UCMD(b, m, UCMA_CMD_MIGRATE_ID, sizeof(r)) < 0 ? -errno : 0;
		pthread_join(th, NULL);
		if (rc == 0) {
			/* The id is the new file's. */
			struct ucma_abi_query_addr_resp q;
			struct ucma_abi_query qc = { .response = (uintptr_t)&q, .id = id };

			if (UCMD(b, qc, UCMA_CMD_QUERY, sizeof(q)) < 0 || destroy_id(b, id, &reported))
				bad++;
			moved++;
		} else if (rc == -ENOENT) {
			if (destroy_id(b, id, &reported) != -ENOENT)
				bad++;
			gone++;
		} else {
			bad++;
		}
		close(b);
	}
	check(!bad, "migrate vs close: 60 MIGRATE_IDs raced with the source file's close: each "
		    "moved the id (the new file queries and destroys it) or failed ENOENT with the "
		    "id gone (%d otherwise)", bad);
	printf("I migrate vs close: %d moved, %d ENOENT\n", moved, gone);
	all_freed("migrate vs close");
}

static void closed_file(const char *src, const char *silent)
{
	int i, bad = 0;

	for (i = 0; i < 30; i++) {
		int fd = open(DEV, O_RDWR | O_NONBLOCK), fd2 = open(DEV, O_RDWR | O_NONBLOCK);
		uint32_t a, b, l, c;
		struct ucma_abi_bind_ip bi = { .addr = sin6_of(src, 7400 + i) };
		struct ucma_abi_listen li = { .backlog = 8 };
		struct pollfd p = { .fd = fd2, .events = POLLIN };
		struct ucma_abi_event_resp ev;

		if (fd < 0 || fd2 < 0 || create_id(fd, 1, &a) || create_id(fd, 2, &b) ||
		    create_id(fd, 3, &l) || create_id(fd2, 4, &c)) {
			bad++;
			continue;
		}
		resolve(fd, a, NULL, src, 0, 2000);
		resolve(fd, b, NULL, silent, 0, 200);
		/* A listener on SRC:7400+i, and a connect to it from the other file. */
		bi.id = l;
		li.id = l;
		if (UCMD(fd, bi, UCMA_CMD_BIND_IP, 0) < 0 || UCMD(fd, li, UCMA_CMD_LISTEN, 0) < 0)
			bad++;
		if (resolve(fd2, c, src, src, 7400 + i, 2000) == 0 && poll(&p, 1, 3000) > 0 &&
		    get_event(fd2, &ev) == 0 && ev.event == RDMA_CM_EVENT_ADDR_RESOLVED) {
			struct ucma_abi_resolve_route rr = { .id = c, .timeout_ms = 2000 };
			struct ucma_abi_connect cc = { .id = c };

			if (UCMD(fd2, rr, UCMA_CMD_RESOLVE_ROUTE, 0) == 0 && poll(&p, 1, 3000) > 0 &&
			    get_event(fd2, &ev) == 0 && ev.event == RDMA_CM_EVENT_ROUTE_RESOLVED) {
				cc.conn_param.qp_num = 0x1234;
				cc.conn_param.responder_resources = 1;
				cc.conn_param.initiator_depth = 1;
				cc.conn_param.retry_count = 7;
				cc.conn_param.rnr_retry_count = 7;
				cc.conn_param.valid = 1;
				UCMD(fd2, cc, UCMA_CMD_CONNECT, 0);
			}
		}
		/* The file goes with all of it in flight; a little later each time. */
		usleep((i % 5) * 500);
		close(fd);
		close(fd2);
	}
	/* The silent neighbour's resolution and the CM's retries end after the files. */
	sleep(1);
	check(!bad, "closed file: 30 files closed with resolutions and a connection request in "
		    "flight (%d setups failed)", bad);
	all_freed("closed file");
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: ucma_race SRC SILENT\n");
		return 2;
	}
	destroy_vs_event(argv[1]);
	migrate_vs_close();
	closed_file(argv[1], argv[2]);
	printf("I %d passed, %d failed\n", passes, failures);
	return failures ? 1 : 0;
}
