// SPDX-License-Identifier: GPL-2.0-only
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * npushm_alloc_test.c - the pool: query, anonymous regions from /dev/npushm
 * and region files sized by ftruncate, capacity and per-uid quota, module
 * parameters, and the extensible-ioctl rules (short, long and garbage
 * structs, unknown flags, bad pointers and descriptors). Also the attacks
 * on sizing: parameters that wrap, absurd sizes, allocations that would
 * have the OOM killer shoot bystanders.
 */
#include <signal.h>
#include <sys/mman.h>

#include "npushm_fixture.h"

#define MiB (1024ULL * 1024)

TEST_F(npushm, query_reports_pool)
{
	struct npushm_query q;

	ASSERT_EQ(0, npu_query(self->dev, &q));
	EXPECT_EQ(NPUSHM_ABI_VERSION, q.abi_version);
	EXPECT_EQ(4096, q.page_size);
	EXPECT_EQ(2 * MiB, q.chunk_size);
	EXPECT_EQ(npu_param_get("capacity"), q.capacity);
	EXPECT_EQ(npu_param_get("uid_quota"), q.uid_quota);
	EXPECT_LE(q.in_use, q.capacity);
	EXPECT_EQ(0, q.orphan_pinned);
	EXPECT_EQ(NPUSHM_FEAT_FS | NPUSHM_FEAT_SEAL | NPUSHM_FEAT_DMABUF |
		  NPUSHM_FEAT_GUP | NPUSHM_FEAT_NETLINK | NPUSHM_FEAT_PINS |
		  NPUSHM_FEAT_WATCH | NPUSHM_FEAT_SPACE, q.features);
}

TEST_F(npushm, alloc_counts_in_use)
{
	struct npushm_query q;
	int fd = npu_alloc(self->dev, 3 * MiB);
	int f2 = npu_create(self->root, "counted", MiB, 0600);

	ASSERT_LE(0, fd);
	ASSERT_LE(0, f2);
	ASSERT_EQ(0, npu_query(self->dev, &q));
	EXPECT_EQ(self->q0.in_use + 4 * MiB, q.in_use);
	EXPECT_EQ(self->q0.regions + 2, q.regions);
	EXPECT_EQ(self->q0.uid_in_use + 4 * MiB, q.uid_in_use);
	/* An unsized file holds no pool memory. */
	close(f2);
	ASSERT_EQ(0, npu_unlink(self->root, "counted"));
	f2 = npu_create(self->root, "unsized", 0, 0600);
	ASSERT_LE(0, f2);
	EXPECT_EQ(self->q0.in_use + 3 * MiB, npu_in_use(self->dev));
	close(f2);
	close(fd);
}

TEST_F(npushm, alloc_rounds_up_and_zeroes)
{
	static const uint64_t sizes[] = { 1, 4095, 4096, 4097, 5000, 2 * MiB + 1 };
	unsigned int i;

	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		struct npushm_alloc a = { .size = sizes[i] };
		uint64_t want = (sizes[i] + 4095) & ~4095ULL, j;
		unsigned char *p;
		struct stat st;
		int f;

		ASSERT_EQ(0, npu_ioctl(self->dev, NPUSHM_IOC_ALLOC, &a));
		EXPECT_EQ(want, a.size);
		EXPECT_NE(0, a.id);
		/* A file sized by ftruncate rounds the same way. */
		f = npu_tmpfile(self->root, sizes[i], 0600);
		ASSERT_LE(0, f);
		ASSERT_EQ(0, fstat(f, &st));
		EXPECT_EQ(want, st.st_size);
		close(f);
		p = mmap(NULL, want, PROT_READ | PROT_WRITE, MAP_SHARED, a.fd, 0);
		ASSERT_NE(MAP_FAILED, p);
		for (j = 0; j < want; j++)
			if (p[j])
				break;
		EXPECT_EQ(want, j);
		memset(p, 0xa5, want);
		munmap(p, want);
		close(a.fd);
	}
	/* Memory that came back from a dirtied region is zeroed again. */
	for (i = 0; i < 4; i++) {
		int fd = npu_tmpfile(self->root, 2 * MiB, 0600);
		uint64_t *w;
		size_t j;

		ASSERT_LE(0, fd);
		w = mmap(NULL, 2 * MiB, PROT_READ, MAP_SHARED, fd, 0);
		ASSERT_NE(MAP_FAILED, w);
		for (j = 0; j < 2 * MiB / 8; j++)
			ASSERT_EQ(0, w[j]);
		munmap(w, 2 * MiB);
		close(fd);
	}
}

