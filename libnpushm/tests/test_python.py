#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
"""test_python.py - the npushm Python package: models attached by name handed to
NumPy and PyTorch through DLPack, compared value by value with an independent
reading of the file (safetensors_ref), and proven shared rather than copied
(same address, the other process's pages counted once in PSS, no anonymous
memory growth, writes through another process's mapping visible). Runs under
pytest (run-pytest.sh prints its TAP)."""
import gc
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
import safetensors_ref as ref  # noqa: E402
import pytest  # noqa: E402

import npushm  # noqa: E402

IN_VM = os.environ.get("NPUSHM_IN_VM") == "1"
KMOD = os.environ.get("NPUSHM_BACKEND") == "kmod"
TMP = tempfile.mkdtemp(prefix="npushm-py.")
PFX = "py%d." % os.getpid()
created = set()


def check(cond, msg="check failed"):
    """Fail the test with `msg` unless `cond` (pytest shows it with the traceback)."""
    if not cond:
        raise AssertionError(msg)


def diag(msg):
    """A note for the suite's log (TAP comment under the test's line)."""
    print(msg, flush=True)


def torch_or_skip():
    if IN_VM:
        pytest.skip("importing torch takes about 60 s under TCG, beyond this suite's budget; "
                   "the same test runs natively in suite libnpushm")
    import torch
    import torch.utils.dlpack  # noqa: F401
    return torch


def mapping_of(addr):
    """(Rss, Pss, Anonymous) in kB of the mapping holding addr, from /proc/self/smaps."""
    vals, inside = {}, False
    with open("/proc/self/smaps") as f:
        for line in f:
            head = line.split()
            if "-" in head[0] and len(head) >= 5 and all(c in "0123456789abcdef-" for c in head[0]):
                lo, hi = (int(x, 16) for x in head[0].split("-"))
                if inside:
                    break
                inside = lo <= addr < hi
                continue
            if inside and head[0].rstrip(":") in ("Rss", "Pss", "Anonymous"):
                vals[head[0].rstrip(":")] = int(head[1])
    return vals if inside else None


def rollup():
    out = {}
    with open("/proc/self/smaps_rollup") as f:
        for line in f:
            p = line.split()
            if len(p) >= 2 and p[1].isdigit():
                out[p[0].rstrip(":")] = int(p[1])
    return out


def bf16_bytes(values):
    """float32 -> bfloat16 bit patterns (round toward zero), as bytes."""
    return (np.asarray(values, np.float32).view(np.uint32) >> 16).astype(np.uint16).tobytes()


def make_model(name, seed=7):
    rng = np.random.default_rng(seed)
    tensors = {
        "f32": rng.standard_normal((33, 17)).astype(np.float32),
        "f16": rng.standard_normal((5, 4, 3)).astype(np.float16),
        "f64": rng.standard_normal(9),
        "i64": rng.integers(-2 ** 40, 2 ** 40, (4, 4)),
        "i8": rng.integers(-128, 127, 10).astype(np.int8),
        "u8": rng.integers(0, 255, (2, 3)).astype(np.uint8),
        "mask": rng.integers(0, 2, (3, 5)).astype(bool),
        "scalar": np.array(-1.25, np.float32),
        "empty": np.zeros((0, 7), np.float32),
        "one": np.ones((1, 1, 1), np.int32),
    }
    bf = rng.standard_normal((6, 8)).astype(np.float32)
    path = os.path.join(TMP, name)
    ref.write(path, tensors, metadata={"source": "test"}, raw={"bf16": ("BF16", [6, 8], bf16_bytes(bf))})
    return path


def load(path, name, **kw):
    created.add(name)
    return npushm.load(path, name, **kw)


