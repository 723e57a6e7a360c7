# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
# packages.mk - suite "packages": the Debian packages (debian/), lintian,
# DKMS, the VM loading the DKMS-built module
# (tests/packages/run-package-tests.sh); about 2-3 minutes on 2 cores.
#
#   make check-packages
#
# PACKAGES_IN_CHECK=no leaves it out of make check.

PACKAGES_IN_CHECK ?= yes
ifneq ($(PACKAGES_IN_CHECK),no)
CHECK_SUITES += packages
endif
.PHONY: check-packages
check-packages:
	@tools/run-suite packages tests/packages/run-package-tests.sh