TEST_F(npushm, alloc_handle_is_cloexec_and_unique)
{
	struct npushm_alloc a = { .size = 4096 }, b = { .size = 4096 };
	struct npushm_region_info info;
	char link[256], path[64];

	ASSERT_EQ(0, npu_ioctl(self->dev, NPUSHM_IOC_ALLOC, &a));
	ASSERT_EQ(0, npu_ioctl(self->dev, NPUSHM_IOC_ALLOC, &b));
	EXPECT_EQ(FD_CLOEXEC, fcntl(a.fd, F_GETFD) & FD_CLOEXEC);
	EXPECT_EQ(O_RDWR, fcntl(a.fd, F_GETFL) & O_ACCMODE);
	EXPECT_NE(a.id, b.id);
	EXPECT_NE(a.fd, b.fd);
	ASSERT_EQ(0, npu_info(a.fd, &info));
	EXPECT_EQ(a.id, info.id);
	EXPECT_EQ(NPUSHM_INFO_ANONYMOUS | NPUSHM_INFO_WRITABLE, info.flags);
	EXPECT_EQ(0600, info.mode);
	EXPECT_EQ(0, info.names);
	/* Anonymous: it cannot be given a name in any instance. */
	EXPECT_EQ(-EXDEV, npu_link(a.fd, self->root, "anon"));
	snprintf(path, sizeof(path), "/proc/self/fd/%d", a.fd);
	ASSERT_LT(0, readlink(path, link, sizeof(link) - 1));
	close(a.fd);
	close(b.fd);
}

TEST_F(npushm, alloc_rejects_bad_sizes)
{
	int fd = npu_tmpfile(self->root, 0, 0600);

	ASSERT_LE(0, fd);
	EXPECT_EQ(-EINVAL, npu_alloc(self->dev, 0));
	EXPECT_EQ(-EFBIG, npu_alloc(self->dev, UINT64_MAX));
	EXPECT_EQ(-EFBIG, npu_alloc(self->dev, UINT64_MAX - 4094));
	EXPECT_EQ(-EFBIG, npu_alloc(self->dev, 1ULL << 63));
	EXPECT_EQ(-ENOSPC, npu_alloc(self->dev, 1ULL << 52));
	EXPECT_EQ(-ENOSPC, npu_alloc(self->dev, self->q0.capacity + 1));
	EXPECT_EQ(-EINVAL, npu_size(fd, -1));
	EXPECT_EQ(-EFBIG, npu_size(fd, INT64_MAX));
	EXPECT_EQ(-ENOSPC, npu_size(fd, self->q0.capacity + 1));
	/* The failures left the file unsized and usable. */
	EXPECT_EQ(0, npu_size(fd, 4096));
	close(fd);
}

TEST_F(npushm, alloc_rejects_unknown_flags)
{
	unsigned int bit;

	for (bit = 0; bit < 32; bit++) {
		struct npushm_alloc a = { .size = 4096, .flags = 1U << bit };

		EXPECT_EQ(-EINVAL, npu_ioctl(self->dev, NPUSHM_IOC_ALLOC, &a));
	}
}

