// SPDX-License-Identifier: GPL-2.0
/*
 * umad's ABI (upstream drivers/infiniband/core/user_mad.c, ABI version 5) with raw
 * ioctl/read/write/poll on /dev/infiniband/umadN, no library: the registration rules and
 * errnos, write()'s length rules, read() and poll() on an empty queue, a send that leaves
 * the node coming back with status ETIMEDOUT, and (-s) a local directed-route SMP, a
 * NodeInfo Get with hop count 0, answered through the driver's process_mad.
 *
 * usage: umad_test -u N [-s] [-g NODE_GUID_HEX]
 *        umad_test -u N -k: registers an agent, sends a MAD that waits 60 s for a response,
 *        then blocks in read(): the device's removal meanwhile must end it with EIO, and
 *        poll() then reports POLLERR (upstream ib_umad_kill_port()).
 *        umad_test -u N -f ITER [-r SEED]: random registrations, writes (any length, header
 *        and MAD bytes, timeouts up to 2^32-1 ms), reads and unregistrations; every call must
 *        succeed or fail with an errno umad gives; the file is closed with sends in flight.
 *        umad_test -u N -m DEV: issmN sets IsSM in DEV's port 1 cap_mask while open, one
 *        opener at a time (EAGAIN with O_NONBLOCK), cleared at close.
 *        umad_test -u N -a SM_LID: an SA agent with kernel RMPP asks the SA at SM_LID for every
 *        NodeRecord (GetTable); the reassembled answer, longer than one MAD, read into a
 *        buffer for one MAD gives ENOSPC with its header and first segment (the header's
 *        length the whole message's) and stays queued; a buffer of that length reads it whole
 *        (upstream copy_recv_mad()).
 *        umad_test -u N -b: more bad input to write() (see bad_input()).
 *        umad_test -u N -F MAX: umad's calls under the kernel's fault injection (see faults()).
 *        umad_test -u N -D DLID: a DREQ of a connection nobody has, from a CM-class agent to
 *        QP1 of LID DLID (the suite checks the CM counters: upstream cm_issue_drep() answers
 *        it with a DREP).
 *        umad_test -u N -C WHAT ARGS...: raw CM messages from a CM-class agent (registered for
 *        Get only: the kernel's CM keeps the port's Send MADs) to QP1 of another port, for the
 *        suite to count with the CM counters (see cm_raw()):
 *          req DLID SLID DGID SGID SID DEV: a REQ to service ID SID at LID DLID (its REP's
 *            wait 2^(15-8) ms); once DEV (the passive port's device) counts its REP sent,
 *            another REQ (another comm ID, the REP's wait 2^(17-8) ms) twice with the same
 *            comm ID and TID, and once DEV counts that one's REP, the same REQ a third time;
 *          sidr DLID SID: a SIDR REQ to SID, twice with the same request ID and TID;
 *          lap DLID: a LAP and an APR of no connection, a LAP cut short after its
 *            communication IDs, a CM MAD of attribute 0x001B.
 *        umad_test -u N -C rereg: a local PortInfo Get, then the same PortInfo Set back with
 *        the ClientReregister bit (PortState NOP, PortPhysicalState no change): the port's
 *        clients get IB_EVENT_CLIENT_REREGISTER.
 */
#include "rdmars_test.h"

#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <rdma/ib_user_mad.h>

#define MAD 256

struct msg {
	struct ib_user_mad_hdr hdr;
	uint8_t mad[MAD];
};

static int open_umad(int n, int flags)
{
	char path[64];

	snprintf(path, sizeof(path), "/dev/infiniband/umad%d", n);
	return open(path, O_RDWR | flags);
}

static unsigned long cap_mask(const char *dev)
{
	char path[128], buf[64] = "";
	FILE *f;

	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/ports/1/cap_mask", dev);
	f = fopen(path, "r");
	if (!f)
		return 0;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = 0;
	fclose(f);
	return strtoul(buf, NULL, 16);
}

static int issm_test(int n, const char *dev)
{
	char path[64];
	int fd, fd2;

	snprintf(path, sizeof(path), "/dev/infiniband/issm%d", n);
	check(!(cap_mask(dev) & 2), "%s cap_mask 0x%lx: IsSM clear before", dev, cap_mask(dev));
	fd = open(path, O_RDWR | O_NONBLOCK);
	check(fd >= 0, "open %s", path);
	check(cap_mask(dev) & 2, "%s cap_mask 0x%lx: IsSM set while open", dev, cap_mask(dev));
	errno = 0;
	fd2 = open(path, O_RDWR | O_NONBLOCK);
	check(fd2 < 0 && errno == EAGAIN, "a second opener with O_NONBLOCK: EAGAIN");
	check(close(fd) == 0, "close");
	check(!(cap_mask(dev) & 2), "%s cap_mask 0x%lx: IsSM clear after close", dev, cap_mask(dev));
	fd = open(path, O_RDWR | O_NONBLOCK);
	check(fd >= 0, "open again after the close");
	close(fd);
	printf("umad_test: %d checks passed, %d failed\n", passes, failures);
	return failures ? 1 : 0;
}

static uint64_t rnd_state = 88172645463325252ull;

static uint32_t rnd(void)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return (uint32_t)rnd_state;
}

static int allowed(int e)
{
	return e == EINVAL || e == EIO || e == ENOMEM || e == EAGAIN || e == EPROTONOSUPPORT ||
	       e == EOPNOTSUPP || e == ENOTTY;
}

