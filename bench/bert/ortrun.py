# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
"""ortrun.py - ONNX Runtime in the BERT benchmark: where onnxruntime-node is
(run.sh installs it from npm into a scratch folder outside the checkout and
passes it as NPUSHM_BENCH_ORT), the f32 and int8 ONNX models of the
benchmark's safetensors file (made once, remade when the file changes), the
batches file a worker serves (the token ids of the shared request stream) and
the worker's command line.
"""
import json
import os
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))
PY = "/usr/bin/python3"
WORKER = os.path.join(HERE, "ort_worker.js")


def node_path():
    """node_modules folder holding onnxruntime-node, or None."""
    d = os.environ.get("NPUSHM_BENCH_ORT")
    if not d:
        return None
    nm = os.path.join(d, "node_modules")
    return nm if os.path.isdir(os.path.join(nm, "onnxruntime-node")) else None


def version():
    nm = node_path()
    try:
        with open(os.path.join(nm, "onnxruntime-node", "package.json")) as f:
            return json.load(f)["version"]
    except (TypeError, OSError, ValueError, KeyError):
        return None


def unavailable():
    """Why ONNX Runtime cannot run here, or None when it can."""
    if not node_path():
        return ("onnxruntime-node is not installed (bench/bert/run.sh installs it with npm into "
                "$NPUSHM_BENCH_ORT; run the benchmark through run.sh or make bench-bert)")
    r = subprocess.run(["node", "--version"], capture_output=True, text=True)
    if r.returncode:
        return "node is not installed (apt-get install nodejs)"
    return None


def env():
    """Environment overrides of a worker (NODE_PATH)."""
    return {"NODE_PATH": node_path()}


def _fresh(out, src):
    return os.path.exists(out) and os.path.getmtime(out) >= os.path.getmtime(src)


def models(safetensors, outdir, log=print):
    """(f32 path, int8 path, MatMuls quantised) for safetensors, made if stale."""
    os.makedirs(outdir, exist_ok=True)
    base = os.path.join(outdir, os.path.splitext(os.path.basename(safetensors))[0])
    f32, int8, count = base + ".onnx", base + ".int8.onnx", base + ".int8.count"
    if not _fresh(f32, safetensors):
        log("exporting %s to ONNX (torch.onnx.export)..." % os.path.basename(safetensors))
        subprocess.run([PY, os.path.join(HERE, "onnx_export.py"), safetensors, f32], check=True)
    if not (_fresh(int8, f32) and _fresh(count, f32)):
        log("building the int8 ONNX model (DynamicQuantizeLinear + MatMulInteger)...")
        r = subprocess.run([PY, os.path.join(HERE, "onnx_int8.py"), f32, int8], check=True,
                           capture_output=True, text=True)
        with open(count, "w") as f:
            f.write(r.stdout.strip() + "\n")
    with open(count) as f:
        return f32, int8, int(f.read())


def write_batches(path, batches):
    """Write [(ids, types, mask), ...] (int64 [B, S] each) for ort_worker.js."""
    with open(path, "wb") as f:
        f.write((json.dumps({"batches": [list(b[0].shape) for b in batches]}) + "\n").encode())
        for b in batches:
            for a in b:
                f.write(a.astype("<i8").tobytes())


def cmd(model, batches_file, threads, out=None):
    c = ["node", WORKER, "--model", model, "--batches", batches_file, "--threads", str(threads)]
    return c + (["--out", out] if out else ["--hold"])
