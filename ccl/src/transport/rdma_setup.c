/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * rdma_setup.c - the RDMA device of a communicator and its queue pairs.
 *
 * rdma_probe() runs before the address exchange: unless NPCCL_TRANSPORT=tcp
 * it loads libibverbs (rdma_verbs.c), opens the device NPCCL_IB_DEV names
 * (else the first with an active port and a usable address: a RoCE v2
 * IPv4 GID on Ethernet, a LID on InfiniBand) and advertises PEER_F_RDMA.
 * After the exchange every rank knows every rank's flags, so the choice is
 * the same on both ends of a pair: RDMA when both have a device, TCP
 * otherwise; NPCCL_TRANSPORT=rdma anywhere makes a pair without RDMA an
 * error on every rank (rdma_check_table). rdma_connect() then creates one
 * reliable connected queue pair per RDMA peer, one completion queue (with
 * a completion channel to sleep on) and one registered area holding every
 * peer's FIFO slots and control buffers, exchanges the connection data over
 * the pair's bootstrap data socket, moves the queue pairs to RTS, waits
 * for the peer to be ready too, and closes that socket (the control socket
 * stays: liveness, diagnosis, verdicts).
 */
#include "transport/rdma.h"
#include "transport/transport.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <unistd.h>

#define CONN_MAGIC 0x4e50524du	/* "NPRM" */
#define CONN_VERSION 1

const char *rdma_device(struct npccl_comm *c)
{
	return c->rdma && c->rdma->npeers ? c->rdma->dev : NULL;
}

