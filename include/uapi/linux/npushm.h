/* SPDX-License-Identifier: GPL-2.0-only WITH Linux-syscall-note */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * npushm: device-memory regions shared across processes.
 *
 * Regions are regular files of the "npushm" filesystem. Each mount is an
 * instance (options size=, nr_inodes=, mode=, uid=, gid=); names,
 * permissions, rename, unlink, listing and events (inotify, fanotify) are
 * the VFS's. A file's size is set once, by ftruncate() or fallocate() from
 * zero, which reserves its memory from the pool and charges it to the file's
 * owner; mmap(MAP_SHARED) maps the pool's pages (GUP-able). Publishing a
 * region atomically is: open(dir, O_TMPFILE), ftruncate, fill, seal,
 * linkat. /dev/npushm hands out anonymous regions (shared only by file
 * descriptor) and reports the pool. The ioctls below work on any region
 * file. The generic netlink family NPUSHM_GENL_NAME reports statistics.
 *
 * Extensible ioctls: the size encoded in the ioctl number is the size of the
 * caller's struct. A caller built against an older, smaller struct is
 * zero-extended; a caller with a larger struct must leave the bytes the
 * kernel does not know zero (else E2BIG). Sizes below the first published
 * version (NPUSHM_*_SIZE_VER0) fail with EINVAL. Output is copied back up to
 * the smaller of the two sizes. Every flags word must hold only known bits
 * and every reserved field must be zero (else EINVAL).
 */
#ifndef _UAPI_LINUX_NPUSHM_H
#define _UAPI_LINUX_NPUSHM_H

#include <linux/const.h>
#include <linux/ioctl.h>
#include <linux/types.h>

#define NPUSHM_ABI_VERSION	2
#define NPUSHM_DEVICE_PATH	"/dev/npushm"
/* The filesystem type, its statfs f_type, and where distributions mount it. */
#define NPUSHM_FS_TYPE		"npushm"
#define NPUSHM_FS_MAGIC		0x6e707368	/* "npsh" */
#define NPUSHM_MOUNT_PATH	"/run/npushm"

/* struct npushm_query.features */
#define NPUSHM_FEAT_FS		_BITULL(0)	/* regions are files of an npushm mount */
#define NPUSHM_FEAT_SEAL	_BITULL(1)	/* NPUSHM_IOC_SEAL, pins included */
#define NPUSHM_FEAT_DMABUF	_BITULL(2)	/* NPUSHM_IOC_EXPORT_DMABUF */
#define NPUSHM_FEAT_GUP		_BITULL(3)	/* mappings are GUP-able (ibv_reg_mr) */
#define NPUSHM_FEAT_NETLINK	_BITULL(4)	/* generic netlink family */
#define NPUSHM_FEAT_PINS	_BITULL(5)	/* pinned bytes are reported and kept charged */
#define NPUSHM_FEAT_WATCH	_BITULL(6)	/* NPUSHM_IOC_WATCH: mapping-change watches */
#define NPUSHM_FEAT_SPACE	_BITULL(7)	/* NPUSHM_IOC_SPACE: address-space grants */

/**
 * struct npushm_query - NPUSHM_IOC_QUERY on /dev/npushm (output only)
 * @abi_version: NPUSHM_ABI_VERSION of the running module
 * @reserved: 0
 * @features: NPUSHM_FEAT_* bits
 * @capacity: pool capacity in bytes (module parameter "capacity")
 * @in_use: bytes currently reserved from the pool (pinned pages of
 *	destroyed regions included)
 * @chunk_size: size of the physically contiguous chunks regions are built of
 * @page_size: granularity sizes are rounded up to
 * @uid_quota: bytes one uid may hold (module parameter "uid_quota"), 0: none
 * @uid_in_use: bytes currently charged to the caller's euid
 * @regions: regions holding pool memory
 * @orphan_pinned: bytes of destroyed regions whose pages are still pinned
 *	(an RDMA MR, io_uring buffers, O_DIRECT); charged until unpinned
 */
