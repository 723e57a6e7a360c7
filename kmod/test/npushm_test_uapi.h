/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * npushm_test_uapi.h - the interface of npushm_test.ko, a dma-buf importer
 * for the selftests only (not part of npushm's UAPI).
 *
 * /dev/npushm_test (root only) does with any dma-buf what a device driver
 * does: attach it to its own device (64-bit DMA mask, the default 64 KiB
 * maximum segment size), map it for DMA, read or write it through the CPU,
 * keep it mapped across calls, or map it into user space with
 * dma_buf_mmap() from its own mmap().
 */
#ifndef _UAPI_NPUSHM_TEST_H
#define _UAPI_NPUSHM_TEST_H

#include <linux/ioctl.h>
#include <linux/types.h>

#define NPUSHM_TEST_DEVICE_PATH	"/dev/npushm_test"

/* struct npushm_test_import.op */
#define NPUSHM_TEST_READ_SUM	1	/* out: 64-bit sum of the bytes in range (vmap) */
#define NPUSHM_TEST_WRITE_FILL	2	/* fill the range with @value's low byte: mapped
					 * DMA_BIDIRECTIONAL, written through the sg pages
					 */
#define NPUSHM_TEST_VMAP_WRITABLE 3	/* out: 1 when the kernel mapping
					 * dma_buf_vmap() gives is writable at @offset
					 */

/**
 * struct npushm_test_import - NPUSHM_TEST_IOC_IMPORT: one import, start to end
 * @fd: in: dma-buf file descriptor
 * @op: in: NPUSHM_TEST_*
 * @offset: in: byte offset of the range
 * @length: in: byte length of the range
 * @value: in: WRITE_FILL byte; out: READ_SUM result, VMAP_WRITABLE answer
 * @dma_size: out: size of the dma-buf
 * @sg_nents: out: DMA-mapped scatterlist segments
 * @sg_bytes: out: bytes covered by the DMA-mapped scatterlist
 * @sg_max_seg: out: the longest segment of the scatterlist
 * @dev_max_seg: out: the importing device's maximum segment size
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
	__u64 sg_max_seg;
	__u64 dev_max_seg;
};

/* struct npushm_test_attach.dir: enum dma_data_direction */
#define NPUSHM_TEST_DMA_BIDIRECTIONAL	0
#define NPUSHM_TEST_DMA_TO_DEVICE	1
#define NPUSHM_TEST_DMA_FROM_DEVICE	2

/**
 * struct npushm_test_attach - NPUSHM_TEST_IOC_ATTACH: attach and map @fd
 *	for DMA in direction @dir, and keep it so until NPUSHM_TEST_IOC_DETACH
 *	or close (one per open file)
 * @fd: in: dma-buf file descriptor
 * @dir: in: NPUSHM_TEST_DMA_*
 */
struct npushm_test_attach {
	__s32 fd;
	__u32 dir;
};

#define NPUSHM_TEST_IOC_MAGIC	0xBC
#define NPUSHM_TEST_IOC_IMPORT	_IOWR(NPUSHM_TEST_IOC_MAGIC, 0xe0, struct npushm_test_import)
#define NPUSHM_TEST_IOC_ATTACH	_IOW(NPUSHM_TEST_IOC_MAGIC, 0xe1, struct npushm_test_attach)
#define NPUSHM_TEST_IOC_DETACH	_IO(NPUSHM_TEST_IOC_MAGIC, 0xe2)
/* Select the dma-buf a later mmap() of this file maps (dma_buf_mmap). */
#define NPUSHM_TEST_IOC_SET_MMAP _IOW(NPUSHM_TEST_IOC_MAGIC, 0xe3, __s32)

#endif /* _UAPI_NPUSHM_TEST_H */