static bool gid_is_ipv4(const union ibv_gid *g)
{
	static const uint8_t pre[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
	return !memcmp(g->raw, pre, 12);
}

static bool gid_is_zero(const union ibv_gid *g)
{
	for (int i = 0; i < 16; i++)
		if (g->raw[i])
			return false;
	return true;
}

/* The GID to use on an Ethernet port: NPCCL_IB_GID_INDEX, else a RoCE v2
 * IPv4-mapped one, else any RoCE v2 one, else any non-zero one. */
static int pick_gid(struct rdma_ctx *x, int tbl_len, union ibv_gid *out)
{
	const struct verbs_api *v = x->v;
	int want = npccl_config()->ib_gid_index, best = -1, score = 0;
	for (int i = 0; i < tbl_len; i++) {
		union ibv_gid g;
		if (want >= 0 && i != want)
			continue;
		if (v->query_gid(x->ctx, x->port, i, &g) || gid_is_zero(&g))
			continue;
		bool v2 = true;
		if (v->query_gid_ex) {
			struct ibv_gid_entry e;
			if (v->query_gid_ex(x->ctx, x->port, (uint32_t)i, &e, 0, sizeof(e)) == 0)
				v2 = e.gid_type == IBV_GID_TYPE_ROCE_V2;
		}
		int sc = 1 + (v2 ? 2 : 0) + (gid_is_ipv4(&g) ? 4 : 0);
		if (want >= 0)
			sc = 100;
		if (sc > score) {
			score = sc;
			best = i;
			*out = g;
		}
	}
	return best;
}

/* Opens `dev` and uses `port` (0: the first active one); 0 or -1 with why. */
static int open_device(struct rdma_ctx *x, struct ibv_device *dev, int port, char *why,
		       size_t len)
{
	const struct verbs_api *v = x->v;
	const char *name = v->get_device_name(dev);
	x->ctx = v->open_device(dev);
	if (!x->ctx) {
		snprintf(why, len, "cannot open %s: %s", name, strerror(errno));
		return -1;
	}
	struct ibv_device_attr da;
	if (v->query_device(x->ctx, &da)) {
		snprintf(why, len, "cannot query %s: %s", name, strerror(errno));
		goto fail;
	}
	for (int p = 1; p <= da.phys_port_cnt; p++) {
		struct ibv_port_attr pa;
		if (port && p != port)
			continue;
		if (rdma_query_port(v, x->ctx, (uint8_t)p, &pa) || pa.state != IBV_PORT_ACTIVE) {
			snprintf(why, len, "%s port %d is not active", name, p);
			continue;
		}
		x->port = (uint8_t)p;
		x->mtu = pa.active_mtu;
		x->max_msg = pa.max_msg_sz ? pa.max_msg_sz : 1u << 30;
		x->lid = pa.lid;
		x->is_roce = pa.link_layer == IBV_LINK_LAYER_ETHERNET;
		if (x->is_roce) {
			x->gid_index = pick_gid(x, pa.gid_tbl_len, &x->gid);
			if (x->gid_index < 0) {
				snprintf(why, len, "%s port %d has no usable GID%s (is an IP address "
					 "configured on its network device?)", name, p,
					 npccl_config()->ib_gid_index >= 0 ? " at NPCCL_IB_GID_INDEX" : "");
				continue;
			}
		} else {
			x->gid_index = -1;
			if (!x->lid) {
				snprintf(why, len, "%s port %d has no LID (no subnet manager?)", name, p);
				continue;
			}
		}
		snprintf(x->dev, sizeof(x->dev), "%s", name);
		return 0;
	}
	if (port > da.phys_port_cnt)
		snprintf(why, len, "%s has no port %d (it has %d)", name, port, da.phys_port_cnt);
fail:
	v->close_device(x->ctx);
	x->ctx = NULL;
	return -1;
}

static int find_device(struct rdma_ctx *x, char *why, size_t len)
{
	const struct verbs_api *v = x->v;
	const char *want = npccl_config()->ib_dev;
	char name[64] = "";
	int port = 0;
	if (want[0]) {
		snprintf(name, sizeof(name), "%s", want);
		char *colon = strchr(name, ':');
		if (colon) {
			*colon = 0;
			port = atoi(colon + 1);
		}
	}
	int n = 0;
	struct ibv_device **list = v->get_device_list(&n);
	if (!list || n == 0) {
		snprintf(why, len, "no RDMA device on this host");
		if (list)
			v->free_device_list(list);
		return -1;
	}
	int rc = -1;
	snprintf(why, len, "NPCCL_IB_DEV=%s: no such RDMA device", want);
	for (int i = 0; i < n && rc; i++) {
		if (name[0] && strcmp(v->get_device_name(list[i]), name))
			continue;
		rc = open_device(x, list[i], port, why, len);
	}
	v->free_device_list(list);
	return rc;
}

npccl_status_t rdma_probe(struct npccl_comm *c, uint16_t *flags, char *err, size_t errlen)
{
	const struct npccl_config *cfg = npccl_config();
	char why[256] = "";
	*flags = 0;
	if (cfg->transport == TRANSPORT_INVALID) {
		snprintf(err, errlen, "rank %d: NPCCL_TRANSPORT=%.31s is not a transport: use auto "
			 "(RDMA between hosts where both have a device, else TCP), tcp or rdma", c->rank,
			 cfg->transport_str);
		return NPCCL_ERR_INVALID_ARG;
	}
	if (cfg->transport == TRANSPORT_TCP)
		return NPCCL_OK;
	struct rdma_ctx *x = calloc(1, sizeof(*x));
	if (!x)
		return NPCCL_ERR_NOMEM;
	x->required = cfg->transport == TRANSPORT_RDMA;
	x->v = verbs_api_get(why, sizeof(why));
	if (x->v && find_device(x, why, sizeof(why)) == 0) {
		x->pd = x->v->alloc_pd(x->ctx);
		if (x->pd) {
			c->rdma = x;
			*flags = PEER_F_RDMA | (x->required ? PEER_F_RDMA_REQUIRED : 0);
			npccl_log(NPCCL_LOG_DEBUG, "rank %d: RDMA device %s port %u (%s, gid index %d)",
				  c->rank, x->dev, x->port, x->is_roce ? "RoCE" : "InfiniBand",
				  x->gid_index);
			return NPCCL_OK;
		}
		snprintf(why, sizeof(why), "cannot allocate a protection domain on %s: %s", x->dev,
			 strerror(errno));
		x->v->close_device(x->ctx);
	}
	bool required = x->required;
	free(x);
	snprintf(c->rdma_why, sizeof(c->rdma_why), "%s", why);
	if (required) {
		/* every rank learns it from the table and fails alike (rdma_check_table) */
		*flags = PEER_F_RDMA_REQUIRED;
		npccl_log(NPCCL_LOG_ERROR, "rank %d: NPCCL_TRANSPORT=rdma but %s", c->rank, why);
		return NPCCL_OK;
	}
	npccl_log(NPCCL_LOG_INFO, "rank %d: no RDMA (%s): TCP between hosts", c->rank, why);
	return NPCCL_OK;
}

npccl_status_t rdma_check_table(struct npccl_comm *c, char *err, size_t errlen)
{
	for (int i = 0; i < c->nranks; i++) {
		const struct peer_info *a = &c->peers[i].info;
		if (!(a->flags & PEER_F_RDMA_REQUIRED))
			continue;
		for (int j = 0; j < c->nranks; j++) {
			const struct peer_info *b = &c->peers[j].info;
			if (c->host_of[i] == c->host_of[j] || (b->flags & PEER_F_RDMA))
				continue;
			int len = snprintf(err, errlen, "rank %d: NPCCL_TRANSPORT=rdma on rank %d (%s), "
					   "but rank %d (pid %u on %s) has no usable RDMA device or "
					   "runs with NPCCL_TRANSPORT=tcp", c->rank, i, a->hostname, j,
					   b->pid, b->hostname);
			if (j == c->rank && c->rdma_why[0] && len > 0 && (size_t)len < errlen)
				snprintf(err + len, errlen - (size_t)len, " (here: %s)", c->rdma_why);
			else if (len > 0 && (size_t)len < errlen)
				snprintf(err + len, errlen - (size_t)len, "; NPCCL_LOG=info on that rank "
					 "says why; or use NPCCL_TRANSPORT=auto");
			return NPCCL_ERR_UNSUPPORTED;
		}
	}
	return NPCCL_OK;
}

static bool uses_rdma(struct npccl_comm *c, int j)
{
	return j != c->rank && !c->peers[j].local && (c->peers[c->rank].info.flags & PEER_F_RDMA) &&
	       (c->peers[j].info.flags & PEER_F_RDMA);
}

/* the registered area: per peer tx slots, rx slots, control receive and send buffers */
static size_t peer_area(const struct rdma_ctx *x)
{
	return 2 * (size_t)x->nslots * x->slot_bytes + (RDMA_RQ_DEPTH + RDMA_CTL_TX) * RDMA_CTL_BYTES;
}

static int create_qp(struct npccl_comm *c, struct rdma_peer *rp, char *why, size_t len)
{
	struct rdma_ctx *x = c->rdma;
	struct ibv_qp_init_attr qa = { .send_cq = x->cq, .recv_cq = x->cq, .qp_type = IBV_QPT_RC,
				       .cap = { .max_send_wr = RDMA_SQ_DEPTH,
						.max_recv_wr = RDMA_RQ_DEPTH, .max_send_sge = 2,
						.max_recv_sge = 1 } };
	rp->qp = x->v->create_qp(x->pd, &qa);
	if (!rp->qp) {
		snprintf(why, len, "ibv_create_qp on %s: %s", x->dev, strerror(errno));
		return -1;
	}
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = x->port,
				 .qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE };
	if (x->v->modify_qp(rp->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			    IBV_QP_ACCESS_FLAGS)) {
		snprintf(why, len, "ibv_modify_qp to INIT on %s: %s", x->dev, strerror(errno));
		return -1;
	}
	for (int k = 0; k < RDMA_RQ_DEPTH; k++)
		if (rdma_post_recv(x, rp, k)) {
			snprintf(why, len, "ibv_post_recv on %s: %s", x->dev, strerror(errno));
			return -1;
		}
	return 0;
}

