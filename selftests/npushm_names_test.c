// SPDX-License-Identifier: GPL-2.0
/*
 * npushm_names_test.c - names: publish, open and unlink in the caller's IPC
 * namespace; name validation; file-like permission checks for other users
 * and groups, CAP_IPC_OWNER; read-only handles that can never map
 * writable; isolation between IPC namespaces.
 */
#include <sched.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <linux/capability.h>

#include "npushm_fixture.h"

TEST_F(npushm, publish_open_unlink)
{
	struct npushm_open o = { .name = (uintptr_t)"names.basic" };
	struct npushm_region_info info;
	int fd = npu_alloc(self->dev, 8192), h;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, npu_publish(fd, "names.basic", 0640, 0));
	ASSERT_EQ(0, npu_info(fd, &info));
	ASSERT_EQ(0, npu_ioctl(self->dev, NPUSHM_IOC_OPEN, &o));
	EXPECT_EQ(info.id, o.id);
	EXPECT_EQ(8192, o.size);
	EXPECT_EQ(FD_CLOEXEC, fcntl(o.fd, F_GETFD) & FD_CLOEXEC);
	EXPECT_EQ(O_RDONLY, fcntl(o.fd, F_GETFL) & O_ACCMODE);
	h = npu_open(self->dev, "names.basic", NPUSHM_OPEN_RDWR);
	ASSERT_LE(0, h);
	EXPECT_EQ(O_RDWR, fcntl(h, F_GETFL) & O_ACCMODE);
	EXPECT_EQ(0, npu_unlink(self->dev, "names.basic"));
	EXPECT_EQ(-ENOENT, npu_open(self->dev, "names.basic", 0));
	EXPECT_EQ(-ENOENT, npu_unlink(self->dev, "names.basic"));
	close(h);
	close(o.fd);
	close(fd);
}

TEST_F(npushm, publish_errors)
{
	int fd = npu_alloc(self->dev, 4096), fd2 = npu_alloc(self->dev, 4096);

	ASSERT_LE(0, fd);
	ASSERT_LE(0, fd2);
	ASSERT_EQ(0, npu_publish(fd, "names.dup", 0600, 0));
	EXPECT_EQ(-EEXIST, npu_publish(fd2, "names.dup", 0600, 0));
	EXPECT_EQ(-EEXIST, npu_publish(fd, "names.dup", 0600, 0));
	/* One region may carry several names. */
	EXPECT_EQ(0, npu_publish(fd, "names.alias", 0600, 0));
	EXPECT_EQ(-EINVAL, npu_publish(fd2, "names.mode", 0700, 0));
	EXPECT_EQ(-EINVAL, npu_publish(fd2, "names.mode", 01666, 0));
	EXPECT_EQ(-EINVAL, npu_publish(fd2, "names.flags", 0600, 2));
	EXPECT_EQ(-EINVAL, npu_publish(fd2, "names.flags", 0600, 1U << 31));
	EXPECT_EQ(-EFAULT, npu_publish(fd2, (const char *)8, 0600, 0));
	close(fd);
	close(fd2);
	/* Non-persistent names went away with the regions. */
	EXPECT_EQ(-ENOENT, npu_open(self->dev, "names.dup", 0));
	EXPECT_EQ(-ENOENT, npu_open(self->dev, "names.alias", 0));
}

TEST_F(npushm, name_validation)
{
	static const char *const bad[] = { "", "a b", "tab\there", "nl\n", "\x01", "caf\xc3\xa9" };
	char longname[NPUSHM_NAME_MAX + 2];
	struct npushm_open o = { 0 };
	unsigned int i;
	int fd = npu_alloc(self->dev, 4096);

	ASSERT_LE(0, fd);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		EXPECT_EQ(-EINVAL, npu_publish(fd, bad[i], 0600, 0));
		EXPECT_EQ(-EINVAL, npu_open(self->dev, bad[i], 0));
		EXPECT_EQ(-EINVAL, npu_unlink(self->dev, bad[i]));
	}
	memset(longname, 'n', sizeof(longname));
	longname[NPUSHM_NAME_MAX + 1] = 0;
	EXPECT_EQ(-ENAMETOOLONG, npu_publish(fd, longname, 0600, 0));
	EXPECT_EQ(-ENAMETOOLONG, npu_open(self->dev, longname, 0));
	EXPECT_EQ(-ENAMETOOLONG, npu_unlink(self->dev, longname));
	longname[NPUSHM_NAME_MAX] = 0;
	EXPECT_EQ(0, npu_publish(fd, longname, 0600, 0));
	EXPECT_EQ(0, npu_unlink(self->dev, longname));
	/* Every visible character but space is allowed. */
	EXPECT_EQ(0, npu_publish(fd, "org/model:v1.2@sha-256+x~!", 0600, 0));
	EXPECT_EQ(0, npu_unlink(self->dev, "org/model:v1.2@sha-256+x~!"));
	o.flags = 2;
	o.name = (uintptr_t)"x";
	EXPECT_EQ(-EINVAL, npu_ioctl(self->dev, NPUSHM_IOC_OPEN, &o));
	close(fd);
}

