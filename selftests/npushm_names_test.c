// SPDX-License-Identifier: GPL-2.0
/*
 * npushm_names_test.c - names are files of an instance: publish (O_TMPFILE
 * + linkat), open, unlink, rename; the VFS's permission checks for other
 * users and groups and capabilities; read-only files that can never map
 * writable; instances isolated from each other and scoped to mount
 * namespaces; mount options, defaults, statfs, listing and inotify.
 * Attacks: names without bound, names that outlive their namespace, a user
 * naming another user's region to strand its charge, the info ioctl leaking
 * a name the caller never used, a module path closing a sibling thread's
 * descriptor.
 */
#include <dirent.h>
#include <pthread.h>
#include <sched.h>
#include <sys/inotify.h>
#include <sys/mman.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <time.h>
#include <linux/capability.h>

#include "npushm_fixture.h"

#define MiB (1024UL * 1024)

TEST_F(npushm, publish_open_unlink)
{
	struct npushm_region_info info;
	struct stat st;
	int fd = npu_tmpfile(self->root, 8192, 0640), h, ro;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, npu_link(fd, self->root, "names.basic"));
	ASSERT_EQ(0, npu_info(fd, &info));
	ro = npu_open(self->root, "names.basic", O_RDONLY);
	ASSERT_LE(0, ro);
	ASSERT_EQ(0, fstat(ro, &st));
	EXPECT_EQ(info.id, st.st_ino);
	EXPECT_EQ(8192, st.st_size);
	EXPECT_EQ(0640 | S_IFREG, st.st_mode);
	EXPECT_EQ(1, st.st_nlink);
	EXPECT_EQ(O_RDONLY, fcntl(ro, F_GETFL) & O_ACCMODE);
	h = npu_open(self->root, "names.basic", O_RDWR);
	ASSERT_LE(0, h);
	EXPECT_EQ(0, npu_unlink(self->root, "names.basic"));
	EXPECT_EQ(-ENOENT, npu_open(self->root, "names.basic", O_RDONLY));
	EXPECT_EQ(-ENOENT, npu_unlink(self->root, "names.basic"));
	close(h);
	close(ro);
	close(fd);
}

TEST_F(npushm, publish_errors)
{
	int fd = npu_tmpfile(self->root, 4096, 0600), fd2 = npu_tmpfile(self->root, 4096, 0600);
	struct stat st;

	ASSERT_LE(0, fd);
	ASSERT_LE(0, fd2);
	ASSERT_EQ(0, npu_link(fd, self->root, "names.dup"));
	EXPECT_EQ(-EEXIST, npu_link(fd2, self->root, "names.dup"));
	EXPECT_EQ(-EEXIST, npu_link(fd, self->root, "names.dup"));
	/* One region may carry several names. */
	EXPECT_EQ(0, npu_link(fd, self->root, "names.alias"));
	ASSERT_EQ(0, fstat(fd, &st));
	EXPECT_EQ(2, st.st_nlink);
	/* Replacing a name atomically is rename(); NOREPLACE refuses. */
	EXPECT_EQ(0, npu_link(fd2, self->root, "names.next"));
	EXPECT_EQ(-1, renameat2(self->root, "names.next", self->root, "names.dup",
				RENAME_NOREPLACE));
	EXPECT_EQ(EEXIST, errno);
	EXPECT_EQ(0, renameat(self->root, "names.next", self->root, "names.dup"));
	ASSERT_EQ(0, fstat(fd, &st));
	EXPECT_EQ(1, st.st_nlink);
	/* Only regular files and directories exist here. */
	EXPECT_EQ(-1, mknodat(self->root, "names.fifo", S_IFIFO | 0600, 0));
	EXPECT_EQ(EPERM, errno);
	EXPECT_EQ(-1, symlinkat("names.dup", self->root, "names.sym"));
	EXPECT_EQ(EPERM, errno);
	close(fd);
	close(fd2);
	EXPECT_EQ(0, npu_unlink(self->root, "names.dup"));
	EXPECT_EQ(0, npu_unlink(self->root, "names.alias"));
}

