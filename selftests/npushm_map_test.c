// SPDX-License-Identifier: GPL-2.0
/*
 * npushm_map_test.c - mapping regions: MAP_SHARED only, bounds (an unsized
 * file has none), the same physical pages in every mapping (across fork,
 * SCM_RIGHTS and open by name), few faults per chunk, GUP on the mappings,
 * and VMA surgery (partial munmap, mremap, MADV_DONTNEED) keeping the
 * accounting right.
 */
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/uio.h>

#include "npushm_fixture.h"

#define MiB (1024UL * 1024)

TEST_F(npushm, mmap_private_is_refused)
{
	int fd = npu_tmpfile(self->root, 64 * 1024, 0600);

	ASSERT_LE(0, fd);
	EXPECT_EQ(MAP_FAILED, mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, fd, 0));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(MAP_FAILED, mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0));
	close(fd);
}

TEST_F(npushm, mmap_bounds_are_checked)
{
	size_t size = 16 * 4096;
	int fd = npu_tmpfile(self->root, 0, 0600);
	void *p;

	ASSERT_LE(0, fd);
	/* Unsized: nothing to map. */
	EXPECT_EQ(MAP_FAILED, mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0));
	EXPECT_EQ(EINVAL, errno);
	ASSERT_EQ(0, npu_size(fd, size));
	p = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	munmap(p, size);
	p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, size - 4096);
	ASSERT_NE(MAP_FAILED, p);
	munmap(p, 4096);
	EXPECT_EQ(MAP_FAILED, mmap(NULL, size + 4096, PROT_READ, MAP_SHARED, fd, 0));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(MAP_FAILED, mmap(NULL, 8192, PROT_READ, MAP_SHARED, fd, size - 4096));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(MAP_FAILED, mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, size));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(MAP_FAILED, mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 1UL << 62));
	EXPECT_EQ(MAP_FAILED, mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 100));
	close(fd);
}

TEST_F(npushm, mappings_share_pages)
{
	size_t size = 4 * MiB;
	int fd = npu_create(self->root, "shared", size, 0600);
	char *a, *b, *c;

	ASSERT_LE(0, fd);
	a = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	b = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
	c = mmap(NULL, MiB, PROT_READ, MAP_SHARED, fd, 3 * MiB);
	ASSERT_NE(MAP_FAILED, a);
	ASSERT_NE(MAP_FAILED, b);
	ASSERT_NE(MAP_FAILED, c);
	npu_fill(a, size, 7);
	EXPECT_TRUE(npu_check(b, size, 7));
	EXPECT_EQ(0, memcmp(a + 3 * MiB, c, MiB));
	munmap(a, size);
	munmap(b, size);
	munmap(c, MiB);
	close(fd);
	EXPECT_EQ(0, npu_unlink(self->root, "shared"));
}

TEST_F(npushm, fork_shares_pages)
{
	size_t size = 2 * MiB;
	int fd = npu_alloc(self->dev, size), status;
	uint32_t *p;
	pid_t pid;

	ASSERT_LE(0, fd);
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	p[0] = 1;
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		npu_fill(p, size, 42);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(npu_check(p, size, 42));
	munmap(p, size);
	close(fd);
}

TEST_F(npushm, scm_rights_shares_pages)
{
	size_t size = 3 * MiB;
	int sv[2], fd, status;
	uint32_t *p;
	pid_t pid;

	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		int dev = npu_dev_open(), rfd;
		uint32_t *q;
		char ack;

		close(sv[0]);
		rfd = npu_alloc(dev, size);
		if (rfd < 0)
			_exit(1);
		q = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, rfd, 0);
		if (q == MAP_FAILED)
			_exit(2);
		npu_fill(q, size, 99);
		if (npu_send_fd(sv[1], rfd))
			_exit(3);
		/* Wait for the parent to write, then check its data. */
		if (read(sv[1], &ack, 1) != 1)
			_exit(4);
		_exit(npu_check(q, size, 100) ? 0 : 5);
	}
	close(sv[1]);
	fd = npu_recv_fd(sv[0]);
	ASSERT_LE(0, fd);
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_TRUE(npu_check(p, size, 99));
	npu_fill(p, size, 100);
	ASSERT_EQ(1, write(sv[0], "k", 1));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, WEXITSTATUS(status));
	munmap(p, size);
	close(fd);
	close(sv[0]);
}

TEST_F(npushm, open_by_name_shares_pages)
{
	size_t size = 1 * MiB;
	int fd = npu_tmpfile(self->root, size, 0600), fd2, status;
	uint32_t *p;
	pid_t pid;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, npu_link(fd, self->root, "map.byname"));
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		int h = npu_open(self->root, "map.byname", O_RDWR);
		uint32_t *q;

		if (h < 0)
			_exit(1);
		q = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, h, 0);
		if (q == MAP_FAILED)
			_exit(2);
		npu_fill(q, size, 5);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, WEXITSTATUS(status));
	EXPECT_TRUE(npu_check(p, size, 5));
	fd2 = npu_open(self->root, "map.byname", O_RDONLY);
	ASSERT_LE(0, fd2);
	close(fd2);
	munmap(p, size);
	close(fd);
	EXPECT_EQ(0, npu_unlink(self->root, "map.byname"));
}

