// SPDX-License-Identifier: GPL-2.0-only
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * dmabuf.c - exporting regions as dma-bufs.
 *
 * An export holds an internal file of its region (read-only or read-write,
 * as exported), so the region lives as long as the dma-buf. Importers get a
 * scatter list built from the region's pages, merged into contiguous
 * segments no longer than their device's maximum segment size and
 * DMA-mapped for it; a read-only export refuses mappings in which the
 * device would write, writable mmap() (by user space or by an importer's
 * dma_buf_mmap()) and writable kernel mappings (vmap() is read-only).
 * mmap() of the dma-buf maps the region itself (the VMA's file becomes the
 * internal file), so seals and mapping statistics see it like any other
 * mapping. CPU access brackets (DMA_BUF_IOCTL_SYNC) sync every mapped
 * attachment in the direction it was mapped with.
 */
#include <linux/dma-buf.h>
#include <linux/dma-mapping.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/iosys-map.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>

#include "npushm_internal.h"

MODULE_IMPORT_NS(DMA_BUF);

struct npushm_dmabuf {
	struct npushm_region *region;
	struct file *handle;
	bool writable;
	struct mutex lock;		/* protects @attachments */
	struct list_head attachments;
};

struct npushm_dmabuf_attachment {
	struct list_head node;
	struct device *dev;
	struct sg_table *sgt;
	enum dma_data_direction dir;
};

static int npushm_dmabuf_attach(struct dma_buf *dmabuf,
				struct dma_buf_attachment *attach)
{
	struct npushm_dmabuf *d = dmabuf->priv;
	struct npushm_dmabuf_attachment *a;

	a = kzalloc(sizeof(*a), GFP_KERNEL);
	if (!a)
		return -ENOMEM;
	a->dev = attach->dev;
	attach->priv = a;
	mutex_lock(&d->lock);
	list_add(&a->node, &d->attachments);
	mutex_unlock(&d->lock);
	return 0;
}

static void npushm_dmabuf_detach(struct dma_buf *dmabuf,
				 struct dma_buf_attachment *attach)
{
	struct npushm_dmabuf *d = dmabuf->priv;
	struct npushm_dmabuf_attachment *a = attach->priv;

	mutex_lock(&d->lock);
	list_del(&a->node);
	mutex_unlock(&d->lock);
	kfree(a);
}

static struct sg_table *npushm_dmabuf_map(struct dma_buf_attachment *attach,
					  enum dma_data_direction dir)
{
	struct npushm_dmabuf *d = attach->dmabuf->priv;
	struct npushm_dmabuf_attachment *a = attach->priv;
	struct npushm_region *region = d->region;
	unsigned int max_seg;
	struct sg_table *sgt;
	int ret;

	if (!d->writable && dir != DMA_TO_DEVICE)
		return ERR_PTR(-EACCES);

	sgt = kzalloc(sizeof(*sgt), GFP_KERNEL);
	if (!sgt)
		return ERR_PTR(-ENOMEM);
	max_seg = max_t(unsigned int, PAGE_SIZE,
			round_down(dma_get_max_seg_size(attach->dev), PAGE_SIZE));
	ret = sg_alloc_table_from_pages_segment(sgt, region->pages,
						region->npages, 0, region->size,
						max_seg, GFP_KERNEL);
	if (ret)
		goto out_free_sgt;
	ret = dma_map_sgtable(attach->dev, sgt, dir, 0);
	if (ret)
		goto out_free_table;

	mutex_lock(&d->lock);
	a->sgt = sgt;
	a->dir = dir;
	mutex_unlock(&d->lock);
	return sgt;

out_free_table:
	sg_free_table(sgt);
out_free_sgt:
	kfree(sgt);
	return ERR_PTR(ret);
}

static void npushm_dmabuf_unmap(struct dma_buf_attachment *attach,
				struct sg_table *sgt,
				enum dma_data_direction dir)
{
	struct npushm_dmabuf *d = attach->dmabuf->priv;
	struct npushm_dmabuf_attachment *a = attach->priv;