TEST_F(npushm, name_validation)
{
	char longname[NPUSHM_NAME_MAX + 2];
	int fd = npu_tmpfile(self->root, 4096, 0600), sub;

	ASSERT_LE(0, fd);
	/* (An O_TMPFILE region whose last name is gone cannot be named again.) */
	ASSERT_EQ(0, npu_link(fd, self->root, "keep"));
	EXPECT_EQ(-ENOENT, npu_link(fd, self->root, ""));
	memset(longname, 'n', sizeof(longname));
	longname[NPUSHM_NAME_MAX + 1] = 0;
	EXPECT_EQ(-ENAMETOOLONG, npu_link(fd, self->root, longname));
	EXPECT_EQ(-ENAMETOOLONG, npu_open(self->root, longname, O_RDONLY));
	longname[NPUSHM_NAME_MAX] = 0;
	EXPECT_EQ(0, npu_link(fd, self->root, longname));
	EXPECT_EQ(0, npu_unlink(self->root, longname));
	/* Any byte but '/' and NUL; '/' separates directories. */
	EXPECT_EQ(0, npu_link(fd, self->root, "model:v1.2@sha-256 +x~!\xc3\xa9"));
	EXPECT_EQ(0, npu_unlink(self->root, "model:v1.2@sha-256 +x~!\xc3\xa9"));
	EXPECT_EQ(-ENOENT, npu_link(fd, self->root, "org/model"));
	ASSERT_EQ(0, mkdirat(self->root, "org", 0755));
	EXPECT_EQ(0, npu_link(fd, self->root, "org/model"));
	sub = npu_open(self->root, "org/model", O_RDONLY);
	EXPECT_LE(0, sub);
	close(sub);
	EXPECT_EQ(-1, unlinkat(self->root, "org", AT_REMOVEDIR));
	EXPECT_EQ(ENOTEMPTY, errno);
	EXPECT_EQ(0, npu_unlink(self->root, "org/model"));
	EXPECT_EQ(0, unlinkat(self->root, "org", AT_REMOVEDIR));
	EXPECT_EQ(0, npu_unlink(self->root, "keep"));
	/* Now it has no name left: it stays unnamed. */
	EXPECT_EQ(-ENOENT, npu_link(fd, self->root, "again"));
	close(fd);
}

TEST_F(npushm, unlink_rejects_flags)
{
	int fd = npu_create(self->root, "flags", 4096, 0600);

	ASSERT_LE(0, fd);
	EXPECT_EQ(-1, unlinkat(self->root, "flags", 0x4));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, linkat(fd, "", self->root, "flags2", 0x8000));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, renameat2(self->root, "flags", self->root, "flags3", 1U << 7));
	EXPECT_EQ(EINVAL, errno);
	close(fd);
	EXPECT_EQ(0, npu_unlink(self->root, "flags"));
}

struct perm_case {
	const char *dir;
	const char *name;
	int flags;
	int want;
};

static int open_as(void *arg)
{
	struct perm_case *c = arg;
	char path[256];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", c->dir, c->name);
	fd = open(path, c->flags | O_CLOEXEC);
	if (fd >= 0)
		close(fd);
	return (fd >= 0 ? 0 : errno) == c->want ? 0 : 101;
}

/* Expect open(name, flags) as uid/gid to end with errno want (0: success). */
static int try_open_as(const char *dir, uid_t uid, gid_t gid, const char *name, int flags,
		       int want)
{
	struct perm_case c = { dir, name, flags, want };

	return npu_run_as(uid, gid, open_as, &c);
}

