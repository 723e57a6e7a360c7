// SPDX-License-Identifier: GPL-2.0
/*
 * npushm_netlink_test.c - the "npushm" generic netlink family through
 * libnl-genl-3: pool statistics, region dumps limited to what the caller
 * may see (its uid, its IPC namespace), lookups by id, attribute policy
 * checks, and the events multicast group.
 */
#include <poll.h>
#include <sched.h>
#include <sys/mman.h>
#include <netlink/genl/ctrl.h>
#include <netlink/genl/genl.h>
#include <netlink/netlink.h>

#include "npushm_fixture.h"

#define MiB (1024UL * 1024)
#define MAX_SEEN 64

struct region_seen {
	uint64_t id, size, mapped;
	uint32_t uid, handles, mappings, dmabufs, mappers;
	bool sealed, persistent;
	int names;
	char name[NPUSHM_NAME_MAX + 1];
	uint32_t mode;
};

struct nl_ctx {
	struct nl_sock *sk;
	int family;
	int err;			/* the kernel's errno of the last request */
	struct region_seen seen[MAX_SEEN];
	int nseen;
	/* stats */
	uint64_t capacity, in_use, peak, regions, failed, quota;
	int nuids;
	uint32_t uids[16];
	uint64_t uid_bytes[16];
};

static struct nla_policy name_policy[NPUSHM_A_MAX + 1] = {
	[NPUSHM_A_NAME_STRING] = { .type = NLA_STRING },
	[NPUSHM_A_NAME_MODE] = { .type = NLA_U32 },
};

static int on_error(struct sockaddr_nl *nla, struct nlmsgerr *e, void *arg)
{
	((struct nl_ctx *)arg)->err = -e->error;
	return NL_STOP;
}

static int on_ack(struct nl_msg *msg, void *arg)
{
	((struct nl_ctx *)arg)->err = 0;
	return NL_STOP;
}

static int on_region(struct nl_msg *msg, void *arg)
{
	struct nl_ctx *c = arg;
	struct nlattr *a[NPUSHM_A_MAX + 1], *nest;
	struct region_seen *r;
	int rem;

	if (genlmsg_parse(nlmsg_hdr(msg), 0, a, NPUSHM_A_MAX, NULL) || c->nseen >= MAX_SEEN)
		return NL_SKIP;
	r = &c->seen[c->nseen++];
	memset(r, 0, sizeof(*r));
	r->id = nla_get_u64(a[NPUSHM_A_REGION_ID]);
	r->size = nla_get_u64(a[NPUSHM_A_REGION_SIZE]);
	r->uid = nla_get_u32(a[NPUSHM_A_REGION_OWNER_UID]);
	r->handles = nla_get_u32(a[NPUSHM_A_REGION_HANDLES]);
	r->mappings = nla_get_u32(a[NPUSHM_A_REGION_MAPPINGS]);
	r->dmabufs = nla_get_u32(a[NPUSHM_A_REGION_DMABUFS]);
	r->mappers = nla_get_u32(a[NPUSHM_A_REGION_MAPPERS]);
	r->mapped = nla_get_u64(a[NPUSHM_A_REGION_MAPPED_BYTES]);
	r->sealed = !!a[NPUSHM_A_REGION_SEALED];
	r->persistent = !!a[NPUSHM_A_REGION_PERSISTENT];
	nlmsg_for_each_attr(nest, nlmsg_hdr(msg), GENL_HDRLEN, rem) {
		struct nlattr *n[NPUSHM_A_MAX + 1];

		if (nla_type(nest) != NPUSHM_A_REGION_NAME)
			continue;
		if (nla_parse_nested(n, NPUSHM_A_MAX, nest, name_policy))
			continue;
		if (!r->names++) {
			snprintf(r->name, sizeof(r->name), "%s",
				 nla_get_string(n[NPUSHM_A_NAME_STRING]));
			r->mode = nla_get_u32(n[NPUSHM_A_NAME_MODE]);
		}
	}
	return NL_OK;
}

