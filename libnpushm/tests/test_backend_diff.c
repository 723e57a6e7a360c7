/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * test_backend_diff.c - where the posix backend is weaker than the module,
 * and where the two now behave the same (both are directories of files).
 *
 * Each test runs on both backends and asserts the backend's own behaviour:
 * on kmod the guarantee holds, on posix the documented weakness shows (so a
 * change in either is noticed). docs/libnpushm.md, "POSIX backend", lists
 * the same items in the same order.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/npushm.h>
#include "npushm_test_uapi.h"

#include "harness.h"

static int wait_child(pid_t pid)
{
	int status;

	waitpid(pid, &status, 0);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* 1. A seal the owner can undo (posix) versus one nobody can (kmod). */
TEST(diff_seal_cannot_be_undone_on_kmod_but_can_on_posix)
{
	npushm_dev_t *dev = th_dev();
	npushm_region_t *r;
	char path[64], *w;
	int fd;

	REQUIRE_OK(npushm_region_alloc(dev, 4096, 0, &r));
	REQUIRE_OK(npushm_region_seal(r));
	/* A read-only mapping through the read-write handle: can it become writable? */
	REQUIRE_OK(npushm_region_map(r, NPUSHM_PROT_READ, (void **)&w));
	CHECK_EQ(mprotect(w, 4096, PROT_READ | PROT_WRITE) == 0, !th_is_kmod());
	munmap(w, 4096);
	/* Try everything a process holding a read-write handle can do. */
	w = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, npushm_region_fd(r), 0);
	if (th_is_kmod()) {
		CHECK(w == MAP_FAILED && errno == EPERM);
		CHECK(fchmod(npushm_region_fd(r), 0600) != 0 ||
		      mmap(NULL, 4096, PROT_WRITE, MAP_SHARED, npushm_region_fd(r), 0) == MAP_FAILED);
	} else {
		/* The tmpfs file's write bits are the seal: the owner restores them. */
		if (w == MAP_FAILED) {
			CHECK(fchmod(npushm_region_fd(r), 0600) == 0);
			snprintf(path, sizeof(path), "/proc/self/fd/%d", npushm_region_fd(r));
			fd = open(path, O_RDWR);
			REQUIRE(fd >= 0);
			w = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
			close(fd);
		}
		REQUIRE(w != MAP_FAILED);
		strcpy(w, "changed after the seal");
		CHECK(strcmp(w, "changed after the seal") == 0);
		munmap(w, 4096);
	}
	npushm_region_close(r);
	npushm_dev_close(dev);
}

/* 2. Sealing while a writable mapping exists: EBUSY (kmod), allowed (posix). */
TEST(diff_seal_with_a_writable_mapping)
{
	npushm_dev_t *dev = th_dev();
	npushm_region_t *r;
	char *w;

	REQUIRE_OK(npushm_region_alloc(dev, 4096, 0, &r));
	REQUIRE_OK(npushm_region_map(r, NPUSHM_PROT_READ | NPUSHM_PROT_WRITE, (void **)&w));
	if (th_is_kmod()) {
		CHECK_ST_MSG(npushm_region_seal(r), NPUSHM_ERR_BUSY, "writable mapping");
		npushm_region_unmap(r, w);
		CHECK_ST(npushm_region_seal(r), NPUSHM_OK);
	} else {
		CHECK_ST(npushm_region_seal(r), NPUSHM_OK);
		strcpy(w, "still writable");	/* the old mapping keeps working */
		CHECK(strcmp(w, "still writable") == 0);
		npushm_region_unmap(r, w);
	}
	npushm_region_close(r);
	npushm_dev_close(dev);
}

/* 3. A pin (here a page vmsplice()d into a pipe) blocks the seal on kmod only. */
TEST(diff_seal_and_pins)
{
	npushm_dev_t *dev = th_dev();
	npushm_region_info_t info;
	npushm_region_list_t *l;
	npushm_region_t *r;
	struct iovec iov;
	int pipefd[2];
	char *w, buf[4096];

	REQUIRE_OK(npushm_region_alloc(dev, 8192, 0, &r));
	REQUIRE_OK(npushm_region_publish(r, th_name("pin"), 0600, NPUSHM_PUBLISH_PERSISTENT));
	REQUIRE_OK(npushm_region_map(r, NPUSHM_PROT_READ | NPUSHM_PROT_WRITE, (void **)&w));
	memset(w, 'p', 4096);
	REQUIRE(pipe(pipefd) == 0);
	iov.iov_base = w;
	iov.iov_len = 4096;
	REQUIRE(vmsplice(pipefd[1], &iov, 1, 0) == 4096);
	npushm_region_unmap(r, w);
	REQUIRE_OK(npushm_dev_list_regions(dev, &l));
	for (size_t i = 0; i < npushm_region_list_count(l); i++) {
		const npushm_region_entry_t *e = npushm_region_list_at(l, i);

		if (e->id == npushm_region_id(r))
			CHECK(e->pinned_bytes == (th_is_kmod() ? 4096 : UINT64_MAX));
	}
	npushm_region_list_free(l);
	if (th_is_kmod()) {
		CHECK_ST_MSG(npushm_region_seal(r), NPUSHM_ERR_BUSY, "pin");
		CHECK(read(pipefd[0], buf, sizeof(buf)) == 4096);
		CHECK_ST(npushm_region_seal(r), NPUSHM_OK);
	} else {
		CHECK_ST(npushm_region_seal(r), NPUSHM_OK);
	}
	REQUIRE_OK(npushm_region_info(r, &info));
	CHECK(info.flags & NPUSHM_REGION_SEALED);
	CHECK_ST(npushm_name_unlink(dev, info.name), NPUSHM_OK);
	close(pipefd[0]);
	close(pipefd[1]);
	npushm_region_close(r);
	npushm_dev_close(dev);
}