TEST_F(npushm, alloc_beyond_capacity_is_enospc)
{
	unsigned long long cap = npu_param_get("capacity");
	int fd, f2;

	/* Shrink the pool to what is in use plus 16 MiB. */
	ASSERT_EQ(0, npu_param_set_u64("capacity", self->q0.in_use + 16 * MiB));
	fd = npu_alloc(self->dev, 12 * MiB);
	EXPECT_LE(0, fd);
	EXPECT_EQ(-ENOSPC, npu_alloc(self->dev, 8 * MiB));
	f2 = npu_tmpfile(self->root, 0, 0600);
	EXPECT_LE(0, f2);
	EXPECT_EQ(-ENOSPC, npu_size(f2, 4 * MiB + 4096));
	EXPECT_EQ(-ENOSPC, (int)(fallocate(f2, 0, 0, 4 * MiB + 4096) ? -errno : 0));
	ASSERT_EQ(0, npu_param_set_u64("capacity", cap));
	if (fd >= 0)
		close(fd);
	close(f2);
	/* The failures left nothing behind: the full size fits again. */
	fd = npu_alloc(self->dev, 16 * MiB);
	EXPECT_LE(0, fd);
	close(fd);
}

static int alloc_as_user(void *arg)
{
	const char *dir = arg;
	int root = open(dir, O_RDONLY | O_DIRECTORY), fd1, fd2;

	if (root < 0)
		return 10;
	fd1 = npu_create(root, "quota.1", 6 * MiB, 0600);
	if (fd1 < 0)
		return 11;
	fd2 = npu_create(root, "quota.2", 4 * MiB, 0600);
	if (fd2 != -EDQUOT)
		return 12;
	close(fd1);
	if (npu_unlink(root, "quota.1"))
		return 13;
	/* Freed: the quota is available again. */
	fd2 = npu_create(root, "quota.3", 8 * MiB, 0600);
	if (fd2 < 0)
		return 14;
	close(fd2);
	return npu_unlink(root, "quota.3") ? 15 : 0;
}

TEST_F(npushm, alloc_beyond_uid_quota_is_edquot)
{
	unsigned long long quota = npu_param_get("uid_quota");

	ASSERT_EQ(0, npu_param_set("uid_quota", "8M"));
	EXPECT_EQ(8 * MiB, npu_param_get("uid_quota"));
	EXPECT_EQ(0, npu_run_as(1000, 1000, alloc_as_user, self->dir));
	ASSERT_EQ(0, npu_param_set_u64("uid_quota", quota));
}

TEST_F(npushm, param_rejects_garbage)
{
	EXPECT_EQ(-EINVAL, npu_param_set("capacity", "lots"));
	EXPECT_EQ(-EINVAL, npu_param_set("uid_quota", "12Q"));
	EXPECT_EQ(-EINVAL, npu_param_set("uid_quota", "K"));
	EXPECT_EQ(-EINVAL, npu_param_set("uid_quota", "-1"));
	EXPECT_EQ(-EINVAL, npu_param_set("uid_quota", "1MM"));
	EXPECT_EQ(-ERANGE, npu_param_set("capacity", "100P"));
}

/*
 * Attack: 16E is 2^64, which wrapped to 0 (no limit); so did 17E and any
 * value past 64 bits. Each is refused with ERANGE and the value unchanged.
 */
TEST_F(npushm, param_rejects_wrapping_values)
{
	static const char *const wrap[] = {
		"16E", "17E", "16384P", "18446744073709551616", "99999999999999999999999",
		"17179869184G",
	};
	unsigned long long cap = npu_param_get("capacity");
	unsigned long long quota = npu_param_get("uid_quota");
	unsigned int i;

	for (i = 0; i < sizeof(wrap) / sizeof(wrap[0]); i++) {
		EXPECT_EQ(-ERANGE, npu_param_set("capacity", wrap[i])) {
			TH_LOG("capacity=%s", wrap[i]);
		}
		EXPECT_EQ(-ERANGE, npu_param_set("uid_quota", wrap[i])) {
			TH_LOG("uid_quota=%s", wrap[i]);
		}
	}
	EXPECT_EQ(cap, npu_param_get("capacity"));
	EXPECT_EQ(quota, npu_param_get("uid_quota"));
	/* The largest accepted value is 4P, exactly. */
	EXPECT_EQ(0, npu_param_set("uid_quota", "4P"));
	EXPECT_EQ(1ULL << 52, npu_param_get("uid_quota"));
	EXPECT_EQ(-ERANGE, npu_param_set("uid_quota", "4503599627370497"));
	ASSERT_EQ(0, npu_param_set_u64("uid_quota", quota));
}

