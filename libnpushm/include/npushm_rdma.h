/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * npushm_rdma.h - registering npushm regions for RDMA (rdma-core verbs).
 *
 * Tutorial
 * --------
 * The caller owns the verbs objects (device context, protection domain, queue
 * pairs); libnpushm turns a region into a memory region (MR) of that
 * protection domain:
 *
 *	#include <infiniband/verbs.h>
 *	#include "npushm_rdma.h"
 *
 *	npushm_mr_t *mr;
 *	npushm_mr_info_t mi;
 *	if (npushm_region_reg_mr(r, pd, 0, 0, NPUSHM_MR_REMOTE_WRITE, 0, &mr) != NPUSHM_OK)
 *		fprintf(stderr, "%s\n", npushm_last_error());
 *	npushm_mr_info(mr, &mi);
 *	// mi.addr: CPU address of the registered bytes and the MR's address in
 *	// work requests (sge.addr locally, remote_addr for the peer); mi.lkey,
 *	// mi.rkey; mi.path says how it was registered, mi.reason why.
 *	...
 *	npushm_mr_dereg(mr);
 *
 * Two ways to register, chosen per device: a dma-buf MR (the region exported
 * with npushm_region_export_dmabuf(), then ibv_reg_dmabuf_mr()) where the
 * device supports it (hardware NICs such as mlx5; kmod backend only), else
 * ibv_reg_mr() on a mapping of the region (the module keeps its pages
 * pinnable; soft-RoCE and the posix backend go this way). Whether a device
 * takes dma-bufs is probed at its first registration and remembered for the
 * process's life; npushm_mr_info() reports the path and the reason.
 *
 * Rights. An MR never grants more than the handle: a writable MR
 * (NPUSHM_MR_LOCAL_WRITE or NPUSHM_MR_REMOTE_WRITE) needs a read-write handle
 * (else NPUSHM_ERR_ACCESS) of an unsealed region (else NPUSHM_ERR_SEALED); a
 * read-only handle or a sealed region yields read-only MRs only (a peer may
 * RDMA READ them and they may be the source of local sends and writes). The
 * kernel enforces the same: the MR is built on a mapping or a dma-buf of the
 * same protection, and a region cannot be sealed while a writable one exists.
 *
 * libibverbs. libnpushm does not link libibverbs: the first registration
 * loads libibverbs.so.1 (the instance the caller's protection domain comes
 * from), so processes and hosts without rdma-core use the rest of libnpushm
 * as before. Without it, registration fails with NPUSHM_ERR_UNSUPPORTED.
 *
 * Ownership and threads. The MR holds its own handle and mapping of the
 * region: the caller may close its region handle at once. The protection
 * domain must outlive the MR. Registration and deregistration are
 * thread-safe; one MR must not be deregistered twice.
 */
#ifndef NPUSHM_RDMA_H
#define NPUSHM_RDMA_H

#include "npushm.h"

#ifdef __cplusplus
extern "C" {
#endif

struct ibv_pd;
struct ibv_mr;

typedef struct npushm_mr npushm_mr_t;

/* Access of an MR. Reading by the local device is always allowed. */
#define NPUSHM_MR_LOCAL_WRITE	(1U << 0)	/* the local device may write it (receives) */
#define NPUSHM_MR_REMOTE_WRITE	(1U << 1)	/* peers may RDMA WRITE it (implies LOCAL_WRITE) */
#define NPUSHM_MR_REMOTE_READ	(1U << 2)	/* peers may RDMA READ it */

/* npushm_region_reg_mr() flags */
#define NPUSHM_REG_NO_DMABUF	(1U << 0)	/* register a mapping, never a dma-buf */
#define NPUSHM_REG_DMABUF_ONLY	(1U << 1)	/* fail rather than fall back to a mapping */

typedef enum npushm_mr_path {
	NPUSHM_MR_PATH_DMABUF = 1,	/* ibv_reg_dmabuf_mr on an export of the region */
	NPUSHM_MR_PATH_MAPPING,		/* ibv_reg_mr on a mapping of the region */
} npushm_mr_path_t;

typedef struct npushm_mr_info {
	npushm_mr_path_t path;
	void *addr;		/* CPU address of the first registered byte, and its address
				 * in work requests (the MR's iova equals it on both paths) */
	uint64_t offset;	/* of the registered bytes in the region */
	uint64_t length;
	uint32_t lkey;
	uint32_t rkey;
	uint32_t access;	/* NPUSHM_MR_* granted */
	struct ibv_mr *ibv_mr;	/* owned by the npushm_mr_t */
	char device[64];	/* the RDMA device's name */
	char reason[200];	/* why this path, e.g. that the device has no dma-buf MRs */
} npushm_mr_info_t;

/*
 * Register bytes [offset, offset + length) of region @r with protection
 * domain @pd (length 0: to the end of the region). @access: NPUSHM_MR_*
 * (0: read-only, for local sends and writes). @flags: NPUSHM_REG_*.
 * INVALID for bad arguments or a range outside the region; ACCESS or SEALED
 * for a writable MR of a read-only handle or a sealed region; UNSUPPORTED
 * without libibverbs or, with NPUSHM_REG_DMABUF_ONLY, without dma-buf MRs on
 * this backend or device; otherwise the device's refusal (message names the
 * device and the errno). @mrp [out]: release with npushm_mr_dereg().
 */
NPUSHM_API npushm_status_t npushm_region_reg_mr(npushm_region_t *r, struct ibv_pd *pd,
						uint64_t offset, uint64_t length, uint32_t access,
						uint32_t flags, npushm_mr_t **mrp);
/* @info [out]: valid as long as @mr. */
NPUSHM_API npushm_status_t npushm_mr_info(const npushm_mr_t *mr, npushm_mr_info_t *info);
/* Deregister and unmap. NULL ok. */
NPUSHM_API npushm_status_t npushm_mr_dereg(npushm_mr_t *mr);
/* "dma-buf", "mapping" or "?". */
NPUSHM_API const char *npushm_mr_path_name(npushm_mr_path_t path);

#ifdef __cplusplus
}
#endif
#endif /* NPUSHM_RDMA_H */
