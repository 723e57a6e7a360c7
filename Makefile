# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
# npushm top-level Makefile.
#
#   make            build the userspace libraries, tools and tests (build/); the
#                   C tests written with the kselftest harness (the module's
#                   selftests, the C tests of libnpushm, libnptensor, libnpccl
#                   and libnpbert) only after make setup (they need the harness)
#   make modules    build kmod/npushm.ko against KDIR
#   make check      set up, build everything, run static checks and every
#                   test suite (VM selftests included); ends "N passed, N failed"
#   make demo       set up (the demo's packages only), build, run the BERT serving demo
#                   (apps/bert/demo)
#   make setup      install missing Debian packages, prepare the test kernel
#   make install    install (PREFIX, DESTDIR, GNU directories: tools/install.mk)
#
# Each part adds itself through its fragment (*/*.mk): USER_TARGETS are built
# by "make", CHECK_SUITES are run by "make check" through tools/run-suite.

BUILD ?= $(CURDIR)/build
export BUILD

CC ?= cc
CFLAGS ?= -O2 -g
WARNFLAGS := -Wall -Wextra -Wshadow -Wno-unused-parameter
# -ffile-prefix-map: debug info and __FILE__ name sources relative to the tree, not where it was built
BASE_CFLAGS := -std=gnu11 -fPIC -D_GNU_SOURCE $(WARNFLAGS) -I$(CURDIR)/include/uapi -I$(CURDIR)/include \
	-ffile-prefix-map=$(CURDIR)=.
LIBDIR := $(BUILD)/lib
# A build/lib library that needs another finds it beside itself (make install
# drops it: installed libraries carry no RUNPATH, tools/install.sh).
LIB_RUNPATH := -Wl,-rpath,'$$ORIGIN'
# An installed static archive, $@: the library's objects $(1) linked into one,
# $(ARCHIVE_OBJDIR)/<archive>-all.o (kept apart from the library's own object
# tree, whose layer checks read every object there), whose hidden symbols
# (and the .resolver symbols GCC leaves global for hidden target_clones
# functions) are made local, so that a program linking the archive meets
# only the library's public names, never an internal one clashing with its
# own (selftests/static-checks.sh checks every installed archive against its
# shared library's exports).
ARCHIVE_OBJDIR := $(BUILD)/obj/archives
define static_archive
	@mkdir -p $(dir $@) $(ARCHIVE_OBJDIR)
	$(CC) -r -nostdlib -o $(ARCHIVE_OBJDIR)/$(basename $(notdir $@))-all.o $(1)
	objcopy --localize-hidden --wildcard --localize-symbol='*.resolver' \
		$(ARCHIVE_OBJDIR)/$(basename $(notdir $@))-all.o
	rm -f $@ && ar rcs $@ $(ARCHIVE_OBJDIR)/$(basename $(notdir $@))-all.o
endef
# The build tree's programs, by what they are for:
#   build/bin    the programs make install installs, under their installed names
#   build/tests  the test programs, each <part>-<what>-test (part: libnpushm, ccl,
#                tensor, bert, module), run by the suites
#   build/bench  the benchmark programs, npushm-bench-<thing> (make bench-<thing>)
#   build/tools  programs the tests, benchmarks and demo use, not installed
#                (npushm-bert-gen)
BINDIR := $(BUILD)/bin
TESTDIR := $(BUILD)/tests
BENCH_BINDIR := $(BUILD)/bench
TOOLDIR := $(BUILD)/tools

# Kernel tree to build the module against: the running kernel's when it has
# one, else the Debian headers tools/setup.sh installed (ABI derived, not fixed).
KABI = $(shell dpkg-query -W -f='$${Depends}' linux-headers-amd64 2>/dev/null | sed -n 's/^linux-headers-\([^ ,]*\).*/\1/p')
KDIR ?= $(shell if [ -d /lib/modules/$$(uname -r)/build ]; then echo /lib/modules/$$(uname -r)/build; \
	else echo /usr/src/linux-headers-$(KABI); fi)
export KDIR

USER_TARGETS :=
# built by make check with everything else, before the suites (not by make)
CHECK_PREBUILD :=
CHECK_SUITES :=
HARNESS_BINS :=

# Linked into every test program: --help and --version answered before any
# test runs (tests/common/test_usage.c).
TEST_USAGE := $(CURDIR)/tests/common/test_usage.c
TEST_USAGE_LINK = $(TEST_USAGE) -DNPUSHM_VERSION='"$(shell cat $(CURDIR)/VERSION)"'

.PHONY: all modules setup check check-suites demo clean
all: user