static int fuzz(int n, int iters)
{
	static const uint8_t classes[] = { 0x01, 0x81, 0x03, 0x04, 0x06, 0x07, 0x30, 0x50, 0x00, 0x12 };
	uint8_t buf[sizeof(struct msg) + 64];
	int fd, i, bad = 0, oks = 0;
	uint32_t id;

	fd = open_umad(n, O_NONBLOCK);
	check(fd >= 0, "open umad%d for the random calls", n);
	if (fd < 0)
		return 1;
	for (i = 0; i < iters; i++) {
		int op = rnd() % 8, ret;
		size_t len;

		errno = 0;
		if (op == 0) {
			struct ib_user_mad_reg_req2 r;

			memset(&r, 0, sizeof(r));
			r.qpn = rnd() % 3;
			r.mgmt_class = classes[rnd() % sizeof(classes)];
			r.mgmt_class_version = rnd() % 4;
			r.flags = rnd() % 4 == 0 ? rnd() % 4 : 0;
			r.oui = rnd() % 3 == 0 ? rnd() : 0;
			r.rmpp_version = rnd() % 3;
			r.method_mask[0] = rnd();
			ret = ioctl(fd, IB_USER_MAD_REGISTER_AGENT2, &r);
		} else if (op == 1) {
			id = rnd() % 40;
			ret = ioctl(fd, IB_USER_MAD_UNREGISTER_AGENT, &id);
		} else if (op == 2) {
			ret = read(fd, buf, rnd() % sizeof(buf));
		} else if (op == 3) {
			ret = ioctl(fd, 0x1b00 | (rnd() & 0xff), 0);
		} else {
			struct msg *m = (struct msg *)buf;

			for (len = 0; len < sizeof(buf); len++)
				buf[len] = rnd();
			m->hdr.id = rnd() % 6;
			m->hdr.timeout_ms = rnd() % 2 ? rnd() % 50 : rnd();
			m->hdr.retries = rnd() % 3;
			m->hdr.grh_present = rnd() % 4 == 0;
			m->mad[1] = classes[rnd() % sizeof(classes)];
			m->mad[7] = rnd() % 3 == 0 ? rnd() : rnd() % 2;
			if (rnd() % 2) {
				m->mad[32] = m->mad[33] = m->mad[34] = m->mad[35] = 0xff;
			}
			len = rnd() % 3 ? sizeof(struct msg) : rnd() % sizeof(buf);
			ret = write(fd, buf, len);
		}
		if (ret < 0 && !allowed(errno)) {
			printf("    call %d (op %d): errno %d\n", i, op, errno);
			bad++;
		} else if (ret >= 0) {
			oks++;
		}
	}
	check(bad == 0, "%d random calls: each succeeded (%d) or failed with an errno of umad's", iters, oks);
	check(close(fd) == 0, "close with whatever is in flight");
	printf("umad_test: %d checks passed, %d failed\n", passes, failures);
	return failures ? 1 : 0;
}

static int reg2(int fd, uint32_t qpn, uint8_t class, uint8_t ver, uint32_t flags, uint32_t oui,
		uint8_t rmpp, uint32_t *id)
{
	struct ib_user_mad_reg_req2 r;
	int ret;

	memset(&r, 0, sizeof(r));
	r.qpn = qpn;
	r.mgmt_class = class;
	r.mgmt_class_version = ver;
	r.flags = flags;
	r.oui = oui;
	r.rmpp_version = rmpp;
	r.method_mask[0] = 1 << 1; /* Get */
	ret = ioctl(fd, IB_USER_MAD_REGISTER_AGENT2, &r);
	if (id)
		*id = r.id;
	if (ret && flags)
		*id = r.flags;
	return ret;
}

static void smp_nodeinfo(struct msg *m, uint32_t id)
{
	memset(m, 0, sizeof(*m));
	m->hdr.id = id;
	m->hdr.qpn = htonl(0);
	m->hdr.lid = htons(0xffff);
	m->hdr.timeout_ms = 1000;
	m->mad[0] = 1;		/* base version */
	m->mad[1] = 0x81;	/* SubnMgmt directed route */
	m->mad[2] = 1;
	m->mad[3] = 1;		/* Get */
	m->mad[15] = 0x42;	/* TID */
	m->mad[17] = 0x11;	/* NodeInfo */
	m->mad[32] = m->mad[33] = 0xff; /* DrSLID */
	m->mad[34] = m->mad[35] = 0xff; /* DrDLID */
}

static int sa_test(int n, int sm_lid)
{
	struct msg m, r;
	uint8_t *whole;
	uint32_t id, len;
	ssize_t got;
	int fd;

	fd = open_umad(n, 0);
	check(fd >= 0 && reg2(fd, 1, 0x03, 2, 0, 0, 1, &id) == 0,
	      "open umad%d, SA agent with RMPP version 1", n);
	memset(&m, 0, sizeof(m));
	m.hdr.id = id;
	m.hdr.qpn = htonl(1);
	m.hdr.qkey = htonl(0x80010000);
	m.hdr.lid = htons(sm_lid);
	m.hdr.timeout_ms = 2000;
	m.hdr.retries = 3;
	m.mad[0] = 1;		/* base version */
	m.mad[1] = 0x03;	/* SubnAdm */
	m.mad[2] = 2;
	m.mad[3] = 0x12;	/* GetTable */
	m.mad[15] = 0x51;	/* TID */
	m.mad[17] = 0x11;	/* NodeRecord */
	check(write(fd, &m, sizeof(m)) == (ssize_t)sizeof(m), "GetTable(NodeRecord) to LID %d", sm_lid);
	errno = 0;
	got = read(fd, &r, sizeof(r));
	len = r.hdr.length;
	check(got < 0 && errno == ENOSPC, "read into one MAD's room: ENOSPC (got %zd, errno %d)", got, errno);
	check(len > sizeof(r), "the header's length is the whole message's (%u)", len);
	check(r.mad[3] == 0x92 && r.hdr.status == 0, "the first segment: GetTableResp (method 0x%x)",
	      r.mad[3]);
	whole = calloc(1, len);
	check(whole && read(fd, whole, len) == (ssize_t)len, "read with room for %u bytes: all of it", len);
	if (whole) {
		/* SA header: AttributeOffset in 8-byte words at 44. */
		uint32_t rec = 8u * ((whole[64 + 44] << 8) | whole[64 + 45]);

		check(rec && (len - 64 - 56) / rec >= 3, "at least 3 NodeRecords of %u bytes", rec);
		free(whole);
	}
	close(fd);
	printf("umad_test: %d checks passed, %d failed\n", passes, failures);
	return failures ? 1 : 0;
}