static int on_stats(struct nl_msg *msg, void *arg)
{
	struct nl_ctx *c = arg;
	struct nlattr *a[NPUSHM_A_MAX + 1], *nest;
	int rem;

	if (genlmsg_parse(nlmsg_hdr(msg), 0, a, NPUSHM_A_MAX, NULL))
		return NL_SKIP;
	c->capacity = nla_get_u64(a[NPUSHM_A_STATS_CAPACITY]);
	c->in_use = nla_get_u64(a[NPUSHM_A_STATS_IN_USE]);
	c->peak = nla_get_u64(a[NPUSHM_A_STATS_PEAK]);
	c->regions = nla_get_u64(a[NPUSHM_A_STATS_REGIONS]);
	c->failed = nla_get_u64(a[NPUSHM_A_STATS_FAILED_ALLOCS]);
	c->quota = nla_get_u64(a[NPUSHM_A_STATS_UID_QUOTA]);
	c->nuids = 0;
	nlmsg_for_each_attr(nest, nlmsg_hdr(msg), GENL_HDRLEN, rem) {
		struct nlattr *u[NPUSHM_A_MAX + 1];

		if (nla_type(nest) != NPUSHM_A_UID_USAGE || c->nuids >= 16)
			continue;
		if (nla_parse_nested(u, NPUSHM_A_MAX, nest, NULL))
			continue;
		c->uids[c->nuids] = nla_get_u32(u[NPUSHM_A_UID]);
		c->uid_bytes[c->nuids++] = nla_get_u64(u[NPUSHM_A_UID_BYTES]);
	}
	return NL_OK;
}

static int ctx_open(struct nl_ctx *c)
{
	memset(c, 0, sizeof(*c));
	c->sk = nl_socket_alloc();
	if (!c->sk || genl_connect(c->sk))
		return -1;
	c->family = genl_ctrl_resolve(c->sk, NPUSHM_GENL_NAME);
	return c->family < 0 ? -1 : 0;
}

static void ctx_close(struct nl_ctx *c)
{
	nl_socket_free(c->sk);
}

/*
 * Send one request (a dump when flags has NLM_F_DUMP) with an optional
 * region id attribute of attr_len bytes; returns the kernel's errno.
 */
static int ctx_request(struct nl_ctx *c, uint8_t cmd, int flags, int attr, const void *val,
		      int attr_len, nl_recvmsg_msg_cb_t handler)
{
	struct nl_msg *msg = nlmsg_alloc();
	struct nl_cb *cb = nl_cb_alloc(NL_CB_DEFAULT);

	c->nseen = 0;
	c->err = -1;
	genlmsg_put(msg, NL_AUTO_PORT, NL_AUTO_SEQ, c->family, 0, flags | NLM_F_ACK, cmd,
		    NPUSHM_GENL_VERSION);
	if (attr)
		nla_put(msg, attr, attr_len, val);
	nl_cb_set(cb, NL_CB_VALID, NL_CB_CUSTOM, handler, c);
	nl_cb_set(cb, NL_CB_ACK, NL_CB_CUSTOM, on_ack, c);
	nl_cb_set(cb, NL_CB_FINISH, NL_CB_CUSTOM, on_ack, c);
	nl_cb_err(cb, NL_CB_CUSTOM, on_error, c);
	if (nl_send_auto(c->sk, msg) >= 0)
		while (c->err == -1 && nl_recvmsgs(c->sk, cb) >= 0)
			;
	nlmsg_free(msg);
	nl_cb_put(cb);
	return c->err;
}

static int ctx_dump(struct nl_ctx *c)
{
	return ctx_request(c, NPUSHM_CMD_REGION_GET, NLM_F_DUMP, 0, NULL, 0, on_region);
}

static struct region_seen *find_seen(struct nl_ctx *c, uint64_t id)
{
	int i;

	for (i = 0; i < c->nseen; i++)
		if (c->seen[i].id == id)
			return &c->seen[i];
	return NULL;
}

static uint64_t region_id(int fd)
{
	struct npushm_region_info info;

	return npu_info(fd, &info) ? 0 : info.id;
}

TEST_F(npushm, stats_match_query)
{
	struct nl_ctx c;
	struct npushm_query q;
	int fd = npu_alloc(self->dev, 5 * MiB), i;
	bool found = false;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ctx_open(&c));
	ASSERT_EQ(0, ctx_request(&c, NPUSHM_CMD_STATS_GET, 0, 0, NULL, 0, on_stats));
	ASSERT_EQ(0, npu_query(self->dev, &q));
	EXPECT_EQ(q.capacity, c.capacity);
	EXPECT_EQ(q.in_use, c.in_use);
	EXPECT_EQ(q.regions, c.regions);
	EXPECT_EQ(q.uid_quota, c.quota);
	EXPECT_LE(c.in_use, c.peak);
	for (i = 0; i < c.nuids; i++)
		if (c.uids[i] == 0) {
			found = true;
			EXPECT_EQ(q.uid_in_use, c.uid_bytes[i]);
		}
	EXPECT_TRUE(found);
	ctx_close(&c);
	close(fd);
}

