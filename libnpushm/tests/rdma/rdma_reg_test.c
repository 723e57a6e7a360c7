// SPDX-License-Identifier: MIT
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * rdma_reg_test.c - npushm_region_reg_mr() on a real RDMA device (soft-RoCE
 * in the test VM), for regions of both backends (posix, and kmod when the
 * module is loaded and its instance mounted): the path taken and its reason (dma-buf probed once,
 * then ibv_reg_mr on a mapping), data written by RDMA WRITE landing in the
 * region, and the rights: a read-only handle or a sealed region never yields
 * a writable MR (refused by the call, and an RDMA WRITE to the read-only MR
 * it does give fails at the device), a region cannot be sealed under a
 * writable MR (kmod), bad arguments.
 *
 * The device is NPUSHM_RDMA_DEV (default: the first with an IPv4 RoCE GID);
 * without one every test is skipped. Two queue pairs on that device are
 * connected to each other (loopback), one posting, the other owning the MR.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "kselftest_harness.h"
#include "npushm.h"
#include "npushm_rdma.h"

#define MIB (1024UL * 1024)

struct lb {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp[2];
	int gid_index;
	union ibv_gid gid;
	char *buf;		/* 4 MiB, registered: sources and destinations of the tests' I/O */
	struct ibv_mr *buf_mr;
};

static int lb_qp_connect(struct lb *l, struct ibv_qp *qp, uint32_t dest)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1,
				 .qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
						    IBV_ACCESS_LOCAL_WRITE };

	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			  IBV_QP_ACCESS_FLAGS))
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = dest;
	a.max_dest_rd_atomic = 4;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.dgid = l->gid;
	a.ah_attr.grh.sgid_index = (uint8_t)l->gid_index;
	a.ah_attr.grh.hop_limit = 1;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			  IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		return -2;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 18;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 4;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			     IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC) ? -3 : 0;
}

