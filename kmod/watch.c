// SPDX-License-Identifier: GPL-2.0-only
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * watch.c - watches: a registration cache is told when a range of its own
 * address space stops mapping the same pages (NPUSHM_IOC_WATCH).
 *
 * A watch is an anonymous file bound to the address space (mm) of the
 * process that opened it; each range added to it is an MMU interval
 * notifier on that mm. The notifier's callback runs inside munmap(),
 * mremap(), madvise(), reclaim, CoW breaks, exit... under the mmap lock,
 * i_mmap locks or worse, possibly unable to sleep: it only takes
 * watch->events_lock (a spinlock, never held across anything that sleeps or
 * allocates), marks the range fired, queues it for read(), bumps the
 * generation counter in the watch's shared page and wakes readers.
 *
 * ADD and DEL are serialised by watch->lock, readers by watch->read_lock,
 * mutexes the callback never takes. Lock order: watch->lock -> mmap_lock
 * (mmu_interval_notifier_insert() may register the mm's notifier state)
 * -> watch->events_lock; watch->read_lock -> mmap_lock (copy_to_user() may
 * fault) -> watch->events_lock.
 *
 * Lifetime: the watch holds an mm_count reference (mmgrab) so that the
 * owner check compares against a live mm_struct, not a recycled address;
 * it does not hold the address space itself (mm_users), so a watch that
 * outlives its process (passed on, inherited) keeps no memory mapped. Each
 * inserted notifier takes its own mm_count reference, and the mm's notifier
 * state is freed only when mm_count drops to zero (__mmdrop), so removing a
 * range after the process exited is safe: exit_mmap() fired every range
 * (MMU_NOTIFY_RELEASE) and left them in the tree for removal. A range is
 * freed only once it is out of the tree (mmu_interval_notifier_remove()
 * waited for its callbacks) and off @pending; release() may free ranges
 * still queued on @pending, but only after every range of the watch is out
 * of the tree, since until then any of them may fire and queue itself
 * behind them (the last close can run while other threads of the process
 * unmap, or while one exiting thread tears the mm down). The file's
 * fops->owner pins the module while the file exists, so the callbacks stay.
 */
#include <linux/cred.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/gfp.h>
#include <linux/mm.h>
#include <linux/mmu_notifier.h>
#include <linux/moduleparam.h>
#include <linux/poll.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/wait.h>
#include <linux/xarray.h>

#include "npushm_internal.h"

/**
 * struct npushm_watch - one watch file
 * @mm: the address space the ranges are in (mm_count held)
 * @uid: the opener's euid (npushm_account_uid()), charged for the ranges
 * @page: the shared read-only page; a u64 generation counter at offset 0
 * @lock: serialises ADD and DEL; protects @ranges, @nr_ranges, @next_id
 * @read_lock: serialises readers
 * @ranges: struct npushm_watch_item by id
 * @nr_ranges: entries in @ranges
 * @next_id: the id of the next range added (ids start at 1, never reused)
 * @events_lock: protects @pending, @generation and each range's @fired and
 *	@pending; the only lock the notifier callback takes
 * @pending: fired ranges not yet read
 * @generation: ranges fired so far, mirrored at offset 0 of @page
 * @wq: readers and pollers waiting for @pending
 */
struct npushm_watch {
	struct mm_struct *mm;
	kuid_t uid;
	struct page *page;

	struct mutex lock;		/* protects ranges, nr_ranges, next_id */
	struct mutex read_lock;		/* serialises readers */
	struct xarray ranges;
	unsigned int nr_ranges;
	u64 next_id;

	spinlock_t events_lock;		/* protects pending, generation, fired */
	struct list_head pending;
	u64 generation;
	wait_queue_head_t wq;
};

/**
 * struct npushm_watch_item - one watched range
 * @notifier: the interval notifier on the watch's mm
 * @watch: the watch it belongs to
 * @id: its id, the key in @watch->ranges
 * @cookie: the caller's value, returned in its event
 * @pending: entry in @watch->pending while fired and unread, else empty
 * @fired: the range fired (it never fires again)
 */
struct npushm_watch_item {
	struct mmu_interval_notifier notifier;
	struct npushm_watch *watch;
	u64 id;
	u64 cookie;
	struct list_head pending;
	bool fired;
};

/*
 * Protection changes (mprotect(), NUMA hinting, write-protection for
 * writeback or fork's CoW set-up) and soft-dirty clearing leave the same
 * pages mapped: a registration stays valid. Every other event may change
 * the pages (or, as a spurious firing, may not: a miss, never a stale hit).
 */
static bool npushm_watch_event_moves_pages(enum mmu_notifier_event event)
{
	switch (event) {
	case MMU_NOTIFY_PROTECTION_VMA:
	case MMU_NOTIFY_PROTECTION_PAGE:
	case MMU_NOTIFY_SOFT_DIRTY:
		return false;
	default:
		return true;
	}
}

/*
 * Called with whatever locks the invalidation holds, sleeping or not:
 * only events_lock and the wait queue's lock are taken, so the result does
 * not depend on mmu_notifier_range_blockable() and true is always returned.
 */
static bool npushm_watch_invalidate(struct mmu_interval_notifier *mni,
				    const struct mmu_notifier_range *range,
				    unsigned long cur_seq)
{
	struct npushm_watch_item *r =
		container_of(mni, struct npushm_watch_item, notifier);
	struct npushm_watch *w = r->watch;
	u64 *generation = page_address(w->page);

	spin_lock(&w->events_lock);
	mmu_interval_set_seq(mni, cur_seq);
	if (!r->fired && npushm_watch_event_moves_pages(range->event)) {
		r->fired = true;
		list_add_tail(&r->pending, &w->pending);
		/*
		 * Published under events_lock after the event is queued: a
		 * reader that sees the new value and then calls read() finds
		 * the event. A u64 store is single-copy atomic on 64-bit.
		 */
		WRITE_ONCE(*generation, ++w->generation);
		wake_up_all(&w->wq);
	}
	spin_unlock(&w->events_lock);
	return true;
}

static const struct mmu_interval_notifier_ops npushm_watch_mn_ops = {
	.invalidate = npushm_watch_invalidate,
};

static bool npushm_watch_has_events(struct npushm_watch *w)
{
	bool ret;

	spin_lock(&w->events_lock);
	ret = !list_empty(&w->pending);
	spin_unlock(&w->events_lock);
	return ret;
}

/*
 * Ranges held per uid, over all its watches: each costs kernel memory (a
 * notifier in the mm's interval tree), so one user cannot exhaust it by
 * opening many watches. Keyed by the uid in the initial user namespace,
 * subordinate uids folded into their user's (npushm_account_uid()).
 */
static unsigned int npushm_watch_uid_max = 4 * NPUSHM_WATCH_MAX_RANGES;
module_param_named(watch_ranges_per_uid, npushm_watch_uid_max, uint, 0644);
MODULE_PARM_DESC(watch_ranges_per_uid,
		 "Watched ranges one uid may hold over all its watches (default 262144)");

static DEFINE_MUTEX(npushm_watch_uid_lock);	/* protects npushm_watch_uids */
static DEFINE_XARRAY(npushm_watch_uids);	/* uid -> ranges, as xa values */

static int npushm_watch_uid_charge(kuid_t uid)
{
	unsigned long key = from_kuid(&init_user_ns, uid);
	unsigned long n;
	void *old;
	int ret;

	mutex_lock(&npushm_watch_uid_lock);
	old = xa_load(&npushm_watch_uids, key);
	n = old ? xa_to_value(old) : 0;
	if (n >= READ_ONCE(npushm_watch_uid_max))
		ret = -EDQUOT;
	else
		ret = xa_err(xa_store(&npushm_watch_uids, key,
				      xa_mk_value(n + 1), GFP_KERNEL));
	mutex_unlock(&npushm_watch_uid_lock);
	return ret;
}

static void npushm_watch_uid_uncharge(kuid_t uid, unsigned long ranges)
{
	unsigned long key = from_kuid(&init_user_ns, uid);
	unsigned long n;
	void *old;

	if (!ranges)
		return;
	mutex_lock(&npushm_watch_uid_lock);
	old = xa_load(&npushm_watch_uids, key);
	n = old ? xa_to_value(old) : 0;
	if (WARN_ON_ONCE(n < ranges))
		n = ranges;
	if (n == ranges)
		xa_erase(&npushm_watch_uids, key);
	else
		xa_store(&npushm_watch_uids, key, xa_mk_value(n - ranges),
			 GFP_KERNEL);
	mutex_unlock(&npushm_watch_uid_lock);
}

static int npushm_watch_del_id(struct npushm_watch *w, u64 id);

/* The caller never learnt the range's id: it must not stay. */
static void npushm_watch_add_undo(struct file *file, void *arg)
{
	struct npushm_watch_range *req = arg;

	npushm_watch_del_id(file->private_data, req->id);
}

static int npushm_watch_ioctl_add(struct file *file, void *arg,
				  struct npushm_ioctl_out *out)
{
	struct npushm_watch *w = file->private_data;
	struct npushm_watch_range *req = arg;
	struct npushm_watch_item *r;
	unsigned long start;
	u64 end;
	int ret;

	if (req->flags || req->reserved || !req->len)
		return -EINVAL;
	if (check_add_overflow(req->start, req->len, &end) || end > TASK_SIZE)
		return -EINVAL;
	/* The notifier is inserted into this mm: only its own tasks may. */
	if (current->mm != w->mm)
		return -EPERM;
	start = round_down(req->start, PAGE_SIZE);
	end = PAGE_ALIGN(end);

	r = kzalloc(sizeof(*r), GFP_KERNEL_ACCOUNT);
	if (!r)
		return -ENOMEM;
	r->watch = w;
	r->cookie = req->cookie;
	INIT_LIST_HEAD(&r->pending);

	mutex_lock(&w->lock);
	if (w->nr_ranges >= NPUSHM_WATCH_MAX_RANGES ||
	    w->next_id > ULONG_MAX) {
		ret = -ENOSPC;
		goto out_unlock;
	}
	ret = npushm_watch_uid_charge(w->uid);
	if (ret)
		goto out_unlock;
	r->id = w->next_id;
	ret = xa_insert(&w->ranges, r->id, r, GFP_KERNEL_ACCOUNT);
	if (ret)
		goto out_uncharge;
	/* current->mm is w->mm: mm_users is held, as insertion requires. */
	ret = mmu_interval_notifier_insert(&r->notifier, w->mm, start,
					   end - start, &npushm_watch_mn_ops);
	if (ret)
		goto out_erase;
	/*
	 * Inserted while an invalidation was running, the notifier joins the
	 * tree only when it ends and misses it: wait for it, so that what
	 * user space pins after ADD returns (ibv_reg_mr) is either what the
	 * range maps from now on or fires it.
	 */
	mmu_interval_read_begin(&r->notifier);
	w->next_id++;
	w->nr_ranges++;
	req->id = r->id;
	out->undo = npushm_watch_add_undo;
	mutex_unlock(&w->lock);
	return 0;

out_erase:
	xa_erase(&w->ranges, r->id);
out_uncharge:
	npushm_watch_uid_uncharge(w->uid, 1);
out_unlock:
	mutex_unlock(&w->lock);
	kfree(r);
	return ret;
}

static void npushm_watch_item_free(struct npushm_watch *w,
				   struct npushm_watch_item *r)
{
	/* Sleeps until a callback running on another CPU returned. */
	mmu_interval_notifier_remove(&r->notifier);
	spin_lock(&w->events_lock);
	list_del(&r->pending);
	spin_unlock(&w->events_lock);
	kfree(r);
}

static int npushm_watch_del_id(struct npushm_watch *w, u64 id)
{
	struct npushm_watch_item *r;

	if (!id || id > ULONG_MAX)
		return -ENOENT;
	mutex_lock(&w->lock);
	r = xa_erase(&w->ranges, id);
	if (!r) {
		mutex_unlock(&w->lock);
		return -ENOENT;
	}
	npushm_watch_item_free(w, r);
	w->nr_ranges--;
	npushm_watch_uid_uncharge(w->uid, 1);
	mutex_unlock(&w->lock);
	return 0;
}

static int npushm_watch_ioctl_del(struct file *file, void *arg,
				  struct npushm_ioctl_out *out)
{
	struct npushm_watch *w = file->private_data;
	struct npushm_watch_del *req = arg;

	if (current->mm != w->mm)
		return -EPERM;
	return npushm_watch_del_id(w, req->id);
}

static const struct npushm_ioctl_desc npushm_watch_ioctls[] = {
	{ NPUSHM_IOC_WATCH_ADD, NPUSHM_WATCH_RANGE_SIZE_VER0, npushm_watch_ioctl_add },
	{ NPUSHM_IOC_WATCH_DEL, NPUSHM_WATCH_DEL_SIZE_VER0, npushm_watch_ioctl_del },
};

static long npushm_watch_ioctl(struct file *file, unsigned int cmd,
			       unsigned long arg)
{
	return npushm_ioctl_dispatch(npushm_watch_ioctls,
				     ARRAY_SIZE(npushm_watch_ioctls),
				     file, cmd, arg);
}

/*
 * Copy out as many whole events as fit. A range leaves @pending only once
 * its event reached user space: peek, copy, then unlink the first range if
 * it is still the one copied. Readers are serialised and the callback only
 * appends, so only a concurrent DEL can have taken it (ids are never
 * reused). ADD and DEL never wait for a reader's copy (a reader in another
 * process may fault on userfaultfd memory for as long as it likes).
 */
static ssize_t npushm_watch_copy_events(struct npushm_watch *w,
					char __user *buf, size_t count)
{
	struct npushm_watch_event ev;
	struct npushm_watch_item *r;
	ssize_t done = 0;

	if (mutex_lock_interruptible(&w->read_lock))
		return -ERESTARTSYS;
	while (count - done >= sizeof(ev)) {
		spin_lock(&w->events_lock);
		r = list_first_entry_or_null(&w->pending,
					     struct npushm_watch_item, pending);
		if (r) {
			ev.id = r->id;
			ev.cookie = r->cookie;
		}
		spin_unlock(&w->events_lock);
		if (!r)
			break;
		if (copy_to_user(buf + done, &ev, sizeof(ev))) {
			if (!done)
				done = -EFAULT;
			break;
		}
		spin_lock(&w->events_lock);
		r = list_first_entry_or_null(&w->pending,
					     struct npushm_watch_item, pending);
		if (r && r->id == ev.id)
			list_del_init(&r->pending);
		spin_unlock(&w->events_lock);
		done += sizeof(ev);
	}
	mutex_unlock(&w->read_lock);
	return done;
}

static ssize_t npushm_watch_read(struct file *file, char __user *buf,
				 size_t count, loff_t *ppos)
{
	struct npushm_watch *w = file->private_data;
	ssize_t ret;
	int err;

	if (count < sizeof(struct npushm_watch_event))
		return -EINVAL;
	for (;;) {
		ret = npushm_watch_copy_events(w, buf, count);
		if (ret)
			return ret;
		if (file->f_flags & O_NONBLOCK)
			return -EAGAIN;
		err = wait_event_interruptible(w->wq, npushm_watch_has_events(w));
		if (err)
			return err;
	}
}

static __poll_t npushm_watch_poll(struct file *file, poll_table *wait)
{
	struct npushm_watch *w = file->private_data;

	poll_wait(file, &w->wq, wait);
	return npushm_watch_has_events(w) ? EPOLLIN | EPOLLRDNORM : 0;
}

/*
 * The file is opened read-only, so a MAP_SHARED mapping arrives here
 * without VM_SHARED and VM_MAYWRITE (do_mmap() clears them; PROT_WRITE was
 * refused with EACCES before): VM_MAYSHARE tells MAP_SHARED. A private
 * mapping could be made writable and copied; it is refused.
 */
static int npushm_watch_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct npushm_watch *w = file->private_data;

	if (vma->vm_flags & VM_WRITE)
		return -EPERM;
	if (!(vma->vm_flags & VM_MAYSHARE) || vma->vm_pgoff ||
	    vma_pages(vma) != 1)
		return -EINVAL;
	vma->vm_flags &= ~VM_MAYWRITE;
	vma->vm_flags |= VM_DONTEXPAND | VM_DONTDUMP;
	return vm_insert_page(vma, vma->vm_start, w->page);
}

