/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * test_region.c - the region API on the backend under test: sizes (0, 1,
 * a page, many pages), mapping, naming rules, publish/open/unlink,
 * sealing, info, import, and the argument checks that must fail cleanly.
 * The same assertions hold on both backends; where they differ the test is
 * in test_backend_diff.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"

TEST(region_alloc_sizes_round_to_pages_and_are_zeroed)
{
	npushm_dev_t *dev = th_dev();
	npushm_dev_info_t di;
	uint64_t sizes[] = { 1, 4095, 4096, 4097, 3 << 20 };

	REQUIRE_OK(npushm_dev_query(dev, &di));
	CHECK(di.page_size >= 4096);
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		npushm_region_t *r = NULL;
		unsigned char *p = NULL;
		uint64_t want = (sizes[i] + di.page_size - 1) / di.page_size * di.page_size;

		REQUIRE_OK(npushm_region_alloc(dev, sizes[i], 0, &r));
		CHECK_EQ(npushm_region_size(r), want);
		CHECK(npushm_region_writable(r));
		CHECK(npushm_region_fd(r) >= 0);
		REQUIRE_OK(npushm_region_map(r, NPUSHM_PROT_READ | NPUSHM_PROT_WRITE, (void **)&p));
		for (uint64_t b = 0; b < want; b += 512)
			CHECK(p[b] == 0);
		CHECK(p[want - 1] == 0);
		p[0] = 1;
		p[want - 1] = 2;
		CHECK_ST(npushm_region_unmap(r, p), NPUSHM_OK);
		npushm_region_close(r);
	}
	npushm_dev_close(dev);
}

TEST(region_alloc_rejects_bad_arguments)
{
	npushm_dev_t *dev = th_dev();
	npushm_region_t *r = (void *)1;

	CHECK_ST_MSG(npushm_region_alloc(dev, 0, 0, &r), NPUSHM_ERR_INVALID, "0 bytes");
	CHECK(r == NULL);
	CHECK_ST(npushm_region_alloc(dev, UINT64_MAX, 0, &r), NPUSHM_ERR_INVALID);
	CHECK_ST(npushm_region_alloc(dev, 4096, 0x80, &r), NPUSHM_ERR_INVALID);
	CHECK_ST(npushm_region_alloc(NULL, 4096, 0, &r), NPUSHM_ERR_INVALID);
	CHECK_ST(npushm_region_alloc(dev, 4096, 0, NULL), NPUSHM_ERR_INVALID);
	/* Far beyond any pool or tmpfs. */
	CHECK(npushm_region_alloc(dev, 1ULL << 50, 0, &r) != NPUSHM_OK);
	CHECK(r == NULL);
	npushm_dev_close(dev);
}

TEST(region_unmap_takes_only_its_own_live_mappings)
{
	npushm_dev_t *dev = th_dev();
	npushm_region_t *r = NULL, *r2 = NULL;
	unsigned char *p = NULL, *q = NULL, *other;
	long page = sysconf(_SC_PAGESIZE);

	REQUIRE_OK(npushm_region_alloc(dev, 2 * page, 0, &r));
	REQUIRE_OK(npushm_region_alloc(dev, page, 0, &r2));
	REQUIRE_OK(npushm_region_map(r, NPUSHM_PROT_READ | NPUSHM_PROT_WRITE, (void **)&p));
	REQUIRE_OK(npushm_region_map(r, NPUSHM_PROT_READ, (void **)&q));
	other = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	REQUIRE(other != MAP_FAILED);
	other[0] = 7;
	/* an address the handle did not map: refused, and still mapped */
	CHECK_ST_MSG(npushm_region_unmap(r, other), NPUSHM_ERR_INVALID, "no mapping of region");
	CHECK(other[0] == 7);
	CHECK_ST(npushm_region_unmap(r2, p), NPUSHM_ERR_INVALID);
	CHECK_ST(npushm_region_unmap(r, p + page), NPUSHM_ERR_INVALID);
	p[0] = 1;
	CHECK_ST(npushm_region_unmap(r, p), NPUSHM_OK);
	/* twice: refused, whatever lies there now is left alone */
	CHECK_ST_MSG(npushm_region_unmap(r, p), NPUSHM_ERR_INVALID, "unmapped already");
	CHECK(q[0] == 1);
	CHECK_ST(npushm_region_unmap(r, q), NPUSHM_OK);
	munmap(other, 2 * page);
	npushm_region_close(r2);
	npushm_region_close(r);
	npushm_dev_close(dev);
}

