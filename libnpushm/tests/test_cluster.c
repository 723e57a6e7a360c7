/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * test_cluster.c - npushm_cluster_load over a transport of the test's own:
 * the ranks are threads of this process on one host, their collectives
 * copies through a shared buffer between barriers (npccl's are tested with
 * processes and hosts in suite ccl). The root's file is published once,
 * with its content hash; a collective that fails ends the load with the
 * transport's reason and leaves no name and no staging copy; the ranks'
 * table, the root and the names are checked, each refusal with its cause.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "npushm_cluster.h"

#define RANKS 3

struct bus {
	pthread_barrier_t barrier;
	int nranks;
	const void *src;	/* the broadcast root's buffer */
	char gather[RANKS * 512];
	int fail_at;		/* every rank's collective number fail_at fails (0: none) */
};

struct rank {
	struct bus *bus;
	int rank, calls;
	const char *path, *name;
	npushm_cluster_ops_t ops;
	npushm_cluster_result_t res;
	npushm_status_t st;
	char err[1024];
};

static int host_zero(void *ctx, int rank)
{
	(void)ctx;
	(void)rank;
	return 0;
}

static int failing(struct rank *r)
{
	return ++r->calls == r->bus->fail_at;
}

static int bcast(void *ctx, void *buf, size_t len, int root)
{
	struct rank *r = ctx;
	if (failing(r))
		return -1;
	if (r->rank == root)
		r->bus->src = buf;
	pthread_barrier_wait(&r->bus->barrier);
	if (r->rank != root)
		memcpy(buf, r->bus->src, len);
	pthread_barrier_wait(&r->bus->barrier);
	return 0;
}

static int gather(void *ctx, const void *mine, void *all, size_t len)
{
	struct rank *r = ctx;
	if (failing(r) || len > 512)
		return -1;
	memcpy(r->bus->gather + (size_t)r->rank * len, mine, len);
	pthread_barrier_wait(&r->bus->barrier);
	memcpy(all, r->bus->gather, (size_t)r->bus->nranks * len);
	pthread_barrier_wait(&r->bus->barrier);
	return 0;
}

static const char *why(void *ctx)
{
	(void)ctx;
	return "the test's link went down";
}

static void *run_rank(void *arg)
{
	struct rank *r = arg;
	r->st = npushm_cluster_load(&r->ops, 1 % r->bus->nranks, r->path, r->name, 0600, &r->res);
	snprintf(r->err, sizeof(r->err), "%s", npushm_last_error());
	return NULL;
}

/* Every rank's load on threads; @names[i] for rank i (NULL: @name). */
static void load_on_threads(struct bus *bus, struct rank *rk, int n, const char *path,
			    const char *name, const char *const *names)
{
	pthread_t t[RANKS];
	bus->nranks = n;
	pthread_barrier_init(&bus->barrier, NULL, (unsigned)n);
	for (int i = 0; i < n; i++) {
		rk[i] = (struct rank){ .bus = bus, .rank = i, .path = i == 1 % n ? path : NULL,
				       .name = names && names[i] ? names[i] : name };
		rk[i].ops = (npushm_cluster_ops_t){ .rank = i, .nranks = n, .host_of = host_zero,
						    .broadcast = bcast, .allgather = gather,
						    .last_error = why, .ctx = &rk[i] };
		pthread_create(&t[i], NULL, run_rank, &rk[i]);
	}
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	pthread_barrier_destroy(&bus->barrier);
}

static const char *model_file(void)
{
	static char path[512];
	struct th_tensor t = { .name = "w", .dtype = "F32", .ndim = 2, .shape = { 300, 1000 } };

	snprintf(path, sizeof(path), "%s/cluster.safetensors", th_tmpdir());
	th_write_model(path, &t, 1, NULL, 42);	/* 1.2 MB: several chunks of the bus */
	th_free_model(&t, 1);
	return path;
}

/* No name left that starts with @prefix. */
static bool no_name_like(npushm_dev_t *dev, const char *prefix)
{
	npushm_region_list_t *l;
	bool none = true;

	REQUIRE_OK(npushm_dev_list_regions(dev, &l));
	for (size_t i = 0; i < npushm_region_list_count(l); i++) {
		const npushm_region_entry_t *e = npushm_region_list_at(l, i);
		for (size_t k = 0; k < e->name_count; k++)
			none &= strncmp(e->names[k].name, prefix, strlen(prefix)) != 0;
	}
	npushm_region_list_free(l);
	return none;
}

TEST(cluster_load_publishes_the_roots_file_with_its_hash)
{
	static struct bus bus;
	static struct rank rk[RANKS];
	npushm_dev_t *dev = th_dev();
	const char *path = model_file(), *name = th_name("cl");
	uint8_t want[16];
	char hex[33];
	npushm_model_t *m;
	npushm_model_info_t mi;

	REQUIRE_OK(npushm_file_hash(path, want, hex));
	load_on_threads(&bus, rk, RANKS, path, name, NULL);
	for (int i = 0; i < RANKS; i++) {
		CHECK_ST(rk[i].st, NPUSHM_OK);
		CHECK_EQ(rk[i].res.cause, NPUSHM_CLUSTER_OK);
		CHECK_EQ(rk[i].res.nhosts, 1);
		CHECK_EQ(rk[i].res.published, 1);
		CHECK(memcmp(rk[i].res.hash, want, 16) == 0);
		CHECK(strcmp(rk[i].res.hash_hex, hex) == 0);
	}
	REQUIRE_OK(npushm_model_attach_dev(dev, name, &m));
	npushm_model_info(m, &mi);
	CHECK(memcmp(mi.hash, want, 16) == 0);
	npushm_model_detach(m);
	CHECK(no_name_like(dev, "npccl-staging."));
	CHECK_ST(npushm_model_remove(dev, name), NPUSHM_OK);
	npushm_dev_close(dev);
}

