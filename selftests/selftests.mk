# SPDX-License-Identifier: GPL-2.0-only
# SPDX-FileCopyrightText: 2026 The npushm authors
# selftests.mk - the module's kselftest-harness tests, run in a VM, and its
# static checks.
#
# Each selftests/npushm_<what>_test.c is one program, build/tests/module-<what>-test
# (an underscore of <what> a dash), built against the kernel's
# kselftest_harness.h (extracted from linux-source-6.1 by tools/setup.sh);
# npushm_reload.c is module-reload-test, npushm_faults.c module-faults-test.
# check-module boots Debian's kernel in qemu (with swiotlb=force, so that
# DMA goes through bounce buffers, and slub_debug poisoning the accounted
# kmalloc caches the module's objects come from, so that a write to a freed
# watch range is a kernel BUG on the stock kernel too, not silent, and with a
# memory-only NUMA node 1 of 256 MiB for the node providers, and an
# ivshmem-plain PCI device whose 128 MiB BAR 2 the module serves as a BAR
# provider), loads
# the freshly built module and the
# selftests' importer module, runs them all, then npushm_reload (which
# unloads and reloads the module) (selftests/run-module-tests.sh).

SELFTEST_HARNESS := $(BUILD)/linux-source/tools/testing/selftests
# The devices of the module suite's VM, the debug lane's too: a memory-only
# NUMA node 1 (MiB), and an ivshmem-plain PCI device (run-vm.sh VM_IVSHMEM,
# MiB) whose BAR 2, at this PCI address, the module serves as a provider.
SELFTEST_VM_DEVICES := VM_NUMA_NODE1=256 VM_IVSHMEM=128 NPUSHM_TEST_BAR=0000:01:00.0@2
# <what> of each selftests/npushm_<what>_test.c, and its program
SELFTEST_NAMES := $(patsubst $(CURDIR)/selftests/npushm_%_test.c,%,$(wildcard $(CURDIR)/selftests/npushm_*_test.c))
selftest_bin = $(TESTDIR)/module-$(subst _,-,$(1))-test
SELFTEST_BINS := $(foreach t,$(SELFTEST_NAMES),$(call selftest_bin,$(t)))
SELFTEST_CFLAGS := -O1 -g -Wall -D_GNU_SOURCE -pthread -I$(SELFTEST_HARNESS) \
	-I$(CURDIR)/include/uapi -I$(CURDIR)/selftests -I$(CURDIR)/kmod/test
SELFTEST_LIBNL := $(shell pkg-config --cflags --libs libnl-genl-3.0 2>/dev/null)
SELFTEST_LDLIBS_npushm_netlink_test := $(SELFTEST_LIBNL)
SELFTEST_LDLIBS_npushm_rdma_test := -libverbs
SELFTEST_LDLIBS_npushm_provider_test := $(SELFTEST_LIBNL)
SELFTEST_LDLIBS_npushm_stress_test := $(SELFTEST_LIBNL)
SELFTEST_LDLIBS_npushm_reload := $(SELFTEST_LIBNL)

# Unloads and reloads the module: run on its own, after the others.
SELFTEST_RELOAD := $(TESTDIR)/module-reload-test

# The fault-injection pass of the debug lane (not run on the stock kernel).
SELFTEST_FAULTS := $(TESTDIR)/module-faults-test
SELFTEST_LDLIBS_npushm_faults := $(SELFTEST_LIBNL)
SELFTEST_BINS_ALL := $(SELFTEST_BINS) $(SELFTEST_FAULTS) $(SELFTEST_RELOAD)
HARNESS_BINS += $(SELFTEST_BINS_ALL)

USER_TARGETS += $(SELFTEST_BINS_ALL)

.PHONY: selftests
selftests: $(SELFTEST_BINS_ALL)

$(SELFTEST_FAULTS): $(CURDIR)/selftests/npushm_faults.c $(wildcard $(CURDIR)/selftests/*.h) $(TEST_USAGE) \
		$(CURDIR)/selftests/debug/fail_nth.h $(CURDIR)/include/uapi/linux/npushm.h
	@mkdir -p $(dir $@)
	$(CC) $(SELFTEST_CFLAGS) -o $@ $< $(TEST_USAGE_LINK) $(SELFTEST_LDLIBS_npushm_faults)

# selftest_rule SOURCE-BASENAME PROGRAM
define selftest_rule
$(2): $(CURDIR)/selftests/$(1).c $(wildcard $(CURDIR)/selftests/*.h) \
		$(CURDIR)/include/uapi/linux/npushm.h $(CURDIR)/kmod/test/npushm_test_uapi.h $(TEST_USAGE)
	@test -f $(SELFTEST_HARNESS)/kselftest_harness.h || \
		{ echo "selftests: kselftest_harness.h missing; run 'make setup'" >&2; exit 1; }
	@mkdir -p $$(dir $$@)
	$(CC) $(SELFTEST_CFLAGS) -o $$@ $$< $(TEST_USAGE_LINK) $$(SELFTEST_LDLIBS_$(1))
endef
$(foreach t,$(SELFTEST_NAMES),$(eval $(call selftest_rule,npushm_$(t)_test,$(call selftest_bin,$(t)))))
$(eval $(call selftest_rule,npushm_reload,$(SELFTEST_RELOAD)))

CHECK_SUITES += module
check-module: $(SELFTEST_BINS) $(SELFTEST_RELOAD) modules
	@VM_APPEND="swiotlb=force slub_debug=FZP,kmalloc-cg-* $${VM_APPEND:-}" \
		$(SELFTEST_VM_DEVICES) tools/run-suite module \
		selftests/vm/vm-suite.sh module -m 2G -t 900 --no-module -- selftests/run-module-tests.sh

# The static checks (selftests/static-checks.sh): the module's, checkpatch
# --strict, W=1 and sparse builds; the installed static archives' symbols
# (INSTALL_ARCHIVES, tools/install.mk, which adds them as prerequisites).
CHECK_SUITES += static
.PHONY: check-static
check-static:
	@tools/run-suite static selftests/static-checks.sh $(INSTALL_ARCHIVES)