/* 4. Names are files on both: they persist, and a new IPC namespace sees them. */
TEST(same_names_persist_and_ignore_ipc_namespaces)
{
	npushm_dev_t *dev = th_dev();
	const char *name = th_name("ipcns");
	npushm_region_t *r, *o = NULL;
	pid_t pid;

	REQUIRE_OK(npushm_region_alloc(dev, 4096, 0, &r));
	/* Without PERSISTENT too: the flag is accepted and names persist anyway. */
	REQUIRE_OK(npushm_region_publish(r, name, 0600, 0));
	npushm_region_close(r);
	CHECK_ST(npushm_region_open(dev, name, 0, &o), NPUSHM_OK);
	npushm_region_close(o);
	if (th_is_root()) {
		pid = fork();
		if (pid == 0) {
			npushm_dev_t *d2;

			REQUIRE(unshare(CLONE_NEWIPC) == 0);
			d2 = th_dev();
			CHECK_ST(npushm_region_open(d2, name, 0, &o), NPUSHM_OK);
			npushm_region_close(o);
			npushm_dev_close(d2);
			_exit(0);
		}
		CHECK_EQ(wait_child(pid), 0);
	}
	CHECK_ST(npushm_name_unlink(dev, name), NPUSHM_OK);
	npushm_dev_close(dev);
}

/* 5. dma-buf export: kmod only; the importer sees the region's bytes. */
TEST(diff_dmabuf_export)
{
	npushm_dev_t *dev = th_dev();
	npushm_region_t *r;
	unsigned char *p, *q;
	int fd = -1;

	REQUIRE_OK(npushm_region_alloc(dev, 1 << 16, 0, &r));
	REQUIRE_OK(npushm_region_map(r, NPUSHM_PROT_READ | NPUSHM_PROT_WRITE, (void **)&p));
	for (int i = 0; i < 1 << 16; i++)
		p[i] = (unsigned char)(i * 7);
	if (!th_is_kmod()) {
		CHECK_ST_MSG(npushm_region_export_dmabuf(r, 0, &fd), NPUSHM_ERR_UNSUPPORTED, "dma-buf");
		CHECK_EQ(fd, -1);
		goto out;
	}
	REQUIRE_OK(npushm_region_export_dmabuf(r, 0, &fd));
	q = mmap(NULL, 1 << 16, PROT_READ, MAP_SHARED, fd, 0);
	REQUIRE(q != MAP_FAILED);
	CHECK(memcmp(p, q, 1 << 16) == 0);
	CHECK(mmap(NULL, 1 << 16, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) == MAP_FAILED);
	munmap(q, 1 << 16);
	{
		/* The selftests' importer module maps it like a device driver does. */
		int imp = open(NPUSHM_TEST_DEVICE_PATH, O_RDWR);

		if (imp >= 0) {
			struct npushm_test_import ti = { .fd = fd, .op = NPUSHM_TEST_READ_SUM,
							 .offset = 0, .length = 1 << 16 };
			uint64_t sum = 0;

			for (int i = 0; i < 1 << 16; i++)
				sum += p[i];
			CHECK(ioctl(imp, NPUSHM_TEST_IOC_IMPORT, &ti) == 0);
			CHECK_EQ(ti.value, sum);
			CHECK_EQ(ti.dma_size, 1 << 16);
			close(imp);
		} else {
			th_diag("no importer at %s (%s): checked the dma-buf by mmap only",
				NPUSHM_TEST_DEVICE_PATH, strerror(errno));
		}
	}
	close(fd);
out:
	npushm_region_unmap(r, p);
	npushm_region_close(r);
	npushm_dev_close(dev);
}