struct npushm_query {
	__u32 abi_version;
	__u32 reserved;
	__u64 features;
	__u64 capacity;
	__u64 in_use;
	__u64 chunk_size;
	__u64 page_size;
	__u64 uid_quota;
	__u64 uid_in_use;
	__u64 regions;
	__u64 orphan_pinned;
};

#define NPUSHM_QUERY_SIZE_VER0	80

/**
 * struct npushm_alloc - NPUSHM_IOC_ALLOC on /dev/npushm: an anonymous region
 * @size: in: bytes wanted (> 0); out: the size rounded up to @page_size
 * @flags: in: must be 0
 * @fd: out: the region, read-write, close-on-exec, mode 0600, owned by the
 *	caller's fsuid/fsgid; it has no name and cannot be given one
 * @id: out: the region's id (its inode number; as in info and netlink)
 *
 * The memory is zeroed. ENOSPC when the pool lacks room, EDQUOT when the
 * caller's uid would exceed its quota, ENOMEM when the kernel cannot
 * allocate the pages, EINVAL for a size of 0.
 */
struct npushm_alloc {
	__u64 size;
	__u32 flags;
	__s32 fd;
	__u64 id;
};

#define NPUSHM_ALLOC_SIZE_VER0	24

/* struct npushm_seal.seals */
#define NPUSHM_SEAL_WRITE	_BITUL(0)	/* no writer, ever again */

/**
 * struct npushm_seal - NPUSHM_IOC_SEAL on a read-write region file
 * @seals: in: NPUSHM_SEAL_* to add (non-zero)
 * @reserved: must be 0
 *
 * Like memfd's F_SEAL_WRITE: EBUSY while a mapping that is or may become
 * writable, a writable dma-buf export or any pin of the region's pages
 * (an RDMA MR, io_uring fixed buffers, O_DIRECT in flight) exists.
 * Afterwards no writable mapping, writable export, write(2), write pin or
 * size change can be made (EPERM), whoever asks. Sealing twice is not an
 * error.
 */
struct npushm_seal {
	__u32 seals;
	__u32 reserved;
};

#define NPUSHM_SEAL_SIZE_VER0	8

/* struct npushm_export.flags */
#define NPUSHM_EXPORT_RDWR	_BITUL(0)	/* else a read-only dma-buf */

/**
 * struct npushm_export - NPUSHM_IOC_EXPORT_DMABUF on a region file
 * @flags: in: NPUSHM_EXPORT_*; RDWR needs a read-write file, unsealed region
 * @fd: out: the dma-buf file descriptor, close-on-exec
 * @reserved: must be 0
 */
struct npushm_export {
	__u32 flags;
	__s32 fd;
	__u64 reserved;
};

#define NPUSHM_EXPORT_SIZE_VER0	16

/* struct npushm_region_info.flags */
#define NPUSHM_INFO_SEALED	_BITUL(0)
#define NPUSHM_INFO_ANONYMOUS	_BITUL(1)	/* from NPUSHM_IOC_ALLOC: never named */
#define NPUSHM_INFO_NAMED	_BITUL(2)	/* has at least one link */
#define NPUSHM_INFO_WRITABLE	_BITUL(3)	/* this file is read-write */
#define NPUSHM_INFO_REVOKED	_BITUL(4)	/* its device went: no access */

/* Longest name in an instance (a file name: NAME_MAX). */
#define NPUSHM_NAME_MAX		255

/* Bytes of a provider's name and of its device's name, NUL included */
#define NPUSHM_PROVIDER_NAME_MAX	32
#define NPUSHM_DEVICE_NAME_MAX		32

