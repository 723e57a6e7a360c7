// SPDX-License-Identifier: GPL-2.0-only
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * npushm_attack_test.c - the findings of the second review's attack run
 * (issue 22), each written as the attack: a user-namespace mount drawing
 * pool memory, subordinate uids escaping the per-user quotas, a size= that
 * wraps to "no limit", a reader stalled on userfaultfd holding up SEAL and
 * the owner's other calls, chown refused under a lowered capacity, a
 * WATCH_ADD whose reply cannot be written leaving its range behind,
 * remount ro with a writable dma-buf export alive, the pool's figures
 * reaching callers in other namespaces, and INFO naming a file by the name
 * someone renamed it to, and region ids counting every tenant's regions.
 *
 * Runs as root in the test VM; the attacks drop to uid 1000 and its
 * subordinate uids 100000-165535 (as /etc/subuid gives them on Debian).
 */
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <sys/fsuid.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/statfs.h>
#include <sys/syscall.h>

#include "npushm_fixture.h"
#include "npushm_watch.h"

#define MiB (1024UL * 1024)
#define USER 1000
#define SUBUID 100000
#define SUBUIDS 65536

static int write_file(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC), ret = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, s, strlen(s)) != (ssize_t)strlen(s))
		ret = -errno;
	close(fd);
	return ret;
}

/*
 * Run @fn in a child that is uid USER in a user namespace of its own,
 * created with @flags: root there, its uid 0..SUBUIDS-1 being USER's
 * subordinate uids (root writes the maps, as newuidmap would), or, when
 * @subuids is false, uid 0 being USER itself (the map any user may write).
 * The child's exit status: @fn's result, or 100+ when the set-up failed.
 */
static int in_userns(bool subuids, int flags, int (*fn)(void *), void *arg)
{
	int go[2], ready[2], status;
	char c = 0, path[64], map[64];
	pid_t pid;

	if (pipe(go) || pipe(ready))
		return -errno;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (!pid) {
		close(go[1]);
		close(ready[0]);
		if (setgroups(0, NULL) || setresgid(USER, USER, USER) ||
		    setresuid(USER, USER, USER) || prctl(PR_SET_DUMPABLE, 1))
			_exit(100);
		if (unshare(CLONE_NEWUSER | flags))
			_exit(101);
		if (!subuids) {
			snprintf(map, sizeof(map), "0 %d 1", USER);
			if (write_file("/proc/self/setgroups", "deny") ||
			    write_file("/proc/self/uid_map", map) ||
			    write_file("/proc/self/gid_map", map))
				_exit(102);
		}
		if (write(ready[1], &c, 1) != 1 || read(go[0], &c, 1) != 1 || c)
			_exit(103);
		if (setresgid(0, 0, 0) || setresuid(0, 0, 0))
			_exit(104);
		_exit(fn(arg));
	}
	close(go[0]);
	close(ready[1]);
	if (read(ready[0], &c, 1) != 1)
		c = 1;
	if (!c && subuids) {
		snprintf(map, sizeof(map), "0 %d %d", SUBUID, SUBUIDS);
		snprintf(path, sizeof(path), "/proc/%d/uid_map", pid);
		c = write_file(path, map) != 0;
		snprintf(path, sizeof(path), "/proc/%d/gid_map", pid);
		c |= write_file(path, map) != 0;
	}
	if (write(go[1], &c, 1) != 1)
		kill(pid, SIGKILL);
	close(go[1]);
	close(ready[0]);
	if (waitpid(pid, &status, 0) != pid)
		return -errno;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 200;
}

struct ns_mount {
	char dir[64];
	const char *opts;
	bool pause;		/* wait for the test after the first region */
	int sync[2];		/* child -> test: mounted */
	int resume[2];		/* test -> child: go on */
};

