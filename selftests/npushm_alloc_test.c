// SPDX-License-Identifier: GPL-2.0
/*
 * npushm_alloc_test.c - /dev/npushm: query, allocation, pool capacity and
 * per-uid quota, and the extensible-ioctl rules (short, long and garbage
 * structs, unknown flags, bad pointers and descriptors).
 */
#include <sys/mman.h>

#include "npushm_fixture.h"

#define MiB (1024ULL * 1024)

TEST_F(npushm, query_reports_pool)
{
	struct npushm_query q;

	ASSERT_EQ(0, npu_query(self->dev, &q));
	EXPECT_EQ(NPUSHM_ABI_VERSION, q.abi_version);
	EXPECT_EQ(NPUSHM_NAME_MAX, q.max_name_len);
	EXPECT_EQ(4096, q.page_size);
	EXPECT_EQ(2 * MiB, q.chunk_size);
	EXPECT_EQ(npu_param_get("capacity"), q.capacity);
	EXPECT_EQ(npu_param_get("uid_quota"), q.uid_quota);
	EXPECT_LE(q.in_use, q.capacity);
	EXPECT_EQ(NPUSHM_FEAT_NAMES | NPUSHM_FEAT_SEAL | NPUSHM_FEAT_DMABUF |
		  NPUSHM_FEAT_GUP | NPUSHM_FEAT_NETLINK,
		  q.features & ~NPUSHM_FEAT_TEST_IMPORTER);
}

TEST_F(npushm, alloc_counts_in_use)
{
	struct npushm_query q;
	int fd = npu_alloc(self->dev, 3 * MiB);

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, npu_query(self->dev, &q));
	EXPECT_EQ(self->q0.in_use + 3 * MiB, q.in_use);
	EXPECT_EQ(self->q0.regions + 1, q.regions);
	EXPECT_EQ(self->q0.uid_in_use + 3 * MiB, q.uid_in_use);
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

		ASSERT_EQ(0, npu_ioctl(self->dev, NPUSHM_IOC_ALLOC, &a));
		EXPECT_EQ(want, a.size);
		EXPECT_NE(0, a.id);
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
		int fd = npu_alloc(self->dev, 2 * MiB);
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

	ASSERT_EQ(0, npu_ioctl(self->dev, NPUSHM_IOC_ALLOC, &a));
	ASSERT_EQ(0, npu_ioctl(self->dev, NPUSHM_IOC_ALLOC, &b));
	EXPECT_EQ(FD_CLOEXEC, fcntl(a.fd, F_GETFD) & FD_CLOEXEC);
	EXPECT_EQ(O_RDWR, fcntl(a.fd, F_GETFL) & O_ACCMODE);
	EXPECT_NE(a.id, b.id);
	EXPECT_NE(a.fd, b.fd);
	close(a.fd);
	close(b.fd);
}

TEST_F(npushm, alloc_rejects_bad_sizes)
{
	static const uint64_t bad[] = {
		0, UINT64_MAX, UINT64_MAX - 4094, 1ULL << 63, 1ULL << 52,
	};
	unsigned int i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		EXPECT_EQ(-EINVAL, npu_alloc(self->dev, bad[i]));
	EXPECT_EQ(-EINVAL, npu_alloc(self->dev, self->q0.capacity + 1));
}

TEST_F(npushm, alloc_rejects_unknown_flags)
{
	unsigned int bit;

	for (bit = 0; bit < 32; bit++) {
		struct npushm_alloc a = { .size = 4096, .flags = 1U << bit };

		EXPECT_EQ(-EINVAL, npu_ioctl(self->dev, NPUSHM_IOC_ALLOC, &a));
	}
}

TEST_F(npushm, alloc_beyond_capacity_is_enomem)
{
	unsigned long long cap = npu_param_get("capacity");
	char buf[32];
	int fd;

	/* Shrink the pool to what is in use plus 16 MiB. */
	snprintf(buf, sizeof(buf), "%llu", (unsigned long long)self->q0.in_use + 16 * MiB);
	ASSERT_EQ(0, npu_param_set("capacity", buf));
	fd = npu_alloc(self->dev, 12 * MiB);
	EXPECT_LE(0, fd);
	EXPECT_EQ(-ENOMEM, npu_alloc(self->dev, 8 * MiB));
	EXPECT_EQ(-ENOMEM, npu_alloc(self->dev, 4 * MiB + 4096));
	snprintf(buf, sizeof(buf), "%llu", cap);
	ASSERT_EQ(0, npu_param_set("capacity", buf));
	if (fd >= 0)
		close(fd);
	/* The failures left nothing behind: the full size fits again. */
	fd = npu_alloc(self->dev, 16 * MiB);
	EXPECT_LE(0, fd);
	close(fd);
}

static int alloc_as_user(void *arg)
{
	int dev = npu_dev_open(), fd1, fd2;
	struct npushm_query q;

	if (dev < 0)
		return 10;
	fd1 = npu_alloc(dev, 6 * MiB);
	if (fd1 < 0)
		return 11;
	fd2 = npu_alloc(dev, 4 * MiB);
	if (fd2 != -EDQUOT)
		return 12;
	if (npu_query(dev, &q) || q.uid_in_use != 6 * MiB)
		return 13;
	close(fd1);
	/* Freed: the quota is available again. */
	fd2 = npu_alloc(dev, 8 * MiB);
	if (fd2 < 0)
		return 14;
	close(fd2);
	return 0;
}