TEST(region_destroy_functions_accept_null)
{
	npushm_region_close(NULL);
	npushm_dev_close(NULL);
	npushm_model_detach(NULL);
	npushm_region_list_free(NULL);
	CHECK_EQ(npushm_region_size(NULL), 0);
	CHECK_EQ(npushm_region_fd(NULL), -1);
	CHECK(strlen(npushm_strerror(NPUSHM_ERR_NOT_FOUND)) > 0);
	CHECK(strcmp(npushm_strerror((npushm_status_t)999), "unknown status") == 0);
}

TEST(region_publish_open_unlink_roundtrip)
{
	npushm_dev_t *dev = th_dev();
	const char *name = th_name("rt");
	npushm_region_t *a, *b = NULL;
	uint32_t *pa, *pb;

	REQUIRE_OK(npushm_region_alloc(dev, 8192, 0, &a));
	REQUIRE_OK(npushm_region_map(a, NPUSHM_PROT_READ | NPUSHM_PROT_WRITE, (void **)&pa));
	pa[0] = 0xdeadbeef;
	pa[2047] = 42;
	REQUIRE_OK(npushm_region_publish(a, name, 0600, NPUSHM_PUBLISH_PERSISTENT));
	CHECK_ST_MSG(npushm_region_publish(a, name, 0600, NPUSHM_PUBLISH_PERSISTENT), NPUSHM_ERR_EXISTS,
		     "already published");
	REQUIRE_OK(npushm_region_open(dev, name, NPUSHM_OPEN_WRITE, &b));
	CHECK_EQ(npushm_region_id(b), npushm_region_id(a));
	CHECK_EQ(npushm_region_size(b), 8192);
	CHECK(npushm_region_writable(b));
	REQUIRE_OK(npushm_region_map(b, NPUSHM_PROT_READ | NPUSHM_PROT_WRITE, (void **)&pb));
	CHECK(pb[0] == 0xdeadbeef && pb[2047] == 42);
	pb[1] = 7;
	CHECK(pa[1] == 7);	/* the same memory, not a copy */
	npushm_region_unmap(b, pb);
	npushm_region_close(b);
	REQUIRE_OK(npushm_region_open(dev, name, 0, &b));
	CHECK(!npushm_region_writable(b));
	npushm_region_close(b);
	REQUIRE_OK(npushm_name_unlink(dev, name));
	CHECK_ST_MSG(npushm_region_open(dev, name, 0, &b), NPUSHM_ERR_NOT_FOUND, name);
	CHECK(b == NULL);
	CHECK_ST(npushm_name_unlink(dev, name), NPUSHM_ERR_NOT_FOUND);
	/* The region outlives its name while mapped. */
	CHECK(pa[0] == 0xdeadbeef);
	npushm_region_unmap(a, pa);
	npushm_region_close(a);
	npushm_dev_close(dev);
}

