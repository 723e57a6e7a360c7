// SPDX-License-Identifier: GPL-2.0-only
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * instance.c - an instance's limits: the bytes its regions may hold
 * (size=), its files and links (nr_inodes=), and whether instances mounted
 * in user namespaces may size regions at all (module parameter
 * userns_mounts). fs.c mounts instances and makes their files; region.c
 * reserves a region's bytes here when it is sized.
 */
#include <linux/fs.h>
#include <linux/module.h>
#include <linux/spinlock.h>
#include <linux/user_namespace.h>

#include "npushm_internal.h"

static bool npushm_userns_mounts;
module_param_named(userns_mounts, npushm_userns_mounts, bool, 0644);
MODULE_PARM_DESC(userns_mounts,
		 "Instances may be mounted in user namespaces other than the initial one and size regions there (default N)");

/**
 * npushm_userns_mounts_allowed - the userns_mounts parameter, now
 *
 * Return: true when instances may be mounted, and size regions, in user
 * namespaces other than the initial one.
 */
bool npushm_userns_mounts_allowed(void)
{
	return READ_ONCE(npushm_userns_mounts);
}

/**
 * npushm_reserve_inode - take one of an instance's nr_inodes= slots
 * @sb: the instance
 *
 * Return: 0, or -ENOSPC when none is left (nr_inodes=0: no bound).
 */
int npushm_reserve_inode(struct super_block *sb)
{
	struct npushm_sb *sbi = NPUSHM_SB(sb);
	int ret = 0;

	if (!sbi->max_inodes)
		return 0;
	spin_lock(&sbi->lock);
	if (sbi->free_inodes)
		sbi->free_inodes--;
	else
		ret = -ENOSPC;
	spin_unlock(&sbi->lock);
	return ret;
}

/**
 * npushm_free_inode_slot - give back a slot npushm_reserve_inode() took
 * @sb: the instance
 */
void npushm_free_inode_slot(struct super_block *sb)
{
	struct npushm_sb *sbi = NPUSHM_SB(sb);

	if (!sbi->max_inodes)
		return;
	spin_lock(&sbi->lock);
	sbi->free_inodes++;
	spin_unlock(&sbi->lock);
}

/**
 * npushm_sb_reserve_bytes - reserve room in an instance for a region
 * @sb: the instance
 * @bytes: the region's size
 *
 * Return: 0, -EPERM for an instance mounted in a user namespace while
 * userns_mounts is off, -ENOSPC when the instance's size= would be exceeded.
 */
int npushm_sb_reserve_bytes(struct super_block *sb, u64 bytes)
{
	struct npushm_sb *sbi = NPUSHM_SB(sb);
	int ret = 0;

	if (sb->s_user_ns != &init_user_ns && !npushm_userns_mounts_allowed())
		return -EPERM;
	spin_lock(&sbi->lock);
	if (sbi->max_bytes && (sbi->used_bytes > sbi->max_bytes ||
			       bytes > sbi->max_bytes - sbi->used_bytes))
		ret = -ENOSPC;
	else
		sbi->used_bytes += bytes;
	spin_unlock(&sbi->lock);
	return ret;
}

/**
 * npushm_sb_release_bytes - undo npushm_sb_reserve_bytes()
 * @sb: the instance
 * @bytes: the region's size
 */
void npushm_sb_release_bytes(struct super_block *sb, u64 bytes)
{
	struct npushm_sb *sbi = NPUSHM_SB(sb);

	spin_lock(&sbi->lock);
	sbi->used_bytes -= bytes;
	spin_unlock(&sbi->lock);
}