TEST_F(npushm, alloc_beyond_uid_quota_is_edquot)
{
	unsigned long long quota = npu_param_get("uid_quota");
	char buf[32];

	ASSERT_EQ(0, npu_param_set("uid_quota", "8M"));
	EXPECT_EQ(8 * MiB, npu_param_get("uid_quota"));
	EXPECT_EQ(0, npu_run_as(1000, 1000, alloc_as_user, NULL));
	snprintf(buf, sizeof(buf), "%llu", quota);
	ASSERT_EQ(0, npu_param_set("uid_quota", buf));
}

TEST_F(npushm, param_rejects_garbage)
{
	EXPECT_EQ(-EINVAL, npu_param_set("capacity", "lots"));
	EXPECT_EQ(-EINVAL, npu_param_set("uid_quota", "12Q"));
	EXPECT_EQ(-ERANGE, npu_param_set("capacity", "100P"));
}

/* An ioctl number with another struct size. */
static unsigned long resize(unsigned long cmd, unsigned int size)
{
	return _IOC(_IOC_DIR(cmd), _IOC_TYPE(cmd), _IOC_NR(cmd), size);
}

TEST_F(npushm, ioctl_short_struct_is_einval)
{
	unsigned char buf[512] = { 0 };

	EXPECT_EQ(-EINVAL, npu_ioctl(self->dev, resize(NPUSHM_IOC_QUERY, 8), buf));
	EXPECT_EQ(-EINVAL, npu_ioctl(self->dev, resize(NPUSHM_IOC_ALLOC, 16), buf));
	EXPECT_EQ(-EINVAL, npu_ioctl(self->dev, resize(NPUSHM_IOC_OPEN, 8), buf));
	EXPECT_EQ(-EINVAL, npu_ioctl(self->dev, resize(NPUSHM_IOC_UNLINK, 0), buf));
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

	EXPECT_EQ(-ENOTTY, npu_ioctl(self->dev, _IOWR(NPUSHM_IOC_MAGIC, 0x3f, buf), buf));
	EXPECT_EQ(-ENOTTY, npu_ioctl(self->dev, _IOWR('x', 0x01, struct npushm_alloc), buf));
	/* Right number, wrong direction. */
	EXPECT_EQ(-ENOTTY, npu_ioctl(self->dev, _IOW(NPUSHM_IOC_MAGIC, 0x00, struct npushm_query), buf));
	/* Region ioctls are not device ioctls and vice versa. */
	EXPECT_EQ(-ENOTTY, npu_ioctl(self->dev, NPUSHM_IOC_SEAL, buf));
}

TEST_F(npushm, ioctl_bad_pointer_is_efault)
{
	EXPECT_EQ(-EFAULT, npu_ioctl(self->dev, NPUSHM_IOC_ALLOC, NULL));
	EXPECT_EQ(-EFAULT, npu_ioctl(self->dev, NPUSHM_IOC_QUERY, (void *)1));
	EXPECT_EQ(-EFAULT, npu_ioctl(self->dev, NPUSHM_IOC_OPEN, (void *)-4096L));
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
	static const unsigned long cmds[] = {
		NPUSHM_IOC_QUERY, NPUSHM_IOC_ALLOC, NPUSHM_IOC_OPEN, NPUSHM_IOC_UNLINK,
	};
	static const unsigned long rcmds[] = {
		NPUSHM_IOC_PUBLISH, NPUSHM_IOC_SEAL, NPUSHM_IOC_EXPORT_DMABUF,
		NPUSHM_IOC_INFO,
	};
	unsigned char buf[1024];
	unsigned int round, i, size;
	int region = npu_alloc(self->dev, 4096);

	ASSERT_LE(0, region);
	srandom(1);
	for (round = 0; round < 2000; round++) {
		long ret;
		int fd;

		for (i = 0; i < sizeof(buf); i++)
			buf[i] = random();
		size = random() % 400;
		i = random() % 4;
		fd = random() & 1 ? self->dev : region;
		ret = npu_ioctl(fd, resize(fd == region ? rcmds[i] : cmds[i], size), buf);
		/* Whatever the bytes, only clean errors (or a success we undo). */
		if (!ret && fd == self->dev && i == 1)
			close(((struct npushm_alloc *)buf)->fd);
		if (!ret && fd == region && i == 2)
			close(((struct npushm_export *)buf)->fd);
		if (!ret && fd == region && i == 0)
			npu_unlink(self->dev,
				   (const char *)(uintptr_t)((struct npushm_publish *)buf)->name);
		EXPECT_TRUE(ret == 0 || ret == -EINVAL || ret == -E2BIG ||
			    ret == -EFAULT || ret == -ENAMETOOLONG ||
			    ret == -ENOENT || ret == -EDQUOT || ret == -ENOMEM ||
			    ret == -EBUSY) {
			TH_LOG("ioctl %#lx size %u: %ld", rcmds[i], size, ret);
		}
	}
	close(region);
}

TEST_HARNESS_MAIN
