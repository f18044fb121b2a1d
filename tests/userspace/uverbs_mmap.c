// SPDX-License-Identifier: GPL-2.0
/*
 * Pinned user memory (Umem::get through the mock's GET_CONTEXT request) and
 * mmap() of the uverbs file, on rdma_rs_mock's rxe_mock0. Raw ABI, one line
 * per check (`R ok <desc>` / `R fail <desc>: <why>`, see tests/vm/lib.sh).
 *
 *   uverbs_mmap [-d /dev/infiniband/uverbs0] checks
 *   uverbs_mmap [-d ...] hold GOFILE   pin a buffer and map the pattern page,
 *       print READY, wait for GOFILE (the script removes the device), then
 *       check the zap: reads give zeros, writes do not fault, nothing stays
 *       pinned, mmap fails with EIO, close succeeds.
 *
 * The mock's request (tests/mockdev/rdma_rs_mock.rs): { u64 magic, addr, len;
 * u32 access, flags } -> { u64 npages, offset, length; u32 writable,
 * pages_ok; u64 db_delta, db_pages } (flags 1: also map doorbell records at
 * addr and addr + 64). Offset 0 maps a page whose byte i is (i % 251) ^ 0x5a.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include <rdma/ib_user_ioctl_cmds.h>
#include <rdma/ib_user_verbs.h>
#include <rdma/rdma_user_ioctl_cmds.h>

#define PIN_MAGIC 0x6d6f636b756d656dULL
#define IB_ACCESS_LOCAL_WRITE 1
#define IB_ACCESS_ON_DEMAND (1 << 6)

static const char *dev = "/dev/infiniband/uverbs0";
static int failures;
static long pg;

struct pin_req {
	uint64_t magic, addr, len;
	uint32_t access, flags;
};

struct pin_resp {
	uint64_t npages, offset, length;
	uint32_t writable, pages_ok;
	uint64_t db_delta, db_pages;
};

static void ok(const char *d) { printf("R ok %s\n", d); }

static void fail(const char *d, const char *why)
{
	printf("R fail %s: %s\n", d, why);
	failures++;
}

static void expect(const char *desc, int got, int want)
{
	if (got == want) {
		printf("R ok %s (errno %d)\n", desc, got);
	} else {
		printf("R fail %s: errno %d (%s), expected %d (%s)\n", desc, got,
		       strerror(got), want, strerror(want));
		failures++;
	}
}

/* GET_CONTEXT through ioctl, with the mock's pin request if req. */
static int get_context(int fd, struct pin_req *req, struct pin_resp *resp)
{
	struct {
		struct ib_uverbs_ioctl_hdr hdr;
		struct ib_uverbs_attr attrs[2];
	} r;
	int n = req ? 2 : 0;

	memset(&r, 0, sizeof(r));
	r.hdr.length = sizeof(r.hdr) + n * sizeof(struct ib_uverbs_attr);
	r.hdr.object_id = UVERBS_OBJECT_DEVICE;
	r.hdr.method_id = UVERBS_METHOD_GET_CONTEXT;
	r.hdr.num_attrs = n;
	r.hdr.driver_id = 14; /* RDMA_DRIVER_RXE */
	if (req) {
		r.attrs[0].attr_id = UVERBS_ATTR_UHW_IN;
		r.attrs[0].len = sizeof(*req);
		r.attrs[0].data = (uintptr_t)req;
		r.attrs[1].attr_id = UVERBS_ATTR_UHW_OUT;
		r.attrs[1].len = sizeof(*resp);
		r.attrs[1].data = (uintptr_t)resp;
		memset(resp, 0, sizeof(*resp));
	}
	return ioctl(fd, RDMA_VERBS_IOCTL, &r) ? errno : 0;
}

static int pin_flags(int fd, void *addr, uint64_t len, uint32_t access, uint32_t flags,
		     struct pin_resp *resp)
{
	struct pin_req req = { PIN_MAGIC, (uintptr_t)addr, len, access, flags };

	return get_context(fd, &req, resp);
}

static int pin(int fd, void *addr, uint64_t len, uint32_t access, struct pin_resp *resp)
{
	return pin_flags(fd, addr, len, access, 0, resp);
}

/* VmPin of /proc/self/status in kB (mm->pinned_vm), -1 if absent. */
static long vm_pin_kb(void)
{
	char line[128];
	long v = -1;
	FILE *f = fopen("/proc/self/status", "r");

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "VmPin: %ld kB", &v) == 1)
			break;
	if (f)
		fclose(f);
	return v;
}

static void expect_pin(const char *d, long want_kb)
{
	char why[64];
	long v = vm_pin_kb();

	if (v == want_kb) {
		printf("R ok %s (VmPin %ld kB)\n", d, v);
		return;
	}
	snprintf(why, sizeof(why), "VmPin %ld kB, expected %ld", v, want_kb);
	fail(d, why);
}

static int map_err(int fd, size_t len, int prot, int flags, off_t off, void **out)
{
	void *p = mmap(NULL, len, prot, flags, fd, off);

	if (p == MAP_FAILED)
		return errno;
	if (out)
		*out = p;
	else
		munmap(p, len);
	return 0;
}