/* Mount an instance with @opts and size a region in it: 0, or which step failed. */
static int mount_and_size(void *arg)
{
	struct ns_mount *m = arg;
	char c = 0;
	int fd;

	if (mount("npushm", m->dir, NPUSHM_FS_TYPE, 0, m->opts))
		return errno == EPERM ? 10 : 11;
	fd = open(m->dir, O_RDWR | O_TMPFILE, 0600);
	if (fd < 0)
		return 12;
	if (ftruncate(fd, MiB))
		return 13;
	close(fd);
	if (!m->pause)
		return 0;
	fd = open(m->dir, O_RDWR | O_TMPFILE, 0600);
	if (fd < 0)
		return 14;
	/* The test turns userns_mounts off meanwhile. */
	if (write(m->sync[1], &c, 1) != 1 || read(m->resume[0], &c, 1) != 1)
		return 15;
	if (!ftruncate(fd, MiB))
		return 16;
	return errno == EPERM ? 0 : 17;
}

static int mount_opts(void *arg)
{
	struct ns_mount *m = arg;

	if (!mount("npushm", m->dir, NPUSHM_FS_TYPE, 0, m->opts))
		return 20;
	return errno;
}

/*
 * Attack: a user who may not open /dev/npushm (0660 root:root) ran
 * unshare -Urm; mount -t npushm, and sized regions of unswappable pool
 * memory there, with nr_inodes=0,size=0 lifting the instance's limits.
 * Mounting in a user namespace is now off unless the module parameter
 * userns_mounts allows it; such an instance sizes regions only while it
 * does, and may not lift nr_inodes.
 */
TEST_F(npushm, userns_mount_draws_no_pool_memory)
{
	unsigned long long saved = npu_param_get("userns_mounts");
	struct ns_mount m = { .opts = NULL };

	ASSERT_EQ(0, pipe(m.sync));
	ASSERT_EQ(0, pipe(m.resume));
	strcpy(m.dir, "/tmp/npushm-userns.XXXXXX");
	ASSERT_NE(NULL, mkdtemp(m.dir));
	ASSERT_EQ(0, chmod(m.dir, 0777));
	EXPECT_EQ(0, saved);	/* off by default */

	/* Off: the mount itself is refused. */
	EXPECT_EQ(10, in_userns(false, CLONE_NEWNS, mount_and_size, &m));

	/* On: no nr_inodes=0; a region is sized, and no more once it is off. */
	ASSERT_EQ(0, npu_param_set("userns_mounts", "1"));
	m.opts = "nr_inodes=0";
	EXPECT_EQ(EINVAL, in_userns(false, CLONE_NEWNS, mount_opts, &m));
	m.opts = "size=0,nr_inodes=64";
	m.pause = true;
	{
		char c;
		pid_t pid = fork();
		int status;

		ASSERT_LE(0, pid);
		if (!pid)
			_exit(in_userns(false, CLONE_NEWNS, mount_and_size, &m));
		ASSERT_EQ(1, read(m.sync[0], &c, 1));	/* mounted, one region sized */
		EXPECT_EQ(0, npu_param_set("userns_mounts", "0"));
		ASSERT_EQ(1, write(m.resume[1], "", 1));
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
		EXPECT_EQ(0, WEXITSTATUS(status));
	}
	EXPECT_EQ(0, npu_param_set_u64("userns_mounts", saved));
	EXPECT_EQ(self->q0.in_use, npu_wait_in_use(self->dev, self->q0.in_use, 5000));
	rmdir(m.dir);
}

struct subuid_attack {
	int root;		/* the test's instance, 1777 */
	uint64_t size;
	int sized;		/* regions sized */
	int refused;		/* EDQUOT */
};

/* Size @fd to @a->size, counting the outcome: 0, or -1 for an error other than EDQUOT. */
static int size_counted(struct subuid_attack *a, int fd)
{
	if (!ftruncate(fd, (off_t)a->size))
		a->sized++;
	else if (errno == EDQUOT)
		a->refused++;
	else
		return -1;
	return 0;
}

/*
 * As root of the user namespace: a 0666 region per subordinate uid, each
 * sized here when @a->size is not 0. Return: sized | refused << 4.
 */