TEST_F(npushm, unlink_rejects_flags)
{
	struct npushm_unlink u = { .name = (uintptr_t)"x", .flags = 1 };

	EXPECT_EQ(-EINVAL, npu_ioctl(self->dev, NPUSHM_IOC_UNLINK, &u));
	u.flags = 0;
	u.reserved = 1;
	EXPECT_EQ(-EINVAL, npu_ioctl(self->dev, NPUSHM_IOC_UNLINK, &u));
}

struct perm_case {
	const char *name;
	unsigned int flags;
	int want;
};

static int open_as(void *arg)
{
	struct perm_case *c = arg;
	int dev = npu_dev_open(), fd;

	if (dev < 0)
		return 100;
	fd = npu_open(dev, c->name, c->flags);
	if (fd >= 0)
		close(fd);
	return (fd >= 0 ? 0 : -fd) == c->want ? 0 : 101;
}

/* Expect open(name, flags) as uid/gid to end with errno want (0: success). */
static int try_open_as(uid_t uid, gid_t gid, const char *name, unsigned int flags, int want)
{
	struct perm_case c = { name, flags, want };

	return npu_run_as(uid, gid, open_as, &c);
}

TEST_F(npushm, open_checks_owner_group_other)
{
	int fd = npu_alloc(self->dev, 4096);

	ASSERT_LE(0, fd);
	/* Published by root (uid 0, gid 0). */
	ASSERT_EQ(0, npu_publish(fd, "perm.0640", 0640, 0));
	ASSERT_EQ(0, npu_publish(fd, "perm.0644", 0644, 0));
	ASSERT_EQ(0, npu_publish(fd, "perm.0666", 0666, 0));
	ASSERT_EQ(0, npu_publish(fd, "perm.0600", 0600, 0));
	ASSERT_EQ(0, npu_publish(fd, "perm.0660", 0660, 0));
	/* Others. */
	EXPECT_EQ(0, try_open_as(1000, 1000, "perm.0640", 0, EACCES));
	EXPECT_EQ(0, try_open_as(1000, 1000, "perm.0644", 0, 0));
	EXPECT_EQ(0, try_open_as(1000, 1000, "perm.0644", NPUSHM_OPEN_RDWR, EACCES));
	EXPECT_EQ(0, try_open_as(1000, 1000, "perm.0666", NPUSHM_OPEN_RDWR, 0));
	EXPECT_EQ(0, try_open_as(1000, 1000, "perm.0600", 0, EACCES));
	/* Group members. */
	EXPECT_EQ(0, try_open_as(1000, 0, "perm.0640", 0, 0));
	EXPECT_EQ(0, try_open_as(1000, 0, "perm.0640", NPUSHM_OPEN_RDWR, EACCES));
	EXPECT_EQ(0, try_open_as(1000, 0, "perm.0660", NPUSHM_OPEN_RDWR, 0));
	EXPECT_EQ(0, try_open_as(1000, 0, "perm.0600", 0, EACCES));
	/* A missing name is ENOENT whoever asks. */
	EXPECT_EQ(0, try_open_as(1000, 1000, "perm.none", 0, ENOENT));
	close(fd);
}

struct owned {
	int sock;
};

/* As uid 1000: publish a 0600 name, hand the handle back, exit. */
static int publish_as_user(void *arg)
{
	struct owned *o = arg;
	int dev = npu_dev_open(), fd = npu_alloc(dev, 4096);

	if (fd < 0)
		return 1;
	if (npu_publish(fd, "perm.user", 0600, NPUSHM_PUBLISH_PERSIST))
		return 2;
	return npu_send_fd(o->sock, fd) ? 3 : 0;
}

static int unlink_as(void *arg)
{
	int dev = npu_dev_open();

	return -npu_unlink(dev, arg);
}

static int drop_cap(int cap)
{
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct data[2];

	if (syscall(SYS_capget, &hdr, data))
		return -errno;
	data[cap / 32].effective &= ~(1U << (cap % 32));
	return syscall(SYS_capset, &hdr, data) ? -errno : 0;
}

