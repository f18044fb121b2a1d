// SPDX-License-Identifier: GPL-2.0
/*
 * ucma_test: /dev/infiniband/rdma_cm as raw write()s and librdmacm 44 see it, the same checks
 * on any stack (rdma-rs's ucma, upstream rdma_ucm over rxe), so that a suite can run it on both
 * and compare the lines:
 *   raw ABI: the header checks (EINVAL), GET_OPTION's ENOSYS, CREATE_ID's port-space and
 *   ENOSPC checks, GET_EVENT's EAGAIN without an event, an unknown QUERY option, BIND's size
 *   checks, SET_OPTION's optlen/level/name checks, RESOLVE_ROUTE without a device, DESTROY_ID
 *   of an unknown id and of another file's, QUERY_ROUTE's ENOSPC;
 *   librdmacm: bind with a port from the local range and the device of the address, an address
 *   in use (EADDRINUSE), the unspecified address on a used port (EADDRNOTAVAIL), reuseaddr and
 *   listen on a shared port, an address of no interface; resolve_addr and resolve_route with
 *   their events and the route's GIDs and MTU, from a given and from any source, an unroutable
 *   destination (ENETUNREACH at the call), a silent neighbour (ADDR_ERROR with -ETIMEDOUT),
 *   poll on the channel, destroying an id with its event pending;
 *   multicast: a join's event and AV, leave, the errnos of joins and leaves (mcast()).
 *
 *   ucma_test [-c] SRC DST SILENT UNROUTABLE
 *   ucma_test -r SRC
 *   ucma_test -i SGID DGID SLID DLID
 * -r: a listening id bound to SRC and an id with a route SRC -> SRC wait for their device's
 * removal (the suite unloads the driver after "I waiting"): RDMA_CM_EVENT_DEVICE_REMOVAL on
 * each, then both destroyed.
 * SRC and DST are IPv4 addresses of RDMA netdevs (DST may be on SRC's device), SILENT an
 * address of their subnet nobody has, UNROUTABLE one without a route. -c: the connection
 * calls fail with EOPNOTSUPP (a stack without the IB CM).
 * -i: AF_IB on InfiniBand (ib_af()): SGID and DGID are port GIDs of one subnet (SLID and DLID
 * their LIDs): bind (the GID's device, a port of the local range, the service ID of the TCP
 * space), a service ID of another space (EPROTONOSUPPORT), a GID no port has (ENODEV),
 * resolve_addr and resolve_route with their events and the SA's path (the LIDs), a GID of
 * the subnet nobody has (ROUTE_ERROR, -EINVAL: the SA's status), a destination of another
 * subnet (ENODEV), an IPv4 destination for an AF_IB source (EINVAL).
 * -i also runs ib_mcast(): a UD id on each port joins a group through the SA (the first the
 * unspecified AF_IB address: the SA creates a group and assigns its MGID; the second that
 * MGID): each MULTICAST_JOIN's AV (the MLID, a GRH to the MGID), QPN 0xffffff and Q_Key;
 * once a probe got through (the SM programs the switch after its answer), UD messages from
 * the second id's QP to the group reach the first's (librdmacm attached it), in order,
 * with the GRH's DGID the MGID and the sender's LID and QPN; a join of a GID that is not
 * multicast: MULTICAST_ERROR, -EINVAL (the SA's status); both leave.
 *
 * -p: IP addresses on InfiniBand (ib_ip()), run for IPv4 and IPv6: A4 B4 A6 B6 are addresses of
 * the IPoIB interfaces of the ports with GIDA and GIDB (LIDA, LIDB), SILENT an address of their
 * IPv4 subnet nobody has, UNROUTABLE an IPv4 address without a route: bind to A (the device
 * whose port has GIDA, the P_Key of the interface's broadcast address, an RDMA_PS_IPOIB id
 * too); resolve_addr from no source to B, a destination on this host (the interface that owns
 * it: the id on GIDB's port, both GIDs GIDB) and from B to B; resolve_route: the SA's path
 * (LIDB both ways, both GIDs, P_Key 0xffff); for IPv4 from A to B (a neighbour over IPoIB: ARP,
 * the suite sets net.ipv4.conf.all.accept_local): the id on GIDA's port, the SA's path from
 * LIDA and GIDA to LIDB and GIDB; an address of no interface (EADDRNOTAVAIL), an unroutable
 * destination (ENETUNREACH).
 *
 *   ucma_test -p A4 B4 A6 B6 GIDA GIDB LIDA LIDB SILENT UNROUTABLE
 *
 *   ucma_test -L SGID PORT
 *   ucma_test -U SGID PORT
 *   ucma_test -N SGID
 * -L: an AF_IB listener of the TCP space on SGID (service ID the space's with PORT) for the
 * two REQs umad_test -C req sends by hand: the first's CONNECT_REQUEST, accept (no QP) and
 * destroy the id at once (its REP unanswered: upstream cm_destroy_id() in IB_CM_REP_SENT
 * sends a REJ, which ends the REP's retries); the second's CONNECT_REQUEST, accept: the REP
 * is never answered (no RTU) and its retries run out as RDMA_CM_EVENT_UNREACHABLE with
 * -ETIMEDOUT on the request's id, the only event after the request (the REQ's duplicates
 * make none).
 * -U: the same with a UD listener of the UDP space for umad_test -C sidr's SIDR REQ and its
 * duplicate: one CONNECT_REQUEST, no other event within 300 ms, accept (the SIDR REP).
 * -N: a UD id on SGID joins a group through the SA (the unspecified AF_IB address); after
 * "I joined" the port's client reregistration (umad_test -C rereg) fails the membership:
 * RDMA_CM_EVENT_MULTICAST_ERROR with -ENETRESET (upstream mcast_event_handler()); leave, and
 * a join again gets MULTICAST_JOIN from the SA.
 *
 * LDLIBS: -lrdmacm
 */
#include "rdmars_test.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <poll.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_cma_abi.h>
#include <infiniband/ib.h>
#include <stdlib.h>
#include <unistd.h>

static struct sockaddr_in addr_of(const char *ip, uint16_t port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };

	inet_pton(AF_INET, ip, &a.sin_addr);
	return a;
}

/* A command struct of rdma_cma_abi.h (the header first): its header filled, written whole. */
#define UCMD(fd, s, c, o)                                                                          \
	((s).cmd = (c), (s).in = sizeof(s) - 8, (s).out = (o), write((fd), &(s), sizeof(s)))

static int fails_with(ssize_t r, int e)
{
	return r < 0 && errno == e;
}

static int create_raw(int fd, uint16_t ps, uint32_t *id)
{
	struct ucma_abi_create_id c = { .uid = 1, .response = (uintptr_t)id, .ps = ps };

	return UCMD(fd, c, UCMA_CMD_CREATE_ID, sizeof(*id)) < 0 ? -1 : 0;
}