static int make_as_subuids(void *arg)
{
	struct subuid_attack *a = arg;
	char name[32];
	int i, fd;

	umask(0);
	for (i = 0; i < 8; i++) {
		snprintf(name, sizeof(name), "subuid.%d", i);
		setfsuid(i + 1);
		fd = openat(a->root, name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
		setfsuid(0);
		if (fd < 0)
			return 30;
		if (a->size && size_counted(a, fd))
			return 31;
		close(fd);
	}
	return a->sized | a->refused << 4;
}

/* As USER in the initial namespace: size the subordinate uids' regions. */
static int size_from_outside(void *arg)
{
	struct subuid_attack *a = arg;
	char name[32];
	int i, fd;

	for (i = 0; i < 8; i++) {
		snprintf(name, sizeof(name), "subuid.%d", i);
		fd = openat(a->root, name, O_RDWR | O_CLOEXEC);
		if (fd < 0)
			return 33;
		if (size_counted(a, fd))
			return 34;
		close(fd);
	}
	return a->sized | a->refused << 4;
}

static void unlink_subuids(int root)
{
	char name[32];
	int i;

	for (i = 0; i < 8; i++) {
		snprintf(name, sizeof(name), "subuid.%d", i);
		unlinkat(root, name, 0);
	}
}

/*
 * Attack: uid 1000 with the subordinate uids of /etc/subuid held 384 MiB
 * with uid_quota=256M, one quota per subordinate uid: regions owned by
 * them, sized inside the namespace or from outside by uid 1000. A charge
 * made from inside a user namespace now goes to its creator, whatever uid
 * it names: uid 1000 gets its quota once.
 */
TEST_F(npushm, subuids_share_their_users_quota)
{
	uint64_t quota = npu_param_get("uid_quota");
	struct subuid_attack a = { .root = self->root };
	struct npushm_region_info info;
	int fd, ret;

	ASSERT_LT(0, quota);
	ASSERT_LE(2 * quota, npu_param_get("capacity"));
	a.size = quota / 4;

	ret = in_userns(true, 0, make_as_subuids, &a);
	EXPECT_EQ(4 | 4 << 4, ret) {
		TH_LOG("sized %d regions of a quarter of the quota, %d refused",
		       ret & 15, ret >> 4);
	}
	fd = openat(self->root, "subuid.0", O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, npu_info(fd, &info));
	EXPECT_EQ((uint32_t)SUBUID + 1, info.owner_uid);
	EXPECT_EQ((uint32_t)USER, info.charged_uid);
	close(fd);
	unlink_subuids(self->root);

	a.size = 0;
	ASSERT_EQ(0, in_userns(true, 0, make_as_subuids, &a));
	a.size = quota / 4;
	ret = npu_run_as(USER, USER, size_from_outside, &a);
	EXPECT_EQ(4 | 4 << 4, ret) {
		TH_LOG("sized %d regions of a quarter of the quota, %d refused",
		       ret & 15, ret >> 4);
	}
	unlink_subuids(self->root);
}

struct subuid_watch {
	int dev;
	int added;
};

/* Two watches opened as two subordinate uids, ranges added to both. */
static int watch_as_subuids(void *arg)
{
	struct subuid_watch *s = arg;
	char *p = anon(PG);
	int w[2], i, j;

	if (!p)
		return 40;
	for (i = 0; i < 2; i++) {
		if (seteuid(i + 1))
			return 41;
		w[i] = w_open(s->dev, false);
		if (seteuid(0) || w[i] < 0)
			return 42;
	}
	for (i = 0; i < 2; i++)
		for (j = 0; j < 6; j++)
			if (w_add(w[i], p, PG, 0) > 0)
				s->added++;
	return s->added;
}

/* The same hole in watch_ranges_per_uid: one count per user. */
TEST_F(npushm, subuids_share_their_users_watch_ranges)
{
	unsigned long long saved = npu_param_get("watch_ranges_per_uid");
	struct subuid_watch s = { .dev = self->dev };

	ASSERT_EQ(0, npu_param_set("watch_ranges_per_uid", "10"));
	EXPECT_EQ(10, in_userns(true, 0, watch_as_subuids, &s));
	EXPECT_EQ(0, npu_param_set_u64("watch_ranges_per_uid", saved));
}

/*
 * Attack: size=18446744073709551615 wrapped to 0 when rounded to pages,
 * which means "no limit"; so did size=0%.
 */
TEST_F(npushm, mount_size_that_wraps_is_refused)
{
	char dir[64];

	EXPECT_EQ(-EINVAL, npu_mount(dir, "size=18446744073709551615"));
	EXPECT_EQ(-EINVAL, npu_mount(dir, "size=9223372036854775807"));
	EXPECT_EQ(-EINVAL, npu_mount(dir, "size=0%"));
	ASSERT_EQ(0, npu_mount(dir, "size=9223372036854771712"));
	EXPECT_EQ(0, npu_umount(dir));
}

struct stalled {
	int fd;
	char *buf;		/* registered with userfaultfd: never filled */
	ssize_t got;
	int rc[4];		/* write, ftruncate(0), fallocate, seal */
	volatile int done;
};

static void *stalled_read(void *arg)
{
	struct stalled *s = arg;

	s->got = read(s->fd, s->buf, PG);
	return NULL;
}

static void *owner_calls(void *arg)
{
	struct stalled *s = arg;
	struct npushm_seal seal = { .seals = NPUSHM_SEAL_WRITE };

	s->rc[0] = pwrite(s->fd, "x", 1, 0) == 1 ? 0 : -errno;
	s->rc[1] = ftruncate(s->fd, 0) ? -errno : 0;
	s->rc[2] = fallocate(s->fd, 0, 0, PG) ? -errno : 0;
	s->rc[3] = (int)npu_ioctl(s->fd, NPUSHM_IOC_SEAL, &seal);
	s->done = 1;
	return NULL;
}

/*
 * Attack: a reader copying into memory whose fault never completes
 * (userfaultfd here; FUSE for an unprivileged reader) held the inode lock,
 * and the owner's SEAL, ftruncate, fallocate and writes waited behind it
 * for ever. Now they return at once: the write lands, the size cannot go
 * back to 0 under the reader (EBUSY after the pin wait), the seal is set.
 */
TEST_F_TIMEOUT(npushm, stalled_reader_holds_up_nothing, 60)
{
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg = { .mode = UFFDIO_REGISTER_MODE_MISSING };
	struct uffdio_zeropage zero = { .mode = 0 };
	struct pollfd pfd = { .events = POLLIN };
	struct stalled s = { 0 };
	struct uffd_msg msg;
	pthread_t reader, owner;
	int uffd, i;

	uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (uffd < 0)
		SKIP(return, "userfaultfd: %s", strerror(errno));
	ASSERT_EQ(0, ioctl(uffd, UFFDIO_API, &api));
	s.buf = mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, s.buf);
	reg.range.start = (uintptr_t)s.buf;
	reg.range.len = PG;
	ASSERT_EQ(0, ioctl(uffd, UFFDIO_REGISTER, &reg));
	s.fd = npu_create(self->root, "stalled", PG, 0600);
	ASSERT_LE(0, s.fd);

	ASSERT_EQ(0, pthread_create(&reader, NULL, stalled_read, &s));
	pfd.fd = uffd;
	ASSERT_EQ(1, poll(&pfd, 1, 10000));	/* the reader is stuck in its copy */
	ASSERT_EQ(sizeof(msg), read(uffd, &msg, sizeof(msg)));
	ASSERT_EQ(UFFD_EVENT_PAGEFAULT, msg.event);

	ASSERT_EQ(0, pthread_create(&owner, NULL, owner_calls, &s));
	for (i = 0; i < 1000 && !s.done; i++)
		usleep(10000);
	EXPECT_TRUE(s.done) {
		TH_LOG("the owner's calls are still waiting behind the reader");
	}
	/* Let the reader go (and the owner's calls, if they were stuck). */
	zero.range.start = (uintptr_t)s.buf;
	zero.range.len = PG;
	EXPECT_EQ(0, ioctl(uffd, UFFDIO_ZEROPAGE, &zero));
	pthread_join(owner, NULL);
	pthread_join(reader, NULL);
	EXPECT_EQ(0, s.rc[0]);
	EXPECT_EQ(-EBUSY, s.rc[1]);
	EXPECT_EQ(0, s.rc[2]);
	EXPECT_EQ(0, s.rc[3]);
	EXPECT_EQ((ssize_t)PG, s.got);
	close(s.fd);
	EXPECT_EQ(0, npu_unlink(self->root, "stalled"));
	munmap(s.buf, PG);
	close(uffd);
}

