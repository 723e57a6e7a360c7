// SPDX-License-Identifier: GPL-2.0-only
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * npushm_lifetime_test.c - what keeps a region alive (names, open files,
 * mappings, dma-bufs; not its creator, even killed with SIGKILL), the size
 * rules (set once; back to 0 only when idle; never when sealed), read(2)
 * and write(2), sealing with memfd's F_SEAL_WRITE semantics, and the info
 * ioctl.
 */
#include <signal.h>
#include <sys/mman.h>
#include <sys/sysmacros.h>

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
		int rfd = npu_tmpfile(self->root, size, 0600);
		uint32_t *q;

		q = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, rfd, 0);
		npu_fill(q, size, 31);
		npu_link(rfd, self->root, "life.killed");
		npu_send_fd(sv[1], rfd);
		for (;;)
			pause();
	}
	fd = npu_recv_fd(sv[0]);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, kill(pid, SIGKILL));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFSIGNALED(status));
	/* Our file, the data and the name are all still there. */
	p = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_TRUE(npu_check(p, size, 31));
	h = npu_open(self->root, "life.killed", O_RDONLY);
	EXPECT_LE(0, h);
	close(h);
	munmap(p, size);
	close(fd);
	/* The name holds the region alone now; removing it frees it. */
	EXPECT_EQ(self->q0.in_use + size, npu_in_use(self->dev));
	EXPECT_EQ(0, npu_unlink(self->root, "life.killed"));
	EXPECT_EQ(self->q0.in_use, npu_in_use(self->dev));
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

TEST_F(npushm, name_keeps_region)
{
	size_t size = 3 * MiB;
	int fd = npu_tmpfile(self->root, size, 0600);
	struct npushm_region_info info;
	uint32_t *p;

	ASSERT_LE(0, fd);
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	npu_fill(p, size, 64);
	munmap(p, size);
	ASSERT_EQ(0, npu_link(fd, self->root, "life.persist"));
	ASSERT_EQ(0, npu_info(fd, &info));
	EXPECT_EQ(NPUSHM_INFO_NAMED, info.flags & NPUSHM_INFO_NAMED);
	close(fd);
	/* No process refers to it at all now. */
	EXPECT_EQ(self->q0.in_use + size, npu_in_use(self->dev));
	fd = npu_open(self->root, "life.persist", O_RDONLY);
	ASSERT_LE(0, fd);
	p = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_TRUE(npu_check(p, size, 64));
	munmap(p, size);
	close(fd);
	ASSERT_EQ(0, npu_unlink(self->root, "life.persist"));
	EXPECT_EQ(self->q0.in_use, npu_in_use(self->dev));
}

TEST_F(npushm, unnamed_region_goes_with_its_last_file)
{
	int fd = npu_tmpfile(self->root, 4096, 0600), anon = npu_alloc(self->dev, 4096);

	ASSERT_LE(0, fd);
	ASSERT_LE(0, anon);
	EXPECT_EQ(self->q0.in_use + 8192, npu_in_use(self->dev));
	close(fd);
	close(anon);
	EXPECT_EQ(self->q0.in_use, npu_in_use(self->dev));
}

TEST_F(npushm, dmabuf_keeps_region)
{
	size_t size = MiB;
	int fd = npu_tmpfile(self->root, size, 0600), buf;
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

/* The size rules of docs/kmod.md, one by one. */
TEST_F(npushm, size_is_set_once)
{
	int fd = npu_create(self->root, "sized", 0, 0600), buf;
	struct stat st;
	char *p;

	ASSERT_LE(0, fd);
	/* 0 -> N reserves the memory; N -> N is nothing. */
	ASSERT_EQ(0, npu_size(fd, 2 * MiB));
	EXPECT_EQ(self->q0.in_use + 2 * MiB, npu_in_use(self->dev));
	EXPECT_EQ(0, npu_size(fd, 2 * MiB));
	EXPECT_EQ(0, npu_size(fd, 2 * MiB - 100));	/* rounds to the same */
	EXPECT_EQ(0, fallocate(fd, 0, 4096, 8192));	/* inside: allocated */
	/* N -> M is refused, both ways. */
	EXPECT_EQ(-EINVAL, npu_size(fd, 4 * MiB));
	EXPECT_EQ(-EINVAL, npu_size(fd, MiB));
	EXPECT_EQ(-1, fallocate(fd, 0, 0, 4 * MiB));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, 4096));
	EXPECT_EQ(EOPNOTSUPP, errno);
	/* N -> 0 while mapped, exported: EBUSY. */
	p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_EQ(-EBUSY, npu_size(fd, 0));
	munmap(p, 4096);
	buf = npu_export(fd, 0);
	ASSERT_LE(0, buf);
	EXPECT_EQ(-EBUSY, npu_size(fd, 0));
	close(buf);
	/* Idle: N -> 0 gives the memory back, and it can be sized again. */
	EXPECT_EQ(0, npu_size(fd, 0));
	EXPECT_EQ(self->q0.in_use, npu_in_use(self->dev));
	ASSERT_EQ(0, fstat(fd, &st));
	EXPECT_EQ(0, st.st_size);
	EXPECT_EQ(0, fallocate(fd, 0, 0, MiB));
	ASSERT_EQ(0, fstat(fd, &st));
	EXPECT_EQ(MiB, st.st_size);
	/* O_TRUNC of a busy region fails; of an idle one it empties it. */
	p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_EQ(-EBUSY, npu_open(self->root, "sized", O_RDWR | O_TRUNC));
	munmap(p, 4096);
	/* Sealed: no change at all. */
	ASSERT_EQ(0, npu_seal(fd));
	EXPECT_EQ(-EPERM, npu_size(fd, 0));
	EXPECT_EQ(-EPERM, npu_open(self->root, "sized", O_RDWR | O_TRUNC));
	EXPECT_EQ(0, npu_size(fd, MiB));
	close(fd);
	EXPECT_EQ(0, npu_unlink(self->root, "sized"));
	/* A sealed unsized region can never be sized. */
	fd = npu_tmpfile(self->root, 0, 0600);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, npu_seal(fd));
	EXPECT_EQ(-EPERM, npu_size(fd, 4096));
	close(fd);
}