TEST(region_names_follow_the_rules)
{
	npushm_dev_t *dev = th_dev();
	npushm_region_t *r, *r2, *o;
	char longest[NPUSHM_NAME_MAX + 1], toolong[NPUSHM_NAME_MAX + 2];
	npushm_dev_info_t di;
	const char *bad[] = { "", "has space", "tab\there", "caf\xc3\xa9", "nl\n", "\x7f" };

	REQUIRE_OK(npushm_region_alloc(dev, 4096, 0, &r));
	REQUIRE_OK(npushm_region_alloc(dev, 4096, 0, &r2));
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		CHECK_ST(npushm_region_publish(r, bad[i], 0600, 0), NPUSHM_ERR_NAME);
		CHECK_ST(npushm_region_open(dev, bad[i], 0, &o), NPUSHM_ERR_NAME);
		CHECK_ST(npushm_name_unlink(dev, bad[i]), NPUSHM_ERR_NAME);
		CHECK_ST(npushm_name_check(bad[i]), NPUSHM_ERR_NAME);
	}
	CHECK_ST(npushm_region_publish(r, NULL, 0600, 0), NPUSHM_ERR_NAME);
	memset(toolong, 'x', sizeof(toolong) - 1);
	toolong[sizeof(toolong) - 1] = '\0';
	CHECK_ST_MSG(npushm_region_publish(r, toolong, 0600, 0), NPUSHM_ERR_NAME, "longer than 255");
	/* Names up to the backend's max_name_len are fine, one more is refused. */
	REQUIRE_OK(npushm_dev_query(dev, &di));
	CHECK_EQ(di.max_name_len, th_is_kmod() ? NPUSHM_NAME_MAX : NPUSHM_NAME_MAX - 7);
	snprintf(longest, sizeof(longest), "%s", th_name("1"));
	memset(longest + strlen(longest), 'y', di.max_name_len - strlen(longest));
	longest[di.max_name_len] = '\0';
	CHECK_ST(npushm_region_publish(r, longest, 0600, NPUSHM_PUBLISH_PERSISTENT), NPUSHM_OK);
	CHECK_ST(npushm_name_unlink(dev, longest), NPUSHM_OK);
	if (di.max_name_len < NPUSHM_NAME_MAX) {
		memset(toolong, 'z', di.max_name_len + 1);
		toolong[di.max_name_len + 1] = '\0';
		CHECK_ST(npushm_region_publish(r, toolong, 0600, 0), NPUSHM_ERR_NAME);
	}
	/* Printable punctuation, '/' and '%' included, round-trips. */
	snprintf(longest, sizeof(longest), "%s/a%%2F~!", th_name("p"));
	REQUIRE_OK(npushm_region_publish(r2, longest, 0600, NPUSHM_PUBLISH_PERSISTENT));
	REQUIRE_OK(npushm_region_open(dev, longest, 0, &o));
	CHECK_EQ(npushm_region_id(o), npushm_region_id(r2));
	npushm_region_close(o);
	CHECK_ST(npushm_region_open(dev, "x", 0, &o), NPUSHM_ERR_NOT_FOUND);
	CHECK_ST(npushm_name_unlink(dev, longest), NPUSHM_OK);
	npushm_region_close(r2);
	npushm_region_close(r);
	npushm_dev_close(dev);
}

TEST(region_publish_rejects_bad_modes_and_flags)
{
	npushm_dev_t *dev = th_dev();
	const char *name = th_name("mode");
	npushm_region_t *r, *o;

	REQUIRE_OK(npushm_region_alloc(dev, 4096, 0, &r));
	CHECK_ST_MSG(npushm_region_publish(r, name, 0755, 0), NPUSHM_ERR_INVALID, "0666");
	CHECK_ST(npushm_region_publish(r, name, 01600, 0), NPUSHM_ERR_INVALID);
	CHECK_ST(npushm_region_publish(r, name, 0600, 0x10), NPUSHM_ERR_INVALID);
	CHECK_ST(npushm_region_publish(NULL, name, 0600, 0), NPUSHM_ERR_INVALID);
	CHECK_ST(npushm_region_open(dev, name, 0, &o), NPUSHM_ERR_NOT_FOUND);
	CHECK_ST(npushm_region_open(dev, name, 0x8, &o), NPUSHM_ERR_INVALID);
	npushm_region_close(r);
	npushm_dev_close(dev);
}

/*
 * The mode belongs to the region, so a publish sets it for all its names;
 * a publish that fails must leave it as it was: a region published 0600
 * stays 0600 when publishing it 0666 under a taken name fails.
 */