TEST(cluster_load_a_failed_collective_leaves_nothing)
{
	static struct bus bus;
	static struct rank rk[RANKS];
	npushm_dev_t *dev = th_dev();
	const char *path = model_file(), *name = th_name("clfail");
	npushm_region_t *r;

	/* 1 offer, 1 verdicts, 1 chunk, 1 verdicts after staging: fail the last */
	bus.fail_at = 4;
	load_on_threads(&bus, rk, RANKS, path, name, NULL);
	for (int i = 0; i < RANKS; i++) {
		CHECK_ST(rk[i].st, NPUSHM_ERR_PROTOCOL);
		CHECK_EQ(rk[i].res.cause, NPUSHM_CLUSTER_TRANSPORT);
		CHECK(strstr(rk[i].err, "the test's link went down") != NULL);
		CHECK(strstr(rk[i].err, "nothing is published") != NULL);
	}
	CHECK_ST(npushm_region_open(dev, name, 0, &r), NPUSHM_ERR_NOT_FOUND);
	CHECK(no_name_like(dev, "npccl-staging."));
	npushm_dev_close(dev);
}

TEST(cluster_load_refusals_say_why)
{
	static struct bus bus;
	static struct rank rk[RANKS];
	npushm_cluster_ops_t bad = { .rank = 0, .nranks = 1 };
	npushm_cluster_result_t res;
	npushm_dev_t *dev = th_dev();
	const char *path = model_file(), *name = th_name("clref");
	const char *names[RANKS] = { NULL, NULL, "another-name" };
	npushm_region_t *r;

	CHECK_ST_MSG(npushm_cluster_load(NULL, 0, path, name, 0, &res), NPUSHM_ERR_INVALID,
		     "table is incomplete");
	CHECK_ST_MSG(npushm_cluster_load(&bad, 0, path, name, 0, &res), NPUSHM_ERR_INVALID,
		     "table is incomplete");
	CHECK_EQ(res.cause, NPUSHM_CLUSTER_INPUT);
	bad = (npushm_cluster_ops_t){ .rank = 0, .nranks = 1, .host_of = host_zero,
				      .broadcast = bcast, .allgather = gather };
	CHECK_ST_MSG(npushm_cluster_load(&bad, 1, path, name, 0, &res), NPUSHM_ERR_INVALID,
		     "root 1 is not a rank");
	/* a name npushm_model_load refuses, and no file on the root (one rank) */
	load_on_threads(&bus, rk, 1, path, "xxh3:0123", NULL);
	CHECK_ST(rk[0].st, NPUSHM_ERR_INVALID);
	CHECK(strstr(rk[0].err, "the prefix xxh3: is reserved for content-hash aliases") != NULL);
	CHECK_ST(npushm_region_open(dev, "xxh3:0123", 0, &r), NPUSHM_ERR_NOT_FOUND);
	npushm_model_remove(dev, "xxh3:0123");	/* (if it was published after all) */
	load_on_threads(&bus, rk, 1, NULL, name, NULL);
	CHECK_ST(rk[0].st, NPUSHM_ERR_INVALID);
	CHECK(strstr(rk[0].err, "the root was given no model file to read") != NULL);

	/* rank 2 was given another name: every rank refuses, naming rank 2 */
	load_on_threads(&bus, rk, RANKS, path, name, names);
	for (int i = 0; i < RANKS; i++) {
		CHECK_ST(rk[i].st, NPUSHM_ERR_INVALID);
		CHECK_EQ(rk[i].res.cause, NPUSHM_CLUSTER_MISMATCH);
		CHECK(strstr(rk[i].err, "rank 2") && strstr(rk[i].err, "another-name"));
	}
	CHECK_ST(npushm_region_open(dev, name, 0, &r), NPUSHM_ERR_NOT_FOUND);

	/* the name taken on the host */
	REQUIRE_OK(npushm_model_load(dev, path, name, NULL, NULL));
	load_on_threads(&bus, rk, RANKS, path, name, NULL);
	for (int i = 0; i < RANKS; i++) {
		CHECK_ST(rk[i].st, NPUSHM_ERR_INVALID);
		CHECK_EQ(rk[i].res.cause, NPUSHM_CLUSTER_INPUT);
		CHECK(strstr(rk[i].err, "already published") != NULL);
	}
	CHECK_ST(npushm_model_remove(dev, name), NPUSHM_OK);
	CHECK(no_name_like(dev, "npccl-staging."));
	npushm_dev_close(dev);
}

TEST_HARNESS_MAIN
