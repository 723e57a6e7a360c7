// SPDX-License-Identifier: GPL-2.0
/*
 * npushm_lifetime_test.c - what keeps a region alive (handles, mappings,
 * dma-bufs, persistent names; not its creator, even killed with SIGKILL),
 * sealing with memfd's F_SEAL_WRITE semantics, and the info ioctl.
 */
#include <signal.h>
#include <sys/mman.h>

#include "npushm_fixture.h"

#define MiB (1024UL * 1024)

TEST_F(npushm, creator_sigkill_frees_nothing_in_use)
{
	size_t size = 4 * MiB;
	int sv[2], fd, status, h;
	uint32_t *p;
	pid_t pid;

	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		int dev = npu_dev_open(), rfd = npu_alloc(dev, size);
		uint32_t *q;

		q = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, rfd, 0);
		npu_fill(q, size, 31);
		npu_publish(rfd, "life.killed", 0600, 0);
		npu_send_fd(sv[1], rfd);
		for (;;)
			pause();
	}
	fd = npu_recv_fd(sv[0]);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, kill(pid, SIGKILL));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFSIGNALED(status));
	/* Our handle, the data and the name are all still there. */
	p = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_TRUE(npu_check(p, size, 31));
	h = npu_open(self->dev, "life.killed", 0);
	EXPECT_LE(0, h);
	close(h);
	munmap(p, size);
	close(fd);
	/* The last holder gone, the name went with the region. */
	EXPECT_EQ(-ENOENT, npu_open(self->dev, "life.killed", 0));
	close(sv[0]);
	close(sv[1]);
}

TEST_F(npushm, creator_sigkill_while_mapped_elsewhere)
{
	size_t size = 2 * MiB;
	int sv[2], status;
	uint32_t *p;
	pid_t pid;

	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		int dev = npu_dev_open(), rfd = npu_alloc(dev, size);

		npu_send_fd(sv[1], rfd);
		for (;;)
			pause();
	}
	{
		int fd = npu_recv_fd(sv[0]);

		ASSERT_LE(0, fd);
		p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		ASSERT_NE(MAP_FAILED, p);
		close(fd);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	/* Only our mapping refers to it now. */
	npu_fill(p, size, 8);
	EXPECT_TRUE(npu_check(p, size, 8));
	EXPECT_EQ(self->q0.in_use + size, npu_in_use(self->dev));
	munmap(p, size);
	close(sv[0]);
	close(sv[1]);
}

TEST_F(npushm, persistent_name_keeps_region)
{
	size_t size = 3 * MiB;
	int fd = npu_alloc(self->dev, size);
	struct npushm_region_info info;
	uint32_t *p;

	ASSERT_LE(0, fd);
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	npu_fill(p, size, 64);
	munmap(p, size);
	ASSERT_EQ(0, npu_publish(fd, "life.persist", 0600, NPUSHM_PUBLISH_PERSIST));
	ASSERT_EQ(0, npu_info(fd, &info));
	EXPECT_EQ(NPUSHM_INFO_PERSISTENT, info.flags & NPUSHM_INFO_PERSISTENT);
	close(fd);
	/* No process refers to it at all now. */
	EXPECT_EQ(self->q0.in_use + size, npu_in_use(self->dev));
	fd = npu_open(self->dev, "life.persist", 0);
	ASSERT_LE(0, fd);
	p = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_TRUE(npu_check(p, size, 64));
	munmap(p, size);
	close(fd);
	ASSERT_EQ(0, npu_unlink(self->dev, "life.persist"));
	EXPECT_EQ(self->q0.in_use, npu_in_use(self->dev));
}

TEST_F(npushm, plain_name_goes_with_region)
{
	int fd = npu_alloc(self->dev, 4096);

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, npu_publish(fd, "life.plain", 0600, 0));
	close(fd);
	EXPECT_EQ(self->q0.in_use, npu_in_use(self->dev));
	EXPECT_EQ(-ENOENT, npu_open(self->dev, "life.plain", 0));
	EXPECT_EQ(-ENOENT, npu_unlink(self->dev, "life.plain"));
}

TEST_F(npushm, dmabuf_keeps_region)
{
	size_t size = MiB;
	int fd = npu_alloc(self->dev, size), buf;
	uint32_t *p;

	ASSERT_LE(0, fd);
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	npu_fill(p, size, 2);
	munmap(p, size);
	buf = npu_export(fd, 0);
	ASSERT_LE(0, buf);
	close(fd);
	EXPECT_EQ(self->q0.in_use + size, npu_in_use(self->dev));
	p = mmap(NULL, size, PROT_READ, MAP_SHARED, buf, 0);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_TRUE(npu_check(p, size, 2));
	munmap(p, size);
	close(buf);
}

