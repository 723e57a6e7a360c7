/* SPDX-License-Identifier: GPL-2.0 */
/*
 * npushm_internal.h - objects and calls shared by the files of npushm.ko.
 *
 * A region is a piece of the device-memory pool. It is kept alive by
 * references: one per open handle (struct file), one per exported dma-buf and
 * one per persistent name. Mappings hold a handle, so they keep it alive too.
 *
 * Lock order: npushm_names_lock -> region->lock -> pool lock.
 * Never touch user memory while holding region->lock: the mmap path takes
 * region->lock under mmap_lock.
 */
#ifndef NPUSHM_INTERNAL_H
#define NPUSHM_INTERNAL_H

#include <linux/kref.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/rbtree.h>
#include <linux/rcupdate.h>
#include <linux/types.h>
#include <linux/uidgid.h>
#include <uapi/linux/npushm.h>

struct device;
struct file;
struct net;
struct sk_buff;
struct ipc_namespace;
struct vm_area_struct;
struct npushm_region;

/**
 * struct npushm_provider - where a region's memory comes from
 * @name: short name, for logs
 * @chunk_order: page order of the physically contiguous chunks it prefers
 * @alloc: fill @region->pages[0..npages) with zeroed pages; 0 or -errno
 * @free: give back every page of @region
 *
 * The system-memory provider backs regions with kernel pages; a real
 * device (a PCI BAR, an accelerator driver) plugs in here.
 */
struct npushm_provider {
	const char *name;
	unsigned int chunk_order;
	int (*alloc)(struct npushm_region *region);
	void (*free)(struct npushm_region *region);
};

extern const struct npushm_provider npushm_sysmem_provider;

/**
 * struct npushm_ns - the npushm state of one IPC namespace
 * @node: entry in the list of namespaces in use
 * @ipc: the IPC namespace, pinned by @pin while this object exists
 * @pin: an nsfs file of @ipc that keeps it alive
 * @names: published names, struct npushm_name, by string
 * @users: regions and names referring to this object
 * @idle_since: jiffies when @users last dropped to zero
 */
struct npushm_ns {
	struct list_head node;
	struct ipc_namespace *ipc;
	struct file *pin;
	struct rb_root names;
	unsigned int users;
	unsigned long idle_since;
};

/**
 * struct npushm_name - a name published in an IPC namespace
 * @node: entry in @ns->names
 * @link: entry in @region->names
 * @ns: the namespace the name lives in
 * @region: the named region (a reference when @persistent)
 * @uid: owner
 * @gid: group
 * @mode: permission bits, subset of 0666
 * @persistent: the name holds a reference on @region
 * @str: the name, NUL-terminated
 */
struct npushm_name {
	struct rb_node node;
	struct list_head link;
	struct npushm_ns *ns;
	struct npushm_region *region;
	kuid_t uid;
	kgid_t gid;
	umode_t mode;
	bool persistent;
	char str[];
};

/**
 * struct npushm_region - a region of the device-memory pool
 * @ref: references: handles, dma-bufs, persistent names
 * @id: unique id, never reused while the module is loaded
 * @size: bytes, a multiple of PAGE_SIZE
 * @npages: @size in pages
 * @pages: the backing pages, immutable for the region's life
 * @provider: where @pages came from
 * @owner: uid charged for the region (creator's euid)
 * @group: creator's egid
 * @ns: IPC namespace of the creator (visibility, names)
 * @net: network namespace of the creator, where events about it go
 * @inode: pseudo-filesystem inode shared by every handle of the region
 * @lock: protects the fields below
 * @sealed: NPUSHM_SEAL_WRITE applied
 * @writers: mappings that are or may become writable, plus writable dma-bufs
 * @vmas: struct npushm_vma of every mapping
 * @nr_vmas: entries in @vmas
 * @handles: user-visible open handles
 * @dmabufs: live dma-buf exports
 * @names: struct npushm_name referring to it (under npushm_names_lock)
 * @nr_names: entries in @names
 * @nr_persistent: persistent entries in @names
 * @rcu: frees the structure after lockless readers are done
 */
struct npushm_region {
	struct kref ref;
	u64 id;
	size_t size;
	unsigned long npages;
	struct page **pages;
	const struct npushm_provider *provider;
	kuid_t owner;
	kgid_t group;
	struct npushm_ns *ns;
	struct net *net;
	struct inode *inode;