TEST_F(npushm, open_checks_owner_group_other)
{
	static const struct { const char *name; mode_t mode; } files[] = {
		{ "perm.0640", 0640 }, { "perm.0644", 0644 }, { "perm.0666", 0666 },
		{ "perm.0600", 0600 }, { "perm.0660", 0660 },
	};
	unsigned int i;

	/* Made by root (uid 0, gid 0). */
	for (i = 0; i < 5; i++) {
		int fd = npu_create(self->root, files[i].name, 4096, files[i].mode);

		ASSERT_LE(0, fd);
		ASSERT_EQ(0, fchmod(fd, files[i].mode));
		close(fd);
	}
	/* Others. */
	EXPECT_EQ(0, try_open_as(self->dir, 1000, 1000, "perm.0640", O_RDONLY, EACCES));
	EXPECT_EQ(0, try_open_as(self->dir, 1000, 1000, "perm.0644", O_RDONLY, 0));
	EXPECT_EQ(0, try_open_as(self->dir, 1000, 1000, "perm.0644", O_RDWR, EACCES));
	EXPECT_EQ(0, try_open_as(self->dir, 1000, 1000, "perm.0666", O_RDWR, 0));
	EXPECT_EQ(0, try_open_as(self->dir, 1000, 1000, "perm.0600", O_RDONLY, EACCES));
	/* Group members. */
	EXPECT_EQ(0, try_open_as(self->dir, 1000, 0, "perm.0640", O_RDONLY, 0));
	EXPECT_EQ(0, try_open_as(self->dir, 1000, 0, "perm.0640", O_RDWR, EACCES));
	EXPECT_EQ(0, try_open_as(self->dir, 1000, 0, "perm.0660", O_RDWR, 0));
	EXPECT_EQ(0, try_open_as(self->dir, 1000, 0, "perm.0600", O_RDONLY, EACCES));
	/* A missing name is ENOENT whoever asks. */
	EXPECT_EQ(0, try_open_as(self->dir, 1000, 1000, "perm.none", O_RDONLY, ENOENT));
	for (i = 0; i < 5; i++)
		EXPECT_EQ(0, npu_unlink(self->root, files[i].name));
}

struct owned {
	const char *dir;
	int sock;
};

/* As uid 1000: publish a 0600 region, hand the file back, exit. */
static int publish_as_user(void *arg)
{
	struct owned *o = arg;
	int root = open(o->dir, O_RDONLY | O_DIRECTORY), fd;

	fd = npu_tmpfile(root, 4096, 0600);
	if (fd < 0)
		return 1;
	if (npu_link(fd, root, "perm.user"))
		return 2;
	return npu_send_fd(o->sock, fd) ? 3 : 0;
}

static int unlink_as(void *arg)
{
	struct owned *o = arg;
	int root = open(o->dir, O_RDONLY | O_DIRECTORY);

	return -npu_unlink(root, "perm.user");
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

TEST_F(npushm, cap_dac_override_overrides_mode)
{
	struct owned o = { .dir = self->dir };
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
		int fd = npu_open(self->root, "perm.user", O_RDWR);

		if (fd < 0)
			_exit(1);
		close(fd);
		if (drop_cap(CAP_DAC_OVERRIDE) || drop_cap(CAP_DAC_READ_SEARCH))
			_exit(2);
		fd = npu_open(self->root, "perm.user", O_RDONLY);
		_exit(fd == -EACCES ? 0 : 3);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, WEXITSTATUS(status));
	/* The root directory is sticky: another user may not unlink it; the owner may. */
	EXPECT_EQ(EPERM, npu_run_as(1001, 1001, unlink_as, &o));
	EXPECT_EQ(0, npu_run_as(1000, 1000, unlink_as, &o));
	EXPECT_EQ(-ENOENT, npu_open(self->root, "perm.user", O_RDONLY));
	close(h);
	close(sv[0]);
	close(sv[1]);
}

TEST_F(npushm, root_unlinks_any_name)
{
	struct owned o = { .dir = self->dir };
	int sv[2], h;

	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	o.sock = sv[1];
	ASSERT_EQ(0, npu_run_as(1000, 1000, publish_as_user, &o));
	h = npu_recv_fd(sv[0]);
	ASSERT_LE(0, h);
	EXPECT_EQ(0, npu_unlink(self->root, "perm.user"));
	close(h);
	close(sv[0]);
	close(sv[1]);
}

