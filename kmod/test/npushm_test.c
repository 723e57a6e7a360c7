// SPDX-License-Identifier: GPL-2.0
/*
 * npushm_test.c - npushm_test.ko, a dma-buf importer for the selftests.
 *
 * Not part of npushm: it imports any dma-buf the way a device driver would,
 * through its own misc device /dev/npushm_test (root only), whose struct
 * device has a 64-bit DMA mask and no dma_parms (so the DMA API's default
 * 64 KiB maximum segment size applies). See npushm_test_uapi.h.
 */
#include <linux/dma-buf.h>
#include <linux/dma-direction.h>
#include <linux/dma-mapping.h>
#include <linux/fs.h>
#include <linux/highmem.h>
#include <linux/iosys-map.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/pgtable.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "npushm_test_uapi.h"

MODULE_IMPORT_NS(DMA_BUF);

/* Per open file: one kept attachment and the dma-buf mmap() maps. */
struct npushm_test_file {
	struct mutex lock;		/* protects everything below */
	struct dma_buf *dmabuf;
	struct dma_buf_attachment *attach;
	struct sg_table *sgt;
	enum dma_data_direction dir;
	struct dma_buf *mmap_dmabuf;
};

static struct miscdevice npushm_test_misc;

static struct device *npushm_test_dev(void)
{
	return npushm_test_misc.this_device;
}