static void raw_abi(void)
{
	char abi[16] = "";
	FILE *f = fopen("/sys/class/misc/rdma_cm/abi_version", "r");
	int fd, fd2;
	uint32_t id = ~0u, id2 = ~0u, reported = ~0u;
	struct ucma_abi_cmd_hdr h = { .cmd = 99 };
	struct pollfd p;

	check(f && fgets(abi, sizeof(abi), f) && atoi(abi) == 4, "abi_version is 4");
	if (f)
		fclose(f);
	fd = open("/dev/infiniband/rdma_cm", O_RDWR | O_NONBLOCK);
	check(fd >= 0, "open /dev/infiniband/rdma_cm");
	if (fd < 0)
		return;
	check(fails_with(write(fd, &h, 4), EINVAL), "write shorter than the header: EINVAL");
	check(fails_with(write(fd, &h, 8), EINVAL), "command 99: EINVAL");
	h.cmd = UCMA_CMD_CREATE_ID;
	h.in = 100;
	check(fails_with(write(fd, &h, 8), EINVAL), "in beyond the write: EINVAL");
	h.cmd = UCMA_CMD_GET_OPTION;
	h.in = 0;
	check(fails_with(write(fd, &h, 8), ENOSYS), "GET_OPTION: ENOSYS");
	{
		struct ucma_abi_create_id c = { .response = (uintptr_t)&id, .ps = 0x9999 };

		check(fails_with(UCMD(fd, c, UCMA_CMD_CREATE_ID, 4), EINVAL),
		      "CREATE_ID in an unknown port space: EINVAL");
		c.ps = RDMA_PS_TCP;
		check(fails_with(UCMD(fd, c, UCMA_CMD_CREATE_ID, 2), ENOSPC),
		      "CREATE_ID with out 2: ENOSPC");
	}
	check(create_raw(fd, RDMA_PS_TCP, &id) == 0 && id != ~0u, "CREATE_ID (TCP) answers an id");
	{
		struct ucma_abi_event_resp ev;
		struct ucma_abi_get_event g = { .response = (uintptr_t)&ev };

		check(fails_with(UCMD(fd, g, UCMA_CMD_GET_EVENT, sizeof(ev)), EAGAIN),
		      "GET_EVENT without an event (O_NONBLOCK): EAGAIN");
		check(fails_with(UCMD(fd, g, UCMA_CMD_GET_EVENT, 8), ENOSPC),
		      "GET_EVENT with out 8: ENOSPC");
	}
	p = (struct pollfd){ .fd = fd, .events = POLLIN };
	check(poll(&p, 1, 0) == 0, "poll without an event: nothing");
	{
		struct ucma_abi_query_addr_resp r;
		struct ucma_abi_query q = { .response = (uintptr_t)&r, .id = id, .option = 9 };

		check(fails_with(UCMD(fd, q, UCMA_CMD_QUERY, sizeof(r)), ENOSYS),
		      "QUERY option 9: ENOSYS");
		q.option = UCMA_QUERY_ADDR;
		check(fails_with(UCMD(fd, q, UCMA_CMD_QUERY, 16), ENOSPC),
		      "QUERY_ADDR with out 16: ENOSPC");
		check(UCMD(fd, q, UCMA_CMD_QUERY, sizeof(r)) > 0 && r.src_size == 0 && r.node_guid == 0,
		      "QUERY_ADDR of a new id: no address, no device");
	}
	{
		struct ucma_abi_query_route_resp r;
		struct ucma_abi_query q = { .response = (uintptr_t)&r, .id = id };

		check(fails_with(UCMD(fd, q, UCMA_CMD_QUERY_ROUTE, 64), ENOSPC),
		      "QUERY_ROUTE with out 64: ENOSPC");
	}
	{
		struct ucma_abi_bind b = { .id = id, .addr_size = 8 };
		struct sockaddr_in a = { .sin_family = AF_INET };

		memcpy(&b.addr, &a, sizeof(a));
		check(fails_with(UCMD(fd, b, UCMA_CMD_BIND, 0), EINVAL),
		      "BIND with a wrong addr_size: EINVAL");
		b.addr_size = sizeof(a);
		b.reserved = 1;
		check(fails_with(UCMD(fd, b, UCMA_CMD_BIND, 0), EINVAL),
		      "BIND with reserved set: EINVAL");
	}
	{
		int one = 1;
		short two = 1;
		struct ucma_abi_set_option s = { .optval = (uintptr_t)&two, .id = id,
						 .level = RDMA_OPTION_ID,
						 .optname = RDMA_OPTION_ID_REUSEADDR, .optlen = 2 };

		check(fails_with(UCMD(fd, s, UCMA_CMD_SET_OPTION, 0), EINVAL),
		      "SET_OPTION REUSEADDR with optlen 2: EINVAL");
		s.optval = (uintptr_t)&one;
		s.optlen = sizeof(one);
		s.level = 7;
		check(fails_with(UCMD(fd, s, UCMA_CMD_SET_OPTION, 0), ENOSYS),
		      "SET_OPTION level 7: ENOSYS");
		s.level = RDMA_OPTION_ID;
		s.optname = 9;
		check(fails_with(UCMD(fd, s, UCMA_CMD_SET_OPTION, 0), ENOSYS),
		      "SET_OPTION name 9: ENOSYS");
		s.optname = RDMA_OPTION_ID_REUSEADDR;
		check(UCMD(fd, s, UCMA_CMD_SET_OPTION, 0) > 0, "SET_OPTION REUSEADDR 1");
	}
	{
		struct ucma_abi_resolve_route r = { .id = id, .timeout_ms = 1000 };

		check(fails_with(UCMD(fd, r, UCMA_CMD_RESOLVE_ROUTE, 0), EINVAL),
		      "RESOLVE_ROUTE of an id without a device: EINVAL");
	}
	{
		struct ucma_abi_destroy_id d = { .response = (uintptr_t)&reported, .id = id + 1000 };

		check(fails_with(UCMD(fd, d, UCMA_CMD_DESTROY_ID, 4), ENOENT),
		      "DESTROY_ID of an unknown id: ENOENT");
		fd2 = open("/dev/infiniband/rdma_cm", O_RDWR);
		check(fd2 >= 0 && create_raw(fd2, RDMA_PS_UDP, &id2) == 0,
		      "a second file's id (UDP)");
		d.id = id2;
		check(fails_with(UCMD(fd, d, UCMA_CMD_DESTROY_ID, 4), EINVAL),
		      "DESTROY_ID of another file's id: EINVAL");
		d.id = id;
		check(UCMD(fd, d, UCMA_CMD_DESTROY_ID, 4) > 0 && reported == 0,
		      "DESTROY_ID: 0 events reported");
		check(fails_with(UCMD(fd, d, UCMA_CMD_DESTROY_ID, 4), ENOENT),
		      "DESTROY_ID again: ENOENT");
		/* The second file closes with its id: released by close. */
		if (fd2 >= 0)
			close(fd2);
	}
	close(fd);
}

/* The next event of `ch` within 10 s: its type and status, its id and its UD parameters
 * where asked for; -1 if none came. */
static int next_event_ud(struct rdma_event_channel *ch, int *status, struct rdma_cm_id **id,
			 struct rdma_ud_param *ud)
{
	struct rdma_cm_event *ev;
	struct pollfd p = { .fd = ch->fd, .events = POLLIN };
	int type;

	if (poll(&p, 1, 10000) != 1 || rdma_get_cm_event(ch, &ev))
		return -1;
	type = ev->event;
	*status = ev->status;
	if (id)
		*id = ev->id;
	if (ud)
		*ud = ev->param.ud;
	rdma_ack_cm_event(ev);
	return type;
}

static int next_event(struct rdma_event_channel *ch, int *status, struct rdma_cm_id **id)
{
	return next_event_ud(ch, status, id, NULL);
}

static const char *dev_of(struct rdma_cm_id *id)
{
	return id->verbs ? ibv_get_device_name(id->verbs->device) : "none";
}

static void gid_of(uint8_t g[16], const char *ip)
{
	memset(g, 0, 16);
	g[10] = g[11] = 0xff;
	inet_pton(AF_INET, ip, g + 12);
}

