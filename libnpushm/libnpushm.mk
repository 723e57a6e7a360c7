# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
# libnpushm.mk - build and test rules for libnpushm/ (included by the top-level Makefile).
#
#   make                     build/lib/libnpushm.{so,a}, build/bin/npushm, the tests
#                            (build/tests/libnpushm-*-test)
#   make check-libnpushm     the test suite on the posix backend, natively
#   make check-libnpushm-kmod  the same suite on the kmod backend, in the VM
#   make fuzz                libFuzzer on the safetensors header parser
#                            (LIBNPUSHM_FUZZ_SECONDS, default 600; build/fuzz)

LIBNPUSHM_DIR := $(CURDIR)/libnpushm
LIBNPUSHM_OBJDIR := $(BUILD)/obj/libnpushm
LIBNPUSHM_FUZZDIR := $(BUILD)/fuzz

LIBNPUSHM_PKGS := libnl-genl-3.0 json-c libxxhash
LIBNPUSHM_PKG_CFLAGS := $(shell pkg-config --cflags $(LIBNPUSHM_PKGS) 2>/dev/null || echo -I/usr/include/libnl3)
LIBNPUSHM_PKG_LIBS := $(shell pkg-config --libs $(LIBNPUSHM_PKGS) 2>/dev/null || echo -lnl-genl-3 -lnl-3 -ljson-c -lxxhash)

LIBNPUSHM_CFLAGS := $(BASE_CFLAGS) $(CFLAGS) -I$(LIBNPUSHM_DIR)/include $(LIBNPUSHM_PKG_CFLAGS)
LIBNPUSHM_LIB_CFLAGS := $(LIBNPUSHM_CFLAGS) -DNPUSHM_BUILDING_LIBRARY -fvisibility=hidden -I$(LIBNPUSHM_DIR)/src
LIBNPUSHM_LIBS := $(LIBNPUSHM_PKG_LIBS) -lpthread

