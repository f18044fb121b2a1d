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
 *     local one, a silent neighbour's) and a connection request to its listener are in flight
 *     (the request's new context made while the file's ids are being destroyed);
 * after each class every context is freed: a new file's first 128 ids are numbered 0 to 127
 * (context numbers are lowest-free, upstream's xa_alloc(); a context left behind is a number
 * skipped), so nothing else may hold an rdma_cm id meanwhile.
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
#include <time.h>
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

/* rdma_user_cm.h's struct rdma_ucm_write_cm_event (rdma-core 44's header has no such command):
 * the id, the event (RDMA_CM_EVENT_USER 18), its status and the parameter union (304 bytes). */
#define UCMA_CMD_WRITE_CM_EVENT 24
#define CM_EVENT_USER 18
struct cm_write_event {
	__u32 cmd;
	__u16 in;
	__u16 out;
	__u32 id, reserved, event;
	__s32 status;
	__u8 param[304];
};

/* WRITE_CM_EVENT: a user event queued for id; 0 or -errno. */
static int write_event(int fd, uint32_t id)
{
	struct cm_write_event w = { .id = id, .event = CM_EVENT_USER };

	return UCMD(fd, w, UCMA_CMD_WRITE_CM_EVENT, 0) < 0 ? -errno : 0;
}

/* GET_EVENT: 0 and the event in *ev, or -errno. */
static int get_event(int fd, struct ucma_abi_event_resp *ev)
{
	struct ucma_abi_get_event g = { .response = (uintptr_t)ev };

	return UCMD(fd, g, UCMA_CMD_GET_EVENT, sizeof(*ev)) < 0 ? -errno : 0;
}

/* Ids all_freed makes: more than the classes ever hold at once (a closed-file round: 21). */
#define FREED_IDS 128

/*
 * Every context freed: a new file's ids are numbered 0, 1, ... FREED_IDS - 1 (context numbers
 * are lowest-free), so a context any class left behind shows as a number skipped.
 */
static void all_freed(const char *after)
{
	int fd = open(DEV, O_RDWR | O_NONBLOCK), n = 0;
	uint32_t id = ~0u;

	while (fd >= 0 && n < FREED_IDS && create_id(fd, 1 + n, &id) == 0 && id == (uint32_t)n)
		n++;
	check(n == FREED_IDS, "%s: every context freed (a new file's %d ids are numbered 0 to %d)",
	      after, FREED_IDS, FREED_IDS - 1);
	if (n != FREED_IDS)
		printf("I %s: the new file's id %d is number %u: a context is still held\n", after,
		       n, id);
	if (fd >= 0)
		close(fd);
}

/* Ids per round of destroy_vs_event, and its rounds. */
#define BATCH 16
#define ROUNDS 96
/* Context numbers below this are counted per id (a file's ids here are small numbers). */
#define MAXID 256

struct taker {
	int fd;
	atomic_int stop;
	atomic_int got[MAXID]; /* events taken, by id */
};

static void *take_events(void *arg)
{
	struct taker *t = arg;
	struct ucma_abi_event_resp ev;

	while (!atomic_load(&t->stop)) {
		if (get_event(t->fd, &ev) == 0 && ev.id < MAXID)
			atomic_fetch_add(&t->got[ev.id], 1);
	}
	return NULL;
}

static long now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000L + ts.tv_nsec / 1000;
}

/* How long an id's resolution of SRC takes to queue its event (the median of 5), in us. */
static long event_latency(int fd, const char *src)
{
	long v[5], t0, x;
	struct ucma_abi_event_resp ev;
	struct pollfd p = { .fd = fd, .events = POLLIN };
	uint32_t id, reported;
	int i, j;

	for (i = 0; i < 5; i++) {
		v[i] = 1000;
		if (create_id(fd, 1, &id))
			continue;
		t0 = now_us();
		if (!resolve(fd, id, NULL, src, 0, 2000) && poll(&p, 1, 3000) > 0) {
			v[i] = now_us() - t0;
			get_event(fd, &ev);
		}
		destroy_id(fd, id, &reported);
	}
	for (i = 0; i < 5; i++)
		for (j = i + 1; j < 5; j++)
			if (v[j] < v[i]) {
				x = v[i];
				v[i] = v[j];
				v[j] = x;
			}
	return v[2];
}