/*
 * Attack: with the capacity lowered below what is in use, chown of a sized
 * region failed with ENOSPC, although a transfer does not change the
 * pool's total; only the new owner's quota applies.
 */
TEST_F(npushm, chown_under_lowered_capacity)
{
	unsigned long long cap = npu_param_get("capacity");
	struct npushm_region_info info;
	int fd = npu_create(self->root, "chown.low", 8 * MiB, 0600);

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, npu_param_set("capacity", "4M"));
	EXPECT_EQ(0, fchown(fd, USER, USER)) {
		TH_LOG("chown: %s", strerror(errno));
	}
	EXPECT_EQ(0, npu_info(fd, &info));
	EXPECT_EQ((uint32_t)USER, info.charged_uid);
	EXPECT_EQ(0, npu_param_set_u64("capacity", cap));
	close(fd);
	EXPECT_EQ(0, npu_unlink(self->root, "chown.low"));
}

/*
 * Attack: a WATCH_ADD whose reply could not be written (a read-only
 * argument) still inserted the range and charged it: the caller never
 * learnt its id, yet it fired events and counted against the uid.
 */
TEST_F(npushm, watch_add_without_reply_leaves_nothing)
{
	unsigned long long saved = npu_param_get("watch_ranges_per_uid");
	struct npushm_watch_range *req;
	struct npushm_watch_event ev[2];
	char *p = anon(PG);
	int w = w_open(self->dev, false);

	ASSERT_NE(NULL, p);
	ASSERT_LE(0, w);
	req = mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, req);
	req->start = (uintptr_t)p;
	req->len = PG;
	req->cookie = 7;
	ASSERT_EQ(0, mprotect(req, PG, PROT_READ));
	ASSERT_EQ(0, npu_param_set("watch_ranges_per_uid", "1"));
	EXPECT_EQ(-EFAULT, npu_ioctl(w, NPUSHM_IOC_WATCH_ADD, req));
	/* nothing charged: the one range allowed can still be added */
	EXPECT_LT(0, w_add(w, p + PG / 2, 1, 8));
	munmap(p, PG);
	/* only the range whose id the caller knows fires */
	EXPECT_EQ(1, w_read(w, ev, 2));
	EXPECT_EQ(8, ev[0].cookie);
	EXPECT_EQ(0, npu_param_set_u64("watch_ranges_per_uid", saved));
	munmap(req, PG);
	close(w);
}

