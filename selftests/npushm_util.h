/* SPDX-License-Identifier: GPL-2.0-only */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * npushm_util.h - small helpers shared by the npushm module selftests.
 *
 * Thin wrappers over the UAPI and the filesystem (each returns 0 / a
 * descriptor, or -errno): anonymous regions from /dev/npushm, region files
 * in an instance (create, O_TMPFILE, link, open, unlink), seal, export,
 * info; mounting a private instance; running a function as another uid in
 * a child; passing descriptors over a Unix socket; changing the module's
 * run-time parameters. Header-only so each selftest stays one
 * self-contained program.
 */
#ifndef NPUSHM_UTIL_H
#define NPUSHM_UTIL_H

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/npushm.h>

#define NPUSHM_PARAM_DIR "/sys/module/npushm/parameters/"

static inline long npu_ioctl(int fd, unsigned long cmd, void *arg)
{
	return ioctl(fd, cmd, arg) ? -errno : 0;
}

static inline int npu_dev_open(void)
{
	int fd = open(NPUSHM_DEVICE_PATH, O_RDWR | O_CLOEXEC);

	return fd < 0 ? -errno : fd;
}

static inline int npu_query(int dev, struct npushm_query *q)
{
	memset(q, 0, sizeof(*q));
	return npu_ioctl(dev, NPUSHM_IOC_QUERY, q);
}

static inline uint64_t npu_in_use(int dev)
{
	struct npushm_query q;

	if (npu_query(dev, &q))
		return UINT64_MAX;
	return q.in_use;
}

static inline uint64_t npu_regions(int dev)
{
	struct npushm_query q;

	if (npu_query(dev, &q))
		return UINT64_MAX;
	return q.regions;
}

/* Wait up to @ms for the pool's bytes in use to be @want; the last value. */
static inline uint64_t npu_wait_in_use(int dev, uint64_t want, int ms)
{
	uint64_t v = npu_in_use(dev);

	for (; v != want && ms > 0; ms -= 20) {
		usleep(20000);
		v = npu_in_use(dev);
	}
	return v;
}

/* An anonymous region from /dev/npushm; returns its file or -errno. */
static inline int npu_alloc(int dev, uint64_t size)
{
	struct npushm_alloc a = { .size = size };
	long ret = npu_ioctl(dev, NPUSHM_IOC_ALLOC, &a);

	return ret ? (int)ret : a.fd;
}

/*
 * Move the caller into a mount namespace of its own in which nothing
 * propagates back: what it mounts from now on goes away with it.
 */
static inline int npu_private_mounts(void)
{
	if (unshare(CLONE_NEWNS) ||
	    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL))
		return -errno;
	return 0;
}

/* Mount a fresh instance with @opts (may be NULL) on a new directory. */
static inline int npu_mount(char dir[64], const char *opts)
{
	snprintf(dir, 64, "/tmp/npushm-test.XXXXXX");
	if (!mkdtemp(dir))
		return -errno;
	if (chmod(dir, 0755) || mount("npushm", dir, NPUSHM_FS_TYPE, 0, opts)) {
		int err = -errno;

		rmdir(dir);
		return err;
	}
	return 0;
}

static inline int npu_umount(const char *dir)
{
	int ret = umount(dir) ? -errno : 0;

	rmdir(dir);
	return ret;
}

/* Size a region file; 0 or -errno. */
static inline int npu_size(int fd, uint64_t size)
{
	return ftruncate(fd, (off_t)size) ? -errno : 0;
}

/* A named region of @size bytes (0: unsized) in @dir; its file or -errno. */
static inline int npu_create(int dir, const char *name, uint64_t size, mode_t mode)
{
	int fd = openat(dir, name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, mode), ret;

	if (fd < 0)
		return -errno;
	if (size && (ret = npu_size(fd, size))) {
		close(fd);
		unlinkat(dir, name, 0);
		return ret;
	}
	return fd;
}

/* An unnamed region (O_TMPFILE) of @size bytes in @dir; its file or -errno. */
static inline int npu_tmpfile(int dir, uint64_t size, mode_t mode)
{
	int fd = openat(dir, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, mode), ret;

	if (fd < 0)
		return -errno;
	if (size && (ret = npu_size(fd, size))) {
		close(fd);
		return ret;
	}
	return fd;
}