static void cm(const char *src, const char *dst, const char *silent, const char *unroutable,
	       int no_cm)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *a, *b, *c, *d, *r;
	struct sockaddr_in sa, da, ga, any = { .sin_family = AF_INET };
	int one = 1, st = 99, t;
	uint16_t port;
	uint8_t g[16];

	check(ch != NULL, "rdma_create_event_channel");
	if (!ch)
		return;
	check(!rdma_create_id(ch, &a, NULL, RDMA_PS_TCP) && !rdma_create_id(ch, &b, NULL, RDMA_PS_TCP) &&
		      !rdma_create_id(ch, &c, NULL, RDMA_PS_TCP) &&
		      !rdma_create_id(ch, &d, NULL, RDMA_PS_TCP),
	      "rdma_create_id x4");
	sa = addr_of(src, 0);
	check(!rdma_bind_addr(a, (struct sockaddr *)&sa), "bind SRC port 0");
	port = ntohs(rdma_get_src_port(a));
	check(port >= 32768 && port <= 60999, "the port is of the local range");
	printf("I bound to device %s port %u\n", dev_of(a), a->port_num);
	check(a->verbs != NULL, "the bound id has the address's device");
	sa.sin_port = htons(port);
	check(rdma_bind_addr(b, (struct sockaddr *)&sa) && errno == EADDRINUSE,
	      "bind SRC on the same port: EADDRINUSE");
	any.sin_port = htons(port);
	check(rdma_bind_addr(c, (struct sockaddr *)&any) && errno == EADDRNOTAVAIL,
	      "bind 0.0.0.0 on the same port: EADDRNOTAVAIL");
	da = addr_of(silent, 0);
	check(rdma_bind_addr(d, (struct sockaddr *)&da) && errno == EADDRNOTAVAIL,
	      "bind an address of no interface: EADDRNOTAVAIL");
	rdma_destroy_id(a);
	rdma_destroy_id(b);
	rdma_destroy_id(c);
	rdma_destroy_id(d);

	/* reuseaddr: two ids on one port; listening needs the port alone. */
	check(!rdma_create_id(ch, &a, NULL, RDMA_PS_TCP) && !rdma_create_id(ch, &b, NULL, RDMA_PS_TCP),
	      "rdma_create_id x2");
	check(!rdma_set_option(a, RDMA_OPTION_ID, RDMA_OPTION_ID_REUSEADDR, &one, sizeof(one)) &&
		      !rdma_set_option(b, RDMA_OPTION_ID, RDMA_OPTION_ID_REUSEADDR, &one, sizeof(one)),
	      "REUSEADDR on both");
	sa.sin_port = htons(port + 1 > 60999 ? 32768 : port + 1);
	check(!rdma_bind_addr(a, (struct sockaddr *)&sa) && !rdma_bind_addr(b, (struct sockaddr *)&sa),
	      "both bind SRC on one port");
	check(rdma_listen(b, 1) && errno == EADDRINUSE, "listen on a shared port: EADDRINUSE");
	rdma_destroy_id(a);
	check(!rdma_listen(b, 1), "listen once alone on the port");
	check(rdma_set_option(b, RDMA_OPTION_ID, RDMA_OPTION_ID_REUSEADDR, &one, sizeof(one)) &&
		      errno == EINVAL,
	      "REUSEADDR on a listening id: EINVAL");
	rdma_destroy_id(b);

	/* Address and route from SRC to DST. */
	check(!rdma_create_id(ch, &r, NULL, RDMA_PS_TCP), "rdma_create_id");
	sa = addr_of(src, 0);
	da = addr_of(dst, 7471);
	check(!rdma_resolve_addr(r, (struct sockaddr *)&sa, (struct sockaddr *)&da, 2000),
	      "rdma_resolve_addr SRC -> DST");
	t = next_event(ch, &st, NULL);
	check(t == RDMA_CM_EVENT_ADDR_RESOLVED && st == 0, "event ADDR_RESOLVED, status 0 (%d %d)", t,
	      st);
	printf("I resolved on device %s port %u\n", dev_of(r), r->port_num);
	check(!rdma_resolve_route(r, 2000), "rdma_resolve_route");
	t = next_event(ch, &st, NULL);
	check(t == RDMA_CM_EVENT_ROUTE_RESOLVED && st == 0, "event ROUTE_RESOLVED, status 0 (%d %d)",
	      t, st);
	check(r->route.num_paths == 1, "one path (%d)", r->route.num_paths);
	if (r->route.num_paths == 1) {
		struct ibv_sa_path_rec *p = r->route.path_rec;

		gid_of(g, src);
		check(!memcmp(p->sgid.raw, g, 16), "the path's SGID is SRC's");
		gid_of(g, dst);
		check(!memcmp(p->dgid.raw, g, 16), "the path's DGID is DST's");
		check(p->mtu == IBV_MTU_1024, "the path's MTU is 1024 on a 1500-byte netdev (%d)",
		      p->mtu);
		check(p->pkey == htobe16(0xffff), "the path's P_Key is 0xffff");
		check(p->packet_life_time == 16, "the path's packet life time is 16 (%d)",
		      p->packet_life_time);
	}
	check(rdma_resolve_route(r, 2000) && errno == EINVAL, "resolve_route again: EINVAL");
	if (no_cm) {
		struct rdma_conn_param cp = { .retry_count = 7 };

		check(rdma_connect(r, &cp) && errno == EOPNOTSUPP,
		      "rdma_connect without the IB CM: EOPNOTSUPP");
	}
	rdma_destroy_id(r);

	/* From any source: the route's source and the device of DST (a local address). */
	check(!rdma_create_id(ch, &r, NULL, RDMA_PS_UDP), "rdma_create_id (UDP)");
	check(!rdma_resolve_addr(r, NULL, (struct sockaddr *)&da, 2000), "rdma_resolve_addr -> DST");
	t = next_event(ch, &st, NULL);
	check(t == RDMA_CM_EVENT_ADDR_RESOLVED && st == 0, "event ADDR_RESOLVED (%d %d)", t, st);
	printf("I from any: device %s, source %s\n", dev_of(r),
	       inet_ntoa(((struct sockaddr_in *)rdma_get_local_addr(r))->sin_addr));
	rdma_destroy_id(r);

	/* An IPoIB id takes no device from an Ethernet interface's address (upstream
	 * cma_acquire_dev_by_src_ip()): bind EINVAL, a resolution ADDR_ERROR -EINVAL. */
	check(!rdma_create_id(ch, &r, NULL, RDMA_PS_IPOIB), "rdma_create_id (IPoIB)");
	check(rdma_bind_addr(r, (struct sockaddr *)&sa) && errno == EINVAL,
	      "bind SRC with an IPoIB id: EINVAL");
	check(!rdma_resolve_addr(r, NULL, (struct sockaddr *)&da, 2000),
	      "rdma_resolve_addr -> DST with an IPoIB id");
	t = next_event(ch, &st, NULL);
	check(t == RDMA_CM_EVENT_ADDR_ERROR && st == -EINVAL,
	      "IPoIB id: event ADDR_ERROR, status -EINVAL (%d %d)", t, st);
	rdma_destroy_id(r);

	/* No route: the call fails. */
	check(!rdma_create_id(ch, &r, NULL, RDMA_PS_TCP), "rdma_create_id");
	da = addr_of(unroutable, 1);
	check(rdma_resolve_addr(r, NULL, (struct sockaddr *)&da, 500) && errno == ENETUNREACH,
	      "rdma_resolve_addr to an unroutable address: ENETUNREACH");
	rdma_destroy_id(r);
	/* A silent neighbour: ADDR_ERROR with -ETIMEDOUT. */
	check(!rdma_create_id(ch, &r, NULL, RDMA_PS_TCP), "rdma_create_id (silent neighbour)");
	da = addr_of(silent, 1);
	check(!rdma_resolve_addr(r, (struct sockaddr *)&sa, (struct sockaddr *)&da, 500),
	      "rdma_resolve_addr to a silent neighbour");
	t = next_event(ch, &st, NULL);
	check(t == RDMA_CM_EVENT_ADDR_ERROR && st == -ETIMEDOUT,
	      "event ADDR_ERROR, status -ETIMEDOUT (%d %d)", t, st);
	/* No resolve_route here: librdmacm reads id->verbs, which a failed resolution left NULL. */
	rdma_destroy_id(r);

	/*
	 * A group has no route: an id never routed cannot resolve it (ENETUNREACH); one whose
	 * resolution went out of an interface, even a failed one, keeps that interface and
	 * resolves the group through it (upstream rdma_set_src_addr_rcu() sets
	 * dev_addr.bound_dev_if, which later resolutions route by).
	 */
	check(!rdma_create_id(ch, &r, NULL, RDMA_PS_UDP), "rdma_create_id (a group)");
	ga = addr_of("239.1.2.3", 0);
	check(rdma_resolve_addr(r, NULL, (struct sockaddr *)&ga, 500) && errno == ENETUNREACH,
	      "rdma_resolve_addr -> 239.1.2.3 never routed: ENETUNREACH");
	da = addr_of(silent, 1);
	check(!rdma_resolve_addr(r, NULL, (struct sockaddr *)&da, 500),
	      "rdma_resolve_addr -> a silent neighbour from any");
	t = next_event(ch, &st, NULL);
	check(t == RDMA_CM_EVENT_ADDR_ERROR && st == -ETIMEDOUT,
	      "event ADDR_ERROR, status -ETIMEDOUT (%d %d)", t, st);
	check(!rdma_resolve_addr(r, NULL, (struct sockaddr *)&ga, 500),
	      "rdma_resolve_addr -> 239.1.2.3 after a resolution out of SRC's interface");
	t = next_event(ch, &st, NULL);
	check(t == RDMA_CM_EVENT_ADDR_RESOLVED && st == 0,
	      "the group: event ADDR_RESOLVED, status 0 (%d %d)", t, st);
	printf("I the group from any, after the silent neighbour: device %s, source %s\n", dev_of(r),
	       inet_ntoa(((struct sockaddr_in *)rdma_get_local_addr(r))->sin_addr));
	rdma_destroy_id(r);

	/* The loopback of an id never routed: the first active port, but no interface, so no
	 * route (upstream cma_bind_loopback() sets no bound_dev_if): ENODEV. */
	check(!rdma_create_id(ch, &r, NULL, RDMA_PS_TCP), "rdma_create_id (loopback)");
	da = addr_of("0.0.0.0", 7471);
	check(!rdma_resolve_addr(r, NULL, (struct sockaddr *)&da, 2000),
	      "rdma_resolve_addr -> 0.0.0.0");
	t = next_event(ch, &st, NULL);
	check(t == RDMA_CM_EVENT_ADDR_RESOLVED && st == 0, "loopback: event ADDR_RESOLVED (%d %d)",
	      t, st);
	check(rdma_resolve_route(r, 2000) && errno == ENODEV,
	      "loopback without an interface: rdma_resolve_route ENODEV (%d)", errno);
	rdma_destroy_id(r);

	/* An id destroyed with its event pending; poll sees the event first. */
	check(!rdma_create_id(ch, &r, NULL, RDMA_PS_TCP), "rdma_create_id");
	da = addr_of(dst, 1);
	check(!rdma_resolve_addr(r, (struct sockaddr *)&sa, (struct sockaddr *)&da, 2000),
	      "rdma_resolve_addr SRC -> DST");
	{
		struct pollfd p = { .fd = ch->fd, .events = POLLIN };

		check(poll(&p, 1, 10000) == 1 && (p.revents & POLLIN), "poll: the event is there");
	}
	rdma_destroy_id(r);
	{
		struct pollfd p = { .fd = ch->fd, .events = POLLIN };

		check(poll(&p, 1, 200) == 0, "the destroyed id's event is gone");
	}
	rdma_destroy_event_channel(ch);
}