/* 6. The mode belongs to the region on both (a file's): the last publish wins. */
TEST(same_modes_per_region)
{
	npushm_dev_t *dev = th_dev();
	const char *a = th_name("modeA"), *b = th_name("modeB");
	npushm_region_list_t *list;
	npushm_region_t *r;
	uint32_t ma = 0, mb = 0;

	REQUIRE_OK(npushm_region_alloc(dev, 4096, 0, &r));
	REQUIRE_OK(npushm_region_publish(r, a, 0600, NPUSHM_PUBLISH_PERSISTENT));
	REQUIRE_OK(npushm_region_publish(r, b, 0644, NPUSHM_PUBLISH_PERSISTENT));
	REQUIRE_OK(npushm_dev_list_regions(dev, &list));
	for (size_t i = 0; i < npushm_region_list_count(list); i++) {
		const npushm_region_entry_t *e = npushm_region_list_at(list, i);

		for (size_t k = 0; k < e->name_count; k++) {
			if (!strcmp(e->names[k].name, a))
				ma = e->names[k].mode;
			if (!strcmp(e->names[k].name, b))
				mb = e->names[k].mode;
		}
	}
	npushm_region_list_free(list);
	CHECK_EQ(mb, 0644);
	CHECK_EQ(ma, 0644);
	CHECK_ST(npushm_name_unlink(dev, a), NPUSHM_OK);
	CHECK_ST(npushm_name_unlink(dev, b), NPUSHM_OK);
	npushm_region_close(r);
	npushm_dev_close(dev);
}

/* 7. Handle and mapping counts: exact (kmod), unknown (posix). */
TEST(diff_handle_and_mapping_counts)
{
	npushm_dev_t *dev = th_dev();
	npushm_region_info_t info;
	npushm_region_t *r, *r2;
	void *p;

	REQUIRE_OK(npushm_region_alloc(dev, 8192, 0, &r));
	REQUIRE_OK(npushm_region_import_fd(dev, npushm_region_fd(r), &r2));
	REQUIRE_OK(npushm_region_map(r, NPUSHM_PROT_READ, &p));
	REQUIRE_OK(npushm_region_info(r, &info));
	if (th_is_kmod()) {
		/* dup()ed descriptors share one open file: one handle. */
		CHECK_EQ(info.handles, 1);
		CHECK_EQ(info.mappings, 1);
		CHECK_EQ(info.mapped_bytes, 8192);
		CHECK_EQ(info.dmabufs, 0);
	} else {
		CHECK_EQ(info.handles, NPUSHM_COUNT_UNKNOWN);
		CHECK_EQ(info.mappings, NPUSHM_COUNT_UNKNOWN);
		CHECK(info.mapped_bytes == UINT64_MAX);
	}
	npushm_region_unmap(r, p);
	npushm_region_close(r2);
	npushm_region_close(r);
	npushm_dev_close(dev);
}

/* 8. Per-uid quota: enforced (kmod), none (posix). */
TEST(diff_uid_quota)
{
	npushm_dev_t *dev = th_dev();
	npushm_dev_info_t di;
	npushm_region_t *r = NULL;

	REQUIRE_OK(npushm_dev_query(dev, &di));
	if (!th_is_kmod()) {
		CHECK_EQ(di.uid_quota, 0);
		CHECK_EQ(di.uid_in_use, 0);
		goto out;
	}
	if (!di.uid_quota || di.uid_quota + di.page_size > di.capacity)
		th_skip("the module was loaded without a uid_quota below its capacity");
	CHECK_ST_MSG(npushm_region_alloc(dev, di.uid_quota + di.page_size, 0, &r), NPUSHM_ERR_QUOTA,
		     "quota");
	CHECK(r == NULL);
	CHECK_ST(npushm_region_alloc(dev, di.uid_quota / 2, 0, &r), NPUSHM_OK);
out:
	npushm_region_close(r);
	npushm_dev_close(dev);
}

/* 9. On both, a region whose last name was removed cannot be named again. */
TEST(same_no_renaming_after_the_last_name_is_gone)
{
	npushm_dev_t *dev = th_dev();
	const char *a = th_name("re1"), *b = th_name("re2");
	npushm_region_t *r;

	REQUIRE_OK(npushm_region_alloc(dev, 4096, 0, &r));
	REQUIRE_OK(npushm_region_publish(r, a, 0600, NPUSHM_PUBLISH_PERSISTENT));
	REQUIRE_OK(npushm_name_unlink(dev, a));
	CHECK_ST_MSG(npushm_region_publish(r, b, 0600, NPUSHM_PUBLISH_PERSISTENT),
		     NPUSHM_ERR_UNSUPPORTED, "last name was removed");
	npushm_region_close(r);
	npushm_dev_close(dev);
}

/* 10. Name length: the module takes 255 bytes; posix file names cap it lower. */
TEST(diff_longest_name)
{
	npushm_dev_t *dev = th_dev();
	char name[NPUSHM_NAME_MAX + 1];
	npushm_region_t *r;

	snprintf(name, sizeof(name), "%s", th_name("long"));
	memset(name + strlen(name), 'z', NPUSHM_NAME_MAX - strlen(name));
	name[NPUSHM_NAME_MAX] = '\0';
	REQUIRE_OK(npushm_region_alloc(dev, 4096, 0, &r));
	if (th_is_kmod()) {
		CHECK_ST(npushm_region_publish(r, name, 0600, NPUSHM_PUBLISH_PERSISTENT), NPUSHM_OK);
		CHECK_ST(npushm_name_unlink(dev, name), NPUSHM_OK);
	} else {
		CHECK_ST_MSG(npushm_region_publish(r, name, 0600, NPUSHM_PUBLISH_PERSISTENT), NPUSHM_ERR_NAME,
			     "posix backend");
	}
	npushm_region_close(r);
	npushm_dev_close(dev);
}