/*
 * Rounds of BATCH ids resolving SRC (a local address: the event comes within about `lat` us)
 * while a thread takes the file's events; the ids are destroyed one after the other, from a
 * little before the events to twice their latency, so that destroys meet events being queued.
 * Each id's DESTROY_ID must report what the thread took of it, and none may come after.
 */
static void destroy_vs_event(const char *src)
{
	int fd = open(DEV, O_RDWR | O_NONBLOCK), i, r, bad = 0, late = 0, ok = 0, n = 0;
	struct ucma_abi_event_resp ev;
	struct pollfd p;
	long lat;

	check(fd >= 0, "destroy vs event: open " DEV);
	if (fd < 0)
		return;
	lat = event_latency(fd, src);
	printf("I destroy vs event: an event comes %ld us after its resolve\n", lat);
	for (r = 0; r < ROUNDS; r++) {
		struct taker *t = calloc(1, sizeof(*t));
		uint32_t id[BATCH], reported[BATCH];
		pthread_t th;

		t->fd = fd;
		for (i = 0; i < BATCH; i++) {
			id[i] = ~0u;
			if (create_id(fd, 100 + i, &id[i]) || id[i] >= MAXID)
				bad++;
		}
		pthread_create(&th, NULL, take_events, t);
		for (i = 0; i < BATCH; i++)
			if (id[i] < MAXID && resolve(fd, id[i], NULL, src, 0, 2000))
				bad++;
		/* Round r starts its destroys at r/ROUNDS of twice the latency. */
		usleep(2 * lat * r / ROUNDS);
		for (i = 0; i < BATCH; i++) {
			reported[i] = ~0u;
			if (id[i] < MAXID && destroy_id(fd, id[i], &reported[i]))
				bad++;
		}
		/* Whatever a late event would be, the thread has time to take it. */
		usleep(2 * lat + 2000);
		atomic_store(&t->stop, 1);
		pthread_join(th, NULL);
		for (i = 0; i < BATCH; i++) {
			if (id[i] >= MAXID)
				continue;
			n++;
			if ((int)reported[i] != atomic_load(&t->got[id[i]])) {
				if (bad + late < 5)
					printf("I destroy vs event: round %d id %u: events_reported %u, "
					       "the thread took %d\n", r, id[i], reported[i],
					       atomic_load(&t->got[id[i]]));
				bad++;
			}
			ok += atomic_load(&t->got[id[i]]) > 0;
		}
		p = (struct pollfd){ .fd = fd, .events = POLLIN };
		while (poll(&p, 1, 0) > 0 && get_event(fd, &ev) == 0)
			late++;
		free(t);
	}
	check(!bad, "destroy vs event: %d ids destroyed while a thread takes their events: "
		    "events_reported = the events the thread got (%d mismatches)", n, bad);
	check(!late, "destroy vs event: no event of a destroyed id after DESTROY_ID (%d)", late);
	printf("I destroy vs event: %d of %d ids had their event taken before their destroy\n", ok,
	       n);
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

/* Rounds of migrate_vs_close, and the user events each id has pending while it moves. */
#define MIG_ROUNDS 120
#define MIG_EVENTS 8

/*
 * Rounds of BATCH ids on a file A, each with MIG_EVENTS user events pending (its move takes
 * them along: the longer the move, the likelier the close meets it), moved in turn to a file B
 * by MIGRATE_ID while a thread closes A, a little later each round (from before the first move
 * to after the last): the close destroys A's ids from the first on as the moves take them from
 * the first on, so the two meet at one id. Each move succeeded (B queries and destroys the id)
 * or failed ENOENT with the id gone (B's DESTROY_ID is ENOENT).
 */
static void migrate_vs_close(void)
{
	int i, k, r, moved = 0, gone = 0, bad = 0;
	long t0, per = 1;

	for (r = 0; r < MIG_ROUNDS; r++) {
		int a = open(DEV, O_RDWR | O_NONBLOCK), b = open(DEV, O_RDWR | O_NONBLOCK);
		struct ucma_abi_migrate_resp mr;
		struct ucma_abi_migrate_id m = { .response = (uintptr_t)&mr };
		/* Round 0 measures how long a move takes; the later ones spread the close over
		 * the moves. */
		struct closer c = { .fd = a,
				    .delay_us = r ? per * BATCH * (r - 1) / (MIG_ROUNDS - 2) : 0 };
		uint32_t id[BATCH], reported;
		int rc[BATCH];
		pthread_t th;

		if (a < 0 || b < 0) {
			bad++;
			continue;
		}
		for (i = 0; i < BATCH; i++) {
			if (create_id(a, 1 + i, &id[i]))
				bad++;
			for (k = 0; k < MIG_EVENTS; k++)
				if (write_event(a, id[i]))
					bad++;
		}
		m.fd = a;
		if (r)
			pthread_create(&th, NULL, close_file, &c);
		t0 = now_us();
		for (i = 0; i < BATCH; i++) {
			m.id = id[i];
			rc[i] = UCMD(b, m, UCMA_CMD_MIGRATE_ID, sizeof(mr)) < 0 ? -errno : 0;
		}
		if (r)
			pthread_join(th, NULL);
		else {
			per = (now_us() - t0) / BATCH + 1;
			close(a);
		}
		for (i = 0; i < BATCH; i++) {
			if (rc[i] == 0) {
				/* The id is the new file's. */
				struct ucma_abi_query_addr_resp q;
				struct ucma_abi_query qc = { .response = (uintptr_t)&q, .id = id[i] };

				if (UCMD(b, qc, UCMA_CMD_QUERY, sizeof(q)) < 0 ||
				    destroy_id(b, id[i], &reported)) {
					if (bad < 5)
						printf("I migrate vs close: round %d: id %u moved, but B's "
						       "QUERY or DESTROY_ID fails: %s\n", r, id[i],
						       strerror(errno));
					bad++;
				}
				moved++;
			} else if (rc[i] == -ENOENT) {
				int d = destroy_id(b, id[i], &reported);

				if (d != -ENOENT) {
					if (bad < 5)
						printf("I migrate vs close: round %d: id %u not moved "
						       "(ENOENT), B's DESTROY_ID %d\n", r, id[i], d);
					bad++;
				}
				gone++;
			} else {
				if (bad < 5)
					printf("I migrate vs close: round %d: id %u: MIGRATE_ID %d\n", r,
					       id[i], rc[i]);
				bad++;
			}
		}
		close(b);
	}
	printf("I migrate vs close: a move takes %ld us\n", per);
	check(!bad, "migrate vs close: %d MIGRATE_IDs raced with the source file's close: each "
		    "moved the id (the new file queries and destroys it) or failed ENOENT with the "
		    "id gone (%d otherwise)", MIG_ROUNDS * BATCH, bad);
	printf("I migrate vs close: %d moved, %d ENOENT\n", moved, gone);
	all_freed("migrate vs close");
}

/*
 * Resolves id of fd to SRC:port (from SRC) and connects it (its QP number made up: the
 * request alone matters); 0 once CONNECT is written, else -1 (with `say`, why).
 */
static int connect_to(int fd, uint32_t id, const char *src, uint16_t port, int say)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	struct ucma_abi_resolve_route rr = { .id = id, .timeout_ms = 2000 };
	struct ucma_abi_connect cc = { .id = id };
	struct ucma_abi_event_resp ev = {};
	int rc;

	rc = resolve(fd, id, src, src, port, 2000);
	if (rc || poll(&p, 1, 3000) <= 0 || get_event(fd, &ev) ||
	    ev.event != RDMA_CM_EVENT_ADDR_RESOLVED) {
		if (say)
			printf("I closed file: RESOLVE_IP %d, then event %u status %d\n", rc,
			       ev.event, ev.status);
		return -1;
	}
	rc = UCMD(fd, rr, UCMA_CMD_RESOLVE_ROUTE, 0) < 0 ? -errno : 0;
	if (rc || poll(&p, 1, 3000) <= 0 || get_event(fd, &ev) ||
	    ev.event != RDMA_CM_EVENT_ROUTE_RESOLVED) {
		if (say)
			printf("I closed file: RESOLVE_ROUTE %d, then event %u status %d\n", rc,
			       ev.event, ev.status);
		return -1;
	}
	cc.conn_param.qp_num = 0x1234;
	cc.conn_param.responder_resources = 1;
	cc.conn_param.initiator_depth = 1;
	cc.conn_param.retry_count = 7;
	cc.conn_param.rnr_retry_count = 7;
	cc.conn_param.valid = 1;
	rc = UCMD(fd, cc, UCMA_CMD_CONNECT, 0) < 0 ? -errno : 0;
	if (rc && say)
		printf("I closed file: CONNECT %d\n", rc);
	return rc ? -1 : 0;
}

