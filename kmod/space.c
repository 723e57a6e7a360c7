// SPDX-License-Identifier: GPL-2.0-only
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * space.c - address-space grants: a process lets the holders of a file
 * read or write chosen ranges of its own memory, one copy, no ptrace
 * (NPUSHM_IOC_SPACE).
 *
 * A space is an anonymous file bound to the address space (mm) of the
 * process that opened it. Its owner grants ranges of that address space
 * (NPUSHM_IOC_SPACE_GRANT, readable and/or writable) and revokes them
 * (NPUSHM_IOC_SPACE_REVOKE); whoever holds the file - the owner, or a peer
 * it passed the descriptor to - reads and writes granted bytes with
 * pread(2)/pwrite(2) and their vector forms, the file offset being the
 * owner's virtual address. The descriptor is the permission: no ptrace
 * access check, so the copy works between uids, under Yama's ptrace_scope
 * 2 and 3 and under seccomp filters that refuse process_vm_readv(), and it
 * reaches nothing the owner did not grant.
 *
 * Each access pins the owner's pages for the duration of one batch's copy
 * (pin_user_pages_remote(), a page's worth of page pointers at a time, 16
 * if that array cannot be allocated), as process_vm_readv() does: the
 * pages read are those the owner's address
 * space maps at that moment, never stale ones, and nothing stays pinned
 * between calls. An access after the owner's exit (or execve) fails with
 * ESRCH; one on an address the owner no longer maps stops there (a short
 * count, or EFAULT if nothing was copied).
 *
 * Locking: space->lock (an rwsem) is held shared by each access for the
 * whole copy and exclusively by GRANT and REVOKE, so when REVOKE returns no
 * access to the revoked range is in flight. Lock order: space->lock ->
 * owner's mmap_lock (dropped before the copy) -> the accessor's mmap_lock
 * (page faults of the copy). A peer that stalls its own page faults
 * (userfaultfd) can delay its owner's GRANT or REVOKE: they wait killably.
 *
 * Lifetime: the space holds an mm_count reference (mmgrab) on the owner's
 * mm and takes mm_users (mmget_not_zero) only during an access, so a space
 * kept by a peer after the owner exited keeps no memory of the owner.
 */
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/mm.h>
#include <linux/rwsem.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <linux/uio.h>
#include <linux/xarray.h>

#include "npushm_internal.h"

/* Pages pinned at once by one access: a page of pointers (2 MiB of 4 KiB pages) ... */
#define NPUSHM_SPACE_BATCH_PAGES	(PAGE_SIZE / sizeof(struct page *))
/* ... or, for short accesses and when that cannot be allocated, a stack array */
#define NPUSHM_SPACE_STACK_PAGES	16

/**
 * struct npushm_space - one space file
 * @mm: the owner's address space (mm_count held)
 * @lock: shared by accesses, exclusive for GRANT and REVOKE
 * @grants: struct npushm_space_grant by id
 * @nr_grants: entries in @grants
 * @next_id: the id of the next grant (ids start at 1, never reused)
 */
struct npushm_space {
	struct mm_struct *mm;
	struct rw_semaphore lock;	/* protects grants, nr_grants, next_id */
	struct xarray grants;
	unsigned int nr_grants;
	u64 next_id;
};

/**
 * struct npushm_space_grant - one granted range
 * @start: first byte
 * @end: one past the last byte
 * @flags: NPUSHM_GRANT_READ and/or NPUSHM_GRANT_WRITE
 */
struct npushm_space_grant {
	unsigned long start;
	unsigned long end;
	u32 flags;
};

/* Whether one grant covers [start, end) with the right to @need. */
static bool npushm_space_granted(struct npushm_space *s, unsigned long start,
				 unsigned long end, u32 need)
{
	struct npushm_space_grant *g;
	unsigned long id;

	xa_for_each(&s->grants, id, g) {
		if (g->start <= start && end <= g->end &&
		    (g->flags & need) == need)
			return true;
	}
	return false;
}

/*
 * Copy between the owner's [addr, addr + len) and @iter, one batch of
 * pinned pages at a time. Returns the bytes copied, or a negative error if
 * none were.
 */
