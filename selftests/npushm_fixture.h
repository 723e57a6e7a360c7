/* SPDX-License-Identifier: GPL-2.0 */
/*
 * npushm_fixture.h - the fixture every npushm selftest uses.
 *
 * Setup opens /dev/npushm (SKIP when the module is not loaded) and records
 * the pool's bytes in use and live regions; teardown checks both returned
 * exactly to those values, so every test proves it left nothing behind.
 */
#ifndef NPUSHM_FIXTURE_H
#define NPUSHM_FIXTURE_H

#include "kselftest_harness.h"
#include "npushm_util.h"

FIXTURE(npushm) {
	int dev;
	struct npushm_query q0;
};

FIXTURE_SETUP(npushm)
{
	self->dev = npu_dev_open();
	if (self->dev < 0)
		SKIP(exit(255), "%s: %s (load npushm.ko)", NPUSHM_DEVICE_PATH,
		     strerror(-self->dev));
	ASSERT_EQ(0, npu_query(self->dev, &self->q0));
}

FIXTURE_TEARDOWN(npushm)
{
	struct npushm_query q;

	if (self->dev < 0)
		return;
	EXPECT_EQ(0, npu_query(self->dev, &q));
	EXPECT_EQ(self->q0.in_use, q.in_use) {
		TH_LOG("the pool's bytes in use did not return to %llu",
		       (unsigned long long)self->q0.in_use);
	}
	EXPECT_EQ(self->q0.regions, q.regions);
	close(self->dev);
}

#endif /* NPUSHM_FIXTURE_H */