TEST(region_failed_publish_keeps_the_mode)
{
	npushm_dev_t *dev = th_dev();
	const char *name = th_name("keep"), *taken = th_name("taken");
	npushm_region_info_t info;
	npushm_region_t *r, *o;

	REQUIRE_OK(npushm_region_alloc(dev, 4096, 0, &r));
	REQUIRE_OK(npushm_region_alloc(dev, 4096, 0, &o));
	REQUIRE_OK(npushm_region_publish(r, name, 0600, 0));
	REQUIRE_OK(npushm_region_publish(o, taken, 0600, 0));
	CHECK_ST(npushm_region_publish(r, taken, 0666, 0), NPUSHM_ERR_EXISTS);
	REQUIRE_OK(npushm_region_info(r, &info));
	CHECK_EQ(info.mode, 0600);
	npushm_region_close(o);
	REQUIRE_OK(npushm_region_open(dev, taken, 0, &o));
	CHECK_ST(npushm_region_info(o, &info), NPUSHM_OK);
	CHECK_EQ(info.mode, 0600);
	CHECK_ST(npushm_name_unlink(dev, name), NPUSHM_OK);
	CHECK_ST(npushm_name_unlink(dev, taken), NPUSHM_OK);
	npushm_region_close(o);
	npushm_region_close(r);
	npushm_dev_close(dev);
}

TEST(region_read_only_handles_cannot_write_seal_or_publish_unsealed)
{
	npushm_dev_t *dev = th_dev();
	const char *name = th_name("ro"), *name2 = th_name("ro2");
	npushm_region_t *r, *ro;
	void *p = NULL;

	REQUIRE_OK(npushm_region_alloc(dev, 4096, 0, &r));
	REQUIRE_OK(npushm_region_publish(r, name, 0644, NPUSHM_PUBLISH_PERSISTENT));
	REQUIRE_OK(npushm_region_open(dev, name, 0, &ro));
	CHECK_ST_MSG(npushm_region_map(ro, NPUSHM_PROT_READ | NPUSHM_PROT_WRITE, &p), NPUSHM_ERR_ACCESS,
		     "read-only handle");
	CHECK(p == NULL);
	CHECK_ST(npushm_region_seal(ro), NPUSHM_ERR_ACCESS);
	CHECK_ST_MSG(npushm_region_publish(ro, name2, 0644, 0), NPUSHM_ERR_ACCESS, "read-write handle");
	/* Read-only mapping works and is really read-only at the kernel level. */
	REQUIRE_OK(npushm_region_map(ro, NPUSHM_PROT_READ, &p));
	CHECK(mprotect(p, 4096, PROT_READ | PROT_WRITE) != 0);
	npushm_region_unmap(ro, p);
	/* The raw descriptor refuses a writable shared mapping too. */
	CHECK(mmap(NULL, 4096, PROT_WRITE, MAP_SHARED, npushm_region_fd(ro), 0) == MAP_FAILED);
	npushm_region_close(ro);
	CHECK_ST(npushm_name_unlink(dev, name), NPUSHM_OK);
	npushm_region_close(r);
	npushm_dev_close(dev);
}

TEST(region_seal_blocks_writable_maps_and_allows_sealed_publish)
{
	npushm_dev_t *dev = th_dev();
	const char *name = th_name("seal"), *name2;
	npushm_region_info_t info;
	npushm_region_t *r, *ro;
	char *p;

	REQUIRE_OK(npushm_region_alloc(dev, 4096, 0, &r));
	REQUIRE_OK(npushm_region_map(r, NPUSHM_PROT_READ | NPUSHM_PROT_WRITE, (void **)&p));
	strcpy(p, "weights");
	REQUIRE_OK(npushm_region_unmap(r, p));
	REQUIRE_OK(npushm_region_info(r, &info));
	CHECK(!(info.flags & NPUSHM_REGION_SEALED));
	REQUIRE_OK(npushm_region_seal(r));
	CHECK_ST(npushm_region_seal(r), NPUSHM_OK);	/* twice is fine */
	REQUIRE_OK(npushm_region_info(r, &info));
	CHECK(info.flags & NPUSHM_REGION_SEALED);
	CHECK_ST_MSG(npushm_region_map(r, NPUSHM_PROT_READ | NPUSHM_PROT_WRITE, (void **)&p),
		     NPUSHM_ERR_SEALED, "sealed");
	REQUIRE_OK(npushm_region_map(r, NPUSHM_PROT_READ, (void **)&p));
	CHECK(strcmp(p, "weights") == 0);
	npushm_region_unmap(r, p);
	/* A sealed region may be published through a read-only handle. */
	REQUIRE_OK(npushm_region_publish(r, name, 0644, NPUSHM_PUBLISH_PERSISTENT));
	REQUIRE_OK(npushm_region_open(dev, name, 0, &ro));
	name2 = th_name("seal2");
	CHECK_ST(npushm_region_publish(ro, name2, 0644, NPUSHM_PUBLISH_PERSISTENT), NPUSHM_OK);
	CHECK_ST(npushm_name_unlink(dev, name2), NPUSHM_OK);
	npushm_region_close(ro);
	npushm_region_close(r);
	CHECK_ST(npushm_name_unlink(dev, name), NPUSHM_OK);
	npushm_dev_close(dev);
}

