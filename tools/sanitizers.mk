# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
# sanitizers.mk - suite "sanitizers": the libraries' C tests built again
# with AddressSanitizer and UndefinedBehaviorSanitizer, and libnpushm's region
# tests and ccl's unit tests with ThreadSanitizer (tools/run-sanitizers.sh builds them into
# $(BUILD)/sanitizers and runs them).
#
#   make check-sanitizers
SAN_BUILD := $(BUILD)/sanitizers
SAN_CC := $(CC) -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
TSAN_CC := $(CC) -fsanitize=thread

CHECK_SUITES += sanitizers
.PHONY: check-sanitizers
check-sanitizers:
	@tools/run-suite sanitizers tools/run-sanitizers.sh "$(MAKE)" "$(SAN_BUILD)" "$(SAN_CC)" \
		"$(TSAN_CC)"
