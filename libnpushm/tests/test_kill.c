/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * test_kill.c - atomic publish: a loader killed with SIGKILL at any point
 * leaves either nothing (no name, no alias, no region file, no pool bytes)
 * or, if it got past the publish, a complete model that attaches and
 * matches the file. Deterministic kills at each load stage (from the
 * progress callback) and kills after random delays.
 */
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

struct kill_at {
	npushm_load_stage_t stage;
	double fraction;	/* for COPY: of the bytes */
};

static void kill_cb(void *arg, npushm_load_stage_t stage, uint64_t done, uint64_t total)
{
	const struct kill_at *k = arg;

	if (stage != k->stage)
		return;
	if (stage == NPUSHM_LOAD_COPY && (double)done < k->fraction * (double)total)
		return;
	raise(SIGKILL);
}

/* Fork a loader; kill it via @k or after @delay_us; return true if it was killed. */
static bool run_loader(const char *path, const char *name, const struct kill_at *k, long delay_us)
{
	int status;
	pid_t pid = fork();

	if (pid == 0) {
		npushm_dev_t *dev = th_dev();
		npushm_load_opts_t lo = { .progress = k ? kill_cb : NULL, .progress_arg = (void *)k };

		_exit(npushm_model_load(dev, path, name, &lo, NULL) == NPUSHM_OK ? 0 : 3);
	}
	REQUIRE(pid > 0);
	if (delay_us >= 0) {
		usleep((useconds_t)delay_us);
		kill(pid, SIGKILL);
	}
	waitpid(pid, &status, 0);
	if (WIFEXITED(status) && WEXITSTATUS(status) == 3)
		th_check_failed(__FILE__, __LINE__, "the loader failed by itself");
	return WIFSIGNALED(status);
}

/* Nothing left, or a complete model (then remove it). Returns true if a model was there. */
static bool check_aftermath(npushm_dev_t *dev, const char *name, uint64_t used0, const char *hash_hex)
{
	npushm_region_t *r = NULL;
	npushm_model_t *m = NULL;
	char alias[64];
	bool model = false;

	snprintf(alias, sizeof(alias), "xxh3:%s", hash_hex);
	if (npushm_model_attach_dev(dev, name, &m) == NPUSHM_OK) {
		npushm_model_info_t mi;

		npushm_model_info(m, &mi);
		CHECK(strcmp(mi.hash_hex, hash_hex) == 0);
		npushm_model_detach(m);
		CHECK_ST(npushm_model_remove(dev, name), NPUSHM_OK);
		model = true;
	} else {
		CHECK_ST(npushm_region_open(dev, name, 0, &r), NPUSHM_ERR_NOT_FOUND);
	}
	/* A loader killed between its two publishes leaves the alias: rm drops it. */
	if (npushm_region_open(dev, alias, 0, &r) == NPUSHM_OK) {
		npushm_region_close(r);
		CHECK(model);
		npushm_name_unlink(dev, alias);
	}
	CHECK_EQ(th_pool_used(dev), used0);
	CHECK_EQ(th_shm_files(), 0);
	return model;
}

static void reference_hash(npushm_dev_t *dev, const char *path, char hex[33])
{
	npushm_load_result_t res;
	const char *n = th_name("ref");

	REQUIRE_OK(npushm_model_load(dev, path, n, NULL, &res));
	memcpy(hex, res.hash_hex, 33);
	REQUIRE_OK(npushm_model_remove(dev, n));
}

TEST(kill_loader_at_each_stage_leaves_nothing)
{
	npushm_dev_t *dev = th_dev();
	const char *path = th_big_model("kill.safetensors", 8 << 20, 51);
	static const struct kill_at at[] = {
		{ NPUSHM_LOAD_PARSE, 0 }, { NPUSHM_LOAD_COPY, 0 }, { NPUSHM_LOAD_COPY, 0.5 },
		{ NPUSHM_LOAD_COPY, 1.0 }, { NPUSHM_LOAD_SEAL, 0 }, { NPUSHM_LOAD_PUBLISH, 0 },
	};
	uint64_t used0 = th_pool_used(dev);
	char hex[33];

	reference_hash(dev, path, hex);
	CHECK_EQ(th_pool_used(dev), used0);
	for (size_t i = 0; i < sizeof(at) / sizeof(at[0]); i++) {
		const char *name = th_name("k");

		CHECK(run_loader(path, name, &at[i], -1));
		CHECK(!check_aftermath(dev, name, used0, hex));
	}
	/* DONE comes after the publish: killed there, the model is complete. */
	{
		static const struct kill_at done = { NPUSHM_LOAD_DONE, 0 };
		const char *name = th_name("kdone");

		CHECK(run_loader(path, name, &done, -1));
		CHECK(check_aftermath(dev, name, used0, hex));
	}
	npushm_dev_close(dev);
}

TEST(kill_loader_after_random_delays)
{
	npushm_dev_t *dev = th_dev();
	const char *path = th_big_model("rkill.safetensors", th_is_kmod() ? (8 << 20) : (64 << 20), 52);
	uint64_t used0 = th_pool_used(dev), s = (uint64_t)getpid() * 2654435761ULL + 1;
	struct timespec t0, t1;
	int models = 0, empty = 0, rounds = th_is_kmod() ? 6 : 12;
	long dur_us;
	char hex[33];

	clock_gettime(CLOCK_MONOTONIC, &t0);
	reference_hash(dev, path, hex);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	dur_us = (t1.tv_sec - t0.tv_sec) * 1000000L + (t1.tv_nsec - t0.tv_nsec) / 1000;
	for (int i = 0; i < rounds; i++) {
		const char *name = th_name("rk");
		long delay = (long)(th_rand(&s) % (uint64_t)(dur_us * 5 / 4 + 1));

		run_loader(path, name, NULL, delay);
		if (check_aftermath(dev, name, used0, hex))
			models++;
		else
			empty++;
	}
	th_diag("load takes %ld us; %d kills left nothing, %d came after the publish", dur_us, empty, models);
	npushm_dev_close(dev);
}

TEST_HARNESS_MAIN
