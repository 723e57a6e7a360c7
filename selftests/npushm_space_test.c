// SPDX-License-Identifier: GPL-2.0-only
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * npushm_space_test.c - spaces (NPUSHM_IOC_SPACE): a peer holding the
 * file reads and writes exactly the granted ranges of its owner's memory,
 * in one copy, as another uid and under a seccomp filter that refuses
 * process_vm_readv(), where cross-memory attach fails; nothing outside a
 * grant, nothing after revoke, nothing after the owner's exit or execve,
 * never stale pages after an unmap; only the owner grants and revokes;
 * every field and limit is checked; accesses race unmaps and revokes.
 */
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>

#include "npushm_fixture.h"

#define NOBODY 65534

static int sp_open(int dev)
{
	struct npushm_space_open o = { 0 };
	long ret = npu_ioctl(dev, NPUSHM_IOC_SPACE, &o);

	return ret ? (int)ret : o.fd;
}

static int sp_grant(int sp, const void *start, size_t len, uint32_t flags,
		    uint64_t *id)
{
	struct npushm_space_grant_req g = {
		.start = (uintptr_t)start, .len = len, .flags = flags,
	};
	long ret = npu_ioctl(sp, NPUSHM_IOC_SPACE_GRANT, &g);

	if (!ret && id)
		*id = g.id;
	return (int)ret;
}

static int sp_revoke(int sp, uint64_t id)
{
	struct npushm_space_revoke r = { .id = id };

	return (int)npu_ioctl(sp, NPUSHM_IOC_SPACE_REVOKE, &r);
}

/* pread() on a space: bytes read or -errno. */
static ssize_t sp_read(int sp, void *dst, size_t len, const void *addr)
{
	ssize_t n = pread(sp, dst, len, (off_t)(uintptr_t)addr);

	return n < 0 ? -errno : n;
}

static ssize_t sp_write(int sp, const void *src, size_t len, void *addr)
{
	ssize_t n = pwrite(sp, src, len, (off_t)(uintptr_t)addr);

	return n < 0 ? -errno : n;
}

/* Byte @i of a buffer filled with @seed: differs between pages, so a page
 * copied to the wrong place shows. */
static unsigned char pattern(size_t i, unsigned int seed)
{
	return (unsigned char)(i * 131 + (i >> 12) * 7 + seed);
}

static void fill(unsigned char *p, size_t len, unsigned int seed)
{
	for (size_t i = 0; i < len; i++)
		p[i] = pattern(i, seed);
}

/* A seccomp filter refusing process_vm_readv/writev with EPERM. */
static int block_cma(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_process_vm_readv, 2, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_process_vm_writev, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
	};
	struct sock_fprog prog = { .len = sizeof(f) / sizeof(f[0]), .filter = f };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return -1;
	return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog);
}

TEST_F(npushm, space_is_advertised_and_opens_read_write)
{
	struct npushm_space_open o = { .flags = 1 };
	struct npushm_query q;
	int sp;

	EXPECT_TRUE(self->q0.features & NPUSHM_FEAT_SPACE);
	EXPECT_EQ(-EINVAL, npu_ioctl(self->dev, NPUSHM_IOC_SPACE, &o));
	o.flags = 1u << 31;
	EXPECT_EQ(-EINVAL, npu_ioctl(self->dev, NPUSHM_IOC_SPACE, &o));
	sp = sp_open(self->dev);
	ASSERT_LE(0, sp);
	EXPECT_EQ(FD_CLOEXEC, fcntl(sp, F_GETFD) & FD_CLOEXEC);
	EXPECT_EQ(O_RDWR, fcntl(sp, F_GETFL) & O_ACCMODE);
	/* Each file takes only its own ioctls. */
	EXPECT_EQ(-ENOTTY, npu_ioctl(sp, NPUSHM_IOC_SPACE, &o));
	EXPECT_EQ(-ENOTTY, npu_ioctl(sp, NPUSHM_IOC_QUERY, &q));
	EXPECT_EQ(-ENOTTY, sp_revoke(self->dev, 1));
	close(sp);
}

