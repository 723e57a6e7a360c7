// SPDX-License-Identifier: GPL-2.0
/*
 * npushm_rdma_test.c - regions are GUP-able: a mapping registers with
 * ibv_reg_mr (rdma-core) and another process completes an RDMA WRITE into
 * it over soft-RoCE, which the owner then reads. An MR is a long-term write
 * pin: sealing fails while one exists, even after the mapping is gone, and
 * none can be registered for writing once sealed. Also probes dma-buf
 * memory registration (ibv_reg_dmabuf_mr), which soft-RoCE lacks on 6.1.
 *
 * Needs an RDMA device named by NPUSHM_RDMA_DEV with an IPv4 GID (the VM
 * runner creates one: rxe over a veth).
 */
#include <sys/mman.h>
#include <infiniband/verbs.h>

#include "npushm_fixture.h"

#define MiB (1024UL * 1024)
#define LEN (2 * MiB + 12345)

struct endpoint {
	uint32_t qpn;
	uint32_t rkey;
	uint64_t addr;
	union ibv_gid gid;
};

struct verbs {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	int gid_index;
	union ibv_gid gid;
};

static int verbs_open(struct verbs *v, const char *name)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_qp_init_attr qia = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};
	struct ibv_qp_attr attr = {
		.qp_state = IBV_QPS_INIT, .port_num = 1,
		.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				   IBV_ACCESS_REMOTE_READ,
	};
	struct ibv_port_attr port;
	int i;

	memset(v, 0, sizeof(*v));
	for (i = 0; list && list[i]; i++)
		if (!strcmp(ibv_get_device_name(list[i]), name))
			v->ctx = ibv_open_device(list[i]);
	ibv_free_device_list(list);
	if (!v->ctx)
		return -1;
	if (ibv_query_port(v->ctx, 1, &port))
		return -2;
	v->gid_index = -1;
	for (i = 0; i < port.gid_tbl_len && v->gid_index < 0; i++) {
		union ibv_gid g;

		if (ibv_query_gid(v->ctx, 1, i, &g))
			continue;
		/* IPv4-mapped: RoCE v2 over the veth's address. */
		if (g.raw[10] == 0xff && g.raw[11] == 0xff) {
			v->gid_index = i;
			v->gid = g;
		}
	}
	if (v->gid_index < 0)
		return -3;
	v->pd = ibv_alloc_pd(v->ctx);
	v->cq = v->pd ? ibv_create_cq(v->ctx, 8, NULL, NULL, 0) : NULL;
	if (!v->cq)
		return -4;
	qia.send_cq = v->cq;
	qia.recv_cq = v->cq;
	v->qp = ibv_create_qp(v->pd, &qia);
	if (!v->qp)
		return -5;
	if (ibv_modify_qp(v->qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			  IBV_QP_ACCESS_FLAGS))
		return -6;
	return 0;
}

static int verbs_connect(struct verbs *v, const struct endpoint *peer)
{
	struct ibv_qp_attr attr = {
		.qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024,
		.dest_qp_num = peer->qpn, .rq_psn = 0, .max_dest_rd_atomic = 1,
		.min_rnr_timer = 12,
		.ah_attr = {
			.is_global = 1, .port_num = 1,
			.grh = { .dgid = peer->gid, .sgid_index = v->gid_index,
				 .hop_limit = 1 },
		},
	};

	if (ibv_modify_qp(v->qp, &attr, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
			  IBV_QP_MIN_RNR_TIMER))
		return -1;
	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IBV_QPS_RTS;
	attr.timeout = 14;
	attr.retry_cnt = 7;
	attr.rnr_retry = 7;
	attr.sq_psn = 0;
	attr.max_rd_atomic = 1;
	return ibv_modify_qp(v->qp, &attr, IBV_QP_STATE | IBV_QP_TIMEOUT |
			     IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
			     IBV_QP_MAX_QP_RD_ATOMIC) ? -2 : 0;
}

static void verbs_close(struct verbs *v)
{
	if (v->qp)
		ibv_destroy_qp(v->qp);
	if (v->cq)
		ibv_destroy_cq(v->cq);
	if (v->pd)
		ibv_dealloc_pd(v->pd);
	if (v->ctx)
		ibv_close_device(v->ctx);
}

/* The writer: its own verbs context, RDMA WRITE of a pattern into the peer. */
static int writer(int sock, const char *devname)
{
	struct endpoint peer, me = { 0 };
	struct ibv_send_wr wr = { 0 }, *bad;
	struct ibv_sge sge;
	struct ibv_wc wc;
	struct ibv_mr *mr;
	struct verbs v;
	char *buf;
	int n, i;

	if (read(sock, &peer, sizeof(peer)) != sizeof(peer))
		return 10;
	if (verbs_open(&v, devname))
		return 11;
	buf = malloc(LEN);
	npu_fill(buf, LEN, 1234);
	mr = ibv_reg_mr(v.pd, buf, LEN, IBV_ACCESS_LOCAL_WRITE);
	if (!mr)
		return 12;
	me.qpn = v.qp->qp_num;
	me.gid = v.gid;
	if (write(sock, &me, sizeof(me)) != sizeof(me))
		return 13;
	if (verbs_connect(&v, &peer))
		return 14;
	sge.addr = (uintptr_t)buf;
	sge.length = LEN;
	sge.lkey = mr->lkey;
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.wr.rdma.remote_addr = peer.addr;
	wr.wr.rdma.rkey = peer.rkey;
	if (ibv_post_send(v.qp, &wr, &bad))
		return 15;
	for (i = 0, n = 0; n == 0 && i < 20000000; i++)
		n = ibv_poll_cq(v.cq, 1, &wc);
	if (n != 1 || wc.status != IBV_WC_SUCCESS)
		return 16;
	if (write(sock, "d", 1) != 1)
		return 17;
	ibv_dereg_mr(mr);
	verbs_close(&v);
	return 0;
}

