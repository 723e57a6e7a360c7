# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
"""test_api.py - libnpllama's C API (npllama.h) called as another library's
author would call it, through ctypes: NULL handles and pointers, negative
and zero counts, buffers too short, ids past what a call needs. Every call
must return the status the header documents (never success on nonsense),
read no more than its contract says, and never crash.

Run by run-tests.sh (make check-llama) on the posix backend, on the "tiny"
test model loaded under a name of its own.
"""
import ctypes
import os
import subprocess

import pytest

P = ctypes.c_void_p
I64P = ctypes.POINTER(ctypes.c_int64)

OK, INVALID, INPUT, CONTEXT = 0, 1, 3, 4
VOCAB, CONTEXT_LEN = 96, 64     # conftest.py's "tiny"
BLOCK = 16                      # NPLLAMA_PREFIX_BLOCK
NAME_SIZE = 45                  # NPLLAMA_PREFIX_NAME_SIZE


def load_libs(tools):
    libdir = os.path.join(os.path.dirname(tools.llama), "..", "lib")
    np_lib = ctypes.CDLL(os.path.join(libdir, "libnpushm.so"))
    lib = ctypes.CDLL(os.path.join(libdir, "libnpllama.so"))
    np_lib.npushm_model_attach.argtypes = [ctypes.c_char_p, ctypes.POINTER(P)]
    np_lib.npushm_model_detach.argtypes = [P]
    lib.npllama_create.argtypes = [P, P, ctypes.POINTER(P)]
    lib.npllama_destroy.argtypes = [P]
    lib.npllama_seq_create.argtypes = [P, ctypes.c_int, ctypes.POINTER(P)]
    lib.npllama_seq_destroy.argtypes = [P]
    lib.npllama_seq_len.argtypes = [P]
    lib.npllama_seq_feed.argtypes = [P, I64P, ctypes.c_int, P]
    lib.npllama_seq_publish_prefix.argtypes = [P, ctypes.POINTER(ctypes.c_int), ctypes.c_char_p,
                                               ctypes.c_size_t]
    lib.npllama_seq_attach_prefix.argtypes = [P, I64P, ctypes.c_int,
                                              ctypes.POINTER(ctypes.c_int)]
    lib.npllama_last_error.restype = ctypes.c_char_p
    return np_lib, lib


class Engine:
    """An engine of the tiny model; seq() makes sequences destroyed with it."""

    def __init__(self, tools, lib, np_lib, name):
        self.lib, self.np_lib = lib, np_lib
        self.model, self.llm, self.seqs = P(), P(), []
        assert np_lib.npushm_model_attach(name.encode(), ctypes.byref(self.model)) == 0
        assert lib.npllama_create(self.model, None, ctypes.byref(self.llm)) == OK, self.error()

    def error(self):
        return self.lib.npllama_last_error().decode()

    def seq(self, capacity=0):
        s = P()
        assert self.lib.npllama_seq_create(self.llm, capacity, ctypes.byref(s)) == OK, \
            self.error()
        self.seqs.append(s)
        return s

    def close(self):
        for s in self.seqs:
            self.lib.npllama_seq_destroy(s)
        self.lib.npllama_destroy(self.llm)
        self.np_lib.npushm_model_detach(self.model)