TEST(region_info_reports_size_owner_names_and_mode)
{
	npushm_dev_t *dev = th_dev();
	const char *name = th_name("info");
	npushm_region_info_t info;
	npushm_region_t *r;

	REQUIRE_OK(npushm_region_alloc(dev, 12288, 0, &r));
	REQUIRE_OK(npushm_region_info(r, &info));
	CHECK_EQ(info.size, 12288);
	CHECK_EQ(info.id, npushm_region_id(r));
	CHECK_EQ(info.owner_uid, geteuid());
	CHECK_EQ(info.names, 0);
	CHECK_EQ(info.mode, 0);
	CHECK(info.flags & NPUSHM_REGION_WRITABLE);
	CHECK(!(info.flags & NPUSHM_REGION_NAMED));
	CHECK_EQ(info.name[0], '\0');
	REQUIRE_OK(npushm_region_publish(r, name, 0640, NPUSHM_PUBLISH_PERSISTENT));
	REQUIRE_OK(npushm_region_info(r, &info));
	CHECK_EQ(info.names, 1);
	CHECK_EQ(info.mode, 0640);
	CHECK(info.flags & NPUSHM_REGION_NAMED);
	CHECK(info.flags & NPUSHM_REGION_PERSISTENT);
	CHECK(strcmp(info.name, name) == 0);
	CHECK_ST(npushm_region_info(NULL, &info), NPUSHM_ERR_INVALID);
	CHECK_ST(npushm_name_unlink(dev, name), NPUSHM_OK);
	REQUIRE_OK(npushm_region_info(r, &info));
	CHECK_EQ(info.names, 0);
	npushm_region_close(r);
	npushm_dev_close(dev);
}

TEST(region_import_fd_accepts_regions_and_rejects_other_files)
{
	npushm_dev_t *dev = th_dev();
	npushm_region_t *r, *i2 = NULL;
	char path[512];
	int fds[2], fd;

	REQUIRE_OK(npushm_region_alloc(dev, 4096, 0, &r));
	REQUIRE_OK(npushm_region_import_fd(dev, npushm_region_fd(r), &i2));
	CHECK_EQ(npushm_region_id(i2), npushm_region_id(r));
	CHECK_EQ(npushm_region_size(i2), 4096);
	CHECK(npushm_region_fd(i2) != npushm_region_fd(r));	/* a duplicate */
	npushm_region_close(i2);
	CHECK(fcntl(npushm_region_fd(r), F_GETFD) >= 0);	/* ours stays open */
	CHECK_ST(npushm_region_import_fd(dev, -1, &i2), NPUSHM_ERR_INVALID);
	CHECK_ST(npushm_region_import_fd(dev, 999, &i2), NPUSHM_ERR_INVALID);
	REQUIRE(pipe(fds) == 0);
	CHECK_ST_MSG(npushm_region_import_fd(dev, fds[0], &i2), NPUSHM_ERR_INVALID, "not an npushm");
	close(fds[0]);
	close(fds[1]);
	snprintf(path, sizeof(path), "%s/plain", th_tmpdir());
	fd = open(path, O_RDWR | O_CREAT, 0600);
	REQUIRE(fd >= 0 && ftruncate(fd, 4096) == 0);
	CHECK_ST_MSG(npushm_region_import_fd(dev, fd, &i2), NPUSHM_ERR_INVALID, "not an npushm");
	CHECK(i2 == NULL);
	close(fd);
	npushm_region_close(r);
	npushm_dev_close(dev);
}