TEST_F(npushm, stats_count_failures_and_peak)
{
	unsigned long long quota = npu_param_get("uid_quota");
	struct nl_ctx c;
	uint64_t failed, peak;
	char buf[32];
	int fd;

	ASSERT_EQ(0, ctx_open(&c));
	ASSERT_EQ(0, ctx_request(&c, NPUSHM_CMD_STATS_GET, 0, 0, NULL, 0, on_stats));
	failed = c.failed;
	fd = npu_alloc(self->dev, 64 * MiB);
	ASSERT_LE(0, fd);
	close(fd);
	ASSERT_EQ(0, npu_param_set("uid_quota", "1M"));
	EXPECT_EQ(-EDQUOT, npu_alloc(self->dev, 2 * MiB));
	snprintf(buf, sizeof(buf), "%llu", quota);
	ASSERT_EQ(0, npu_param_set("uid_quota", buf));
	ASSERT_EQ(0, ctx_request(&c, NPUSHM_CMD_STATS_GET, 0, 0, NULL, 0, on_stats));
	peak = c.peak;
	EXPECT_EQ(failed + 1, c.failed);
	EXPECT_LE(self->q0.in_use + 64 * MiB, peak);
	ctx_close(&c);
}

static int stats_as_user(void *arg)
{
	struct nl_ctx c;
	int dev = npu_dev_open(), fd = npu_alloc(dev, 2 * MiB);

	if (fd < 0 || ctx_open(&c))
		return 1;
	if (ctx_request(&c, NPUSHM_CMD_STATS_GET, 0, 0, NULL, 0, on_stats))
		return 2;
	/* Only its own uid's usage, not root's. */
	if (c.nuids != 1 || c.uids[0] != 1000 || c.uid_bytes[0] != 2 * MiB)
		return 3;
	return 0;
}

TEST_F(npushm, stats_show_other_uids_to_admin_only)
{
	int fd = npu_alloc(self->dev, MiB);

	ASSERT_LE(0, fd);
	EXPECT_EQ(0, npu_run_as(1000, 1000, stats_as_user, NULL));
	close(fd);
}

TEST_F(npushm, dump_reports_regions)
{
	size_t size = 6 * MiB;
	int fd = npu_alloc(self->dev, size), buf;
	struct region_seen *r;
	struct nl_ctx c;
	char *p;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, npu_publish(fd, "nl.model", 0640, NPUSHM_PUBLISH_PERSIST));
	p = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	buf = npu_export(fd, 0);
	ASSERT_LE(0, buf);
	ASSERT_EQ(0, ctx_open(&c));
	ASSERT_EQ(0, ctx_dump(&c));
	r = find_seen(&c, region_id(fd));
	ASSERT_NE(NULL, r);
	EXPECT_EQ(size, r->size);
	EXPECT_EQ(0, r->uid);
	EXPECT_STREQ("nl.model", r->name);
	EXPECT_EQ(0640, r->mode);
	EXPECT_EQ(1, r->names);
	EXPECT_TRUE(r->persistent);
	EXPECT_FALSE(r->sealed);
	EXPECT_EQ(1, r->handles);
	EXPECT_EQ(1, r->mappings);
	EXPECT_EQ(1, r->dmabufs);
	EXPECT_EQ(1, r->mappers);
	EXPECT_EQ(size, r->mapped);
	munmap(p, size);
	ASSERT_EQ(0, npu_seal(fd));
	ASSERT_EQ(0, ctx_dump(&c));
	r = find_seen(&c, region_id(fd));
	ASSERT_NE(NULL, r);
	EXPECT_TRUE(r->sealed);
	EXPECT_EQ(0, r->mapped);
	ASSERT_EQ(0, npu_unlink(self->dev, "nl.model"));
	close(buf);
	close(fd);
	ctx_close(&c);
}

