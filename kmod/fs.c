// SPDX-License-Identifier: GPL-2.0-only
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * fs.c - the "npushm" filesystem: region names are its files.
 *
 * Each mount is an instance with tmpfs-like options:
 *   size=N[KMGTPE]|P%  bytes its regions may hold (P% of the pool's capacity;
 *                      default 0: only the pool limits it)
 *   nr_inodes=N        files, directories and extra links (default 16384)
 *   mode=OOOO          of the root directory (default 1777, as /dev/shm)
 *   uid=, gid=         owner of the root directory (default the mounter's)
 * Regular files are regions (region.c); directories are plain. Names,
 * permissions, ACL-free modes, ownership, rename, unlink, listing, inotify,
 * fanotify and LSM hooks are the VFS's. An instance and everything in it is
 * freed when its last mount and its last open file are gone.
 *
 * Only a file's owner (or CAP_FOWNER) may give it another name (link): a
 * user cannot keep someone else's region, and its charge, alive by naming
 * it, whatever fs.protected_hardlinks says. A link counts against
 * nr_inodes like a file, so names are bounded per instance, and their
 * dentries and inodes are charged to the memory cgroup of whoever makes
 * them.
 *
 * Anonymous regions (NPUSHM_IOC_ALLOC) live on an internal instance that no
 * one can mount or name.
 *
 * Pool memory is gated like /dev/npushm: an instance may be mounted in a
 * user namespace other than the initial one (FS_USERNS_MOUNT) only while the
 * module parameter userns_mounts is on (off by default), and such an
 * instance sizes regions only while it stays on; it may not lift the
 * nr_inodes= bound. A container is given the host's instance (a bind mount)
 * instead.
 *
 * Remounting read-only is refused (EBUSY) while a region of the instance
 * has a writable dma-buf export or a mapping that may become writable: the
 * export's internal file takes no write access to the mount.
 */
#include <linux/cred.h>
#include <linux/ctype.h>
#include <linux/fs.h>
#include <linux/fs_context.h>
#include <linux/fs_parser.h>
#include <linux/iversion.h>
#include <linux/module.h>
#include <linux/mount.h>
#include <linux/nodemask.h>
#include <linux/pagemap.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/statfs.h>

#include "npushm_internal.h"

#define NPUSHM_DEFAULT_NR_INODES	16384
/* Sizes round up to pages: the largest one that still fits a loff_t. */
#define NPUSHM_MAX_SIZE			round_down(MAX_LFS_FILESIZE, PAGE_SIZE)
#define NPUSHM_DEFAULT_MODE		01777

static struct vfsmount *npushm_anon_mnt;

static const struct super_operations npushm_sops;
static const struct inode_operations npushm_dir_iops;
static const struct inode_operations npushm_file_iops;
static struct inode *npushm_get_inode(struct super_block *sb,
				      const struct inode *dir, umode_t mode)
{
	unsigned long index;
	struct inode *inode;
	int ret;

	ret = npushm_reserve_inode(sb);
	if (ret)
		return ERR_PTR(ret);
	inode = new_inode(sb);
	if (!inode) {
		npushm_free_inode_slot(sb);
		return ERR_PTR(-ENOMEM);
	}
	inode->i_ino = npushm_id_next(&index);
	inode_init_owner(&init_user_ns, inode, dir, mode);
	inode->i_atime = current_time(inode);
	inode->i_mtime = inode->i_atime;
	inode->i_ctime = inode->i_atime;
	if (S_ISDIR(mode)) {
		inode->i_op = &npushm_dir_iops;
		inode->i_fop = &simple_dir_operations;
		inc_nlink(inode);
	} else {
		struct npushm_region *region;

		inode->i_op = &npushm_file_iops;
		inode->i_fop = &npushm_file_fops;
		region = kzalloc(sizeof(*region), GFP_KERNEL_ACCOUNT);
		if (!region) {
			iput(inode);
			return ERR_PTR(-ENOMEM);
		}
		mutex_init(&region->lock);
		INIT_LIST_HEAD(&region->vmas);
		inode->i_private = region;
		ret = npushm_region_init(region, inode);
		if (ret) {
			iput(inode);
			return ERR_PTR(ret);
		}
	}
	return inode;
}

static int npushm_mknod(struct inode *dir, struct dentry *dentry, umode_t mode)
{
	struct inode *inode;

	inode = npushm_get_inode(dir->i_sb, dir, mode);
	if (IS_ERR(inode))
		return PTR_ERR(inode);
	dir->i_ctime = current_time(dir);
	dir->i_mtime = dir->i_ctime;
	inode_inc_iversion(dir);
	d_instantiate(dentry, inode);
	dget(dentry);	/* pinned until unlinked */
	return 0;
}

static int npushm_create(struct user_namespace *mnt_userns, struct inode *dir,
			 struct dentry *dentry, umode_t mode, bool excl)
{
	return npushm_mknod(dir, dentry, (mode & 07777) | S_IFREG);
}

static int npushm_mkdir(struct user_namespace *mnt_userns, struct inode *dir,
			struct dentry *dentry, umode_t mode)
{
	int ret;

	ret = npushm_mknod(dir, dentry, (mode & 07777) | S_IFDIR);
	if (!ret)
		inc_nlink(dir);
	return ret;
}

static int npushm_tmpfile(struct user_namespace *mnt_userns, struct inode *dir,
			  struct file *file, umode_t mode)
{
	struct inode *inode;

	inode = npushm_get_inode(dir->i_sb, dir, (mode & 07777) | S_IFREG);
	if (IS_ERR(inode))
		return PTR_ERR(inode);
	d_tmpfile(file, inode);
	return finish_open_simple(file, 0);
}

static int npushm_link(struct dentry *old_dentry, struct inode *dir,
		       struct dentry *dentry)
{
	struct inode *inode = d_inode(old_dentry);
	int ret;

	/* Naming a region keeps it, and its owner's charge, alive. */
	if (!inode_owner_or_capable(&init_user_ns, inode))
		return -EPERM;
	/* The first link of an O_TMPFILE file was counted when it was made. */
	if (inode->i_nlink) {
		ret = npushm_reserve_inode(inode->i_sb);
		if (ret)
			return ret;
	}
	inode->i_ctime = current_time(inode);
	dir->i_ctime = inode->i_ctime;
	dir->i_mtime = inode->i_ctime;
	inode_inc_iversion(dir);
	inc_nlink(inode);
	ihold(inode);
	dget(dentry);
	d_instantiate(dentry, inode);
	return 0;
}

static int npushm_unlink(struct inode *dir, struct dentry *dentry)
{
	struct inode *inode = d_inode(dentry);

	if (inode->i_nlink > 1 && !S_ISDIR(inode->i_mode))
		npushm_free_inode_slot(inode->i_sb);
	inode->i_ctime = current_time(inode);
	dir->i_ctime = inode->i_ctime;
	dir->i_mtime = inode->i_ctime;
	inode_inc_iversion(dir);
	drop_nlink(inode);
	dput(dentry);
	return 0;
}

static int npushm_rmdir(struct inode *dir, struct dentry *dentry)
{
	if (!simple_empty(dentry))
		return -ENOTEMPTY;
	drop_nlink(d_inode(dentry));
	drop_nlink(dir);
	return npushm_unlink(dir, dentry);
}

static int npushm_rename(struct user_namespace *mnt_userns,
			 struct inode *old_dir, struct dentry *old_dentry,
			 struct inode *new_dir, struct dentry *new_dentry,
			 unsigned int flags)
{
	struct inode *inode = d_inode(old_dentry);
	bool dirs = S_ISDIR(inode->i_mode);

	if (flags & ~(RENAME_NOREPLACE | RENAME_EXCHANGE))
		return -EINVAL;
	if (flags & RENAME_EXCHANGE)
		return simple_rename_exchange(old_dir, old_dentry, new_dir,
					      new_dentry);
	if (!simple_empty(new_dentry))
		return -ENOTEMPTY;
	if (d_really_is_positive(new_dentry)) {
		npushm_unlink(new_dir, new_dentry);
		if (dirs) {
			drop_nlink(d_inode(new_dentry));
			drop_nlink(old_dir);
		}
	} else if (dirs) {
		drop_nlink(old_dir);
		inc_nlink(new_dir);
	}
	old_dir->i_ctime = current_time(old_dir);
	old_dir->i_mtime = old_dir->i_ctime;
	new_dir->i_ctime = old_dir->i_ctime;
	new_dir->i_mtime = old_dir->i_ctime;
	inode->i_ctime = old_dir->i_ctime;
	inode_inc_iversion(old_dir);
	inode_inc_iversion(new_dir);
	return 0;
}

static int npushm_setattr(struct user_namespace *mnt_userns,
			  struct dentry *dentry, struct iattr *attr)
{
	struct inode *inode = d_inode(dentry);
	int ret;

	ret = setattr_prepare(&init_user_ns, dentry, attr);
	if (ret)
		return ret;
	if (S_ISREG(inode->i_mode)) {
		if ((attr->ia_valid & ATTR_UID) &&
		    !uid_eq(attr->ia_uid, inode->i_uid)) {
			ret = npushm_region_chown(npushm_region(inode),
						  attr->ia_uid);
			if (ret)
				return ret;
		}
		if (attr->ia_valid & ATTR_SIZE) {
			ret = npushm_region_resize(npushm_region(inode),
						   attr->ia_size);
			if (ret)
				return ret;
		}
	}
	setattr_copy(&init_user_ns, inode, attr);
	return 0;
}

static const struct inode_operations npushm_dir_iops = {
	.create = npushm_create,
	.lookup = simple_lookup,
	.link = npushm_link,
	.unlink = npushm_unlink,
	.mkdir = npushm_mkdir,
	.rmdir = npushm_rmdir,
	.rename = npushm_rename,
	.tmpfile = npushm_tmpfile,
	.setattr = npushm_setattr,
	.getattr = simple_getattr,
};

static const struct inode_operations npushm_file_iops = {
	.setattr = npushm_setattr,
	.getattr = simple_getattr,
};

/**
 * npushm_anon_alloc - a new anonymous region (NPUSHM_IOC_ALLOC)
 * @size: bytes, > 0
 * @filep: out: its read-write file
 * @id: out: its id
 *
 * Return: 0 or -errno as npushm_region_resize().
 */
int npushm_anon_alloc(u64 size, struct file **filep, u64 *id)
{
	struct npushm_region *region;
	struct inode *inode;
	struct file *file;
	int ret;

	if (size > NPUSHM_MAX_SIZE)
		return -EFBIG;
	inode = npushm_get_inode(npushm_anon_mnt->mnt_sb, NULL, S_IFREG | 0600);
	if (IS_ERR(inode))
		return PTR_ERR(inode);
	clear_nlink(inode);
	region = npushm_region(inode);
	region->anonymous = true;
	inode_lock(inode);
	ret = npushm_region_resize(region, size);
	inode_unlock(inode);
	if (ret)
		goto out_iput;
	if (!try_module_get(THIS_MODULE)) {
		ret = -ENODEV;
		goto out_iput;
	}
	file = alloc_file_pseudo(inode, npushm_anon_mnt, "npushm", O_RDWR,
				 &npushm_file_fops);
	if (IS_ERR(file)) {
		module_put(THIS_MODULE);
		ret = PTR_ERR(file);
		goto out_iput;
	}
	npushm_region_open_file(region);
	*filep = file;
	*id = region->id;
	return 0;

out_iput:
	iput(inode);
	return ret;
}

static int npushm_statfs(struct dentry *dentry, struct kstatfs *buf)
{
	struct npushm_sb *sbi = NPUSHM_SB(dentry->d_sb);
	bool global = npushm_pool_global_visible();
	struct npushm_query q = { 0 };
	u64 limit, used, pool_free;

	/* What is free of the pool says what others hold: not for everyone. */
	npushm_pool_query(&q, GLOBAL_ROOT_UID, global);
	pool_free = q.capacity > q.in_use ? q.capacity - q.in_use : 0;
	if (!global)
		pool_free = q.capacity;
	spin_lock(&sbi->lock);
	used = sbi->used_bytes;
	limit = sbi->max_bytes ? sbi->max_bytes : q.capacity;
	buf->f_files = sbi->max_inodes;
	buf->f_ffree = sbi->free_inodes;
	spin_unlock(&sbi->lock);

	buf->f_type = NPUSHM_FS_MAGIC;
	buf->f_bsize = PAGE_SIZE;
	buf->f_namelen = NAME_MAX;
	buf->f_blocks = limit >> PAGE_SHIFT;
	buf->f_bfree = min(limit > used ? limit - used : 0, pool_free) >> PAGE_SHIFT;
	buf->f_bavail = buf->f_bfree;
	buf->f_fsid = u64_to_fsid(huge_encode_dev(dentry->d_sb->s_dev));
	return 0;
}

static int npushm_show_options(struct seq_file *m, struct dentry *root)
{
	struct npushm_sb *sbi = NPUSHM_SB(root->d_sb);

	if (sbi->max_bytes)
		seq_printf(m, ",size=%llu", sbi->max_bytes);
	seq_printf(m, ",nr_inodes=%lu", sbi->max_inodes);
	if (sbi->mode != NPUSHM_DEFAULT_MODE)
		seq_printf(m, ",mode=%03o", sbi->mode);
	if (!uid_eq(sbi->uid, GLOBAL_ROOT_UID))
		seq_printf(m, ",uid=%u", from_kuid_munged(&init_user_ns, sbi->uid));
	if (!gid_eq(sbi->gid, GLOBAL_ROOT_GID))
		seq_printf(m, ",gid=%u", from_kgid_munged(&init_user_ns, sbi->gid));
	if (sbi->provider != &npushm_sysmem_provider)
		seq_printf(m, ",provider=%s", sbi->provider->name);
	if (sbi->allow_cpus)
		seq_puts(m, ",allow_cpus");
	return 0;
}

static void npushm_evict_inode(struct inode *inode)
{
	truncate_inode_pages_final(&inode->i_data);
	if (S_ISREG(inode->i_mode) && inode->i_private) {
		npushm_region_destroy(npushm_region(inode));
		kfree(inode->i_private);
		inode->i_private = NULL;
	}
	clear_inode(inode);
	npushm_free_inode_slot(inode->i_sb);
}

static const struct super_operations npushm_sops = {
	.evict_inode = npushm_evict_inode,
	.drop_inode = generic_delete_inode,
	.statfs = npushm_statfs,
	.show_options = npushm_show_options,
};

struct npushm_fs_context {
	u64 size;
	bool size_percent;
	unsigned long nr_inodes;
	umode_t mode;
	kuid_t uid;
	kgid_t gid;
	struct npushm_provider *provider;
	bool allow_cpus;
	unsigned int seen;
};

#define NPUSHM_SEEN_SIZE	BIT(0)
#define NPUSHM_SEEN_INODES	BIT(1)

enum npushm_param {
	NPUSHM_OPT_SIZE,
	NPUSHM_OPT_NR_INODES,
	NPUSHM_OPT_MODE,
	NPUSHM_OPT_UID,
	NPUSHM_OPT_GID,
	NPUSHM_OPT_PROVIDER,
	NPUSHM_OPT_ALLOW_CPUS,
};

static const struct fs_parameter_spec npushm_fs_parameters[] = {
	fsparam_string("size", NPUSHM_OPT_SIZE),
	fsparam_string("nr_inodes", NPUSHM_OPT_NR_INODES),
	fsparam_u32oct("mode", NPUSHM_OPT_MODE),
	fsparam_u32("uid", NPUSHM_OPT_UID),
	fsparam_u32("gid", NPUSHM_OPT_GID),
	fsparam_string("provider", NPUSHM_OPT_PROVIDER),
	fsparam_flag("allow_cpus", NPUSHM_OPT_ALLOW_CPUS),
	{}
};

static int npushm_parse_param(struct fs_context *fc, struct fs_parameter *param)
{
	struct npushm_fs_context *ctx = fc->fs_private;
	struct fs_parse_result result;
	size_t len;
	char *str;
	u64 val;
	int opt, ret;

	opt = fs_parse(fc, npushm_fs_parameters, param, &result);
	if (opt < 0)
		return opt;

	switch (opt) {
	case NPUSHM_OPT_SIZE:
		str = param->string;
		len = strlen(str);
		ctx->size_percent = len && str[len - 1] == '%';
		if (ctx->size_percent)
			str[len - 1] = '\0';
		ret = npushm_parse_bytes(str, &val);
		/*
		 * Past the largest region it would wrap when rounded to pages
		 * (0: no limit); 0% would mean no limit too.
		 */
		if (ret || (ctx->size_percent && (!val || val > 100)) ||
		    (!ctx->size_percent && val > NPUSHM_MAX_SIZE))
			return invalf(fc, "npushm: size=%s%s: up to %llu bytes, or 1-100%%",
				      str, ctx->size_percent ? "%" : "",
				      (unsigned long long)NPUSHM_MAX_SIZE);
		ctx->size = val;
		ctx->seen |= NPUSHM_SEEN_SIZE;
		return 0;
	case NPUSHM_OPT_NR_INODES:
		ret = npushm_parse_bytes(param->string, &val);
		if (ret || val > ULONG_MAX / 2)
			return invalf(fc, "npushm: nr_inodes=%s: a number, K/M/G suffixes allowed",
				      param->string);
		ctx->nr_inodes = val;
		ctx->seen |= NPUSHM_SEEN_INODES;
		return 0;
	case NPUSHM_OPT_MODE:
		ctx->mode = result.uint_32 & 07777;
		return 0;
	case NPUSHM_OPT_UID:
		ctx->uid = make_kuid(fc->user_ns, result.uint_32);
		if (!uid_valid(ctx->uid))
			return invalf(fc, "npushm: uid=%u has no mapping", result.uint_32);
		return 0;
	case NPUSHM_OPT_GID:
		ctx->gid = make_kgid(fc->user_ns, result.uint_32);
		if (!gid_valid(ctx->gid))
			return invalf(fc, "npushm: gid=%u has no mapping", result.uint_32);
		return 0;
	case NPUSHM_OPT_PROVIDER:
		npushm_provider_put(ctx->provider);
		ctx->provider = npushm_provider_get(param->string);
		if (!ctx->provider)
			return invalf(fc, "npushm: provider=%s: not registered (sysmem is)",
				      param->string);
		return 0;
	case NPUSHM_OPT_ALLOW_CPUS:
		ctx->allow_cpus = true;
		return 0;
	}
	return -EINVAL;
}

static u64 npushm_ctx_bytes(const struct npushm_fs_context *ctx)
{
	if (!ctx->size_percent)
		return PAGE_ALIGN(ctx->size);
	return PAGE_ALIGN(div_u64(npushm_pool_capacity(), 100) * ctx->size);
}

static int npushm_fill_super(struct super_block *sb, struct fs_context *fc)
{
	struct npushm_fs_context *ctx = fc->fs_private;
	struct npushm_sb *sbi;
	struct inode *root;

	sbi = kzalloc(sizeof(*sbi), GFP_KERNEL);
	if (!sbi)
		return -ENOMEM;
	spin_lock_init(&sbi->lock);
	sbi->max_bytes = npushm_ctx_bytes(ctx);
	sbi->max_inodes = ctx->nr_inodes;
	sbi->free_inodes = ctx->nr_inodes;
	sbi->mode = ctx->mode;
	sbi->uid = ctx->uid;
	sbi->gid = ctx->gid;
	if (!ctx->provider) {
		ctx->provider = &npushm_sysmem_provider;
		npushm_provider_hold(ctx->provider);
	}
	sbi->provider = ctx->provider;
	sbi->allow_cpus = ctx->allow_cpus;
	ctx->provider = NULL;
	sb->s_fs_info = sbi;
	sb->s_maxbytes = NPUSHM_MAX_SIZE;
	sb->s_blocksize = PAGE_SIZE;
	sb->s_blocksize_bits = PAGE_SHIFT;
	sb->s_magic = NPUSHM_FS_MAGIC;
	sb->s_op = &npushm_sops;
	sb->s_time_gran = 1;

	root = npushm_get_inode(sb, NULL, S_IFDIR | ctx->mode);
	if (IS_ERR(root))
		return PTR_ERR(root);
	root->i_uid = ctx->uid;
	root->i_gid = ctx->gid;
	sb->s_root = d_make_root(root);
	return sb->s_root ? 0 : -ENOMEM;
}

static int npushm_get_tree(struct fs_context *fc)
{
	struct npushm_fs_context *ctx = fc->fs_private;
	int nid;

	nid = ctx->provider ? npushm_provider_node(ctx->provider) : NUMA_NO_NODE;
	if (nid != NUMA_NO_NODE && node_state(nid, N_CPU) && !ctx->allow_cpus)
		return invalfc(fc, "npushm: provider=%s: node %d has CPUs: add allow_cpus",
			       ctx->provider->name, nid);
	if (fc->user_ns != &init_user_ns) {
		if (!npushm_userns_mounts_allowed()) {
			errorfc(fc, "npushm: user-namespace mounts are off (userns_mounts)");
			return -EPERM;
		}
		if (!ctx->nr_inodes)
			return invalfc(fc, "npushm: nr_inodes=0 not in a user namespace");
	}
	return get_tree_nodev(fc, npushm_fill_super);
}

/*
 * A writable dma-buf export holds no write access to the mount (its file
 * is alloc_file_pseudo()'s), so the VFS's own check before going read-only
 * does not see it: an instance with one, or with a mapping that is or may
 * become writable, stays read-write.
 */
static bool npushm_sb_has_writers(struct super_block *sb)
{
	struct npushm_region *region;
	unsigned long id;
	bool ret = false;

	mutex_lock(&npushm_regions_lock);
	xa_for_each(&npushm_regions, id, region) {
		if (region->inode->i_sb != sb)
			continue;
		mutex_lock(&region->lock);
		ret = region->writers;
		mutex_unlock(&region->lock);
		if (ret)
			break;
	}
	mutex_unlock(&npushm_regions_lock);
	return ret;
}

static int npushm_reconfigure(struct fs_context *fc)
{
	struct npushm_fs_context *ctx = fc->fs_private;
	struct npushm_sb *sbi = NPUSHM_SB(fc->root->d_sb);
	u64 bytes = npushm_ctx_bytes(ctx);
	unsigned long used_inodes;
	int ret = 0;

	if ((ctx->seen & NPUSHM_SEEN_INODES) && !ctx->nr_inodes &&
	    fc->root->d_sb->s_user_ns != &init_user_ns)
		return invalfc(fc, "npushm: nr_inodes=0 not in a user namespace");
	if (ctx->provider && ctx->provider != sbi->provider)
		return invalfc(fc, "npushm: provider=%s: the instance keeps provider %s",
			       ctx->provider->name, sbi->provider->name);
	if ((fc->sb_flags_mask & SB_RDONLY) && (fc->sb_flags & SB_RDONLY) &&
	    !sb_rdonly(fc->root->d_sb) && npushm_sb_has_writers(fc->root->d_sb)) {
		errorfc(fc, "npushm: a writable mapping or dma-buf export exists");
		return -EBUSY;
	}
	spin_lock(&sbi->lock);
	used_inodes = sbi->max_inodes - sbi->free_inodes;
	if ((ctx->seen & NPUSHM_SEEN_SIZE) && bytes && bytes < sbi->used_bytes)
		ret = -EBUSY;
	else if ((ctx->seen & NPUSHM_SEEN_INODES) &&
		 (!sbi->max_inodes || ctx->nr_inodes < used_inodes))
		ret = -EBUSY;
	if (!ret && (ctx->seen & NPUSHM_SEEN_SIZE))
		sbi->max_bytes = bytes;
	if (!ret && (ctx->seen & NPUSHM_SEEN_INODES)) {
		sbi->max_inodes = ctx->nr_inodes;
		sbi->free_inodes = ctx->nr_inodes - used_inodes;
	}
	spin_unlock(&sbi->lock);
	if (ret)
		return invalf(fc, "npushm: new size or nr_inodes below what the instance holds");
	return 0;
}

static void npushm_free_fc(struct fs_context *fc)
{
	struct npushm_fs_context *ctx = fc->fs_private;

	if (ctx)
		npushm_provider_put(ctx->provider);
	kfree(ctx);
}

static const struct fs_context_operations npushm_context_ops = {
	.free = npushm_free_fc,
	.parse_param = npushm_parse_param,
	.get_tree = npushm_get_tree,
	.reconfigure = npushm_reconfigure,
};

static int npushm_init_fs_context(struct fs_context *fc)
{
	struct npushm_fs_context *ctx;

	ctx = kzalloc(sizeof(*ctx), GFP_KERNEL);
	if (!ctx)
		return -ENOMEM;
	ctx->nr_inodes = NPUSHM_DEFAULT_NR_INODES;
	ctx->mode = NPUSHM_DEFAULT_MODE;
	ctx->uid = current_fsuid();
	ctx->gid = current_fsgid();
	fc->fs_private = ctx;
	fc->ops = &npushm_context_ops;
	return 0;
}

/* The internal instance of anonymous regions: no limits but the pool's. */
static int npushm_anon_init_fs_context(struct fs_context *fc)
{
	int ret = npushm_init_fs_context(fc);

	if (!ret) {
		struct npushm_fs_context *ctx = fc->fs_private;

		ctx->nr_inodes = 0;
		ctx->mode = 0700;
		ctx->uid = GLOBAL_ROOT_UID;
		ctx->gid = GLOBAL_ROOT_GID;
	}
	return ret;
}

static void npushm_kill_sb(struct super_block *sb)
{
	struct npushm_sb *sbi = NPUSHM_SB(sb);

	kill_litter_super(sb);
	if (sbi)
		npushm_provider_put(sbi->provider);
	kfree(sbi);
}

static struct file_system_type npushm_fs_type = {
	.owner = THIS_MODULE,
	.name = NPUSHM_FS_TYPE,
	.init_fs_context = npushm_init_fs_context,
	.parameters = npushm_fs_parameters,
	.kill_sb = npushm_kill_sb,
	.fs_flags = FS_USERNS_MOUNT,
};
MODULE_ALIAS_FS(NPUSHM_FS_TYPE);

/* Not registered and without an owner: mounting it does not pin the module. */
static struct file_system_type npushm_anon_fs_type = {
	.name = "npushm_anon",
	.init_fs_context = npushm_anon_init_fs_context,
	.kill_sb = npushm_kill_sb,
};

/**
 * npushm_fs_init - mount the internal instance of anonymous regions
 *
 * Return: 0 or -errno.
 */
int npushm_fs_init(void)
{
	npushm_id_init();
	npushm_anon_mnt = kern_mount(&npushm_anon_fs_type);
	return PTR_ERR_OR_ZERO(npushm_anon_mnt);
}

/**
 * npushm_fs_exit - unmount it; every region is gone by now
 */
void npushm_fs_exit(void)
{
	kern_unmount(npushm_anon_mnt);
}

/**
 * npushm_fs_register - make the filesystem type mountable
 *
 * Return: 0 or -errno.
 */
int npushm_fs_register(void)
{
	return register_filesystem(&npushm_fs_type);
}

/**
 * npushm_fs_unregister - undo npushm_fs_register()
 */
void npushm_fs_unregister(void)
{
	unregister_filesystem(&npushm_fs_type);
}