/*
 * Anyone may create files in the directory: a FIFO under a name (posix:
 * "npushm.NAME") would block an open(2) of it until a writer came. Opening,
 * attaching, loading over and removing such a name fail at once instead.
 */
TEST(region_a_fifo_under_a_name_is_refused_without_blocking)
{
	const char *dir = getenv(th_is_kmod() ? "NPUSHM_DIR" : "NPUSHM_SHM_DIR");
	const char *name = th_name("fifo");
	npushm_dev_t *dev = th_dev();
	npushm_region_t *r = NULL;
	npushm_model_t *m = NULL;
	char path[512];

	REQUIRE(dir);
	snprintf(path, sizeof(path), "%s/%s%s", dir, th_is_kmod() ? "" : "npushm.", name);
	if (mkfifo(path, 0666))
		th_skip("cannot make a FIFO in %s: %s", dir, strerror(errno));
	alarm(20);	/* a blocked open fails the test instead of hanging it */
	CHECK_ST_MSG(npushm_region_open(dev, name, 0, &r), NPUSHM_ERR_INVALID, "not a region file");
	CHECK_ST_MSG(npushm_region_open(dev, name, NPUSHM_OPEN_WRITE, &r), NPUSHM_ERR_INVALID,
		     "not a region file");
	CHECK(r == NULL);
	CHECK_ST(npushm_model_attach_dev(dev, name, &m), NPUSHM_ERR_INVALID);
	CHECK_ST(npushm_model_load(dev, th_big_model("f.safetensors", 4096, 1), name, NULL, NULL),
		 NPUSHM_ERR_EXISTS);
	CHECK_ST(npushm_model_remove(dev, name), NPUSHM_ERR_INVALID);
	alarm(0);
	CHECK(unlink(path) == 0);
	npushm_dev_close(dev);
}

TEST(region_many_regions_and_no_descriptor_leaks)
{
	npushm_dev_t *dev = th_dev();
	npushm_region_t *r[64];
	int fds0 = th_fd_count();
	uint64_t used0 = th_pool_used(dev);

	for (int i = 0; i < 64; i++)
		REQUIRE_OK(npushm_region_alloc(dev, 65536, 0, &r[i]));
	CHECK(th_pool_used(dev) >= used0 + 64 * 65536);
	CHECK_EQ(th_fd_count(), fds0 + 64);
	for (int i = 0; i < 64; i++)
		npushm_region_close(r[i]);
	CHECK_EQ(th_fd_count(), fds0);
	CHECK_EQ(th_pool_used(dev), used0);
	npushm_dev_close(dev);
}

TEST(region_dev_open_rejects_unknown_backends)
{
	npushm_dev_t *dev = (void *)1;

	setenv("NPUSHM_BACKEND", "bogus", 1);
	CHECK_ST_MSG(npushm_dev_open(NPUSHM_BACKEND_AUTO, &dev), NPUSHM_ERR_INVALID, "'bogus'");
	CHECK(dev == NULL);
	CHECK_ST(npushm_dev_open((npushm_backend_t)7, &dev), NPUSHM_ERR_INVALID);
	CHECK_ST(npushm_dev_open(NPUSHM_BACKEND_AUTO, NULL), NPUSHM_ERR_INVALID);
	/* An explicit choice wins over the environment. */
	REQUIRE_OK(npushm_dev_open(NPUSHM_BACKEND_POSIX, &dev));
	CHECK_EQ(npushm_dev_backend(dev), NPUSHM_BACKEND_POSIX);
	npushm_dev_close(dev);
	if (access("/dev/npushm", F_OK) != 0) {
		CHECK_ST_MSG(npushm_dev_open(NPUSHM_BACKEND_KMOD, &dev), NPUSHM_ERR_NO_DEVICE,
			     "modprobe npushm");
	}
	/* kmod needs an npushm instance where NPUSHM_DIR says; AUTO then picks posix. */
	setenv("NPUSHM_DIR", th_tmpdir(), 1);
	CHECK_ST_MSG(npushm_dev_open(NPUSHM_BACKEND_KMOD, &dev), NPUSHM_ERR_NO_DEVICE,
		     access("/dev/npushm", F_OK) ? "modprobe npushm" : "is not an npushm filesystem");
	CHECK(dev == NULL);
	unsetenv("NPUSHM_BACKEND");
	REQUIRE_OK(npushm_dev_open(NPUSHM_BACKEND_AUTO, &dev));
	CHECK_EQ(npushm_dev_backend(dev), NPUSHM_BACKEND_POSIX);
	npushm_dev_close(dev);
	setenv("NPUSHM_SHM_DIR", "/nonexistent/dir", 1);
	CHECK_ST_MSG(npushm_dev_open(NPUSHM_BACKEND_POSIX, &dev), NPUSHM_ERR_NO_DEVICE,
		     "/nonexistent/dir");
}