static int dreq_test(int n, int dlid)
{
	struct msg m;
	uint32_t id;
	int fd;

	fd = open_umad(n, 0);
	check(fd >= 0 && reg2(fd, 1, 0x07, 2, 0, 0, 0, &id) == 0, "open umad%d, a CM-class agent", n);
	memset(&m, 0, sizeof(m));
	m.hdr.id = id;
	m.hdr.qpn = htonl(1);
	m.hdr.qkey = htonl(0x80010000);
	m.hdr.lid = htons(dlid);
	m.mad[0] = 1;		/* base version */
	m.mad[1] = 0x07;	/* CM */
	m.mad[2] = 2;
	m.mad[3] = 0x03;	/* Send */
	m.mad[15] = 0x77;	/* TID */
	m.mad[17] = 0x15;	/* DREQ */
	/* LocalCommID, RemoteCommID (none of the peer's), RemoteQPN. */
	memcpy(m.mad + 24, "\x12\x34\x56\x78\x9a\xbc\xde\xf0\x00\x00\x11\x00", 12);
	check(write(fd, &m, sizeof(m)) == (ssize_t)sizeof(m), "DREQ to LID %d", dlid);
	/* The send leaves before the file closes (a send without a timeout reports nothing). */
	usleep(200000);
	close(fd);
	printf("umad_test: %d checks passed, %d failed\n", passes, failures);
	return failures ? 1 : 0;
}

/* A CM-class agent on umadN's QP1 (method Get only: the kernel's CM has Send). */
static int cm_agent(int n, uint32_t *id)
{
	int fd = open_umad(n, 0);

	check(fd >= 0 && reg2(fd, 1, 0x07, 2, 0, 0, 0, id) == 0, "open umad%d, a CM-class agent", n);
	return fd;
}

/* A CM Send of attribute `attr` from agent `id` to QP1 of LID dlid, TID `tid`. */
static void cm_hdr(struct msg *m, uint32_t id, int dlid, uint16_t attr, uint8_t tid)
{
	memset(m, 0, sizeof(*m));
	m->hdr.id = id;
	m->hdr.qpn = htonl(1);
	m->hdr.qkey = htonl(0x80010000);
	m->hdr.lid = htons(dlid);
	m->mad[0] = 1;		/* base version */
	m->mad[1] = 0x07;	/* CM */
	m->mad[2] = 2;
	m->mad[3] = 0x03;	/* Send */
	m->mad[15] = tid;
	m->mad[16] = attr >> 8;
	m->mad[17] = attr;
}

/*
 * Writes len bytes of m; again while umad still holds the same TID's earlier send (EINVAL,
 * upstream is_duplicate(): until its send completes), up to 2 s.
 */
static int write_again(int fd, const struct msg *m, size_t len)
{
	int i;

	for (i = 0; i < 200; i++) {
		if (write(fd, m, len) == (ssize_t)len)
			return 0;
		if (errno != EINVAL)
			return -1;
		usleep(10000);
	}
	return -1;
}

static unsigned long long cm_counter(const char *dev, const char *group, const char *name)
{
	char path[160], buf[32] = "";
	FILE *f;

	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/ports/1/cm_%s/%s", dev, group, name);
	f = fopen(path, "r");
	if (!f)
		return 0;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = 0;
	fclose(f);
	return strtoull(buf, NULL, 0);
}

static void put_be(uint8_t *p, uint64_t v, int n)
{
	while (n--) {
		p[n] = v;
		v >>= 8;
	}
}

/* Waits (10 s at most) until DEV's port 1 counter cm_GROUP/NAME reaches want: 1 if it did. */
static int wait_counter(const char *dev, const char *group, const char *name, unsigned long long want)
{
	int i;

	for (i = 0; i < 200 && cm_counter(dev, group, name) < want; i++)
		usleep(50000);
	return i < 200;
}

/*
 * A REQ (IBA 12.6.5) from agent id to QP1 of LID dlid for service ID args[4], with comm ID
 * `comm`, LocalCMResponseTimeout `timeout` (the REP waits 2^(timeout-8) ms), MaxCMRetries 2
 * and TID `tid`; its primary path from args[1]'s LID and sgid to dlid and dgid.
 */
static void req_fill(struct msg *m, uint32_t id, int dlid, char **args, const uint8_t *sgid,
		     const uint8_t *dgid, uint32_t comm, int timeout, uint8_t tid)
{
	cm_hdr(m, id, dlid, 0x0010, tid);
	put_be(m->mad + 24, comm, 4);				/* LocalCommID */
	put_be(m->mad + 32, strtoull(args[4], NULL, 0), 8);	/* ServiceID */
	put_be(m->mad + 40, 0x0002c90300005a5aull, 8);		/* LocalCAGUID */
	put_be(m->mad + 56, 0x000123, 3);			/* LocalQPN */
	m->mad[67] = 16 << 3;	/* RemoteCMResponseTimeout, RC, no flow control */
	put_be(m->mad + 68, 0x000777, 3);			/* StartingPSN */
	m->mad[71] = timeout << 3 | 7;	/* LocalCMResponseTimeout, RetryCount 7 */
	put_be(m->mad + 72, 0xffff, 2);				/* P_Key */
	m->mad[74] = 4 << 4 | 7;	/* PathMTU 2048, RNRRetryCount 7 */
	m->mad[75] = 2 << 4;		/* MaxCMRetries 2 */
	/* The primary path (data offset 52): this port's LID and GID are the local ones. */
	put_be(m->mad + 76, strtol(args[1], NULL, 0), 2);
	put_be(m->mad + 78, dlid, 2);
	memcpy(m->mad + 80, sgid, 16);
	memcpy(m->mad + 96, dgid, 16);
	m->mad[118] = 1 << 3;	/* SL 0, SubnetLocal */
	m->mad[119] = 14 << 3;	/* LocalACKTimeout */
}

/*
 * -C req|sidr|lap: raw CM messages (the CM's MAD data at byte 24, IBA 12.6). The local
 * communication and request IDs are far above any the kernel's CM gave (they count from 1),
 * so the peer's answers find no connection on this port.
 */