static int npushm_watch_release(struct inode *inode, struct file *file)
{
	struct npushm_watch *w = file->private_data;
	struct npushm_watch_item *r;
	unsigned long id;

	/*
	 * Until the last range is out of its tree, the others may still fire
	 * and queue themselves behind the fired ones on @pending: free none
	 * before then.
	 */
	xa_for_each(&w->ranges, id, r)
		mmu_interval_notifier_remove(&r->notifier);
	xa_for_each(&w->ranges, id, r)
		kfree(r);
	xa_destroy(&w->ranges);
	npushm_watch_uid_uncharge(w->uid, w->nr_ranges);
	__free_page(w->page);
	mmdrop(w->mm);
	kfree(w);
	return 0;
}

static const struct file_operations npushm_watch_fops = {
	.owner = THIS_MODULE,
	.release = npushm_watch_release,
	.read = npushm_watch_read,
	.poll = npushm_watch_poll,
	.mmap = npushm_watch_mmap,
	.unlocked_ioctl = npushm_watch_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.llseek = noop_llseek,
};

/**
 * npushm_watch_create - a new watch bound to the caller's address space
 * @req: NPUSHM_IOC_WATCH's argument; @req->fd is set
 * @out: the watch file and its reserved descriptor, installed by dispatch
 *
 * Return: 0, -EINVAL for non-zero flags, -EMFILE, -ENFILE, -ENOMEM.
 */
