# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
"""test_bert.py - the npushm BERT engine (npushm-bert, libnpbert) against the
plain-PyTorch reference (apps/bert/reference/bert_ref.py) on the same
safetensors files, single-rank and tensor parallel, and every refusal of
the command: bad batches, files that are not a BERT layout, splits that do
not divide. Outputs must agree within 1e-4 of the reference's largest
magnitude (last hidden state and pooled output separately).

Run by run-tests.sh (make check-bert) on the posix backend, with pytest and
the TAP reporter of conftest.py.
"""
import json
import os
import struct
import subprocess
import sys

import numpy as np
import pytest

import engine_tests

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "reference"))
import bert_ref  # noqa: E402

TOL = 1e-4
_REFS = {}


def reference(path):
    if path not in _REFS:
        import torch
        torch.set_num_threads(1)
        w, meta = bert_ref.read_safetensors(path)
        prefix = "bert." if "bert.embeddings.word_embeddings.weight" in w else ""
        w = {k[len(prefix):]: v for k, v in w.items() if k.startswith(prefix)}
        _REFS[path] = bert_ref.Bert(w, bert_ref.bert_heads(meta, w))
    return _REFS[path]


def run_ref(path, ids, types, mask):
    import torch
    h, p = reference(path)(torch.from_numpy(ids), torch.from_numpy(types), torch.from_numpy(mask))
    return h.numpy(), None if p is None else p.numpy()


def run_engine(tools, workdir, model, ids, types=None, mask=None, tp=1, extra=(), check=True):
    base = os.path.join(workdir, "case")
    args = [tools.bert, "--ids", base + ".ids.npy", "--out", base, "--tp", str(tp)]
    np.save(base + ".ids.npy", ids)
    if types is not None:
        np.save(base + ".types.npy", types)
        args += ["--types", base + ".types.npy"]
    if mask is not None:
        np.save(base + ".mask.npy", mask)
        args += ["--mask", base + ".mask.npy"]
    for f in (base + ".hidden.npy", base + ".pooled.npy"):
        if os.path.exists(f):
            os.unlink(f)
    r = subprocess.run(args + list(extra) + [model], capture_output=True, text=True, timeout=120)
    if check:
        assert r.returncode == 0, "npushm-bert failed (%d): %s" % (r.returncode, r.stderr)
        hidden = np.load(base + ".hidden.npy")
        pooled = np.load(base + ".pooled.npy") if os.path.exists(base + ".pooled.npy") else None
        return hidden, pooled
    return r