TEST_F(npushm, readonly_handle_never_maps_writable)
{
	size_t size = 8192;
	int fd = npu_create(self->root, "ro.map", size, 0644), ro;
	char *p;

	ASSERT_LE(0, fd);
	ro = npu_open(self->root, "ro.map", O_RDONLY);
	ASSERT_LE(0, ro);
	EXPECT_EQ(MAP_FAILED, mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, ro, 0));
	EXPECT_EQ(EACCES, errno);
	p = mmap(NULL, size, PROT_READ, MAP_SHARED, ro, 0);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_EQ(-1, mprotect(p, size, PROT_READ | PROT_WRITE));
	EXPECT_EQ(EACCES, errno);
	EXPECT_EQ(0, p[0]);
	munmap(p, size);
	/* Nor does it write, seal or export writable. */
	EXPECT_EQ(-1, write(ro, "x", 1));
	EXPECT_EQ(EBADF, errno);
	EXPECT_EQ(-EPERM, npu_seal(ro));
	EXPECT_EQ(-EACCES, npu_export(ro, NPUSHM_EXPORT_RDWR));
	close(ro);
	close(fd);
	EXPECT_EQ(0, npu_unlink(self->root, "ro.map"));
}

/* Instances are separate namespaces of names, and mount namespaces scope them. */
TEST_F(npushm, instances_are_isolated)
{
	char other[64];
	int fd = npu_create(self->root, "ns.shared", 4096, 0666), root2, mine, status;
	pid_t pid;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, npu_mount(other, NULL));
	root2 = open(other, O_RDONLY | O_DIRECTORY);
	ASSERT_LE(0, root2);
	EXPECT_EQ(-ENOENT, npu_open(root2, "ns.shared", O_RDONLY));
	/* The same name is free there... */
	mine = npu_create(root2, "ns.shared", 8192, 0600);
	ASSERT_LE(0, mine);
	/* ...and links cannot cross instances. */
	EXPECT_EQ(-EXDEV, npu_link(fd, root2, "ns.cross"));
	close(mine);
	close(root2);
	EXPECT_EQ(0, npu_umount(other));

	/* A mount made in a new mount namespace is invisible outside it. */
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		if (unshare(CLONE_NEWNS) || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL))
			_exit(1);
		if (mount("npushm", self->dir, NPUSHM_FS_TYPE, 0, NULL))
			_exit(2);
		mine = open(self->dir, O_RDONLY | O_DIRECTORY);
		if (npu_open(mine, "ns.shared", O_RDONLY) != -ENOENT)
			_exit(3);
		_exit(npu_create(mine, "ns.inner", 4096, 0600) < 0 ? 4 : 0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, WEXITSTATUS(status));
	EXPECT_EQ(-ENOENT, npu_open(self->root, "ns.inner", O_RDONLY));
	close(fd);
	EXPECT_EQ(0, npu_unlink(self->root, "ns.shared"));
}

TEST_F(npushm, unlinked_name_keeps_region_for_holders)
{
	size_t size = 65536;
	int fd = npu_tmpfile(self->root, size, 0600), h;
	char *p;

	ASSERT_LE(0, fd);
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	npu_fill(p, size, 77);
	ASSERT_EQ(0, npu_link(fd, self->root, "names.keep"));
	h = npu_open(self->root, "names.keep", O_RDONLY);
	ASSERT_LE(0, h);
	ASSERT_EQ(0, npu_unlink(self->root, "names.keep"));
	close(fd);
	munmap(p, size);
	p = mmap(NULL, size, PROT_READ, MAP_SHARED, h, 0);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_TRUE(npu_check(p, size, 77));
	munmap(p, size);
	close(h);
}