TEST_F(npushm, space_grant_checks_every_field)
{
	struct npushm_space_grant_req g = { .len = 4096, .flags = NPUSHM_GRANT_READ };
	static char buf[4096];
	int sp = sp_open(self->dev);

	ASSERT_LE(0, sp);
	g.start = (uintptr_t)buf;
	g.flags = 0;
	EXPECT_EQ(-EINVAL, npu_ioctl(sp, NPUSHM_IOC_SPACE_GRANT, &g));
	g.flags = NPUSHM_GRANT_ALL + 1;
	EXPECT_EQ(-EINVAL, npu_ioctl(sp, NPUSHM_IOC_SPACE_GRANT, &g));
	g.flags = NPUSHM_GRANT_READ;
	g.reserved = 1;
	EXPECT_EQ(-EINVAL, npu_ioctl(sp, NPUSHM_IOC_SPACE_GRANT, &g));
	g.reserved = 0;
	g.len = 0;
	EXPECT_EQ(-EINVAL, npu_ioctl(sp, NPUSHM_IOC_SPACE_GRANT, &g));
	g.len = UINT64_MAX;
	EXPECT_EQ(-EINVAL, npu_ioctl(sp, NPUSHM_IOC_SPACE_GRANT, &g));
	g.start = 1ULL << 63;
	g.len = 4096;
	EXPECT_EQ(-EINVAL, npu_ioctl(sp, NPUSHM_IOC_SPACE_GRANT, &g));
	EXPECT_EQ(-ENOENT, sp_revoke(sp, 0));
	EXPECT_EQ(-ENOENT, sp_revoke(sp, 1));
	EXPECT_EQ(-ENOENT, sp_revoke(sp, UINT64_MAX));
	/* Ids start at 1 and are never reused. */
	uint64_t a = 0, b = 0;

	EXPECT_EQ(0, sp_grant(sp, buf, sizeof(buf), NPUSHM_GRANT_READ, &a));
	EXPECT_EQ(1, a);
	EXPECT_EQ(0, sp_revoke(sp, a));
	EXPECT_EQ(-ENOENT, sp_revoke(sp, a));
	EXPECT_EQ(0, sp_grant(sp, buf, sizeof(buf), NPUSHM_GRANT_READ, &b));
	EXPECT_EQ(2, b);
	close(sp);
}

TEST_F(npushm, space_holds_at_most_its_grants)
{
	static char buf[64];
	uint64_t id = 0;
	int sp = sp_open(self->dev);

	ASSERT_LE(0, sp);
	for (int i = 0; i < NPUSHM_SPACE_MAX_GRANTS; i++)
		ASSERT_EQ(0, sp_grant(sp, buf + i % 64, 1, NPUSHM_GRANT_READ, &id));
	EXPECT_EQ(-ENOSPC, sp_grant(sp, buf, 1, NPUSHM_GRANT_READ, NULL));
	EXPECT_EQ(0, sp_revoke(sp, id));
	EXPECT_EQ(0, sp_grant(sp, buf, 1, NPUSHM_GRANT_READ, NULL));
	close(sp);
}

/* What the peer child checks; each failed check exits with its number. */
struct peer_case {
	int sp;
	pid_t owner;
	unsigned char *buf;	/* the owner's buffer (same address in the child) */
	size_t len;
	size_t grant_off, grant_len;
};