static int cm_raw(int n, const char *what, char **args, int nargs)
{
	struct msg m;
	uint32_t id;
	int fd, dlid;

	if (nargs < 1)
		return 2;
	dlid = strtol(args[0], NULL, 0);
	fd = cm_agent(n, &id);
	if (!strcmp(what, "req") && nargs == 6) {
		uint8_t dgid[16], sgid[16];
		unsigned long long rep0;

		check(inet_pton(AF_INET6, args[2], dgid) == 1 && inet_pton(AF_INET6, args[3], sgid) == 1,
		      "the GIDs %s %s", args[2], args[3]);
		rep0 = cm_counter(args[5], "tx_msgs", "rep");
		/* First a REQ whose id the listener's user destroys once accepted. */
		req_fill(&m, id, dlid, args, sgid, dgid, 0x5a5a0005, 15, 0x80);
		check(write_again(fd, &m, sizeof(m)) == 0, "REQ (comm ID 0x5a5a0005) to LID %d, service ID %s",
		      dlid, args[4]);
		check(wait_counter(args[5], "tx_msgs", "rep", rep0 + 1), "%s sent its REP", args[5]);
		req_fill(&m, id, dlid, args, sgid, dgid, 0x5a5a0001, 17, 0x81);
		check(write_again(fd, &m, sizeof(m)) == 0, "REQ (comm ID 0x5a5a0001)");
		check(write_again(fd, &m, sizeof(m)) == 0, "the same REQ again (same comm ID and TID)");
		/* The passive side's user accepted: its REP left. */
		check(wait_counter(args[5], "tx_msgs", "rep", rep0 + 2), "%s sent its REP", args[5]);
		check(write_again(fd, &m, sizeof(m)) == 0, "the same REQ a third time, the REP sent");
	} else if (!strcmp(what, "sidr") && nargs == 2) {
		cm_hdr(&m, id, dlid, 0x0017, 0x82);
		put_be(m.mad + 24, 0x5a5a0002, 4);		/* RequestID */
		put_be(m.mad + 28, 0xffff, 2);			/* P_Key */
		put_be(m.mad + 32, strtoull(args[1], NULL, 0), 8); /* ServiceID */
		check(write_again(fd, &m, sizeof(m)) == 0, "SIDR REQ to LID %d, service ID %s", dlid, args[1]);
		check(write_again(fd, &m, sizeof(m)) == 0, "the same SIDR REQ again (same request ID and TID)");
	} else if (!strcmp(what, "lap") && nargs == 1) {
		cm_hdr(&m, id, dlid, 0x0019, 0x83);
		put_be(m.mad + 24, 0x5a5a0003, 4);	/* LocalCommID */
		put_be(m.mad + 28, 0x5a5a0004, 4);	/* RemoteCommID: nobody's */
		put_be(m.mad + 36, 0x000123, 3);	/* RemoteQPN */
		check(write_again(fd, &m, sizeof(m)) == 0, "LAP of no connection to LID %d", dlid);
		cm_hdr(&m, id, dlid, 0x001a, 0x84);
		put_be(m.mad + 24, 0x5a5a0003, 4);
		put_be(m.mad + 28, 0x5a5a0004, 4);
		check(write_again(fd, &m, sizeof(m)) == 0, "APR of no connection");
		/* Cut after the communication IDs: the rest of the MAD is zero on the wire. */
		cm_hdr(&m, id, dlid, 0x0019, 0x85);
		put_be(m.mad + 24, 0x5a5a0003, 4);
		check(write_again(fd, &m, sizeof(m.hdr) + 36) == 0, "a LAP of 36 bytes");
		cm_hdr(&m, id, dlid, 0x001b, 0x86);
		check(write_again(fd, &m, sizeof(m)) == 0, "a CM MAD of attribute 0x001B");
	} else {
		close(fd);
		return 2;
	}
	/* The sends leave before the file closes (a send without a timeout reports nothing). */
	usleep(200000);
	close(fd);
	printf("umad_test: %d checks passed, %d failed\n", passes, failures);
	return failures ? 1 : 0;
}

/*
 * -C rereg: PortInfo of port 1 (a local directed-route Get), then the same PortInfo Set back
 * with ClientReregister (byte 51, bit 7), PortState NOP and PortPhysicalState 0 (no change),
 * else the SMA answers with an invalid field: both answered with status 0.
 */
static int rereg(int n)
{
	struct pollfd pfd;
	struct msg m, r;
	uint32_t id;
	int fd, st;

	fd = open_umad(n, 0);
	check(fd >= 0 && reg2(fd, 0, 0x81, 1, 0, 0, 0, &id) == 0, "open umad%d, an SMP agent", n);
	smp_nodeinfo(&m, id);
	m.mad[15] = 0x91;
	m.mad[17] = 0x15;	/* PortInfo */
	m.mad[23] = 1;		/* port 1 */
	pfd.fd = fd;
	pfd.events = POLLIN;
	check(write(fd, &m, sizeof(m)) == (ssize_t)sizeof(m) && poll(&pfd, 1, 3000) == 1 &&
		      read(fd, &r, sizeof(r)) == (ssize_t)sizeof(r),
	      "PortInfo Get answered");
	st = (r.mad[4] << 8 | r.mad[5]) & 0x7fff;
	check(r.hdr.status == 0 && r.mad[3] == 0x81 && st == 0, "PortInfo GetResp, status 0 (0x%x)", st);
	m.mad[3] = 0x02;	/* Set */
	m.mad[15] = 0x92;
	memcpy(m.mad + 64, r.mad + 64, 64);
	m.mad[64 + 32] &= 0xf0;	/* PortState: no change */
	m.mad[64 + 33] &= 0x0f;	/* PortPhysicalState: no change */
	m.mad[64 + 51] |= 0x80;	/* ClientReregister */
	check(write(fd, &m, sizeof(m)) == (ssize_t)sizeof(m) && poll(&pfd, 1, 3000) == 1 &&
		      read(fd, &r, sizeof(r)) == (ssize_t)sizeof(r),
	      "PortInfo Set with ClientReregister answered");
	st = (r.mad[4] << 8 | r.mad[5]) & 0x7fff;
	check(r.hdr.status == 0 && r.mad[3] == 0x81 && st == 0, "its GetResp, status 0 (0x%x)", st);
	close(fd);
	printf("umad_test: %d checks passed, %d failed\n", passes, failures);
	return failures ? 1 : 0;
}

/*
 * -b: bad input to write() beyond the length rules (upstream ib_umad_write()): the RMPP
 * ACTIVE flag on an agent registered without RMPP makes no RMPP transfer (the MAD is a plain
 * one, so more than 256 bytes is EINVAL) while an agent with kernel RMPP takes the same bytes;
 * a MAD of another class than the agent's goes out as written (upstream checks no class on
 * send); a timeout of 2^32-1 ms with 2^32-1 retries is taken, its send stays in flight (no
 * answer, no status), and the file closes with it and two more in flight; the port then
 * works (a new file's agent gets id 0 and a local SMP's answer).
 */