static void removal(const char *src)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *l, *r, *got;
	struct sockaddr_in sa = addr_of(src, 0), da = addr_of(src, 7000);
	int st, t, seen = 0, i;

	check(ch && !rdma_create_id(ch, &l, NULL, RDMA_PS_TCP) &&
		      !rdma_create_id(ch, &r, NULL, RDMA_PS_TCP),
	      "two ids");
	if (!ch)
		return;
	check(!rdma_bind_addr(l, (struct sockaddr *)&sa) && !rdma_listen(l, 4), "one listens on SRC");
	check(!rdma_resolve_addr(r, (struct sockaddr *)&sa, (struct sockaddr *)&da, 2000) &&
		      next_event(ch, &st, NULL) == RDMA_CM_EVENT_ADDR_RESOLVED &&
		      !rdma_resolve_route(r, 2000) &&
		      next_event(ch, &st, NULL) == RDMA_CM_EVENT_ROUTE_RESOLVED,
	      "the other resolves SRC -> SRC");
	printf("I waiting\n");
	fflush(stdout);
	for (i = 0; i < 2; i++) {
		struct pollfd p = { .fd = ch->fd, .events = POLLIN };
		struct rdma_cm_event *ev;

		if (poll(&p, 1, 30000) != 1 || rdma_get_cm_event(ch, &ev))
			break;
		t = ev->event;
		got = ev->id;
		rdma_ack_cm_event(ev);
		if (t == RDMA_CM_EVENT_DEVICE_REMOVAL && (got == l || got == r))
			seen |= got == l ? 1 : 2;
	}
	check(seen == 3, "DEVICE_REMOVAL on the listening and the resolved id (%d)", seen);
	rdma_destroy_id(l);
	rdma_destroy_id(r);
	rdma_destroy_event_channel(ch);
}

/*
 * Multicast on a UD id bound to SRC (upstream cma_iboe_join_multicast(): local on RoCE): the
 * join's MULTICAST_JOIN with the group's AV (::ffff:239.1.2.4, hop limit 64 on RoCE v2), QPN
 * 0xffffff and RDMA_UDP_QKEY; leave. Errnos: a TCP id, the unspecified address, an IPv6
 * group on RoCE v2 (ENOTSUPP, 524), an id without a device; raw JOIN_MCAST with bad join
 * flags, an address size that is not the family's, no room for the response; LEAVE_MCAST of
 * an unknown group and without room.
 */
static void mcast(const char *src)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct sockaddr_in sa = addr_of(src, 0), ga = addr_of("239.1.2.4", 0), za = addr_of("0.0.0.0", 0);
	struct sockaddr_in6 g6 = { .sin6_family = AF_INET6 };
	struct rdma_cm_id *u = NULL, *t = NULL, *idle = NULL;
	struct rdma_cm_event *e;
	uint8_t mgid[16] = { [10] = 0xff, [11] = 0xff, [12] = 239, [13] = 1, [14] = 2, [15] = 4 };
	int fd, st;
	uint32_t id, mc;

	check(ch && !rdma_create_id(ch, &u, NULL, RDMA_PS_UDP) &&
		      !rdma_create_id(ch, &t, NULL, RDMA_PS_TCP) &&
		      !rdma_create_id(ch, &idle, NULL, RDMA_PS_UDP),
	      "mcast: a UDP, a TCP and an idle UDP id");
	check(!rdma_bind_addr(u, (struct sockaddr *)&sa) && !rdma_bind_addr(t, (struct sockaddr *)&sa),
	      "mcast: the UDP and TCP ids bound to SRC");
	check(!rdma_join_multicast(u, (struct sockaddr *)&ga, NULL), "mcast: join 239.1.2.4");
	if (!rdma_get_cm_event(ch, &e)) {
		struct rdma_ud_param *p = &e->param.ud;

		check(e->event == RDMA_CM_EVENT_MULTICAST_JOIN && e->status == 0,
		      "mcast: event MULTICAST_JOIN, status 0 (%d %d)", e->event, e->status);
		check(p->qp_num == 0xffffff && p->qkey == RDMA_UDP_QKEY,
		      "mcast: QPN 0xffffff, Q_Key RDMA_UDP_QKEY (%x %x)", p->qp_num, p->qkey);
		check(p->ah_attr.is_global && !memcmp(p->ah_attr.grh.dgid.raw, mgid, 16),
		      "mcast: the AV's DGID is ::ffff:239.1.2.4");
		check(p->ah_attr.grh.hop_limit == 64, "mcast: the AV's hop limit is 64 (%d)",
		      p->ah_attr.grh.hop_limit);
		rdma_ack_cm_event(e);
	} else {
		check(0, "mcast: event MULTICAST_JOIN, status 0");
	}
	check(!rdma_leave_multicast(u, (struct sockaddr *)&ga), "mcast: leave 239.1.2.4");
	check(rdma_join_multicast(t, (struct sockaddr *)&ga, NULL) && errno == EINVAL,
	      "mcast: join on a TCP id: EINVAL");
	check(rdma_join_multicast(u, (struct sockaddr *)&za, NULL) && errno == EINVAL,
	      "mcast: join 0.0.0.0: EINVAL");
	inet_pton(AF_INET6, "ff0e::1:2", &g6.sin6_addr);
	check(rdma_join_multicast(u, (struct sockaddr *)&g6, NULL) && errno == 524,
	      "mcast: join an IPv6 group on RoCE v2: ENOTSUPP (524) (%d)", errno);
	check(rdma_join_multicast(idle, (struct sockaddr *)&ga, NULL) && errno == EINVAL,
	      "mcast: join on an id without a device: EINVAL");
	rdma_destroy_id(idle);
	rdma_destroy_id(t);
	rdma_destroy_id(u);
	rdma_destroy_event_channel(ch);

	fd = open("/dev/infiniband/rdma_cm", O_RDWR);
	check(fd >= 0 && create_raw(fd, RDMA_PS_UDP, &id) == 0, "mcast raw: CREATE_ID (UDP)");
	{
		struct ucma_abi_bind_ip b = { .id = id };

		memcpy(&b.addr, &sa, sizeof(sa));
		check(UCMD(fd, b, UCMA_CMD_BIND_IP, 0) >= 0, "mcast raw: BIND_IP SRC");
	}
	{
		struct ucma_abi_join_mcast j = { .response = (uintptr_t)&mc, .uid = 7, .id = id,
						 .addr_size = sizeof(ga), .join_flags = 2 };

		memcpy(&j.addr, &ga, sizeof(ga));
		check(fails_with(UCMD(fd, j, UCMA_CMD_JOIN_MCAST, 4), EINVAL),
		      "mcast raw: JOIN_MCAST join_flags 2: EINVAL");
		j.join_flags = 0;
		j.addr_size = sizeof(ga) + 1;
		check(fails_with(UCMD(fd, j, UCMA_CMD_JOIN_MCAST, 4), EINVAL),
		      "mcast raw: JOIN_MCAST with the size of no family: EINVAL");
		j.addr_size = sizeof(ga);
		check(fails_with(UCMD(fd, j, UCMA_CMD_JOIN_MCAST, 2), ENOSPC),
		      "mcast raw: JOIN_MCAST with out 2: ENOSPC");
		check(UCMD(fd, j, UCMA_CMD_JOIN_MCAST, 4) >= 0, "mcast raw: JOIN_MCAST answers a number");
	}
	{
		uint32_t reported = ~0u;
		struct ucma_abi_destroy_id l = { .response = (uintptr_t)&reported, .id = mc + 100 };

		check(fails_with(UCMD(fd, l, UCMA_CMD_LEAVE_MCAST, 4), ENOENT),
		      "mcast raw: LEAVE_MCAST of an unknown group: ENOENT");
		l.id = mc;
		check(fails_with(UCMD(fd, l, UCMA_CMD_LEAVE_MCAST, 2), ENOSPC),
		      "mcast raw: LEAVE_MCAST with out 2: ENOSPC");
		/* The join's event is not taken: none reported. */
		usleep(200000);
		check(UCMD(fd, l, UCMA_CMD_LEAVE_MCAST, 4) >= 0 && reported == 0,
		      "mcast raw: LEAVE_MCAST reports 0 events taken (%u)", reported);
		check(fails_with(UCMD(fd, l, UCMA_CMD_LEAVE_MCAST, 4), ENOENT),
		      "mcast raw: LEAVE_MCAST again: ENOENT");
	}
	{
		struct ucma_abi_get_event g = { .response = (uintptr_t)&st };
		struct ucma_abi_event_resp ev;

		g.response = (uintptr_t)&ev;
		fcntl(fd, F_SETFL, O_NONBLOCK);
		check(fails_with(UCMD(fd, g, UCMA_CMD_GET_EVENT, sizeof(ev)), EAGAIN),
		      "mcast raw: the left group's event is gone");
	}
	close(fd);
}