/*
 * Attack: remount ro succeeded with a writable dma-buf export alive, and
 * the export stayed mappable writable: an instance both read-only and
 * written. The export holds no write access to the mount (the VFS's check
 * cannot see it): the remount is refused while it exists.
 */
TEST_F(npushm, remount_ro_refused_while_a_writable_export_exists)
{
	int fd = npu_create(self->root, "export.rw", MiB, 0600), buf;
	void *p;

	ASSERT_LE(0, fd);
	buf = npu_export(fd, NPUSHM_EXPORT_RDWR);
	ASSERT_LE(0, buf);
	close(fd);
	EXPECT_EQ(-1, mount(NULL, self->dir, NULL, MS_REMOUNT | MS_RDONLY, NULL));
	EXPECT_EQ(EBUSY, errno);
	p = mmap(NULL, MiB, PROT_READ | PROT_WRITE, MAP_SHARED, buf, 0);
	ASSERT_NE(MAP_FAILED, p);
	memset(p, 1, PG);
	munmap(p, MiB);
	close(buf);
	/* nothing writes any more: read-only now, and no writable file can be had */
	EXPECT_EQ(0, mount(NULL, self->dir, NULL, MS_REMOUNT | MS_RDONLY, NULL));
	EXPECT_EQ(-EROFS, npu_open(self->root, "export.rw", O_RDWR));
	fd = npu_open(self->root, "export.rw", O_RDONLY);
	ASSERT_LE(0, fd);
	EXPECT_EQ(-EACCES, npu_export(fd, NPUSHM_EXPORT_RDWR));
	close(fd);
	EXPECT_EQ(0, mount(NULL, self->dir, NULL, MS_REMOUNT, NULL));
	EXPECT_EQ(0, npu_unlink(self->root, "export.rw"));
}

