# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
"""conftest.py - pytest setup of the ccl Python tests: the npushm package on sys.path, and
the TAP report of tools/pytest_tap.py written to $NPUSHM_TAP_OUT, which
run-python-tests.sh prints for the suite runner."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.normpath(os.path.join(HERE, "..", "..", "..", "python")))

sys.path.insert(0, os.path.normpath(os.path.join(HERE, "..", "..", "..", "tools")))

from pytest_tap import pytest_runtest_logreport, pytest_sessionfinish  # noqa: E402,F401 (the TAP report)