static struct sockaddr_ib sib_of(const char *gid, uint64_t sid, uint64_t mask)
{
	struct sockaddr_ib a = { .sib_family = AF_IB, .sib_pkey = htons(0xffff) };

	inet_pton(AF_INET6, gid, &a.sib_addr);
	a.sib_sid = htobe64(sid);
	a.sib_sid_mask = htobe64(mask);
	return a;
}

#define PS_MASK 0xffffffffffff0000ULL
#define PS_TCP 0x0000000001060000ULL

static void ib_af(const char *sgid, const char *dgid, int slid, int dlid)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *a, *b, *r;
	struct sockaddr_ib sa, da, bad;
	struct sockaddr_in in4 = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(0x0a000001) };
	struct ibv_sa_path_rec *p;
	int st = 99, t;
	uint16_t port;

	check(ch != NULL, "rdma_create_event_channel");
	if (!ch)
		return;
	check(!rdma_create_id(ch, &a, NULL, RDMA_PS_TCP) && !rdma_create_id(ch, &b, NULL, RDMA_PS_UDP),
	      "rdma_create_id TCP, UDP");
	sa = sib_of(sgid, PS_TCP, PS_MASK);
	check(!rdma_bind_addr(a, (struct sockaddr *)&sa), "AF_IB: bind SGID, the TCP space, port 0");
	port = ntohs(rdma_get_src_port(a));
	check(port >= 32768 && port <= 60999, "AF_IB: the port is of the local range");
	printf("I AF_IB bound to device %s port %u\n", dev_of(a), a->port_num);
	check(a->verbs != NULL, "AF_IB: the bound id has the GID's device");
	check(rdma_get_local_addr(a)->sa_family == AF_IB &&
		      be64toh(((struct sockaddr_ib *)rdma_get_local_addr(a))->sib_sid) == (PS_TCP | port),
	      "AF_IB: the local address's service ID is the TCP space's with the port");
	check(rdma_bind_addr(b, (struct sockaddr *)&sa) && errno == EPROTONOSUPPORT,
	      "AF_IB: a UDP id bound to the TCP space's service ID: EPROTONOSUPPORT");
	rdma_destroy_id(b);
	check(!rdma_create_id(ch, &b, NULL, RDMA_PS_TCP), "rdma_create_id TCP");
	bad = sib_of("fe80::dead:beef", PS_TCP, PS_MASK);
	check(rdma_bind_addr(b, (struct sockaddr *)&bad) && errno == ENODEV,
	      "AF_IB: bind a GID no port has: ENODEV");
	rdma_destroy_id(b);

	da = sib_of(dgid, PS_TCP | 7471, ~0ULL);
	check(!rdma_resolve_addr(a, NULL, (struct sockaddr *)&da, 2000), "AF_IB: resolve_addr DGID");
	t = next_event(ch, &st, NULL);
	check(t == RDMA_CM_EVENT_ADDR_RESOLVED && st == 0, "AF_IB: RDMA_CM_EVENT_ADDR_RESOLVED");
	check(!rdma_resolve_route(a, 2000), "AF_IB: resolve_route");
	t = next_event(ch, &st, &r);
	printf("I AF_IB route event %d status %d\n", t, st);
	check(t == RDMA_CM_EVENT_ROUTE_RESOLVED && st == 0, "AF_IB: RDMA_CM_EVENT_ROUTE_RESOLVED");
	p = a->route.path_rec;
	check(a->route.num_paths == 1 && p != NULL, "AF_IB: one path");
	if (p) {
		printf("I AF_IB path slid %u dlid %u pkey 0x%x mtu %u sl %u hop %u\n", ntohs(p->slid),
		       ntohs(p->dlid), ntohs(p->pkey), p->mtu, p->sl, p->hop_limit);
		check(ntohs(p->slid) == slid && ntohs(p->dlid) == dlid,
		      "AF_IB: the SA's path has both ports' LIDs");
		check(!memcmp(&p->dgid, &da.sib_addr, 16) && !memcmp(&p->sgid, &sa.sib_addr, 16),
		      "AF_IB: the path's GIDs");
		check(ntohs(p->pkey) == 0xffff, "AF_IB: the path's P_Key");
	}
	check(rdma_resolve_addr(a, NULL, (struct sockaddr *)&in4, 2000) && errno == EINVAL,
	      "AF_IB: resolve_addr again (route resolved): EINVAL");
	rdma_destroy_id(a);

	/* A GID of the subnet that no port has: the SA has no path (a non-zero status). */
	check(!rdma_create_id(ch, &a, NULL, RDMA_PS_TCP), "rdma_create_id TCP");
	bad = sib_of("fe80::dead:beef", PS_TCP | 7471, ~0ULL);
	check(!rdma_resolve_addr(a, (struct sockaddr *)&sa, (struct sockaddr *)&bad, 2000),
	      "AF_IB: resolve_addr to a GID nobody has");
	t = next_event(ch, &st, NULL);
	check(t == RDMA_CM_EVENT_ADDR_RESOLVED && st == 0, "AF_IB: its RDMA_CM_EVENT_ADDR_RESOLVED");
	check(!rdma_resolve_route(a, 2000), "AF_IB: resolve_route to it");
	t = next_event(ch, &st, NULL);
	printf("I AF_IB route to nobody: event %d status %d\n", t, st);
	check(t == RDMA_CM_EVENT_ROUTE_ERROR && st == -EINVAL,
	      "AF_IB: no path: RDMA_CM_EVENT_ROUTE_ERROR, -EINVAL");
	rdma_destroy_id(a);

	check(!rdma_create_id(ch, &a, NULL, RDMA_PS_TCP), "rdma_create_id TCP");
	bad = sib_of("fe81::1", PS_TCP | 7471, ~0ULL);
	check(rdma_resolve_addr(a, NULL, (struct sockaddr *)&bad, 2000) && errno == ENODEV,
	      "AF_IB: resolve_addr to another subnet's GID (no source): ENODEV");
	rdma_destroy_id(a);
	check(!rdma_create_id(ch, &a, NULL, RDMA_PS_TCP), "rdma_create_id TCP");
	check(!rdma_bind_addr(a, (struct sockaddr *)&sa), "AF_IB: bind SGID");
	check(rdma_resolve_addr(a, NULL, (struct sockaddr *)&in4, 2000) && errno == EINVAL,
	      "AF_IB: an IPv4 destination for an AF_IB source: EINVAL");
	rdma_destroy_id(a);
	rdma_destroy_event_channel(ch);
}