static ssize_t npushm_space_copy(struct mm_struct *mm, unsigned long addr,
				 size_t len, struct iov_iter *iter, bool write)
{
	struct page *stack[NPUSHM_SPACE_STACK_PAGES];
	struct page **pages = stack;
	unsigned long batch = NPUSHM_SPACE_STACK_PAGES;
	unsigned int gup_flags = write ? FOLL_WRITE : 0;
	size_t done = 0;

	if (DIV_ROUND_UP(offset_in_page(addr) + len, PAGE_SIZE) > batch) {
		struct page **many = kmalloc_array(NPUSHM_SPACE_BATCH_PAGES, sizeof(*many),
						   GFP_KERNEL | __GFP_NOWARN);

		if (many) {
			pages = many;
			batch = NPUSHM_SPACE_BATCH_PAGES;
		}
	}
	while (done < len) {
		unsigned long pa = (addr + done) & PAGE_MASK;
		size_t off = (addr + done) - pa;
		unsigned long nr = min_t(unsigned long,
					 DIV_ROUND_UP(off + len - done, PAGE_SIZE),
					 batch);
		long pinned, i;
		int locked = 1;
		bool fault = false;

		mmap_read_lock(mm);
		pinned = pin_user_pages_remote(mm, pa, nr, gup_flags, pages,
					       NULL, &locked);
		if (locked)
			mmap_read_unlock(mm);
		if (pinned <= 0)
			break;
		for (i = 0; i < pinned && done < len; i++) {
			size_t n = min_t(size_t, PAGE_SIZE - off, len - done);
			size_t c = write ?
				copy_page_from_iter(pages[i], off, n, iter) :
				copy_page_to_iter(pages[i], off, n, iter);

			done += c;
			off = 0;
			if (c < n) {
				fault = true;
				break;
			}
		}
		unpin_user_pages_dirty_lock(pages, pinned, write);
		if (fault || fatal_signal_pending(current))
			break;
		cond_resched();
	}
	if (pages != stack)
		kfree(pages);
	return done ? done : -EFAULT;
}

static ssize_t npushm_space_access(struct kiocb *iocb, struct iov_iter *iter,
				   bool write)
{
	struct npushm_space *s = iocb->ki_filp->private_data;
	size_t len = iov_iter_count(iter);
	unsigned long start = iocb->ki_pos;
	unsigned long end;
	ssize_t ret;

	if (!len)
		return 0;
	/* No grant covers what wraps or passes the end of user space. */
	if (iocb->ki_pos < 0 || check_add_overflow(start, len, &end) ||
	    end > TASK_SIZE)
		return -EACCES;
	if (iocb->ki_flags & IOCB_NOWAIT)
		return -EAGAIN;
	if (down_read_killable(&s->lock))
		return -EINTR;
	if (!npushm_space_granted(s, start, end, write ? NPUSHM_GRANT_WRITE :
						  NPUSHM_GRANT_READ)) {
		ret = -EACCES;
		goto out_unlock;
	}
	if (!mmget_not_zero(s->mm)) {
		ret = -ESRCH;
		goto out_unlock;
	}
	ret = npushm_space_copy(s->mm, start, len, iter, write);
	mmput(s->mm);
	if (ret > 0)
		iocb->ki_pos += ret;
out_unlock:
	up_read(&s->lock);
	return ret;
}

static ssize_t npushm_space_read_iter(struct kiocb *iocb, struct iov_iter *to)
{
	return npushm_space_access(iocb, to, false);
}

static ssize_t npushm_space_write_iter(struct kiocb *iocb,
				       struct iov_iter *from)
{
	return npushm_space_access(iocb, from, true);
}

static int npushm_space_revoke_id(struct npushm_space *s, u64 id)
{
	struct npushm_space_grant *g;

	if (!id || id > ULONG_MAX)
		return -ENOENT;
	if (down_write_killable(&s->lock))
		return -EINTR;
	g = xa_erase(&s->grants, id);
	if (g)
		s->nr_grants--;
	up_write(&s->lock);
	if (!g)
		return -ENOENT;
	kfree(g);
	return 0;
}

/* The caller never learnt the grant's id: it must not stay. */
static void npushm_space_grant_undo(struct file *file, void *arg)
{
	struct npushm_space_grant_req *req = arg;

	npushm_space_revoke_id(file->private_data, req->id);
}

static int npushm_space_ioctl_grant(struct file *file, void *arg,
				    struct npushm_ioctl_out *out)
{
	struct npushm_space *s = file->private_data;
	struct npushm_space_grant_req *req = arg;
	struct npushm_space_grant *g;
	u64 end;
	int ret;

