// SPDX-License-Identifier: GPL-2.0-only
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * npushm_pins_test.c - seals and pins. A long-term write pin (an AF_XDP
 * umem: pin_user_pages(FOLL_WRITE | FOLL_LONGTERM), as an RDMA MR does;
 * npushm_rdma_test.c does it with a real MR) taken through a writable
 * mapping outlives the mapping and could write the region after it was
 * sealed. Sealing must fail while any pin exists (a vmsplice()d page held
 * by a pipe too), no write pin can be taken after sealing, pinned bytes are
 * reported, and pinned pages stay charged after their region is gone until
 * the pin is dropped. A kernel without AF_XDP (the debug lane's) gets the
 * pipe's page references as its pins instead.
 */
#include <sys/mman.h>

#include "npushm_fixture.h"
#include "npushm_pin.h"

#define MiB (1024UL * 1024)

static uint64_t pinned_bytes(int fd)
{
	struct npushm_region_info info;

	return npu_info(fd, &info) ? UINT64_MAX : info.pinned_bytes;
}

/*
 * Attack: pin the region for writing through a writable mapping, drop the
 * mapping, seal. The old module sealed, and the pin kept writing.
 */
TEST_F(npushm, seal_refuses_long_term_pins)
{
	size_t size = MiB;
	int fd = npu_tmpfile(self->root, size, 0600), ro_pin, i, ret = -EBUSY;
	struct pin pin;
	char *p;

	ASSERT_LE(0, fd);
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	ASSERT_EQ(0, pin_pages(&pin, p, 256 * 1024));
	if (!pin.longterm)
		TH_LOG("no AF_XDP in this kernel: pinning with a pipe's page references");
	munmap(p, size);
	EXPECT_EQ(256 * 1024, pinned_bytes(fd));
	EXPECT_EQ(-EBUSY, npu_seal(fd));
	/* Unpinned (an AF_XDP umem goes from a work item): now it seals. */
	unpin(&pin);
	for (i = 0; i < 100 && ret == -EBUSY; i++) {
		ret = npu_seal(fd);
		if (ret == -EBUSY)
			usleep(20000);
	}
	EXPECT_EQ(0, ret);
	EXPECT_EQ(0, pinned_bytes(fd));
	/* After sealing, no write pin can be taken, even from a read-only mapping. */
	p = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	if (pin.longterm) {
		ro_pin = xdp_pin(p, 256 * 1024);
		EXPECT_GT(0, ro_pin);
		if (ro_pin >= 0)
			close(ro_pin);
	}
	EXPECT_EQ(0, pinned_bytes(fd));
	munmap(p, size);
	close(fd);
}

/* A page reference held by a pipe (vmsplice) is a pin too. */
TEST_F(npushm, seal_refuses_pages_held_by_a_pipe)
{
	size_t size = 64 * 1024;
	int fd = npu_tmpfile(self->root, size, 0600), pipefd[2];
	struct iovec iov;
	char *p, buf[4096];

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, pipe(pipefd));
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	memset(p, 'v', 8192);
	iov.iov_base = p;
	iov.iov_len = 8192;
	ASSERT_EQ(8192, vmsplice(pipefd[1], &iov, 1, 0));
	munmap(p, size);
	EXPECT_EQ(8192, pinned_bytes(fd));
	EXPECT_EQ(-EBUSY, npu_seal(fd));
	ASSERT_EQ(4096, read(pipefd[0], buf, sizeof(buf)));
	ASSERT_EQ(4096, read(pipefd[0], buf, sizeof(buf)));
	EXPECT_EQ('v', buf[4095]);
	EXPECT_EQ(0, npu_seal(fd));
	close(pipefd[0]);
	close(pipefd[1]);
	close(fd);
}

/*
 * Pinned pages of a destroyed region stay charged (to the pool and to the
 * owner's uid) until they are unpinned; the rest goes back at once.
 */
TEST_F(npushm, pinned_pages_stay_charged_until_unpinned)
{
	size_t size = 2 * MiB;
	struct npushm_query q;
	int fd = npu_create(self->root, "pinned", size, 0600);
	struct pin pin;
	char *p;

	ASSERT_LE(0, fd);
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	ASSERT_EQ(0, pin_pages(&pin, p + MiB, 128 * 1024));
	munmap(p, size);
	close(fd);
	ASSERT_EQ(0, npu_unlink(self->root, "pinned"));
	/* The region is gone; its pinned 128 KiB are not. */
	ASSERT_EQ(0, npu_query(self->dev, &q));
	EXPECT_EQ(self->q0.in_use + 128 * 1024, q.in_use);
	EXPECT_EQ(128 * 1024, q.orphan_pinned);
	EXPECT_EQ(self->q0.uid_in_use + 128 * 1024, q.uid_in_use);
	EXPECT_EQ(self->q0.regions + 1, q.regions);
	unpin(&pin);
	/* Unpinned: back within a few seconds (a worker checks once a second). */
	EXPECT_EQ(self->q0.in_use, npu_wait_in_use(self->dev, self->q0.in_use, 5000));
	ASSERT_EQ(0, npu_query(self->dev, &q));
	EXPECT_EQ(0, q.orphan_pinned);
	EXPECT_EQ(self->q0.regions, q.regions);
}

TEST_HARNESS_MAIN