	mutex_lock(&d->lock);
	a->sgt = NULL;
	mutex_unlock(&d->lock);
	dma_unmap_sgtable(attach->dev, sgt, dir, 0);
	sg_free_table(sgt);
	kfree(sgt);
}

static void npushm_dmabuf_release(struct dma_buf *dmabuf)
{
	struct npushm_dmabuf *d = dmabuf->priv;
	struct npushm_region *region = d->region;

	mutex_lock(&region->lock);
	region->dmabufs--;
	region->writers -= d->writable;
	mutex_unlock(&region->lock);
	fput(d->handle);
	kfree(d);
}

static int npushm_dmabuf_mmap(struct dma_buf *dmabuf, struct vm_area_struct *vma)
{
	struct npushm_dmabuf *d = dmabuf->priv;

	/* Importers' dma_buf_mmap() does not check the dma-buf's mode: we do. */
	if (!d->writable) {
		if (vma->vm_flags & VM_WRITE)
			return -EACCES;
		vma->vm_flags &= ~VM_MAYWRITE;
	}
	vma_set_file(vma, d->handle);
	return npushm_region_mmap(d->region, vma);
}

/*
 * Each attachment is synced in the direction it was mapped with: syncing a
 * mapping in another direction is a DMA API violation, and through a bounce
 * buffer it copies stale device data over what the CPU wrote.
 */
static int npushm_dmabuf_sync(struct dma_buf *dmabuf, bool for_cpu)
{
	struct npushm_dmabuf *d = dmabuf->priv;
	struct npushm_dmabuf_attachment *a;

	mutex_lock(&d->lock);
	list_for_each_entry(a, &d->attachments, node) {
		if (!a->sgt)
			continue;
		if (for_cpu)
			dma_sync_sgtable_for_cpu(a->dev, a->sgt, a->dir);
		else
			dma_sync_sgtable_for_device(a->dev, a->sgt, a->dir);
	}
	mutex_unlock(&d->lock);
	return 0;
}

static int npushm_dmabuf_begin_cpu(struct dma_buf *dmabuf,
				   enum dma_data_direction dir)
{
	return npushm_dmabuf_sync(dmabuf, true);
}

static int npushm_dmabuf_end_cpu(struct dma_buf *dmabuf,
				 enum dma_data_direction dir)
{
	return npushm_dmabuf_sync(dmabuf, false);
}

static int npushm_dmabuf_vmap(struct dma_buf *dmabuf, struct iosys_map *map)
{
	struct npushm_dmabuf *d = dmabuf->priv;
	void *vaddr;

	vaddr = vmap(d->region->pages, d->region->npages, VM_MAP,
		     d->writable ? PAGE_KERNEL : PAGE_KERNEL_RO);
	if (!vaddr)
		return -ENOMEM;
	iosys_map_set_vaddr(map, vaddr);
	return 0;
}

static void npushm_dmabuf_vunmap(struct dma_buf *dmabuf, struct iosys_map *map)
{
	vunmap(map->vaddr);
}

static const struct dma_buf_ops npushm_dmabuf_ops = {
	.cache_sgt_mapping = true,
	.attach = npushm_dmabuf_attach,
	.detach = npushm_dmabuf_detach,
	.map_dma_buf = npushm_dmabuf_map,
	.unmap_dma_buf = npushm_dmabuf_unmap,
	.release = npushm_dmabuf_release,
	.mmap = npushm_dmabuf_mmap,
	.begin_cpu_access = npushm_dmabuf_begin_cpu,
	.end_cpu_access = npushm_dmabuf_end_cpu,
	.vmap = npushm_dmabuf_vmap,
	.vunmap = npushm_dmabuf_vunmap,
};

static int npushm_dmabuf_handle_mmap(struct file *file, struct vm_area_struct *vma)
{
	return npushm_region_mmap(npushm_region(file_inode(file)), vma);
}