TEST(region_dev_query_reports_capacity_and_features)
{
	npushm_dev_t *dev = th_dev();
	npushm_dev_info_t di;
	npushm_region_t *r;
	uint64_t before;

	REQUIRE_OK(npushm_dev_query(dev, &di));
	CHECK(di.capacity > 0);
	CHECK(di.features & NPUSHM_FEATURE_NAMES);
	CHECK(di.features & NPUSHM_FEATURE_SEAL);
	CHECK_EQ(di.max_name_len, th_is_kmod() ? NPUSHM_NAME_MAX : NPUSHM_NAME_MAX - 7);
	before = di.in_use;
	REQUIRE_OK(npushm_region_alloc(dev, 1 << 20, 0, &r));
	REQUIRE_OK(npushm_dev_query(dev, &di));
	CHECK(di.in_use >= before + (1 << 20));
	if (th_is_kmod()) {
		CHECK_EQ(di.abi_version, 2);
		CHECK(di.features & NPUSHM_FEATURE_SEAL_ENFORCED);
		CHECK(di.features & NPUSHM_FEATURE_WATCH);
		CHECK(di.regions >= 1);
	} else {
		CHECK(!(di.features & NPUSHM_FEATURE_SEAL_ENFORCED));
		CHECK(!(di.features & NPUSHM_FEATURE_DMABUF));
		CHECK(!(di.features & NPUSHM_FEATURE_WATCH));
	}
	npushm_region_close(r);
	CHECK_ST(npushm_dev_query(dev, NULL), NPUSHM_ERR_INVALID);
	npushm_dev_close(dev);
}

static void *thread_open(void *arg)
{
	for (int i = 0; i < 20; i++) {
		npushm_dev_t *dev = NULL;

		if (npushm_dev_open(NPUSHM_BACKEND_AUTO, &dev) != NPUSHM_OK)
			return (void *)1;
		npushm_dev_close(dev);
	}
	return arg;
}

/* Opening logs (at the level of $NPUSHM_LOG, read once): under the
 * sanitizers suite's ThreadSanitizer build, no data race between threads
 * that open devices at once. */
TEST(region_devices_open_from_threads_at_once)
{
	pthread_t t[4];
	void *rv;

	for (int i = 0; i < 4; i++)
		REQUIRE(pthread_create(&t[i], NULL, thread_open, NULL) == 0);
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], &rv);
		CHECK(rv == NULL);
	}
}

static void *thread_alloc(void *arg)
{
	npushm_dev_t *dev = arg;

	for (int i = 0; i < 50; i++) {
		npushm_region_t *r;
		char *p;

		if (npushm_region_alloc(dev, 8192, 0, &r) != NPUSHM_OK)
			return (void *)1;
		if (npushm_region_map(r, NPUSHM_PROT_READ | NPUSHM_PROT_WRITE, (void **)&p) == NPUSHM_OK) {
			p[8191] = 1;
			npushm_region_unmap(r, p);
		}
		npushm_region_close(r);
	}
	/* A failure here must leave a per-thread message. */
	if (npushm_region_alloc(dev, 0, 0, &(npushm_region_t *){ NULL }) != NPUSHM_ERR_INVALID ||
	    !strstr(npushm_last_error(), "0 bytes"))
		return (void *)1;
	return NULL;
}