int npushm_watch_create(struct npushm_watch_open *req,
			struct npushm_ioctl_out *out)
{
	struct npushm_watch *w;
	int fd, ret;

	if (req->flags)
		return -EINVAL;
	w = kzalloc(sizeof(*w), GFP_KERNEL_ACCOUNT);
	if (!w)
		return -ENOMEM;
	w->page = alloc_page(GFP_KERNEL_ACCOUNT | __GFP_ZERO);
	if (!w->page) {
		ret = -ENOMEM;
		goto out_free_watch;
	}
	mutex_init(&w->lock);
	mutex_init(&w->read_lock);
	xa_init(&w->ranges);
	w->next_id = 1;
	spin_lock_init(&w->events_lock);
	INIT_LIST_HEAD(&w->pending);
	init_waitqueue_head(&w->wq);

	fd = npushm_ioctl_new_file("[npushm-watch]", &npushm_watch_fops, w,
				   O_RDONLY, out);
	if (fd < 0) {
		ret = fd;
		goto out_free_page;
	}
	/* Not before: the file's release drops it. */
	mmgrab(current->mm);
	w->mm = current->mm;
	w->uid = npushm_account_uid(current_euid());
	req->fd = fd;
	return 0;

out_free_page:
	__free_page(w->page);
out_free_watch:
	kfree(w);
	return ret;
}