/* 0, or a negative step number; 1 when there is no device (skip) */
static int lb_open(struct lb *l)
{
	const char *want = getenv("NPUSHM_RDMA_DEV");
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_qp_init_attr qa = { .qp_type = IBV_QPT_RC,
				       .cap = { .max_send_wr = 16, .max_recv_wr = 16,
						.max_send_sge = 1, .max_recv_sge = 1 } };
	struct ibv_port_attr port;

	memset(l, 0, sizeof(*l));
	for (int i = 0; list && list[i] && !l->ctx; i++) {
		if (want && strcmp(ibv_get_device_name(list[i]), want))
			continue;
		l->ctx = ibv_open_device(list[i]);
	}
	if (list)
		ibv_free_device_list(list);
	if (!l->ctx)
		return 1;
	if (ibv_query_port(l->ctx, 1, &port))
		return -1;
	l->gid_index = -1;
	for (int i = 0; i < port.gid_tbl_len && l->gid_index < 0; i++) {
		union ibv_gid g;

		if (!ibv_query_gid(l->ctx, 1, i, &g) && g.raw[10] == 0xff && g.raw[11] == 0xff) {
			l->gid_index = i;
			l->gid = g;
		}
	}
	if (l->gid_index < 0)
		return 1;
	l->pd = ibv_alloc_pd(l->ctx);
	l->cq = l->pd ? ibv_create_cq(l->ctx, 64, NULL, NULL, 0) : NULL;
	if (!l->cq)
		return -2;
	qa.send_cq = qa.recv_cq = l->cq;
	l->qp[0] = ibv_create_qp(l->pd, &qa);
	l->qp[1] = ibv_create_qp(l->pd, &qa);
	if (!l->qp[0] || !l->qp[1])
		return -3;
	if (lb_qp_connect(l, l->qp[0], l->qp[1]->qp_num) ||
	    lb_qp_connect(l, l->qp[1], l->qp[0]->qp_num))
		return -4;
	l->buf = mmap(NULL, 4 * MIB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (l->buf == MAP_FAILED)
		return -5;
	l->buf_mr = ibv_reg_mr(l->pd, l->buf, 4 * MIB, IBV_ACCESS_LOCAL_WRITE);
	return l->buf_mr ? 0 : -6;
}

static void lb_close(struct lb *l)
{
	if (l->buf_mr)
		ibv_dereg_mr(l->buf_mr);
	if (l->buf && l->buf != MAP_FAILED)
		munmap(l->buf, 4 * MIB);
	for (int i = 0; i < 2; i++)
		if (l->qp[i])
			ibv_destroy_qp(l->qp[i]);
	if (l->cq)
		ibv_destroy_cq(l->cq);
	if (l->pd)
		ibv_dealloc_pd(l->pd);
	if (l->ctx)
		ibv_close_device(l->ctx);
}

/*
 * RDMA WRITE (or READ) of @len bytes between l->buf and (@raddr, @rkey)
 * through qp[0]; the completion status (IBV_WC_SUCCESS, IBV_WC_REM_ACCESS_ERR
 * ...). A failed operation leaves both queue pairs in the error state: the
 * fixture reconnects them.
 */
static int lb_io(struct lb *l, enum ibv_wr_opcode op, uint64_t raddr, uint32_t rkey, size_t len)
{
	struct ibv_sge sge = { (uintptr_t)l->buf, (uint32_t)len, l->buf_mr->lkey };
	struct ibv_send_wr wr = { .wr_id = 7, .sg_list = &sge, .num_sge = 1, .opcode = op,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct ibv_wc wc;
	int n = 0;

	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	if (ibv_post_send(l->qp[0], &wr, &bad))
		return -1;
	for (long i = 0; i < 200000000L && n == 0; i++) {
		n = ibv_poll_cq(l->cq, 1, &wc);
		if (n == 0 && i > 1000)
			usleep(100);
	}
	if (n != 1)
		return -2;
	/* drain whatever the failure flushed */
	while (ibv_poll_cq(l->cq, 1, &(struct ibv_wc){ 0 }) > 0)
		;
	return wc.status;
}

static void fill(char *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (char)(i * 31 + seed);
}

static bool same(const char *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != (char)(i * 31 + seed))
			return false;
	return true;
}

FIXTURE(reg) {
	struct lb l;
	npushm_dev_t *dev;
	npushm_region_t *r;	/* read-write, 2 MiB + 4 KiB, not sealed */
};

FIXTURE_VARIANT(reg) {
	npushm_backend_t backend;
};

FIXTURE_VARIANT_ADD(reg, posix) {
	.backend = NPUSHM_BACKEND_POSIX,
};

FIXTURE_VARIANT_ADD(reg, kmod) {
	.backend = NPUSHM_BACKEND_KMOD,
};

FIXTURE_SETUP(reg)
{
	int rc;

	memset(self, 0, sizeof(*self));
	if (npushm_dev_open(variant->backend, &self->dev) != NPUSHM_OK)
		SKIP(exit(255), "%s backend: %s", npushm_backend_name(variant->backend),
		     npushm_last_error());
	rc = lb_open(&self->l);
	if (rc == 1)
		SKIP(exit(255), "no RDMA device with an IPv4 RoCE GID (set NPUSHM_RDMA_DEV; the test VM has soft-RoCE)");
	ASSERT_EQ(0, rc);
	ASSERT_EQ(NPUSHM_OK, npushm_region_alloc(self->dev, 2 * MIB + 4096, 0, &self->r));
}

FIXTURE_TEARDOWN(reg)
{
	npushm_region_close(self->r);
	lb_close(&self->l);
	npushm_dev_close(self->dev);
}

/* The path and its reason; the dma-buf probe happens once per device. */
TEST_F(reg, path_reported_and_probed_once)
{
	npushm_mr_t *a, *b;
	npushm_mr_info_t ia, ib;

	ASSERT_EQ(NPUSHM_OK, npushm_region_reg_mr(self->r, self->l.pd, 0, 0,
						  NPUSHM_MR_REMOTE_WRITE, 0, &a));
	ASSERT_EQ(NPUSHM_OK, npushm_mr_info(a, &ia));
	TH_LOG("%s backend on %s: %s (%s)", npushm_backend_name(variant->backend), ia.device,
	       npushm_mr_path_name(ia.path), ia.reason);
	EXPECT_EQ(2 * MIB + 4096, ia.length);
	EXPECT_EQ(NPUSHM_MR_REMOTE_WRITE | NPUSHM_MR_LOCAL_WRITE, ia.access);
	EXPECT_NE(0, ia.rkey);
	ASSERT_EQ(NPUSHM_OK, npushm_region_reg_mr(self->r, self->l.pd, 4096, MIB,
						  NPUSHM_MR_REMOTE_READ, 0, &b));
	ASSERT_EQ(NPUSHM_OK, npushm_mr_info(b, &ib));
	EXPECT_EQ(MIB, ib.length);
	EXPECT_EQ(4096, ib.offset);
	if (variant->backend == NPUSHM_BACKEND_POSIX) {
		EXPECT_EQ(NPUSHM_MR_PATH_MAPPING, ia.path);
		EXPECT_NE(NULL, strstr(ia.reason, "posix backend cannot export dma-bufs"));
	} else if (ia.path == NPUSHM_MR_PATH_MAPPING) {
		/* soft-RoCE: the first registration probed, the second remembered */
		EXPECT_NE(NULL, strstr(ia.reason, "cannot register dma-bufs"));
		EXPECT_NE(NULL, strstr(ib.reason, "found at its first registration"));
		EXPECT_EQ(NPUSHM_MR_PATH_MAPPING, ib.path);
	} else {
		EXPECT_EQ(NPUSHM_MR_PATH_DMABUF, ib.path);
	}
	EXPECT_EQ(NPUSHM_OK, npushm_mr_dereg(b));
	EXPECT_EQ(NPUSHM_OK, npushm_mr_dereg(a));
	EXPECT_EQ(NPUSHM_OK, npushm_mr_dereg(NULL));
}

/* An RDMA WRITE through the MR lands in the region (another mapping sees it),
 * also after the caller closed its handle; a READ brings it back. */
TEST_F(reg, write_lands_in_region)
{
	npushm_mr_t *m;
	npushm_mr_info_t mi;
	void *view;
	size_t len = MIB + 777;

	ASSERT_EQ(NPUSHM_OK, npushm_region_reg_mr(self->r, self->l.pd, 4096, 0,
						  NPUSHM_MR_REMOTE_WRITE | NPUSHM_MR_REMOTE_READ, 0,
						  &m));
	ASSERT_EQ(NPUSHM_OK, npushm_mr_info(m, &mi));
	ASSERT_EQ(NPUSHM_OK, npushm_region_map(self->r, NPUSHM_PROT_READ, &view));
	npushm_region_close(self->r);	/* the MR keeps its own handle */
	self->r = NULL;
	fill(self->l.buf, len, 5);
	ASSERT_EQ(IBV_WC_SUCCESS, lb_io(&self->l, IBV_WR_RDMA_WRITE, (uintptr_t)mi.addr, mi.rkey,
					len));
	EXPECT_TRUE(same((char *)view + 4096, len, 5));
	EXPECT_TRUE(same(mi.addr, len, 5));
	memset(self->l.buf, 0, len);
	ASSERT_EQ(IBV_WC_SUCCESS, lb_io(&self->l, IBV_WR_RDMA_READ, (uintptr_t)mi.addr, mi.rkey,
					len));
	EXPECT_TRUE(same(self->l.buf, len, 5));
	munmap(view, 2 * MIB + 4096);
	EXPECT_EQ(NPUSHM_OK, npushm_mr_dereg(m));
}

/*
 * The read-only MR a read-only handle or a sealed region may give, if any:
 * remote reads see the data, an RDMA WRITE fails at the device. Linux
 * before 6.2 (the VM's 6.1) cannot pin a read-only shared mapping for an MR
 * at all (ib_umem_get pins with FOLL_WRITE | FOLL_FORCE): then the call must
 * say so (UNSUPPORTED) and the device-side check runs on a read-only MR of a
 * read-write handle (read_only_mr_refuses_remote_write).
 */
static void check_ro_mr(struct __test_metadata *_metadata, struct lb *l, npushm_region_t *r,
			const char *data, unsigned seed)
{
	npushm_mr_t *m = NULL;
	npushm_mr_info_t mi;
	npushm_status_t st;

	st = npushm_region_reg_mr(r, l->pd, 0, 0, NPUSHM_MR_REMOTE_READ, 0, &m);
	if (st == NPUSHM_ERR_UNSUPPORTED) {
		TH_LOG("read-only MR: %s", npushm_last_error());
		EXPECT_NE(NULL, strstr(npushm_last_error(), "pins every MR for writing"));
		EXPECT_EQ(NULL, m);
		return;
	}
	ASSERT_EQ(NPUSHM_OK, st);
	ASSERT_EQ(NPUSHM_OK, npushm_mr_info(m, &mi));
	EXPECT_EQ(NPUSHM_MR_REMOTE_READ, mi.access);
	ASSERT_EQ(IBV_WC_SUCCESS, lb_io(l, IBV_WR_RDMA_READ, (uintptr_t)mi.addr, mi.rkey, 8192));
	EXPECT_TRUE(same(l->buf, 8192, seed));
	memset(l->buf, 0x5a, 4096);
	EXPECT_NE(IBV_WC_SUCCESS, lb_io(l, IBV_WR_RDMA_WRITE, (uintptr_t)mi.addr, mi.rkey, 4096));
	EXPECT_TRUE(same(data, 8192, seed));
	EXPECT_EQ(NPUSHM_OK, npushm_mr_dereg(m));
}

/* A read-only handle never gives a writable MR. */
TEST_F(reg, read_only_handle_never_writable)
{
	npushm_region_t *ro;
	npushm_mr_t *m = NULL;
	char name[64];
	void *w;

	ASSERT_EQ(NPUSHM_OK, npushm_region_map(self->r, NPUSHM_PROT_READ | NPUSHM_PROT_WRITE, &w));
	fill(w, MIB, 9);
	snprintf(name, sizeof(name), "rdma-reg-test-%d", getpid());
	ASSERT_EQ(NPUSHM_OK, npushm_region_publish(self->r, name, 0644, 0));
	ASSERT_EQ(NPUSHM_OK, npushm_region_open(self->dev, name, 0, &ro));
	npushm_name_unlink(self->dev, name);
	EXPECT_FALSE(npushm_region_writable(ro));
	EXPECT_EQ(NPUSHM_ERR_ACCESS, npushm_region_reg_mr(ro, self->l.pd, 0, 0,
							  NPUSHM_MR_REMOTE_WRITE, 0, &m));
	EXPECT_NE(NULL, strstr(npushm_last_error(), "read-only handle"));
	EXPECT_EQ(NULL, m);
	EXPECT_EQ(NPUSHM_ERR_ACCESS, npushm_region_reg_mr(ro, self->l.pd, 0, 0,
							  NPUSHM_MR_LOCAL_WRITE, 0, &m));
	EXPECT_EQ(NPUSHM_ERR_ACCESS, npushm_region_reg_mr(ro, self->l.pd, 0, 0,
							  NPUSHM_MR_REMOTE_WRITE | NPUSHM_MR_REMOTE_READ,
							  NPUSHM_REG_NO_DMABUF, &m));
	check_ro_mr(_metadata, &self->l, ro, w, 9);
	npushm_region_close(ro);
	munmap(w, 2 * MIB + 4096);
}

/* A sealed region never gives a writable MR, even through a read-write handle. */
TEST_F(reg, sealed_region_never_writable)
{
	npushm_mr_t *m = NULL;
	void *w;

	ASSERT_EQ(NPUSHM_OK, npushm_region_map(self->r, NPUSHM_PROT_READ | NPUSHM_PROT_WRITE, &w));
	fill(w, 8192, 3);
	munmap(w, 2 * MIB + 4096);
	ASSERT_EQ(NPUSHM_OK, npushm_region_seal(self->r));
	EXPECT_TRUE(npushm_region_writable(self->r));
	EXPECT_EQ(NPUSHM_ERR_SEALED, npushm_region_reg_mr(self->r, self->l.pd, 0, 0,
							  NPUSHM_MR_REMOTE_WRITE, 0, &m));
	EXPECT_NE(NULL, strstr(npushm_last_error(), "sealed"));
	EXPECT_EQ(NPUSHM_ERR_SEALED, npushm_region_reg_mr(self->r, self->l.pd, 0, 0,
							  NPUSHM_MR_LOCAL_WRITE, 0, &m));
	EXPECT_EQ(NPUSHM_ERR_SEALED, npushm_region_reg_mr(self->r, self->l.pd, 0, 0,
							  NPUSHM_MR_REMOTE_WRITE, NPUSHM_REG_NO_DMABUF,
							  &m));
	EXPECT_EQ(NULL, m);
	ASSERT_EQ(NPUSHM_OK, npushm_region_map(self->r, NPUSHM_PROT_READ, &w));
	check_ro_mr(_metadata, &self->l, self->r, w, 3);
	munmap(w, 2 * MIB + 4096);
}

/* A read-only MR (of a read-write handle) refuses RDMA WRITEs at the device. */
TEST_F(reg, read_only_mr_refuses_remote_write)
{
	npushm_mr_t *m;
	npushm_mr_info_t mi;
	void *w;

	ASSERT_EQ(NPUSHM_OK, npushm_region_map(self->r, NPUSHM_PROT_READ | NPUSHM_PROT_WRITE, &w));
	fill(w, 8192, 4);
	ASSERT_EQ(NPUSHM_OK, npushm_region_reg_mr(self->r, self->l.pd, 0, 0, NPUSHM_MR_REMOTE_READ,
						  0, &m));
	ASSERT_EQ(NPUSHM_OK, npushm_mr_info(m, &mi));
	TH_LOG("read-only MR: %s (%s)", npushm_mr_path_name(mi.path), mi.reason);
	EXPECT_EQ(NPUSHM_MR_REMOTE_READ, mi.access);
	ASSERT_EQ(IBV_WC_SUCCESS, lb_io(&self->l, IBV_WR_RDMA_READ, (uintptr_t)mi.addr, mi.rkey, 8192));
	EXPECT_TRUE(same(self->l.buf, 8192, 4));
	memset(self->l.buf, 0x5a, 4096);
	EXPECT_EQ(IBV_WC_REM_ACCESS_ERR,
		  lb_io(&self->l, IBV_WR_RDMA_WRITE, (uintptr_t)mi.addr, mi.rkey, 4096));
	EXPECT_TRUE(same(w, 8192, 4));
	EXPECT_EQ(NPUSHM_OK, npushm_mr_dereg(m));
	munmap(w, 2 * MIB + 4096);
}

/* kmod: a region cannot be sealed while a writable MR of it exists. */
TEST_F(reg, no_seal_under_writable_mr)
{
	npushm_mr_t *m;

	if (variant->backend != NPUSHM_BACKEND_KMOD)
		SKIP(return, "the posix backend's seal is a mode change that existing writable mappings survive (docs/libnpushm.md)");
	ASSERT_EQ(NPUSHM_OK, npushm_region_reg_mr(self->r, self->l.pd, 0, 0, NPUSHM_MR_REMOTE_WRITE,
						  0, &m));
	EXPECT_EQ(NPUSHM_ERR_BUSY, npushm_region_seal(self->r));
	EXPECT_EQ(NPUSHM_OK, npushm_mr_dereg(m));
	EXPECT_EQ(NPUSHM_OK, npushm_region_seal(self->r));
}

/* Forcing a path: dma-buf only fails cleanly where there are no dma-buf MRs. */
TEST_F(reg, forced_paths)
{
	npushm_mr_t *m = NULL;
	npushm_mr_info_t mi;
	npushm_status_t st;

	ASSERT_EQ(NPUSHM_OK, npushm_region_reg_mr(self->r, self->l.pd, 0, 0, NPUSHM_MR_LOCAL_WRITE,
						  NPUSHM_REG_NO_DMABUF, &m));
	ASSERT_EQ(NPUSHM_OK, npushm_mr_info(m, &mi));
	EXPECT_EQ(NPUSHM_MR_PATH_MAPPING, mi.path);
	EXPECT_EQ(NPUSHM_OK, npushm_mr_dereg(m));
	m = NULL;
	st = npushm_region_reg_mr(self->r, self->l.pd, 0, 0, NPUSHM_MR_LOCAL_WRITE,
				  NPUSHM_REG_DMABUF_ONLY, &m);
	if (st == NPUSHM_OK) {
		ASSERT_EQ(NPUSHM_OK, npushm_mr_info(m, &mi));
		EXPECT_EQ(NPUSHM_MR_PATH_DMABUF, mi.path);
		EXPECT_EQ(NPUSHM_OK, npushm_mr_dereg(m));
	} else {
		TH_LOG("dma-buf only: %s", npushm_last_error());
		EXPECT_EQ(NPUSHM_ERR_UNSUPPORTED, st);
		EXPECT_EQ(NULL, m);
	}
}

TEST_F(reg, bad_arguments)
{
	npushm_mr_t *m = (npushm_mr_t *)1;
	npushm_mr_info_t mi;

	EXPECT_EQ(NPUSHM_ERR_INVALID, npushm_region_reg_mr(NULL, self->l.pd, 0, 0, 0, 0, &m));
	EXPECT_EQ(NULL, m);
	EXPECT_EQ(NPUSHM_ERR_INVALID, npushm_region_reg_mr(self->r, NULL, 0, 0, 0, 0, &m));
	EXPECT_EQ(NPUSHM_ERR_INVALID, npushm_region_reg_mr(self->r, self->l.pd, 0, 0, 0, 0, NULL));
	EXPECT_EQ(NPUSHM_ERR_INVALID, npushm_region_reg_mr(self->r, self->l.pd, 0, 0, 1U << 7, 0, &m));
	EXPECT_EQ(NPUSHM_ERR_INVALID, npushm_region_reg_mr(self->r, self->l.pd, 0, 0, 0, 1U << 9, &m));
	EXPECT_EQ(NPUSHM_ERR_INVALID,
		  npushm_region_reg_mr(self->r, self->l.pd, 0, 0, 0,
				       NPUSHM_REG_NO_DMABUF | NPUSHM_REG_DMABUF_ONLY, &m));
	EXPECT_EQ(NPUSHM_ERR_INVALID, npushm_region_reg_mr(self->r, self->l.pd, 2 * MIB + 4096, 0, 0,
							   0, &m));
	EXPECT_EQ(NPUSHM_ERR_INVALID, npushm_region_reg_mr(self->r, self->l.pd, 4096, 2 * MIB + 1, 0,
							   0, &m));
	EXPECT_EQ(NPUSHM_ERR_INVALID, npushm_region_reg_mr(self->r, self->l.pd, UINT64_MAX, 2, 0,
							   0, &m));
	EXPECT_NE(NULL, strstr(npushm_last_error(), "cannot register bytes"));
	EXPECT_EQ(NPUSHM_ERR_INVALID, npushm_mr_info(NULL, &mi));
	EXPECT_STREQ("?", npushm_mr_path_name((npushm_mr_path_t)99));
}

TEST_HARNESS_MAIN
