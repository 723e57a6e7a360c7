// SPDX-License-Identifier: GPL-2.0
/*
 * test_importer.c - a dma-buf importer for the selftests.
 *
 * Loaded only with test_importer=1: <debugfs>/npushm/importer (root only)
 * takes NPUSHM_TEST_IOC_IMPORT and does with any dma-buf what a device
 * driver would: attach it to the npushm device, map it for DMA and report
 * the scatter list, then read it through a kernel mapping (dma_buf_vmap) or
 * write it through the scatter list's pages, within CPU access brackets.
 */
#include <linux/debugfs.h>
#include <linux/dma-buf.h>
#include <linux/dma-direction.h>
#include <linux/fs.h>
#include <linux/highmem.h>
#include <linux/iosys-map.h>
#include <linux/scatterlist.h>
#include <linux/uaccess.h>

#include "npushm_internal.h"

static struct dentry *npushm_debugfs_dir;
static struct device *npushm_importer_dev;

static u64 npushm_import_sum(struct dma_buf *dmabuf, u64 offset, u64 length,
			     int *err)
{
	struct iosys_map map;
	const u8 *p;
	u64 i, sum = 0;

	*err = dma_buf_vmap(dmabuf, &map);
	if (*err)
		return 0;
	p = map.vaddr;
	for (i = 0; i < length; i++) {
		sum += p[offset + i];
		if (!(i & 0xfffff))
			cond_resched();
	}
	dma_buf_vunmap(dmabuf, &map);
	return sum;
}

static void npushm_import_fill(struct sg_table *sgt, u64 offset, u64 length,
			       u8 value)
{
	struct sg_page_iter iter;
	u64 pos = 0, end = offset + length;

	for_each_sgtable_page(sgt, &iter, 0) {
		u64 lo = max(pos, offset), hi = min(pos + PAGE_SIZE, end);
		u8 *vaddr;

		if (lo < hi) {
			vaddr = kmap_local_page(sg_page_iter_page(&iter));
			memset(vaddr + (lo - pos), value, hi - lo);
			kunmap_local(vaddr);
		}
		pos += PAGE_SIZE;
		if (pos >= end)
			break;
	}
}

static int npushm_import(struct npushm_test_import *req)
{
	enum dma_data_direction dir;
	struct dma_buf_attachment *attach;
	struct scatterlist *sg;
	struct dma_buf *dmabuf;
	struct sg_table *sgt;
	unsigned int i;
	int ret;

	if (req->op == NPUSHM_TEST_READ_SUM)
		dir = DMA_TO_DEVICE;
	else if (req->op == NPUSHM_TEST_WRITE_FILL)
		dir = DMA_FROM_DEVICE;
	else
		return -EINVAL;

	dmabuf = dma_buf_get(req->fd);
	if (IS_ERR(dmabuf))
		return PTR_ERR(dmabuf);
	req->dma_size = dmabuf->size;
	if (req->offset > dmabuf->size ||
	    req->length > dmabuf->size - req->offset) {
		ret = -EINVAL;
		goto out_put;
	}

	attach = dma_buf_attach(dmabuf, npushm_importer_dev);
	if (IS_ERR(attach)) {
		ret = PTR_ERR(attach);
		goto out_put;
	}
	sgt = dma_buf_map_attachment(attach, dir);
	if (IS_ERR(sgt)) {
		ret = PTR_ERR(sgt);
		goto out_detach;
	}
	req->sg_nents = sgt->nents;
	req->sg_bytes = 0;
	for_each_sgtable_dma_sg(sgt, sg, i)
		req->sg_bytes += sg_dma_len(sg);

	ret = dma_buf_begin_cpu_access(dmabuf, dir);
	if (ret)
		goto out_unmap;
	if (req->op == NPUSHM_TEST_READ_SUM)
		req->value = npushm_import_sum(dmabuf, req->offset, req->length, &ret);
	else
		npushm_import_fill(sgt, req->offset, req->length, req->value);
	dma_buf_end_cpu_access(dmabuf, dir);

out_unmap:
	dma_buf_unmap_attachment(attach, sgt, dir);
out_detach:
	dma_buf_detach(dmabuf, attach);
out_put:
	dma_buf_put(dmabuf);
	return ret;
}

static long npushm_importer_ioctl(struct file *file, unsigned int cmd,
				  unsigned long arg)
{
	struct npushm_test_import req;
	int ret;

	if (cmd != NPUSHM_TEST_IOC_IMPORT)
		return -ENOTTY;
	if (copy_from_user(&req, (void __user *)arg, sizeof(req)))
		return -EFAULT;
	ret = npushm_import(&req);
	if (ret)
		return ret;
	if (copy_to_user((void __user *)arg, &req, sizeof(req)))
		return -EFAULT;
	return 0;
}

static const struct file_operations npushm_importer_fops = {
	.owner = THIS_MODULE,
	.unlocked_ioctl = npushm_importer_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.llseek = noop_llseek,
};

/**
 * npushm_test_importer_init - create <debugfs>/npushm/importer
 * @dev: the device imports attach to (it has a DMA mask)
 *
 * Return: 0; debugfs failures are not errors.
 */
int npushm_test_importer_init(struct device *dev)
{
	npushm_importer_dev = dev;
	npushm_debugfs_dir = debugfs_create_dir("npushm", NULL);
	debugfs_create_file("importer", 0600, npushm_debugfs_dir, NULL,
			    &npushm_importer_fops);
	return 0;
}

/**
 * npushm_test_importer_exit - remove it
 */
void npushm_test_importer_exit(void)
{
	debugfs_remove(npushm_debugfs_dir);
}