/* Publishing atomically: until linkat, nobody can open a partial model. */
TEST_F(npushm, tmpfile_publish_is_atomic)
{
	size_t size = 3 * MiB;
	int fd = npu_tmpfile(self->root, 0, 0600), ro;
	struct npushm_region_info info;
	DIR *d;
	struct dirent *e;
	int entries = 0;
	char *p;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, npu_size(fd, size));
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	npu_fill(p, size, 9);
	d = fdopendir(dup(self->root));
	ASSERT_NE(NULL, d);
	while ((e = readdir(d)))
		entries += e->d_name[0] != '.';
	EXPECT_EQ(0, entries);
	munmap(p, size);
	ASSERT_EQ(0, npu_seal(fd));
	ASSERT_EQ(0, fchmod(fd, 0444));
	ASSERT_EQ(0, npu_link(fd, self->root, "model"));
	ro = npu_open(self->root, "model", O_RDONLY);
	ASSERT_LE(0, ro);
	ASSERT_EQ(0, npu_info(ro, &info));
	EXPECT_EQ(NPUSHM_INFO_SEALED | NPUSHM_INFO_NAMED, info.flags);
	p = mmap(NULL, size, PROT_READ, MAP_SHARED, ro, 0);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_TRUE(npu_check(p, size, 9));
	munmap(p, size);
	rewinddir(d);
	entries = 0;
	while ((e = readdir(d)))
		entries += !strcmp(e->d_name, "model");
	EXPECT_EQ(1, entries);
	closedir(d);
	close(ro);
	close(fd);
	EXPECT_EQ(0, npu_unlink(self->root, "model"));
}

/*
 * Attack: one user published names in a loop and filled kernel memory.
 * Every name (a file or an extra link) counts against nr_inodes; past it,
 * ENOSPC, and unlinking gives the room back.
 */
TEST_F(npushm, names_are_bounded_by_nr_inodes)
{
	char dir[64], name[300];
	int root, fd, i, made = 0, ret = 0;
	struct statfs sfs;

	ASSERT_EQ(0, npu_mount(dir, "nr_inodes=64"));
	root = open(dir, O_RDONLY | O_DIRECTORY);
	ASSERT_LE(0, root);
	ASSERT_EQ(0, fstatfs(root, &sfs));
	EXPECT_EQ(64, sfs.f_files);
	EXPECT_EQ(63, sfs.f_ffree);	/* the root directory */
	fd = npu_tmpfile(root, 4096, 0600);	/* one more */
	ASSERT_LE(0, fd);
	for (i = 0; i < 1000; i++) {
		snprintf(name, sizeof(name), "%0250d", i);
		ret = npu_link(fd, root, name);
		if (ret)
			break;
		made++;
	}
	EXPECT_EQ(-ENOSPC, ret);
	/* 64 - the root - the file; its first link was counted with it. */
	EXPECT_EQ(63, made);
	EXPECT_EQ(-ENOSPC, npu_create(root, "one.more", 0, 0600));
	ASSERT_EQ(0, fstatfs(root, &sfs));
	EXPECT_EQ(0, sfs.f_ffree);
	snprintf(name, sizeof(name), "%0250d", 0);
	EXPECT_EQ(0, npu_unlink(root, name));
	EXPECT_EQ(0, npu_link(fd, root, "after.unlink"));
	close(fd);
	close(root);
	/* The instance, its names and the region go with the mount. */
	EXPECT_EQ(0, npu_umount(dir));
	EXPECT_EQ(self->q0.in_use, npu_in_use(self->dev));
}

/*
 * Attack: a persistent name outlived its namespace: nobody could remove it,
 * and its region and charge stayed until rmmod. An instance mounted in a
 * container's mount namespace dies with the namespace.
 */