def test_import_is_lazy_and_submodules_stay_importable():
    code = ("import sys, importlib.util, npushm; "
            "assert 'npushm._libnpushm' not in sys.modules; "
            "assert importlib.util.find_spec('npushm.weights') is not None; "
            "assert importlib.util.find_spec('npushm.regions') is not None; "
            "print(npushm.attach.__module__)")
    env = dict(os.environ, PYTHONPATH=os.path.join(HERE, "..", "..", "python"))
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    check(p.returncode == 0 and p.stdout.strip() == "npushm.weights", p.stderr)
    if os.path.exists(os.path.join(HERE, "..", "..", "python", "npushm", "tensor.py")):
        p = subprocess.run([sys.executable, "-c", "import importlib.util; "
                            "assert importlib.util.find_spec('npushm.tensor')"], env=env)
        check(p.returncode == 0, "npushm.tensor is findable")


def test_numpy_views_equal_the_file_and_share_its_memory():
    path = make_model("m.safetensors")
    name = PFX + "np"
    res = load(path, name)
    want = ref.read(path)
    check(npushm.file_hash(path) == res["hash"], "file_hash() gives the hash the load recorded")
    with npushm.attach(name) as m:
        check(len(m) == len(want) and m.names() == sorted(want))
        check(m.hash == res["hash"] and m.metadata == {"source": "test"})
        for t in m.tensors():
            dtype, shape, data = want[t.name]
            check(t.dtype == dtype and t.shape == shape and t.nbytes == len(data), t)
            check(t.address % 64 == 0, "64-byte aligned")
            check(bytes(t.raw()) == data, "raw bytes of %s" % t.name)
            if dtype == "BF16":
                try:
                    t.numpy()
                    check(False, "BF16 has no NumPy type")
                except TypeError as e:
                    check("torch" in str(e))
                continue
            a = t.numpy()
            expect = np.frombuffer(data, dtype=ref_np_dtype(dtype)).reshape(shape)
            check(a.shape == shape and a.dtype == expect.dtype, (a.shape, a.dtype))
            check(np.array_equal(a, expect), "values of %s" % t.name)
            check(not a.flags.writeable, "read-only")
            if a.size:
                check(a.__array_interface__["data"][0] == t.address, "no copy: same address")
                try:
                    a.flat[0] = 0
                    check(False, "writing must fail")
                except ValueError:
                    pass
            if dtype not in ("BOOL",):
                b = np.from_dlpack(t)          # the protocol, used directly
                check(np.array_equal(b, expect))
                if b.size:
                    check(b.__array_interface__["data"][0] == t.address)


def ref_np_dtype(st):
    return {"F32": np.float32, "F16": np.float16, "F64": np.float64, "I64": np.int64, "I8": np.int8,
            "U8": np.uint8, "BOOL": np.bool_, "I32": np.int32}[st]


def test_torch_views_equal_the_file_and_share_its_memory():
    torch = torch_or_skip()
    path = make_model("t.safetensors", seed=8)
    name = PFX + "torch"
    load(path, name)
    want = ref.read(path)
    with npushm.attach(name) as m:
        for t in m.tensors():
            dtype, shape, data = want[t.name]
            if dtype == "BOOL":
                continue
            x = t.torch()
            check(tuple(x.shape) == shape, (t.name, x.shape))
            if dtype == "BF16":
                expect = torch.frombuffer(bytearray(data), dtype=torch.bfloat16).reshape(shape)
            else:
                expect = torch.from_numpy(np.frombuffer(data, dtype=ref_np_dtype(dtype)).reshape(shape).copy())
            check(x.dtype == expect.dtype and torch.equal(x, expect), "values of %s" % t.name)
            if x.numel():
                check(x.data_ptr() == t.address, "no copy: same address")
            y = torch.utils.dlpack.from_dlpack(t)
            check(torch.equal(y, expect))


def test_views_outlive_the_model_handle():
    path = make_model("life.safetensors", seed=9)
    name = PFX + "life"
    load(path, name)
    m = npushm.attach(name)
    t = m["f32"]
    a, raw, addr = t.numpy(), m["u8"].raw(), t.address
    keep = a.copy()
    capsule = m["f64"].__dlpack__()    # made and dropped unconsumed: must not leak
    del capsule
    m.close()
    check(np.array_equal(a, keep) and raw.size == 6, "arrays still read the mapping")
    check(mapping_of(addr) is not None, "still mapped while arrays live")
    del a, raw, t
    gc.collect()
    check(mapping_of(addr) is None, "unmapped once the last array is gone")
    try:
        m["f32"]
        check(False, "a closed model refuses lookups")
    except ValueError:
        pass