/*
 * Attack: with a capacity of 2 TiB, a 1 TiB region made the kernel WARN in
 * the page-array allocation (panic_on_warn ends the VM). It must fail with
 * ENOMEM and leave nothing behind.
 */
TEST_F(npushm, alloc_huge_region_fails_cleanly)
{
	unsigned long long cap = npu_param_get("capacity");
	unsigned long long quota = npu_param_get("uid_quota");
	int fd = npu_tmpfile(self->root, 0, 0600);

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, npu_param_set("capacity", "4T"));
	ASSERT_EQ(0, npu_param_set("uid_quota", "0"));
	EXPECT_EQ(-ENOMEM, npu_size(fd, 1ULL << 40));
	EXPECT_EQ(-ENOMEM, npu_alloc(self->dev, (1ULL << 40) + 4096));
	EXPECT_EQ(-ENOMEM, npu_size(fd, 3ULL << 40));
	ASSERT_EQ(0, npu_param_set_u64("capacity", cap));
	ASSERT_EQ(0, npu_param_set_u64("uid_quota", quota));
	EXPECT_EQ(self->q0.in_use, npu_in_use(self->dev));
	close(fd);
}

static int write_file(const char *path, const char *value)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC), ret = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, value, strlen(value)) < 0)
		ret = -errno;
	close(fd);
	return ret;
}

static long cgroup_oom_kills(const char *cg)
{
	char path[256], line[128];
	long n = -1;
	FILE *f;

	snprintf(path, sizeof(path), "%s/memory.events", cg);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "oom_kill %ld", &n) == 1)
			break;
	fclose(f);
	return n;
}

/*
 * Attack: an allocation larger than what the memory cgroup allows invoked
 * the OOM killer, which shot another process of the group. It must fail
 * with ENOMEM and kill nobody.
 */
TEST_F(npushm, alloc_fails_instead_of_oom_killing)
{
	const char *cg = "/sys/fs/cgroup/npushm-oom-test";
	char buf[32];
	int status, sv[2];
	pid_t bystander, pid;

	if (access("/sys/fs/cgroup/cgroup.controllers", F_OK))
		SKIP(return, "no cgroup v2 at /sys/fs/cgroup");
	write_file("/sys/fs/cgroup/cgroup.subtree_control", "+memory");
	rmdir(cg);
	ASSERT_EQ(0, mkdir(cg, 0755));
	ASSERT_EQ(0, write_file("/sys/fs/cgroup/npushm-oom-test/memory.max", "48M"));
	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM, 0, sv));

	bystander = fork();
	ASSERT_LE(0, bystander);
	if (!bystander) {
		/* Holds 16 MiB of its own in the group, then waits. */
		char *p = mmap(NULL, 16 * MiB, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);

		snprintf(buf, sizeof(buf), "%d", getpid());
		if (p == MAP_FAILED ||
		    write_file("/sys/fs/cgroup/npushm-oom-test/cgroup.procs", buf))
			_exit(1);
		memset(p, 1, 16 * MiB);
		if (write(sv[1], "r", 1) != 1)
			_exit(2);
		pause();
		_exit(0);
	}
	ASSERT_EQ(1, read(sv[0], buf, 1));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		int fd;

		snprintf(buf, sizeof(buf), "%d", getpid());
		if (write_file("/sys/fs/cgroup/npushm-oom-test/cgroup.procs", buf))
			_exit(1);
		fd = npu_tmpfile(self->root, 0, 0600);
		_exit(fd >= 0 && npu_size(fd, 64 * MiB) == -ENOMEM ? 0 : 2);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) {
		TH_LOG("allocating past memory.max: status %#x (killed: %d)", status,
		       WIFSIGNALED(status) ? WTERMSIG(status) : 0);
	}
	EXPECT_EQ(0, waitpid(bystander, &status, WNOHANG)) {
		TH_LOG("the bystander died");
	}
	EXPECT_EQ(0, cgroup_oom_kills(cg));
	kill(bystander, SIGKILL);
	waitpid(bystander, &status, 0);
	close(sv[0]);
	close(sv[1]);
	EXPECT_EQ(0, rmdir(cg));
}