/* Rounds of closed_file, and the idle ids (each with 4 user events pending, but in round 0,
 * which measures) its files hold before their listener: the close's span before the listener
 * goes. */
#define CF_ROUNDS 90
#define CF_IDLE 64

static void closed_file(const char *src, const char *silent)
{
	int i, bad = 0, nocon = 0, req = 0;

	long lat = 1000, t0 = 0;

	/* Round 0 measures how long the connection request takes to reach the listener; the
	 * later ones close the files from before it comes to twice that. */
	for (i = 0; i < CF_ROUNDS; i++) {
		int fd = open(DEV, O_RDWR | O_NONBLOCK), fd2 = open(DEV, O_RDWR | O_NONBLOCK), k;
		uint32_t a, b, l, c, idle;
		struct ucma_abi_bind_ip bi = { .addr = sin6_of(src, 7400 + i) };
		struct ucma_abi_listen li = { .backlog = 8 };
		struct ucma_abi_event_resp ev;

		if (fd < 0 || fd2 < 0 || create_id(fd, 1, &a) || create_id(fd, 2, &b) ||
		    create_id(fd2, 4, &c)) {
			bad++;
			continue;
		}
		resolve(fd, a, NULL, src, 0, 2000);
		resolve(fd, b, NULL, silent, 0, 200);
		/* Idle ids made before the listener: a file's close destroys its ids in the order
		 * they were made, these first, so a request that comes meanwhile finds the
		 * listener alive on a closing file. */
		for (k = 0; k < CF_IDLE; k++)
			if (create_id(fd, 10 + k, &idle) ||
			    (i && (write_event(fd, idle) || write_event(fd, idle) ||
				   write_event(fd, idle) || write_event(fd, idle))))
				bad++;
		/* A listener on SRC:7400+i, and a connect to it from the other file. */
		if (create_id(fd, 3, &l))
			bad++;
		bi.id = l;
		li.id = l;
		if (UCMD(fd, bi, UCMA_CMD_BIND_IP, 0) < 0 || UCMD(fd, li, UCMA_CMD_LISTEN, 0) < 0)
			bad++;
		if (connect_to(fd2, c, src, 7400 + i, i == 0) == 0)
			t0 = now_us();
		else
			nocon++;
		if (i == 0) {
			struct pollfd pl = { .fd = fd, .events = POLLIN };

			/* The listener's file: the request's event after the resolution's. */
			while (poll(&pl, 1, 3000) > 0 && get_event(fd, &ev) == 0)
				if (ev.event == RDMA_CM_EVENT_CONNECT_REQUEST) {
					req = 1;
					break;
				}
			lat = now_us() - t0;
			check(req, "closed file: a connection request reaches the listener (%ld us "
				   "after CONNECT)", req ? lat : -1L);
			/* No request (the poll timed out): the sweep stays short. */
			if (!req || lat > 200000)
				lat = 200000;
		} else {
			/* The file goes with all of it in flight; a little later each time. */
			usleep(2 * lat * (i - 1) / (CF_ROUNDS - 2));
		}
		close(fd);
		close(fd2);
	}
	/* The silent neighbour's resolution and the CM's retries end after the files. */
	sleep(1);
	check(!bad && !nocon, "closed file: %d files closed with resolutions and a connection "
			      "request in flight (%d setups failed, %d connects failed)", CF_ROUNDS,
	      bad, nocon);
	all_freed("closed file");
}

int main(int argc, char **argv)
{
	/* Each line as it comes: a run cut short by its timeout still shows how far it got. */
	setvbuf(stdout, NULL, _IOLBF, 0);
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