static int bad_input(int n)
{
	uint8_t big[sizeof(struct msg) + 8];
	struct pollfd pfd;
	struct msg m;
	uint32_t id = 0, sa = 0, pm = 0;
	int fd, i, st = 0, long_seen = 0;

	fd = open_umad(n, O_NONBLOCK);
	check(fd >= 0, "open umad%d", n);
	i = reg2(fd, 1, 0x03, 2, 0, 0, 0, &sa);
	check(i == 0, "SA agent without RMPP (id %u)", sa);
	memset(big, 0, sizeof(big));
	memcpy(big, &(struct ib_user_mad_hdr){ .id = sa, .qpn = htonl(1), .qkey = htonl(0x80010000),
					       .lid = htons(0x2345), .timeout_ms = 100 },
	       sizeof(struct ib_user_mad_hdr));
	big[sizeof(struct ib_user_mad_hdr) + 0] = 1;	 /* base version */
	big[sizeof(struct ib_user_mad_hdr) + 1] = 0x03; /* SubnAdm */
	big[sizeof(struct ib_user_mad_hdr) + 2] = 2;
	big[sizeof(struct ib_user_mad_hdr) + 3] = 0x14; /* Report: the SA takes data */
	big[sizeof(struct ib_user_mad_hdr) + 15] = 0x61;
	big[sizeof(struct ib_user_mad_hdr) + 24] = 1;	 /* RMPPVersion */
	big[sizeof(struct ib_user_mad_hdr) + 25] = 1;	 /* DATA */
	big[sizeof(struct ib_user_mad_hdr) + 26] = 0x07; /* ACTIVE, FIRST, LAST */
	big[sizeof(struct ib_user_mad_hdr) + 35] = 8;	 /* PayloadLength */
	check(write(fd, big, sizeof(struct msg)) == (ssize_t)sizeof(struct msg),
	      "RMPP ACTIVE, 256 bytes, agent without RMPP: taken as a plain MAD");
	big[sizeof(struct ib_user_mad_hdr) + 15] = 0x62;
	errno = 0;
	check(write(fd, big, sizeof(big)) < 0 && errno == EINVAL,
	      "RMPP ACTIVE, 264 bytes, agent without RMPP: EINVAL (a plain MAD over 256 bytes)");
	/* The class, version and method are the port's once: the RMPP agent replaces it. */
	check(ioctl(fd, IB_USER_MAD_UNREGISTER_AGENT, &sa) == 0, "UNREGISTER_AGENT %u", sa);
	i = reg2(fd, 1, 0x03, 2, 0, 0, 1, &id);
	check(i == 0, "SA agent with RMPP (id %u)", id);
	((struct ib_user_mad_hdr *)big)->id = id;
	check(write(fd, big, sizeof(big)) == (ssize_t)sizeof(big),
	      "the same 264 bytes on the RMPP agent: taken (two segments)");

	/* A MAD of another class than the agent's: upstream sends it as written. */
	i = reg2(fd, 1, 0x04, 1, 0, 0, 0, &pm);
	check(i == 0, "PerfMgt agent (id %u)", pm);
	memset(&m, 0, sizeof(m));
	m.hdr.id = pm;
	m.hdr.qpn = htonl(1);
	m.hdr.qkey = htonl(0x80010000);
	m.hdr.lid = htons(0x2345);
	m.hdr.timeout_ms = 100;
	m.mad[0] = 1;
	m.mad[1] = 0x06; /* a class the agent did not register */
	m.mad[2] = 1;
	m.mad[3] = 1;
	m.mad[15] = 0x63;
	check(write(fd, &m, sizeof(m)) == (ssize_t)sizeof(m), "class 0x06 on a PerfMgt agent: sent");

	/* 2^32-1 ms, 2^32-1 retries: taken; no answer comes (LID 0x2345 has no port). */
	m.mad[1] = 0x04;
	m.mad[15] = 0x64;
	m.hdr.timeout_ms = 0xffffffff;
	m.hdr.retries = 0xffffffff;
	check(write(fd, &m, sizeof(m)) == (ssize_t)sizeof(m), "timeout 2^32-1 ms, retries 2^32-1: taken");
	m.mad[15] = 0x65;
	check(write(fd, &m, sizeof(m)) == (ssize_t)sizeof(m), "a second one in flight");
	/* The 100 ms sends time out (statuses); the long ones stay in flight. */
	for (i = 0; i < 30; i++) {
		struct msg r;

		pfd.fd = fd;
		pfd.events = POLLIN;
		if (poll(&pfd, 1, 1500) != 1)
			break;
		/* A status: the header and the MAD header (upstream packet->length 24). */
		if (read(fd, &r, sizeof(r)) >= (ssize_t)(sizeof(r.hdr) + 24)) {
			st += r.hdr.status != 0;
			long_seen |= r.mad[15] == 0x64 || r.mad[15] == 0x65;
		}
	}
	check(st > 0 && !long_seen, "the 100 ms sends came back with a status (%d), the long ones did not", st);
	check(close(fd) == 0, "close with the long sends in flight");

	fd = open_umad(n, O_NONBLOCK);
	check(fd >= 0 && reg2(fd, 0, 0x81, 1, 0, 0, 0, &id) == 0 && id == 0, "a new file: agent id 0");
	smp_nodeinfo(&m, id);
	check(write(fd, &m, sizeof(m)) == (ssize_t)sizeof(m), "a local NodeInfo SMP");
	pfd.fd = fd;
	pfd.events = POLLIN;
	check(poll(&pfd, 1, 2000) == 1 && read(fd, &m, sizeof(m)) == (ssize_t)sizeof(m) &&
		      m.hdr.status == 0 && m.mad[3] == 0x81,
	      "its answer (GetResp, status 0)");
	close(fd);
	printf("umad_test: %d checks passed, %d failed\n", passes, failures);
	return failures ? 1 : 0;
}