TEST(region_device_is_shared_between_threads)
{
	npushm_dev_t *dev = th_dev();
	pthread_t t[4];
	void *rv;

	npushm_name_check("");	/* leave an error in this thread */
	for (int i = 0; i < 4; i++)
		REQUIRE(pthread_create(&t[i], NULL, thread_alloc, dev) == 0);
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], &rv);
		CHECK(rv == NULL);
	}
	CHECK(strstr(npushm_last_error(), "empty") != NULL);	/* untouched by the others */
	npushm_dev_close(dev);
}

TEST(region_handles_keep_their_device_open)
{
	npushm_dev_t *dev = th_dev();
	const char *name = th_name("devref");
	npushm_region_t *r, *o;

	REQUIRE_OK(npushm_region_alloc(dev, 4096, 0, &r));
	npushm_dev_close(dev);	/* the region holds it */
	REQUIRE_OK(npushm_region_publish(r, name, 0600, NPUSHM_PUBLISH_PERSISTENT));
	dev = th_dev();
	REQUIRE_OK(npushm_region_open(dev, name, 0, &o));
	CHECK_EQ(npushm_region_id(o), npushm_region_id(r));
	npushm_region_close(o);
	CHECK_ST(npushm_name_unlink(dev, name), NPUSHM_OK);
	npushm_region_close(r);
	npushm_dev_close(dev);
}

struct log_seen {
	int count;
	char last[512];
};

static void log_cb(void *arg, npushm_log_level_t level, const char *msg)
{
	struct log_seen *s = arg;

	if (level == NPUSHM_LOG_DEBUG) {
		s->count++;
		snprintf(s->last, sizeof(s->last), "%s", msg);
	}
}

TEST(misc_log_goes_to_the_callback_or_to_stderr_only_when_asked)
{
	npushm_dev_t *dev = th_dev();
	struct log_seen seen = { 0 };
	npushm_region_t *r;
	int pfd[2];
	char buf[4096] = "";
	ssize_t n;

	npushm_log_set(log_cb, &seen, NPUSHM_LOG_DEBUG);
	CHECK_ST(npushm_region_alloc(dev, 0, 0, &r), NPUSHM_ERR_INVALID);
	CHECK(seen.count >= 1 && strstr(seen.last, "0 bytes"));
	/* Back to the default: silent unless NPUSHM_LOG says otherwise. */
	REQUIRE(pipe(pfd) == 0);
	REQUIRE(dup2(pfd[1], 2) == 2);
	unsetenv("NPUSHM_LOG");
	npushm_log_set(NULL, NULL, NPUSHM_LOG_NONE);
	CHECK_ST(npushm_region_alloc(dev, 0, 0, &r), NPUSHM_ERR_INVALID);
	setenv("NPUSHM_LOG", "debug", 1);
	npushm_log_set(NULL, NULL, NPUSHM_LOG_NONE);
	CHECK_ST(npushm_region_open(dev, "no-such-region-here", 0, &r), NPUSHM_ERR_NOT_FOUND);
	/* a value that is no level is said, not silently taken for "none" */
	setenv("NPUSHM_LOG", "verbose", 1);
	npushm_log_set(NULL, NULL, NPUSHM_LOG_NONE);
	unsetenv("NPUSHM_LOG");
	npushm_log_set(NULL, NULL, NPUSHM_LOG_NONE);
	close(2);
	close(pfd[1]);
	n = read(pfd[0], buf, sizeof(buf) - 1);
	buf[n > 0 ? n : 0] = '\0';
	CHECK(strstr(buf, "0 bytes") == NULL);	/* nothing printed while NPUSHM_LOG was unset */
	CHECK(strstr(buf, "libnpushm debug: failure: no region is published as 'no-such-region-here'") != NULL);
	CHECK(strstr(buf, "libnpushm: NPUSHM_LOG is 'verbose', which is no log level; use error, warn, info or debug (logging nothing)") != NULL);
	npushm_dev_close(dev);
}

TEST_HARNESS_MAIN