static int qp_to_rts(struct npccl_comm *c, struct rdma_peer *rp, const struct rdma_conn *me,
		     const struct rdma_conn *them, char *why, size_t len)
{
	struct rdma_ctx *x = c->rdma;
	const struct npccl_config *cfg = npccl_config();
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RTR,
				 .path_mtu = (enum ibv_mtu)MIN(me->mtu, them->mtu),
				 .dest_qp_num = them->qpn, .rq_psn = them->psn,
				 .max_dest_rd_atomic = 1, .min_rnr_timer = 12 };
	a.ah_attr.port_num = x->port;
	if (x->is_roce) {
		a.ah_attr.is_global = 1;
		memcpy(a.ah_attr.grh.dgid.raw, them->gid, 16);
		a.ah_attr.grh.sgid_index = (uint8_t)x->gid_index;
		a.ah_attr.grh.hop_limit = 64;
	} else {
		a.ah_attr.dlid = them->lid;
	}
	if (x->v->modify_qp(rp->qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			    IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
			    IBV_QP_MIN_RNR_TIMER)) {
		snprintf(why, len, "ibv_modify_qp to RTR on %s (peer device %.32s): %s", x->dev,
			 them->dev, strerror(errno));
		return -1;
	}
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = (uint8_t)cfg->ib_timeout;
	a.retry_cnt = (uint8_t)cfg->ib_retry;
	a.rnr_retry = 7;
	a.sq_psn = me->psn;
	a.max_rd_atomic = 1;
	if (x->v->modify_qp(rp->qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			    IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC)) {
		snprintf(why, len, "ibv_modify_qp to RTS on %s: %s", x->dev, strerror(errno));
		return -1;
	}
	return 0;
}