/**
 * struct npushm_region_info - NPUSHM_IOC_INFO on a region file (output)
 * @id: region id (the inode number)
 * @size: bytes (0 until sized)
 * @flags: NPUSHM_INFO_*
 * @owner_uid: the file's owner (as seen from the caller)
 * @owner_gid: the file's group
 * @mode: the file's permission bits
 * @handles: open files of the region (dma-buf exports not counted)
 * @mappings: mappings (VMAs) of the region, through files or dma-bufs
 * @dmabufs: live dma-buf exports
 * @names: links (hard links) to the region
 * @mapped_bytes: bytes covered by all mappings
 * @pinned_bytes: bytes of pages with a reference other than the region's
 *	own and its mappings' (GUP pins: RDMA MRs, io_uring, O_DIRECT)
 * @charged_uid: uid whose quota the memory is charged to (the owner when
 *	the region was sized or last chowned); -1 while unsized
 * @mappers: distinct processes mapping the region
 * @dev: the instance's device number (stat's st_dev, new encoding)
 * @reserved: 0
 * @name: the name this file was opened by, if that link still exists,
 *	else empty; never a name the caller did not use
 * @provider: where the region's memory comes from (the instance's
 *	provider= mount option; "sysmem" by default), NUL-terminated
 * @device: the provider's device (e.g. a PCI address), or empty
 */
struct npushm_region_info {
	__u64 id;
	__u64 size;
	__u32 flags;
	__u32 owner_uid;
	__u32 owner_gid;
	__u32 mode;
	__u32 handles;
	__u32 mappings;
	__u32 dmabufs;
	__u32 names;
	__u64 mapped_bytes;
	__u64 pinned_bytes;
	__u32 charged_uid;
	__u32 mappers;
	__u32 dev;
	__u32 reserved;
	char name[NPUSHM_NAME_MAX + 1];
	char provider[NPUSHM_PROVIDER_NAME_MAX];
	char device[NPUSHM_DEVICE_NAME_MAX];
};

#define NPUSHM_INFO_SIZE_VER0	336	/* up to @name */
#define NPUSHM_INFO_SIZE_VER1	400	/* with @provider and @device */

/**
 * DOC: watches - being told when a range of one's own address space changes
 *
 * A registration cache (RDMA MRs, pinned buffers) must drop an entry once
 * the virtual range it was made for no longer maps the same pages: after
 * munmap(), mremap(), madvise(MADV_DONTNEED), a brk() shrink, a copy-on-
 * write break. NPUSHM_IOC_WATCH on /dev/npushm returns a watch: a file
 * bound to the caller's address space (its mm), in which ranges are added
 * with NPUSHM_IOC_WATCH_ADD. The kernel's MMU notifiers (an interval
 * notifier per range) fire the range, synchronously, before the change
 * completes, whichever thread or syscall makes it. A range fires once:
 *
 * - the u64 at offset 0 of the watch's one read-only page (mmap() it,
 *   PROT_READ, MAP_SHARED, length one page) is a generation counter, bumped
 *   after each range fires; a cache reads it before trusting an entry and
 *   needs no system call while it is unchanged;
 * - read() returns one struct npushm_watch_event per fired range not yet
 *   read (whole records only; EAGAIN with O_NONBLOCK, else it waits);
 *   poll() reports EPOLLIN while such events exist.
 *
 * Changes of protection only (mprotect(), NUMA hinting) and soft-dirty
 * tracking do not fire a range: they leave the pages in place. Everything
 * else does, spurious firings included (a THP collapse that gives up):
 * a fired range is a cache miss, never a stale hit. The process's exit
 * fires every range.
 *
 * A cache adds the range first, then registers (pins) the buffer, then
 * checks that the range has not fired meanwhile: a change completed before
 * NPUSHM_IOC_WATCH_ADD returned is not reported, a later one is.
 *
 * A fired range stays until NPUSHM_IOC_WATCH_DEL or the watch's release;
 * its id is never reused by the watch. Only the process whose address space
 * the watch is bound to may add or delete ranges (EPERM elsewhere: a watch
 * passed to another process can still be read). A watch holds at most
 * NPUSHM_WATCH_MAX_RANGES ranges (ENOSPC), and the ranges of all the
 * watches one uid opened at most the module parameter watch_ranges_per_uid
 * (default 4 * NPUSHM_WATCH_MAX_RANGES; EDQUOT); its memory is charged to
 * the caller's memory cgroup.
 */
#define NPUSHM_WATCH_MAX_RANGES	65536

