# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
# install.mk - make install / make uninstall (tools/install.sh does the work).
#
#   make install   [DESTDIR=/staging] [PREFIX=/usr/local] [libdir=...] ...
#   make uninstall (the same variables: removes exactly what install put there)
#   make install-list  print every path install writes (under DESTDIR)
#   make installable   build only what install copies (debian/rules uses it)
#
# GNU directory variables, each overridable on the command line: prefix
# (= PREFIX), exec_prefix, bindir, libdir (with Debian's multiarch directory,
# e.g. lib/x86_64-linux-gnu), includedir, datarootdir, datadir, mandir,
# sysconfdir (/etc when prefix is /usr), and for the system integration:
# pythondir (/usr/lib/python3/dist-packages for /usr, else
# PREFIX/lib/python3.N/dist-packages), dkmsdir (PREFIX/src/npushm-VERSION),
# udevdir, modulesloaddir, systemdunitdir, modprobedir, bashcompdir.
# Installed programs carry no RUNPATH: they find the libraries through the
# dynamic linker's standard search path (make install runs ldconfig when
# DESTDIR is empty).

NPUSHM_VERSION := $(shell cat $(CURDIR)/VERSION)

PREFIX ?= /usr/local
prefix ?= $(PREFIX)
exec_prefix ?= $(prefix)
bindir ?= $(exec_prefix)/bin
MULTIARCH ?= $(shell $(CC) -print-multiarch 2>/dev/null)
libdir ?= $(exec_prefix)/lib$(if $(MULTIARCH),/$(MULTIARCH))
includedir ?= $(prefix)/include
datarootdir ?= $(prefix)/share
datadir ?= $(datarootdir)
mandir ?= $(datarootdir)/man
sysconfdir ?= $(if $(filter /usr,$(prefix)),/etc,$(prefix)/etc)
pythondir ?= $(if $(filter /usr,$(prefix)),$(prefix)/lib/python3/dist-packages,$(prefix)/lib/$(shell \
	/usr/bin/python3 -c 'import sys; print("python%d.%d" % sys.version_info[:2])')/dist-packages)
dkmsdir ?= $(prefix)/src/npushm-$(NPUSHM_VERSION)
# udev and kmod read /lib (= /usr/lib) and /usr/local/lib; Debian 12 packages
# still ship udev rules under /lib/udev (pkg-config's udevdir).
udevdir ?= $(if $(filter /usr,$(prefix)),$(shell pkg-config --variable=udevdir udev 2>/dev/null || echo /lib/udev),$(prefix)/lib/udev)
modulesloaddir ?= $(prefix)/lib/modules-load.d
systemdunitdir ?= $(if $(filter /usr,$(prefix)),$(shell pkg-config --variable=systemdsystemunitdir systemd 2>/dev/null || echo /lib/systemd/system),$(prefix)/lib/systemd/system)
modprobedir ?= $(sysconfdir)/modprobe.d
bashcompdir ?= $(datarootdir)/bash-completion/completions

INSTALL_VARS = DESTDIR="$(DESTDIR)" BUILD="$(BUILD)" VERSION="$(NPUSHM_VERSION)" prefix="$(prefix)" \
	bindir="$(bindir)" libdir="$(libdir)" includedir="$(includedir)" datadir="$(datadir)" \
	mandir="$(mandir)" sysconfdir="$(sysconfdir)" pythondir="$(pythondir)" dkmsdir="$(dkmsdir)" \
	udevdir="$(udevdir)" modulesloaddir="$(modulesloaddir)" systemdunitdir="$(systemdunitdir)" modprobedir="$(modprobedir)" \
	bashcompdir="$(bashcompdir)"

# What install copies out of the build tree (built first if needed; the
# module is installed as source, for DKMS, not built).
# The static archives (each made by the top Makefile's static_archive; make
# check-static checks their symbols against the shared libraries).
INSTALL_ARCHIVES := $(LIBNPUSHM_A) $(TENSOR_ALIB) $(CCL_ALIB) $(BERT_ALIB) $(LLAMA_ALIB)
INSTALL_BUILT := $(LIBNPUSHM_SO) $(LIBNPUSHM_CLI) $(TENSOR_LIB) $(CCL_LIB) $(BINDIR)/npccl-perf \
	$(BERT_LIB) $(BERT_CLI) $(LLAMA_LIB) $(LLAMA_CLI) $(BINDIR)/npccl-load $(INSTALL_ARCHIVES)

check-static: $(INSTALL_ARCHIVES) $(INSTALL_ARCHIVES:.a=.so)

.PHONY: install uninstall install-list installable
installable: $(INSTALL_BUILT)
install: $(INSTALL_BUILT)
	@$(INSTALL_VARS) tools/install.sh install
uninstall:
	@$(INSTALL_VARS) tools/install.sh uninstall
install-list:
	@$(INSTALL_VARS) tools/install.sh list
