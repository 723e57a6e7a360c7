# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
# ccl.mk - build and test rules for ccl/ (collectives: libnpccl, its tests, npccl-load;
# npccl-perf is built by bench/bench.mk, the torch extension by python/python.mk).
#
#   make                      builds build/lib/libnpccl.so, build/bin/npccl-load and
#                             the test programs (build/tests/ccl-*test)
#   make check-ccl            unit + collective matrix + fault + negative tests
#   make check-ccl-netns      multi-host tests over network namespaces (root)
#   make check-ccl-rdma       the RDMA transport on soft-RoCE hosts in the test VM
#   make check-ccl-full       opt-in: full cross product at large sizes (slow)
#   make check-ccl-python     the Python binding and the torch backend (pytest, 2 and 3
#                             processes, compared with gloo); check-ccl-python-full: larger sweep

CCL_DIR := $(CURDIR)/ccl
CCL_OBJDIR := $(BUILD)/obj/ccl
# ccl/src in layers, each calling only the ones below it:
#   api/ (public calls, communicators, launchers) -> queue/ (requests, the exec role)
#   -> dispatch/ (sequencing, algorithm choice, cost model) -> algo/
#   (collectives on messages or shared memory, kernels) -> transport/ (shm,
#   TCP, RDMA behind struct transport_ops; the wait loop, failure diagnosis)
#   -> base/ (sockets, shared regions, config, status); setup/ (unique ids,
#   bootstrap) builds a communicator's transports; model/ lends libnpushm's
#   cluster model load (npushm_cluster_load) the public collectives.
CCL_SRCS := $(wildcard $(CCL_DIR)/src/*/*.c)
CCL_OBJS := $(patsubst $(CCL_DIR)/src/%.c,$(CCL_OBJDIR)/%.o,$(CCL_SRCS))
CCL_LIB := $(LIBDIR)/libnpccl.so
CCL_ALIB := $(LIBDIR)/libnpccl.a
# shared memory goes through libnpushm (ccl/src/base/shm_region.c)
CCL_NPUSHM_SO := $(LIBDIR)/libnpushm.so
CCL_CFLAGS := $(BASE_CFLAGS) $(CFLAGS) -I$(CCL_DIR)/include -I$(CCL_DIR)/src -I$(CURDIR)/libnpushm/include \
	-fvisibility=hidden -pthread
CCL_LIBS := -L$(LIBDIR) -lnpushm -lxxhash -lm -pthread
CCL_TEST_BINS := $(TESTDIR)/ccl-test $(TESTDIR)/ccl-unit-test $(TESTDIR)/ccl-async-test \
	$(TESTDIR)/ccl-det-test
# DT_RPATH (not RUNPATH): the loader also uses it for libnpccl's own libnpushm.so.1
# The tests report through the kernel's kselftest.h (ccl/tests/ccl_tap.h), which
# make setup extracts beside kselftest_harness.h: plain make without it leaves
# them out (HARNESS_BINS) and says so.
CCL_TEST_CFLAGS := $(BASE_CFLAGS) $(CFLAGS) -I$(CCL_DIR)/include -pthread -Wl,--disable-new-dtags \
	-I$(BUILD)/linux-source/tools/testing/selftests
HARNESS_BINS += $(CCL_TEST_BINS)

USER_TARGETS += $(CCL_LIB) $(CCL_ALIB) $(CCL_TEST_BINS) $(BINDIR)/npccl-load

$(CCL_OBJDIR)/%.o: $(CCL_DIR)/src/%.c $(wildcard $(CCL_DIR)/src/*.h $(CCL_DIR)/src/*/*.h) $(CCL_DIR)/include/npccl.h
	@mkdir -p $(dir $@)
	$(CC) $(CCL_CFLAGS) -c $< -o $@

# the kernels are plain loops left to the vectoriser: -O2's cheap cost model
# refuses loops whose arguments may alias, -O3 versions them
$(CCL_OBJDIR)/base/reduce_kernels.o $(CCL_OBJDIR)/base/copy_kernels.o: CCL_CFLAGS += -O3

$(CCL_LIB): $(CCL_OBJS) $(CCL_DIR)/src/libnpccl.map $(CCL_NPUSHM_SO)
	@mkdir -p $(dir $@)
	$(CC) -shared -o $@ $(CCL_OBJS) -Wl,--version-script=$(CCL_DIR)/src/libnpccl.map \
		-Wl,-soname,libnpccl.so.1 $(CCL_LIBS) $(LIB_RUNPATH)
	ln -sf libnpccl.so $@.1

# One object, libnpccl's files linked together with their hidden symbols
# made local: a program linking the archive sees only the npccl_* API, never
# an internal name such as block_range or bf16_to_f32 clashing with its own.
$(CCL_ALIB): $(CCL_OBJS)
	$(call static_archive,$(CCL_OBJS))