def test_no_copy_pss_is_split_between_processes():
    size = 32 << 20
    path = os.path.join(TMP, "pss.safetensors")
    ref.write(path, {"w": np.arange(size // 4, dtype=np.float32).reshape(-1, 1024)})
    name = PFX + "pss"
    load(path, name)
    before = rollup()
    m = npushm.attach(name)
    t = m["w"]
    a = t.numpy()
    total = float(a.sum(dtype=np.float64))          # touches every page
    check(total == float(np.arange(size // 4, dtype=np.float64).sum()))
    after = rollup()
    grew_anon = after["Anonymous"] - before["Anonymous"]
    mine = mapping_of(t.address)
    diag("one process: mapping Rss %d kB Pss %d kB, anonymous memory +%d kB" %
         (mine["Rss"], mine["Pss"], grew_anon))
    check(mine["Rss"] >= size // 1024 * 0.95, "the whole model is mapped and resident")
    check(mine["Anonymous"] == 0, "no private (copied) pages in the mapping")
    check(grew_anon < size // 1024 // 8, "no private copy: anonymous memory grew %d kB" % grew_anon)
    r, w = os.pipe()
    r2, w2 = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            with npushm.attach(name) as m2:
                b = m2["w"].numpy()
                b.sum(dtype=np.float64)
                os.write(w, b"x")
                os.read(r2, 1)
        finally:
            os._exit(0)
    os.read(r, 1)
    shared = mapping_of(t.address)
    os.write(w2, b"x")
    os.waitpid(pid, 0)
    diag("two processes: this one's Pss %d kB of Rss %d kB" % (shared["Pss"], shared["Rss"]))
    check(shared["Pss"] <= shared["Rss"] * 0.6, "the other process's pages are the same pages")
    del a, t
    m.close()


def test_regions_writes_through_another_mapping_are_visible():
    name = PFX + "region"
    r = npushm.Region.alloc(1 << 20)
    r.publish(name, mode=0o600)
    created.add(name)
    a = r.numpy("uint32")
    check(a.flags.writeable and a.size == (1 << 18) and not a.any(), "zeroed")
    a[:] = np.arange(a.size, dtype=np.uint32)
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            other = npushm.Region.open(name, write=True)
            b = other.numpy("uint32")
            if np.array_equal(b, np.arange(b.size, dtype=np.uint32)):
                b[::2] = 7
                code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    check(os.WEXITSTATUS(status) == 0, "the child saw our writes")
    check((a[::2] == 7).all() and (a[1::2] == np.arange(1, a.size, 2)).all(), "we see the child's writes")
    ro = npushm.Region.open(name).numpy("uint32")
    check(not ro.flags.writeable and ro[0] == 7)
    npushm.unlink(name)
    created.discard(name)
    del a, ro
    r.close()


def test_errors_carry_the_library_message():
    try:
        npushm.attach(PFX + "missing")
        check(False)
    except npushm.NotFoundError as e:
        check(e.status == "NOT_FOUND" and "run `npushm load FILE --name %smissing` first" % PFX in str(e), e)
    try:
        npushm.file_hash(os.path.join(TMP, "missing"))
        check(False)
    except npushm.NotFoundError as e:
        check("cannot open '%s'" % os.path.join(TMP, "missing") in str(e), e)
    path = make_model("e.safetensors", seed=10)
    load(path, PFX + "err")
    with npushm.attach(PFX + "err") as m:
        try:
            m["nope"]
            check(False)
        except KeyError as e:
            check("has no tensor named 'nope'" in str(e), e)
        check("f32" in m and "nope" not in m)
    bad = os.path.join(TMP, "bad.safetensors")
    with open(bad, "wb") as f:
        f.write(b"\x02\x00\x00\x00\x00\x00\x00\x00{}trailing")
    try:
        npushm.load(bad, PFX + "bad")
        check(False)
    except npushm.FormatError as e:
        check(bad in str(e) and "bytes after the last tensor" in str(e), e)
    again = npushm.load(path, PFX + "err")
    check(again["already_loaded"], "the same content under the same name is already loaded")
    try:
        npushm.load(make_model("e2.safetensors", seed=11), PFX + "err")
        check(False)
    except npushm.NpushmError as e:
        check(e.status == "EXISTS" and "--replace" in str(e), e)
    dup = npushm.load(path, PFX + "err2")
    created.add(PFX + "err2")
    check(dup["deduplicated"])


def test_load_checks_the_name_before_copying_and_replaces_on_request():
    """Progress stages show what a load did: a name taken by other content
    stops it before the copy stage; the same content is done at once; replace
    moves the name while a worker keeps the old model."""
    a, b = make_model("ra.safetensors", seed=21), make_model("rb.safetensors", seed=22)
    name = PFX + "rep"
    stages = []
    first = load(a, name, progress=lambda st, done, total: stages.append(st))
    COPY = 2
    check(COPY in stages and not first["already_loaded"], stages)
    stages.clear()
    try:
        npushm.load(b, name, progress=lambda st, done, total: stages.append(st))
        check(False)
    except npushm.NpushmError as e:
        check(e.status == "EXISTS", e)
    check(COPY not in stages, "nothing copied before the name was found taken: %s" % stages)
    stages.clear()
    again = npushm.load(a, name, progress=lambda st, done, total: stages.append(st))
    check(again["already_loaded"] and again["region_id"] == first["region_id"] and COPY not in stages,
          (again, stages))
    with npushm.attach(name) as old:
        before = old["f32"].numpy().copy()
        rep = npushm.load(b, name, replace=True)
        check(not rep["already_loaded"] and rep["region_id"] != first["region_id"], rep)
        check(np.array_equal(old["f32"].numpy(), before), "the attached worker keeps the old model")
    with npushm.attach(name) as new:
        check(new.hash == rep["hash"] and new.region_id == rep["region_id"])


def test_model_is_a_read_only_mapping():
    import collections.abc
    path = make_model("map.safetensors", seed=31)
    load(path, PFX + "map")
    want = sorted(ref.read(path))
    with npushm.attach(PFX + "map") as m:
        check(isinstance(m, collections.abc.Mapping) and issubclass(npushm.Model, collections.abc.Mapping))
        check(len(m) == len(want) and list(m) == want and list(m.keys()) == want, list(m))
        check("f32" in m.keys() and "nope" not in m and 3 not in m)
        items = list(m.items())
        check([k for k, _ in items] == want and all(v.name == k for k, v in items))
        check([v.name for v in m.values()] == want)
        check(m.get("nope") is None and m.get("nope", 5) == 5 and m.get("f32").name == "f32")
        check(dict(m).keys() == set(want))
        for op in (lambda: m.__setitem__("x", 1), lambda: m.__delitem__("f32")):
            try:
                op()
                check(False, "the mapping is read-only")
            except (TypeError, AttributeError):
                pass
        try:
            m[3]
            check(False)
        except KeyError:
            pass


def test_not_found_is_also_key_error_and_file_not_found_error():
    check(issubclass(npushm.NotFoundError, KeyError) and issubclass(npushm.NotFoundError, FileNotFoundError))
    check(issubclass(npushm.AccessError, PermissionError) and issubclass(npushm.FormatError, ValueError))
    try:
        npushm.attach(PFX + "absent")
        check(False)
    except KeyError as e:
        check(str(e).startswith("model '%sabsent' not found" % PFX), "message unquoted: %s" % e)
    missing = os.path.join(TMP, "absent.safetensors")
    try:
        npushm.load(missing, PFX + "absent")
        check(False)
    except FileNotFoundError as e:
        check(e.errno == 2 and missing in str(e) and isinstance(e, npushm.NpushmError), e)
    path = make_model("nf.safetensors", seed=41)
    load(path, PFX + "nf")
    with npushm.attach(PFX + "nf") as m:
        try:
            m["absent"]
            check(False)
        except npushm.NotFoundError as e:
            check("has no tensor named 'absent'" in str(e) and e.status == "NOT_FOUND", e)


def test_torch_tensor_refuses_writes_instead_of_crashing():
    """Writing into a model tensor taken with .torch() is refused with a
    RuntimeError naming the fix; the process survives (a child runs it, so a
    SIGSEGV would show as its exit status)."""
    torch_or_skip()
    path = make_model("tw.safetensors", seed=51)
    load(path, PFX + "tw")
    code = r"""
import sys, torch, npushm
m = npushm.attach(sys.argv[1])
t = m["f32"].torch()
base = t.clone()
writes = {
    "add_": lambda: t.add_(1), "setitem": lambda: t.__setitem__(0, 1.0), "view.zero_": lambda: t.view(-1).zero_(),
    "out=": lambda: torch.add(t, 1, out=t), "copy_": lambda: t.copy_(torch.zeros_like(base)),
    "row.fill_": lambda: t[1].fill_(2), "relu inplace": lambda: torch.nn.functional.relu(t, inplace=True),
    "T.mul_": lambda: t.T.mul_(2), "detach.sub_": lambda: t.detach().sub_(1), "+=": lambda: t.__iadd__(1),
}
for what, f in writes.items():
    try:
        f()
        print("NOT REFUSED", what)
    except RuntimeError as e:
        assert "read-only shared memory" in str(e) and ".clone()" in str(e), str(e)
assert torch.equal(t, base)
assert not t.numpy().flags.writeable
c = t.clone(); c.add_(1)
assert type(c) is torch.Tensor and torch.equal(c, base + 1)
assert type(t + 1) is torch.Tensor and torch.equal(torch.matmul(t, t.T), base @ base.T)
print("survived")
"""
    env = dict(os.environ, PYTHONPATH=os.path.join(HERE, "..", "..", "python"))
    p = subprocess.run([sys.executable, "-c", code, PFX + "tw"], capture_output=True, text=True, env=env)
    check(p.returncode == 0 and p.stdout.strip() == "survived", (p.returncode, p.stdout, p.stderr[-2000:]))


def test_public_api_has_docstrings_and_help_lists_it():
    import importlib
    import inspect
    import pydoc
    missing = []
    for mn in ("npushm", "npushm.weights", "npushm.regions", "npushm.tensor", "npushm.ccl"):
        mod = importlib.import_module(mn)
        if not (mod.__doc__ or "").strip():
            missing.append(mn)
        names = set(getattr(mod, "__all__", [])) | {n for n in dir(mod) if not n.startswith("_")}
        for n in sorted(names):
            obj = getattr(mod, n)
            if not (inspect.isclass(obj) or inspect.isfunction(obj)):
                continue
            if not getattr(obj, "__module__", "").startswith("npushm"):
                continue
            if not (inspect.getdoc(obj) or "").strip():
                missing.append("%s.%s" % (mn, n))
            if inspect.isclass(obj):
                for an, av in vars(obj).items():
                    if an.startswith("_"):
                        continue
                    if isinstance(av, (staticmethod, classmethod)):
                        av = av.__func__
                    if (inspect.isfunction(av) or isinstance(av, property)) and not (av.__doc__ or "").strip():
                        missing.append("%s.%s.%s" % (mn, n, an))
    check(not missing, "no docstring: %s" % ", ".join(missing))
    text = pydoc.render_doc(npushm, renderer=pydoc.plaintext)
    for n in ("attach", "load", "remove", "file_hash", "Model", "ModelTensor", "Region", "NpushmError",
              "NotFoundError", "AccessError", "FormatError"):
        check(n in npushm.__all__ and (" %s(" % n in text or "class %s" % n in text), "help(npushm) lists %s" % n)


def teardown_module(module):
    """Remove what a failed test left published, and the scratch directory."""
    gc.collect()
    for name in created:
        try:
            npushm.remove(name)
        except npushm.NpushmError:
            pass
    shutil.rmtree(TMP, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(pytest.main(["-q", "-p", "no:cacheprovider", __file__]))
