// SPDX-License-Identifier: GPL-2.0
/*
 * names.c - publishing regions under names, per IPC namespace.
 *
 * Names live in the publisher's IPC namespace: a process sees, opens and
 * unlinks only the names of its own namespace. A name records its owner
 * (the publisher's euid and egid) and a mode (subset of 0666); opening is
 * checked like a file (owner, group, other bits; CAP_IPC_OWNER in the
 * namespace's user namespace overrides), unlinking is for the owner and
 * CAP_IPC_OWNER. A persistent name holds a reference on its region, like a
 * file in /dev/shm; any other name goes away with the region.
 *
 * The module keeps one struct npushm_ns per IPC namespace in use, which
 * pins the namespace through an nsfs file so that its address cannot be
 * reused while names or regions refer to it.
 */
#include <linux/cred.h>
#include <linux/fdtable.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/ipc_namespace.h>
#include <linux/magic.h>
#include <linux/nsproxy.h>
#include <linux/proc_fs.h>
#include <linux/proc_ns.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/workqueue.h>

#include "npushm_internal.h"

/* Protects every name table, the namespace list and region->names. */
DEFINE_MUTEX(npushm_names_lock);
static LIST_HEAD(npushm_ns_list);

static struct ns_common *npushm_ipc_ns_get(struct ns_common *ns)
{
	get_ipc_ns(container_of(ns, struct ipc_namespace, ns));
	return ns;
}

/* An nsfs file of @ipc: holding it keeps @ipc alive. */
static struct file *npushm_ns_pin(struct ipc_namespace *ipc)
{
	struct file *file;
	int fd;

	fd = open_related_ns(&ipc->ns, npushm_ipc_ns_get);
	if (fd < 0)
		return ERR_PTR(fd);
	file = fget(fd);
	close_fd(fd);
	if (!file)
		return ERR_PTR(-EAGAIN);
	if (file_inode(file)->i_sb->s_magic != NSFS_MAGIC ||
	    file_inode(file)->i_private != &ipc->ns) {
		fput(file);
		return ERR_PTR(-EAGAIN);
	}
	return file;
}

static struct npushm_ns *npushm_ns_find(struct ipc_namespace *ipc)
{
	struct npushm_ns *ns;

	lockdep_assert_held(&npushm_names_lock);
	list_for_each_entry(ns, &npushm_ns_list, node)
		if (ns->ipc == ipc)
			return ns;
	return NULL;
}

/**
 * npushm_ns_get_current - the npushm state of the caller's IPC namespace
 *
 * Return: the state with a user reference taken, or an ERR_PTR.
 */
struct npushm_ns *npushm_ns_get_current(void)
{
	struct ipc_namespace *ipc = current->nsproxy->ipc_ns;
	struct npushm_ns *ns, *fresh;
	struct file *pin;

	mutex_lock(&npushm_names_lock);
	ns = npushm_ns_find(ipc);
	if (ns) {
		ns->users++;
		mutex_unlock(&npushm_names_lock);
		return ns;
	}
	mutex_unlock(&npushm_names_lock);

	fresh = kzalloc(sizeof(*fresh), GFP_KERNEL);
	if (!fresh)
		return ERR_PTR(-ENOMEM);
	pin = npushm_ns_pin(ipc);
	if (IS_ERR(pin)) {
		kfree(fresh);
		return ERR_CAST(pin);
	}

	mutex_lock(&npushm_names_lock);
	ns = npushm_ns_find(ipc);
	if (!ns) {
		fresh->ipc = ipc;
		fresh->pin = pin;
		fresh->names = RB_ROOT;
		list_add(&fresh->node, &npushm_ns_list);
		ns = fresh;
		fresh = NULL;
		pin = NULL;
	}
	ns->users++;
	mutex_unlock(&npushm_names_lock);

	if (pin)
		fput(pin);
	kfree(fresh);
	return ns;
}

static void npushm_ns_reap(struct work_struct *work);
static DECLARE_DELAYED_WORK(npushm_ns_reaper, npushm_ns_reap);

/*
 * The last user gone, a namespace's state stays cached (and the namespace
 * pinned) for NPUSHM_NS_IDLE, so that allocating and freeing regions in a
 * loop does not pin and unpin the namespace every time.
 */