/**
 * struct npushm_watch_open - NPUSHM_IOC_WATCH on /dev/npushm
 * @flags: in: must be 0
 * @fd: out: the watch, read-only, close-on-exec
 */
struct npushm_watch_open {
	__u32 flags;
	__s32 fd;
};

#define NPUSHM_WATCH_OPEN_SIZE_VER0	8

/**
 * struct npushm_watch_range - NPUSHM_IOC_WATCH_ADD on a watch
 * @start: in: first byte of the range (any alignment; whole pages are
 *	watched: the range is widened to page boundaries)
 * @len: in: bytes (> 0; @start + @len must not wrap nor pass the end of
 *	user space)
 * @cookie: in: returned as is in the range's event
 * @id: out: the range's id (non-zero), for NPUSHM_IOC_WATCH_DEL and events
 * @flags: in: must be 0
 * @reserved: must be 0
 *
 * The range need not be mapped when it is added.
 */
struct npushm_watch_range {
	__u64 start;
	__u64 len;
	__u64 cookie;
	__u64 id;
	__u32 flags;
	__u32 reserved;
};

#define NPUSHM_WATCH_RANGE_SIZE_VER0	40

/**
 * struct npushm_watch_del - NPUSHM_IOC_WATCH_DEL on a watch
 * @id: in: a range's id (ENOENT if the watch has no such range)
 */
struct npushm_watch_del {
	__u64 id;
};

#define NPUSHM_WATCH_DEL_SIZE_VER0	8

/**
 * struct npushm_watch_event - what read() on a watch returns, per fired range
 * @id: the range's id
 * @cookie: the range's cookie
 */
struct npushm_watch_event {
	__u64 id;
	__u64 cookie;
};

/**
 * DOC: spaces - letting chosen peers read or write ranges of one's memory
 *
 * Collectives between processes of one host copy once when a rank can read
 * its peers' buffers. process_vm_readv() needs ptrace access, which Yama's
 * ptrace_scope >= 2, different uids and container seccomp profiles refuse.
 * NPUSHM_IOC_SPACE on /dev/npushm returns a space: a file bound to the
 * caller's address space, opened for reading and writing. Its owner (a task
 * sharing that address space; EPERM elsewhere) grants ranges with
 * NPUSHM_IOC_SPACE_GRANT and revokes them with NPUSHM_IOC_SPACE_REVOKE.
 * Whoever holds the file (passed with SCM_RIGHTS, inherited) reads granted
 * bytes with pread()/preadv() and writes them with pwrite()/pwritev(), the
 * file offset being the owner's virtual address; read() and write() use and
 * advance the file position the same way. The descriptor is the permission:
 * no ptrace check is made.
 *
 * - An access must lie inside one grant that allows it (NPUSHM_GRANT_READ
 *   for reads, NPUSHM_GRANT_WRITE for writes), else EACCES.
 * - It copies what the owner's address space maps at that moment (pages
 *   are held only during the copy): where the owner maps nothing, or maps
 *   read-only for a write, the access stops (a short count, or EFAULT if
 *   nothing was copied); writes to private mappings break copy-on-write in
 *   the owner, as its own stores would.
 * - After the owner's address space is gone (exit, execve) every access
 *   fails with ESRCH; the space keeps none of its memory.
 * - When NPUSHM_IOC_SPACE_REVOKE returns, no access to the revoked range is
 *   in flight and none starts. A grant covers addresses, not memory: an
 *   owner revokes a range before it unmaps or reuses it (a watch tells a
 *   cache when that happens behind its back).
 * - A space holds at most NPUSHM_SPACE_MAX_GRANTS grants (ENOSPC); grants
 *   are charged to the owner's memory cgroup. RWF_NOWAIT is not supported
 *   (EOPNOTSUPP).
 */
#define NPUSHM_SPACE_MAX_GRANTS	4096

/**
 * struct npushm_space_open - NPUSHM_IOC_SPACE on /dev/npushm
 * @flags: in: must be 0
 * @fd: out: the space, read-write, close-on-exec
 */
struct npushm_space_open {
	__u32 flags;
	__s32 fd;
};

#define NPUSHM_SPACE_OPEN_SIZE_VER0	8

