# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
# runners.mk - suite "runners": the test-runner contract (every suite runner
# on tools/tap.sh, no TAP printed by hand, VM suites through
# selftests/vm/vm-suite.sh; tests/runners/run-runner-checks.sh).
#
#   make check-runners

CHECK_SUITES += runners
.PHONY: check-runners
check-runners:
	@tools/run-suite runners tests/runners/run-runner-checks.sh
