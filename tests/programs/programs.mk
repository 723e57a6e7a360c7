# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
# programs.mk - suite "programs": every built program answers --help and
# --version, and every example of the manual pages and the --help texts runs
# on a scratch model (tests/programs/run-program-tests.sh).
#
#   make check-programs

CHECK_SUITES += programs
.PHONY: check-programs
# every program make builds (this fragment is included last: USER_TARGETS is whole)
check-programs: $(USER_TARGETS)
	@tools/run-suite programs tests/programs/run-program-tests.sh