TEST_F(npushm, read_and_write_stay_inside)
{
	int fd = npu_create(self->root, "rw", 8192, 0644), ro;
	char buf[16], *p;

	ASSERT_LE(0, fd);
	EXPECT_EQ(5, pwrite(fd, "hello", 5, 8190 - 3));
	EXPECT_EQ(2, pwrite(fd, "xyz", 3, 8190));	/* short at the end */
	EXPECT_EQ(-1, pwrite(fd, "x", 1, 8192));
	EXPECT_EQ(EFBIG, errno);
	p = mmap(NULL, 8192, PROT_READ, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_EQ(0, memcmp(p + 8187, "helxy", 5));
	munmap(p, 8192);
	ro = npu_open(self->root, "rw", O_RDONLY);
	ASSERT_LE(0, ro);
	EXPECT_EQ(5, pread(ro, buf, 5, 8187));
	EXPECT_EQ(0, memcmp(buf, "helxy", 5));
	EXPECT_EQ(0, pread(ro, buf, 5, 8192));
	EXPECT_EQ(-1, pread(ro, buf, 5, -1));
	ASSERT_EQ(0, npu_seal(fd));
	EXPECT_EQ(-1, pwrite(fd, "x", 1, 0));
	EXPECT_EQ(EPERM, errno);
	EXPECT_EQ(1, pread(ro, buf, 1, 0));
	close(ro);
	close(fd);
	EXPECT_EQ(0, npu_unlink(self->root, "rw"));
}

TEST_F(npushm, seal_forbids_writable_mappings)
{
	size_t size = 16384;
	int fd = npu_tmpfile(self->root, size, 0666), rw;
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
	/* Not even through a read-write file opened by name later, by anyone. */
	ASSERT_EQ(0, npu_link(fd, self->root, "seal.rw"));
	rw = npu_open(self->root, "seal.rw", O_RDWR);
	ASSERT_LE(0, rw);
	EXPECT_EQ(MAP_FAILED, mmap(NULL, size, PROT_WRITE, MAP_SHARED, rw, 0));
	EXPECT_EQ(-EPERM, npu_export(rw, NPUSHM_EXPORT_RDWR));
	close(rw);
	close(fd);
	EXPECT_EQ(0, npu_unlink(self->root, "seal.rw"));
}

TEST_F(npushm, seal_is_busy_while_writable)
{
	size_t size = 8192;
	int fd = npu_tmpfile(self->root, size, 0600), buf, status;
	char *p;
	pid_t pid;

	ASSERT_LE(0, fd);
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_EQ(-EBUSY, npu_seal(fd));
	munmap(p, size);
	/* A read-only mapping of a read-write file could become writable. */
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
	int fd = npu_tmpfile(self->root, 4096, 0600);

	ASSERT_LE(0, fd);
	EXPECT_EQ(-EINVAL, npu_ioctl(fd, NPUSHM_IOC_SEAL, &s));
	s.seals = 2;
	EXPECT_EQ(-EINVAL, npu_ioctl(fd, NPUSHM_IOC_SEAL, &s));
	s.seals = NPUSHM_SEAL_WRITE;
	s.reserved = 1;
	EXPECT_EQ(-EINVAL, npu_ioctl(fd, NPUSHM_IOC_SEAL, &s));
	close(fd);
}

TEST_F(npushm, sealed_region_is_named_from_a_readonly_file)
{
	int fd = npu_create(self->root, "seal.src", 4096, 0644), ro;

	ASSERT_LE(0, fd);
	ro = npu_open(self->root, "seal.src", O_RDONLY);
	ASSERT_LE(0, ro);
	ASSERT_EQ(0, npu_seal(fd));
	/* The owner may add a name through any file of the region. */
	EXPECT_EQ(0, npu_link(ro, self->root, "seal.alias"));
	close(ro);
	close(fd);
	EXPECT_EQ(0, npu_unlink(self->root, "seal.src"));
	ro = npu_open(self->root, "seal.alias", O_RDONLY);
	EXPECT_LE(0, ro);
	close(ro);
	EXPECT_EQ(0, npu_unlink(self->root, "seal.alias"));
}

TEST_F(npushm, info_reports_region)
{
	size_t size = 5 * 4096;
	struct npushm_region_info info;
	struct stat st;
	int fd, buf, ro;
	char *p, *q;

	fd = npu_tmpfile(self->root, size, 0640);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, fstat(fd, &st));
	ASSERT_EQ(0, npu_info(fd, &info));
	EXPECT_EQ(st.st_ino, info.id);
	EXPECT_EQ(size, info.size);
	EXPECT_EQ(NPUSHM_INFO_WRITABLE, info.flags);
	EXPECT_EQ(getuid(), info.owner_uid);
	EXPECT_EQ(getgid(), info.owner_gid);
	EXPECT_EQ(getuid(), info.charged_uid);
	EXPECT_EQ(0640, info.mode);
	/* The kernel's new_encode_dev() of st_dev. */
	EXPECT_EQ((minor(st.st_dev) & 0xff) | (major(st.st_dev) << 8) |
		  ((minor(st.st_dev) & ~0xffu) << 12), info.dev);
	EXPECT_EQ(1, info.handles);
	EXPECT_EQ(0, info.mappings);
	EXPECT_EQ(0, info.names);
	EXPECT_EQ(0, info.pinned_bytes);
	EXPECT_STREQ("", info.name);

	ASSERT_EQ(0, npu_link(fd, self->root, "info.first"));
	ASSERT_EQ(0, npu_link(fd, self->root, "info.second"));
	p = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
	q = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 4096);
	buf = npu_export(fd, 0);
	ro = npu_open(self->root, "info.second", O_RDONLY);
	ASSERT_NE(MAP_FAILED, p);
	ASSERT_NE(MAP_FAILED, q);
	ASSERT_LE(0, buf);
	ASSERT_LE(0, ro);
	ASSERT_EQ(0, npu_info(ro, &info));
	EXPECT_EQ(NPUSHM_INFO_NAMED, info.flags);
	EXPECT_STREQ("info.second", info.name);
	EXPECT_EQ(2, info.names);
	EXPECT_EQ(2, info.handles);
	EXPECT_EQ(2, info.mappings);
	EXPECT_EQ(1, info.mappers);
	EXPECT_EQ(1, info.dmabufs);
	EXPECT_EQ(size + 4096, info.mapped_bytes);
	munmap(p, size);
	munmap(q, 4096);
	ASSERT_EQ(0, npu_seal(fd));
	ASSERT_EQ(0, npu_unlink(self->root, "info.first"));
	ASSERT_EQ(0, npu_info(fd, &info));
	EXPECT_EQ(NPUSHM_INFO_SEALED | NPUSHM_INFO_NAMED | NPUSHM_INFO_WRITABLE, info.flags);
	EXPECT_EQ(1, info.names);
	EXPECT_EQ(0, info.mapped_bytes);
	close(buf);
	close(ro);
	close(fd);
	EXPECT_EQ(0, npu_unlink(self->root, "info.second"));
}

