/* SPDX-License-Identifier: GPL-2.0-only */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * npushm_internal.h - objects and calls shared by the files of npushm.ko.
 *
 * A region is the memory behind one regular file of an npushm instance (or
 * of the module's internal instance, for anonymous regions). It is the
 * inode's private data and lives as long as the inode: names (links), open
 * files, mappings (through their files) and dma-buf exports (through an
 * internal file) keep it alive, and the VFS frees it when the last of them
 * goes. Its pages are reserved from the pool when it is sized, charged to
 * the file's owner, and given back when it is evicted; pages still pinned
 * then (GUP) stay charged until they are unpinned (pool.c).
 *
 * Lock order: inode lock -> npushm_regions_lock -> region->lock -> pool lock
 * -> instance lock. Never touch user memory while holding region->lock: the
 * mmap path takes it under mmap_lock.
 */
#ifndef NPUSHM_INTERNAL_H
#define NPUSHM_INTERNAL_H

#include <linux/fs.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include <linux/uidgid.h>
#include <uapi/linux/npushm.h>

#include "npushm_provider.h"

struct file;
struct page;
struct sk_buff;
struct user_namespace;
struct vm_area_struct;
struct npushm_region;

/* chunks.c */
int npushm_pages_fill(struct page **pages, unsigned long n, unsigned int order,
		      struct page *(*chunk)(void *ctx, unsigned int order),
		      void (*undo)(void *ctx, struct page **pages, unsigned long n),
		      void *ctx);

/* provider_sysmem.c */
extern struct npushm_provider npushm_sysmem_provider;
int npushm_pages_alloc(struct page **pages, unsigned long npages, int nid);
void npushm_pages_free(struct page **pages, unsigned long n);

/* provider_node.c */
int npushm_provider_node(const struct npushm_provider *provider);
int npushm_node_providers_init(void);
void npushm_node_providers_exit(void);

/* provider_bar.c */
#if IS_ENABLED(CONFIG_PCI) && IS_ENABLED(CONFIG_ZONE_DEVICE)
int npushm_bar_providers_init(void);
void npushm_bar_providers_exit(void);
#else
static inline int npushm_bar_providers_init(void)
{
	return 0;
}

static inline void npushm_bar_providers_exit(void)
{
}
#endif

/* provider.c */
struct npushm_provider *npushm_provider_get(const char *name);
int npushm_provider_read_lock(void);
void npushm_provider_read_unlock(int idx);
bool npushm_provider_revoked(const struct npushm_provider *provider);
void npushm_provider_hold(struct npushm_provider *provider);
void npushm_provider_put(struct npushm_provider *provider);
int npushm_provider_alloc(struct npushm_provider *provider, struct page **pages,
			  unsigned long n);
void npushm_provider_free(struct npushm_provider *provider, struct page **pages,
			  unsigned long n);
void npushm_provider_mark_revoked(struct npushm_provider *provider);
int npushm_provider_for_each(unsigned long *pos,
			     int (*put)(void *ctx, const struct npushm_provider *p,
					u64 used),
			     void *ctx);

/**
 * struct npushm_region - the device memory behind one region file
 * @inode: the file's inode (the region is its i_private)
 * @id: the inode number: unique, never reused while the module is loaded,
 *	carrying no count (region_id.c)
 * @index: its key in npushm_regions, the counter behind @id (never shown)
 * @lock: protects the fields below
 * @size: bytes, a multiple of PAGE_SIZE; 0 until sized
 * @npages: @size in pages
 * @pages: the backing pages, fixed while @size is
 * @provider: where @pages came from
 * @charged: uid the pool charge is on (valid when @size)
 * @account: uid a charge goes to when the region is sized: its owner's,
 *	folded by npushm_account_uid() when the owner was set from inside a
 *	user namespace (inode lock)
 * @anonymous: created by NPUSHM_IOC_ALLOC on the internal instance
 * @sealed: NPUSHM_SEAL_WRITE applied
 * @writers: mappings that are or may become writable, plus writable dma-bufs
 * @vmas: struct npushm_vma of every mapping
 * @nr_vmas: entries in @vmas
 * @handles: user-visible open files
 * @dmabufs: live dma-buf exports
 * @readers: read(2) calls copying from @pages (which they keep: the size
 *	does not go back to 0 meanwhile); they hold no inode lock
 */
struct npushm_region {
	struct inode *inode;
	u64 id;
	unsigned long index;

	struct mutex lock;		/* protects size..readers */
	size_t size;
	unsigned long npages;
	struct page **pages;
	struct npushm_provider *provider;
	kuid_t charged;
	kuid_t account;
	bool anonymous;
	bool sealed;
	unsigned int writers;
	struct list_head vmas;
	unsigned int nr_vmas;
	unsigned int handles;
	unsigned int dmabufs;
	unsigned int readers;
};

/**
 * struct npushm_sb - one instance (mount) of the filesystem
 * @lock: protects the counters
 * @max_bytes: size= in bytes, 0: only the pool limits it
 * @used_bytes: bytes of sized regions in this instance
 * @max_inodes: nr_inodes=, 0: unlimited (the internal instance)
 * @free_inodes: inodes and extra links still allowed
 * @mode: mode= of the root directory
 * @uid: uid= of the root directory
 * @gid: gid= of the root directory
 * @provider: provider= (referenced), where every region's memory comes from
 * @allow_cpus: allow_cpus: a node provider's node may have CPUs
 */
struct npushm_sb {
	spinlock_t lock;		/* protects used_bytes, free_inodes */
	u64 max_bytes;
	u64 used_bytes;
	unsigned long max_inodes;
	unsigned long free_inodes;
	umode_t mode;
	kuid_t uid;
	kgid_t gid;
	struct npushm_provider *provider;
	bool allow_cpus;
};

static inline struct npushm_sb *NPUSHM_SB(struct super_block *sb)
{
	return sb->s_fs_info;
}

/* instance.c */
bool npushm_userns_mounts_allowed(void);
int npushm_reserve_inode(struct super_block *sb);
void npushm_free_inode_slot(struct super_block *sb);
int npushm_sb_reserve_bytes(struct super_block *sb, u64 bytes);
void npushm_sb_release_bytes(struct super_block *sb, u64 bytes);

/**
 * struct npushm_ioctl_out - what an ioctl handler hands back to dispatch
 * @file: a new file to install as @fd once the reply reached user space
 * @fd: the reserved descriptor for @file
 * @undo: when set, called with the handler's file and struct if the reply
 *	cannot reach user space, to take back what the handler did
 *
 * File descriptors are installed only after everything else succeeded.
 */
struct npushm_ioctl_out {
	struct file *file;
	int fd;
	void (*undo)(struct file *file, void *arg);
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
int npushm_ioctl_new_file(const char *name, const struct file_operations *fops,
			  void *priv, int flags, struct npushm_ioctl_out *out);

/* pool.c */
int npushm_parse_bytes(const char *str, u64 *bytes);
u64 npushm_pool_capacity(void);
u64 npushm_pool_uid_quota(void);
kuid_t npushm_account_uid_in(const struct user_namespace *ns, kuid_t uid);
kuid_t npushm_account_uid(kuid_t uid);
int npushm_pool_charge(kuid_t uid, u64 bytes);
void npushm_pool_uncharge(kuid_t uid, u64 bytes);
int npushm_pool_transfer(kuid_t from, kuid_t to, u64 bytes);
void npushm_pool_count_failure(void);
bool npushm_pool_global_visible(void);
void npushm_pool_query(struct npushm_query *q, kuid_t uid, bool global);
void npushm_pool_orphan(kuid_t uid, u64 size, struct page **pages,
			unsigned long n, struct npushm_provider *provider);
int npushm_pool_fill_stats(struct sk_buff *skb, struct user_namespace *ns,
			   kuid_t uid, bool global);
int npushm_pool_dump_uids(struct sk_buff *skb, struct user_namespace *ns,
			  bool all, kuid_t uid, unsigned long *pos,
			  int (*put)(struct sk_buff *skb, void *ctx, u32 uid,
				     u64 bytes, u32 regions),
			  void *ctx);
int npushm_pool_init(void);
void npushm_pool_exit(void);

/* region_id.c */
void npushm_id_init(void);
u64 npushm_id_next(unsigned long *index);
u64 npushm_id_to_index(u64 id);

/* region.c */
extern struct mutex npushm_regions_lock;
extern struct xarray npushm_regions;
int npushm_region_init(struct npushm_region *region, struct inode *inode);
void npushm_region_destroy(struct npushm_region *region);
int npushm_region_resize(struct npushm_region *region, loff_t size);
int npushm_region_fallocate(struct npushm_region *region, loff_t offset,
			    loff_t len);
int npushm_region_chown(struct npushm_region *region, kuid_t uid);
unsigned long npushm_region_pinned_pages(struct npushm_region *region);
void npushm_region_open_file(struct npushm_region *region);
void npushm_region_release_file(struct npushm_region *region);
bool npushm_file_writable(struct file *file);
int npushm_region_seal_write(struct npushm_region *region);
ssize_t npushm_region_read_iter(struct kiocb *iocb, struct iov_iter *to);
ssize_t npushm_region_write_iter(struct kiocb *iocb, struct iov_iter *from);

/**
 * struct npushm_opened_as - the link a region file was opened by
 * @parent: its directory then (referenced)
 * @hash_len: its name's hash and length then
 *
 * A region file's private data: NPUSHM_IOC_INFO reports the file's name
 * only while the file is still linked under that name in that directory,
 * never a name someone else gave it since (a rename into a directory the
 * caller cannot search).
 */
struct npushm_opened_as {
	struct dentry *parent;
	u64 hash_len;
};

/* region_mmap.c */
int npushm_region_mmap(struct npushm_region *region, struct vm_area_struct *vma);
void npushm_region_map_stats(struct npushm_region *region, u64 *bytes,
			     unsigned int *mappers);

/* fs.c */
static inline struct npushm_region *npushm_region(struct inode *inode)
{
	return inode->i_private;
}

int npushm_fs_init(void);
void npushm_fs_exit(void);
int npushm_fs_register(void);
void npushm_fs_unregister(void);
int npushm_anon_alloc(u64 size, struct file **filep, u64 *id);

/* region_file.c */
extern const struct file_operations npushm_file_fops;

/* dmabuf.c */
int npushm_dmabuf_export(struct file *file, struct npushm_region *region,
			 struct npushm_export *req, struct npushm_ioctl_out *out);

/* watch.c */
#ifdef CONFIG_MMU_NOTIFIER
#define NPUSHM_FEAT_WATCH_IF_BUILT NPUSHM_FEAT_WATCH
int npushm_watch_create(struct npushm_watch_open *req,
			struct npushm_ioctl_out *out);
#else
#define NPUSHM_FEAT_WATCH_IF_BUILT 0
static inline int npushm_watch_create(struct npushm_watch_open *req,
				      struct npushm_ioctl_out *out)
{
	return -EOPNOTSUPP;
}
#endif

/* space.c */
int npushm_space_create(struct npushm_space_open *req,
			struct npushm_ioctl_out *out);

/* netlink.c */
int npushm_netlink_init(void);
void npushm_netlink_exit(void);

#endif /* NPUSHM_INTERNAL_H */