static npccl_status_t setup_resources(struct npccl_comm *c, char *err, size_t errlen)
{
	struct rdma_ctx *x = c->rdma;
	const struct verbs_api *v = x->v;
	x->chunk = npccl_config()->pipeline_chunk;
	x->slot_bytes = ALIGN_UP(x->chunk + RDMA_SLOT_HDR, 4096);
	x->nslots = npccl_config()->rdma_slots;
	x->ch = v->create_comp_channel(x->ctx);
	int cqe = x->npeers * (RDMA_RQ_DEPTH + RDMA_SQ_DEPTH);
	x->cq = x->ch ? v->create_cq(x->ctx, cqe, NULL, x->ch, 0) : NULL;
	if (!x->cq) {
		snprintf(err, errlen, "rank %d: cannot create a completion queue of %d entries on %s: %s",
			 c->rank, cqe, x->dev, strerror(errno));
		return NPCCL_ERR_SYSTEM;
	}
	int fl = fcntl(x->ch->fd, F_GETFL);
	fcntl(x->ch->fd, F_SETFL, fl | O_NONBLOCK);
	x->mem_size = peer_area(x) * (size_t)x->npeers;
	x->mem = mmap(NULL, x->mem_size, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (x->mem == MAP_FAILED) {
		x->mem = NULL;
		snprintf(err, errlen, "rank %d: cannot allocate %zu bytes of RDMA buffers", c->rank,
			 x->mem_size);
		return NPCCL_ERR_NOMEM;
	}
	x->mem_mr = v->reg_mr(x->pd, x->mem, x->mem_size,
			      IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!x->mem_mr) {
		snprintf(err, errlen, "rank %d: cannot register %zu bytes of RDMA buffers on %s: %s%s",
			 c->rank, x->mem_size, x->dev, strerror(errno),
			 errno == ENOMEM ? " (raise the locked-memory limit: ulimit -l)" : "");
		return NPCCL_ERR_SYSTEM;
	}
	char *p = x->mem;
	for (int j = 0; j < c->nranks; j++) {
		struct rdma_peer *rp = c->peers[j].rdma;
		if (!rp)
			continue;
		rp->tx = p;
		rp->rx = p + (size_t)x->nslots * x->slot_bytes;
		rp->ctl_rx = rp->rx + (size_t)x->nslots * x->slot_bytes;
		rp->ctl_tx = rp->ctl_rx + RDMA_RQ_DEPTH * RDMA_CTL_BYTES;
		p += peer_area(x);
	}
	return NPCCL_OK;
}

npccl_status_t rdma_connect(struct npccl_comm *c, char *err, size_t errlen)
{
	struct rdma_ctx *x = c->rdma;
	char why[256];
	if (!x)
		return NPCCL_OK;
	for (int j = 0; j < c->nranks; j++)
		if (uses_rdma(c, j))
			x->npeers++;
	if (!x->npeers) {
		rdma_teardown(c);
		return NPCCL_OK;
	}
	for (int j = 0; j < c->nranks; j++) {
		if (!uses_rdma(c, j))
			continue;
		c->peers[j].rdma = calloc(1, sizeof(struct rdma_peer));
		if (!c->peers[j].rdma)
			return NPCCL_ERR_NOMEM;
		c->peers[j].rdma->rank = j;
	}
	npccl_status_t st = setup_resources(c, err, errlen);
	if (st)
		return st;
	uint64_t deadline = now_ns() + (uint64_t)npccl_config()->bootstrap_timeout_ms * 1000000ull;
	struct rdma_conn *mine = calloc((size_t)c->nranks, sizeof(*mine));
	if (!mine)
		return NPCCL_ERR_NOMEM;
	/* 1. queue pairs, and our connection data to every peer */
	for (int j = 0; j < c->nranks && !st; j++) {
		struct rdma_peer *rp = c->peers[j].rdma;
		if (!rp)
			continue;
		if (create_qp(c, rp, why, sizeof(why))) {
			snprintf(err, errlen, "rank %d: RDMA setup for rank %d: %s", c->rank, j, why);
			st = NPCCL_ERR_SYSTEM;
			break;
		}
		struct rdma_conn *m = &mine[j];
		uint32_t psn;
		if (getrandom(&psn, sizeof(psn), 0) != sizeof(psn))
			psn = (uint32_t)now_ns();
		*m = (struct rdma_conn){ .magic = CONN_MAGIC, .version = CONN_VERSION,
					 .qpn = rp->qp->qp_num, .psn = psn & 0xffffff, .lid = x->lid,
					 .mtu = (uint8_t)x->mtu, .is_roce = x->is_roce,
					 .rx_rkey = x->mem_mr->rkey, .rx_addr = (uintptr_t)rp->rx,
					 .nslots = (uint32_t)x->nslots,
					 .slot_bytes = (uint32_t)x->slot_bytes };
		memcpy(m->gid, x->gid.raw, 16);
		snprintf(m->dev, sizeof(m->dev), "%.31s", x->dev);
		if (sock_write_full(c->peers[j].data_fd, m, sizeof(*m), deadline) < 0) {
			snprintf(err, errlen, "rank %d: rank %d closed its connection during RDMA setup",
				 c->rank, j);
			st = NPCCL_ERR_BOOTSTRAP;
		}
	}
	/* 2. theirs; queue pairs to RTS */
	for (int j = 0; j < c->nranks && !st; j++) {
		struct rdma_peer *rp = c->peers[j].rdma;
		struct rdma_conn them;
		if (!rp)
			continue;
		if (sock_read_full(c->peers[j].data_fd, &them, sizeof(them), deadline) < 0) {
			snprintf(err, errlen, "rank %d: rank %d did not send its RDMA connection data "
				 "within %d ms", c->rank, j, npccl_config()->bootstrap_timeout_ms);
			st = NPCCL_ERR_BOOTSTRAP;
			break;
		}
		if (them.magic != CONN_MAGIC || them.version != CONN_VERSION) {
			snprintf(err, errlen, "rank %d: rank %d sent RDMA connection data of another "
				 "npccl version", c->rank, j);
			st = NPCCL_ERR_PROTOCOL;
			break;
		}
		if (them.nslots != (uint32_t)x->nslots || them.slot_bytes != (uint32_t)x->slot_bytes ||
		    them.is_roce != x->is_roce) {
			snprintf(err, errlen, "rank %d: rank %d uses %u RDMA slots of %u bytes on a%s "
				 "port, this rank %d of %zu on a%s port: NPCCL_RDMA_SLOTS and "
				 "NPCCL_PIPELINE_CHUNK must be the same on every rank, and the devices "
				 "of the same kind", c->rank, j, them.nslots, them.slot_bytes,
				 them.is_roce ? " RoCE" : "n InfiniBand", x->nslots, x->slot_bytes,
				 x->is_roce ? " RoCE" : "n InfiniBand");
			st = NPCCL_ERR_INVALID_ARG;
			break;
		}
		rp->remote_rx = them.rx_addr;
		rp->remote_rkey = them.rx_rkey;
		if (qp_to_rts(c, rp, &mine[j], &them, why, sizeof(why))) {
			snprintf(err, errlen, "rank %d: RDMA connection to rank %d: %s", c->rank, j, why);
			st = NPCCL_ERR_SYSTEM;
		}
	}
	free(mine);
	/* 3. both ends ready before the first message; then the data socket goes */
	for (int j = 0; j < c->nranks && !st; j++) {
		char ok = 'R';
		if (c->peers[j].rdma && sock_write_full(c->peers[j].data_fd, &ok, 1, deadline) < 0)
			st = NPCCL_ERR_BOOTSTRAP;
	}
	for (int j = 0; j < c->nranks && !st; j++) {
		char ok = 0;
		if (!c->peers[j].rdma)
			continue;
		if (sock_read_full(c->peers[j].data_fd, &ok, 1, deadline) < 0 || ok != 'R') {
			snprintf(err, errlen, "rank %d: rank %d failed its RDMA setup (see its error)",
				 c->rank, j);
			st = NPCCL_ERR_BOOTSTRAP;
			break;
		}
		close(c->peers[j].data_fd);
		c->peers[j].data_fd = -1;
		c->peers[j].tp = &rdma_transport;
	}
	if (!st)
		npccl_log(NPCCL_LOG_INFO, "rank %d: RDMA to %d peer(s) on %s port %u (%s)", c->rank,
			  x->npeers, x->dev, x->port, x->is_roce ? "RoCE" : "InfiniBand");
	return st;
}

void rdma_flush(struct npccl_comm *c, int timeout_ms)
{
	struct rdma_ctx *x = c->rdma;
	if (!x || !x->cq)
		return;
	uint64_t end = now_ns() + (uint64_t)timeout_ms * 1000000ull;
	for (;;) {
		rdma_poll_cq(c);
		bool busy = false;
		for (int j = 0; j < c->nranks; j++) {
			struct rdma_peer *rp = c->peers[j].rdma;
			if (rp && rp->sq_used > 0 && !rp->qp_error && !c->peers[j].gone)
				busy = true;
		}
		if (!busy || c->failed || now_ns() >= end)
			return;
		comm_poll_control(c, 0);
		usleep(100);
	}
}

void rdma_teardown(struct npccl_comm *c)
{
	struct rdma_ctx *x = c->rdma;
	if (!x)
		return;
	const struct verbs_api *v = x->v;
	for (int j = 0; c->peers && j < c->nranks; j++) {
		struct rdma_peer *rp = c->peers[j].rdma;
		if (!rp)
			continue;
		if (rp->qp)
			v->destroy_qp(rp->qp);
		free(rp);
		c->peers[j].rdma = NULL;
	}
	rdma_reg_drop_all(c);
	if (x->mem_mr)
		v->dereg_mr(x->mem_mr);
	if (x->mem)
		munmap(x->mem, x->mem_size);
	if (x->cq) {
		if (x->unacked)
			v->ack_cq_events(x->cq, x->unacked);
		v->destroy_cq(x->cq);
	}
	if (x->ch)
		v->destroy_comp_channel(x->ch);
	if (x->pd)
		v->dealloc_pd(x->pd);
	if (x->ctx)
		v->close_device(x->ctx);
	free(x->regs);
	free(x);
	c->rdma = NULL;
}

int rdma_sleep_fd(struct npccl_comm *c, bool *pending)
{
	struct rdma_ctx *x = c->rdma;
	*pending = false;
	if (!x || !x->cq)
		return -1;
	if (ibv_req_notify_cq(x->cq, 0))
		return -1;
	/* what completed before the arming raises no event: look once more */
	uint64_t before = x->completions;
	rdma_poll_cq(c);
	*pending = x->completions != before || c->failed;
	return x->ch->fd;
}

void rdma_after_sleep(struct npccl_comm *c)
{
	struct rdma_ctx *x = c->rdma;
	struct ibv_cq *cq;
	void *ctx;
	if (!x || !x->ch)
		return;
	while (x->v->get_cq_event(x->ch, &cq, &ctx) == 0)
		x->unacked++;
	if (x->unacked >= 64) {
		x->v->ack_cq_events(x->cq, x->unacked);
		x->unacked = 0;
	}
}