/* An ioctl number with another struct size. */
static unsigned long resize(unsigned long cmd, unsigned int size)
{
	return _IOC(_IOC_DIR(cmd), _IOC_TYPE(cmd), _IOC_NR(cmd), size);
}

TEST_F(npushm, ioctl_short_struct_is_einval)
{
	unsigned char buf[512] = { 0 };
	int fd = npu_alloc(self->dev, 4096);

	ASSERT_LE(0, fd);
	EXPECT_EQ(-EINVAL, npu_ioctl(self->dev, resize(NPUSHM_IOC_QUERY, 8), buf));
	EXPECT_EQ(-EINVAL, npu_ioctl(self->dev, resize(NPUSHM_IOC_ALLOC, 16), buf));
	EXPECT_EQ(-EINVAL, npu_ioctl(fd, resize(NPUSHM_IOC_SEAL, 4), buf));
	EXPECT_EQ(-EINVAL, npu_ioctl(fd, resize(NPUSHM_IOC_INFO, 0), buf));
	close(fd);
}

TEST_F(npushm, ioctl_long_struct_needs_zero_tail)
{
	struct {
		struct npushm_alloc a;
		uint64_t tail[4];
	} big = { .a.size = 4096 };

	ASSERT_EQ(0, npu_ioctl(self->dev, resize(NPUSHM_IOC_ALLOC, sizeof(big)), &big));
	EXPECT_LE(0, big.a.fd);
	close(big.a.fd);
	big.a.size = 4096;
	big.tail[3] = 1;
	EXPECT_EQ(-E2BIG, npu_ioctl(self->dev, resize(NPUSHM_IOC_ALLOC, sizeof(big)), &big));
}

TEST_F(npushm, ioctl_long_output_is_cleared)
{
	unsigned char buf[256];
	unsigned int i;

	memset(buf, 0xff, sizeof(buf));
	ASSERT_EQ(0, npu_ioctl(self->dev, resize(NPUSHM_IOC_QUERY, sizeof(buf)), buf));
	EXPECT_EQ(NPUSHM_ABI_VERSION, ((struct npushm_query *)buf)->abi_version);
	for (i = sizeof(struct npushm_query); i < sizeof(buf); i++)
		ASSERT_EQ(0, buf[i]);
}

TEST_F(npushm, ioctl_unknown_is_enotty)
{
	unsigned char buf[64] = { 0 };
	int fd = npu_alloc(self->dev, 4096);

	ASSERT_LE(0, fd);
	EXPECT_EQ(-ENOTTY, npu_ioctl(self->dev, _IOWR(NPUSHM_IOC_MAGIC, 0x3f, buf), buf));
	EXPECT_EQ(-ENOTTY, npu_ioctl(self->dev, _IOWR('x', 0x01, struct npushm_alloc), buf));
	/* The old magic (0xB7, nsfs's) is not ours. */
	EXPECT_EQ(-ENOTTY, npu_ioctl(self->dev, _IOWR(0xB7, 0x01, struct npushm_alloc), buf));
	/* Right number, wrong direction. */
	EXPECT_EQ(-ENOTTY, npu_ioctl(self->dev, _IOW(NPUSHM_IOC_MAGIC, 0x00, struct npushm_query), buf));
	/* Region ioctls are not device ioctls and vice versa. */
	EXPECT_EQ(-ENOTTY, npu_ioctl(self->dev, NPUSHM_IOC_SEAL, buf));
	EXPECT_EQ(-ENOTTY, npu_ioctl(fd, NPUSHM_IOC_ALLOC, buf));
	/* Directories of an instance are not regions. */
	EXPECT_EQ(-ENOTTY, npu_ioctl(self->root, NPUSHM_IOC_INFO, buf));
	close(fd);
}