static int peer_reads_as_nobody(void *arg)
{
	struct peer_case *c = arg;
	size_t n = c->grant_len;
	unsigned char *dst = malloc(n + 2);
	struct iovec l = { .iov_base = dst, .iov_len = 16 };
	struct iovec r = { .iov_base = c->buf + c->grant_off, .iov_len = 16 };
	const unsigned char *g = c->buf + c->grant_off;

	if (!dst)
		return 1;
	if (block_cma())
		return 2;
	/* Cross-memory attach is refused here ... */
	if (syscall(__NR_process_vm_readv, c->owner, &l, 1, &r, 1, 0) != -1 ||
	    errno != EPERM)
		return 3;
	/* ... the space reads exactly the granted bytes, */
	if (sp_read(c->sp, dst, n, g) != (ssize_t)n)
		return 4;
	for (size_t i = 0; i < n; i++)
		if (dst[i] != pattern(c->grant_off + i, 7))
			return 5;
	/* preadv across several buffers too, */
	struct iovec v[3] = {
		{ dst, 1 }, { dst + 1, n / 2 }, { dst + 1 + n / 2, n - 1 - n / 2 },
	};
	memset(dst, 0, n);
	if (preadv(c->sp, v, 3, (off_t)(uintptr_t)g) != (ssize_t)n)
		return 6;
	for (size_t i = 0; i < n; i++)
		if (dst[i] != pattern(c->grant_off + i, 7))
			return 6;
	/* ... and not one byte outside the grant, */
	if (sp_read(c->sp, dst, 1, g - 1) != -EACCES)
		return 7;
	if (sp_read(c->sp, dst, 1, g + n) != -EACCES)
		return 8;
	if (sp_read(c->sp, dst, n + 1, g) != -EACCES)
		return 9;
	/* nor a write through a read-only grant, nor a grant of its own. */
	if (sp_write(c->sp, dst, 1, (void *)g) != -EACCES)
		return 10;
	if (sp_grant(c->sp, g, 1, NPUSHM_GRANT_READ, NULL) != -EPERM)
		return 11;
	if (sp_revoke(c->sp, 1) != -EPERM)
		return 12;
	/* read() uses and advances the file position. */
	if (lseek(c->sp, (off_t)(uintptr_t)g, SEEK_SET) != (off_t)(uintptr_t)g ||
	    read(c->sp, dst, 2) != 2 || lseek(c->sp, 0, SEEK_CUR) != (off_t)(uintptr_t)g + 2)
		return 13;
	free(dst);
	return 0;
}

TEST_F(npushm, peer_reads_granted_bytes_as_another_uid_under_seccomp)
{
	struct peer_case c = { .len = (5 << 20) + 123 };
	uint64_t id;

	c.buf = malloc(c.len);
	ASSERT_NE(NULL, c.buf);
	fill(c.buf, c.len, 7);
	/* Odd start, spans more than one pinned batch of pages (2 MiB). */
	c.grant_off = 4093;
	c.grant_len = (4 << 20) + 77;
	c.sp = sp_open(self->dev);
	ASSERT_LE(0, c.sp);
	c.owner = getpid();
	ASSERT_EQ(0, sp_grant(c.sp, c.buf + c.grant_off, c.grant_len,
			      NPUSHM_GRANT_READ, &id));
	/* The owner may stay dumpable or not: the space does not ask. */
	ASSERT_EQ(0, prctl(PR_SET_DUMPABLE, 0));
	EXPECT_EQ(0, npu_run_as(NOBODY, NOBODY, peer_reads_as_nobody, &c));
	prctl(PR_SET_DUMPABLE, 1);
	close(c.sp);
	free(c.buf);
}

static int peer_writes(void *arg)
{
	struct peer_case *c = arg;
	unsigned char src[300];

	if (block_cma())
		return 1;
	memset(src, 0xa5, sizeof(src));
	if (sp_write(c->sp, src, sizeof(src), c->buf + 10) != (ssize_t)sizeof(src))
		return 2;
	/* Read back through the space: the owner's memory, not ours. */
	memset(src, 0, sizeof(src));
	if (sp_read(c->sp, src, 3, c->buf + 309) != 3 || src[0] != 0xa5 ||
	    src[1] != c->buf[310])
		return 3;
	/* The owner's read-only page refuses the write: nothing copied. */
	if (sp_write(c->sp, src, 1, c->buf + c->len - 1) != -EFAULT)
		return 4;
	return 0;
}