TEST_F(npushm, instance_dies_with_its_namespace)
{
	int status, sv[2];
	char ok;
	pid_t pid;

	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		int root, fd;

		if (unshare(CLONE_NEWNS | CLONE_NEWIPC) ||
		    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) ||
		    mount("npushm", self->dir, NPUSHM_FS_TYPE, 0, "size=16M"))
			_exit(1);
		root = open(self->dir, O_RDONLY | O_DIRECTORY);
		fd = npu_create(root, "container.model", 8 * MiB, 0644);
		if (fd < 0)
			_exit(2);
		if (write(sv[1], "k", 1) != 1)
			_exit(3);
		/* Dies without unlinking or unmounting anything. */
		_exit(0);
	}
	ASSERT_EQ(1, read(sv[0], &ok, 1));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, WEXITSTATUS(status));
	/*
	 * The namespace is gone: so are the instance, the name and the memory
	 * (the last mount of a dead namespace goes from a work item: wait).
	 */
	EXPECT_EQ(self->q0.in_use, npu_wait_in_use(self->dev, self->q0.in_use, 5000));
	close(sv[0]);
	close(sv[1]);
}

struct strand {
	const char *dir;
	int ret;
};

static int link_as_other(void *arg)
{
	struct strand *s = arg;
	int root = open(s->dir, O_RDONLY | O_DIRECTORY), fd;

	fd = npu_open(root, "a.model", O_RDONLY);
	if (fd < 0)
		return 10;
	/* Read access is enough to map it, not to name it. */
	return -npu_link(fd, root, "b.keeps.it");
}

/*
 * Attack: B opened A's sealed 0644 region and gave it a persistent name of
 * its own; A could neither remove that name nor get its quota back. Only a
 * file's owner may link it; the charge is the owner's, and is given back
 * when the last name and the last user are gone.
 */
TEST_F(npushm, only_the_owner_keeps_a_region_named)
{
	struct strand s = { .dir = self->dir };
	struct npushm_region_info info;
	char saved[16] = "";
	int fd, ret, ph;

	/* Whatever fs.protected_hardlinks says (Debian sets 1, the kernel's default is 0). */
	ph = open("/proc/sys/fs/protected_hardlinks", O_RDWR);
	ASSERT_LE(0, ph);
	ASSERT_LT(0, read(ph, saved, sizeof(saved) - 1));
	ASSERT_EQ(1, pwrite(ph, "0", 1, 0));
	fd = npu_tmpfile(self->root, 2 * MiB, 0644);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, fchown(fd, 1000, 1000));
	ASSERT_EQ(0, npu_info(fd, &info));
	EXPECT_EQ(1000, info.charged_uid);
	ASSERT_EQ(0, npu_seal(fd));
	ASSERT_EQ(0, npu_link(fd, self->root, "a.model"));
	close(fd);
	ret = npu_run_as(1001, 1001, link_as_other, &s);
	EXPECT_EQ(EPERM, ret);
	EXPECT_EQ((ssize_t)strlen(saved), pwrite(ph, saved, strlen(saved), 0));
	close(ph);
	EXPECT_EQ(-ENOENT, npu_open(self->root, "b.keeps.it", O_RDONLY));
	/* A removes its name: the memory and A's charge are gone. */
	EXPECT_EQ(0, npu_unlink(self->root, "a.model"));
	EXPECT_EQ(self->q0.in_use, npu_in_use(self->dev));
	EXPECT_EQ(self->q0.regions, npu_regions(self->dev));
}

/*
 * Attack: NPUSHM_IOC_INFO returned a name published in another namespace.
 * It now reports the name the caller's own file was opened by, if that
 * link still exists, and nothing else.
 */
