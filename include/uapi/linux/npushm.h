/* SPDX-License-Identifier: GPL-2.0-only WITH Linux-syscall-note */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * npushm: device-memory regions shared across processes.
 *
 * /dev/npushm hands out regions of a capacity-limited device-memory pool.
 * A region handle is a file descriptor (close-on-exec): mmap(MAP_SHARED) it,
 * pass it over SCM_RIGHTS, publish it under a name in the caller's IPC
 * namespace, seal it read-only, export it as a dma-buf. Everything is also
 * visible through the generic netlink family NPUSHM_GENL_NAME.
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

#define NPUSHM_ABI_VERSION	1
#define NPUSHM_DEVICE_PATH	"/dev/npushm"

/* Names: 1..NPUSHM_NAME_MAX bytes of printable ASCII other than space. */
#define NPUSHM_NAME_MAX		255

/* struct npushm_query.features */
#define NPUSHM_FEAT_NAMES	_BITULL(0)	/* publish / open / unlink by name */
#define NPUSHM_FEAT_SEAL	_BITULL(1)	/* NPUSHM_IOC_SEAL */
#define NPUSHM_FEAT_DMABUF	_BITULL(2)	/* NPUSHM_IOC_EXPORT_DMABUF */
#define NPUSHM_FEAT_GUP		_BITULL(3)	/* mappings are GUP-able (ibv_reg_mr) */
#define NPUSHM_FEAT_NETLINK	_BITULL(4)	/* generic netlink family */
#define NPUSHM_FEAT_TEST_IMPORTER _BITULL(5)	/* debugfs test importer loaded */

/**
 * struct npushm_query - NPUSHM_IOC_QUERY on /dev/npushm (output only)
 * @abi_version: NPUSHM_ABI_VERSION of the running module
 * @max_name_len: NPUSHM_NAME_MAX
 * @features: NPUSHM_FEAT_* bits
 * @capacity: pool capacity in bytes (module parameter "capacity")
 * @in_use: bytes currently allocated from the pool
 * @chunk_size: size of the physically contiguous chunks regions are built of
 * @page_size: granularity sizes are rounded up to
 * @uid_quota: bytes one uid may hold (module parameter "uid_quota"), 0: none
 * @uid_in_use: bytes currently held by the caller's uid
 * @regions: live regions in the pool
 */
struct npushm_query {
	__u32 abi_version;
	__u32 max_name_len;
	__u64 features;
	__u64 capacity;
	__u64 in_use;
	__u64 chunk_size;
	__u64 page_size;
	__u64 uid_quota;
	__u64 uid_in_use;
	__u64 regions;
};

#define NPUSHM_QUERY_SIZE_VER0	72

/**
 * struct npushm_alloc - NPUSHM_IOC_ALLOC on /dev/npushm
 * @size: in: bytes wanted (> 0); out: the size rounded up to @page_size
 * @flags: in: must be 0
 * @fd: out: the region handle, read-write, close-on-exec
 * @id: out: the region's id (as in info and netlink)
 *
 * The memory is zeroed. ENOMEM when the pool lacks room, EDQUOT when the
 * caller's uid would exceed its quota, EINVAL for a size of 0 or larger than
 * the pool's capacity.
 */
struct npushm_alloc {
	__u64 size;
	__u32 flags;
	__s32 fd;
	__u64 id;
};

#define NPUSHM_ALLOC_SIZE_VER0	24

/* struct npushm_open.flags */
#define NPUSHM_OPEN_RDWR	_BITUL(0)	/* else read-only */

/**
 * struct npushm_open - NPUSHM_IOC_OPEN on /dev/npushm: open a region by name
 * @name: in: user pointer to the NUL-terminated name
 * @flags: in: NPUSHM_OPEN_*
 * @fd: out: the handle, close-on-exec, read-only unless NPUSHM_OPEN_RDWR
 * @id: out: the region's id
 * @size: out: the region's size in bytes
 *
 * Permission is checked against the name's owner, group and mode like a
 * file's; CAP_IPC_OWNER overrides. ENOENT, EACCES, ENAMETOOLONG, EINVAL.
 */
struct npushm_open {
	__u64 name;
	__u32 flags;
	__s32 fd;
	__u64 id;
	__u64 size;
};

#define NPUSHM_OPEN_SIZE_VER0	32

/**
 * struct npushm_unlink - NPUSHM_IOC_UNLINK on /dev/npushm: remove a name
 * @name: in: user pointer to the NUL-terminated name
 * @flags: in: must be 0
 * @reserved: must be 0
 *
 * Allowed to the name's owner and to CAP_IPC_OWNER (else EACCES). The region
 * lives on while anything else refers to it.
 */
struct npushm_unlink {
	__u64 name;
	__u32 flags;
	__u32 reserved;
};

#define NPUSHM_UNLINK_SIZE_VER0	16

/* struct npushm_publish.flags */
#define NPUSHM_PUBLISH_PERSIST	_BITUL(0)	/* the name keeps the region alive */