#define PS_UDP 0x0000000001110000ULL
#define MC_MSGS 4
#define MC_LEN 64

/* A UD id bound to GID with a QP (rdma_create_qp) on a PD and CQ of its device. */
struct mc_end {
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	char buf[(MC_MSGS + 1) * (40 + MC_LEN)];
};

static int mc_end_up(struct rdma_event_channel *ch, struct mc_end *e, const char *gid)
{
	struct sockaddr_ib a = sib_of(gid, PS_UDP, PS_MASK);
	struct ibv_qp_init_attr qa = { .qp_type = IBV_QPT_UD,
				       .cap = { .max_send_wr = MC_MSGS + 1, .max_recv_wr = MC_MSGS + 1,
						.max_send_sge = 1, .max_recv_sge = 1 } };

	if (rdma_create_id(ch, &e->id, NULL, RDMA_PS_UDP) ||
	    rdma_bind_addr(e->id, (struct sockaddr *)&a))
		return -1;
	e->pd = ibv_alloc_pd(e->id->verbs);
	e->cq = e->pd ? ibv_create_cq(e->id->verbs, 2 * MC_MSGS + 2, NULL, NULL, 0) : NULL;
	e->mr = e->cq ? ibv_reg_mr(e->pd, e->buf, sizeof(e->buf), IBV_ACCESS_LOCAL_WRITE) : NULL;
	if (!e->mr)
		return -1;
	qa.send_cq = qa.recv_cq = e->cq;
	return rdma_create_qp(e->id, e->pd, &qa);
}

static void mc_end_down(struct mc_end *e)
{
	if (e->id && e->id->qp)
		rdma_destroy_qp(e->id);
	if (e->mr)
		ibv_dereg_mr(e->mr);
	if (e->cq)
		ibv_destroy_cq(e->cq);
	if (e->pd)
		ibv_dealloc_pd(e->pd);
	if (e->id)
		rdma_destroy_id(e->id);
}

/* Waits up to tries x 10 ms for n completions of cq into wc: how many came. */
static int mc_poll(struct ibv_cq *cq, struct ibv_wc *wc, int n, int tries)
{
	int got = 0, i;

	for (i = 0; i < tries && got < n; i++) {
		int r = ibv_poll_cq(cq, n - got, wc + got);

		if (r < 0)
			return got;
		got += r;
		if (got < n)
			usleep(10000);
	}
	return got;
}

/* Sends MC_LEN bytes of c from e's slot `slot` to the group of ud through ah. */
static int mc_send(struct mc_end *e, struct ibv_ah *ah, struct rdma_ud_param *ud, int slot, int c)
{
	char *m = e->buf + slot * MC_LEN;
	struct ibv_sge sge = { .addr = (uintptr_t)m, .length = MC_LEN, .lkey = e->mr->lkey };
	struct ibv_send_wr wr = { .wr_id = slot, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED },
			   *badw;

	memset(m, c, MC_LEN);
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = ud->qp_num;
	wr.wr.ud.remote_qkey = ud->qkey;
	return ibv_post_send(e->id->qp, &wr, &badw);
}

static void ib_mcast(const char *sgid, const char *dgid, int dlid)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct mc_end r = { 0 }, s = { 0 };
	struct sockaddr_ib any = sib_of("::", 0, 0), grp, bad = sib_of("fe80::1", 0, 0);
	struct rdma_ud_param ud;
	struct ibv_wc wc[MC_MSGS];
	struct ibv_ah *ah = NULL;
	uint8_t mgid[16];
	uint16_t mlid = 0;
	int st = 99, t, i;

	check(ch && !mc_end_up(ch, &r, sgid) && !mc_end_up(ch, &s, dgid),
	      "IB mcast: a UD id with a QP on each port");
	if (!r.mr || !s.mr || !r.id->qp || !s.id->qp)
		goto out;
	for (i = 0; i <= MC_MSGS; i++) {
		struct ibv_sge sge = { .addr = (uintptr_t)r.buf + i * (40 + MC_LEN),
				       .length = 40 + MC_LEN, .lkey = r.mr->lkey };
		struct ibv_recv_wr wr = { .wr_id = i, .sg_list = &sge, .num_sge = 1 }, *badw;

		check(!ibv_post_recv(r.id->qp, &wr, &badw), "IB mcast: post a receive");
	}
	/* The unspecified group: the SA creates one. */
	check(!rdma_join_multicast(r.id, (struct sockaddr *)&any, NULL),
	      "IB mcast: join the unspecified AF_IB address");
	t = next_event_ud(ch, &st, NULL, &ud);
	printf("I IB mcast join: event %d status %d mlid 0x%x qpn 0x%x qkey 0x%x\n", t, st,
	       ud.ah_attr.dlid, ud.qp_num, ud.qkey);
	check(t == RDMA_CM_EVENT_MULTICAST_JOIN && st == 0, "IB mcast: MULTICAST_JOIN, status 0");
	check(ud.qp_num == 0xffffff && ud.qkey == RDMA_UDP_QKEY,
	      "IB mcast: QPN 0xffffff, Q_Key RDMA_UDP_QKEY");
	memcpy(mgid, ud.ah_attr.grh.dgid.raw, 16);
	mlid = ud.ah_attr.dlid;
	check(mlid >= 0xc000 && mlid < 0xffff, "IB mcast: the AV's DLID is a multicast LID");
	check(ud.ah_attr.is_global && mgid[0] == 0xff && (mgid[1] & 0xf0) == 0x10 &&
		      mgid[2] == 0xa0 && mgid[3] == 0x1b,
	      "IB mcast: a GRH to an SA-assigned MGID (ff1x:a01b::)");
	check(ud.ah_attr.port_num == r.id->port_num, "IB mcast: the AV's port is the id's");
	/* The other port joins that MGID. */
	grp = sib_of("::", 0, 0);
	memcpy(&grp.sib_addr, mgid, 16);
	check(!rdma_join_multicast(s.id, (struct sockaddr *)&grp, NULL),
	      "IB mcast: the other port joins the MGID");
	t = next_event_ud(ch, &st, NULL, &ud);
	check(t == RDMA_CM_EVENT_MULTICAST_JOIN && st == 0 && ud.ah_attr.dlid == mlid &&
		      !memcmp(ud.ah_attr.grh.dgid.raw, mgid, 16),
	      "IB mcast: its MULTICAST_JOIN has the group's MLID and MGID");
	ah = ibv_create_ah(s.pd, &ud.ah_attr);
	check(ah != NULL, "IB mcast: an AH of the event's AV");
	/*
	 * The SM programs the switch's multicast table after its answer (opensm in its next
	 * sweep; mckey sleeps 3 s for it): a probe goes again until one arrives.
	 */
	for (i = 0, t = 0; ah && i < 100 && t == 0; i++) {
		t = mc_send(&s, ah, &ud, MC_MSGS, 'z') ? -1 : mc_poll(r.cq, wc, 1, 10);
		mc_poll(s.cq, wc + 1, 1, 500);
	}
	printf("I IB mcast: the group's route after %d probes\n", i);
	check(t == 1 && wc[0].status == IBV_WC_SUCCESS, "IB mcast: a probe reaches the group");
	for (i = 0; ah && i < MC_MSGS; i++)
		check(!mc_send(&s, ah, &ud, i, 'a' + i), "IB mcast: send to the group");
	check(mc_poll(s.cq, wc, MC_MSGS, 500) == MC_MSGS && wc[0].status == IBV_WC_SUCCESS,
	      "IB mcast: the sends complete");
	t = mc_poll(r.cq, wc, MC_MSGS, 500);
	printf("I IB mcast: %d of %d messages received\n", t, MC_MSGS);
	check(t == MC_MSGS, "IB mcast: the group's messages reach the joined QP");
	for (i = 0; i < t; i++) {
		char *g = r.buf + wc[i].wr_id * (40 + MC_LEN);
		char want[MC_LEN];

		/* In the order sent. */
		memset(want, 'a' + i, MC_LEN);
		check(wc[i].status == IBV_WC_SUCCESS && wc[i].byte_len == 40 + MC_LEN &&
			      (wc[i].wc_flags & IBV_WC_GRH) && !memcmp(g + 24, mgid, 16) &&
			      !memcmp(g + 40, want, MC_LEN),
		      "IB mcast: message %d: a GRH to the MGID, the bytes", i);
		check(wc[i].src_qp == s.id->qp->qp_num && wc[i].slid == dlid,
		      "IB mcast: message %d from the sender's QPN and LID", i);
	}
	/* A GID that is not multicast: the SA refuses the join. */
	check(!rdma_join_multicast(r.id, (struct sockaddr *)&bad, NULL),
	      "IB mcast: join fe80::1 (not multicast)");
	t = next_event_ud(ch, &st, NULL, &ud);
	printf("I IB mcast bad join: event %d status %d\n", t, st);
	check(t == RDMA_CM_EVENT_MULTICAST_ERROR && st == -EINVAL,
	      "IB mcast: MULTICAST_ERROR, -EINVAL");
	rdma_leave_multicast(r.id, (struct sockaddr *)&bad);
	check(!rdma_leave_multicast(s.id, (struct sockaddr *)&grp), "IB mcast: the sender leaves");
	check(!rdma_leave_multicast(r.id, (struct sockaddr *)&any), "IB mcast: the receiver leaves");
	if (ah)
		ibv_destroy_ah(ah);
