# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
"""taplib.py - a minimal TAP runner for the libnpushm Python tests.

Test functions are named test_*; each runs in order, passes if it returns,
fails on an exception (printed as TAP diagnostics) and is skipped by raising
Skip(reason), which is only for what truly cannot run here. run() prints the
plan first and returns the exit status (1 if anything failed).
"""
import sys
import traceback


class Skip(Exception):
    pass


def run(namespace):
    tests = [(n, f) for n, f in namespace.items() if n.startswith("test_") and callable(f)]
    print("1..%d" % len(tests), flush=True)
    failed = 0
    for i, (name, fn) in enumerate(tests, 1):
        try:
            fn()
        except Skip as e:
            print("ok %d - %s # SKIP %s" % (i, name, e), flush=True)
        except Exception:
            failed += 1
            for line in traceback.format_exc().splitlines():
                print("# " + line)
            print("not ok %d - %s" % (i, name), flush=True)
        else:
            print("ok %d - %s" % (i, name), flush=True)
    return 1 if failed else 0


def check(cond, msg="check failed"):
    if not cond:
        raise AssertionError(msg)


def diag(msg):
    print("# " + msg, flush=True)
    sys.stdout.flush()