include kmod/kmod.mk
include libnpushm/libnpushm.mk
include ccl/ccl.mk
include python/python.mk
include tensor/tensor.mk
include selftests/selftests.mk
include selftests/debug/debug.mk
include tools/sanitizers.mk
include apps/bert/bert.mk
include apps/llama/llama.mk
include bench/bench.mk
include tools/licences.mk
include tools/install.mk
include tests/install/install.mk
include tests/packages/packages.mk
include tests/runners/runners.mk
include tests/programs/programs.mk

# Plain "make" builds what can be built with the packages of "tools/setup.sh
# build"; the C test programs written with the kselftest harness (HARNESS_BINS:
# the module's selftests, the C tests of libnpushm, libnptensor, libnpccl and
# libnpbert) also need the harness that
# "make setup" extracts from linux-source-6.1: without it they are left out,
# with a note (make check always has it).
SELFTEST_HARNESS_FOUND := $(wildcard $(SELFTEST_HARNESS)/kselftest_harness.h)
USER_BUILDABLE := $(if $(SELFTEST_HARNESS_FOUND),$(USER_TARGETS),$(filter-out $(HARNESS_BINS),$(USER_TARGETS)))

# Builds run on every core unless the command line gives -j (make -j1 for one
# job at a time): the recipes below pass JOBS to their sub-make. Only the
# sub-makes that compile get it; the suites of make check have their own
# CHECK_JOBS.
JOBS = $$(case " $$MAKEFLAGS " in *" -j"*) ;; *) echo -j$$(nproc) ;; esac)

.PHONY: user build-deps
user: build-deps
	@$(MAKE) --no-print-directory $(JOBS) $(USER_BUILDABLE)
ifeq ($(SELFTEST_HARNESS_FOUND),)
	@echo "make: built all but the test programs that use the kselftest harness (the module's selftests, the C tests of libnpushm, libnptensor, libnpccl and libnpbert): run 'make setup' (as root) for them"
endif

build-deps:
	@missing=$$(tools/setup.sh --missing build) || { \
		echo "make: missing Debian packages: $$missing" >&2; \
		echo "make: run 'make setup' as root (everything make check needs), or: apt-get install $$missing" >&2; \
		exit 1; }

setup:
	@tools/setup.sh

# The tests build the module against the kernel the VM boots (Debian's
# linux-image matching linux-headers-amd64), whatever kernel the host runs.
# Read at run time from what setup.sh recorded: on a fresh machine the headers
# are installed by the recipe's first line, after this Makefile was parsed.
VM_KDIR = /usr/src/linux-headers-$$(cat $(BUILD)/kernel/abi)

# The suites run CHECK_JOBS at a time (default 2, 1 on a one-core machine: a
# VM suite keeps one core busy under TCG, so a VM suite and a native one share
# the machine), the longest first so that both lanes end together; each
# suite's output is printed whole when it ends (make -Otarget) and kept in
# build/tap/SUITE.tap. CHECK_JOBS=1 runs them one after the other, as listed.
# Measured (README, "Tests"): a clean clone on a 2-core machine with the
# packages installed, debug lane off, under a load of 5-16 from other jobs:
# 17 minutes, build included; a fresh machine adds its apt installs, a cached
# debug kernel adds the debug lane (7 minutes serially).
CHECK_JOBS ?= $(shell n=$$(nproc); [ "$$n" -ge 2 ] && echo 2 || echo 1)
CHECK_LONGEST := debug-lane ccl-rdma ccl-python libnpushm-kmod ccl packages module sanitizers bert-kmod llama-kmod static bert programs
CHECK_ORDER = $(filter $(CHECK_SUITES),$(CHECK_LONGEST)) $(filter-out $(CHECK_LONGEST),$(CHECK_SUITES))

check:
	@tools/setup.sh
	@$(MAKE) --no-print-directory $(JOBS) all modules $(CHECK_PREBUILD) KDIR=$(VM_KDIR)
	@rm -rf $(BUILD)/tap
	@$(MAKE) --no-print-directory -k -j$(CHECK_JOBS) $(if $(filter-out 1,$(CHECK_JOBS)),-Otarget) \
		$(addprefix check-,$(CHECK_ORDER)) KDIR=$(VM_KDIR) || true
	@tools/tap-summary $(CHECK_SUITES)

# The demo installs only what it needs; with the module (NPUSHM_BACKEND=kmod)
# that includes the test VM. Natively it ends with the decoder's part
# (make demo-llama, about 35 s on 2 cores); in the VM's emulated CPU that
# part would take many minutes, so the kmod demo stays BERT's.
demo:
	@tools/setup.sh $(if $(filter kmod,$(NPUSHM_BACKEND)),check,demo)
	@$(MAKE) --no-print-directory all
	@$(MAKE) --no-print-directory run-demo
ifneq ($(NPUSHM_BACKEND),kmod)
	@$(MAKE) --no-print-directory demo-llama
endif

# everything is under build/ but the module's objects (kmod/kmod.mk)
clean: clean-modules
	rm -rf $(BUILD)