out:
	mc_end_down(&s);
	mc_end_down(&r);
	if (ch)
		rdma_destroy_event_channel(ch);
}

/* SS from IPv4 or IPv6 text and a port; its length. */
static socklen_t ip_of(const char *ip, uint16_t port, struct sockaddr_storage *ss)
{
	struct sockaddr_in *a = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *b = (struct sockaddr_in6 *)ss;

	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET, ip, &a->sin_addr) == 1) {
		a->sin_family = AF_INET;
		a->sin_port = htons(port);
		return sizeof(*a);
	}
	b->sin6_family = AF_INET6;
	b->sin6_port = htons(port);
	inet_pton(AF_INET6, ip, &b->sin6_addr);
	return sizeof(*b);
}

/* Whether ID's port has GID at index 0. */
static int id_has_gid(struct rdma_cm_id *id, const uint8_t gid[16])
{
	union ibv_gid g;

	return id->verbs && !ibv_query_gid(id->verbs, id->port_num, 0, &g) && !memcmp(g.raw, gid, 16);
}

/* ib_ip()'s resolution from A to B: the id on A's port (GA), the SA's path from LIDA to LIDB. */
static void ib_ip_cross(struct rdma_event_channel *ch, const char *a, const char *b,
			const uint8_t ga[16], const uint8_t gb[16], int lida, int lidb)
{
	struct sockaddr_storage sa, sb;
	struct ibv_sa_path_rec *p;
	struct rdma_cm_id *y;
	int st = 99, t;

	ip_of(a, 0, &sa);
	ip_of(b, 7472, &sb);
	check(!rdma_create_id(ch, &y, NULL, RDMA_PS_TCP), "rdma_create_id TCP");
	check(!rdma_resolve_addr(y, (struct sockaddr *)&sa, (struct sockaddr *)&sb, 2000),
	      "IPoIB %s: resolve_addr B from A", a);
	t = next_event(ch, &st, NULL);
	check(t == RDMA_CM_EVENT_ADDR_RESOLVED && st == 0,
	      "IPoIB %s: RDMA_CM_EVENT_ADDR_RESOLVED from A (the neighbour over IPoIB) (%d %d)", a, t,
	      st);
	check(id_has_gid(y, ga), "IPoIB %s: the id from A is on the port with GIDA", a);
	check(!rdma_resolve_route(y, 2000), "IPoIB %s: resolve_route from A", a);
	t = next_event(ch, &st, NULL);
	check(t == RDMA_CM_EVENT_ROUTE_RESOLVED && st == 0,
	      "IPoIB %s: RDMA_CM_EVENT_ROUTE_RESOLVED from A (%d %d)", a, t, st);
	p = y->route.path_rec;
	check(y->route.num_paths == 1 && p != NULL, "IPoIB %s: one path from A", a);
	if (p) {
		printf("I IPoIB %s path from A: slid %u dlid %u pkey 0x%x mtu %u sl %u\n", b,
		       ntohs(p->slid), ntohs(p->dlid), ntohs(p->pkey), p->mtu, p->sl);
		check(ntohs(p->slid) == lida && ntohs(p->dlid) == lidb,
		      "IPoIB %s: the SA's path from A goes from LIDA to LIDB", a);
		check(!memcmp(&p->sgid, ga, 16) && !memcmp(&p->dgid, gb, 16),
		      "IPoIB %s: the path's GIDs are GIDA and GIDB", a);
	}
	rdma_destroy_id(y);
}

/* One family of ib_ip(): A and B of the interfaces of the ports with GIDA and GIDB; `cross`:
 * from A to B too. */
static void ib_ip_one(const char *a, const char *b, const char *gida, const char *gidb, int lida,
		      int lidb, int cross)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct sockaddr_storage sa, sb;
	struct ibv_sa_path_rec *p;
	struct rdma_cm_id *x, *y;
	uint8_t ga[16], gb[16];
	int st = 99, t, pass;

	check(ch != NULL, "rdma_create_event_channel");
	if (!ch)
		return;
	inet_pton(AF_INET6, gida, ga);
	inet_pton(AF_INET6, gidb, gb);
	ip_of(a, 0, &sa);
	check(!rdma_create_id(ch, &x, NULL, RDMA_PS_TCP), "rdma_create_id TCP");
	check(!rdma_bind_addr(x, (struct sockaddr *)&sa), "IPoIB %s: bind A", a);
	printf("I IPoIB %s bound to device %s port %u pkey 0x%x\n", a, dev_of(x), x->port_num,
	       ntohs(x->route.addr.addr.ibaddr.pkey));
	check(id_has_gid(x, ga), "IPoIB %s: the bound id is on the port with GIDA", a);
	check(ntohs(x->route.addr.addr.ibaddr.pkey) == 0xffff,
	      "IPoIB %s: the P_Key of the interface's broadcast address", a);
	rdma_destroy_id(x);
	check(!rdma_create_id(ch, &x, NULL, RDMA_PS_IPOIB), "rdma_create_id IPOIB");
	check(!rdma_bind_addr(x, (struct sockaddr *)&sa) && id_has_gid(x, ga),
	      "IPoIB %s: an RDMA_PS_IPOIB id binds A, on the port with GIDA", a);
	rdma_destroy_id(x);

	/* From no source, then from B itself: a destination on this host is the interface that
	 * owns it (upstream rdma_set_src_addr_rcu()), so the id takes B's port. */
	for (pass = 0; pass < 2; pass++) {
		const char *how = pass ? "from B" : "from no source";

		ip_of(b, 0, &sb);
		check(!rdma_create_id(ch, &y, NULL, RDMA_PS_TCP), "rdma_create_id TCP");
		ip_of(b, 7472, &sa);
		check(!rdma_resolve_addr(y, pass ? (struct sockaddr *)&sb : NULL, (struct sockaddr *)&sa,
					 2000),
		      "IPoIB %s: resolve_addr B %s", a, how);
		t = next_event(ch, &st, NULL);
		check(t == RDMA_CM_EVENT_ADDR_RESOLVED && st == 0,
		      "IPoIB %s: RDMA_CM_EVENT_ADDR_RESOLVED %s (%d %d)", a, how, t, st);
		check(id_has_gid(y, gb), "IPoIB %s: the id is on the port with GIDB (%s)", a, how);
		check(!rdma_resolve_route(y, 2000), "IPoIB %s: resolve_route %s", a, how);
		t = next_event(ch, &st, NULL);
		check(t == RDMA_CM_EVENT_ROUTE_RESOLVED && st == 0,
		      "IPoIB %s: RDMA_CM_EVENT_ROUTE_RESOLVED %s (%d %d)", a, how, t, st);
		p = y->route.path_rec;
		check(y->route.num_paths == 1 && p != NULL, "IPoIB %s: one path (%s)", a, how);
		if (p) {
			printf("I IPoIB %s path %s: slid %u dlid %u pkey 0x%x mtu %u sl %u\n", b, how,
			       ntohs(p->slid), ntohs(p->dlid), ntohs(p->pkey), p->mtu, p->sl);
			check(ntohs(p->slid) == lidb && ntohs(p->dlid) == lidb,
			      "IPoIB %s: the SA's path has B's port's LID both ways (%s)", a, how);
			check(!memcmp(&p->sgid, gb, 16) && !memcmp(&p->dgid, gb, 16),
			      "IPoIB %s: the path's GIDs are GIDB (%s)", a, how);
			check(ntohs(p->pkey) == 0xffff, "IPoIB %s: the path's P_Key (%s)", a, how);
		}
		rdma_destroy_id(y);
	}
	if (cross)
		ib_ip_cross(ch, a, b, ga, gb, lida, lidb);
	rdma_destroy_event_channel(ch);
}