#define NPUSHM_NS_IDLE	(5 * HZ)

static void npushm_ns_put_locked(struct npushm_ns *ns)
{
	lockdep_assert_held(&npushm_names_lock);
	if (--ns->users)
		return;
	WARN_ON(!RB_EMPTY_ROOT(&ns->names));
	ns->idle_since = jiffies;
	mod_delayed_work(system_wq, &npushm_ns_reaper, NPUSHM_NS_IDLE);
}

static void npushm_ns_free(struct npushm_ns *ns)
{
	fput(ns->pin);
	kfree(ns);
}

/* Free the states idle for NPUSHM_NS_IDLE, or all idle ones if @all. */
static void npushm_ns_free_idle(bool all)
{
	struct npushm_ns *ns, *tmp;
	bool pending = false;
	LIST_HEAD(gone);

	mutex_lock(&npushm_names_lock);
	list_for_each_entry_safe(ns, tmp, &npushm_ns_list, node) {
		if (ns->users)
			continue;
		if (all || time_after_eq(jiffies, ns->idle_since + NPUSHM_NS_IDLE))
			list_move(&ns->node, &gone);
		else
			pending = true;
	}
	if (pending)
		mod_delayed_work(system_wq, &npushm_ns_reaper, NPUSHM_NS_IDLE);
	mutex_unlock(&npushm_names_lock);

	list_for_each_entry_safe(ns, tmp, &gone, node)
		npushm_ns_free(ns);
}

static void npushm_ns_reap(struct work_struct *work)
{
	npushm_ns_free_idle(false);
}

/**
 * npushm_ns_put - drop a reference taken by npushm_ns_get_current()
 * @ns: the namespace state
 */
void npushm_ns_put(struct npushm_ns *ns)
{
	mutex_lock(&npushm_names_lock);
	npushm_ns_put_locked(ns);
	mutex_unlock(&npushm_names_lock);
}

/**
 * npushm_ns_is_current - whether @ns is the caller's IPC namespace
 * @ns: the namespace state
 *
 * Return: true if the caller lives in @ns.
 */
bool npushm_ns_is_current(const struct npushm_ns *ns)
{
	return ns->ipc == current->nsproxy->ipc_ns;
}

/* Copy a name from user space and check it: 1..NPUSHM_NAME_MAX visible bytes. */
static char *npushm_name_from_user(u64 uptr)
{
	long len, i;
	char *str;

	str = kmalloc(NPUSHM_NAME_MAX + 1, GFP_KERNEL);
	if (!str)
		return ERR_PTR(-ENOMEM);
	len = strncpy_from_user(str, u64_to_user_ptr(uptr), NPUSHM_NAME_MAX + 1);
	if (len < 0) {
		kfree(str);
		return ERR_PTR(len);
	}
	if (len > NPUSHM_NAME_MAX) {
		kfree(str);
		return ERR_PTR(-ENAMETOOLONG);
	}
	if (!len)
		goto out_invalid;
	for (i = 0; i < len; i++)
		if (str[i] < 0x21 || str[i] > 0x7e)
			goto out_invalid;
	return str;

out_invalid:
	kfree(str);
	return ERR_PTR(-EINVAL);
}

static struct npushm_name *npushm_name_find(struct npushm_ns *ns,
					    const char *str)
{
	struct rb_node *node = ns->names.rb_node;

	while (node) {
		struct npushm_name *name = rb_entry(node, struct npushm_name, node);
		int cmp = strcmp(str, name->str);

		if (!cmp)
			return name;
		node = cmp < 0 ? node->rb_left : node->rb_right;
	}
	return NULL;
}

static bool npushm_name_insert(struct npushm_ns *ns, struct npushm_name *name)
{
	struct rb_node **link = &ns->names.rb_node, *parent = NULL;

	while (*link) {
		struct npushm_name *cur = rb_entry(*link, struct npushm_name, node);
		int cmp = strcmp(name->str, cur->str);

		if (!cmp)
			return false;
		parent = *link;
		link = cmp < 0 ? &(*link)->rb_left : &(*link)->rb_right;
	}
	rb_link_node(&name->node, parent, link);
	rb_insert_color(&name->node, &ns->names);
	return true;
}