@pytest.fixture(scope="module")
def loaded(tools, models):
    name = "llama-test-api-%d" % os.getpid()
    r = subprocess.run([tools.npushm, "load", models["tiny"], "--name", name],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    yield name
    subprocess.run([tools.npushm, "rm", name], capture_output=True)


@pytest.fixture
def eng(tools, loaded):
    np_lib, lib = load_libs(tools)
    e = Engine(tools, lib, np_lib, loaded)
    yield e
    e.close()


def npushm_ls(tools):
    r = subprocess.run([tools.npushm, "ls"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return [line.split()[0] for line in r.stdout.splitlines()[1:] if line.strip()]


@pytest.fixture
def no_prefixes(tools):
    """Remove every published prefix before and after the test."""
    def clean():
        for name in npushm_ls(tools):
            if name.startswith("npllama-kv."):
                subprocess.run([tools.npushm, "rm", name], capture_output=True)
    clean()
    yield
    clean()


def ids_of(*values):
    return (ctypes.c_int64 * len(values))(*values)


# ------------------------------------------------------------ npllama_seq_attach_prefix

def test_attach_refuses_a_negative_count(eng):
    """n < 0 is INVALID (it returned success, attaching nothing)."""
    got = ctypes.c_int(7)
    seq = eng.seq()
    for n in (-1, -2 ** 31):
        assert eng.lib.npllama_seq_attach_prefix(seq, ids_of(1, 2), n, ctypes.byref(got)) \
            == INVALID, n
        assert ("n is %d" % n) in eng.error()
        assert got.value == 0


def test_attach_reads_only_what_a_prefix_could_cover(eng):
    """A 17-token prompt can attach at most one block (16): ids[16] is never read, so an
    id there outside the vocabulary is the next feed's to refuse, not attach's (attach
    scanned all n ids, which lets n past the caller's array read past it)."""
    got = ctypes.c_int(7)
    seq = eng.seq()
    ids = ids_of(*([1] * BLOCK + [10 ** 9]))
    assert eng.lib.npllama_seq_attach_prefix(seq, ids, BLOCK + 1, ctypes.byref(got)) == OK, \
        eng.error()
    assert got.value == 0
    # n = INT_MAX on a sequence of one block: only that block is read
    seq16 = eng.seq(BLOCK)
    assert eng.lib.npllama_seq_attach_prefix(seq16, ids, 2 ** 31 - 1, ctypes.byref(got)) == OK, \
        eng.error()
    assert got.value == 0
    # an id inside the block that could attach is still refused, naming it
    bad = ids_of(*([1] * 5 + [VOCAB] + [1] * BLOCK))
    assert eng.lib.npllama_seq_attach_prefix(seq, bad, BLOCK + 2, ctypes.byref(got)) == INPUT
    assert "token 5 of 18 is id 96" in eng.error()
    # short prompts read nothing at all (n <= one block: no prefix can leave a token)
    for n in (0, 1, BLOCK):
        assert eng.lib.npllama_seq_attach_prefix(seq, ids_of(-1), n, ctypes.byref(got)) == OK
        assert got.value == 0


# ----------------------------------------------------------- npllama_seq_publish_prefix

def test_publish_refuses_a_name_buffer_too_short(tools, eng, no_prefixes):
    """name_size below NPLLAMA_PREFIX_NAME_SIZE is INVALID and publishes nothing (the name
    was cut short silently, the region published under the full one)."""
    seq = eng.seq()
    ids = ids_of(*range(1, BLOCK + 3))
    assert eng.lib.npllama_seq_feed(seq, ids, BLOCK + 2, None) == OK, eng.error()
    n = ctypes.c_int(7)
    buf = ctypes.create_string_buffer(b"x" * 63, 64)
    for size in (0, 1, NAME_SIZE - 1):
        assert eng.lib.npllama_seq_publish_prefix(seq, ctypes.byref(n), buf, size) == INVALID
        assert "name_size is %d bytes" % size in eng.error()
        assert "NPLLAMA_PREFIX_NAME_SIZE (45)" in eng.error()
        assert n.value == 0
        assert buf.raw[:63] == b"x" * 63, "the refused call wrote the caller's buffer"
    assert not [x for x in npushm_ls(tools) if x.startswith("npllama-kv.")], \
        "a refused publish published a region"
    assert eng.lib.npllama_seq_publish_prefix(seq, ctypes.byref(n), buf, NAME_SIZE) == OK, \
        eng.error()
    assert n.value == BLOCK
    name = buf.value.decode()
    assert len(name) == NAME_SIZE - 1 and name.startswith("npllama-kv.")
    assert name in npushm_ls(tools)
    # NULL name: any size
    assert eng.lib.npllama_seq_publish_prefix(seq, ctypes.byref(n), None, 0) == OK


def test_publish_of_less_than_a_block_names_nothing(eng):
    """Nothing published: the name is "" (it was left as the caller's bytes)."""
    seq = eng.seq()
    assert eng.lib.npllama_seq_feed(seq, ids_of(1, 2, 3), 3, None) == OK
    n = ctypes.c_int(7)
    buf = ctypes.create_string_buffer(b"x" * 63, 64)
    assert eng.lib.npllama_seq_publish_prefix(seq, ctypes.byref(n), buf, 64) == OK
    assert n.value == 0 and buf.value == b""