TEST_F(npushm, info_names_only_the_callers_link)
{
	struct npushm_region_info info;
	int fd = npu_tmpfile(self->root, 4096, 0644), pub, status, sv[2];
	pid_t pid;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, npu_link(fd, self->root, "a.secret.name"));
	ASSERT_EQ(0, npu_link(fd, self->root, "public"));
	pub = npu_open(self->root, "public", O_RDONLY);
	ASSERT_LE(0, pub);
	ASSERT_EQ(0, npu_info(pub, &info));
	EXPECT_STREQ("public", info.name);
	EXPECT_EQ(2, info.names);
	ASSERT_EQ(0, npu_info(fd, &info));
	EXPECT_STREQ("", info.name);
	/* A file passed to a process in another mount namespace: still nothing. */
	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		struct npushm_region_info in;
		int h;

		if (unshare(CLONE_NEWNS | CLONE_NEWIPC))
			_exit(1);
		h = npu_recv_fd(sv[1]);
		if (h < 0 || npu_info(h, &in))
			_exit(2);
		_exit(in.name[0] ? 3 : 0);
	}
	ASSERT_EQ(0, npu_send_fd(sv[0], fd));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, WEXITSTATUS(status));
	/* Once "public" is unlinked, its file names nothing. */
	ASSERT_EQ(0, npu_unlink(self->root, "public"));
	ASSERT_EQ(0, npu_info(pub, &info));
	EXPECT_STREQ("", info.name);
	close(pub);
	close(fd);
	close(sv[0]);
	close(sv[1]);
	EXPECT_EQ(0, npu_unlink(self->root, "a.secret.name"));
}

struct fd_race {
	int dev;
	volatile int stop;
	int target;
	long clobbered;
	long rounds;
};

static void *alloc_in_new_namespaces(void *arg)
{
	struct fd_race *r = arg;

	while (!r->stop) {
		int fd;

		/* A new IPC namespace made the old module pin it through an fd. */
		if (unshare(CLONE_NEWIPC))
			break;
		fd = npu_alloc(r->dev, 4096);
		if (fd >= 0)
			close(fd);
	}
	return NULL;
}

/*
 * Attack: pinning a namespace installed an fd in the caller's table and
 * closed it again, which could close a sibling thread's descriptor. The
 * sibling keeps re-creating its descriptor while regions are made in fresh
 * namespaces, and must never find it closed.
 */
TEST_F(npushm, alloc_never_touches_the_fd_table)
{
	struct fd_race r = { .dev = self->dev };
	pthread_t t;
	time_t end = time(NULL) + 2;
	int pipefd[2];

	ASSERT_EQ(0, pipe(pipefd));
	r.target = fcntl(pipefd[0], F_DUPFD_CLOEXEC, 200);
	ASSERT_LE(0, r.target);
	ASSERT_EQ(0, pthread_create(&t, NULL, alloc_in_new_namespaces, &r));
	while (time(NULL) < end) {
		close(r.target);
		if (dup2(pipefd[0], r.target) != r.target)
			break;
		r.rounds++;
		if (fcntl(r.target, F_GETFD) < 0)
			r.clobbered++;
	}
	r.stop = 1;
	pthread_join(t, NULL);
	TH_LOG("%ld rounds", r.rounds);
	EXPECT_EQ(0, r.clobbered);
	close(r.target);
	close(pipefd[0]);
	close(pipefd[1]);
}