/**
 * struct npushm_publish - NPUSHM_IOC_PUBLISH on a region handle
 * @name: in: user pointer to the NUL-terminated name
 * @mode: in: permission bits, a subset of 0666
 * @flags: in: NPUSHM_PUBLISH_*
 *
 * Publishes the region in the caller's IPC namespace, owned by the caller's
 * fsuid/fsgid. Needs a read-write handle unless the region is sealed. A region
 * may carry several names. EEXIST if the name is taken.
 */
struct npushm_publish {
	__u64 name;
	__u32 mode;
	__u32 flags;
};

#define NPUSHM_PUBLISH_SIZE_VER0	16

/* struct npushm_seal.seals */
#define NPUSHM_SEAL_WRITE	_BITUL(0)	/* no writable mapping, ever again */

/**
 * struct npushm_seal - NPUSHM_IOC_SEAL on a read-write region handle
 * @seals: in: NPUSHM_SEAL_* to add (non-zero)
 * @reserved: must be 0
 *
 * Like memfd's F_SEAL_WRITE: EBUSY while a writable mapping or a writable
 * dma-buf export exists; afterwards mmap with PROT_WRITE and mprotect to
 * writable fail with EPERM / EACCES. Sealing twice is not an error.
 */
struct npushm_seal {
	__u32 seals;
	__u32 reserved;
};

#define NPUSHM_SEAL_SIZE_VER0	8

/* struct npushm_export.flags */
#define NPUSHM_EXPORT_RDWR	_BITUL(0)	/* else a read-only dma-buf */

/**
 * struct npushm_export - NPUSHM_IOC_EXPORT_DMABUF on a region handle
 * @flags: in: NPUSHM_EXPORT_*; RDWR needs a read-write handle, unsealed region
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
#define NPUSHM_INFO_PERSISTENT	_BITUL(1)	/* at least one persistent name */
#define NPUSHM_INFO_NAMED	_BITUL(2)
#define NPUSHM_INFO_WRITABLE	_BITUL(3)	/* this handle is read-write */

/**
 * struct npushm_region_info - NPUSHM_IOC_INFO on a region handle (output)
 * @id: region id
 * @size: bytes
 * @flags: NPUSHM_INFO_*
 * @owner_uid: uid that allocated the region (as seen from the caller)
 * @owner_gid: gid that allocated the region
 * @mode: mode of the first name, 0 when unnamed
 * @handles: open handles (files) of the region
 * @mappings: mappings (VMAs) of the region, through handles or dma-bufs
 * @dmabufs: live dma-buf exports
 * @names: names referring to the region
 * @mapped_bytes: bytes covered by all mappings
 * @name: the first name, NUL-terminated; empty when unnamed
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
	char name[NPUSHM_NAME_MAX + 1];
};

#define NPUSHM_INFO_SIZE_VER0	312

#define NPUSHM_IOC_MAGIC	0xB7

/* On /dev/npushm */
#define NPUSHM_IOC_QUERY	_IOR(NPUSHM_IOC_MAGIC, 0x00, struct npushm_query)
#define NPUSHM_IOC_ALLOC	_IOWR(NPUSHM_IOC_MAGIC, 0x01, struct npushm_alloc)
#define NPUSHM_IOC_OPEN		_IOWR(NPUSHM_IOC_MAGIC, 0x02, struct npushm_open)
#define NPUSHM_IOC_UNLINK	_IOW(NPUSHM_IOC_MAGIC, 0x03, struct npushm_unlink)
/* On a region handle */
#define NPUSHM_IOC_PUBLISH	_IOW(NPUSHM_IOC_MAGIC, 0x10, struct npushm_publish)
#define NPUSHM_IOC_SEAL		_IOW(NPUSHM_IOC_MAGIC, 0x11, struct npushm_seal)
#define NPUSHM_IOC_EXPORT_DMABUF _IOWR(NPUSHM_IOC_MAGIC, 0x12, struct npushm_export)
#define NPUSHM_IOC_INFO		_IOR(NPUSHM_IOC_MAGIC, 0x13, struct npushm_region_info)

/*
 * Generic netlink family NPUSHM_GENL_NAME.
 *
 * NPUSHM_CMD_REGION_GET: dump (NLM_F_DUMP) the regions visible to the caller
 *   (those of its IPC namespace that are named or owned by its uid; all of
 *   them with CAP_SYS_ADMIN), one message per region; or, with
 *   NPUSHM_A_REGION_ID, one region.
 * NPUSHM_CMD_STATS_GET: pool statistics; NPUSHM_A_UID_USAGE nests for the
 *   caller's uid (every uid with CAP_SYS_ADMIN).
 * NPUSHM_CMD_EVENT: sent to the multicast group NPUSHM_GENL_MCGRP_EVENTS in
 *   the network namespace of the region's creator.
 */
#define NPUSHM_GENL_NAME	"npushm"
#define NPUSHM_GENL_VERSION	1
#define NPUSHM_GENL_MCGRP_EVENTS "events"