TEST_F(npushm, dump_counts_mapping_processes)
{
	int fd = npu_alloc(self->dev, MiB), sv[2], i;
	struct region_seen *r;
	struct nl_ctx c;
	pid_t pids[3];
	char *p;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	p = mmap(NULL, MiB, PROT_READ, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	for (i = 0; i < 3; i++) {
		pids[i] = fork();
		ASSERT_LE(0, pids[i]);
		if (!pids[i]) {
			char b;

			/* Each child holds the inherited mapping until told. */
			if (read(sv[1], &b, 1) != 1)
				_exit(1);
			_exit(0);
		}
	}
	ASSERT_EQ(0, ctx_open(&c));
	ASSERT_EQ(0, ctx_dump(&c));
	r = find_seen(&c, region_id(fd));
	ASSERT_NE(NULL, r);
	EXPECT_EQ(4, r->mappings);
	EXPECT_EQ(4, r->mappers);
	EXPECT_EQ(4 * MiB, r->mapped);
	for (i = 0; i < 3; i++)
		ASSERT_EQ(1, write(sv[0], "x", 1));
	for (i = 0; i < 3; i++)
		waitpid(pids[i], NULL, 0);
	munmap(p, MiB);
	ctx_close(&c);
	close(sv[0]);
	close(sv[1]);
	close(fd);
}

struct visibility {
	uint64_t named, unnamed;
};

static int dump_as_user(void *arg)
{
	struct visibility *v = arg;
	int dev = npu_dev_open(), mine = npu_alloc(dev, 4096);
	struct nl_ctx c;

	if (mine < 0 || ctx_open(&c) || ctx_dump(&c))
		return 1;
	if (!find_seen(&c, v->named))
		return 2;		/* named: anyone may see it */
	if (find_seen(&c, v->unnamed))
		return 3;		/* root's unnamed region is private */
	if (!find_seen(&c, region_id(mine)))
		return 4;		/* its own unnamed region */
	/* Looking up the private one by id is ENOENT, not EACCES. */
	if (ctx_request(&c, NPUSHM_CMD_REGION_GET, 0, NPUSHM_A_REGION_ID, &v->unnamed,
		       sizeof(v->unnamed), on_region) != ENOENT)
		return 5;
	return 0;
}

TEST_F(npushm, dump_hides_other_users_unnamed_regions)
{
	int named = npu_alloc(self->dev, 4096), unnamed = npu_alloc(self->dev, 4096);
	struct visibility v;

	ASSERT_LE(0, named);
	ASSERT_LE(0, unnamed);
	ASSERT_EQ(0, npu_publish(named, "nl.visible", 0600, 0));
	v.named = region_id(named);
	v.unnamed = region_id(unnamed);
	EXPECT_EQ(0, npu_run_as(1000, 1000, dump_as_user, &v));
	close(named);
	close(unnamed);
}

TEST_F(npushm, dump_hides_other_ipc_namespaces)
{
	int fd = npu_alloc(self->dev, 4096), status;
	uint64_t id;
	pid_t pid;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, npu_publish(fd, "nl.ns", 0666, 0));
	id = region_id(fd);
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		struct nl_ctx c;
		int dev, mine;

		if (unshare(CLONE_NEWIPC) || ctx_open(&c) || ctx_dump(&c))
			_exit(1);
		if (find_seen(&c, id))
			_exit(2);
		dev = npu_dev_open();
		mine = npu_alloc(dev, 4096);
		if (npu_publish(mine, "nl.ns", 0600, 0) || ctx_dump(&c) ||
		    !find_seen(&c, region_id(mine)) || find_seen(&c, id))
			_exit(3);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, WEXITSTATUS(status));
	close(fd);
}

TEST_F(npushm, get_by_id)
{
	int fd = npu_alloc(self->dev, 8192);
	uint64_t id, missing = UINT64_MAX - 7;
	struct nl_ctx c;

	ASSERT_LE(0, fd);
	id = region_id(fd);
	ASSERT_EQ(0, ctx_open(&c));
	ASSERT_EQ(0, ctx_request(&c, NPUSHM_CMD_REGION_GET, 0, NPUSHM_A_REGION_ID, &id,
				sizeof(id), on_region));
	ASSERT_EQ(1, c.nseen);
	EXPECT_EQ(id, c.seen[0].id);
	EXPECT_EQ(8192, c.seen[0].size);
	EXPECT_EQ(ENOENT, ctx_request(&c, NPUSHM_CMD_REGION_GET, 0, NPUSHM_A_REGION_ID,
				     &missing, sizeof(missing), on_region));
	/* Without an id a plain request is invalid. */
	EXPECT_EQ(EINVAL, ctx_request(&c, NPUSHM_CMD_REGION_GET, 0, 0, NULL, 0, on_region));
	ctx_close(&c);
	close(fd);
}