struct figures {
	int dev;
	const char *dir;
	uint64_t capacity;
	uint64_t instance_used;
};

/* QUERY and statfs as seen from here: only the caller's own usage. */
static int figures_are_own(void *arg)
{
	struct figures *f = arg;
	struct npushm_query q;
	struct statfs st;

	if (npu_query(f->dev, &q))
		return 50;
	if (q.in_use || q.regions || q.orphan_pinned || q.uid_in_use ||
	    q.capacity != f->capacity)
		return 51;
	if (statfs(f->dir, &st))
		return 52;
	if ((uint64_t)st.f_bfree * st.f_bsize != f->capacity - f->instance_used)
		return 53;
	return 0;
}

/* As uid USER in a network namespace root made for it. */
static int in_netns(int (*fn)(void *), void *arg)
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return -errno;
	if (!pid) {
		if (unshare(CLONE_NEWNET) || setgroups(0, NULL) ||
		    setresgid(USER, USER, USER) || setresuid(USER, USER, USER))
			_exit(100);
		_exit(fn(arg));
	}
	if (waitpid(pid, &status, 0) != pid)
		return -errno;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 200;
}

/*
 * Attack: the pool's bytes in use, region count, peak, failures and
 * orphans (QUERY, netlink statistics, statfs's free blocks) told a caller
 * in any user or network namespace what every other tenant held: a side
 * channel on their model loads. Outside the initial namespaces (without
 * CAP_SYS_ADMIN there) a caller gets its own usage in their place, the
 * capacity, and the instance's own figures in statfs.
 */
TEST_F(npushm, pool_figures_stay_in_the_initial_namespaces)
{
	struct figures f = { .dev = self->dev, .dir = self->dir };
	struct npushm_query q;
	int fd = npu_create(self->root, "tenant.a", 4 * MiB, 0600);
	int anon = npu_alloc(self->dev, 8 * MiB);

	ASSERT_LE(0, fd);
	ASSERT_LE(0, anon);
	ASSERT_EQ(0, npu_query(self->dev, &q));
	ASSERT_LE(12 * MiB, q.in_use);
	f.capacity = q.capacity;
	f.instance_used = 4 * MiB;
	EXPECT_EQ(0, in_userns(false, 0, figures_are_own, &f));
	EXPECT_EQ(0, in_netns(figures_are_own, &f));
	/* here, in the initial namespaces, the pool's */
	EXPECT_EQ(51, npu_run_as(USER, USER, figures_are_own, &f));
	close(anon);
	close(fd);
	EXPECT_EQ(0, npu_unlink(self->root, "tenant.a"));
}

/*
 * Attack: a file opened by one name reported, through NPUSHM_IOC_INFO,
 * the name someone later renamed it to, in a directory its holder cannot
 * search (docs promise never a name the caller did not use). INFO now
 * names the file only while it is still linked by the name it was opened
 * by, in the same directory.
 */
TEST_F(npushm, info_after_rename_names_nothing_new)
{
	int fd = npu_create(self->root, "shared", PG, 0644), ready[2], go[2], status;
	struct npushm_region_info info;
	char c = 0;
	pid_t pid;

	ASSERT_LE(0, fd);
	close(fd);
	ASSERT_EQ(0, mkdirat(self->root, "hidden", 0700));
	ASSERT_EQ(0, pipe(ready));
	ASSERT_EQ(0, pipe(go));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		struct npushm_region_info in;
		int h;

		if (setgroups(0, NULL) || setresgid(USER, USER, USER) ||
		    setresuid(USER, USER, USER))
			_exit(1);
		h = npu_open(self->root, "shared", O_RDONLY);
		if (h < 0 || npu_info(h, &in) || strcmp(in.name, "shared"))
			_exit(2);
		if (write(ready[1], &c, 1) != 1 || read(go[0], &c, 1) != 1)
			_exit(3);
		if (npu_info(h, &in))
			_exit(4);
		_exit(in.name[0] ? 5 : 0);
	}
	ASSERT_EQ(1, read(ready[0], &c, 1));
	ASSERT_EQ(0, renameat(self->root, "shared", self->root, "hidden/secret.name"));
	ASSERT_EQ(1, write(go[1], &c, 1));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, WEXITSTATUS(status));
	/* Renamed within its directory: not the name it was opened by either. */
	ASSERT_EQ(0, renameat(self->root, "hidden/secret.name", self->root, "first"));
	fd = npu_open(self->root, "first", O_RDONLY);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, renameat(self->root, "first", self->root, "second"));
	ASSERT_EQ(0, npu_info(fd, &info));
	EXPECT_STREQ("", info.name);
	ASSERT_EQ(0, renameat(self->root, "second", self->root, "first"));
	ASSERT_EQ(0, npu_info(fd, &info));
	EXPECT_STREQ("first", info.name);
	close(fd);
	EXPECT_EQ(0, npu_unlink(self->root, "first"));
	EXPECT_EQ(0, unlinkat(self->root, "hidden", AT_REMOVEDIR));
}