TEST_F(npushm, ioctl_bad_pointer_is_efault)
{
	int fd = npu_alloc(self->dev, 4096);

	ASSERT_LE(0, fd);
	EXPECT_EQ(-EFAULT, npu_ioctl(self->dev, NPUSHM_IOC_ALLOC, NULL));
	EXPECT_EQ(-EFAULT, npu_ioctl(self->dev, NPUSHM_IOC_QUERY, (void *)1));
	EXPECT_EQ(-EFAULT, npu_ioctl(fd, NPUSHM_IOC_INFO, (void *)-4096L));
	EXPECT_EQ(-EFAULT, npu_ioctl(fd, NPUSHM_IOC_SEAL, (void *)8));
	close(fd);
}

TEST_F(npushm, ioctl_on_wrong_descriptors)
{
	struct npushm_seal s = { .seals = NPUSHM_SEAL_WRITE };
	int fds[2];

	ASSERT_EQ(0, pipe(fds));
	EXPECT_EQ(-ENOTTY, npu_ioctl(fds[0], NPUSHM_IOC_SEAL, &s));
	close(fds[0]);
	close(fds[1]);
	EXPECT_EQ(-EBADF, npu_ioctl(fds[0], NPUSHM_IOC_SEAL, &s));
	EXPECT_EQ(-EBADF, npu_ioctl(-1, NPUSHM_IOC_ALLOC, &s));
}

TEST_F(npushm, ioctl_garbage_structs)
{
	static const unsigned long cmds[] = { NPUSHM_IOC_QUERY, NPUSHM_IOC_ALLOC };
	static const unsigned long rcmds[] = {
		NPUSHM_IOC_SEAL, NPUSHM_IOC_EXPORT_DMABUF, NPUSHM_IOC_INFO,
	};
	unsigned char buf[1024];
	unsigned int round, i, size;
	int region = npu_create(self->root, "garbage", 4096, 0600);

	ASSERT_LE(0, region);
	srandom(1);
	for (round = 0; round < 2000; round++) {
		unsigned long cmd;
		long ret;
		int fd;

		for (i = 0; i < sizeof(buf); i++)
			buf[i] = random();
		size = random() % 400;
		fd = random() & 1 ? self->dev : region;
		if (fd == region) {
			i = random() % 3;
			cmd = rcmds[i];
		} else {
			i = random() % 2;
			cmd = cmds[i];
			/* Keep allocations small: the rest of the bytes stay random. */
			if (i == 1)
				((struct npushm_alloc *)buf)->size &= 0xfffff;
		}
		ret = npu_ioctl(fd, resize(cmd, size), buf);
		/* Whatever the bytes, only clean errors (or a success we undo). */
		if (!ret && cmd == NPUSHM_IOC_ALLOC)
			close(((struct npushm_alloc *)buf)->fd);
		if (!ret && cmd == NPUSHM_IOC_EXPORT_DMABUF)
			close(((struct npushm_export *)buf)->fd);
		EXPECT_TRUE(ret == 0 || ret == -EINVAL || ret == -E2BIG ||
			    ret == -EFAULT || ret == -EDQUOT || ret == -ENOSPC ||
			    ret == -EBUSY || ret == -EPERM) {
			TH_LOG("ioctl %#lx size %u: %ld", cmd, size, ret);
		}
	}
	close(region);
	EXPECT_EQ(0, npu_unlink(self->root, "garbage"));
}

TEST_HARNESS_MAIN