TEST_F(npushm, cap_ipc_owner_overrides_mode)
{
	struct owned o;
	int sv[2], h, status;
	pid_t pid;

	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	o.sock = sv[1];
	ASSERT_EQ(0, npu_run_as(1000, 1000, publish_as_user, &o));
	h = npu_recv_fd(sv[0]);
	ASSERT_LE(0, h);
	/* Root is neither owner nor in group 1000: only the capability opens it. */
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		int dev = npu_dev_open(), fd = npu_open(dev, "perm.user", NPUSHM_OPEN_RDWR);

		if (fd < 0)
			_exit(1);
		close(fd);
		if (drop_cap(CAP_IPC_OWNER))
			_exit(2);
		fd = npu_open(dev, "perm.user", 0);
		if (fd != -EACCES)
			_exit(3);
		/* Unlinking someone else's name also needs the capability. */
		_exit(npu_unlink(dev, "perm.user") == -EACCES ? 0 : 4);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, WEXITSTATUS(status));
	/* Another user may not unlink it; the owner may. */
	EXPECT_EQ(EACCES, npu_run_as(1001, 1001, unlink_as, "perm.user"));
	EXPECT_EQ(0, npu_run_as(1000, 1000, unlink_as, "perm.user"));
	EXPECT_EQ(-ENOENT, npu_open(self->dev, "perm.user", 0));
	close(h);
	close(sv[0]);
	close(sv[1]);
}

TEST_F(npushm, root_unlinks_any_name)
{
	struct owned o;
	int sv[2], h;

	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	o.sock = sv[1];
	ASSERT_EQ(0, npu_run_as(1000, 1000, publish_as_user, &o));
	h = npu_recv_fd(sv[0]);
	ASSERT_LE(0, h);
	EXPECT_EQ(0, npu_unlink(self->dev, "perm.user"));
	close(h);
	close(sv[0]);
	close(sv[1]);
}

TEST_F(npushm, readonly_handle_never_maps_writable)
{
	size_t size = 8192;
	int fd = npu_alloc(self->dev, size), ro;
	char *p;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, npu_publish(fd, "ro.map", 0644, 0));
	ro = npu_open(self->dev, "ro.map", 0);
	ASSERT_LE(0, ro);
	EXPECT_EQ(MAP_FAILED, mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, ro, 0));
	EXPECT_EQ(EACCES, errno);
	p = mmap(NULL, size, PROT_READ, MAP_SHARED, ro, 0);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_EQ(-1, mprotect(p, size, PROT_READ | PROT_WRITE));
	EXPECT_EQ(EACCES, errno);
	EXPECT_EQ(0, p[0]);
	munmap(p, size);
	/* Nor does it publish, seal or export writable. */
	EXPECT_EQ(-EACCES, npu_publish(ro, "ro.again", 0666, 0));
	EXPECT_EQ(-EPERM, npu_seal(ro));
	EXPECT_EQ(-EACCES, npu_export(ro, NPUSHM_EXPORT_RDWR));
	close(ro);
	close(fd);
}

TEST_F(npushm, ipc_namespaces_are_isolated)
{
	struct npushm_open o = { .name = (uintptr_t)"ns.shared" };
	struct npushm_region_info info;
	int fd = npu_alloc(self->dev, 4096), status, sv[2];
	char buf[8] = "";
	pid_t pid;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, npu_publish(fd, "ns.shared", 0666, 0));
	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		int dev, mine;

		if (unshare(CLONE_NEWIPC))
			_exit(1);
		dev = npu_dev_open();
		if (npu_open(dev, "ns.shared", 0) != -ENOENT)
			_exit(2);
		if (npu_unlink(dev, "ns.shared") != -ENOENT)
			_exit(3);
		mine = npu_alloc(dev, 4096);
		/* The same name is free here... */
		if (npu_publish(mine, "ns.shared", 0600, 0))
			_exit(4);
		if (write(sv[1], "p", 1) != 1 || read(sv[1], buf, 1) != 1)
			_exit(5);
		/* ...and names published outside stay invisible. */
		if (npu_open(dev, "ns.outside", 0) != -ENOENT)
			_exit(6);
		close(mine);
		_exit(0);
	}
	ASSERT_EQ(1, read(sv[0], buf, 1));
	ASSERT_EQ(0, npu_publish(fd, "ns.outside", 0666, 0));
	ASSERT_EQ(1, write(sv[0], "c", 1));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, WEXITSTATUS(status));
	/* Ours was never replaced. */
	ASSERT_EQ(0, npu_ioctl(self->dev, NPUSHM_IOC_OPEN, &o));
	ASSERT_EQ(0, npu_info(fd, &info));
	EXPECT_EQ(info.id, o.id);
	close(o.fd);
	close(sv[0]);
	close(sv[1]);
	close(fd);
}

TEST_F(npushm, unlinked_name_keeps_region_for_holders)
{
	size_t size = 65536;
	int fd = npu_alloc(self->dev, size), h;
	char *p;

	ASSERT_LE(0, fd);
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	npu_fill(p, size, 77);
	ASSERT_EQ(0, npu_publish(fd, "names.keep", 0600, NPUSHM_PUBLISH_PERSIST));
	h = npu_open(self->dev, "names.keep", 0);
	ASSERT_LE(0, h);
	ASSERT_EQ(0, npu_unlink(self->dev, "names.keep"));
	close(fd);
	munmap(p, size);
	p = mmap(NULL, size, PROT_READ, MAP_SHARED, h, 0);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_TRUE(npu_check(p, size, 77));
	munmap(p, size);
	close(h);
}

TEST_HARNESS_MAIN