/* The file a dma-buf export maps through: not a user handle. */
static const struct file_operations npushm_dmabuf_handle_fops = {
	.owner = THIS_MODULE,
	.mmap = npushm_dmabuf_handle_mmap,
	.llseek = noop_llseek,
};

/*
 * A file for a dma-buf export's mappings, read-write or read-only: a new file
 * on the same region and mount as @file (a region file), not counted as a
 * user handle; or an ERR_PTR.
 */
static struct file *npushm_dmabuf_handle(struct file *file, bool writable)
{
	struct inode *inode = file_inode(file);
	struct file *internal;

	/* __fput() drops a module reference for f_op; take it here. */
	if (!try_module_get(THIS_MODULE))
		return ERR_PTR(-ENODEV);
	ihold(inode);
	internal = alloc_file_pseudo(inode, file->f_path.mnt, "npushm-dmabuf",
				     writable ? O_RDWR : O_RDONLY,
				     &npushm_dmabuf_handle_fops);
	if (IS_ERR(internal)) {
		iput(inode);
		module_put(THIS_MODULE);
	}
	return internal;
}

/**
 * npushm_dmabuf_export - NPUSHM_IOC_EXPORT_DMABUF
 * @file: the region file
 * @region: its region
 * @req: the request; @req->fd is filled in
 * @out: the dma-buf file to install
 *
 * Return: 0, -EINVAL (also for an unsized region), -EACCES for a read-write
 * export of a read-only file, -EPERM for a read-write export of a sealed
 * region, -ENODEV when the region's device went, -ENOMEM, -EMFILE.
 */
int npushm_dmabuf_export(struct file *file, struct npushm_region *region,
			 struct npushm_export *req, struct npushm_ioctl_out *out)
{
	DEFINE_DMA_BUF_EXPORT_INFO(exp_info);
	bool rdwr = req->flags & NPUSHM_EXPORT_RDWR;
	struct npushm_dmabuf *d;
	struct dma_buf *dmabuf;
	int fd, ret;

	if ((req->flags & ~NPUSHM_EXPORT_RDWR) || req->reserved)
		return -EINVAL;
	if (rdwr && !npushm_file_writable(file))
		return -EACCES;
	if (npushm_provider_revoked(region->provider))
		return -ENODEV;

	d = kzalloc(sizeof(*d), GFP_KERNEL);
	if (!d)
		return -ENOMEM;
	mutex_init(&d->lock);
	INIT_LIST_HEAD(&d->attachments);
	d->region = region;
	d->writable = rdwr;
	d->handle = npushm_dmabuf_handle(file, rdwr);
	if (IS_ERR(d->handle)) {
		ret = PTR_ERR(d->handle);
		goto out_free;
	}

	mutex_lock(&region->lock);
	ret = !region->size ? -EINVAL : rdwr && region->sealed ? -EPERM : 0;
	if (ret) {
		mutex_unlock(&region->lock);
		goto out_put_handle;
	}
	/* The size cannot change while the export exists. */
	region->dmabufs++;
	region->writers += rdwr;
	exp_info.size = region->size;
	mutex_unlock(&region->lock);

	exp_info.ops = &npushm_dmabuf_ops;
	exp_info.flags = rdwr ? O_RDWR : O_RDONLY;
	exp_info.priv = d;
	dmabuf = dma_buf_export(&exp_info);
	if (IS_ERR(dmabuf)) {
		ret = PTR_ERR(dmabuf);
		goto out_uncount;
	}

	/* From here the dma-buf owns @d: its release undoes the above. */
	fd = get_unused_fd_flags(O_CLOEXEC);
	if (fd < 0) {
		dma_buf_put(dmabuf);
		return fd;
	}
	req->fd = fd;
	out->file = dmabuf->file;
	out->fd = fd;
	return 0;

out_uncount:
	mutex_lock(&region->lock);
	region->dmabufs--;
	region->writers -= rdwr;
	mutex_unlock(&region->lock);
out_put_handle:
	fput(d->handle);
out_free:
	kfree(d);
	return ret;
}
