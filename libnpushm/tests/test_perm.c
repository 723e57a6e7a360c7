/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * test_perm.c - permissions as another user: regions and models published
 * by root with different modes, opened, mapped, attached and removed by uid
 * 65534 in a child (setresuid). Each refusal must be ACCESS with a message
 * that names the region or model. A model's owner is who loaded it
 * (npushm_model_owner_uid), whoever attaches it, and a load never takes
 * another user's copy for its own (dedup, "already loaded").
 */
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"

struct perm_ctx {
	const char *r600, *r644, *r666, *m640, *m644;
	const char *file;
};

static void as_other(void *arg)
{
	struct perm_ctx *c = arg;
	npushm_dev_t *dev = th_dev();
	npushm_region_t *r = NULL, *mine;
	npushm_model_t *m = NULL;
	npushm_tensor_t t;
	void *p;

	CHECK_ST_MSG(npushm_region_open(dev, c->r600, 0, &r), NPUSHM_ERR_ACCESS, c->r600);
	CHECK(r == NULL);
	CHECK_ST(npushm_region_open(dev, c->r644, 0, &r), NPUSHM_OK);
	npushm_region_close(r);
	CHECK_ST_MSG(npushm_region_open(dev, c->r644, NPUSHM_OPEN_WRITE, &r), NPUSHM_ERR_ACCESS, "read-write");
	CHECK_ST(npushm_region_open(dev, c->r666, NPUSHM_OPEN_WRITE, &r), NPUSHM_OK);
	if (r) {
		CHECK_ST(npushm_region_map(r, NPUSHM_PROT_READ | NPUSHM_PROT_WRITE, &p), NPUSHM_OK);
		/* writable is not owned: another name for root's region (which this
		 * user could not even remove again) is the owner's to give */
		CHECK_ST_MSG(npushm_region_publish(r, th_name("not-mine"), 0666, 0), NPUSHM_ERR_ACCESS,
			     "only the region's owner (uid 0)");
		npushm_region_close(r);
	}
	CHECK_ST_MSG(npushm_name_unlink(dev, c->r644), NPUSHM_ERR_ACCESS, c->r644);
	REQUIRE_OK(npushm_region_alloc(dev, 4096, 0, &mine));
	CHECK_ST(npushm_region_publish(mine, c->r644, 0600, 0), NPUSHM_ERR_EXISTS);
	npushm_region_close(mine);

	CHECK_ST_MSG(npushm_model_attach_dev(dev, c->m640, &m), NPUSHM_ERR_ACCESS, c->m640);
	CHECK(m == NULL);
	REQUIRE_OK(npushm_model_attach_dev(dev, c->m644, &m));
	CHECK_ST(npushm_model_tensor_find(m, "w", &t), NPUSHM_OK);
	CHECK(t.nbytes > 0 && ((const volatile char *)t.data)[t.nbytes - 1] == ((const volatile char *)t.data)[t.nbytes - 1]);
	npushm_model_detach(m);
	CHECK_ST_MSG(npushm_model_remove(dev, c->m644), NPUSHM_ERR_ACCESS, c->m644);
	/* A model this user loads is its own to remove. */
	{
		const char *mine_model = th_name("nobody-model");
		npushm_load_opts_t lo = { .mode = 0644, .flags = NPUSHM_LOAD_NO_DEDUP };

		CHECK_ST(npushm_model_load(dev, c->file, mine_model, &lo, NULL), NPUSHM_OK);
		CHECK_ST(npushm_model_remove(dev, mine_model), NPUSHM_OK);
	}
	npushm_dev_close(dev);
}

