// SPDX-License-Identifier: GPL-2.0
/*
 * dev.c - npushm.ko: the /dev/npushm misc device and module set-up.
 *
 * /dev/npushm is open to everyone (mode 0666): what a caller may do is
 * decided per region and per name. Its ioctls query the pool, allocate
 * regions and open or unlink names; everything else happens on region
 * handles (region.c).
 */
#include <linux/cred.h>
#include <linux/dma-mapping.h>
#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/module.h>

#include "npushm_internal.h"

bool npushm_test_importer_enabled;
module_param_named(test_importer, npushm_test_importer_enabled, bool, 0444);
MODULE_PARM_DESC(test_importer,
		 "Create <debugfs>/npushm/importer, a dma-buf importer for selftests (default: off)");

static int npushm_dev_ioctl_query(struct file *file, void *arg,
				  struct npushm_ioctl_out *out)
{
	struct npushm_query *q = arg;

	q->abi_version = NPUSHM_ABI_VERSION;
	q->max_name_len = NPUSHM_NAME_MAX;
	q->features = NPUSHM_FEAT_NAMES | NPUSHM_FEAT_SEAL | NPUSHM_FEAT_DMABUF |
		      NPUSHM_FEAT_GUP | NPUSHM_FEAT_NETLINK;
	if (npushm_test_importer_enabled)
		q->features |= NPUSHM_FEAT_TEST_IMPORTER;
	q->chunk_size = PAGE_SIZE << npushm_sysmem_provider.chunk_order;
	q->page_size = PAGE_SIZE;
	npushm_pool_query(q, current_euid());
	return 0;
}

static const struct npushm_ioctl_desc npushm_dev_ioctls[] = {
	{ NPUSHM_IOC_QUERY, NPUSHM_QUERY_SIZE_VER0, npushm_dev_ioctl_query },
	{ NPUSHM_IOC_ALLOC, NPUSHM_ALLOC_SIZE_VER0, npushm_region_ioctl_alloc },
	{ NPUSHM_IOC_OPEN, NPUSHM_OPEN_SIZE_VER0, npushm_names_ioctl_open },
	{ NPUSHM_IOC_UNLINK, NPUSHM_UNLINK_SIZE_VER0, npushm_names_ioctl_unlink },
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
	.mode = 0666,
};

/**
 * npushm_device - the struct device behind /dev/npushm
 *
 * Return: the device; it has a 64-bit DMA mask.
 */
struct device *npushm_device(void)
{
	return npushm_misc.this_device;
}

static int __init npushm_init(void)
{
	int ret;

	ret = npushm_pool_init();
	if (ret)
		return ret;
	ret = npushm_region_fs_init();
	if (ret)
		goto out_pool;
	ret = npushm_netlink_init();
	if (ret)
		goto out_fs;
	ret = misc_register(&npushm_misc);
	if (ret)
		goto out_netlink;
	ret = dma_coerce_mask_and_coherent(npushm_misc.this_device,
					   DMA_BIT_MASK(64));
	if (ret)
		goto out_misc;
	if (npushm_test_importer_enabled)
		npushm_test_importer_init(npushm_misc.this_device);
	pr_info("npushm: pool capacity %llu MiB, uid quota %llu MiB\n",
		npushm_pool_capacity() >> 20, npushm_pool_uid_quota() >> 20);
	return 0;

out_misc:
	misc_deregister(&npushm_misc);
out_netlink:
	npushm_netlink_exit();
out_fs:
	npushm_region_fs_exit();
out_pool:
	npushm_pool_exit();
	return ret;
}

static void __exit npushm_exit(void)
{
	if (npushm_test_importer_enabled)
		npushm_test_importer_exit();
	misc_deregister(&npushm_misc);
	npushm_names_exit();
	npushm_netlink_exit();
	npushm_region_fs_exit();
	npushm_pool_exit();
}

module_init(npushm_init);
module_exit(npushm_exit);

MODULE_DESCRIPTION("npushm: device-memory regions shared across processes");
MODULE_LICENSE("GPL");
MODULE_VERSION("0.1.0");
