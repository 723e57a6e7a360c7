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

from conftest import npushm_ls

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


# ----------------------------------------------------------- engines and sequences

def test_seq_create_refuses_a_negative_capacity(eng):
    """INVALID naming the capacity (it was CONTEXT: 'a sequence of -1 tokens does not fit the
    model's context')."""
    s = P(1)
    assert eng.lib.npllama_seq_create(eng.llm, -1, ctypes.byref(s)) == INVALID
    assert "capacity is -1" in eng.error()
    assert s.value is None
    assert eng.lib.npllama_seq_create(eng.llm, CONTEXT_LEN + 1, ctypes.byref(s)) == CONTEXT


def test_queries_of_a_null_engine_give_zeros(eng):
    """npllama_get_config(NULL, &c) left the caller's bytes in c; every query now gives
    zeros for a NULL handle, as npllama_get_profile did."""
    class Config(ctypes.Structure):
        _fields_ = [(f, ctypes.c_int) for f in ("layers", "hidden", "heads", "kv_heads",
                                                "head_dim", "ffn", "vocab", "context",
                                                "tied")] + \
                   [(f, ctypes.c_double) for f in ("rope_theta", "rope_scale", "rms_eps")]
    lib = eng.lib
    lib.npllama_get_config.argtypes = [P, ctypes.POINTER(Config)]
    c = Config()
    ctypes.memset(ctypes.byref(c), 0x5a, ctypes.sizeof(c))
    lib.npllama_get_config(None, ctypes.byref(c))
    assert bytes(c) == bytes(ctypes.sizeof(c)), "get_config(NULL) left the caller's bytes"
    lib.npllama_get_config(eng.llm, ctypes.byref(c))
    assert (c.vocab, c.context, c.layers) == (VOCAB, CONTEXT_LEN, 2)
    lib.npllama_get_config(eng.llm, None)
    lib.npllama_seq_kv_bytes.restype = ctypes.c_uint64
    lib.npllama_seq_kv_bytes.argtypes = [P]
    lib.npllama_weight_bytes.restype = ctypes.c_uint64
    lib.npllama_weight_bytes.argtypes = [P]
    assert lib.npllama_seq_len(None) == 0
    assert lib.npllama_seq_kv_bytes(None) == 0
    assert lib.npllama_weight_bytes(None) == 0
    for fn in ("npllama_seq_destroy", "npllama_seq_reset", "npllama_destroy",
               "npllama_reset_profile"):
        getattr(lib, fn).argtypes = [P]
        getattr(lib, fn)(None)


def test_null_arguments_are_invalid(eng):
    lib, seq, got = eng.lib, eng.seq(), ctypes.c_int()
    ids = ids_of(1, 2, 3)
    assert lib.npllama_seq_feed(None, ids, 3, None) == INVALID
    assert lib.npllama_seq_feed(seq, None, 3, None) == INVALID
    assert lib.npllama_seq_attach_prefix(None, ids, 3, ctypes.byref(got)) == INVALID
    assert lib.npllama_seq_attach_prefix(seq, None, 3, ctypes.byref(got)) == INVALID
    assert lib.npllama_seq_attach_prefix(seq, ids, 3, None) == INVALID
    assert lib.npllama_seq_publish_prefix(None, ctypes.byref(got), None, 0) == INVALID
    assert lib.npllama_seq_publish_prefix(seq, None, None, 0) == INVALID
    assert lib.npllama_seq_create(None, 0, ctypes.byref(P())) == INVALID
    assert lib.npllama_seq_create(eng.llm, 0, None) == INVALID
    assert lib.npllama_create(None, None, ctypes.byref(P())) == INVALID
    assert lib.npllama_create(eng.model, None, None) == INVALID
    for n in (0, -1, -2 ** 31):
        assert lib.npllama_seq_feed(seq, ids, n, None) == INPUT, n
    assert lib.npllama_seq_len(seq) == 0


# A child process: the engine is destroyed before its sequence, which is then used. Before,
# npllama_destroy freed the engine outright: npllama_seq_feed read freed memory (a crash),
# npllama_seq_destroy wrote it.
ORPHAN = r"""
import ctypes, sys
sys.path.insert(0, %(here)r)
import test_api
class T: llama = %(llama)r
np_lib, lib = test_api.load_libs(T)
e = test_api.Engine(T, lib, np_lib, %(name)r)
seq = e.seq()
ids = test_api.ids_of(*range(1, 20))
assert lib.npllama_seq_feed(seq, ids, 17, None) == 0
lib.npllama_destroy(e.llm)
lib.npllama_destroy(e.llm)      # a second destroy while the sequence lives: nothing
got = ctypes.c_int()
print(lib.npllama_seq_feed(seq, ids, 1, None), e.error())
print(lib.npllama_seq_publish_prefix(seq, ctypes.byref(got), None, 0))
lib.npllama_seq_reset(seq)
print(lib.npllama_seq_attach_prefix(seq, ids, 18, ctypes.byref(got)))
lib.npllama_seq_destroy(seq)    # frees the engine
np_lib.npushm_model_detach(e.model)
print("done")
"""


def test_sequences_outliving_their_engine_are_refused_not_a_crash(tools, loaded):
    import sys
    here = os.path.dirname(os.path.abspath(__file__))
    r = subprocess.run([sys.executable, "-c", ORPHAN % {"here": here, "llama": tools.llama,
                                                        "name": loaded}],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, "exit status %d: %s" % (r.returncode, r.stderr)
    lines = r.stdout.splitlines()
    assert lines[0].startswith("1 npllama_seq_feed: the sequence's engine was destroyed"), lines
    assert lines[1:] == ["1", "1", "done"], lines
