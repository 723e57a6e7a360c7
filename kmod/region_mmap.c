// SPDX-License-Identifier: GPL-2.0-only
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * region_mmap.c - mapping regions into user space.
 *
 * Mappings must be MAP_SHARED and lie inside the region. They are built
 * from the region's real struct pages with vm_insert_pages(), lazily: the
 * first touch inside a chunk maps the whole chunk (up to 2 MiB) at once, so
 * mapping is O(1) in the region's size and touching it costs few faults.
 * Because the pages are ordinary pages, the mappings are GUP-able
 * (get_user_pages, ibv_reg_mr).
 *
 * Every VMA is tracked so that sealing can refuse while a mapping that is
 * or may become writable (VM_MAYWRITE) exists, and so that mapped bytes and
 * mapping processes can be reported. On a sealed region, writable mappings
 * are refused and VM_MAYWRITE is cleared so mprotect() cannot add write.
 */
#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/sort.h>

#include "npushm_internal.h"

struct npushm_vma {
	struct list_head node;
	struct vm_area_struct *vma;
	struct npushm_region *region;
	bool writer;
};

static void npushm_vma_track(struct npushm_vma *t, struct npushm_region *region,
			     struct vm_area_struct *vma)
{
	t->vma = vma;
	t->region = region;
	t->writer = !!(vma->vm_flags & VM_MAYWRITE);
	list_add(&t->node, &region->vmas);
	region->nr_vmas++;
	region->writers += t->writer;
	vma->vm_private_data = t;
}

static void npushm_vm_open(struct vm_area_struct *vma)
{
	struct npushm_vma *parent = vma->vm_private_data;
	struct npushm_region *region = parent->region;
	struct npushm_vma *t;

	/* A VMA copied by fork, split or mremap; open cannot fail. */
	t = kmalloc(sizeof(*t), GFP_KERNEL_ACCOUNT | __GFP_NOFAIL);
	mutex_lock(&region->lock);
	npushm_vma_track(t, region, vma);
	mutex_unlock(&region->lock);
}

static void npushm_vm_close(struct vm_area_struct *vma)
{
	struct npushm_vma *t = vma->vm_private_data;
	struct npushm_region *region = t->region;

	mutex_lock(&region->lock);
	list_del(&t->node);
	region->nr_vmas--;
	region->writers -= t->writer;
	mutex_unlock(&region->lock);
	kfree(t);
}

static vm_fault_t npushm_vm_fault(struct vm_fault *vmf)
{
	struct vm_area_struct *vma = vmf->vma;
	struct npushm_vma *t = vma->vm_private_data;
	struct npushm_region *region = t->region;
	unsigned long chunk = 1UL << region->provider->chunk_order;
	unsigned long vma_end = vma->vm_pgoff + vma_pages(vma);
	unsigned long addr = vmf->address & PAGE_MASK;
	pgoff_t pgoff = vmf->pgoff;
	unsigned long first, last, num;
	vm_fault_t ret = VM_FAULT_NOPAGE;
	int err, idx;

	if (pgoff >= region->npages || pgoff >= vma_end)
		return VM_FAULT_SIGBUS;

	/* No page of a revoked provider is mapped after its zap. */
	idx = npushm_provider_read_lock();
	if (npushm_provider_revoked(region->provider)) {
		ret = VM_FAULT_SIGBUS;
		goto out_unlock;
	}

	/* From the faulting page to the end of its chunk... */
	last = min3(round_up(pgoff + 1, chunk), region->npages, vma_end);
	num = last - pgoff;
	err = vm_insert_pages(vma, addr, &region->pages[pgoff], &num);
	if (err && err != -EBUSY) {
		ret = vmf_error(err);
		goto out_unlock;
	}

	/* ...then, best effort, the chunk's pages before it. */
	first = max_t(unsigned long, round_down(pgoff, chunk), vma->vm_pgoff);
	if (first < pgoff) {
		num = pgoff - first;
		vm_insert_pages(vma, addr - num * PAGE_SIZE,
				&region->pages[first], &num);
	}
out_unlock:
	npushm_provider_read_unlock(idx);
	return ret;
}

static const struct vm_operations_struct npushm_vm_ops = {
	.open = npushm_vm_open,
	.close = npushm_vm_close,
	.fault = npushm_vm_fault,
};

/**
 * npushm_region_mmap - set up a user mapping of a region
 * @region: the region
 * @vma: the new mapping; vm_file is a handle of @region
 *
 * Return: 0, -EINVAL for a private mapping or one outside the region (an
 * unsized region has no inside), -EPERM for a writable mapping of a sealed
 * region, -ENODEV when the region's device went, -ENOMEM.
 */
int npushm_region_mmap(struct npushm_region *region, struct vm_area_struct *vma)
{
	unsigned long pages = vma_pages(vma);
	struct npushm_vma *t;

	int ret = 0;

	if (!(vma->vm_flags & VM_MAYSHARE))
		return -EINVAL;
	t = kmalloc(sizeof(*t), GFP_KERNEL_ACCOUNT);
	if (!t)
		return -ENOMEM;

	/* The size cannot change while a mapping exists: check it here. */
	mutex_lock(&region->lock);
	if (npushm_provider_revoked(region->provider)) {
		ret = -ENODEV;
		goto out_unlock;
	}
	if (vma->vm_pgoff >= region->npages ||
	    pages > region->npages - vma->vm_pgoff) {
		ret = -EINVAL;
		goto out_unlock;
	}
	if (region->sealed) {
		if (vma->vm_flags & VM_WRITE) {
			ret = -EPERM;
			goto out_unlock;
		}
		vma->vm_flags &= ~VM_MAYWRITE;
	}
	vma->vm_flags |= VM_MIXEDMAP | VM_DONTEXPAND | VM_DONTDUMP;
	vma->vm_ops = &npushm_vm_ops;
	npushm_vma_track(t, region, vma);
	t = NULL;
out_unlock:
	mutex_unlock(&region->lock);
	kfree(t);
	return ret;
}

static int npushm_cmp_ptr(const void *a, const void *b)
{
	unsigned long x = *(const unsigned long *)a;
	unsigned long y = *(const unsigned long *)b;

	return x < y ? -1 : x > y;
}

/**
 * npushm_region_map_stats - bytes mapped and processes mapping a region
 * @region: the region, its lock held
 * @bytes: out: bytes covered by all its mappings
 * @mappers: out: distinct address spaces mapping it
 */
void npushm_region_map_stats(struct npushm_region *region, u64 *bytes,
			     unsigned int *mappers)
{
	unsigned long *mms;
	struct npushm_vma *t;
	unsigned int i, n = 0;

	lockdep_assert_held(&region->lock);
	*bytes = 0;
	*mappers = 0;
	mms = kmalloc_array(region->nr_vmas, sizeof(*mms), GFP_KERNEL | __GFP_NOWARN);
	list_for_each_entry(t, &region->vmas, node) {
		*bytes += READ_ONCE(t->vma->vm_end) - READ_ONCE(t->vma->vm_start);
		if (mms)
			mms[n++] = (unsigned long)t->vma->vm_mm;
	}
	if (!mms)
		return;
	sort(mms, n, sizeof(*mms), npushm_cmp_ptr, NULL);
	for (i = 0; i < n; i++)
		if (!i || mms[i] != mms[i - 1])
			(*mappers)++;
	kfree(mms);
}