/* Unhook @name from its namespace and region; returns whether it held a ref. */
static bool npushm_name_unhook(struct npushm_name *name)
{
	struct npushm_region *region = name->region;

	lockdep_assert_held(&npushm_names_lock);
	rb_erase(&name->node, &name->ns->names);
	list_del(&name->link);
	region->nr_names--;
	if (name->persistent)
		region->nr_persistent--;
	return name->persistent;
}

static bool npushm_name_may_open(const struct npushm_name *name, bool write)
{
	umode_t want = write ? 06 : 04;
	umode_t granted;

	if (uid_eq(current_euid(), name->uid))
		granted = name->mode >> 6;
	else if (in_group_p(name->gid))
		granted = name->mode >> 3;
	else
		granted = name->mode;
	if ((granted & want) == want)
		return true;
	return ns_capable(name->ns->ipc->user_ns, CAP_IPC_OWNER);
}

/**
 * npushm_names_publish - NPUSHM_IOC_PUBLISH
 * @region: the region behind the handle
 * @writable: the handle is read-write
 * @req: the request
 *
 * Return: 0, -EINVAL, -EACCES for a read-only handle of an unsealed region,
 * -EEXIST, -ENAMETOOLONG, -EFAULT, -ENOMEM.
 */
int npushm_names_publish(struct npushm_region *region, bool writable,
			 const struct npushm_publish *req)
{
	struct npushm_name *name;
	struct npushm_ns *ns;
	bool sealed;
	char *str;
	int ret;

	if ((req->flags & ~NPUSHM_PUBLISH_PERSIST) || (req->mode & ~0666))
		return -EINVAL;
	str = npushm_name_from_user(req->name);
	if (IS_ERR(str))
		return PTR_ERR(str);
	name = kzalloc(struct_size(name, str, strlen(str) + 1), GFP_KERNEL);
	if (!name) {
		ret = -ENOMEM;
		goto out_free_str;
	}
	strcpy(name->str, str);
	name->region = region;
	name->uid = current_euid();
	name->gid = current_egid();
	name->mode = req->mode;
	name->persistent = req->flags & NPUSHM_PUBLISH_PERSIST;

	ns = npushm_ns_get_current();
	if (IS_ERR(ns)) {
		ret = PTR_ERR(ns);
		goto out_free_name;
	}
	name->ns = ns;

	mutex_lock(&npushm_names_lock);
	mutex_lock(&region->lock);
	sealed = region->sealed;
	mutex_unlock(&region->lock);
	if (!writable && !sealed) {
		ret = -EACCES;
		goto out_unlock;
	}
	if (!npushm_name_insert(ns, name)) {
		ret = -EEXIST;
		goto out_unlock;
	}
	list_add_tail(&name->link, &region->names);
	region->nr_names++;
	if (name->persistent) {
		region->nr_persistent++;
		npushm_region_get(region);
	}
	mutex_unlock(&npushm_names_lock);

	npushm_event(NPUSHM_EVENT_PUBLISHED, region, str, region->size, 0);
	kfree(str);
	return 0;

out_unlock:
	mutex_unlock(&npushm_names_lock);
	npushm_ns_put(ns);
out_free_name:
	kfree(name);
out_free_str:
	kfree(str);
	return ret;
}

/**
 * npushm_names_ioctl_open - NPUSHM_IOC_OPEN
 * @file: /dev/npushm
 * @arg: struct npushm_open
 * @out: the new handle to install
 *
 * Return: 0, -EINVAL, -ENOENT, -EACCES, -ENAMETOOLONG, -EFAULT, -ENOMEM,
 * -EMFILE.
 */
int npushm_names_ioctl_open(struct file *file, void *arg,
			    struct npushm_ioctl_out *out)
{
	struct npushm_open *req = arg;
	bool rdwr = req->flags & NPUSHM_OPEN_RDWR;
	struct npushm_region *region = NULL;
	struct npushm_name *name;
	struct npushm_ns *ns;
	int ret;
	char *str;

	if (req->flags & ~NPUSHM_OPEN_RDWR)
		return -EINVAL;
	str = npushm_name_from_user(req->name);
	if (IS_ERR(str))
		return PTR_ERR(str);

