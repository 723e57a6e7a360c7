# bert.mk - build and test rules for apps/bert/ (libnpbert: BERT inference from a
# shared npushm model, computed with libnptensor, tensor parallel with libnpccl).
#
#   make                  build/lib/libnpbert.so, build/bin/npushm-bert (the command),
#                         build/bin/npushm-bert-gen (deterministic test models)
#   make check-bert       against the PyTorch reference and the error cases, posix backend
#   make check-bert-kmod  the engine on the kmod backend, in the VM
#   make run-demo         the serving demo (make demo = setup + build + this);
#                         NPUSHM_BACKEND=kmod runs it in the VM with the module
#   make bench-bert       the benchmark against PyTorch (bench/bert/)

BERT_DIR := $(CURDIR)/apps/bert
BERT_OBJDIR := $(BUILD)/obj/bert
BERT_SRCS := $(wildcard $(BERT_DIR)/src/*.c)
BERT_OBJS := $(patsubst $(BERT_DIR)/src/%.c,$(BERT_OBJDIR)/%.o,$(BERT_SRCS))
BERT_LIB := $(LIBDIR)/libnpbert.so
BERT_CLI := $(BINDIR)/npushm-bert
BERT_GEN := $(BINDIR)/npushm-bert-gen
BERT_TEST := $(BINDIR)/npbert-test
BERT_INCS := -I$(BERT_DIR)/include -I$(CURDIR)/tensor/include -I$(CURDIR)/ccl/include \
	-I$(CURDIR)/libnpushm/include
BERT_CFLAGS := $(BASE_CFLAGS) $(CFLAGS) $(BERT_INCS)
BERT_LIBS := -L$(LIBDIR) -lnpbert -lnptensor -lnpccl -lnpushm -Wl,-rpath,'$$ORIGIN/../lib' -lm

USER_TARGETS += $(BERT_LIB) $(BERT_CLI) $(BERT_GEN) $(BERT_TEST)

$(BERT_OBJDIR)/%.o: $(BERT_DIR)/src/%.c
	@mkdir -p $(dir $@)
	$(CC) $(BERT_CFLAGS) -MMD -MP -fvisibility=hidden -c $< -o $@

$(BERT_LIB): $(BERT_OBJS) $(BERT_DIR)/libnpbert.map $(TENSOR_LIB) $(CCL_LIB) $(LIBNPUSHM_SO)
	@mkdir -p $(dir $@)
	$(CC) -shared -o $@ $(BERT_OBJS) -Wl,-soname,libnpbert.so \
		-Wl,--version-script=$(BERT_DIR)/libnpbert.map -Wl,--no-undefined \
		-L$(LIBDIR) -lnptensor -lnpccl -lnpushm -Wl,-rpath,'$$ORIGIN' -ljson-c -lm

$(BERT_CLI): $(wildcard $(BERT_DIR)/cli/*.c $(BERT_DIR)/cli/*.h) $(LIBNPUSHM_DIR)/demo/memstat.c $(BERT_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(BERT_CFLAGS) -I$(LIBNPUSHM_DIR)/demo -o $@ $(wildcard $(BERT_DIR)/cli/*.c) \
		$(LIBNPUSHM_DIR)/demo/memstat.c $(BERT_LIBS)

$(BERT_GEN): $(BERT_DIR)/tools/gen_model.c
	@mkdir -p $(dir $@)
	$(CC) $(BERT_CFLAGS) -o $@ $<

# The C API tests use kselftest_harness.h (extracted by tools/setup.sh).
$(BERT_TEST): $(BERT_DIR)/tests/test_npbert.c $(BERT_LIB)
	@test -f $(SELFTEST_HARNESS)/kselftest_harness.h || \
		{ echo "bert: kselftest_harness.h missing; run 'make setup'" >&2; exit 1; }
	@mkdir -p $(dir $@)
	$(CC) $(BERT_CFLAGS) -Wno-sign-compare -I$(SELFTEST_HARNESS) -o $@ $< $(BERT_LIBS) -lpthread

-include $(BERT_OBJS:.o=.d)

CHECK_SUITES += bert bert-kmod
.PHONY: check-bert check-bert-kmod bench-bert
check-bert: $(BERT_LIB) $(BERT_CLI) $(BERT_GEN) $(BERT_TEST) $(LIBNPUSHM_CLI)
	@tools/run-suite bert apps/bert/tests/run-tests.sh

check-bert-kmod: $(BERT_LIB) $(BERT_CLI) $(BERT_GEN) $(BERT_TEST) $(LIBNPUSHM_CLI)
	@tools/run-suite bert-kmod apps/bert/tests/run-kmod-vm.sh

bench-bert: $(BERT_LIB) $(BERT_CLI) $(BERT_GEN) $(LIBNPUSHM_CLI)
	@bench/bert/run.sh
