# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
# install.mk - suite "install": make install into a scratch DESTDIR, then use
# only that tree (tests/install/run-install-tests.sh says how and why); make
# install itself is tools/install.mk.
#
#   make check-install

CHECK_SUITES += install
.PHONY: check-install
check-install: $(INSTALL_BUILT)
	@tools/run-suite install tests/install/run-install-tests.sh "$(MAKE)"