static int is_pattern(const volatile uint8_t *p)
{
	for (long i = 0; i < pg; i++)
		if (p[i] != (uint8_t)((i % 251) ^ 0x5a))
			return 0;
	return 1;
}

static int is_zero(const volatile uint8_t *p)
{
	for (long i = 0; i < pg; i++)
		if (p[i])
			return 0;
	return 1;
}

static int open_dev(void)
{
	int fd = open(dev, O_RDWR | O_CLOEXEC);

	if (fd < 0) {
		fail("open", strerror(errno));
		exit(1);
	}
	return fd;
}

static void mmap_checks(void)
{
	int fd = open_dev();
	uint8_t *p = NULL;
	pid_t pid;
	int st;

	expect("mmap before GET_CONTEXT fails EINVAL",
	       map_err(fd, pg, PROT_READ | PROT_WRITE, MAP_SHARED, 0, NULL), EINVAL);
	expect("GET_CONTEXT", get_context(fd, NULL, NULL), 0);
	expect("mmap of offset 0 (RW, shared)",
	       map_err(fd, pg, PROT_READ | PROT_WRITE, MAP_SHARED, 0, (void **)&p), 0);
	if (p) {
		if (is_pattern(p))
			ok("offset 0 reads the mock's pattern");
		else
			fail("offset 0 reads the mock's pattern", "different bytes");
		/* A copy of the VMA (fork: rdma_umap_open) sees the page too. */
		pid = fork();
		if (pid == 0)
			_exit(is_pattern(p) ? 0 : 1);
		st = -1;
		waitpid(pid, &st, 0);
		if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
			ok("a forked child reads the pattern through its copy of the mapping");
		else
			fail("a forked child reads the pattern through its copy of the mapping", "child failed");
		expect("munmap", munmap(p, pg) ? errno : 0, 0);
	}
	expect("mmap of an unknown offset fails EINVAL",
	       map_err(fd, pg, PROT_READ, MAP_SHARED, 7 * pg, NULL), EINVAL);
	expect("mmap of offset 0, MAP_PRIVATE, fails EINVAL",
	       map_err(fd, pg, PROT_READ, MAP_PRIVATE, 0, NULL), EINVAL);
	expect("mmap of offset 0, two pages, fails EINVAL",
	       map_err(fd, 2 * pg, PROT_READ, MAP_SHARED, 0, NULL), EINVAL);
	expect("mmap of offset 0 read-only", map_err(fd, pg, PROT_READ, MAP_SHARED, 0, NULL), 0);
	expect("close", close(fd) ? errno : 0, 0);
}