/* Give the region behind @fd the name @name in @dir (linkat). */
static inline int npu_link(int fd, int dir, const char *name)
{
	char proc[64];

	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	return linkat(AT_FDCWD, proc, dir, name, AT_SYMLINK_FOLLOW) ? -errno : 0;
}

static inline int npu_open(int dir, const char *name, int flags)
{
	int fd = openat(dir, name, flags | O_CLOEXEC);

	return fd < 0 ? -errno : fd;
}

static inline int npu_unlink(int dir, const char *name)
{
	return unlinkat(dir, name, 0) ? -errno : 0;
}

static inline int npu_seal(int fd)
{
	struct npushm_seal s = { .seals = NPUSHM_SEAL_WRITE };

	return npu_ioctl(fd, NPUSHM_IOC_SEAL, &s);
}

/* Export a dma-buf; returns its descriptor or -errno. */
static inline int npu_export(int fd, unsigned int flags)
{
	struct npushm_export e = { .flags = flags };
	long ret = npu_ioctl(fd, NPUSHM_IOC_EXPORT_DMABUF, &e);

	return ret ? (int)ret : e.fd;
}

static inline int npu_info(int fd, struct npushm_region_info *info)
{
	memset(info, 0, sizeof(*info));
	return npu_ioctl(fd, NPUSHM_IOC_INFO, info);
}

static inline uint64_t npu_region_id(int fd)
{
	struct npushm_region_info info;

	return npu_info(fd, &info) ? 0 : info.id;
}

/* Run fn(arg) in a child as uid/gid (no supplementary groups); its result. */
static inline int npu_run_as(uid_t uid, gid_t gid, int (*fn)(void *), void *arg)
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return -errno;
	if (!pid) {
		if (setgroups(0, NULL) || setresgid(gid, gid, gid) ||
		    setresuid(uid, uid, uid))
			_exit(254);
		_exit(fn(arg) & 0xff);
	}
	if (waitpid(pid, &status, 0) != pid)
		return -errno;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 255;
}

static inline int npu_send_fd(int sock, int fd)
{
	char byte = 'f', cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
	struct msghdr msg = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = cbuf, .msg_controllen = sizeof(cbuf),
	};
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);

	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof(int));
	return sendmsg(sock, &msg, 0) == 1 ? 0 : -errno;
}

static inline int npu_recv_fd(int sock)
{
	char byte, cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
	struct msghdr msg = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = cbuf, .msg_controllen = sizeof(cbuf),
	};
	struct cmsghdr *c;
	int fd;

	if (recvmsg(sock, &msg, MSG_CMSG_CLOEXEC) != 1)
		return -errno ? -errno : -EIO;
	c = CMSG_FIRSTHDR(&msg);
	if (!c || c->cmsg_type != SCM_RIGHTS)
		return -EPROTO;
	memcpy(&fd, CMSG_DATA(c), sizeof(int));
	return fd;
}

/* Read a module parameter as a number; 0 on error. */
static inline unsigned long long npu_param_get(const char *name)
{
	char path[128], buf[64] = "";
	FILE *f;

	snprintf(path, sizeof(path), NPUSHM_PARAM_DIR "%s", name);
	f = fopen(path, "r");
	if (!f)
		return 0;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = 0;
	fclose(f);
	return strtoull(buf, NULL, 0);
}

/* Write a module parameter; 0 or -errno. */
static inline int npu_param_set(const char *name, const char *value)
{
	char path[128];
	int fd, ret = 0;

	snprintf(path, sizeof(path), NPUSHM_PARAM_DIR "%s", name);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (write(fd, value, strlen(value)) < 0)
		ret = -errno;
	close(fd);
	return ret;
}

static inline int npu_param_set_u64(const char *name, unsigned long long value)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%llu", value);
	return npu_param_set(name, buf);
}

/* Fill with a pattern derived from seed; check it back. */
static inline void npu_fill(void *p, size_t len, uint32_t seed)
{
	uint32_t *w = p;
	size_t i;

	for (i = 0; i < len / 4; i++)
		w[i] = seed * 2654435761u + (uint32_t)i;
}

static inline bool npu_check(const void *p, size_t len, uint32_t seed)
{
	const uint32_t *w = p;
	size_t i;

	for (i = 0; i < len / 4; i++)
		if (w[i] != seed * 2654435761u + (uint32_t)i)
			return false;
	return true;
}

#endif /* NPUSHM_UTIL_H */
