// SPDX-License-Identifier: GPL-2.0-only
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * dev.c - npushm.ko: module set-up and the /dev/npushm misc device.
 *
 * /dev/npushm reports the pool (NPUSHM_IOC_QUERY) and hands out anonymous
 * regions (NPUSHM_IOC_ALLOC), shared only by file descriptor; named
 * regions are files of the filesystem (fs.c). NPUSHM_IOC_WATCH opens a
 * watch on the caller's address space (watch.c), NPUSHM_IOC_SPACE a space
 * through which it grants peers access to ranges of it (space.c). Its mode is the module
 * parameter dev_mode (default 0660: root and the device's group; a
 * distribution's udev rule chooses the group).
 *
 * Everything user space can reach (the netlink family, the filesystem type,
 * the device node) is registered only once the rest is set up, the device
 * node last, and unregistered first.
 */
#include <linux/cred.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/module.h>

#include "npushm_internal.h"

static unsigned int npushm_dev_mode = 0660;
module_param_named(dev_mode, npushm_dev_mode, uint, 0444);
MODULE_PARM_DESC(dev_mode,
		 "Permission bits of /dev/npushm, at most 0666 (default 0660)");

static int npushm_dev_ioctl_query(struct file *file, void *arg,
				  struct npushm_ioctl_out *out)
{
	struct npushm_query *q = arg;

	q->abi_version = NPUSHM_ABI_VERSION;
	q->features = NPUSHM_FEAT_FS | NPUSHM_FEAT_SEAL | NPUSHM_FEAT_DMABUF |
		      NPUSHM_FEAT_GUP | NPUSHM_FEAT_NETLINK | NPUSHM_FEAT_PINS |
		      NPUSHM_FEAT_WATCH_IF_BUILT | NPUSHM_FEAT_SPACE;
	q->chunk_size = PAGE_SIZE << npushm_sysmem_provider.chunk_order;
	q->page_size = PAGE_SIZE;
	npushm_pool_query(q, npushm_account_uid(current_euid()),
			  npushm_pool_global_visible());
	return 0;
}

static int npushm_dev_ioctl_alloc(struct file *file, void *arg,
				  struct npushm_ioctl_out *out)
{
	struct npushm_alloc *req = arg;
	struct file *region;
	int fd, ret;

	if (req->flags || !req->size)
		return -EINVAL;
	fd = get_unused_fd_flags(O_CLOEXEC);
	if (fd < 0)
		return fd;
	ret = npushm_anon_alloc(req->size, &region, &req->id);
	if (ret) {
		put_unused_fd(fd);
		return ret;
	}
	req->size = i_size_read(file_inode(region));
	req->fd = fd;
	out->file = region;
	out->fd = fd;
	return 0;
}

static int npushm_dev_ioctl_watch(struct file *file, void *arg,
				  struct npushm_ioctl_out *out)
{
	return npushm_watch_create(arg, out);
}

static int npushm_dev_ioctl_space(struct file *file, void *arg,
				  struct npushm_ioctl_out *out)
{
	return npushm_space_create(arg, out);
}

static const struct npushm_ioctl_desc npushm_dev_ioctls[] = {
	{ NPUSHM_IOC_QUERY, NPUSHM_QUERY_SIZE_VER0, npushm_dev_ioctl_query },
	{ NPUSHM_IOC_ALLOC, NPUSHM_ALLOC_SIZE_VER0, npushm_dev_ioctl_alloc },
	{ NPUSHM_IOC_WATCH, NPUSHM_WATCH_OPEN_SIZE_VER0, npushm_dev_ioctl_watch },
	{ NPUSHM_IOC_SPACE, NPUSHM_SPACE_OPEN_SIZE_VER0, npushm_dev_ioctl_space },
};

static long npushm_dev_ioctl(struct file *file, unsigned int cmd,
			     unsigned long arg)
{
	return npushm_ioctl_dispatch(npushm_dev_ioctls,
				     ARRAY_SIZE(npushm_dev_ioctls),
				     file, cmd, arg);
}

static const struct file_operations npushm_dev_fops = {
	.owner = THIS_MODULE,
	.unlocked_ioctl = npushm_dev_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.llseek = noop_llseek,
};

static struct miscdevice npushm_misc = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = "npushm",
	.fops = &npushm_dev_fops,
};

/*
 * The built-in providers: the system-memory and NUMA node providers and the
 * PCI BAR providers' driver, registered at load; 0 or -errno.
 */
static int __init npushm_builtin_providers_init(void)
{
	int ret = npushm_provider_register(&npushm_sysmem_provider);

	if (ret)
		return ret;
	ret = npushm_node_providers_init();
	if (ret)
		goto out_sysmem;
	ret = npushm_bar_providers_init();
	if (ret)
		goto out_nodes;
	return 0;

out_nodes:
	npushm_node_providers_exit();
out_sysmem:
	npushm_provider_unregister(&npushm_sysmem_provider);
	return ret;
}

/* unregister them (also on a failed load) */
static void npushm_builtin_providers_exit(void)
{
	npushm_bar_providers_exit();
	npushm_node_providers_exit();
	npushm_provider_unregister(&npushm_sysmem_provider);
}

static int __init npushm_init(void)
{
	int ret;

	if (npushm_dev_mode & ~0666) {
		pr_err("npushm: dev_mode=%#o: only read and write bits (at most 0666)\n",
		       npushm_dev_mode);
		return -EINVAL;
	}
	npushm_misc.mode = npushm_dev_mode;
	ret = npushm_pool_init();
	if (ret)
		return ret;
	ret = npushm_builtin_providers_init();
	if (ret)
		goto out_pool;
	ret = npushm_fs_init();
	if (ret)
		goto out_provider;
	ret = npushm_netlink_init();
	if (ret)
		goto out_fs;
	ret = npushm_fs_register();
	if (ret)
		goto out_netlink;
	ret = misc_register(&npushm_misc);
	if (ret)
		goto out_unregister;
	pr_info("npushm: pool capacity %llu MiB, uid quota %llu MiB\n",
		npushm_pool_capacity() >> 20, npushm_pool_uid_quota() >> 20);
	return 0;

out_unregister:
	npushm_fs_unregister();
out_netlink:
	npushm_netlink_exit();
out_fs:
	npushm_fs_exit();
out_provider:
	npushm_builtin_providers_exit();
out_pool:
	npushm_pool_exit();
	return ret;
}

static void __exit npushm_exit(void)
{
	misc_deregister(&npushm_misc);
	npushm_fs_unregister();
	npushm_netlink_exit();
	npushm_fs_exit();
	npushm_builtin_providers_exit();
	npushm_pool_exit();
}

module_init(npushm_init);
module_exit(npushm_exit);

MODULE_DESCRIPTION("npushm: device-memory regions shared across processes");
MODULE_LICENSE("GPL");
MODULE_VERSION("0.1.0");
