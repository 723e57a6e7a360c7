# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
# licences.mk - the licensing checks (tools/check-licences.sh): `reuse lint`
# and every tracked file's SPDX tags against the licence its path calls for.
#
#   make reuse-lint       run them and print the files still missing tags
#   make check-licences   the same as suite "licences" of make check (TAP)
#
# Fix a file with tools/spdx-tag FILE... (idempotent).

CHECK_SUITES += licences
.PHONY: reuse-lint check-licences
reuse-lint:
	@tools/check-licences.sh
check-licences:
	@tools/run-suite licences tools/check-licences.sh