static u64 npushm_test_sum(struct dma_buf *dmabuf, u64 offset, u64 length,
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

/* Whether the kernel mapping dma_buf_vmap() gives lets the CPU write. */
static int npushm_test_vmap_writable(struct dma_buf *dmabuf, u64 offset,
				     u64 *writable)
{
	struct iosys_map map;
	unsigned int level;
	pte_t *pte;
	int ret;

	ret = dma_buf_vmap(dmabuf, &map);
	if (ret)
		return ret;
	pte = lookup_address((unsigned long)map.vaddr + offset, &level);
	if (pte && pte_present(*pte))
		*writable = !!pte_write(*pte);
	else
		ret = -EFAULT;
	dma_buf_vunmap(dmabuf, &map);
	return ret;
}

static void npushm_test_fill(struct sg_table *sgt, u64 offset, u64 length,
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

static int npushm_test_import(struct npushm_test_import *req)
{
	struct dma_buf_attachment *attach;
	enum dma_data_direction dir;
	struct scatterlist *sg;
	struct dma_buf *dmabuf;
	struct sg_table *sgt;
	unsigned int i;
	int ret;

	if (req->op == NPUSHM_TEST_READ_SUM || req->op == NPUSHM_TEST_VMAP_WRITABLE)
		dir = DMA_TO_DEVICE;
	else if (req->op == NPUSHM_TEST_WRITE_FILL)
		dir = DMA_BIDIRECTIONAL;	/* the CPU stands in for the device */
	else
		return -EINVAL;

	dmabuf = dma_buf_get(req->fd);
	if (IS_ERR(dmabuf))
		return PTR_ERR(dmabuf);
	req->dma_size = dmabuf->size;
	if (req->offset > dmabuf->size ||
	    req->length > dmabuf->size - req->offset ||
	    (req->op == NPUSHM_TEST_VMAP_WRITABLE && req->offset >= dmabuf->size)) {
		ret = -EINVAL;
		goto out_put;
	}

	attach = dma_buf_attach(dmabuf, npushm_test_dev());
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
	req->sg_max_seg = 0;
	req->dev_max_seg = dma_get_max_seg_size(npushm_test_dev());
	for_each_sgtable_dma_sg(sgt, sg, i) {
		req->sg_bytes += sg_dma_len(sg);
		req->sg_max_seg = max_t(u64, req->sg_max_seg, sg_dma_len(sg));
	}

	ret = dma_buf_begin_cpu_access(dmabuf, dir);
	if (ret)
		goto out_unmap;
	if (req->op == NPUSHM_TEST_READ_SUM)
		req->value = npushm_test_sum(dmabuf, req->offset, req->length, &ret);
	else if (req->op == NPUSHM_TEST_VMAP_WRITABLE)
		ret = npushm_test_vmap_writable(dmabuf, req->offset, &req->value);
	else
		npushm_test_fill(sgt, req->offset, req->length, req->value);
	dma_buf_end_cpu_access(dmabuf, dir);

out_unmap:
	dma_buf_unmap_attachment(attach, sgt, dir);
out_detach:
	dma_buf_detach(dmabuf, attach);
out_put:
	dma_buf_put(dmabuf);
	return ret;
}

/* Drop the kept attachment; lock held. */
static void npushm_test_detach(struct npushm_test_file *f)
{
	if (!f->dmabuf)
		return;
	dma_buf_unmap_attachment(f->attach, f->sgt, f->dir);
	dma_buf_detach(f->dmabuf, f->attach);
	dma_buf_put(f->dmabuf);
	f->dmabuf = NULL;
}

static int npushm_test_attach(struct npushm_test_file *f,
			      const struct npushm_test_attach *req)
{
	static const enum dma_data_direction dirs[] = {
		[NPUSHM_TEST_DMA_BIDIRECTIONAL] = DMA_BIDIRECTIONAL,
		[NPUSHM_TEST_DMA_TO_DEVICE] = DMA_TO_DEVICE,
		[NPUSHM_TEST_DMA_FROM_DEVICE] = DMA_FROM_DEVICE,
	};
	struct dma_buf_attachment *attach;
	struct dma_buf *dmabuf;
	struct sg_table *sgt;
	int ret;

	if (req->dir >= ARRAY_SIZE(dirs))
		return -EINVAL;
	if (f->dmabuf)
		return -EBUSY;
	dmabuf = dma_buf_get(req->fd);
	if (IS_ERR(dmabuf))
		return PTR_ERR(dmabuf);
	attach = dma_buf_attach(dmabuf, npushm_test_dev());
	if (IS_ERR(attach)) {
		ret = PTR_ERR(attach);
		goto out_put;
	}
	sgt = dma_buf_map_attachment(attach, dirs[req->dir]);
	if (IS_ERR(sgt)) {
		ret = PTR_ERR(sgt);
		goto out_detach;
	}
	f->dmabuf = dmabuf;
	f->attach = attach;
	f->sgt = sgt;
	f->dir = dirs[req->dir];
	return 0;

out_detach:
	dma_buf_detach(dmabuf, attach);
out_put:
	dma_buf_put(dmabuf);
	return ret;
}

static long npushm_test_ioctl(struct file *file, unsigned int cmd,
			      unsigned long arg)
{
	struct npushm_test_file *f = file->private_data;
	void __user *uarg = (void __user *)arg;
	struct npushm_test_import req;
	struct npushm_test_attach att;
	struct dma_buf *dmabuf;
	int ret, fd;

	switch (cmd) {
	case NPUSHM_TEST_IOC_IMPORT:
		if (copy_from_user(&req, uarg, sizeof(req)))
			return -EFAULT;
		ret = npushm_test_import(&req);
		if (!ret && copy_to_user(uarg, &req, sizeof(req)))
			ret = -EFAULT;
		return ret;
	case NPUSHM_TEST_IOC_ATTACH:
		if (copy_from_user(&att, uarg, sizeof(att)))
			return -EFAULT;
		mutex_lock(&f->lock);
		ret = npushm_test_attach(f, &att);
		mutex_unlock(&f->lock);
		return ret;
	case NPUSHM_TEST_IOC_DETACH:
		mutex_lock(&f->lock);
		ret = f->dmabuf ? 0 : -ENOENT;
		npushm_test_detach(f);
		mutex_unlock(&f->lock);
		return ret;
	case NPUSHM_TEST_IOC_SET_MMAP:
		if (get_user(fd, (int __user *)uarg))
			return -EFAULT;
		dmabuf = dma_buf_get(fd);
		if (IS_ERR(dmabuf))
			return PTR_ERR(dmabuf);
		mutex_lock(&f->lock);
		swap(dmabuf, f->mmap_dmabuf);
		mutex_unlock(&f->lock);
		if (dmabuf)
			dma_buf_put(dmabuf);
		return 0;
	}
	return -ENOTTY;
}

/* What DRM PRIME importers do: map the dma-buf through their own file. */
static int npushm_test_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct npushm_test_file *f = file->private_data;
	int ret = -ENOENT;

	mutex_lock(&f->lock);
	if (f->mmap_dmabuf)
		ret = dma_buf_mmap(f->mmap_dmabuf, vma, 0);
	mutex_unlock(&f->lock);
	return ret;
}

static int npushm_test_open(struct inode *inode, struct file *file)
{
	struct npushm_test_file *f;

	f = kzalloc(sizeof(*f), GFP_KERNEL);
	if (!f)
		return -ENOMEM;
	mutex_init(&f->lock);
	file->private_data = f;
	return 0;
}

static int npushm_test_release(struct inode *inode, struct file *file)
{
	struct npushm_test_file *f = file->private_data;

	npushm_test_detach(f);
	if (f->mmap_dmabuf)
		dma_buf_put(f->mmap_dmabuf);
	kfree(f);
	return 0;
}

static const struct file_operations npushm_test_fops = {
	.owner = THIS_MODULE,
	.open = npushm_test_open,
	.release = npushm_test_release,
	.mmap = npushm_test_mmap,
	.unlocked_ioctl = npushm_test_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.llseek = noop_llseek,
};

static struct miscdevice npushm_test_misc = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = "npushm_test",
	.fops = &npushm_test_fops,
	.mode = 0600,
};

static int __init npushm_test_init(void)
{
	int ret;

	/*
	 * The DMA mask needs the device, which appears with it: an import
	 * racing this fails cleanly (no mask), and only tests use it.
	 */
	ret = misc_register(&npushm_test_misc);
	if (ret)
		return ret;
	ret = dma_coerce_mask_and_coherent(npushm_test_dev(), DMA_BIT_MASK(64));
	if (ret)
		misc_deregister(&npushm_test_misc);
	return ret;
}

static void __exit npushm_test_exit(void)
{
	misc_deregister(&npushm_test_misc);
}

module_init(npushm_test_init);
module_exit(npushm_test_exit);

MODULE_DESCRIPTION("npushm selftests: a dma-buf importer");
MODULE_LICENSE("GPL");