TEST_F(npushm, peer_writes_through_a_writable_grant)
{
	long pg = sysconf(_SC_PAGESIZE);
	struct peer_case c = { .len = 2 * pg };

	c.buf = mmap(NULL, c.len, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, c.buf);
	memset(c.buf, 1, c.len);
	ASSERT_EQ(0, mprotect(c.buf + pg, pg, PROT_READ));
	c.sp = sp_open(self->dev);
	ASSERT_LE(0, c.sp);
	ASSERT_EQ(0, sp_grant(c.sp, c.buf, c.len, NPUSHM_GRANT_ALL, NULL));
	EXPECT_EQ(0, npu_run_as(NOBODY, NOBODY, peer_writes, &c));
	for (int i = 0; i < 320; i++) {
		ASSERT_EQ(i >= 10 && i < 310 ? 0xa5 : 1, c.buf[i]) {
			TH_LOG("byte %d", i);
		}
	}
	EXPECT_EQ(1, c.buf[c.len - 1]);
	close(c.sp);
	munmap(c.buf, c.len);
}

TEST_F(npushm, unmapped_or_revoked_ranges_are_never_read)
{
	long pg = sysconf(_SC_PAGESIZE);
	unsigned char *p = mmap(NULL, 3 * pg, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	unsigned char dst[16];
	static unsigned char big[1 << 14];
	uint64_t id;
	int sp = sp_open(self->dev);

	ASSERT_NE(MAP_FAILED, p);
	ASSERT_LE(0, sp);
	memset(p, 9, 3 * pg);
	ASSERT_EQ(0, sp_grant(sp, p, 3 * pg, NPUSHM_GRANT_READ, &id));
	/* The owner reads its own grant too. */
	ASSERT_EQ(16, sp_read(sp, dst, 16, p + pg));
	EXPECT_EQ(9, dst[15]);
	/* A hole in the middle: up to it a short count, in it EFAULT. */
	ASSERT_EQ(0, munmap(p + pg, pg));
	EXPECT_EQ(pg, sp_read(sp, big, 2 * pg, p));
	EXPECT_EQ(-EFAULT, sp_read(sp, dst, 16, p + pg));
	/* Something new mapped there is what the space reads: never old pages. */
	ASSERT_EQ(p + pg, mmap(p + pg, pg, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0));
	ASSERT_EQ(16, sp_read(sp, dst, 16, p + pg));
	EXPECT_EQ(0, dst[0]);
	/* Revoked: refused. */
	ASSERT_EQ(0, sp_revoke(sp, id));
	EXPECT_EQ(-EACCES, sp_read(sp, dst, 16, p));
	/* RWF_NOWAIT is not supported (the file is not FMODE_NOWAIT). */
	ASSERT_EQ(0, sp_grant(sp, p, pg, NPUSHM_GRANT_READ, NULL));
	struct iovec v = { dst, 16 };

	EXPECT_EQ(-1, preadv2(sp, &v, 1, (off_t)(uintptr_t)p, RWF_NOWAIT));
	EXPECT_EQ(EOPNOTSUPP, errno);
	close(sp);
	munmap(p, 3 * pg);
}

/* The owner child: grant, send the space up, then exit or execve. */
static void owner_child(int dev, int sock, int go, bool exec)
{
	static char secret[4096];
	void *addr = secret;
	int sp = sp_open(dev);
	char c;

	memset(secret, 's', sizeof(secret));
	if (sp < 0 || sp_grant(sp, secret, sizeof(secret), NPUSHM_GRANT_ALL, NULL))
		_exit(1);
	if (write(sock, &addr, sizeof(addr)) != sizeof(addr))
		_exit(2);
	if (npu_send_fd(sock, sp))
		_exit(3);
	if (read(go, &c, 1) != 1)
		_exit(4);
	if (exec) {
		/* The new image must not be reachable through the old space. */
		if (dup2(go, 0) != 0)
			_exit(5);
		execl("/bin/sh", "sh", "-c", "read x", (char *)NULL);
		_exit(5);
	}
	_exit(0);
}

static void owner_goes(struct __test_metadata *_metadata, int dev, bool exec)
{
	int sv[2], go[2], sp, status;
	void *addr = NULL;
	char buf[8];
	pid_t pid;

	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	ASSERT_EQ(0, pipe(go));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		close(sv[0]);
		close(go[1]);
		owner_child(dev, sv[1], go[0], exec);
	}
	close(sv[1]);
	close(go[0]);
	ASSERT_EQ(sizeof(addr), read(sv[0], &addr, sizeof(addr)));
	sp = npu_recv_fd(sv[0]);
	ASSERT_LE(0, sp);
	ASSERT_EQ(8, sp_read(sp, buf, 8, addr));
	EXPECT_EQ('s', buf[7]);
	if (exec) {
		char exe[64], before[256] = "", now[256] = "";
		int i;

		/* The child execs once it reads the byte; then sh waits on the pipe. */
		snprintf(exe, sizeof(exe), "/proc/%d/exe", pid);
		ASSERT_LT(0, readlink(exe, before, sizeof(before) - 1));
		ASSERT_EQ(1, write(go[1], "x", 1));
		for (i = 0; i < 5000; i++) {
			memset(now, 0, sizeof(now));
			if (readlink(exe, now, sizeof(now) - 1) > 0 && strcmp(now, before))
				break;
			usleep(1000);
		}
		ASSERT_NE(0, strcmp(now, before)) TH_LOG("the owner never ran execve");
		/* The old address space is released just after the switch. */
		for (i = 0; i < 1000 && sp_read(sp, buf, 8, addr) != -ESRCH; i++)
			usleep(1000);
		EXPECT_EQ(-ESRCH, sp_read(sp, buf, 8, addr));
		close(go[1]);
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
	} else {
		ASSERT_EQ(1, write(go[1], "x", 1));
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
		EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status));
		EXPECT_EQ(-ESRCH, sp_read(sp, buf, 8, addr));
		EXPECT_EQ(-ESRCH, sp_write(sp, buf, 8, addr));
		close(go[1]);
	}
	close(sp);
	close(sv[0]);
}