	mutex_lock(&npushm_names_lock);
	ns = npushm_ns_find(current->nsproxy->ipc_ns);
	name = ns ? npushm_name_find(ns, str) : NULL;
	if (!name)
		ret = -ENOENT;
	else if (!npushm_name_may_open(name, rdwr))
		ret = -EACCES;
	else if (!npushm_region_tryget(name->region))
		ret = -ENOENT;
	else
		region = name->region;
	mutex_unlock(&npushm_names_lock);
	kfree(str);
	if (!region)
		return ret;

	ret = npushm_region_handle_out(region, rdwr, out);
	if (ret >= 0) {
		req->fd = ret;
		req->id = region->id;
		req->size = region->size;
		ret = 0;
	}
	npushm_region_put(region);
	return ret;
}

/**
 * npushm_names_ioctl_unlink - NPUSHM_IOC_UNLINK
 * @file: /dev/npushm
 * @arg: struct npushm_unlink
 * @out: unused
 *
 * Return: 0, -EINVAL, -ENOENT, -EACCES, -ENAMETOOLONG, -EFAULT, -ENOMEM.
 */
int npushm_names_ioctl_unlink(struct file *file, void *arg,
			      struct npushm_ioctl_out *out)
{
	struct npushm_unlink *req = arg;
	struct npushm_region *region = NULL;
	struct npushm_name *name;
	struct npushm_ns *ns;
	bool held = false, alive = false;
	int ret = 0;
	char *str;

	if (req->flags || req->reserved)
		return -EINVAL;
	str = npushm_name_from_user(req->name);
	if (IS_ERR(str))
		return PTR_ERR(str);

	mutex_lock(&npushm_names_lock);
	ns = npushm_ns_find(current->nsproxy->ipc_ns);
	name = ns ? npushm_name_find(ns, str) : NULL;
	if (!name) {
		ret = -ENOENT;
	} else if (!uid_eq(current_euid(), name->uid) &&
		   !ns_capable(ns->ipc->user_ns, CAP_IPC_OWNER)) {
		ret = -EACCES;
	} else {
		region = name->region;
		alive = npushm_region_tryget(region);
		held = npushm_name_unhook(name);
		npushm_ns_put_locked(ns);
	}
	mutex_unlock(&npushm_names_lock);
	kfree(str);
	if (ret)
		return ret;

	if (alive) {
		npushm_event(NPUSHM_EVENT_UNLINKED, region, name->str,
			     region->size, 0);
		npushm_region_put(region);
	}
	if (held)
		npushm_region_put(region);
	kfree(name);
	return 0;
}

/**
 * npushm_names_drop_region - remove the names of a region being destroyed
 * @region: the region; no persistent name can refer to it any more
 */
void npushm_names_drop_region(struct npushm_region *region)
{
	struct npushm_name *name, *tmp;
	LIST_HEAD(gone);

	mutex_lock(&npushm_names_lock);
	list_for_each_entry_safe(name, tmp, &region->names, link) {
		WARN_ON(npushm_name_unhook(name));
		list_add(&name->link, &gone);
	}
	mutex_unlock(&npushm_names_lock);

	list_for_each_entry_safe(name, tmp, &gone, link) {
		npushm_ns_put(name->ns);
		kfree(name);
	}
}

/**
 * npushm_names_exit - drop every persistent name at module unload
 *
 * No handle or dma-buf can exist any more (they hold the module), so this
 * destroys the regions that only persistent names kept alive.
 */
void npushm_names_exit(void)
{
	struct npushm_name *name;
	struct npushm_ns *ns;
	struct rb_node *node;

	for (;;) {
		struct npushm_region *region = NULL;
		bool held = false;

		node = NULL;
		mutex_lock(&npushm_names_lock);
		list_for_each_entry(ns, &npushm_ns_list, node) {
			node = rb_first(&ns->names);
			if (node)
				break;
		}
		if (node) {
			name = rb_entry(node, struct npushm_name, node);
			region = name->region;
			held = npushm_name_unhook(name);
			npushm_ns_put_locked(ns);
		}
		mutex_unlock(&npushm_names_lock);
		if (!node)
			break;
		if (held)
			npushm_region_put(region);
		kfree(name);
	}
	cancel_delayed_work_sync(&npushm_ns_reaper);
	npushm_ns_free_idle(true);
	WARN_ON(!list_empty(&npushm_ns_list));
}
