# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
# programs.mk - suite "programs": every built program answers --help and
# --version, and every example of the manual pages and the --help texts runs
# on a scratch model (tests/programs/run-program-tests.sh).
#
#   make check-programs

CHECK_SUITES += programs
.PHONY: check-programs
check-programs: $(LIBNPUSHM_CLI) $(BERT_CLI) $(BERT_GEN) $(LLAMA_CLI) $(BINDIR)/ccl-perf $(BINDIR)/npccl-load
	@tools/run-suite programs tests/programs/run-program-tests.sh