static long module_refcnt(void)
{
	FILE *f = fopen("/sys/module/npushm/refcnt", "r");
	long n = -1;

	if (f) {
		if (fscanf(f, "%ld", &n) != 1)
			n = -1;
		fclose(f);
	}
	return n;
}

/*
 * What the harness leaves of a test it kills (timeout, crash) before its
 * teardown: a process that set up as the fixture does (a mount namespace
 * of its own, an instance mounted there, a region open in it) killed with
 * SIGKILL must not leave the module referenced, or every later test that
 * unloads it fails. Mounted in the caller's namespace instead, the instance
 * outlives the process and holds the module.
 */
TEST_F(npushm, killed_test_leaves_no_mount_behind)
{
	long before = module_refcnt(), after;
	char dir[64] = "";
	int pfd[2], status, i;
	pid_t pid;

	ASSERT_LT(0, before);
	ASSERT_EQ(0, pipe(pfd));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		char d[64];
		int root;

		if (npu_private_mounts() || npu_mount(d, NULL))
			_exit(1);
		root = open(d, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (root < 0 || npu_create(root, "held", 1 << 20, 0600) < 0 ||
		    write(pfd[1], d, sizeof(d)) != sizeof(d))
			_exit(1);
		for (;;)
			pause();
	}
	close(pfd[1]);
	ASSERT_EQ(sizeof(dir), read(pfd[0], dir, sizeof(dir)));
	close(pfd[0]);
	EXPECT_LT(before, module_refcnt());
	ASSERT_EQ(0, kill(pid, SIGKILL));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	for (i = 0; i < 250 && (after = module_refcnt()) != before; i++)
		usleep(20000);
	EXPECT_EQ(before, after);
	EXPECT_EQ(self->q0.in_use, npu_wait_in_use(self->dev, self->q0.in_use, 5000));
	dir[sizeof(dir) - 1] = 0;
	rmdir(dir);
}

TEST_HARNESS_MAIN