static void umem_checks(void)
{
	struct pin_resp r;
	int fd = open_dev();
	char *buf, *ro, *hole;
	long base = vm_pin_kb();

	if (base != 0) {
		fail("VmPin is 0 at start", "not 0");
		return;
	}
	buf = mmap(NULL, 4 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ro = mmap(NULL, 2 * pg, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	hole = mmap(NULL, 2 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED || ro == MAP_FAILED || hole == MAP_FAILED) {
		fail("anonymous buffers", strerror(errno));
		return;
	}
	memset(buf, 1, 4 * pg);
	munmap(hole + pg, pg); /* hole: one mapped page, then nothing */

	expect("pin of len 0 fails EINVAL", pin(fd, buf, 0, IB_ACCESS_LOCAL_WRITE, &r), EINVAL);
	expect("pin with addr + len overflowing fails EINVAL",
	       pin(fd, (void *)(uintptr_t)~0xfffULL, 0x2000, 0, &r), EINVAL);
	expect("pin with IB_ACCESS_ON_DEMAND fails EOPNOTSUPP",
	       pin(fd, buf, pg, IB_ACCESS_ON_DEMAND | IB_ACCESS_LOCAL_WRITE, &r), EOPNOTSUPP);
	expect("pin of a range running into unmapped memory fails EFAULT",
	       pin(fd, hole + 8, pg, IB_ACCESS_LOCAL_WRITE, &r), EFAULT);
	expect("writable pin of read-only memory fails EFAULT",
	       pin(fd, ro, pg, IB_ACCESS_LOCAL_WRITE, &r), EFAULT);
	expect_pin("nothing stays pinned or accounted after the failures", 0);

	/* 2 pages from offset 100: spans 3 pages. */
	expect("writable pin of 2 pages at page offset 100",
	       pin(fd, buf + 100, 2 * pg, IB_ACCESS_LOCAL_WRITE, &r), 0);
	if (r.npages == 3 && r.offset == 100 && r.length == (uint64_t)(2 * pg) && r.writable == 1 &&
	    r.pages_ok == 1) {
		ok("Umem: 3 pages, offset 100, length 2 pages, writable, page addresses aligned");
	} else {
		char why[128];

		snprintf(why, sizeof(why), "npages %llu offset %llu length %llu writable %u ok %u",
			 (unsigned long long)r.npages, (unsigned long long)r.offset,
			 (unsigned long long)r.length, r.writable, r.pages_ok);
		fail("Umem: 3 pages, offset 100, length 2 pages, writable, page addresses aligned", why);
	}
	expect_pin("pinned_vm accounts the 3 pages while the context lives", 3 * pg / 1024);
	expect("close (releases the context and its Umem)", close(fd) ? errno : 0, 0);
	expect_pin("pinned_vm back to 0 after close", 0);
	expect("munmap of the unpinned buffer", munmap(buf, 4 * pg) ? errno : 0, 0);

	fd = open_dev();
	expect("read-only pin of read-only memory", pin(fd, ro, 2 * pg, 0, &r), 0);
	if (r.npages == 2 && r.offset == 0 && r.writable == 0)
		ok("Umem: 2 pages, offset 0, not writable");
	else
		fail("Umem: 2 pages, offset 0, not writable", "different response");
	expect("close", close(fd) ? errno : 0, 0);
	expect_pin("pinned_vm back to 0", 0);

	/* Doorbell records: two in one page share one pinned page. */
	buf = mmap(NULL, pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	memset(buf, 3, pg);
	fd = open_dev();
	expect("pin of 1 page with two doorbell records in it",
	       pin_flags(fd, buf, pg, IB_ACCESS_LOCAL_WRITE, 1, &r), 0);
	if (r.db_delta == 64 && r.db_pages == 1)
		ok("DbPages: records 64 bytes apart share one pinned page");
	else
		fail("DbPages: records 64 bytes apart share one pinned page", "different response");
	expect_pin("pinned_vm: the Umem page and the doorbell page", 2 * pg / 1024);
	expect("close", close(fd) ? errno : 0, 0);
	expect_pin("pinned_vm back to 0 after the doorbell records", 0);
	munmap(buf, pg);
	munmap(ro, 2 * pg);
	munmap(hole, pg);
}

static int hold(const char *gofile)
{
	struct pin_resp r;
	int fd = open_dev();
	uint8_t *rw = NULL, *ro = NULL;
	char *buf = mmap(NULL, 2 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	memset(buf, 2, 2 * pg);
	expect("hold: GET_CONTEXT pinning 2 pages", pin(fd, buf, 2 * pg, IB_ACCESS_LOCAL_WRITE, &r), 0);
	expect("hold: mmap RW", map_err(fd, pg, PROT_READ | PROT_WRITE, MAP_SHARED, 0, (void **)&rw), 0);
	expect("hold: mmap RO", map_err(fd, pg, PROT_READ, MAP_SHARED, 0, (void **)&ro), 0);
	if (!rw || !ro)
		return 1;
	if (is_pattern(rw) && is_pattern(ro))
		ok("hold: both mappings read the pattern");
	else
		fail("hold: both mappings read the pattern", "different bytes");
	expect_pin("hold: 2 pages pinned", 2 * pg / 1024);
	printf("READY\n");
	fflush(stdout);
	for (int i = 0; access(gofile, F_OK); i++) {
		if (i > 600) {
			fail("go file", "never appeared");
			return 1;
		}
		usleep(100000);
	}
	/* Zapped: upstream's zero page (RO) or the file's zeroed dummy page (RW). */
	if (is_zero(ro))
		ok("after remove: the read-only mapping reads zeros");
	else
		fail("after remove: the read-only mapping reads zeros", "not zero");
	if (is_zero(rw))
		ok("after remove: the writable mapping reads zeros");
	else
		fail("after remove: the writable mapping reads zeros", "not zero");
	rw[0] = 0x77;
	if (rw[0] == 0x77)
		ok("after remove: a write to the zapped mapping does not fault");
	else
		fail("after remove: a write to the zapped mapping does not fault", "lost");
	expect_pin("after remove: nothing pinned (the context was released)", 0);
	expect("after remove: mmap fails EIO",
	       map_err(fd, pg, PROT_READ, MAP_SHARED, 0, NULL), EIO);
	expect("after remove: munmap RW", munmap(rw, pg) ? errno : 0, 0);
	expect("after remove: munmap RO", munmap(ro, pg) ? errno : 0, 0);
	expect("after remove: munmap of the formerly pinned buffer", munmap(buf, 2 * pg) ? errno : 0, 0);
	expect("after remove: close", close(fd) ? errno : 0, 0);
	return 0;
}

int main(int argc, char **argv)
{
	int opt;

	pg = sysconf(_SC_PAGESIZE);
	while ((opt = getopt(argc, argv, "d:")) != -1)
		if (opt == 'd')
			dev = optarg;
	if (optind < argc && !strcmp(argv[optind], "checks")) {
		mmap_checks();
		umem_checks();
	} else if (optind + 1 < argc && !strcmp(argv[optind], "hold")) {
		if (hold(argv[optind + 1]))
			return 1;
	} else {
		fprintf(stderr, "usage: uverbs_mmap [-d DEV] checks | hold GOFILE\n");
		return 2;
	}
	return failures ? 1 : 0;
}