/*
 * -F MAX: fault injection (failslab and fail_page_alloc, set up by the caller, armed by this
 * thread's /proc/thread-self/fail-nth: the N-th fault-injection site the thread passes
 * fails). Each of umad's calls in turn, open, REGISTER_AGENT2, write of a hop-count-0 DR
 * NodeInfo SMP (answered by the driver's process_mad) and UNREGISTER_AGENT, with points
 * N = 1, 2, ... failed until one is not reached (or MAX): the call succeeds or fails with
 * ENOMEM (the write: or EINVAL, upstream's errno for a local SMP the driver's process_mad
 * failed), and the file keeps working afterwards (a registration gets id 0 again, a written
 * SMP's answer comes back). The leak check is the suite's kmemleak scan.
 */
static int failnth = -1;

static void fn_arm(long n)
{
	char b[32];

	snprintf(b, sizeof(b), "%ld", n);
	if (pwrite(failnth, b, strlen(b), 0) < 0)
		printf("    fail-nth write: errno %d\n", errno);
}

/* Disarms; 1 if the armed point was reached. */
static int fn_disarm(void)
{
	char b[32] = "";
	ssize_t r = pread(failnth, b, sizeof(b) - 1, 0);

	if (pwrite(failnth, "0", 1, 0) < 0)
		printf("    fail-nth write: errno %d\n", errno);
	return r > 0 && atol(b) == 0;
}

/* Reads the answer of a local SMP (2 s at most): 1 if it came back with status 0. */
static int smp_answered(int fd)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	struct msg r;

	if (poll(&pfd, 1, 2000) != 1)
		return 0;
	return read(fd, &r, sizeof(r)) == (ssize_t)sizeof(r) && r.hdr.status == 0 &&
	       r.mad[3] == 0x81;
}

enum fop { F_OPEN, F_REG, F_WRITE, F_UNREG, F_N };