	if (!req->flags || (req->flags & ~NPUSHM_GRANT_ALL) || req->reserved ||
	    !req->len)
		return -EINVAL;
	if (check_add_overflow(req->start, req->len, &end) || end > TASK_SIZE)
		return -EINVAL;
	/* Only the owner's own tasks may open their memory to others. */
	if (current->mm != s->mm)
		return -EPERM;

	g = kzalloc(sizeof(*g), GFP_KERNEL_ACCOUNT);
	if (!g)
		return -ENOMEM;
	g->start = req->start;
	g->end = end;
	g->flags = req->flags;

	if (down_write_killable(&s->lock)) {
		ret = -EINTR;
		goto out_free;
	}
	if (s->nr_grants >= NPUSHM_SPACE_MAX_GRANTS || s->next_id > ULONG_MAX) {
		ret = -ENOSPC;
		goto out_unlock;
	}
	ret = xa_insert(&s->grants, s->next_id, g, GFP_KERNEL_ACCOUNT);
	if (ret)
		goto out_unlock;
	req->id = s->next_id++;
	s->nr_grants++;
	up_write(&s->lock);
	out->undo = npushm_space_grant_undo;
	return 0;

out_unlock:
	up_write(&s->lock);
out_free:
	kfree(g);
	return ret;
}

static int npushm_space_ioctl_revoke(struct file *file, void *arg,
				     struct npushm_ioctl_out *out)
{
	struct npushm_space *s = file->private_data;
	struct npushm_space_revoke *req = arg;

	if (current->mm != s->mm)
		return -EPERM;
	return npushm_space_revoke_id(s, req->id);
}

static const struct npushm_ioctl_desc npushm_space_ioctls[] = {
	{ NPUSHM_IOC_SPACE_GRANT, NPUSHM_SPACE_GRANT_SIZE_VER0,
	  npushm_space_ioctl_grant },
	{ NPUSHM_IOC_SPACE_REVOKE, NPUSHM_SPACE_REVOKE_SIZE_VER0,
	  npushm_space_ioctl_revoke },
};

static long npushm_space_ioctl(struct file *file, unsigned int cmd,
			       unsigned long arg)
{
	return npushm_ioctl_dispatch(npushm_space_ioctls,
				     ARRAY_SIZE(npushm_space_ioctls),
				     file, cmd, arg);
}

static int npushm_space_release(struct inode *inode, struct file *file)
{
	struct npushm_space *s = file->private_data;
	struct npushm_space_grant *g;
	unsigned long id;

	xa_for_each(&s->grants, id, g)
		kfree(g);
	xa_destroy(&s->grants);
	mmdrop(s->mm);
	kfree(s);
	return 0;
}

static const struct file_operations npushm_space_fops = {
	.owner = THIS_MODULE,
	.read_iter = npushm_space_read_iter,
	.write_iter = npushm_space_write_iter,
	.unlocked_ioctl = npushm_space_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.release = npushm_space_release,
	.llseek = default_llseek,
};

/**
 * npushm_space_create - a new space bound to the caller's address space
 * @req: NPUSHM_IOC_SPACE's argument; @req->fd is set
 * @out: the space file and its reserved descriptor, installed by dispatch
 *
 * Return: 0, -EINVAL for non-zero flags, -EMFILE, -ENFILE, -ENOMEM.
 */
int npushm_space_create(struct npushm_space_open *req,
			struct npushm_ioctl_out *out)
{
	struct npushm_space *s;
	int fd;

	if (req->flags)
		return -EINVAL;
	s = kzalloc(sizeof(*s), GFP_KERNEL_ACCOUNT);
	if (!s)
		return -ENOMEM;
	init_rwsem(&s->lock);
	xa_init(&s->grants);
	s->next_id = 1;

	fd = npushm_ioctl_new_file("[npushm-space]", &npushm_space_fops, s,
				   O_RDWR, out);
	if (fd < 0) {
		kfree(s);
		return fd;
	}
	/* Addresses are offsets: pread() and pwrite() position them. */
	out->file->f_mode |= FMODE_PREAD | FMODE_PWRITE;
	/* Not before: the file's release drops it. */
	mmgrab(current->mm);
	s->mm = current->mm;
	req->fd = fd;
	return 0;
}
