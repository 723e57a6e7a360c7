# npushm top-level Makefile.
#
#   make            build the userspace libraries, tools and tests (build/)
#   make modules    build kmod/npushm.ko against KDIR
#   make check      set up, build everything, run static checks and every
#                   test suite (VM selftests included); ends "N passed, N failed"
#   make demo       set up, build, run the BERT serving demo (apps/bert/demo)
#   make setup      install missing Debian packages, prepare the test kernel
#
# Each part adds itself through its fragment (*/*.mk): USER_TARGETS are built
# by "make", CHECK_SUITES are run by "make check" through tools/run-suite.

BUILD ?= $(CURDIR)/build
export BUILD

CC ?= cc
CFLAGS ?= -O2 -g
WARNFLAGS := -Wall -Wextra -Wshadow -Wno-unused-parameter
BASE_CFLAGS := -std=gnu11 -fPIC -D_GNU_SOURCE $(WARNFLAGS) -I$(CURDIR)/include/uapi -I$(CURDIR)/include
LIBDIR := $(BUILD)/lib
BINDIR := $(BUILD)/bin

# Kernel tree to build the module against: the running kernel's when it has
# one, else the Debian headers tools/setup.sh installed (ABI derived, not fixed).
KABI = $(shell dpkg-query -W -f='$${Depends}' linux-headers-amd64 2>/dev/null | sed -n 's/^linux-headers-\([^ ,]*\).*/\1/p')
KDIR ?= $(shell if [ -d /lib/modules/$$(uname -r)/build ]; then echo /lib/modules/$$(uname -r)/build; \
	else echo /usr/src/linux-headers-$(KABI); fi)
export KDIR

USER_TARGETS :=
CHECK_SUITES :=

.PHONY: all modules setup check check-suites demo clean static-check
all: user

include kmod/kmod.mk
include libnpushm/libnpushm.mk
include ccl/ccl.mk
include tensor/tensor.mk
include selftests/selftests.mk
include selftests/debug/debug.mk
include tools/sanitizers.mk
include apps/bert/bert.mk

.PHONY: user
user: $(USER_TARGETS)

setup:
	@tools/setup.sh

# The tests build the module against the kernel the VM boots (Debian's
# linux-image matching linux-headers-amd64), whatever kernel the host runs.
# Read at run time from what setup.sh recorded: on a fresh machine the headers
# are installed by the recipe's first line, after this Makefile was parsed.
VM_KDIR = /usr/src/linux-headers-$$(cat $(BUILD)/kernel/abi)

check:
	@tools/setup.sh
	@$(MAKE) --no-print-directory all modules KDIR=$(VM_KDIR)
	@rm -rf $(BUILD)/tap
	@$(MAKE) --no-print-directory -k $(addprefix check-,$(CHECK_SUITES)) KDIR=$(VM_KDIR) || true
	@tools/tap-summary $(CHECK_SUITES)

demo:
	@tools/setup.sh
	@$(MAKE) --no-print-directory all
	@$(MAKE) --no-print-directory run-demo

clean:
	rm -rf $(BUILD)
	rm -f kmod/*.o kmod/.*.cmd kmod/*.ko kmod/*.mod kmod/*.mod.c kmod/.*.d \
		kmod/modules.order modules.order Module.symvers .Module.symvers.cmd .modules.order.cmd