enum npushm_genl_cmd {
	NPUSHM_CMD_UNSPEC,
	NPUSHM_CMD_REGION_GET,
	NPUSHM_CMD_STATS_GET,
	NPUSHM_CMD_EVENT,
	__NPUSHM_CMD_MAX,
};

#define NPUSHM_CMD_MAX	(__NPUSHM_CMD_MAX - 1)

enum npushm_genl_event {
	NPUSHM_EVENT_UNSPEC,
	NPUSHM_EVENT_CREATED,
	NPUSHM_EVENT_PUBLISHED,
	NPUSHM_EVENT_SEALED,
	NPUSHM_EVENT_UNLINKED,
	NPUSHM_EVENT_DESTROYED,
	NPUSHM_EVENT_ALLOC_FAILED,
};

enum npushm_genl_attr {
	NPUSHM_A_UNSPEC,
	NPUSHM_A_PAD,
	NPUSHM_A_REGION_ID,		/* u64 */
	NPUSHM_A_REGION_SIZE,		/* u64, bytes */
	NPUSHM_A_REGION_OWNER_UID,	/* u32 */
	NPUSHM_A_REGION_OWNER_GID,	/* u32 */
	NPUSHM_A_REGION_SEALED,		/* flag */
	NPUSHM_A_REGION_PERSISTENT,	/* flag */
	NPUSHM_A_REGION_HANDLES,	/* u32 */
	NPUSHM_A_REGION_MAPPINGS,	/* u32 */
	NPUSHM_A_REGION_DMABUFS,	/* u32 */
	NPUSHM_A_REGION_MAPPED_BYTES,	/* u64 */
	NPUSHM_A_REGION_MAPPERS,	/* u32, distinct processes mapping it */
	NPUSHM_A_REGION_NAME,		/* nest of NPUSHM_A_NAME_*, repeated */
	NPUSHM_A_NAME_STRING,		/* string */
	NPUSHM_A_NAME_MODE,		/* u32 */
	NPUSHM_A_NAME_UID,		/* u32 */
	NPUSHM_A_NAME_GID,		/* u32 */
	NPUSHM_A_NAME_PERSISTENT,	/* flag */
	NPUSHM_A_STATS_CAPACITY,	/* u64 */
	NPUSHM_A_STATS_IN_USE,		/* u64 */
	NPUSHM_A_STATS_PEAK,		/* u64 */
	NPUSHM_A_STATS_REGIONS,		/* u64 */
	NPUSHM_A_STATS_FAILED_ALLOCS,	/* u64 */
	NPUSHM_A_STATS_UID_QUOTA,	/* u64 */
	NPUSHM_A_UID_USAGE,		/* nest of NPUSHM_A_UID_*, repeated */
	NPUSHM_A_UID,			/* u32 */
	NPUSHM_A_UID_BYTES,		/* u64 */
	NPUSHM_A_UID_REGIONS,		/* u32 */
	NPUSHM_A_EVENT_TYPE,		/* u32, enum npushm_genl_event */
	NPUSHM_A_EVENT_PID,		/* u32, acting process (tgid), 0 if none */
	NPUSHM_A_EVENT_ERRNO,		/* u32, positive errno (ALLOC_FAILED) */
	NPUSHM_A_EVENT_NAME,		/* string (PUBLISHED, UNLINKED) */
	__NPUSHM_A_MAX,
};

#define NPUSHM_A_MAX	(__NPUSHM_A_MAX - 1)

/*
 * Test importer: with the module parameter test_importer=1 the module
 * creates <debugfs>/npushm/importer (root only). NPUSHM_TEST_IOC_IMPORT on it
 * imports a dma-buf the way a device driver does (attach, map the scatter
 * list for DMA, vmap for CPU access) and reads or writes it.
 */
#define NPUSHM_TEST_READ_SUM	1	/* out: 64-bit sum of the bytes in range */
#define NPUSHM_TEST_WRITE_FILL	2	/* fill the range with @value's low byte */

/**
 * struct npushm_test_import - NPUSHM_TEST_IOC_IMPORT on the importer file
 * @fd: in: dma-buf file descriptor
 * @op: in: NPUSHM_TEST_*
 * @offset: in: byte offset of the range
 * @length: in: byte length of the range
 * @value: in: WRITE_FILL byte; out: READ_SUM result
 * @dma_size: out: size of the dma-buf
 * @sg_nents: out: DMA-mapped scatterlist segments
 * @sg_bytes: out: bytes covered by the DMA-mapped scatterlist
 */
struct npushm_test_import {
	__s32 fd;
	__u32 op;
	__u64 offset;
	__u64 length;
	__u64 value;
	__u64 dma_size;
	__u64 sg_nents;
	__u64 sg_bytes;
};

#define NPUSHM_TEST_IOC_IMPORT	_IOWR(NPUSHM_IOC_MAGIC, 0x40, struct npushm_test_import)

#endif /* _UAPI_LINUX_NPUSHM_H */