TEST_F(npushm, policy_rejects_bad_attributes)
{
	uint32_t small = 1;
	uint64_t big = 1;
	struct nl_ctx c;

	ASSERT_EQ(0, ctx_open(&c));
	/* A u64 attribute given 4 bytes. */
	EXPECT_EQ(EINVAL, ctx_request(&c, NPUSHM_CMD_REGION_GET, 0, NPUSHM_A_REGION_ID, &small,
				     sizeof(small), on_region));
	/* An attribute the family does not know. */
	EXPECT_EQ(EINVAL, ctx_request(&c, NPUSHM_CMD_STATS_GET, 0, NPUSHM_A_MAX + 3, &big,
				     sizeof(big), on_stats));
	/* Commands only the kernel sends, or that do not exist. */
	EXPECT_EQ(EOPNOTSUPP, ctx_request(&c, NPUSHM_CMD_EVENT, 0, 0, NULL, 0, on_stats));
	EXPECT_EQ(EOPNOTSUPP, ctx_request(&c, 77, 0, 0, NULL, 0, on_stats));
	ctx_close(&c);
}

struct event_log {
	int n;
	uint32_t type[32];
	uint64_t id[32];
	uint32_t err[32];
	char name[32][32];
};

static int on_event(struct nl_msg *msg, void *arg)
{
	struct event_log *log = arg;
	struct nlattr *a[NPUSHM_A_MAX + 1];
	int i = log->n;

	if (genlmsg_parse(nlmsg_hdr(msg), 0, a, NPUSHM_A_MAX, NULL) || i >= 32)
		return NL_SKIP;
	log->type[i] = nla_get_u32(a[NPUSHM_A_EVENT_TYPE]);
	log->id[i] = a[NPUSHM_A_REGION_ID] ? nla_get_u64(a[NPUSHM_A_REGION_ID]) : 0;
	log->err[i] = a[NPUSHM_A_EVENT_ERRNO] ? nla_get_u32(a[NPUSHM_A_EVENT_ERRNO]) : 0;
	log->name[i][0] = 0;
	if (a[NPUSHM_A_EVENT_NAME])
		snprintf(log->name[i], sizeof(log->name[i]), "%s",
			 nla_get_string(a[NPUSHM_A_EVENT_NAME]));
	log->n++;
	return NL_OK;
}

static void drain_events(struct nl_sock *sk, struct event_log *log)
{
	struct pollfd pfd = { .fd = nl_socket_get_fd(sk), .events = POLLIN };

	while (poll(&pfd, 1, 200) > 0)
		nl_recvmsgs_default(sk);
	(void)log;
}

TEST_F(npushm, events_announce_every_action)
{
	unsigned long long quota = npu_param_get("uid_quota");
	static const uint32_t want[] = {
		NPUSHM_EVENT_CREATED, NPUSHM_EVENT_PUBLISHED, NPUSHM_EVENT_SEALED,
		NPUSHM_EVENT_UNLINKED, NPUSHM_EVENT_DESTROYED, NPUSHM_EVENT_ALLOC_FAILED,
	};
	struct event_log log = { 0 };
	struct nl_sock *sk;
	uint64_t id;
	char buf[32];
	int grp, fd, i;

	sk = nl_socket_alloc();
	ASSERT_NE(NULL, sk);
	ASSERT_EQ(0, genl_connect(sk));
	grp = genl_ctrl_resolve_grp(sk, NPUSHM_GENL_NAME, NPUSHM_GENL_MCGRP_EVENTS);
	ASSERT_LE(0, grp);
	nl_socket_disable_seq_check(sk);
	nl_socket_modify_cb(sk, NL_CB_VALID, NL_CB_CUSTOM, on_event, &log);
	ASSERT_EQ(0, nl_socket_add_membership(sk, grp));

	fd = npu_alloc(self->dev, 3 * MiB);
	ASSERT_LE(0, fd);
	id = region_id(fd);
	ASSERT_EQ(0, npu_publish(fd, "ev.model", 0600, 0));
	ASSERT_EQ(0, npu_seal(fd));
	ASSERT_EQ(0, npu_unlink(self->dev, "ev.model"));
	close(fd);
	ASSERT_EQ(0, npu_param_set("uid_quota", "1M"));
	EXPECT_EQ(-EDQUOT, npu_alloc(self->dev, 2 * MiB));
	snprintf(buf, sizeof(buf), "%llu", quota);
	ASSERT_EQ(0, npu_param_set("uid_quota", buf));
	drain_events(sk, &log);

	ASSERT_EQ(6, log.n);
	for (i = 0; i < 6; i++) {
		EXPECT_EQ(want[i], log.type[i]);
		if (i < 5)
			EXPECT_EQ(id, log.id[i]);
	}
	EXPECT_STREQ("ev.model", log.name[1]);
	EXPECT_STREQ("ev.model", log.name[3]);
	EXPECT_EQ(EDQUOT, log.err[5]);
	nl_socket_free(sk);
}

TEST_HARNESS_MAIN
