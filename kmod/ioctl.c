// SPDX-License-Identifier: GPL-2.0-only
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * ioctl.c - extensible ioctl argument handling shared by /dev/npushm,
 * region files, watches and spaces.
 *
 * The size field of the ioctl number is the size of the caller's struct.
 * Input is copied with copy_struct_from_user(): a shorter struct is
 * zero-extended, a longer one must be zero beyond what the kernel knows
 * (else E2BIG), and anything below the first published size is EINVAL.
 * Output is copied back up to the smaller size, the caller's extra bytes
 * are cleared. A handler may hand back a file: it is installed as a
 * descriptor only once the reply reached user space.
 */
#include <linux/anon_inodes.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/uaccess.h>

#include "npushm_internal.h"

union npushm_ioctl_arg {
	struct npushm_query query;
	struct npushm_alloc alloc;
	struct npushm_seal seal;
	struct npushm_export export;
	struct npushm_region_info info;
	struct npushm_watch_open watch_open;
	struct npushm_watch_range watch_range;
	struct npushm_watch_del watch_del;
	struct npushm_space_open space_open;
	struct npushm_space_grant_req space_grant;
	struct npushm_space_revoke space_revoke;
};

static const struct npushm_ioctl_desc *
npushm_ioctl_find(const struct npushm_ioctl_desc *descs, size_t n,
		  unsigned int cmd)
{
	size_t i;

	if (_IOC_TYPE(cmd) != NPUSHM_IOC_MAGIC)
		return NULL;
	for (i = 0; i < n; i++) {
		if (_IOC_NR(descs[i].cmd) == _IOC_NR(cmd) &&
		    _IOC_DIR(descs[i].cmd) == _IOC_DIR(cmd))
			return &descs[i];
	}
	return NULL;
}

/**
 * npushm_ioctl_dispatch - run an extensible ioctl
 * @descs: the ioctls the file supports
 * @n: entries in @descs
 * @file: the file the ioctl was issued on
 * @cmd: the caller's ioctl number (its size field is the caller's size)
 * @arg: the caller's struct
 *
 * Return: 0 or the handler's error; -ENOTTY for an unknown command,
 * -EINVAL for a struct smaller than its first version, -E2BIG for unknown
 * non-zero trailing bytes, -EFAULT for unreadable or unwritable memory.
 */
long npushm_ioctl_dispatch(const struct npushm_ioctl_desc *descs, size_t n,
			   struct file *file, unsigned int cmd,
			   unsigned long arg)
{
	const struct npushm_ioctl_desc *desc;
	struct npushm_ioctl_out out = { .fd = -1 };
	void __user *uarg = (void __user *)arg;
	union npushm_ioctl_arg karg;
	size_t usize, ksize;
	int ret;

	desc = npushm_ioctl_find(descs, n, cmd);
	if (!desc)
		return -ENOTTY;
	usize = _IOC_SIZE(cmd);
	ksize = _IOC_SIZE(desc->cmd);
	if (WARN_ON_ONCE(ksize > sizeof(karg)))
		return -EINVAL;
	if (usize < desc->size_ver0)
		return -EINVAL;

	memset(&karg, 0, sizeof(karg));
	if (_IOC_DIR(cmd) & _IOC_WRITE) {
		ret = copy_struct_from_user(&karg, ksize, uarg, usize);
		if (ret)
			return ret;
	}

	ret = desc->handler(file, &karg, &out);
	if (ret)
		return ret;

	if (_IOC_DIR(cmd) & _IOC_READ) {
		if (copy_to_user(uarg, &karg, min(usize, ksize)) ||
		    (usize > ksize && clear_user(uarg + ksize, usize - ksize))) {
			ret = -EFAULT;
			goto out_discard;
		}
	}
	if (out.file)
		fd_install(out.fd, out.file);
	return 0;

out_discard:
	if (out.undo)
		out.undo(file, &karg);
	if (out.file) {
		put_unused_fd(out.fd);
		fput(out.file);
	}
	return ret;
}

/**
 * npushm_ioctl_new_file - an anonymous file for an ioctl to hand back
 * @name: its name ("[npushm-...]")
 * @fops: its operations
 * @priv: its private_data
 * @flags: O_RDONLY or O_RDWR; close-on-exec is added
 * @out: receives the file and its reserved descriptor, installed by
 *	npushm_ioctl_dispatch() once the reply reached user space
 *
 * Return: the reserved descriptor, or -EMFILE, -ENFILE, -ENOMEM. On
 * success the file's release owns @priv.
 */
int npushm_ioctl_new_file(const char *name, const struct file_operations *fops,
			  void *priv, int flags, struct npushm_ioctl_out *out)
{
	struct file *file;
	int fd;

	fd = get_unused_fd_flags(O_CLOEXEC);
	if (fd < 0)
		return fd;
	file = anon_inode_getfile(name, fops, priv, flags | O_CLOEXEC);
	if (IS_ERR(file)) {
		put_unused_fd(fd);
		return PTR_ERR(file);
	}
	out->file = file;
	out->fd = fd;
	return fd;
}