LIBNPUSHM_SRCS := $(wildcard $(LIBNPUSHM_DIR)/src/*.c)
LIBNPUSHM_HDRS := $(wildcard $(LIBNPUSHM_DIR)/src/*.h) $(wildcard $(LIBNPUSHM_DIR)/include/*.h) \
	$(CURDIR)/include/uapi/linux/npushm.h
LIBNPUSHM_OBJS := $(patsubst $(LIBNPUSHM_DIR)/src/%.c,$(LIBNPUSHM_OBJDIR)/%.o,$(LIBNPUSHM_SRCS))

LIBNPUSHM_SO := $(LIBDIR)/libnpushm.so
LIBNPUSHM_A := $(LIBDIR)/libnpushm.a
# every object as it is, internal names global: the tests link it (not installed)
LIBNPUSHM_TEST_A := $(LIBNPUSHM_OBJDIR)/libnpushm-tests.a
LIBNPUSHM_CLI := $(BINDIR)/npushm
# Programs linked against the shared library find it next to themselves.
LIBNPUSHM_RPATH := -Wl,-rpath,'$$ORIGIN/../lib'
LIBNPUSHM_TEST_RPATH := -Wl,-rpath,$(LIBDIR)

USER_TARGETS += $(LIBNPUSHM_SO) $(LIBNPUSHM_A) $(LIBNPUSHM_CLI)

$(LIBNPUSHM_OBJDIR)/%.o: $(LIBNPUSHM_DIR)/src/%.c $(LIBNPUSHM_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(LIBNPUSHM_LIB_CFLAGS) -c $< -o $@

$(LIBNPUSHM_SO): $(LIBNPUSHM_OBJS) $(LIBNPUSHM_DIR)/libnpushm.map
	@mkdir -p $(dir $@)
	$(CC) -shared -o $@ $(LIBNPUSHM_OBJS) -Wl,-soname,libnpushm.so.1 \
		-Wl,--version-script,$(LIBNPUSHM_DIR)/libnpushm.map -Wl,--no-undefined $(LIBNPUSHM_LIBS)
	ln -sf libnpushm.so $@.1

# one object, internal names local (the top Makefile's static_archive)
$(LIBNPUSHM_A): $(LIBNPUSHM_OBJS)
	$(call static_archive,$(LIBNPUSHM_OBJS))

$(LIBNPUSHM_TEST_A): $(LIBNPUSHM_OBJS)
	rm -f $@ && ar rcs $@ $(LIBNPUSHM_OBJS)

# ------------------------------------------------------------------ the CLI
LIBNPUSHM_CLI_SRCS := $(wildcard $(LIBNPUSHM_DIR)/cli/*.c)
LIBNPUSHM_CLI_HDRS := $(wildcard $(LIBNPUSHM_DIR)/cli/*.h)

# load --dtype packs weights with libnptensor (cli/pack.c)
$(LIBNPUSHM_CLI): $(LIBNPUSHM_CLI_SRCS) $(LIBNPUSHM_CLI_HDRS) $(LIBNPUSHM_SO) $(LIBDIR)/libnptensor.so \
		$(CURDIR)/VERSION
	@mkdir -p $(dir $@)
	$(CC) $(LIBNPUSHM_CFLAGS) -I$(CURDIR)/tensor/include \
		-DNPUSHM_VERSION='"$(shell cat $(CURDIR)/VERSION)"' -o $@ $(LIBNPUSHM_CLI_SRCS) \
		-L$(LIBDIR) -lnpushm -lnptensor $(LIBNPUSHM_RPATH) $(LIBNPUSHM_PKG_LIBS)

# The packer of `npushm load --dtype` (cli/pack.c) as an object of its own:
# npushm-bert and npushm-llama pack with it too (--dtype).
LIBNPUSHM_PACK_O := $(LIBNPUSHM_OBJDIR)/cli/pack.o
LIBNPUSHM_PACK_H := $(LIBNPUSHM_DIR)/cli/pack.h
$(LIBNPUSHM_PACK_O): $(LIBNPUSHM_DIR)/cli/pack.c $(LIBNPUSHM_PACK_H) $(LIBNPUSHM_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(LIBNPUSHM_CFLAGS) -I$(CURDIR)/tensor/include -c $< -o $@

# ---------------------------------------------------------------- the tests
# One program per tests/test_<what>.c, build/tests/libnpushm-<what>-test (an
# underscore of <what> a dash), on the kernel's kselftest_harness.h (make
# setup extracts it) with this suite's helpers (tests/harness.c).
LIBNPUSHM_TEST_NAMES := $(patsubst $(LIBNPUSHM_DIR)/tests/test_%.c,%,$(wildcard $(LIBNPUSHM_DIR)/tests/test_*.c))
libnpushm_test_bin = $(TESTDIR)/libnpushm-$(subst _,-,$(1))-test
LIBNPUSHM_TESTS := $(foreach t,$(LIBNPUSHM_TEST_NAMES),$(call libnpushm_test_bin,$(t)))
USER_TARGETS += $(LIBNPUSHM_TESTS)
HARNESS_BINS += $(LIBNPUSHM_TESTS)

# Linked statically with every object (LIBNPUSHM_TEST_A, not the installed
# archive, whose internal names are local) so the tests can reach the parser
# and the manifest checker.
define LIBNPUSHM_TEST_RULE
$(call libnpushm_test_bin,$(1)): $(LIBNPUSHM_DIR)/tests/test_$(1).c $(LIBNPUSHM_DIR)/tests/harness.c \
		$(LIBNPUSHM_DIR)/tests/harness.h $(LIBNPUSHM_TEST_A) $(TEST_USAGE)
	@test -f $$(SELFTEST_HARNESS)/kselftest_harness.h || \
		{ echo "libnpushm: kselftest_harness.h missing; run 'make setup'" >&2; exit 1; }
	@mkdir -p $$(dir $$@)
	$(CC) $(LIBNPUSHM_CFLAGS) -I$(CURDIR)/kmod/test -I$$(SELFTEST_HARNESS) \
		-DLIBNPUSHM_SRCDIR='"$(LIBNPUSHM_DIR)"' -o $$@ $$< $(LIBNPUSHM_DIR)/tests/harness.c $(TEST_USAGE_LINK) \
		$(LIBNPUSHM_TEST_A) $(LIBNPUSHM_LIBS)
endef
$(foreach t,$(LIBNPUSHM_TEST_NAMES),$(eval $(call LIBNPUSHM_TEST_RULE,$(t))))

# ------------------------------------------------------------------- fuzzing
# Opt-in: make fuzz [LIBNPUSHM_FUZZ_SECONDS=600]. The committed corpus is copied
# so the run does not rewrite it; crashes land in build/fuzz/artifacts
# and belong in libnpushm/fuzz/regressions/ (tests parse every file there).
LIBNPUSHM_FUZZ := $(LIBNPUSHM_FUZZDIR)/libnpushm-fuzz-safetensors
LIBNPUSHM_FUZZ_SECONDS ?= 600
LIBNPUSHM_FUZZ_SRCS := $(LIBNPUSHM_DIR)/fuzz/fuzz_safetensors.c $(LIBNPUSHM_DIR)/src/safetensors.c \
	$(LIBNPUSHM_DIR)/src/dtype.c $(LIBNPUSHM_DIR)/src/status.c

$(LIBNPUSHM_FUZZ): $(LIBNPUSHM_FUZZ_SRCS) $(LIBNPUSHM_HDRS)
	@mkdir -p $(dir $@)
	clang -std=gnu11 -D_GNU_SOURCE -g -O1 -fsanitize=fuzzer,address,undefined \
		-fno-sanitize-recover=undefined -I$(LIBNPUSHM_DIR)/include -I$(LIBNPUSHM_DIR)/src \
		$(LIBNPUSHM_PKG_CFLAGS) -o $@ $(LIBNPUSHM_FUZZ_SRCS) -ljson-c

.PHONY: fuzz libnpushm-fuzz
fuzz: libnpushm-fuzz
libnpushm-fuzz: $(LIBNPUSHM_FUZZ)
	@rm -rf $(LIBNPUSHM_FUZZDIR)/corpus && mkdir -p $(LIBNPUSHM_FUZZDIR)/artifacts
	@cp -r $(LIBNPUSHM_DIR)/fuzz/corpus $(LIBNPUSHM_FUZZDIR)/corpus
	$(LIBNPUSHM_FUZZ) -max_total_time=$(LIBNPUSHM_FUZZ_SECONDS) -max_len=65536 -timeout=10 \
		-dict=$(LIBNPUSHM_DIR)/fuzz/safetensors.dict -print_final_stats=1 \
		-artifact_prefix=$(LIBNPUSHM_FUZZDIR)/artifacts/ \
		$(LIBNPUSHM_FUZZDIR)/corpus $(LIBNPUSHM_DIR)/fuzz/regressions

# Both suites: the same tests, posix natively and kmod in the VM.
CHECK_SUITES += libnpushm libnpushm-kmod
.PHONY: check-libnpushm check-libnpushm-kmod
check-libnpushm: $(LIBNPUSHM_TESTS) $(LIBNPUSHM_CLI)
	@tools/run-suite libnpushm libnpushm/tests/run-tests.sh
# Its VM has two NUMA nodes of one CPU each (per-node model copies, test_nodes.c).
check-libnpushm-kmod: $(LIBNPUSHM_TESTS) $(LIBNPUSHM_CLI)
	@VM_NUMA_SPLIT=1 tools/run-suite libnpushm-kmod selftests/vm/vm-suite.sh libnpushm -t $${LIBNPUSHM_VM_TIMEOUT:-400} -- \
		env NPUSHM_BACKEND=kmod libnpushm/tests/run-tests.sh

# ------------------------------------------------------ RDMA registration test
# npushm_region_reg_mr on a real device: run in the test VM by the rdma suite
# (ccl/tests/rdma/). Built with the kernel's kselftest harness, so only once
# make setup has extracted it (make check always has).
LIBNPUSHM_RDMA_TEST := $(TESTDIR)/libnpushm-rdma-reg-test
LIBNPUSHM_HARNESS := $(BUILD)/linux-source/tools/testing/selftests
ifneq ($(wildcard $(LIBNPUSHM_HARNESS)/kselftest_harness.h),)
USER_TARGETS += $(LIBNPUSHM_RDMA_TEST)
endif

$(LIBNPUSHM_RDMA_TEST): $(LIBNPUSHM_DIR)/tests/rdma/rdma_reg_test.c $(LIBNPUSHM_DIR)/include/npushm_rdma.h \
		$(LIBNPUSHM_SO) $(TEST_USAGE)
	@mkdir -p $(dir $@)
	$(CC) $(LIBNPUSHM_CFLAGS) -Wno-sign-compare -I$(LIBNPUSHM_HARNESS) -o $@ $< $(TEST_USAGE_LINK) -L$(LIBDIR) -lnpushm -libverbs \
		$(LIBNPUSHM_TEST_RPATH)