static void ib_ip(char **v)
{
	struct rdma_cm_id *x;
	struct sockaddr_in sa;
	struct rdma_event_channel *ch;

	/* IPv6 from A to B would need neighbour discovery over IPoIB (its multicast groups). */
	ib_ip_one(v[0], v[1], v[4], v[5], atoi(v[6]), atoi(v[7]), 1);
	ib_ip_one(v[2], v[3], v[4], v[5], atoi(v[6]), atoi(v[7]), 0);
	ch = rdma_create_event_channel();
	check(ch && !rdma_create_id(ch, &x, NULL, RDMA_PS_TCP), "rdma_create_id TCP");
	if (!ch)
		return;
	sa = addr_of(v[8], 0);
	check(rdma_bind_addr(x, (struct sockaddr *)&sa) && errno == EADDRNOTAVAIL,
	      "IPoIB: bind an address of no interface: EADDRNOTAVAIL");
	rdma_destroy_id(x);
	check(!rdma_create_id(ch, &x, NULL, RDMA_PS_TCP), "rdma_create_id TCP");
	sa = addr_of(v[9], 7472);
	check(rdma_resolve_addr(x, NULL, (struct sockaddr *)&sa, 2000) && errno == ENETUNREACH,
	      "IPoIB: resolve_addr to an unroutable address: ENETUNREACH");
	rdma_destroy_id(x);
	rdma_destroy_event_channel(ch);
}

/* -L, -U: a listener for the REQs or the SIDR REQ umad_test sends by hand (see the top). */
static void raw_peer(const char *sgid, int port, int ud)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_conn_param p = { .qp_num = 0x1234 };
	struct rdma_cm_id *l = NULL, *r = NULL, *e = NULL;
	struct sockaddr_ib a = sib_of(sgid, (ud ? PS_UDP : PS_TCP) | port, ~0ULL);
	struct pollfd pfd;
	int st = 99, t;

	check(ch && !rdma_create_id(ch, &l, NULL, ud ? RDMA_PS_UDP : RDMA_PS_TCP) &&
		      !rdma_bind_addr(l, (struct sockaddr *)&a) && !rdma_listen(l, 4),
	      "AF_IB %s listener on %s port %d", ud ? "UD" : "RC", sgid, port);
	printf("I listening\n");
	fflush(stdout);
	if (!ud && l) {
		t = next_event(ch, &st, &r);
		check(t == RDMA_CM_EVENT_CONNECT_REQUEST && st == 0 && r != l,
		      "the first request's CONNECT_REQUEST (event %d status %d)", t, st);
		if (t != RDMA_CM_EVENT_CONNECT_REQUEST)
			goto out;
		check(!rdma_accept(r, &p) && !rdma_destroy_id(r), "accept, then destroy the id");
	}
	t = l ? next_event(ch, &st, &r) : -1;
	check(t == RDMA_CM_EVENT_CONNECT_REQUEST && st == 0 && r != l,
	      "the (last) request's CONNECT_REQUEST (event %d status %d)", t, st);
	if (t != RDMA_CM_EVENT_CONNECT_REQUEST)
		goto out;
	if (ud) {
		pfd.fd = ch->fd;
		pfd.events = POLLIN;
		check(poll(&pfd, 1, 300) == 0, "no other event within 300 ms (the duplicate makes none)");
		check(!rdma_accept(r, &p), "accept: the SIDR REP");
	} else {
		check(!rdma_accept(r, &p), "accept: the REP");
		printf("I accepted\n");
		fflush(stdout);
		t = next_event(ch, &st, &e);
		printf("I after the REP: event %d status %d\n", t, st);
		check(t == RDMA_CM_EVENT_UNREACHABLE && st == -ETIMEDOUT && e == r,
		      "the REP unanswered: RDMA_CM_EVENT_UNREACHABLE, -ETIMEDOUT on the request's id");
	}
	rdma_destroy_id(r);
out:
	if (l)
		rdma_destroy_id(l);
	if (ch)
		rdma_destroy_event_channel(ch);
}

/* -N: a membership the port's client reregistration fails (see the top). */
static void mcast_reset(const char *sgid)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct sockaddr_ib a = sib_of(sgid, PS_UDP, PS_MASK), any = sib_of("::", 0, 0);
	struct rdma_cm_id *id = NULL;
	struct rdma_ud_param ud;
	int st = 99, t;

	check(ch && !rdma_create_id(ch, &id, NULL, RDMA_PS_UDP) &&
		      !rdma_bind_addr(id, (struct sockaddr *)&a),
	      "a UD id bound to %s", sgid);
	check(id && !rdma_join_multicast(id, (struct sockaddr *)&any, NULL),
	      "join the unspecified AF_IB address");
	t = id ? next_event_ud(ch, &st, NULL, &ud) : -1;
	check(t == RDMA_CM_EVENT_MULTICAST_JOIN && st == 0, "MULTICAST_JOIN (event %d status %d)", t, st);
	if (t != RDMA_CM_EVENT_MULTICAST_JOIN)
		goto out;
	printf("I joined\n");
	fflush(stdout);
	t = next_event_ud(ch, &st, NULL, &ud);
	printf("I after the reregistration: event %d status %d\n", t, st);
	check(t == RDMA_CM_EVENT_MULTICAST_ERROR && st == -ENETRESET,
	      "the client reregistration: MULTICAST_ERROR, -ENETRESET");
	check(!rdma_leave_multicast(id, (struct sockaddr *)&any), "leave");
	check(!rdma_join_multicast(id, (struct sockaddr *)&any, NULL), "join again");
	t = next_event_ud(ch, &st, NULL, &ud);
	check(t == RDMA_CM_EVENT_MULTICAST_JOIN && st == 0,
	      "MULTICAST_JOIN again from the SA (event %d status %d)", t, st);
	check(!rdma_leave_multicast(id, (struct sockaddr *)&any), "leave again");
out:
	if (id)
		rdma_destroy_id(id);
	if (ch)
		rdma_destroy_event_channel(ch);
}

int main(int argc, char **argv)
{
	int no_cm = 0;

	if (argc == 4 && (!strcmp(argv[1], "-L") || !strcmp(argv[1], "-U"))) {
		raw_peer(argv[2], atoi(argv[3]), argv[1][1] == 'U');
		printf("I %d passed, %d failed\n", passes, failures);
		return failures ? 1 : 0;
	}
	if (argc == 3 && !strcmp(argv[1], "-N")) {
		mcast_reset(argv[2]);
		printf("I %d passed, %d failed\n", passes, failures);
		return failures ? 1 : 0;
	}

	if (argc == 3 && !strcmp(argv[1], "-r")) {
		removal(argv[2]);
		printf("I %d passed, %d failed\n", passes, failures);
		return failures ? 1 : 0;
	}

	if (argc == 6 && !strcmp(argv[1], "-i")) {
		ib_af(argv[2], argv[3], atoi(argv[4]), atoi(argv[5]));
		ib_mcast(argv[2], argv[3], atoi(argv[5]));
		printf("I %d passed, %d failed\n", passes, failures);
		return failures ? 1 : 0;
	}

	if (argc == 12 && !strcmp(argv[1], "-p")) {
		ib_ip(argv + 2);
		printf("I %d passed, %d failed\n", passes, failures);
		return failures ? 1 : 0;
	}

	if (argc > 1 && !strcmp(argv[1], "-c")) {
		no_cm = 1;
		argv++;
		argc--;
	}
	if (argc != 5) {
		fprintf(stderr, "usage: ucma_test [-c] SRC DST SILENT UNROUTABLE\n");
		return 2;
	}
	raw_abi();
	cm(argv[1], argv[2], argv[3], argv[4], no_cm);
	mcast(argv[1]);
	printf("I %d passed, %d failed\n", passes, failures);
	return failures ? 1 : 0;
}
