/* SPDX-License-Identifier: GPL-2.0-only */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * npushm_fixture.h - the fixture every npushm selftest uses.
 *
 * Setup opens /dev/npushm (SKIP when the module is not loaded), records the
 * pool's bytes in use and regions, moves the test into a mount namespace of
 * its own and mounts a private instance of the filesystem there (self->dir,
 * open as self->root), with the mount options NPUSHM_TEST_MOUNT_OPTS (the
 * module suite runs some programs again with another provider). Teardown unmounts it, which must succeed (nothing
 * left open), and checks the pool returned exactly to where it was, so
 * every test proves it left nothing behind.
 *
 * The namespace is what a test killed by the harness (timeout, crash)
 * leaves behind in place of its mounts: it dies with the test's last
 * process and takes every instance the test mounted with it, so no later
 * test finds the module held by a forgotten mount (npushm_reload).
 */
#ifndef NPUSHM_FIXTURE_H
#define NPUSHM_FIXTURE_H

#include "kselftest_harness.h"
#include "npushm_util.h"

FIXTURE(npushm) {
	int dev;
	int root;
	char dir[64];
	struct npushm_query q0;
};

FIXTURE_SETUP(npushm)
{
	self->root = -1;
	self->dev = npu_dev_open();
	if (self->dev < 0)
		SKIP(exit(255), "%s: %s (load npushm.ko)", NPUSHM_DEVICE_PATH,
		     strerror(-self->dev));
	ASSERT_EQ(0, npu_query(self->dev, &self->q0));
	ASSERT_EQ(0, npu_private_mounts());
	ASSERT_EQ(0, npu_mount(self->dir, getenv("NPUSHM_TEST_MOUNT_OPTS")));
	self->root = open(self->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ASSERT_LE(0, self->root);
}

FIXTURE_TEARDOWN(npushm)
{
	struct npushm_query q;

	if (self->dev < 0)
		return;
	if (self->root >= 0) {
		close(self->root);
		EXPECT_EQ(0, npu_umount(self->dir)) {
			TH_LOG("the test's instance %s is still busy", self->dir);
		}
	}
	EXPECT_EQ(0, npu_query(self->dev, &q));
	EXPECT_EQ(self->q0.in_use, q.in_use) {
		TH_LOG("the pool's bytes in use did not return to %llu",
		       (unsigned long long)self->q0.in_use);
	}
	EXPECT_EQ(self->q0.regions, q.regions);
	close(self->dev);
}

#endif /* NPUSHM_FIXTURE_H */