TEST_F(npushm, seal_forbids_writable_mappings)
{
	size_t size = 16384;
	int fd = npu_alloc(self->dev, size), rw;
	char *p;

	ASSERT_LE(0, fd);
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	p[0] = 'x';
	munmap(p, size);
	ASSERT_EQ(0, npu_seal(fd));
	EXPECT_EQ(0, npu_seal(fd));
	EXPECT_EQ(MAP_FAILED, mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
	EXPECT_EQ(EPERM, errno);
	p = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_EQ('x', p[0]);
	EXPECT_EQ(-1, mprotect(p, size, PROT_READ | PROT_WRITE));
	EXPECT_EQ(EACCES, errno);
	munmap(p, size);
	/* Not even through a read-write handle opened by name later. */
	ASSERT_EQ(0, npu_publish(fd, "seal.rw", 0666, 0));
	rw = npu_open(self->dev, "seal.rw", NPUSHM_OPEN_RDWR);
	ASSERT_LE(0, rw);
	EXPECT_EQ(MAP_FAILED, mmap(NULL, size, PROT_WRITE, MAP_SHARED, rw, 0));
	EXPECT_EQ(-EPERM, npu_export(rw, NPUSHM_EXPORT_RDWR));
	close(rw);
	close(fd);
}

TEST_F(npushm, seal_is_busy_while_writable)
{
	size_t size = 8192;
	int fd = npu_alloc(self->dev, size), buf, status;
	char *p;
	pid_t pid;

	ASSERT_LE(0, fd);
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_EQ(-EBUSY, npu_seal(fd));
	munmap(p, size);
	/* A read-only mapping of a read-write handle could become writable. */
	p = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_EQ(-EBUSY, npu_seal(fd));
	/* So could the copy of it a child inherits. */
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		munmap(p, size);
		_exit(npu_seal(fd) == -EBUSY ? 0 : 1);
	}
	waitpid(pid, &status, 0);
	EXPECT_EQ(0, WEXITSTATUS(status));
	munmap(p, size);
	/* A writable dma-buf could be written by a device. */
	buf = npu_export(fd, NPUSHM_EXPORT_RDWR);
	ASSERT_LE(0, buf);
	EXPECT_EQ(-EBUSY, npu_seal(fd));
	close(buf);
	buf = npu_export(fd, 0);
	ASSERT_LE(0, buf);
	EXPECT_EQ(0, npu_seal(fd));
	close(buf);
	close(fd);
}

TEST_F(npushm, seal_rejects_bad_requests)
{
	struct npushm_seal s = { 0 };
	int fd = npu_alloc(self->dev, 4096);

	ASSERT_LE(0, fd);
	EXPECT_EQ(-EINVAL, npu_ioctl(fd, NPUSHM_IOC_SEAL, &s));
	s.seals = 2;
	EXPECT_EQ(-EINVAL, npu_ioctl(fd, NPUSHM_IOC_SEAL, &s));
	s.seals = NPUSHM_SEAL_WRITE;
	s.reserved = 1;
	EXPECT_EQ(-EINVAL, npu_ioctl(fd, NPUSHM_IOC_SEAL, &s));
	close(fd);
}

TEST_F(npushm, sealed_region_publishes_from_readonly_handle)
{
	int fd = npu_alloc(self->dev, 4096), ro;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, npu_publish(fd, "seal.src", 0644, 0));
	ro = npu_open(self->dev, "seal.src", 0);
	ASSERT_LE(0, ro);
	EXPECT_EQ(-EACCES, npu_publish(ro, "seal.alias", 0644, 0));
	ASSERT_EQ(0, npu_seal(fd));
	/* Nobody can write it any more: an alias grants nothing new. */
	EXPECT_EQ(0, npu_publish(ro, "seal.alias", 0644, 0));
	close(ro);
	close(fd);
	EXPECT_EQ(-ENOENT, npu_open(self->dev, "seal.alias", 0));
}

TEST_F(npushm, info_reports_region)
{
	size_t size = 5 * 4096;
	struct npushm_region_info info;
	struct npushm_alloc a = { .size = size };
	int buf, ro;
	char *p, *q;

	ASSERT_EQ(0, npu_ioctl(self->dev, NPUSHM_IOC_ALLOC, &a));
	ASSERT_EQ(0, npu_info(a.fd, &info));
	EXPECT_EQ(a.id, info.id);
	EXPECT_EQ(size, info.size);
	EXPECT_EQ(NPUSHM_INFO_WRITABLE, info.flags);
	EXPECT_EQ(getuid(), info.owner_uid);
	EXPECT_EQ(getgid(), info.owner_gid);
	EXPECT_EQ(1, info.handles);
	EXPECT_EQ(0, info.mappings);
	EXPECT_EQ(0, info.names);
	EXPECT_STREQ("", info.name);

	ASSERT_EQ(0, npu_publish(a.fd, "info.first", 0640, NPUSHM_PUBLISH_PERSIST));
	ASSERT_EQ(0, npu_publish(a.fd, "info.second", 0600, 0));
	p = mmap(NULL, size, PROT_READ, MAP_SHARED, a.fd, 0);
	q = mmap(NULL, 4096, PROT_READ, MAP_SHARED, a.fd, 4096);
	buf = npu_export(a.fd, 0);
	ro = npu_open(self->dev, "info.second", 0);
	ASSERT_NE(MAP_FAILED, p);
	ASSERT_NE(MAP_FAILED, q);
	ASSERT_LE(0, buf);
	ASSERT_LE(0, ro);
	ASSERT_EQ(0, npu_info(ro, &info));
	EXPECT_EQ(NPUSHM_INFO_NAMED | NPUSHM_INFO_PERSISTENT, info.flags);
	EXPECT_STREQ("info.first", info.name);
	EXPECT_EQ(0640, info.mode);
	EXPECT_EQ(2, info.names);
	EXPECT_EQ(2, info.handles);
	EXPECT_EQ(2, info.mappings);
	EXPECT_EQ(1, info.dmabufs);
	EXPECT_EQ(size + 4096, info.mapped_bytes);
	munmap(p, size);
	munmap(q, 4096);
	ASSERT_EQ(0, npu_seal(a.fd));
	ASSERT_EQ(0, npu_unlink(self->dev, "info.first"));
	ASSERT_EQ(0, npu_info(a.fd, &info));
	EXPECT_EQ(NPUSHM_INFO_SEALED | NPUSHM_INFO_NAMED | NPUSHM_INFO_WRITABLE, info.flags);
	EXPECT_STREQ("info.second", info.name);
	EXPECT_EQ(0, info.mapped_bytes);
	close(buf);
	close(ro);
	close(a.fd);
}

TEST_HARNESS_MAIN