TEST(perm_other_users_get_what_the_mode_allows)
{
	npushm_dev_t *dev = th_dev();
	struct perm_ctx c = {
		.r600 = th_name("r600"), .r644 = th_name("r644"), .r666 = th_name("r666"),
		.m640 = th_name("m640"), .m644 = th_name("m644"),
	};
	npushm_load_opts_t lo640 = { .mode = 0640 }, lo644 = { .mode = 0644, .flags = NPUSHM_LOAD_NO_DEDUP };
	npushm_region_t *r[3];
	uint64_t used0 = th_pool_used(dev);

	if (!th_is_root())
		th_skip("needs root to switch to uid 65534");
	c.file = th_big_model("perm.safetensors", 64 << 10, 5);
	REQUIRE_OK(npushm_region_alloc(dev, 4096, 0, &r[0]));
	REQUIRE_OK(npushm_region_alloc(dev, 4096, 0, &r[1]));
	REQUIRE_OK(npushm_region_alloc(dev, 4096, 0, &r[2]));
	REQUIRE_OK(npushm_region_publish(r[0], c.r600, 0600, NPUSHM_PUBLISH_PERSISTENT));
	REQUIRE_OK(npushm_region_publish(r[1], c.r644, 0644, NPUSHM_PUBLISH_PERSISTENT));
	REQUIRE_OK(npushm_region_publish(r[2], c.r666, 0666, NPUSHM_PUBLISH_PERSISTENT));
	REQUIRE_OK(npushm_model_load(dev, c.file, c.m640, &lo640, NULL));
	REQUIRE_OK(npushm_model_load(dev, c.file, c.m644, &lo644, NULL));
	CHECK_EQ(th_as_nobody(as_other, &c), 0);
	CHECK_ST(npushm_model_remove(dev, c.m640), NPUSHM_OK);
	CHECK_ST(npushm_model_remove(dev, c.m644), NPUSHM_OK);
	for (int i = 0; i < 3; i++)
		npushm_region_close(r[i]);
	CHECK_ST(npushm_name_unlink(dev, c.r600), NPUSHM_OK);
	CHECK_ST(npushm_name_unlink(dev, c.r644), NPUSHM_OK);
	CHECK_ST(npushm_name_unlink(dev, c.r666), NPUSHM_OK);
	CHECK_EQ(th_pool_used(dev), used0);
	CHECK_EQ(th_shm_files(), 0);
	npushm_dev_close(dev);
}

struct owner_ctx {
	const char *file, *root_model, *nobody_model;
};

static void owner_as_other(void *arg)
{
	struct owner_ctx *c = arg;
	npushm_load_opts_t lo = { .mode = 0644, .flags = NPUSHM_LOAD_NO_DEDUP };
	npushm_dev_t *dev = th_dev();
	npushm_model_t *m = NULL;

	REQUIRE_OK(npushm_model_attach_dev(dev, c->root_model, &m));
	CHECK_EQ(npushm_model_owner_uid(m), 0);
	npushm_model_detach(m);
	REQUIRE_OK(npushm_model_load(dev, c->file, c->nobody_model, &lo, NULL));
	REQUIRE_OK(npushm_model_attach_dev(dev, c->nobody_model, &m));
	CHECK_EQ(npushm_model_owner_uid(m), 65534);
	npushm_model_detach(m);
	npushm_dev_close(dev);
}

TEST(perm_a_models_owner_is_who_loaded_it)
{
	npushm_dev_t *dev = th_dev();
	struct owner_ctx c = {
		.root_model = th_name("owner-root"), .nobody_model = th_name("owner-nobody"),
	};
	npushm_load_opts_t lo = { .mode = 0644, .flags = NPUSHM_LOAD_NO_DEDUP };
	npushm_model_t *m = NULL;

	if (!th_is_root())
		th_skip("needs root to switch to uid 65534");
	CHECK_EQ(npushm_model_owner_uid(NULL), UINT32_MAX);
	c.file = th_big_model("owner.safetensors", 16 << 10, 6);
	REQUIRE_OK(npushm_model_load(dev, c.file, c.root_model, &lo, NULL));
	REQUIRE_OK(npushm_model_attach_dev(dev, c.root_model, &m));
	CHECK_EQ(npushm_model_owner_uid(m), geteuid());
	npushm_model_detach(m);
	CHECK_EQ(th_as_nobody(owner_as_other, &c), 0);
	/* root attaching the model uid 65534 loaded: its owner stays 65534 */
	if (npushm_model_attach_dev(dev, c.nobody_model, &m) == NPUSHM_OK) {
		CHECK_EQ(npushm_model_owner_uid(m), 65534);
		npushm_model_detach(m);
	} else {
		CHECK(!"root cannot attach the model uid 65534 loaded");
	}
	CHECK_ST(npushm_model_remove(dev, c.nobody_model), NPUSHM_OK);
	CHECK_ST(npushm_model_remove(dev, c.root_model), NPUSHM_OK);
	CHECK_EQ(th_shm_files(), 0);
	npushm_dev_close(dev);
}

static void load_as_other(void *arg)
{
	struct owner_ctx *c = arg;
	npushm_load_opts_t lo = { .mode = 0644 };
	npushm_dev_t *dev = th_dev();

	REQUIRE_OK(npushm_model_load(dev, c->file, c->nobody_model, &lo, NULL));
	npushm_dev_close(dev);
}