static long minor_faults(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_minflt;
}

TEST_F(npushm, chunks_fault_in_at_once)
{
	size_t size = 64 * MiB, i;
	int fd = npu_tmpfile(self->root, size, 0600);
	volatile char *p;
	long before, faults;

	ASSERT_LE(0, fd);
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	before = minor_faults();
	for (i = 0; i < size; i += 4096)
		p[i] = 1;
	faults = minor_faults() - before;
	/* 16384 pages; one fault per 2 MiB chunk, plus slack for alignment. */
	TH_LOG("%ld faults to touch %zu pages", faults, size / 4096);
	EXPECT_LE(faults, 2 * (long)(size / (2 * MiB)) + 8);
	munmap((void *)p, size);
	close(fd);
}

TEST_F(npushm, mappings_are_gupable)
{
	size_t size = 4 * MiB;
	int fd = npu_alloc(self->dev, size), status;
	struct iovec local, remote;
	char *p, *buf;
	pid_t pid;

	ASSERT_LE(0, fd);
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	npu_fill(p, size, 11);
	buf = malloc(size);
	ASSERT_NE(NULL, buf);
	/* process_vm_readv/writev pin the target's pages with GUP. */
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		pause();
		_exit(0);
	}
	local.iov_base = buf;
	local.iov_len = size;
	remote.iov_base = p;
	remote.iov_len = size;
	/* The child inherited the mapping at the same address. */
	EXPECT_EQ((ssize_t)size, process_vm_readv(pid, &local, 1, &remote, 1, 0));
	EXPECT_TRUE(npu_check(buf, size, 11));
	npu_fill(buf, size, 12);
	EXPECT_EQ((ssize_t)size, process_vm_writev(pid, &local, 1, &remote, 1, 0));
	EXPECT_TRUE(npu_check(p, size, 12));
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	free(buf);
	munmap(p, size);
	close(fd);
}

TEST_F(npushm, partial_munmap_and_mremap)
{
	size_t size = 8 * 4096;
	int fd = npu_tmpfile(self->root, size, 0600);
	struct npushm_region_info info;
	char *p, *q;

	ASSERT_LE(0, fd);
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	npu_fill(p, size, 3);
	ASSERT_EQ(0, munmap(p + 2 * 4096, 4096));
	ASSERT_EQ(0, npu_info(fd, &info));
	EXPECT_EQ(2, info.mappings);
	EXPECT_EQ(size - 4096, info.mapped_bytes);
	EXPECT_TRUE(npu_check(p, 2 * 4096, 3));
	/* Moving a mapping keeps its pages. */
	q = mmap(NULL, 5 * 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, q);
	q = mremap(p + 3 * 4096, 5 * 4096, 5 * 4096, MREMAP_MAYMOVE | MREMAP_FIXED, q);
	ASSERT_NE(MAP_FAILED, q);
	EXPECT_EQ(((uint32_t *)q)[0], 3 * 2654435761u + 3 * 1024);
	/* Growing one past the region is refused. */
	EXPECT_EQ(MAP_FAILED, mremap(q, 5 * 4096, 9 * 4096, MREMAP_MAYMOVE));
	ASSERT_EQ(0, npu_info(fd, &info));
	EXPECT_EQ(2, info.mappings);
	munmap(p, 2 * 4096);
	munmap(q, 5 * 4096);
	ASSERT_EQ(0, npu_info(fd, &info));
	EXPECT_EQ(0, info.mappings);
	EXPECT_EQ(0, info.mapped_bytes);
	close(fd);
}

TEST_F(npushm, dontneed_keeps_data)
{
	size_t size = 4 * MiB;
	int fd = npu_alloc(self->dev, size);
	char *p;

	ASSERT_LE(0, fd);
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	npu_fill(p, size, 8);
	ASSERT_EQ(0, madvise(p, size, MADV_DONTNEED));
	EXPECT_TRUE(npu_check(p, size, 8));
	munmap(p, size);
	close(fd);
}

TEST_F(npushm, mapping_outlives_handle)
{
	size_t size = 2 * MiB;
	int fd = npu_tmpfile(self->root, size, 0600);
	char *p;

	ASSERT_LE(0, fd);
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	close(fd);
	/* The mapping holds the instance too. */
	EXPECT_EQ(-EBUSY, (int)(umount(self->dir) ? -errno : 0));
	EXPECT_EQ(self->q0.in_use + size, npu_in_use(self->dev));
	npu_fill(p, size, 21);
	EXPECT_TRUE(npu_check(p, size, 21));
	munmap(p, size);
	EXPECT_EQ(self->q0.in_use, npu_in_use(self->dev));
}

TEST_HARNESS_MAIN