static int faults(int n, long max)
{
	static const char *names[F_N] = { "open", "REGISTER_AGENT2", "write", "UNREGISTER_AGENT" };
	long pt, hit[F_N] = { 0 }, failed[F_N] = { 0 };
	int op, bad = 0;

	failnth = open("/proc/thread-self/fail-nth", O_RDWR);
	check(failnth >= 0, "open /proc/thread-self/fail-nth");
	if (failnth < 0)
		return 1;
	for (op = 0; op < F_N; op++) {
		for (pt = 1; pt <= max; pt++) {
			struct msg m;
			uint32_t id = 99;
			int fd = -1, ret, err, reached;

			if (op != F_OPEN) {
				fd = open_umad(n, O_NONBLOCK);
				if (fd < 0 || (op == F_UNREG && reg2(fd, 0, 0x81, 1, 0, 0, 0, &id))) {
					printf("    %s point %ld: setup: errno %d\n", names[op], pt, errno);
					bad++;
					break;
				}
			}
			smp_nodeinfo(&m, 0);
			if (op == F_WRITE && reg2(fd, 0, 0x81, 1, 0, 0, 0, &id) == 0)
				smp_nodeinfo(&m, id);
			errno = 0;
			fn_arm(pt);
			if (op == F_OPEN)
				ret = fd = open_umad(n, O_NONBLOCK);
			else if (op == F_REG)
				ret = reg2(fd, 0, 0x81, 1, 0, 0, 0, &id);
			else if (op == F_WRITE)
				ret = write(fd, &m, sizeof(m));
			else
				ret = ioctl(fd, IB_USER_MAD_UNREGISTER_AGENT, &id);
			err = errno;
			reached = fn_disarm();
			if (!reached) {
				if (fd >= 0)
					close(fd);
				break;
			}
			hit[op]++;
			if (ret < 0) {
				failed[op]++;
				/*
				 * A failed allocation in the driver's process_mad (the MAD_IFC
				 * command) is a failed local SMP: upstream
				 * handle_outgoing_dr_smp() makes that EINVAL.
				 */
				if (err != ENOMEM && !(op == F_WRITE && err == EINVAL)) {
					printf("    %s point %ld: errno %d, not ENOMEM\n", names[op], pt, err);
					bad++;
				}
			}
			/* The file works afterwards. */
			if (op == F_OPEN && ret < 0)
				fd = open_umad(n, O_NONBLOCK);
			if (op == F_REG && ret == 0) {
				if (id != 0) {
					printf("    %s point %ld: succeeded with id %u\n", names[op], pt, id);
					bad++;
				}
				ioctl(fd, IB_USER_MAD_UNREGISTER_AGENT, &id);
			}
			if (op == F_UNREG && ret < 0)
				ioctl(fd, IB_USER_MAD_UNREGISTER_AGENT, &id);
			if (op != F_WRITE && fd >= 0) {
				if (reg2(fd, 0, 0x81, 1, 0, 0, 0, &id) || id != 0) {
					printf("    %s point %ld: a registration afterwards: errno %d id %u\n",
					       names[op], pt, errno, id);
					bad++;
				} else {
					smp_nodeinfo(&m, id);
				}
			}
			if (fd >= 0 && op == F_WRITE && ret == (ssize_t)sizeof(m) && !smp_answered(fd)) {
				printf("    %s point %ld: the written SMP was not answered\n", names[op], pt);
				bad++;
			}
			m.mad[15] = 0x44;
			if (fd < 0 || write(fd, &m, sizeof(m)) != (ssize_t)sizeof(m) || !smp_answered(fd)) {
				printf("    %s point %ld: an SMP afterwards: errno %d\n", names[op], pt, errno);
				bad++;
			}
			if (fd >= 0)
				close(fd);
		}
		printf("S umad %s: points %ld failed %ld\n", names[op], hit[op], failed[op]);
		/* UNREGISTER_AGENT allocates nothing (upstream ib_unregister_mad_agent()). */
		if (op == F_UNREG)
			check(hit[op] == 0, "%s: no fault point (it allocates nothing)", names[op]);
		else
			check(hit[op] > 0, "%s: %ld fault points reached, %ld failed the call", names[op],
			      hit[op], failed[op]);
	}
	check(bad == 0, "every point: ENOMEM or success, the file working afterwards (%d bad)", bad);
	close(failnth);
	printf("umad_test: %d checks passed, %d failed\n", passes, failures);
	return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
	int n = 0, smp = 0, kill = 0, iters = 0, sa_lid = 0, dreq_lid = 0, opt, fd, fd2, i;
	long fault_max = 0;
	int bad = 0;
	const char *guid = NULL, *sm_dev = NULL, *cm_what = NULL;
	struct msg m, r;
	uint8_t big[sizeof(struct msg) + 8];
	uint32_t id, ids[33];
	ssize_t got;
	struct pollfd pfd;

	while ((opt = getopt(argc, argv, "u:sg:km:f:r:a:F:bD:C:")) != -1) {
		if (opt == 'b')
			bad = 1;
		if (opt == 'C')
			cm_what = optarg;
		if (opt == 'D')
			dreq_lid = strtol(optarg, NULL, 0);
		if (opt == 'F')
			fault_max = atol(optarg);
		if (opt == 'a')
			sa_lid = strtol(optarg, NULL, 0);
		else if (opt == 'u')
			n = atoi(optarg);
		else if (opt == 'f')
			iters = atoi(optarg);
		else if (opt == 'r')
			rnd_state = strtoull(optarg, NULL, 0) | 1;
		else if (opt == 'm')
			sm_dev = optarg;
		else if (opt == 'k')
			kill = 1;
		else if (opt == 's')
			smp = 1;
		else if (opt == 'g')
			guid = optarg;
	}
	if (fault_max)
		return faults(n, fault_max);
	if (bad)
		return bad_input(n);
	if (sm_dev)
		return issm_test(n, sm_dev);
	if (sa_lid)
		return sa_test(n, sa_lid);
	if (dreq_lid)
		return dreq_test(n, dreq_lid);
	if (cm_what && !strcmp(cm_what, "rereg"))
		return rereg(n);
	if (cm_what)
		return cm_raw(n, cm_what, argv + optind, argc - optind);
	if (iters)
		return fuzz(n, iters);
	if (kill) {
		fd = open_umad(n, 0);
		check(fd >= 0 && reg2(fd, 0, 0x81, 1, 0, 0, 0, &id) == 0, "open umad%d, agent registered", n);
		smp_nodeinfo(&m, id);
		m.mad[7] = 1;
		m.mad[129] = 1;
		m.hdr.timeout_ms = 60000;
		check(write(fd, &m, sizeof(m)) == (ssize_t)sizeof(m), "a MAD in flight (60 s timeout)");
		printf("umad_test: waiting in read\n");
		fflush(stdout);
		errno = 0;
		got = read(fd, &r, sizeof(r));
		check(got < 0 && errno == EIO, "read blocked across the removal: EIO");
		pfd.fd = fd;
		pfd.events = POLLIN;
		check(poll(&pfd, 1, 0) == 1 && pfd.revents == POLLERR, "poll after the removal: POLLERR");
		errno = 0;
		check(write(fd, &m, sizeof(m)) < 0 && errno == EIO, "write after the removal: EIO");
		errno = 0;
		check(reg2(fd, 1, 0x04, 1, 0, 0, 0, &id) && errno == EPIPE, "REGISTER_AGENT2 after the removal: EPIPE");
		check(close(fd) == 0, "close");
		printf("umad_test: %d checks passed, %d failed\n", passes, failures);
		return failures ? 1 : 0;
	}
	check(sizeof(struct ib_user_mad_reg_req) == 28 && sizeof(struct ib_user_mad_reg_req2) == 40 &&
		      sizeof(struct ib_user_mad_hdr) == 64,
	      "ABI struct sizes 28/40/64");
	check(IB_USER_MAD_REGISTER_AGENT == 0xc01c1b01 && IB_USER_MAD_REGISTER_AGENT2 == 0xc0281b04 &&
		      IB_USER_MAD_UNREGISTER_AGENT == 0x40041b02 && IB_USER_MAD_ENABLE_PKEY == 0x1b03,
	      "ioctl numbers as the kernel's");
	fd = open_umad(n, O_NONBLOCK);
	check(fd >= 0, "open umad%d", n);
	if (fd < 0)
		return 1;

	/* Registration rules (ib_umad_reg_agent2(), ib_register_mad_agent()). */
	errno = 0;
	check(reg2(fd, 2, 0x81, 1, 0, 0, 0, &id) && errno == EINVAL, "REGISTER_AGENT2 qpn 2: EINVAL");
	errno = 0;
	check(reg2(fd, 0, 0x81, 1, 0x2, 0, 0, &id) && errno == EINVAL && id == 1,
	      "REGISTER_AGENT2 unknown flag: EINVAL, supported flags written back (%u)", id);
	errno = 0;
	check(reg2(fd, 1, 0x30, 1, 0, 0x1000000, 0, &id) && errno == EINVAL, "REGISTER_AGENT2 OUI over 24 bits: EINVAL");
	errno = 0;
	check(reg2(fd, 1, 0x30, 1, 0, 0, 0, &id) && errno == EINVAL, "vendor class without OUI: EINVAL");
	errno = 0;
	check(reg2(fd, 0, 0x04, 1, 0, 0, 0, &id) && errno == EINVAL, "GSI class (PerfMgt) on QP0: EINVAL");
	errno = 0;
	check(reg2(fd, 1, 0x81, 1, 0, 0, 0, &id) && errno == EINVAL, "SMP class on QP1: EINVAL");
	errno = 0;
	check(reg2(fd, 1, 0x04, 0x83, 0, 0, 0, &id) && errno == EINVAL, "class version 0x83: EINVAL");
	errno = 0;
	check(reg2(fd, 1, 0x50, 1, 0, 0, 0, &id) && errno == EINVAL, "class 0x50: EINVAL");
	errno = 0;
	check(reg2(fd, 1, 0x04, 1, 0, 0, 1, &id) && errno == EINVAL, "RMPP version for PerfMgt: EINVAL");
	errno = 0;
	check(reg2(fd, 1, 0x03, 1, 0, 0, 2, &id) && errno == EINVAL, "RMPP version 2: EINVAL");
	errno = 0;
	check(reg2(fd, 1, 0, 0, 1, 0, 0, &id) && errno == EINVAL, "no class with USER_RMPP: EINVAL");

	/* A method taken by another agent of the port (method_in_use()). */
	check(reg2(fd, 1, 0x04, 1, 0, 0, 0, &id) == 0 && id == 0, "PerfMgt Get agent: id 0");
	errno = 0;
	check(reg2(fd, 1, 0x04, 1, 0, 0, 0, &ids[0]) && errno == EINVAL, "same class, version and method again: EINVAL");
	fd2 = open_umad(n, O_NONBLOCK);
	errno = 0;
	check(fd2 >= 0 && reg2(fd2, 1, 0x04, 1, 0, 0, 0, &ids[0]) && errno == EINVAL,
	      "the same from another file of the port: EINVAL");
	check(ioctl(fd, IB_USER_MAD_UNREGISTER_AGENT, &id) == 0, "UNREGISTER_AGENT 0");
	check(reg2(fd2, 1, 0x04, 1, 0, 0, 0, &ids[0]) == 0, "the method is free again for the other file");
	close(fd2);
	errno = 0;
	id = 0;
	check(ioctl(fd, IB_USER_MAD_UNREGISTER_AGENT, &id) && errno == EINVAL, "UNREGISTER_AGENT of a free id: EINVAL");
	id = 32;
	errno = 0;
	check(ioctl(fd, IB_USER_MAD_UNREGISTER_AGENT, &id) && errno == EINVAL, "UNREGISTER_AGENT 32: EINVAL");
	errno = 0;
	check(ioctl(fd, IB_USER_MAD_ENABLE_PKEY) && errno == EINVAL, "ENABLE_PKEY after a registration: EINVAL");

	/* 32 agents, then ENOMEM. */
	for (i = 0; i < 32; i++)
		if (reg2(fd, 1, 0, 0, 0, 0, 0, &ids[i]))
			break;
	check(i == 32, "32 agents without a class registered (%d)", i);
	errno = 0;
	check(reg2(fd, 1, 0, 0, 0, 0, 0, &id) && errno == ENOMEM, "a 33rd: ENOMEM");
	for (i = 0; i < 32; i++)
		ioctl(fd, IB_USER_MAD_UNREGISTER_AGENT, &ids[i]);

	/* write() rules (ib_umad_write()). */
	check(reg2(fd, 0, 0x81, 1, 0, 0, 0, &id) == 0, "SubnAdmin DR agent registered (id %u)", id);
	smp_nodeinfo(&m, id);
	errno = 0;
	check(write(fd, &m, sizeof(m.hdr) + 35) < 0 && errno == EINVAL, "write shorter than header + 36: EINVAL");
	m.hdr.id = 32;
	errno = 0;
	check(write(fd, &m, sizeof(m)) < 0 && errno == EINVAL, "write with agent id 32: EINVAL");
	m.hdr.id = 5;
	errno = 0;
	check(write(fd, &m, sizeof(m)) < 0 && errno == EIO, "write with an unregistered id: EIO");
	m.hdr.id = id;
	memset(big, 0, sizeof(big));
	memcpy(big, &m, sizeof(m));
	errno = 0;
	check(write(fd, big, sizeof(big)) < 0 && errno == EINVAL, "a MAD longer than 256 bytes: EINVAL");
	m.mad[7] = 64;
	errno = 0;
	check(write(fd, &m, sizeof(m)) < 0 && errno == EINVAL, "hop count 64: EINVAL (invalid directed route)");
	m.mad[7] = 0;
	errno = 0;
	got = read(fd, &r, sizeof(r));
	check(got < 0 && errno == EAGAIN, "read of an empty queue with O_NONBLOCK: EAGAIN");
	pfd.fd = fd;
	pfd.events = POLLIN | POLLOUT;
	check(poll(&pfd, 1, 0) == 1 && pfd.revents == (POLLOUT), "poll of an empty queue: POLLOUT only");
	errno = 0;
	check(read(fd, &r, 10) < 0 && errno == EINVAL, "read shorter than the header: EINVAL");

	/* A send that leaves the node: one hop out of port 1, unanswered: ETIMEDOUT. */
	m.mad[7] = 1;
	m.mad[129] = 1;
	m.mad[15] = 0x43;
	m.hdr.timeout_ms = 100;
	m.hdr.retries = 1;
	check(write(fd, &m, sizeof(m)) == (ssize_t)sizeof(m), "one-hop DR SMP written");
	errno = 0;
	check(write(fd, &m, sizeof(m)) < 0 && errno == EINVAL, "the same TID again while in flight: EINVAL");
	pfd.events = POLLIN;
	check(poll(&pfd, 1, 3000) == 1 && (pfd.revents & POLLIN), "poll: the timeout arrives");
	errno = 0;
	check(read(fd, &r, sizeof(r.hdr) + 10) < 0 && errno == EINVAL, "read too short for it: EINVAL");
	got = read(fd, &r, sizeof(r));
	check(got == (ssize_t)sizeof(r.hdr) + 24 && r.hdr.status == ETIMEDOUT && r.hdr.id == id &&
		      r.mad[15] == 0x43,
	      "read: header + 24 bytes, status ETIMEDOUT, the agent's id and the TID (%zd, status %u)",
	      got, r.hdr.status);

	if (smp) {
		/* Hop count 0: the node's own SMA answers through process_mad. */
		smp_nodeinfo(&m, id);
		check(write(fd, &m, sizeof(m)) == (ssize_t)sizeof(m), "NodeInfo Get, hop count 0, written");
		check(poll(&pfd, 1, 3000) == 1, "poll: the reply arrives");
		got = read(fd, &r, sizeof(r));
		check(got == (ssize_t)sizeof(r), "read: header + 256 bytes (%zd)", got);
		check(r.hdr.status == 0 && r.hdr.id == id && r.mad[3] == 0x81 && r.mad[1] == 0x81,
		      "reply: status 0, class 0x81, method GetResp 0x81 (method 0x%x)", r.mad[3]);
		if (guid) {
			char s[32];
			const uint8_t *g = &r.mad[64 + 12]; /* NodeInfo.NodeGUID */

			snprintf(s, sizeof(s), "%02x%02x:%02x%02x:%02x%02x:%02x%02x", g[0], g[1], g[2],
				 g[3], g[4], g[5], g[6], g[7]);
			check(strcmp(s, guid) == 0, "NodeInfo NodeGUID %s is sysfs node_guid %s", s, guid);
		}
	}
	check(close(fd) == 0, "close with an agent registered");
	printf("umad_test: %d checks passed, %d failed\n", passes, failures);
	return failures ? 1 : 0;
}