TEST(perm_a_load_never_takes_another_users_copy)
{
	npushm_dev_t *dev = th_dev();
	struct owner_ctx c = {
		.root_model = th_name("copy-root"), .nobody_model = th_name("copy-nobody"),
	};
	npushm_load_opts_t lo = { .mode = 0644 };
	npushm_load_result_t res;
	npushm_model_t *m = NULL;

	if (!th_is_root())
		th_skip("needs root to switch to uid 65534");
	c.file = th_big_model("copy.safetensors", 16 << 10, 7);
	/* uid 65534 loads the file first: its region, and the hash alias, are its */
	CHECK_EQ(th_as_nobody(load_as_other, &c), 0);
	/* the same bytes, the same mode: not deduplicated onto uid 65534's copy */
	REQUIRE_OK(npushm_model_load(dev, c.file, c.root_model, &lo, &res));
	CHECK(!res.deduplicated && !res.already_loaded);
	REQUIRE_OK(npushm_model_attach_dev(dev, c.root_model, &m));
	CHECK_EQ(npushm_model_owner_uid(m), 0);
	npushm_model_detach(m);
	/* uid 65534's name holding these bytes is not "already loaded" for root */
	CHECK_ST_MSG(npushm_model_load(dev, c.file, c.nobody_model, &lo, &res), NPUSHM_ERR_EXISTS,
		     "uid 65534");
	CHECK_ST(npushm_model_remove(dev, c.nobody_model), NPUSHM_OK);
	CHECK_ST(npushm_model_remove(dev, c.root_model), NPUSHM_OK);
	CHECK_EQ(th_shm_files(), 0);
	npushm_dev_close(dev);
}

struct replace_ctx {
	const char *file, *names[2];
};

static void count_copy(void *arg, npushm_load_stage_t stage, uint64_t done, uint64_t total)
{
	(void)done;
	(void)total;
	if (stage == NPUSHM_LOAD_COPY)
		(*(int *)arg)++;
}

static void replace_as_other(void *arg)
{
	struct replace_ctx *c = arg;
	npushm_dev_t *dev = th_dev();
	int copies = 0;
	npushm_load_opts_t lo = { .mode = 0644, .flags = NPUSHM_LOAD_REPLACE | NPUSHM_LOAD_NO_DEDUP,
				  .progress = count_copy, .progress_arg = &copies };
	npushm_load_opts_t plain = { .mode = 0644 };

	for (int i = 0; i < 2; i++) {
		/* root's name in a sticky directory: refused before a byte is copied */
		CHECK_ST_MSG(npushm_model_load(dev, c->file, c->names[i], &lo, NULL), NPUSHM_ERR_ACCESS,
			     "only they or root may replace it");
		CHECK_EQ(copies, 0);
		/* and without --replace, the advice is another name, not rm */
		CHECK_ST_MSG(npushm_model_load(dev, c->file, c->names[i], &plain, NULL), NPUSHM_ERR_EXISTS,
			     "choose another --name (only its owner (uid 0) or root");
		CHECK(strstr(npushm_last_error(), "npushm rm") == NULL);
	}
	npushm_dev_close(dev);
}

/*
 * Another user's name in the (sticky) directory is theirs: a load over it
 * says to choose another name, and a replacing load fails at once instead of
 * after copying the whole file.
 */
TEST(perm_a_load_over_another_users_name_fails_before_copying)
{
	npushm_dev_t *dev = th_dev();
	struct replace_ctx c = { .names = { th_name("theirs644"), th_name("theirs600") } };
	npushm_load_opts_t lo644 = { .mode = 0644 }, lo600 = { .mode = 0600 };
	const char *dir = getenv("NPUSHM_SHM_DIR");
	struct stat ds;

	if (!th_is_root())
		th_skip("needs root to switch to uid 65534");
	if (!th_is_kmod() && (!dir || stat(dir, &ds) || !(ds.st_mode & S_ISVTX)))
		th_skip("the directory is not sticky: anyone may replace a name there");
	c.file = th_big_model("theirs.safetensors", 64 << 10, 8);
	REQUIRE_OK(npushm_model_load(dev, c.file, c.names[0], &lo644, NULL));
	REQUIRE_OK(npushm_model_load(dev, c.file, c.names[1], &lo600, NULL));
	CHECK_EQ(th_as_nobody(replace_as_other, &c), 0);
	CHECK_ST(npushm_model_remove(dev, c.names[0]), NPUSHM_OK);
	CHECK_ST(npushm_model_remove(dev, c.names[1]), NPUSHM_OK);
	CHECK_EQ(th_shm_files(), 0);
	npushm_dev_close(dev);
}

TEST_HARNESS_MAIN