TEST_F(npushm, mount_options_and_defaults)
{
	char dir[64], line[512];
	struct statfs sfs;
	struct stat st;
	bool found = false;
	FILE *f;
	int root, fd;

	/* Defaults: mode 1777, 16384 inodes, bounded by the pool only. */
	ASSERT_EQ(0, stat(self->dir, &st));
	EXPECT_EQ(S_IFDIR | 01777, st.st_mode);
	ASSERT_EQ(0, statfs(self->dir, &sfs));
	EXPECT_EQ(NPUSHM_FS_MAGIC, sfs.f_type);
	EXPECT_EQ(16384, sfs.f_files);
	EXPECT_EQ(self->q0.capacity / 4096, sfs.f_blocks);

	ASSERT_EQ(0, npu_mount(dir, "size=8M,nr_inodes=10,mode=0750,uid=1000,gid=1001"));
	ASSERT_EQ(0, stat(dir, &st));
	EXPECT_EQ(S_IFDIR | 0750, st.st_mode);
	EXPECT_EQ(1000, st.st_uid);
	EXPECT_EQ(1001, st.st_gid);
	ASSERT_EQ(0, statfs(dir, &sfs));
	EXPECT_EQ(8 * MiB / 4096, sfs.f_blocks);
	EXPECT_EQ(10, sfs.f_files);
	f = fopen("/proc/self/mounts", "r");
	ASSERT_NE(NULL, f);
	while (fgets(line, sizeof(line), f))
		if (strstr(line, dir))
			found = strstr(line, "size=8388608,nr_inodes=10,mode=750,uid=1000,gid=1001");
	fclose(f);
	EXPECT_TRUE(found);
	root = open(dir, O_RDONLY | O_DIRECTORY);
	ASSERT_LE(0, root);
	fd = npu_create(root, "fits", 6 * MiB, 0600);
	ASSERT_LE(0, fd);
	EXPECT_EQ(-ENOSPC, npu_create(root, "does.not", 4 * MiB, 0600));
	ASSERT_EQ(0, statfs(dir, &sfs));
	EXPECT_EQ(2 * MiB / 4096, sfs.f_bfree);
	/* Remount: the size may not go below what is held. */
	EXPECT_EQ(-1, mount(NULL, dir, NULL, MS_REMOUNT, "size=4M"));
	EXPECT_EQ(0, mount(NULL, dir, NULL, MS_REMOUNT, "size=12M"));
	close(fd);
	close(root);
	EXPECT_EQ(0, npu_umount(dir));
	/* Bad options are refused. */
	EXPECT_EQ(-EINVAL, npu_mount(dir, "size=lots"));
	EXPECT_EQ(-EINVAL, npu_mount(dir, "size=101%"));
	EXPECT_EQ(-EINVAL, npu_mount(dir, "size=16E"));
	EXPECT_EQ(-EINVAL, npu_mount(dir, "nr_inodes=-1"));
	EXPECT_EQ(-EINVAL, npu_mount(dir, "mode=abc"));
	EXPECT_EQ(-EINVAL, npu_mount(dir, "huge=always"));
	EXPECT_EQ(0, npu_mount(dir, "size=50%"));
	ASSERT_EQ(0, statfs(dir, &sfs));
	EXPECT_EQ((self->q0.capacity / 100 * 50 + 4095) / 4096, sfs.f_blocks);
	EXPECT_EQ(0, npu_umount(dir));
}

/* Events come from inotify on the instance (there is no netlink multicast). */
TEST_F(npushm, inotify_reports_publish_seal_unlink)
{
	char buf[4096] __attribute__((aligned(8))), path[128];
	int in, fd, n, off, wdir, wfile;
	uint32_t seen = 0;

	in = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
	ASSERT_LE(0, in);
	wdir = inotify_add_watch(in, self->dir, IN_CREATE | IN_DELETE | IN_MOVED_TO);
	ASSERT_LE(0, wdir);
	fd = npu_tmpfile(self->root, 4096, 0600);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, npu_link(fd, self->root, "ev.model"));
	snprintf(path, sizeof(path), "%s/ev.model", self->dir);
	wfile = inotify_add_watch(in, path, IN_ATTRIB);
	ASSERT_LE(0, wfile);
	ASSERT_EQ(0, npu_seal(fd));
	ASSERT_EQ(0, renameat(self->root, "ev.model", self->root, "ev.renamed"));
	ASSERT_EQ(0, npu_unlink(self->root, "ev.renamed"));
	while ((n = read(in, buf, sizeof(buf))) > 0) {
		for (off = 0; off < n;) {
			struct inotify_event *e = (void *)(buf + off);

			if (e->wd == wfile)
				seen |= e->mask & IN_ATTRIB;
			else if (e->len && !strcmp(e->name, "ev.model"))
				seen |= e->mask & IN_CREATE;
			else if (e->len && !strcmp(e->name, "ev.renamed"))
				seen |= e->mask & (IN_MOVED_TO | IN_DELETE);
			off += sizeof(*e) + e->len;
		}
	}
	EXPECT_EQ(IN_CREATE | IN_ATTRIB | IN_MOVED_TO | IN_DELETE, seen);
	close(fd);
	close(in);
}

TEST_HARNESS_MAIN
