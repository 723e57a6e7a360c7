# SPDX-License-Identifier: GPL-2.0-only
# SPDX-FileCopyrightText: 2026 The npushm authors
# debug.mk - the debug-kernel lane: the module's selftests under KASAN,
# lockdep, kmemleak and fault injection (docs/debug-kernel.md).
#
#   make debug-kernel            build (once, 25-60 min) or find the cached debug kernel
#   make check-debug             build/reuse it, build npushm.ko against it, run the
#                                module selftests + the fault-injection pass in it;
#                                ends "N passed, N failed, N skipped"
#   make check-debug-if-cached   the same when the kernel is cached, else one "# SKIP"
#
# make check leaves the lane out (DEBUG_IN_CHECK=no, the default): alone it
# takes 7 minutes of the test command's 20, and beside the other VM suites on
# two loaded cores its kernel once stopped at early boot (docs/debug-kernel.md).
# DEBUG_IN_CHECK=cached runs it as suite "debug-lane" when the kernel is
# cached (one SKIP otherwise).
# The lane's VM has the module suite's devices (SELFTEST_VM_DEVICES, selftests.mk),
# its memory-only node 1 with 512 MiB rather than 256: under the debug kernel only
# 23 MiB of a 256 MiB node 1 were free when the node tests ran.
DEBUG_VM_DEVICES = $(SELFTEST_VM_DEVICES) VM_NUMA_NODE1=512
# Variables (exported to selftests/debug/run-debug-lane.sh, which documents them):
DEBUG_SUITE ?= selftests/run-module-tests.sh
DEBUG_FAULT_SUITE ?= $(DEBUG_SUITE)
DEBUG_FAULT_OPTS ?= --slab --page --arm
DEBUG_KO ?=
DEBUG_VM_APPEND ?=
DEBUG_VM_MEM ?= 2G
DEBUG_TIMEOUT ?= 3600
DEBUG_IN_CHECK ?= no
export DEBUG_SUITE DEBUG_FAULT_SUITE DEBUG_FAULT_OPTS DEBUG_KO DEBUG_VM_APPEND DEBUG_VM_MEM DEBUG_TIMEOUT

DEBUG_DIR := selftests/debug
# Wherever this file is included, it does not change make's default goal.
DEBUG_SAVED_GOAL := $(.DEFAULT_GOAL)

.PHONY: debug-kernel check-debug check-debug-if-cached check-debug-lane
debug-kernel:
	@tools/setup.sh
	@$(DEBUG_DIR)/build-kernel.sh >/dev/null

check-debug:
	@tools/setup.sh
	@$(MAKE) --no-print-directory all
	@$(DEBUG_VM_DEVICES) tools/run-suite debug-lane $(DEBUG_DIR)/run-debug-lane.sh
	@tools/tap-summary debug-lane

check-debug-if-cached:
	@if $(DEBUG_DIR)/build-kernel.sh --cached; then \
		$(MAKE) --no-print-directory check-debug; \
	else \
		$(DEBUG_VM_DEVICES) tools/run-suite debug-lane $(DEBUG_DIR)/run-debug-lane.sh --if-cached && \
			tools/tap-summary debug-lane; \
	fi

ifeq ($(DEBUG_IN_CHECK),cached)
CHECK_SUITES += debug-lane
endif
check-debug-lane:
	@$(DEBUG_VM_DEVICES) tools/run-suite debug-lane $(DEBUG_DIR)/run-debug-lane.sh --if-cached

.DEFAULT_GOAL := $(DEBUG_SAVED_GOAL)
