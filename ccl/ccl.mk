# ccl.mk - build and test rules for ccl/ (collectives: libnpccl, tests, ccl-perf).
#
#   make                      builds build/lib/libnpccl.so and the test programs
#   make check-ccl            unit + collective matrix + fault + negative tests
#   make check-ccl-netns      multi-host tests over network namespaces (root)
#   make check-ccl-full       opt-in: full cross product at large sizes (slow)

CCL_DIR := $(CURDIR)/ccl
CCL_OBJDIR := $(BUILD)/obj/ccl
CCL_SRCS := $(wildcard $(CCL_DIR)/src/*.c)
CCL_OBJS := $(patsubst $(CCL_DIR)/src/%.c,$(CCL_OBJDIR)/%.o,$(CCL_SRCS))
CCL_LIB := $(LIBDIR)/libnpccl.so
CCL_ALIB := $(LIBDIR)/libnpccl.a
# shared memory goes through libnpushm (ccl/src/shm_region.c)
CCL_NPUSHM_SO := $(LIBDIR)/libnpushm.so
CCL_CFLAGS := $(BASE_CFLAGS) $(CFLAGS) -I$(CCL_DIR)/include -I$(CURDIR)/libnpushm/include \
	-fvisibility=hidden -pthread
CCL_LIBS := -L$(LIBDIR) -lnpushm -lxxhash -lm -pthread
CCL_TEST_BINS := $(BINDIR)/ccl-test $(BINDIR)/ccl-unit-test
# DT_RPATH (not RUNPATH): the loader also uses it for libnpccl's own libnpushm.so.1
CCL_TEST_CFLAGS := $(BASE_CFLAGS) $(CFLAGS) -I$(CCL_DIR)/include -pthread -Wl,--disable-new-dtags

USER_TARGETS += $(CCL_LIB) $(CCL_ALIB) $(CCL_TEST_BINS) $(BINDIR)/ccl-perf

$(CCL_OBJDIR)/%.o: $(CCL_DIR)/src/%.c $(wildcard $(CCL_DIR)/src/*.h) $(CCL_DIR)/include/npccl.h
	@mkdir -p $(dir $@)
	$(CC) $(CCL_CFLAGS) -c $< -o $@

# the kernels are plain loops left to the vectoriser: -O2's cheap cost model
# refuses loops whose arguments may alias, -O3 versions them
$(CCL_OBJDIR)/reduce_kernels.o $(CCL_OBJDIR)/copy_kernels.o: CCL_CFLAGS += -O3

$(CCL_LIB): $(CCL_OBJS) $(CCL_DIR)/src/libnpccl.map $(CCL_NPUSHM_SO)
	@mkdir -p $(dir $@)
	$(CC) -shared -o $@ $(CCL_OBJS) -Wl,--version-script=$(CCL_DIR)/src/libnpccl.map \
		-Wl,-soname,libnpccl.so.1 $(CCL_LIBS)
	ln -sf libnpccl.so $@.1

$(CCL_ALIB): $(CCL_OBJS)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $(CCL_OBJS)

$(BINDIR)/ccl-test: $(CCL_DIR)/tests/ccl_test.c $(CCL_DIR)/tests/ccl_testlib.h $(CCL_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CCL_TEST_CFLAGS) -o $@ $< -L$(LIBDIR) -lnpccl -Wl,-rpath,$(LIBDIR) -lm

$(BINDIR)/ccl-unit-test: $(CCL_DIR)/tests/ccl_unit_test.c $(CCL_OBJS) $(CCL_NPUSHM_SO)
	@mkdir -p $(dir $@)
	$(CC) $(CCL_TEST_CFLAGS) -I$(CCL_DIR)/src -I$(CURDIR)/libnpushm/include -o $@ $< \
		$(CCL_OBJS) $(CCL_LIBS) -Wl,-rpath,$(LIBDIR)

# ccl-perf: the benchmark harness with the npccl backend
CCL_BENCH_DIR := $(CURDIR)/bench/ccl
$(BINDIR)/ccl-perf: $(CCL_BENCH_DIR)/perf.c $(CCL_BENCH_DIR)/backend.h \
		$(CCL_BENCH_DIR)/backend_npccl.c $(CCL_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CCL_TEST_CFLAGS) -O2 -o $@ $(CCL_BENCH_DIR)/perf.c $(CCL_BENCH_DIR)/backend_npccl.c \
		-L$(LIBDIR) -lnpccl -Wl,-rpath,'$$ORIGIN/../lib' -lm

CHECK_SUITES += ccl ccl-netns
.PHONY: check-ccl check-ccl-netns check-ccl-full
check-ccl: $(CCL_LIB) $(CCL_TEST_BINS)
	@tools/run-suite ccl $(CCL_DIR)/tests/run-ccl-tests.sh $(BINDIR)

check-ccl-netns: $(CCL_LIB) $(CCL_TEST_BINS)
	@tools/run-suite ccl-netns $(CCL_DIR)/tests/netns-test.sh $(BINDIR)

check-ccl-full: $(CCL_LIB) $(CCL_TEST_BINS)
	@tools/run-suite ccl-full $(BINDIR)/ccl-test matrix --full