#define ID_ROUNDS 9

/* The other tenant: its own mount namespace and instance, ID_ROUNDS regions. */
static int tenant_ids(int step[2], int done[2], uint64_t *ids)
{
	char dir[64], c;
	int i, fd;

	if (npu_private_mounts() || npu_mount(dir, NULL))
		return 1;
	for (i = 0; i < ID_ROUNDS; i++) {
		if (i && read(step[0], &c, 1) != 1)
			return 2;
		fd = open(dir, O_RDWR | O_TMPFILE, 0600);
		ids[i] = fd < 0 ? 0 : npu_region_id(fd);
		if (!ids[i])
			return 3;
		close(fd);
		if (write(done[1], &c, 1) != 1)
			return 4;
	}
	return npu_umount(dir) ? 5 : 0;
}

/*
 * Attack: region ids (inode numbers) came from one counter for every
 * instance, so a tenant making two regions learnt, from their difference,
 * how many inodes everyone else had made meanwhile (another tenant's model
 * loads, as regions). Between the other tenant's regions k and k+1, this
 * one makes 8k regions and anonymous regions; the other's ids must not
 * tell: no difference counts them, the ids are not in creation order, and
 * none is near another.
 */
TEST_F(npushm, region_ids_tell_nothing_of_other_tenants)
{
	uint64_t *ids = mmap(NULL, ID_ROUNDS * sizeof(*ids), PROT_READ | PROT_WRITE,
			     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	int step[2], done[2], i, k, status, fds[4 * ID_ROUNDS * ID_ROUNDS], n = 0;
	bool ordered = true;
	char c = 0;
	pid_t pid;

	ASSERT_NE(MAP_FAILED, ids);
	ASSERT_EQ(0, pipe(step));
	ASSERT_EQ(0, pipe(done));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid)
		_exit(tenant_ids(step, done, ids));
	for (i = 0; i < ID_ROUNDS; i++) {
		ASSERT_EQ(1, read(done[0], &c, 1));
		if (i == ID_ROUNDS - 1)
			break;
		for (k = 0; k < 8 * i; k++, n++) {
			fds[n] = k % 2 ? npu_alloc(self->dev, PG) :
				 npu_tmpfile(self->root, 0, 0600);
			ASSERT_LE(0, fds[n]);
		}
		ASSERT_EQ(1, write(step[1], &c, 1));
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_EQ(0, WEXITSTATUS(status));
	for (i = 1; i < ID_ROUNDS; i++) {
		uint64_t diff = ids[i] - ids[i - 1];
		uint64_t dist = ids[i] > ids[i - 1] ? diff : ids[i - 1] - ids[i];

		/* 8(i-1) of this tenant's, plus its own one */
		EXPECT_NE(8 * (uint64_t)(i - 1) + 1, diff) {
			TH_LOG("ids %llu then %llu count the %d regions made in between",
			       (unsigned long long)ids[i - 1],
			       (unsigned long long)ids[i], 8 * (i - 1));
		}
		EXPECT_LT(1ULL << 20, dist);
		ordered &= ids[i] > ids[i - 1];
	}
	/* 9 random ids come out in creation order once in 9! = 362880 */
	EXPECT_FALSE(ordered);
	while (n--)
		close(fds[n]);
	munmap(ids, ID_ROUNDS * sizeof(*ids));
}

TEST_HARNESS_MAIN