def batch(kind, vocab, positions, seed):
    """Padded batches of several kinds; ids of padding are 0, as tokenizers do."""
    rng = np.random.default_rng(seed)
    if kind == "right-padded":
        lens = [16, 5, 11, 1]
        S = 16
    elif kind == "left-padded":
        lens = [9, 4, 7]
        S = 9
    elif kind == "full-length":
        lens = [positions]
        S = positions
    else:  # "mixed": one long, many short
        lens = [2, 13, 1, 8, 13]
        S = 13
    B = len(lens)
    ids = rng.integers(1, vocab, (B, S))
    types = np.zeros((B, S), np.int64)
    mask = np.zeros((B, S), np.int64)
    for i, n in enumerate(lens):
        cols = slice(S - n, S) if kind == "left-padded" else slice(0, n)
        mask[i, cols] = 1
        tt = np.zeros(n, np.int64)
        tt[n // 2:] = 1
        types[i, cols] = tt
    ids[mask == 0] = 0
    return ids, types, mask


def assert_close(name, got, want):
    assert got.shape == want.shape, "%s: shape %s, reference %s" % (name, got.shape, want.shape)
    err = float(np.abs(got.astype(np.float64) - want).max())
    ref = float(np.abs(want).max())
    assert err <= TOL * ref, "%s: max error %.3g > %g x largest magnitude %.3g" % (name, err, TOL, ref)


CONFIGS = [("tiny", 1), ("tiny", 2), ("tiny3", 1), ("tiny3", 3)]
KINDS = ["right-padded", "left-padded", "full-length", "mixed"]
SIZES = {"tiny": (100, 32), "tiny3": (120, 40)}


@pytest.mark.parametrize("model,tp", CONFIGS, ids=["%s-tp%d" % c for c in CONFIGS])
@pytest.mark.parametrize("kind", KINDS)
def test_matches_pytorch(tools, workdir, models, model, tp, kind):
    vocab, positions = SIZES[model]
    ids, types, mask = batch(kind, vocab, positions, seed=KINDS.index(kind))
    hidden, pooled = run_engine(tools, workdir, models[model], ids, types, mask, tp=tp)
    rh, rp = run_ref(models[model], ids, types, mask)
    assert_close("last hidden state", hidden, rh)
    assert_close("pooled output", pooled, rp)


@pytest.mark.parametrize("threads", [1, 2])
def test_packed_weights_match_pytorch(tools, workdir, models, threads):
    """--dtype f32 on a file: the linear weights packed for this CPU, read in place."""
    r = subprocess.run([tools.bert, "--info", "--dtype", "f32", models["tiny3"]],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    if "(openblas)" in r.stdout:
        pytest.skip("the GEMM runs on OpenBLAS here: nothing is packed")
    assert "packed linear weights read in place: 13 of 13" in r.stdout, r.stdout
    ids, types, mask = batch("mixed", 120, 40, seed=11)
    hidden, pooled = run_engine(tools, workdir, models["tiny3"], ids, types, mask,
                                extra=["--dtype", "f32", "--threads", str(threads)])
    rh, rp = run_ref(models["tiny3"], ids, types, mask)
    assert_close("last hidden state", hidden, rh)
    assert_close("pooled output", pooled, rp)


@pytest.mark.parametrize("dtype", ["f32", "bf16x3", "int8"])
def test_packed_only_model_matches_pytorch(tools, workdir, models, dtype):
    """`npushm load --dtype X --packed-only`: the linear weights stored packed only (one copy),
    read in place by the engine, shown as such by `npushm ls` and `npushm info`; f32 and
    bf16x3 within the f32 tolerance of PyTorch, int8 within the int8 tolerances."""
    name = "w21-packed-only-%s-%d" % (dtype, os.getpid())
    r = subprocess.run([tools.npushm, "load", models["tiny3"], "--name", name, "--dtype", dtype,
                        "--packed-only", "--json"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    try:
        loaded = json.loads(r.stdout)
        assert loaded["packed_only"] is True
        info = json.loads(subprocess.run([tools.npushm, "info", name, "--json"], capture_output=True,
                                         text=True, timeout=60, check=True).stdout)
        if not info["layouts"]:
            pytest.skip("nothing packed here (the GEMM runs on OpenBLAS, or no %s kernels)" % dtype)
        assert info["packed_only_tensors"] == 13 == len(info["layouts"])
        tagged = {"f32": "/f32/", "bf16x3": "/bf16x3/", "int8": "/s8/"}[dtype]
        assert all(tagged in l["tag"] for l in info["layouts"]), info["layouts"]
        only = {t["name"] for t in info["tensors"] if t["packed_only"]}
        assert only == {l["tensor"] for l in info["layouts"]}
        assert info["region_size"] < 1.1 * os.path.getsize(models["tiny3"]) + (1 << 20)
        ls = subprocess.run([tools.npushm, "ls"], capture_output=True, text=True, timeout=60, check=True)
        assert any(name in line and "packed only" in line for line in ls.stdout.splitlines()), ls.stdout
        r = subprocess.run([tools.bert, "--info", name], capture_output=True, text=True, timeout=60)
        assert "packed linear weights read in place: 13 of 13" in r.stdout, r.stdout + r.stderr
        ids, types, mask = batch("mixed", 120, 40, seed=31)
        hidden, pooled = run_engine(tools, workdir, name, ids, types, mask)
        rh, rp = run_ref(models["tiny3"], ids, types, mask)
        if dtype != "int8":
            assert_close("last hidden state", hidden, rh)
            assert_close("pooled output", pooled, rp)
        else:
            err = float(np.abs(hidden.astype(np.float64) - rh).max() / np.abs(rh).max())
            assert 1e-5 < err <= INT8_HIDDEN_TOL, err
    finally:
        subprocess.run([tools.npushm, "rm", name, "--quiet"], timeout=60)


def test_packed_only_needs_a_dtype(tools, models):
    r = subprocess.run([tools.npushm, "load", models["tiny"], "--name", "x", "--packed-only"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "--packed-only needs --dtype" in r.stderr, r.stderr
    r = subprocess.run([tools.bert, "--info", "--packed-only", models["tiny"]],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "--packed-only needs --dtype" in r.stderr, r.stderr


# int8 (weights per output channel, inputs per row): measured on these models
# 0.13-0.92 % for the hidden state's largest error and pooled cosines >= 0.99987
INT8_HIDDEN_TOL = 0.02      # max |error| / max |reference| of the last hidden state
INT8_POOLED_COS = 0.999     # cosine of each sequence's pooled output with the reference


@pytest.mark.parametrize("model", ["tiny3", "big"])
@pytest.mark.parametrize("threads", [1, 2])
def test_int8_weights_accuracy(tools, workdir, models, model, threads):
    """--dtype int8 on a file: the linear layers run in int8 (quantised weights stored in
    the model, inputs quantised per row, exact int32 sums), within stated tolerances."""
    r = subprocess.run([tools.bert, "--info", "--dtype", "int8", models[model]],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    if "(openblas)" in r.stdout:
        pytest.skip("the GEMM runs on OpenBLAS here: no int8 layouts")
    assert "packed linear weights read in place: 13 of 13" in r.stdout, r.stdout
    vocab, positions = {"tiny3": (120, 40), "big": (100, 32)}[model]
    ids, types, mask = batch("mixed", vocab, positions, seed=21)
    hidden, pooled = run_engine(tools, workdir, models[model], ids, types, mask,
                                extra=["--dtype", "int8", "--threads", str(threads)])
    rh, rp = run_ref(models[model], ids, types, mask)
    err = float(np.abs(hidden.astype(np.float64) - rh).max() / np.abs(rh).max())
    cos = min(float(np.dot(a, b) / np.linalg.norm(a) / np.linalg.norm(b))
              for a, b in zip(pooled.astype(np.float64), rp.astype(np.float64)))
    print("int8 %s, %d threads: hidden error %.4f of the largest value, pooled cosine >= %.6f"
          % (model, threads, err, cos))
    assert err <= INT8_HIDDEN_TOL, "hidden state: error %.4f > %g" % (err, INT8_HIDDEN_TOL)
    assert cos >= INT8_POOLED_COS, "pooled output: cosine %.6f < %g" % (cos, INT8_POOLED_COS)
    assert err > 1e-5, "no quantisation error at all: the int8 path did not run"


# bf16 (weights and inputs rounded to bfloat16, float32 sums): measured on these
# models 0.04-0.21 % for the hidden state's largest error, pooled cosines >= 0.99999
BF16_HIDDEN_TOL = 0.01
BF16_POOLED_COS = 0.9999


@pytest.mark.parametrize("model", ["tiny3", "big"])
def test_bf16_weights_accuracy(tools, workdir, models, model):
    r = subprocess.run([tools.bert, "--info", "--dtype", "bf16", models[model]],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    if "read in place: 0 of 0" in r.stdout:
        pytest.skip("no bf16 kernels here (AVX512_BF16) or the GEMM is OpenBLAS's: nothing packed")
    assert "packed linear weights read in place: 13 of 13" in r.stdout, r.stdout
    vocab, positions = {"tiny3": (120, 40), "big": (100, 32)}[model]
    ids, types, mask = batch("mixed", vocab, positions, seed=23)
    hidden, pooled = run_engine(tools, workdir, models[model], ids, types, mask, extra=["--dtype", "bf16"])
    rh, rp = run_ref(models[model], ids, types, mask)
    err = float(np.abs(hidden.astype(np.float64) - rh).max() / np.abs(rh).max())
    cos = min(float(np.dot(a, b) / np.linalg.norm(a) / np.linalg.norm(b))
              for a, b in zip(pooled.astype(np.float64), rp.astype(np.float64)))
    print("bf16 %s: hidden error %.4f of the largest value, pooled cosine >= %.7f" % (model, err, cos))
    assert err <= BF16_HIDDEN_TOL and cos >= BF16_POOLED_COS, (err, cos)
    assert err > 1e-6, "no rounding error at all: the bf16 path did not run"


@pytest.mark.parametrize("threads", [1, 2])
def test_bf16x3_weights_within_the_f32_tolerance(tools, workdir, models, threads):
    """--dtype bf16x3 (CPUs with AMX): float32 weights as two bf16 terms, three bf16 products
    summed in float32, within the f32 path's tolerance of PyTorch (1e-4 of the largest value);
    elsewhere the loader says it needs AMX and packs nothing."""
    r = subprocess.run([tools.bert, "--info", "--dtype", "bf16x3", models["tiny3"]],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    if "(openblas)" in r.stdout:
        pytest.skip("the GEMM runs on OpenBLAS here: nothing is packed")
    # oneDNN held below AMX: nothing packed, and the user is told why
    env = dict(os.environ, ONEDNN_MAX_CPU_ISA="AVX512_CORE")
    slow = subprocess.run([tools.bert, "--info", "--dtype", "bf16x3", models["tiny3"]],
                          capture_output=True, text=True, timeout=60, env=env)
    assert slow.returncode == 0 and "read in place: 0 of 0" in slow.stdout, slow.stdout + slow.stderr
    assert "--dtype bf16x3: no weight was packed" in slow.stderr and "needs AMX" in slow.stderr, slow.stderr
    if "amx_bf16" not in open("/proc/cpuinfo").read():
        assert "read in place: 0 of 0" in r.stdout and "AMX" in r.stderr, r.stdout + r.stderr
        return
    assert "packed linear weights read in place: 13 of 13" in r.stdout, r.stdout + r.stderr
    for model in ("tiny3", "big"):
        vocab, positions = {"tiny3": (120, 40), "big": (100, 32)}[model]
        ids, types, mask = batch("mixed", vocab, positions, seed=37)
        hidden, pooled = run_engine(tools, workdir, models[model], ids, types, mask,
                                    extra=["--dtype", "bf16x3", "--threads", str(threads)])
        rh, rp = run_ref(models[model], ids, types, mask)
        err = float(np.abs(hidden.astype(np.float64) - rh).max() / np.abs(rh).max())
        print("bf16x3 %s, %d threads: hidden error %.2g of the largest value" % (model, threads, err))
        assert_close("last hidden state", hidden, rh)
        if pooled is not None:
            assert_close("pooled output", pooled, rp)


def test_dtype_only_for_files_and_f32(tools, models):
    r = subprocess.run([tools.bert, "--info", "--dtype", "f16", models["tiny"]],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "--dtype 'f16'" in r.stderr, r.stderr
    r = subprocess.run([tools.bert, "--info", "--dtype", "f32", "some-loaded-model"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 1 and "--dtype applies to a .safetensors MODEL" in r.stderr, r.stderr


def test_prefixed_names_without_pooler(tools, workdir, models):
    ids, types, mask = batch("right-padded", 50, 16, seed=9)
    hidden, pooled = run_engine(tools, workdir, models["prefixed"], ids, types, mask)
    assert pooled is None
    rh, _ = run_ref(models["prefixed"], ids, types, mask)
    assert_close("last hidden state", hidden, rh)


def test_tensor_parallel_equals_one_rank(tools, workdir, models):
    ids, types, mask = batch("mixed", 120, 40, seed=5)
    h1, p1 = run_engine(tools, workdir, models["tiny3"], ids, types, mask, tp=1)
    for tp in (2, 3):
        h, p = run_engine(tools, workdir, models["tiny3"], ids, types, mask, tp=tp)
        assert_close("tp %d hidden vs tp 1" % tp, h, h1)
        assert_close("tp %d pooled vs tp 1" % tp, p, p1)


def test_text_input_pads_and_masks(tools, workdir, models):
    path = os.path.join(workdir, "seqs.txt")
    with open(path, "w") as f:
        f.write("5 17 42 3\n9 8\n")
    r = subprocess.run([tools.bert, "--text", path, "--out", os.path.join(workdir, "text"), models["tiny"]],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    ids = np.array([[5, 17, 42, 3], [9, 8, 0, 0]])
    mask = np.array([[1, 1, 1, 1], [1, 1, 0, 0]])
    rh, rp = run_ref(models["tiny"], ids, np.zeros_like(ids), mask)
    assert_close("hidden", np.load(os.path.join(workdir, "text.hidden.npy")), rh)
    assert_close("pooled", np.load(os.path.join(workdir, "text.pooled.npy")), rp)


def test_second_run_reuses_memory_and_copies_nothing(tools, workdir, models):
    ids, types, mask = batch("mixed", 120, 40, seed=2)
    r = run_engine(tools, workdir, models["tiny3"], ids, types, mask, extra=["--memory", "--repeat", "2"],
                   check=False)
    assert r.returncode == 0, r.stderr
    assert "last run took 0 bytes fresh from the OS and copied 0 bytes implicitly" in r.stdout, r.stdout
    assert "read in place from the shared model (not copied)" in r.stdout


def test_stream_json_report(tools, models):
    r = subprocess.run([tools.bert, "--stream", "3,2,4,9,11", "--json", "--tp", "2", models["tiny"]],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    rep = json.loads(r.stdout.splitlines()[-1])
    assert rep["batches"] == 3 and rep["sequences"] == 6 and rep["tp"] == 2
    assert len(rep["latencies_s"]) == 3 and len(rep["pids"]) == 2
    assert rep["memory"]["fresh_bytes_last_run"] == 0
    assert rep["memory"]["shared_workspace_bytes"] > 0
    assert rep["profile"]["allreduce"] > 0


def test_stream_twins_agree(tools, workdir, models):
    """The demo's PyTorch workers draw the stream in Python (demo/stream.py), the
    engine in C (cli/stream.c): the last batch of a stream, computed by both."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "demo"))
    import stream
    spec = "3,5,1,13,77"
    out = os.path.join(workdir, "stream")
    r = subprocess.run([tools.bert, "--stream", spec, "--out", out, models["tiny"]], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    ids, types, mask = stream.batch(spec, 2, 100, 2)
    assert mask.sum(1).min() >= 1 and (types * mask).sum() > 0
    rh, rp = run_ref(models["tiny"], ids, types, mask)
    assert_close("hidden", np.load(out + ".hidden.npy"), rh)
    assert_close("pooled", np.load(out + ".pooled.npy"), rp)


# ------------------------------------------------------------------ refusals

def expect_refusal(r, *needles, code=1):
    assert r.returncode == code, "exit status %d (wanted %d); stderr: %s" % (r.returncode, code, r.stderr)
    for n in needles:
        assert n in r.stderr, "%r not in the message: %s" % (n, r.stderr)


def bad_batch(kind):
    ids = np.array([[1, 2, 3, 4], [5, 6, 7, 8]])
    types = np.zeros_like(ids)
    mask = np.ones_like(ids)
    if kind == "id-too-big":
        ids[1, 2] = 100
    elif kind == "id-negative":
        ids[0, 3] = -7
    elif kind == "type":
        types[1, 1] = 2
    elif kind == "mask-value":
        mask[0, 2] = 3
    elif kind == "mask-empty":
        mask[1, :] = 0
    elif kind == "too-long":
        ids = np.ones((1, 33), np.int64)
        types = mask = None
    elif kind == "empty":
        ids = np.zeros((0, 4), np.int64)
        types = mask = None
    return ids, types, mask


BAD = {
    "id-too-big": ["token id 100 (sequence 1, position 2) is outside the vocabulary", "0..99"],
    "id-negative": ["token id -7 (sequence 0, position 3)"],
    "type": ["token type 2 (sequence 1, position 1) is outside 0..1"],
    "mask-value": ["attention mask value 3 (sequence 0, position 2)"],
    "mask-empty": ["sequence 1 has no token"],
    "too-long": ["sequences of 33 tokens are longer than the model's 32 positions", "truncate"],
    "empty": ["empty batch"],
}


@pytest.mark.parametrize("kind", list(BAD))
def test_refuses_bad_batch(tools, workdir, models, kind):
    ids, types, mask = bad_batch(kind)
    r = run_engine(tools, workdir, models["tiny"], ids, types, mask, check=False)
    expect_refusal(r, *BAD[kind])


def test_refuses_bad_batch_with_tensor_parallelism(tools, workdir, models):
    ids, types, mask = bad_batch("id-too-big")
    r = run_engine(tools, workdir, models["tiny"], ids, types, mask, tp=2, check=False)
    expect_refusal(r, *BAD["id-too-big"])


def test_refuses_empty_text(tools, workdir, models):
    path = os.path.join(workdir, "empty.txt")
    open(path, "w").write("")
    r = subprocess.run([tools.bert, "--text", path, models["tiny"]], capture_output=True, text=True)
    expect_refusal(r, "holds no sequence: empty batch")


def read_header(path):
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
        data = f.read()
    return header, data


def write_variant(path, header, data):
    """Rewrite data so that every tensor's bytes match its (possibly changed) entry."""
    out, blobs, off = {}, [], 0
    for name, d in header.items():
        if name == "__metadata__":
            out[name] = d
            continue
        size = int(np.prod(d["shape"])) * {"F32": 4, "F16": 2}[d["dtype"]]
        blob = d.pop("_bytes", None)
        if blob is None:
            a, b = d["data_offsets"]
            blob = data[a:b]
        blob = (blob + bytes(size))[:size]
        out[name] = dict(d, data_offsets=[off, off + size])
        blobs.append(blob)
        off += size
    h = json.dumps(out).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def variant(models, workdir, name, edit):
    header, data = read_header(models["tiny"])
    edit(header)
    path = os.path.join(workdir, "bad-%s.safetensors" % name)
    write_variant(path, header, data)
    return path


def _drop(h):
    del h["encoder.layer.1.output.dense.bias"]


def _shape(h):
    h["encoder.layer.1.intermediate.dense.weight"]["shape"] = [128, 64]


def _dtype(h):
    h["pooler.dense.bias"]["dtype"] = "F16"


def _gap(h):
    for k in [k for k in h if k.startswith("encoder.layer.1.")]:
        h[k.replace("layer.1.", "layer.2.")] = h.pop(k)


def _notbert(h):
    for k in [k for k in h if k != "__metadata__"]:
        h[k.replace("embeddings.", "emb.")] = h.pop(k)


def _heads(h):
    h["__metadata__"]["num_attention_heads"] = "5"


LAYOUT = {
    "missing": (_drop, ["no tensor 'encoder.layer.1.output.dense.bias'", "expected shape [64]"]),
    "shape": (_shape, ["tensor 'encoder.layer.1.intermediate.dense.weight' has shape [128, 64], expected [256, 64]"]),
    "dtype": (_dtype, ["tensor 'pooler.dense.bias' is F16", "convert the checkpoint to float32"]),
    "gap": (_gap, ["tensor 'encoder.layer.2.", "layers must be numbered from 0 without gaps"]),
    "not-bert": (_notbert, ["no tensor 'embeddings.word_embeddings.weight'", "Hugging Face BertModel"]),
    "heads": (_heads, ["5 attention heads do not divide the hidden size 64"]),
}


@pytest.mark.parametrize("kind", list(LAYOUT))
def test_refuses_non_bert_layout(tools, workdir, models, kind):
    edit, needles = LAYOUT[kind]
    path = variant(models, workdir, kind, edit)
    r = subprocess.run([tools.bert, "--info", path], capture_output=True, text=True, timeout=60)
    expect_refusal(r, *needles)


def test_refuses_split_of_heads(tools, workdir, models):
    ids, types, mask = batch("mixed", 100, 32, seed=1)
    r = run_engine(tools, workdir, models["tiny"], ids, types, mask, tp=3, check=False)
    expect_refusal(r, "tensor parallelism over 3 ranks: the 4 attention heads do not divide by 3")


def test_refuses_split_of_ffn(tools, workdir, models):
    ids, types, mask = batch("mixed", 50, 16, seed=1)
    r = run_engine(tools, workdir, models["ffn256"], ids, types, mask, tp=3, check=False)
    expect_refusal(r, "the FFN width 256", "does not divide by 3")


def test_model_file_never_runs_another_users_copy(tools, workdir, models):
    """A .safetensors MODEL is loaded under npushm-bert.<its hash>; a model another user put
    under that name first (any bytes, any claimed hash) is refused, never run."""
    ids, types, mask = batch("full-length", 100, 32, seed=4)
    engine_tests.refuses_planted_model(tools.npushm, models["tiny"], "npushm-bert",
                                       lambda: run_engine(tools, workdir, models["tiny"], ids,
                                                          check=False))
    # its own copy under that name is used (and removed after the run, as before)
    run_engine(tools, workdir, models["tiny"], ids)


def test_refuses_unknown_model(tools, workdir):
    r = subprocess.run([tools.bert, "--info", "no-such-model-here"], capture_output=True, text=True)
    expect_refusal(r, "no-such-model-here", "npushm load")


@pytest.mark.parametrize("args,needle", [
    ([], "exactly one of --ids, --text, --stream"),
    (["--tp", "0", "--text", "x"], "--tp wants an integer in 1..64"),
    (["--stream", "1,2,9,3,0"], "--stream wants COUNT,BATCH,MIN_LEN,MAX_LEN,SEED"),
    # 2^32 + 1 batches: not wrapped to 1
    (["--stream", "4294967297,2,4,8,1"], "--stream wants COUNT,BATCH,MIN_LEN,MAX_LEN,SEED"),
    (["--types", "t.npy", "--text", "x"], "--types and --mask go with --ids"),
    # --pad-id was ignored without --text: the run went on with the ids as they were
    (["--pad-id", "3", "--ids", "x.npy"], "--pad-id goes with --text"),
    (["--pad-id", "3", "--stream", "1,2,4,8,1"], "--pad-id goes with --text"),
    (["--pad-id", "0", "--info"], "--pad-id goes with --text"),
], ids=["no-input", "tp-zero", "stream-lengths", "stream-count-overflow", "types-without-ids",
        "pad-id-with-ids", "pad-id-with-stream", "pad-id-with-info"])
def test_usage_errors(tools, models, args, needle):
    r = subprocess.run([tools.bert] + args + [models["tiny"]], capture_output=True, text=True)
    expect_refusal(r, needle, code=2)


def test_version_and_help(tools):
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    with open(os.path.join(root, "VERSION")) as f:
        version = f.read().strip()
    r = subprocess.run([tools.bert, "--version"], capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout == "npushm-bert %s\n" % version and r.stderr == ""
    r = subprocess.run([tools.bert, "--help"], capture_output=True, text=True)
    assert r.returncode == 0 and r.stderr == ""
    assert r.stdout.startswith("usage: npushm-bert ") and "Exit status:" in r.stdout
    assert "/dev/npushm exists" not in r.stdout and "/run/npushm" in r.stdout


# ------------------------------------------------------------------ hostile inputs (issue 25)

def _poison(name, index, value):
    """An edit that stores @value at flat element @index of tensor @name."""
    def edit(h, data):
        a, b = h[name]["data_offsets"]
        arr = np.frombuffer(data[a:b], np.float32).copy()
        arr[index] = value
        h[name]["_bytes"] = arr.tobytes()
    return edit


def variant_data(models, workdir, name, edit, model="tiny"):
    header, data = read_header(models[model])
    edit(header, data)
    path = os.path.join(workdir, "bad-%s.safetensors" % name)
    write_variant(path, header, data)
    return path


NONFINITE = {
    "nan-ffn": (_poison("encoder.layer.1.intermediate.dense.weight", 3 * 64 + 5, np.nan),
                "tensor 'encoder.layer.1.intermediate.dense.weight' holds NaN at [3, 5]"),
    "inf-pooler-bias": (_poison("pooler.dense.bias", 63, np.inf),
                        "tensor 'pooler.dense.bias' holds +Inf at [63]"),
    "neginf-words": (_poison("embeddings.word_embeddings.weight", 99 * 64, -np.inf),
                     "tensor 'embeddings.word_embeddings.weight' holds -Inf at [99, 0]"),
}


@pytest.mark.parametrize("kind", list(NONFINITE))
def test_refuses_non_finite_weights(tools, workdir, models, kind):
    edit, needle = NONFINITE[kind]
    path = variant_data(models, workdir, kind, edit)
    for tp in ("1", "2"):
        r = subprocess.run([tools.bert, "--info", "--tp", tp, path], capture_output=True, text=True,
                           timeout=60)
        expect_refusal(r, needle, "--no-weight-check")
    # weights read packed are checked in the layout read (f32, bf16) or in the plain source (int8)
    for dtype in ("f32", "bf16", "bf16x3", "int8"):
        r = subprocess.run([tools.bert, "--info", "--dtype", dtype, path], capture_output=True,
                           text=True, timeout=60)
        expect_refusal(r, "tensor '%s' holds" % needle.split("'")[1], "--no-weight-check")
    r = subprocess.run([tools.bert, "--info", "--no-weight-check", path], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, "--no-weight-check did not skip the scan: " + r.stderr


def _meta_eps(value):
    def edit(h):
        h["__metadata__"]["layer_norm_eps"] = value
    return edit


@pytest.mark.parametrize("value", ["nan", "-1e-5", "tiny", "inf"])
def test_refuses_bad_eps_in_metadata(tools, workdir, models, value):
    path = variant(models, workdir, "eps-" + value, _meta_eps(value))
    r = subprocess.run([tools.bert, "--info", path], capture_output=True, text=True, timeout=60)
    expect_refusal(r, 'layer_norm_eps "%s"' % value, "--eps")
    # an explicit epsilon overrides the metadata
    r = subprocess.run([tools.bert, "--info", "--eps", "1e-5", path], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0 and "LayerNorm eps 1e-05\n" in r.stdout, r.stdout + r.stderr


@pytest.mark.parametrize("value", ["nan", "-1", "1e-5x", "inf", ""])
def test_refuses_bad_eps_option(tools, models, value):
    r = subprocess.run([tools.bert, "--info", "--eps", value, models["tiny"]], capture_output=True,
                       text=True, timeout=60)
    expect_refusal(r, "--eps wants a finite number >= 0", "got '%s'" % value, code=2)


def test_eps_zero_is_possible(tools, workdir, models):
    r = subprocess.run([tools.bert, "--info", "--eps", "0", models["tiny"]], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0 and "LayerNorm eps 0\n" in r.stdout, r.stdout + r.stderr
    r = subprocess.run([tools.bert, "--info", models["tiny"]], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "LayerNorm eps 1e-12\n" in r.stdout, r.stdout + r.stderr


def _cut_ffn(h):
    h["encoder.layer.0.intermediate.dense.weight"]["shape"] = [127, 64]


def _narrow_words(h):
    h["embeddings.word_embeddings.weight"]["shape"] = [100, 63]


def _no_vocab(h):
    h["embeddings.word_embeddings.weight"]["shape"] = [0, 64]


def _narrow_positions(h):
    h["embeddings.position_embeddings.weight"]["shape"] = [32, 63]


NAMES = {
    "ffn-127-rows": (_cut_ffn, ["tensor 'encoder.layer.0.intermediate.dense.weight' has shape [127, 64], "
                                "expected [256, 64]"]),
    "words-63-wide": (_narrow_words, ["tensor 'embeddings.word_embeddings.weight' has shape [100, 63], "
                                      "expected [N, 64] with N >= 1"]),
    "positions-63-wide": (_narrow_positions, ["tensor 'embeddings.position_embeddings.weight' has shape "
                                              "[32, 63], expected [N, 64] with N >= 1"]),
    "vocab-0": (_no_vocab, ["tensor 'embeddings.word_embeddings.weight' has shape [0, 64]",
                            "its vocabulary size is 0"]),
}


@pytest.mark.parametrize("kind", list(NAMES))
def test_refusal_names_the_wrong_tensor(tools, workdir, models, kind):
    edit, needles = NAMES[kind]
    path = variant(models, workdir, kind, edit)
    r = subprocess.run([tools.bert, "--info", path], capture_output=True, text=True, timeout=60)
    expect_refusal(r, *needles)
    assert "[N, M]" not in r.stderr, r.stderr


def test_refuses_blank_text_line(tools, workdir, models):
    path = os.path.join(workdir, "blank.txt")
    with open(path, "w") as f:
        f.write("5 17 42 3\n  \n9 8\n")
    r = subprocess.run([tools.bert, "--text", path, models["tiny"]], capture_output=True, text=True)
    expect_refusal(r, "line 2 is blank", "empty sequence is invalid")


def test_bad_token_message_on_one_line(tools, workdir, models):
    path = os.path.join(workdir, "badtoken.txt")
    with open(path, "w") as f:
        f.write("5 17\n9 x8\n")
    r = subprocess.run([tools.bert, "--text", path, models["tiny"]], capture_output=True, text=True)
    expect_refusal(r, "line 2: 'x8' is not a token id")
    assert r.stderr.count("\n") == 1, "the message is split over lines: %r" % r.stderr


def test_directory_argument_says_directory(tools, workdir):
    r = subprocess.run([tools.bert, "--info", workdir], capture_output=True, text=True)
    expect_refusal(r, "%s is a directory" % workdir)
    assert "no such file" not in r.stderr


@pytest.mark.parametrize("opt", ["--text", "--ids"])
def test_directory_as_batch_says_it_cannot_be_read(tools, workdir, models, opt):
    """A directory opens but does not read: not 'empty batch' nor 'no magic'."""
    r = subprocess.run([tools.bert, opt, workdir, models["tiny"]], capture_output=True, text=True)
    expect_refusal(r, "cannot read %s: Is a directory" % workdir)


def _start_held(tools, model, tp, env=None):
    """npushm-bert serving a long stream, once its ranks are up and warm."""
    return engine_tests.start_held([tools.bert, "--stream", "100000,2,4,9,1", "--hold", "--tp",
                                    str(tp), model], env, go=True)


@pytest.mark.parametrize("sig", ["SIGKILL", "SIGTERM"])
def test_tp_ranks_end_with_their_parent(tools, models, sig):
    import tempfile
    # a private directory: a parent killed with SIGKILL cannot remove the model it loaded
    shm = tempfile.mkdtemp(prefix="npbert-kill.", dir="/dev/shm")
    try:
        _ranks_end_with_parent(tools, models, sig, dict(os.environ, NPUSHM_BACKEND="posix",
                                                        NPUSHM_SHM_DIR=shm))
    finally:
        subprocess.run(["rm", "-rf", shm])


def _ranks_end_with_parent(tools, models, sig, env):
    p = _start_held(tools, models["tiny"], 2, env)
    ranks = engine_tests.children(p.pid)
    assert len(ranks) == 2, ranks
    engine_tests.ranks_end_with_parent(p, ranks, sig, settle=0.3)


@pytest.mark.parametrize("tp", [1, 2])
def test_signal_during_the_load_leaves_nothing_and_says_nothing(tools, workdir, tp):
    """SIGINT while the run loads its file (56 MB), or just after: the run dies of it with
    nothing left and no message of its own (it said "model 'npushm-bert.HASH' not found ...
    run `npushm load`" when the guard removed the model before the run attached it)."""
    path = os.path.join(workdir, "sigload.safetensors")
    if not os.path.exists(path):
        subprocess.run([tools.gen, "--layers", "2", "--hidden", "768", "--heads", "12", "--ffn",
                        "3072", "--vocab", "1000", "--positions", "64", path], check=True,
                       capture_output=True)
    runs = engine_tests.signals_during_load([tools.bert, "--stream", "1000000,2,4,8,1", "--tp",
                                             str(tp), path])
    for delay, rc, err, left in runs:
        assert rc == -2 and not left and not err, "SIGINT after %g s: exit status %d, left %s, said %r" % (
            delay, rc, left, err)


@pytest.mark.parametrize("sig,tp", [("SIGTERM", 1), ("SIGINT", 1), ("SIGTERM", 2)])
def test_signal_removes_the_temporary_model(tools, workdir, models, sig, tp):
    import signal
    import tempfile
    import time
    shm = tempfile.mkdtemp(prefix="npbert-sig.", dir="/dev/shm")
    env = dict(os.environ, NPUSHM_BACKEND="posix", NPUSHM_SHM_DIR=shm)
    try:
        p = _start_held(tools, models["tiny"], tp, env)
        assert os.listdir(shm), "the model was not loaded into %s" % shm
        time.sleep(0.3)
        p.send_signal(getattr(signal, sig))
        p.wait(timeout=30)
        assert p.returncode == -getattr(signal, sig), "exit status %d" % p.returncode
        left = os.listdir(shm)
        assert not left, "left behind after %s: %s" % (sig, left)
        # a later run loads the file afresh and leaves nothing either
        r = subprocess.run([tools.bert, "--info", models["tiny"]], capture_output=True, text=True,
                           env=env, timeout=60)
        assert r.returncode == 0 and not os.listdir(shm), r.stderr
    finally:
        subprocess.run(["rm", "-rf", shm])
