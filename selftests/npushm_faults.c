// SPDX-License-Identifier: GPL-2.0-only
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * npushm_faults.c - every module entry point looped through injected
 * failures (the debug lane's fault-injection pass).
 *
 * For each entry point, the calling thread's Nth fault-injection point is
 * made to fail (fail-nth: allocations, pages, user copies), for N = 1, 2, ...
 * until the call runs to its end without reaching the Nth point. Each
 * injected failure must give a clean error (or be absorbed by a fallback,
 * then the call succeeds) and leave nothing behind: no descriptor, no pool
 * bytes, no name, no mapping, no dma-buf. kmemleak, KASAN and lockdep watch
 * the same run from the kernel side.
 *
 * Needs the debug kernel, npushm_test.ko (the importer) and
 * "selftests/debug/fail-inject.sh --arm", which
 * sets NPUSHM_FAULT_INJECT; it is run by selftests/run-module-tests.sh in
 * that mode only.
 */
#include <dirent.h>
#include <sys/mman.h>
#include <netlink/genl/ctrl.h>
#include <netlink/genl/genl.h>
#include <netlink/netlink.h>

#include "npushm_fixture.h"
#include "npushm_test_uapi.h"
#include "debug/fail_nth.h"

#define MiB (1024UL * 1024)
#define MAX_POINTS 20000
#define IMPORTER NPUSHM_TEST_DEVICE_PATH

struct fctx {
	int dev;
	int root;		/* the test's instance */
	int region;		/* a region the test owns, outside the loop */
	int made;		/* what a successful call made (fd), or -1 */
	void *map;
	uint64_t id;
};

struct fault_op {
	const char *name;
	long (*call)(struct fctx *c);		/* armed: 0 or -errno */
	void (*undo)(struct fctx *c);		/* after success: release what it made */
	bool (*clean)(struct fctx *c);		/* after failure: nothing left behind */
};

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

static bool clean_errno(long r)
{
	return r == -ENOMEM || r == -EFAULT || r == -ENOSPC || r == -EINTR ||
	       r == -ENOBUFS || r == -EAGAIN || r == -EBUSY;
}

/* Loop one entry point through its injection points; returns how many failed. */
static int fault_loop(struct __test_metadata *_metadata, struct fctx *c,
		      const struct fault_op *op, uint64_t in_use)
{
	int nfd = fail_nth_open(), failed = 0, absorbed = 0;
	unsigned int n;

	if (nfd < 0) {
		TH_LOG("no /proc/thread-self/fail-nth: %s", strerror(-nfd));
		return -1;
	}
	for (n = 1; n < MAX_POINTS; n++) {
		int fds = count_fds();
		bool fired;
		long r;

		c->made = -1;
		c->map = NULL;
		fail_nth_arm(nfd, n);
		r = op->call(c);
		fired = fail_nth_fired(nfd);
		if (!fired) {
			/* Ran to the end: it must have worked. */
			EXPECT_EQ(0, r) {
				TH_LOG("%s: failed with %ld without an injected fault", op->name, r);
			}
			if (!r && op->undo)
				op->undo(c);
			break;
		}
		if (!r) {
			absorbed++;
			if (op->undo)
				op->undo(c);
		} else {
			failed++;
			EXPECT_TRUE(clean_errno(r)) {
				TH_LOG("%s: point %u: unexpected error %ld", op->name, n, r);
			}
			if (op->clean)
				EXPECT_TRUE(op->clean(c)) {
					TH_LOG("%s: point %u left something behind", op->name, n);
				}
		}
		EXPECT_EQ(fds, count_fds()) {
			TH_LOG("%s: point %u leaked a descriptor", op->name, n);
		}
		EXPECT_EQ(in_use, npu_in_use(c->dev)) {
			TH_LOG("%s: point %u left pool bytes behind", op->name, n);
		}
		if (!_metadata->passed)
			break;
	}
	close(nfd);
	TH_LOG("%s: %u injection points, %d failed cleanly, %d absorbed", op->name, n - 1,
	       failed, absorbed);
	EXPECT_LT(n, MAX_POINTS);
	return failed;
}

static long call_alloc(struct fctx *c)
{
	c->made = npu_alloc(c->dev, 3 * MiB + 4096);
	return c->made < 0 ? c->made : 0;
}

static void undo_close(struct fctx *c)
{
	close(c->made);
}

static long call_query(struct fctx *c)
{
	struct npushm_query q;

	return npu_query(c->dev, &q);
}

static long call_info(struct fctx *c)
{
	struct npushm_region_info info;

	return npu_info(c->region, &info);
}

static long call_mmap(struct fctx *c)
{
	c->map = mmap(NULL, 2 * MiB, PROT_READ | PROT_WRITE, MAP_SHARED, c->region, 0);
	return c->map == MAP_FAILED ? -errno : 0;
}

static void undo_munmap(struct fctx *c)
{
	munmap(c->map, 2 * MiB);
}

static bool no_mapping(struct fctx *c)
{
	struct npushm_region_info info;

	return !npu_info(c->region, &info) && info.mappings == 0;
}

static long call_size(struct fctx *c)
{
	c->made = npu_tmpfile(c->root, 3 * MiB + 4096, 0600);
	return c->made < 0 ? c->made : 0;
}

/* Through the file itself (root may): no /proc lookup to fail in between. */
static int link_fd(int fd, int dir, const char *name)
{
	return linkat(fd, "", dir, name, AT_EMPTY_PATH) ? -errno : 0;
}

static long call_publish(struct fctx *c)
{
	return link_fd(c->region, c->root, "fault.name");
}

static void undo_unlink(struct fctx *c)
{
	npu_unlink(c->root, "fault.name");
}

static bool no_name(struct fctx *c)
{
	struct npushm_region_info info;

	/* Only its permanent name "fault.region". */
	return npu_open(c->root, "fault.name", O_RDONLY) == -ENOENT &&
	       !npu_info(c->region, &info) && info.names == 1;
}

static long call_open(struct fctx *c)
{
	c->made = npu_open(c->root, "fault.open", O_RDWR);
	return c->made < 0 ? c->made : 0;
}

static bool one_handle(struct fctx *c)
{
	struct npushm_region_info info;

	return !npu_info(c->region, &info) && info.handles == 1;
}

static long call_unlink(struct fctx *c)
{
	return npu_unlink(c->root, "fault.unlink");
}

static void undo_republish(struct fctx *c)
{
	link_fd(c->region, c->root, "fault.unlink");
}

static bool name_kept(struct fctx *c)
{
	int fd = npu_open(c->root, "fault.unlink", O_RDONLY);

	if (fd < 0)
		return false;
	close(fd);
	return true;
}

static long call_export(struct fctx *c)
{
	c->made = npu_export(c->region, NPUSHM_EXPORT_RDWR);
	return c->made < 0 ? c->made : 0;
}

static bool no_dmabuf(struct fctx *c)
{
	struct npushm_region_info info;

	return !npu_info(c->region, &info) && info.dmabufs == 0;
}

static long call_import(struct fctx *c)
{
	struct npushm_test_import req = {
		.fd = c->made, .op = NPUSHM_TEST_WRITE_FILL, .length = MiB, .value = 7,
	};
	int imp = open(IMPORTER, O_RDWR | O_CLOEXEC);
	long r;

	if (imp < 0)
		return -errno;
	r = npu_ioctl(imp, NPUSHM_TEST_IOC_IMPORT, &req);
	close(imp);
	c->made = -1;
	return r;
}

static long call_seal(struct fctx *c)
{
	return npu_seal(c->region);
}

static long call_netlink(struct fctx *c)
{
	struct nl_sock *sk = nl_socket_alloc();
	struct nl_msg *msg = nlmsg_alloc();
	long r = -ENOMEM;
	int family, err;

	if (!sk || !msg)
		goto out;
	nl_socket_disable_auto_ack(sk);
	err = genl_connect(sk);
	if (!err) {
		family = genl_ctrl_resolve(sk, NPUSHM_GENL_NAME);
		err = family < 0 ? family : 0;
	}
	if (!err && !genlmsg_put(msg, NL_AUTO_PORT, NL_AUTO_SEQ, family, 0, NLM_F_DUMP,
				 NPUSHM_CMD_REGION_GET, NPUSHM_GENL_VERSION))
		err = -NLE_NOMEM;
	if (!err)
		err = nl_send_auto(sk, msg);
	if (err >= 0)
		err = nl_recvmsgs_default(sk);
	/* libnl's own codes: any failure is reported as ENOBUFS. */
	r = err < 0 ? -ENOBUFS : 0;
out:
	nlmsg_free(msg);
	nl_socket_free(sk);
	return r;
}

static long call_watch_open(struct fctx *c)
{
	struct npushm_watch_open o = { 0 };
	long r = npu_ioctl(c->dev, NPUSHM_IOC_WATCH, &o);

	c->made = r ? -1 : o.fd;
	return r;
}

/* c->region is a watch here; c->map a mapped page of the caller's. */
static long call_watch_add(struct fctx *c)
{
	struct npushm_watch_range r = { .start = (uintptr_t)c->map, .len = 4096 };
	long ret = npu_ioctl(c->region, NPUSHM_IOC_WATCH_ADD, &r);

	c->id = ret ? 0 : r.id;
	return ret;
}

static void undo_watch_add(struct fctx *c)
{
	struct npushm_watch_del d = { .id = c->id };

	npu_ioctl(c->region, NPUSHM_IOC_WATCH_DEL, &d);
}

static long call_watch_mmap(struct fctx *c)
{
	c->map = mmap(NULL, 4096, PROT_READ, MAP_SHARED, c->region, 0);
	return c->map == MAP_FAILED ? -errno : 0;
}

static void undo_watch_munmap(struct fctx *c)
{
	munmap(c->map, 4096);
}

TEST_F(npushm, fault_injection_every_entry_point)
{
	static const struct fault_op alloc = { "alloc", call_alloc, undo_close, NULL };
	static const struct fault_op query = { "query", call_query, NULL, NULL };
	static const struct fault_op info = { "info", call_info, NULL, NULL };
	static const struct fault_op map = { "mmap", call_mmap, undo_munmap, no_mapping };
	static const struct fault_op publish = { "publish", call_publish, undo_unlink, no_name };
	static const struct fault_op size = { "tmpfile and size", call_size, undo_close, NULL };
	static const struct fault_op open_ = { "open", call_open, undo_close, one_handle };
	static const struct fault_op unlink_ = { "unlink", call_unlink, undo_republish, name_kept };
	static const struct fault_op export = { "export", call_export, undo_close, no_dmabuf };
	static const struct fault_op netlink = { "netlink dump", call_netlink, NULL, NULL };
	struct fctx c = { .dev = self->dev, .root = self->root };
	uint64_t in_use;
	int failed = 0;

	if (!getenv("NPUSHM_FAULT_INJECT"))
		SKIP(return, "not in the fault-injection pass (selftests/debug/fail-inject.sh --arm)");
	/* Named for good: a region whose last name goes cannot be named again. */
	c.region = npu_create(self->root, "fault.region", 4 * MiB, 0600);
	ASSERT_LE(0, c.region);
	in_use = npu_in_use(self->dev);

	failed += fault_loop(_metadata, &c, &query, in_use);
	failed += fault_loop(_metadata, &c, &info, in_use);
	failed += fault_loop(_metadata, &c, &map, in_use);
	failed += fault_loop(_metadata, &c, &publish, in_use);

	ASSERT_EQ(0, link_fd(c.region, self->root, "fault.open"));
	failed += fault_loop(_metadata, &c, &open_, in_use);
	ASSERT_EQ(0, npu_unlink(self->root, "fault.open"));

	ASSERT_EQ(0, link_fd(c.region, self->root, "fault.unlink"));
	failed += fault_loop(_metadata, &c, &unlink_, in_use);
	npu_unlink(self->root, "fault.unlink");

	failed += fault_loop(_metadata, &c, &export, in_use);
	failed += fault_loop(_metadata, &c, &netlink, in_use);
	close(c.region);
	ASSERT_EQ(0, npu_unlink(self->root, "fault.region"));
	failed += fault_loop(_metadata, &c, &alloc, self->q0.in_use);
	failed += fault_loop(_metadata, &c, &size, self->q0.in_use);
	/* Each entry point above has at least one failure path. */
	EXPECT_LT(9, failed);
}

TEST_F(npushm, fault_injection_dmabuf_import_and_seal)
{
	static const struct fault_op seal = { "seal", call_seal, NULL, NULL };
	struct fctx c = { .dev = self->dev, .root = self->root };
	int nfd, i;

	if (!getenv("NPUSHM_FAULT_INJECT"))
		SKIP(return, "not in the fault-injection pass (selftests/debug/fail-inject.sh --arm)");
	c.region = npu_tmpfile(self->root, 2 * MiB, 0600);
	ASSERT_LE(0, c.region);
	/* Each import attempt gets a fresh dma-buf, made outside the armed call. */
	nfd = fail_nth_open();
	ASSERT_LE(0, nfd);
	for (i = 1; i < MAX_POINTS; i++) {
		int buf = npu_export(c.region, NPUSHM_EXPORT_RDWR);
		long r;
		bool fired;

		ASSERT_LE(0, buf);
		c.made = buf;
		fail_nth_arm(nfd, i);
		r = call_import(&c);
		fired = fail_nth_fired(nfd);
		close(buf);
		if (!fired) {
			EXPECT_EQ(0, r);
			break;
		}
		EXPECT_TRUE(!r || clean_errno(r)) {
			TH_LOG("import: point %d: %ld", i, r);
		}
	}
	TH_LOG("dma-buf import: %d injection points", i - 1);
	close(nfd);
	fault_loop(_metadata, &c, &seal, npu_in_use(self->dev));
	close(c.region);
}

TEST_F(npushm, fault_injection_watch)
{
	static const struct fault_op open_ = { "watch", call_watch_open, undo_close, NULL };
	static const struct fault_op add = { "watch add", call_watch_add, undo_watch_add, NULL };
	static const struct fault_op map = { "watch mmap", call_watch_mmap, undo_watch_munmap, NULL };
	struct fctx c = { .dev = self->dev, .root = self->root };
	struct npushm_watch_open o = { 0 };
	struct npushm_watch_event ev;
	void *page;
	int nfd, i;

	if (!getenv("NPUSHM_FAULT_INJECT"))
		SKIP(return, "not in the fault-injection pass (selftests/debug/fail-inject.sh --arm)");
	fault_loop(_metadata, &c, &open_, self->q0.in_use);
	ASSERT_EQ(0, npu_ioctl(self->dev, NPUSHM_IOC_WATCH, &o));
	c.region = o.fd;
	ASSERT_EQ(0, fcntl(c.region, F_SETFL, O_NONBLOCK));
	fault_loop(_metadata, &c, &map, self->q0.in_use);
	page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, page);
	c.map = page;
	fault_loop(_metadata, &c, &add, self->q0.in_use);
	munmap(page, 4096);

	/* A read that fails loses no event. */
	nfd = fail_nth_open();
	ASSERT_LE(0, nfd);
	for (i = 1; i < MAX_POINTS; i++) {
		ssize_t r;
		bool fired;
		int e;

		c.map = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		ASSERT_NE(MAP_FAILED, c.map);
		ASSERT_EQ(0, call_watch_add(&c));
		munmap(c.map, 4096);
		fail_nth_arm(nfd, i);
		r = read(c.region, &ev, sizeof(ev));
		e = errno;
		fired = fail_nth_fired(nfd);
		if (!fired) {
			EXPECT_EQ(sizeof(ev), r);
			EXPECT_EQ(c.id, ev.id);
			undo_watch_add(&c);
			break;
		}
		if (r < 0) {
			EXPECT_EQ(EFAULT, e);
			EXPECT_EQ(sizeof(ev), read(c.region, &ev, sizeof(ev)));
			EXPECT_EQ(c.id, ev.id);
		}
		undo_watch_add(&c);
	}
	TH_LOG("watch read: %d injection points", i - 1);
	EXPECT_EQ(-1, read(c.region, &ev, sizeof(ev)));
	EXPECT_EQ(EAGAIN, errno);
	close(nfd);
	close(c.region);
}

TEST_HARNESS_MAIN