/* struct npushm_space_grant_req.flags */
#define NPUSHM_GRANT_READ	_BITUL(0)
#define NPUSHM_GRANT_WRITE	_BITUL(1)
#define NPUSHM_GRANT_ALL	(NPUSHM_GRANT_READ | NPUSHM_GRANT_WRITE)

/**
 * struct npushm_space_grant_req - NPUSHM_IOC_SPACE_GRANT on a space
 * @start: in: first byte of the range (any alignment: exactly these bytes
 *	are granted)
 * @len: in: bytes (> 0; @start + @len must not wrap nor pass the end of
 *	user space)
 * @id: out: the grant's id (non-zero), for NPUSHM_IOC_SPACE_REVOKE
 * @flags: in: NPUSHM_GRANT_READ and/or NPUSHM_GRANT_WRITE (at least one)
 * @reserved: must be 0
 *
 * The range need not be mapped when it is granted.
 */
struct npushm_space_grant_req {
	__u64 start;
	__u64 len;
	__u64 id;
	__u32 flags;
	__u32 reserved;
};

#define NPUSHM_SPACE_GRANT_SIZE_VER0	32

/**
 * struct npushm_space_revoke - NPUSHM_IOC_SPACE_REVOKE on a space
 * @id: in: a grant's id (ENOENT if the space has no such grant)
 */
struct npushm_space_revoke {
	__u64 id;
};

#define NPUSHM_SPACE_REVOKE_SIZE_VER0	8

/*
 * 0xBC is free in Documentation/userspace-api/ioctl/ioctl-number.rst of
 * Linux 6.1. Numbers 0xe0-0xef are kept for the selftests' test module.
 */
#define NPUSHM_IOC_MAGIC	0xBC

/* On /dev/npushm */
#define NPUSHM_IOC_QUERY	_IOR(NPUSHM_IOC_MAGIC, 0x00, struct npushm_query)
#define NPUSHM_IOC_ALLOC	_IOWR(NPUSHM_IOC_MAGIC, 0x01, struct npushm_alloc)
#define NPUSHM_IOC_WATCH	_IOWR(NPUSHM_IOC_MAGIC, 0x02, struct npushm_watch_open)
#define NPUSHM_IOC_SPACE	_IOWR(NPUSHM_IOC_MAGIC, 0x03, struct npushm_space_open)
/* On a watch */
#define NPUSHM_IOC_WATCH_ADD	_IOWR(NPUSHM_IOC_MAGIC, 0x21, struct npushm_watch_range)
#define NPUSHM_IOC_WATCH_DEL	_IOW(NPUSHM_IOC_MAGIC, 0x22, struct npushm_watch_del)
/* On a space */
#define NPUSHM_IOC_SPACE_GRANT	_IOWR(NPUSHM_IOC_MAGIC, 0x31, struct npushm_space_grant_req)
#define NPUSHM_IOC_SPACE_REVOKE	_IOW(NPUSHM_IOC_MAGIC, 0x32, struct npushm_space_revoke)
/* On a region file */
#define NPUSHM_IOC_SEAL		_IOW(NPUSHM_IOC_MAGIC, 0x11, struct npushm_seal)
#define NPUSHM_IOC_EXPORT_DMABUF _IOWR(NPUSHM_IOC_MAGIC, 0x12, struct npushm_export)
#define NPUSHM_IOC_INFO		_IOR(NPUSHM_IOC_MAGIC, 0x13, struct npushm_region_info)