$(TESTDIR)/ccl-test: $(CCL_DIR)/tests/ccl_test.c $(CCL_DIR)/tests/ccl_testlib.h $(CCL_DIR)/tests/ccl_tap.h $(CCL_LIB) $(TEST_USAGE)
	@mkdir -p $(dir $@)
	$(CC) $(CCL_TEST_CFLAGS) -o $@ $< $(TEST_USAGE_LINK) -L$(LIBDIR) -lnpccl -Wl,-rpath,$(LIBDIR) -lm

$(TESTDIR)/ccl-async-test: $(CCL_DIR)/tests/ccl_async_test.c $(CCL_DIR)/tests/ccl_tap.h $(CCL_LIB) $(TEST_USAGE)
	@mkdir -p $(dir $@)
	$(CC) $(CCL_TEST_CFLAGS) -o $@ $< $(TEST_USAGE_LINK) -L$(LIBDIR) -lnpccl -Wl,-rpath,$(LIBDIR) -lm

$(TESTDIR)/ccl-det-test: $(CCL_DIR)/tests/ccl_det_test.c $(CCL_DIR)/tests/ccl_testlib.h $(CCL_DIR)/tests/ccl_tap.h $(CCL_LIB) $(TEST_USAGE)
	@mkdir -p $(dir $@)
	$(CC) $(CCL_TEST_CFLAGS) -o $@ $< $(TEST_USAGE_LINK) -L$(LIBDIR) -lnpccl -Wl,-rpath,$(LIBDIR) -lm

$(TESTDIR)/ccl-unit-test: $(CCL_DIR)/tests/ccl_unit_test.c $(CCL_DIR)/tests/ccl_tap.h $(CCL_OBJS) $(CCL_NPUSHM_SO) $(TEST_USAGE)
	@mkdir -p $(dir $@)
	$(CC) $(CCL_TEST_CFLAGS) -I$(CCL_DIR)/src -I$(CURDIR)/libnpushm/include -o $@ $< $(TEST_USAGE_LINK) \
		$(CCL_OBJS) $(CCL_LIBS) -Wl,-rpath,$(LIBDIR)

# npccl-load: one model load for a cluster (npccl_model_load)
$(BINDIR)/npccl-load: $(CCL_DIR)/tools/npccl_load.c $(CCL_LIB) $(CURDIR)/VERSION
	@mkdir -p $(dir $@)
	$(CC) $(CCL_TEST_CFLAGS) -DNPUSHM_VERSION='"$(shell cat $(CURDIR)/VERSION)"' -o $@ $< \
		-L$(LIBDIR) -lnpccl -Wl,-rpath,'$$ORIGIN/../lib'

# ---- Python: npushm.ccl (ctypes) and npushm.ccl_torch (python/python.mk builds
# its extension, target ccl-torch) ----
.PHONY: check-ccl-python check-ccl-python-full
check-ccl-python: $(CCL_LIB) ccl-torch
	@tools/run-suite ccl-python $(CCL_DIR)/tests/run-python-tests.sh

check-ccl-python-full: $(CCL_LIB) ccl-torch
	@NPCCL_PY_FULL=1 tools/run-suite ccl-python-full $(CCL_DIR)/tests/run-python-tests.sh

CHECK_SUITES += ccl ccl-netns ccl-python ccl-rdma
.PHONY: check-ccl check-ccl-netns check-ccl-full check-ccl-rdma
# the cluster model load's tests run npccl-load and the npushm command
CCL_LOAD_BINS := $(BINDIR)/npccl-load $(LIBNPUSHM_CLI)
check-ccl: $(CCL_LIB) $(CCL_ALIB) $(CCL_TEST_BINS) $(BINDIR)/npccl-perf $(CCL_LOAD_BINS)
	@tools/run-suite ccl $(CCL_DIR)/tests/run-ccl-tests.sh

check-ccl-netns: $(CCL_LIB) $(CCL_TEST_BINS)
	@tools/run-suite ccl-netns $(CCL_DIR)/tests/netns-test.sh

# soft-RoCE hosts in the test VM: the collectives, faults and the cluster
# model load over the RDMA transport, npushm_region_reg_mr (ccl/tests/rdma/)
check-ccl-rdma: $(CCL_LIB) $(CCL_TEST_BINS) $(CCL_LOAD_BINS) $(LIBNPUSHM_RDMA_TEST) modules
	@tools/run-suite ccl-rdma selftests/vm/vm-suite.sh ccl-rdma -t $${CCL_RDMA_VM_TIMEOUT:-1200} -- \
		ccl/tests/rdma/rdma-guest.sh

check-ccl-full: $(CCL_LIB) $(CCL_TEST_BINS)
	@tools/run-suite ccl-full $(TESTDIR)/ccl-test matrix --full
