/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * test_list.c - npushm_dev_list_regions(): published regions appear with
 * all their names, sizes, seal state and owner; the number of processes
 * mapping a region follows children that map and exit.
 */
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

static const npushm_region_entry_t *find(const npushm_region_list_t *l, uint64_t id)
{
	for (size_t i = 0; i < npushm_region_list_count(l); i++)
		if (npushm_region_list_at(l, i)->id == id)
			return npushm_region_list_at(l, i);
	return NULL;
}

TEST(list_shows_names_sizes_seals_and_mappers)
{
	npushm_dev_t *dev = th_dev();
	const char *a = th_name("la"), *b = th_name("lb");
	const npushm_region_entry_t *e;
	npushm_region_list_t *l;
	npushm_region_t *r;
	int go[2], ready[2];
	pid_t kids[3];
	uint64_t id;
	char c;

	REQUIRE_OK(npushm_region_alloc(dev, 3 * 4096, 0, &r));
	REQUIRE_OK(npushm_region_publish(r, a, 0640, NPUSHM_PUBLISH_PERSISTENT));
	REQUIRE_OK(npushm_region_publish(r, b, 0640, NPUSHM_PUBLISH_PERSISTENT));
	REQUIRE_OK(npushm_region_seal(r));
	REQUIRE_OK(npushm_dev_list_regions(dev, &l));
	e = find(l, npushm_region_id(r));
	REQUIRE(e);
	CHECK_EQ(e->size, 3 * 4096);
	CHECK(e->flags & NPUSHM_REGION_SEALED);
	CHECK(e->flags & NPUSHM_REGION_NAMED);
	CHECK_EQ(e->owner_uid, geteuid());
	CHECK_EQ(e->name_count, 2);
	for (size_t k = 0; k < e->name_count; k++)
		CHECK(!strcmp(e->names[k].name, a) || !strcmp(e->names[k].name, b));
	CHECK_EQ(e->mappers, 0);
	npushm_region_list_free(l);

	REQUIRE(pipe(go) == 0 && pipe(ready) == 0);
	for (int i = 0; i < 3; i++) {
		kids[i] = fork();
		if (kids[i] == 0) {
			npushm_dev_t *d2 = th_dev();
			npushm_region_t *o;
			void *p;

			REQUIRE_OK(npushm_region_open(d2, a, 0, &o));
			REQUIRE_OK(npushm_region_map(o, NPUSHM_PROT_READ, &p));
			CHECK(write(ready[1], "r", 1) == 1);
			CHECK(read(go[0], &c, 1) == 1);
			_exit(0);
		}
	}
	for (int i = 0; i < 3; i++)
		REQUIRE(read(ready[0], &c, 1) == 1);
	REQUIRE_OK(npushm_dev_list_regions(dev, &l));
	e = find(l, npushm_region_id(r));
	REQUIRE(e);
	CHECK_EQ(e->mappers, 3);
	CHECK_EQ(e->mappings, 3);
	CHECK_EQ(e->mapped_bytes, 3 * 3 * 4096);
	npushm_region_list_free(l);
	CHECK(write(go[1], "ggg", 3) == 3);
	for (int i = 0; i < 3; i++)
		waitpid(kids[i], NULL, 0);
	REQUIRE_OK(npushm_dev_list_regions(dev, &l));
	e = find(l, npushm_region_id(r));
	REQUIRE(e);
	CHECK_EQ(e->mappers, 0);
	npushm_region_list_free(l);

	CHECK_ST(npushm_name_unlink(dev, a), NPUSHM_OK);
	CHECK_ST(npushm_name_unlink(dev, b), NPUSHM_OK);
	id = npushm_region_id(r);
	npushm_region_close(r);
	REQUIRE_OK(npushm_dev_list_regions(dev, &l));
	CHECK(find(l, id) == NULL);
	npushm_region_list_free(l);
	CHECK_ST(npushm_dev_list_regions(dev, NULL), NPUSHM_ERR_INVALID);
	npushm_dev_close(dev);
}

TEST_HARNESS_MAIN