TEST_F(npushm, rdma_write_lands_in_region)
{
	const char *devname = getenv("NPUSHM_RDMA_DEV");
	int sv[2], fd, status;
	struct endpoint me = { 0 }, peer;
	struct ibv_mr *mr;
	struct verbs v;
	char *p, done;
	pid_t pid;

	if (!devname)
		SKIP(return, "NPUSHM_RDMA_DEV is not set: no soft-RoCE device (run in the VM)");
	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	/* Fork before any verbs call: the writer is a separate process. */
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid)
		_exit(writer(sv[1], devname));

	fd = npu_tmpfile(self->root, LEN, 0600);
	ASSERT_LE(0, fd);
	p = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	ASSERT_EQ(0, verbs_open(&v, devname));
	mr = ibv_reg_mr(v.pd, p, LEN, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			IBV_ACCESS_REMOTE_READ);
	ASSERT_NE(NULL, mr) {
		TH_LOG("ibv_reg_mr on a region mapping: %s", strerror(errno));
	}
	me.qpn = v.qp->qp_num;
	me.rkey = mr->rkey;
	me.addr = (uintptr_t)p;
	me.gid = v.gid;
	ASSERT_EQ(sizeof(me), write(sv[0], &me, sizeof(me)));
	ASSERT_EQ(sizeof(peer), read(sv[0], &peer, sizeof(peer)));
	ASSERT_EQ(0, verbs_connect(&v, &peer));
	ASSERT_EQ(1, read(sv[0], &done, 1));
	EXPECT_TRUE(npu_check(p, LEN, 1234));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, WEXITSTATUS(status));
	ibv_dereg_mr(mr);
	verbs_close(&v);
	/* The data is in the region itself, seen through any mapping. */
	munmap(p, LEN);
	p = mmap(NULL, LEN, PROT_READ, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_TRUE(npu_check(p, LEN, 1234));
	munmap(p, LEN);
	close(fd);
	close(sv[0]);
	close(sv[1]);
}

TEST_F(npushm, rdma_dmabuf_registration_probe)
{
	const char *devname = getenv("NPUSHM_RDMA_DEV");
	struct ibv_mr *mr;
	struct verbs v;
	int fd, buf;

	if (!devname)
		SKIP(return, "NPUSHM_RDMA_DEV is not set: no soft-RoCE device (run in the VM)");
	fd = npu_tmpfile(self->root, 4 * MiB, 0600);
	ASSERT_LE(0, fd);
	buf = npu_export(fd, NPUSHM_EXPORT_RDWR);
	ASSERT_LE(0, buf);
	ASSERT_EQ(0, verbs_open(&v, devname));
	mr = ibv_reg_dmabuf_mr(v.pd, 0, 4 * MiB, 0, buf, IBV_ACCESS_LOCAL_WRITE);
	if (mr) {
		TH_LOG("%s registers dma-bufs", devname);
		EXPECT_EQ(4 * MiB, mr->length);
		ibv_dereg_mr(mr);
	} else {
		/* Soft-RoCE on 6.1 has no dma-buf MRs: a clean "not supported". */
		TH_LOG("%s: ibv_reg_dmabuf_mr: %s; use ibv_reg_mr on a mapping", devname,
		       strerror(errno));
		EXPECT_TRUE(errno == EOPNOTSUPP || errno == EPROTONOSUPPORT);
	}
	verbs_close(&v);
	close(buf);
	close(fd);
}

/*
 * Attack: an RDMA MR registered before the seal kept writing the sealed
 * region. Sealing now fails while the MR exists, mapping or not.
 */
TEST_F(npushm, rdma_mr_blocks_seal)
{
	const char *devname = getenv("NPUSHM_RDMA_DEV");
	struct npushm_region_info info;
	struct ibv_mr *mr, *ro_mr;
	struct verbs v;
	int fd;
	char *p;

	if (!devname)
		SKIP(return, "NPUSHM_RDMA_DEV is not set: no soft-RoCE device (run in the VM)");
	fd = npu_tmpfile(self->root, 4 * MiB, 0600);
	ASSERT_LE(0, fd);
	p = mmap(NULL, 4 * MiB, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	ASSERT_EQ(0, verbs_open(&v, devname));
	mr = ibv_reg_mr(v.pd, p, MiB, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	ASSERT_NE(NULL, mr);
	munmap(p, 4 * MiB);
	ASSERT_EQ(0, npu_info(fd, &info));
	EXPECT_EQ(MiB, info.pinned_bytes);
	EXPECT_EQ(0, info.mappings);
	EXPECT_EQ(-EBUSY, npu_seal(fd));
	ibv_dereg_mr(mr);
	EXPECT_EQ(0, npu_seal(fd));
	/* Sealed: a read-only mapping cannot be registered for writing. */
	p = mmap(NULL, 4 * MiB, PROT_READ, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	ro_mr = ibv_reg_mr(v.pd, p, MiB, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	EXPECT_EQ(NULL, ro_mr);
	if (ro_mr)
		ibv_dereg_mr(ro_mr);
	munmap(p, 4 * MiB);
	verbs_close(&v);
	close(fd);
}

TEST_HARNESS_MAIN