	struct mutex lock;		/* protects sealed..dmabufs */
	bool sealed;
	unsigned int writers;
	struct list_head vmas;
	unsigned int nr_vmas;
	unsigned int handles;
	unsigned int dmabufs;

	struct list_head names;
	unsigned int nr_names;
	unsigned int nr_persistent;
	struct rcu_head rcu;
};

/**
 * struct npushm_ioctl_out - what an ioctl handler hands back to dispatch
 * @file: a new file to install as @fd once the reply reached user space
 * @fd: the reserved descriptor for @file
 *
 * File descriptors are installed only after everything else succeeded.
 */
struct npushm_ioctl_out {
	struct file *file;
	int fd;
};

/**
 * struct npushm_ioctl_desc - one extensible ioctl
 * @cmd: the ioctl number with the kernel's struct size
 * @size_ver0: the smallest struct size accepted
 * @handler: does the work on a kernel copy of the struct
 */
struct npushm_ioctl_desc {
	unsigned int cmd;
	unsigned int size_ver0;
	int (*handler)(struct file *file, void *arg, struct npushm_ioctl_out *out);
};

long npushm_ioctl_dispatch(const struct npushm_ioctl_desc *descs, size_t n,
			   struct file *file, unsigned int cmd,
			   unsigned long arg);

/* pool.c */
int npushm_pool_init(void);
void npushm_pool_exit(void);
u64 npushm_pool_capacity(void);
u64 npushm_pool_uid_quota(void);
int npushm_pool_charge(kuid_t uid, u64 bytes);
void npushm_pool_uncharge(kuid_t uid, u64 bytes);
void npushm_pool_count_failure(void);
void npushm_pool_query(struct npushm_query *q, kuid_t uid);
int npushm_pool_fill_stats(struct sk_buff *skb, kuid_t only_uid, bool all_uids);

/* region.c */
extern struct xarray npushm_regions;
int npushm_region_create(u64 size, struct npushm_region **out);
void npushm_region_get(struct npushm_region *region);
bool npushm_region_tryget(struct npushm_region *region);
void npushm_region_put(struct npushm_region *region);
struct file *npushm_region_file(struct npushm_region *region, bool writable,
				bool internal);
int npushm_region_handle_out(struct npushm_region *region, bool writable,
			     struct npushm_ioctl_out *out);
struct npushm_region *npushm_region_from_file(struct file *file);
bool npushm_file_writable(struct file *file);
int npushm_region_fs_init(void);
void npushm_region_fs_exit(void);
int npushm_region_ioctl_alloc(struct file *file, void *arg,
			      struct npushm_ioctl_out *out);

/* region_mmap.c */
int npushm_region_mmap(struct npushm_region *region, struct vm_area_struct *vma);
void npushm_region_map_stats(struct npushm_region *region, u64 *bytes,
			     unsigned int *mappers);

/* names.c */
extern struct mutex npushm_names_lock;
struct npushm_ns *npushm_ns_get_current(void);
void npushm_ns_put(struct npushm_ns *ns);
bool npushm_ns_is_current(const struct npushm_ns *ns);
int npushm_names_ioctl_open(struct file *file, void *arg,
			    struct npushm_ioctl_out *out);
int npushm_names_ioctl_unlink(struct file *file, void *arg,
			      struct npushm_ioctl_out *out);
int npushm_names_publish(struct npushm_region *region, bool writable,
			 const struct npushm_publish *req);
void npushm_names_drop_region(struct npushm_region *region);
void npushm_names_exit(void);

/* dmabuf.c */
int npushm_dmabuf_export(struct file *file, struct npushm_region *region,
			 struct npushm_export *req, struct npushm_ioctl_out *out);

/* netlink.c */
int npushm_netlink_init(void);
void npushm_netlink_exit(void);
void npushm_event(enum npushm_genl_event type, struct npushm_region *region,
		  const char *name, u64 size, int err);

/* test_importer.c */
int npushm_test_importer_init(struct device *dev);
void npushm_test_importer_exit(void);

/* dev.c */
struct device *npushm_device(void);
extern bool npushm_test_importer_enabled;

#endif /* NPUSHM_INTERNAL_H */