/*
 * Generic netlink family NPUSHM_GENL_NAME. Requests are strictly validated.
 * Global figures (every region, every uid) need CAP_SYS_ADMIN in the
 * initial user namespace, held by both the socket's opener and the sender
 * (netlink_capable()); anyone else sees the regions whose file it owns and
 * its own uid. A dump keeps the credentials it started with.
 *
 * NPUSHM_CMD_REGION_GET: dump (NLM_F_DUMP), one message per region; or,
 *   with NPUSHM_A_REGION_ID, one region. Names are not reported: they are
 *   the filesystem's (readdir).
 * NPUSHM_CMD_STATS_GET: pool statistics and the caller's own NPUSHM_A_UID_USAGE.
 * NPUSHM_CMD_UID_GET: dump, one message per uid holding pool memory.
 * NPUSHM_CMD_PROVIDER_GET: dump, one message per registered provider
 *   (NPUSHM_A_PROVIDER_*; its bytes in use only with the pool-wide figures).
 * Region messages carry their provider's NPUSHM_A_PROVIDER_NAME and, when
 * it has one, NPUSHM_A_PROVIDER_DEVICE.
 * There is no multicast group: watch an instance with inotify or fanotify.
 */
#define NPUSHM_GENL_NAME	"npushm"
#define NPUSHM_GENL_VERSION	2

enum npushm_genl_cmd {
	NPUSHM_CMD_UNSPEC,
	NPUSHM_CMD_REGION_GET,
	NPUSHM_CMD_STATS_GET,
	NPUSHM_CMD_UID_GET,
	NPUSHM_CMD_PROVIDER_GET,
	__NPUSHM_CMD_MAX,
};

#define NPUSHM_CMD_MAX	(__NPUSHM_CMD_MAX - 1)

enum npushm_genl_attr {
	NPUSHM_A_UNSPEC,
	NPUSHM_A_PAD,
	NPUSHM_A_REGION_ID,		/* u64 */
	NPUSHM_A_REGION_SIZE,		/* u64, bytes */
	NPUSHM_A_REGION_OWNER_UID,	/* u32, the file's owner */
	NPUSHM_A_REGION_OWNER_GID,	/* u32 */
	NPUSHM_A_REGION_MODE,		/* u32, permission bits */
	NPUSHM_A_REGION_SEALED,		/* flag */
	NPUSHM_A_REGION_ANONYMOUS,	/* flag */
	NPUSHM_A_REGION_NAMES,		/* u32, links */
	NPUSHM_A_REGION_HANDLES,	/* u32 */
	NPUSHM_A_REGION_MAPPINGS,	/* u32 */
	NPUSHM_A_REGION_DMABUFS,	/* u32 */
	NPUSHM_A_REGION_MAPPED_BYTES,	/* u64 */
	NPUSHM_A_REGION_MAPPERS,	/* u32, distinct processes mapping it */
	NPUSHM_A_REGION_PINNED_BYTES,	/* u64 */
	NPUSHM_A_REGION_CHARGED_UID,	/* u32 */
	NPUSHM_A_REGION_DEV,		/* u32, the instance's st_dev */
	NPUSHM_A_STATS_CAPACITY,	/* u64 */
	NPUSHM_A_STATS_IN_USE,		/* u64 */
	NPUSHM_A_STATS_PEAK,		/* u64 */
	NPUSHM_A_STATS_REGIONS,		/* u64 */
	NPUSHM_A_STATS_FAILED_ALLOCS,	/* u64 */
	NPUSHM_A_STATS_UID_QUOTA,	/* u64 */
	NPUSHM_A_STATS_ORPHAN_PINNED,	/* u64 */
	NPUSHM_A_UID_USAGE,		/* nest of NPUSHM_A_UID_* */
	NPUSHM_A_UID,			/* u32 */
	NPUSHM_A_UID_BYTES,		/* u64 */
	NPUSHM_A_UID_REGIONS,		/* u32 */
	NPUSHM_A_PROVIDER_NAME,		/* string */
	NPUSHM_A_PROVIDER_DEVICE,	/* string, absent for none */
	NPUSHM_A_PROVIDER_CAPACITY,	/* u64, bytes; 0: none of its own */
	NPUSHM_A_PROVIDER_IN_USE,	/* u64, bytes */
	NPUSHM_A_PROVIDER_CHUNK_SIZE,	/* u64, bytes */
	NPUSHM_A_REGION_REVOKED,	/* flag: its provider's device went */
	__NPUSHM_A_MAX,
};

#define NPUSHM_A_MAX	(__NPUSHM_A_MAX - 1)

#endif /* _UAPI_LINUX_NPUSHM_H */