TEST_F(npushm, owner_exit_ends_every_access)
{
	owner_goes(_metadata, self->dev, false);
}

TEST_F(npushm, owner_execve_ends_every_access)
{
	owner_goes(_metadata, self->dev, true);
}

/* Readers and writers race the owner's unmaps and revokes: no crash. */
struct race {
	int sp;
	unsigned char *p;
	size_t len;
	volatile int stop;
	long ok, refused;
};

static void *race_reader(void *arg)
{
	struct race *r = arg;
	unsigned char buf[8192];

	while (!r->stop) {
		ssize_t n = sp_read(r->sp, buf, sizeof(buf), r->p + 100);

		if (n > 0)
			__atomic_fetch_add(&r->ok, 1, __ATOMIC_RELAXED);
		else if (n == -EACCES || n == -EFAULT)
			__atomic_fetch_add(&r->refused, 1, __ATOMIC_RELAXED);
		else
			return (void *)1;
		sp_write(r->sp, buf, 64, r->p + 200);
	}
	return NULL;
}

TEST_F(npushm, accesses_race_unmaps_and_revokes)
{
	struct race r = { .len = 1 << 16 };
	pthread_t t[2];
	struct timespec t0, now;
	void *res;

	r.sp = sp_open(self->dev);
	ASSERT_LE(0, r.sp);
	r.p = mmap(NULL, r.len, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, r.p);
	for (int i = 0; i < 2; i++)
		ASSERT_EQ(0, pthread_create(&t[i], NULL, race_reader, &r));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		uint64_t id;

		ASSERT_EQ(0, sp_grant(r.sp, r.p, r.len, NPUSHM_GRANT_ALL, &id));
		memset(r.p, 3, r.len);
		madvise(r.p, r.len, MADV_DONTNEED);
		ASSERT_EQ(r.p, mmap(r.p, r.len, PROT_READ | PROT_WRITE,
				    MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0));
		ASSERT_EQ(0, sp_revoke(r.sp, id));
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while (now.tv_sec - t0.tv_sec < 2);
	r.stop = 1;
	for (int i = 0; i < 2; i++) {
		ASSERT_EQ(0, pthread_join(t[i], &res));
		EXPECT_EQ(NULL, res);
	}
	EXPECT_LT(0, r.ok + r.refused);
	munmap(r.p, r.len);
	close(r.sp);
}

TEST_HARNESS_MAIN
