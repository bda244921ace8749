"""A loop whose body branches on a large product: an RNN over jf.range where every `--every`-th
step computes h = tanh(h @ w + 0.1) (a [batch, width] by [width, width] product, too large to
compute for nothing) and the others h * 0.9 + 0.05. Under jit_compile=True the If is inlined
with guarded steps (docs/loops.md, 'Branches computed inline'): the loop runs whole and each
iteration runs only its branch. Compared in one run with the same function built with
JITFLOW_GUARDED_IFS=0 (the If an executor branch, the loop one compiled step per iteration),
jax.lax.cond inside jax.lax.fori_loop under jax.jit (here when jax imports, else in the
interpreter --jax-python names), and numpy. Ratios are each column's time over jit_compile's,
so above 1 is slower than jitflow's compiled loop.

numpy's BLAS runs on one thread here: on a 2-core machine its idle threads spin after each
product and take the core jitflow's worker needs, which made the jitflow timings of this
script differ by 2x from one process to the next.

    python benchmarks/guarded_if.py [--steps 200] [--batch 32] [--width 128] [--every 4] [--jax-python PY]
"""
import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before numpy loads its BLAS

import argparse
import json
import subprocess
import sys
import tempfile
import time

import numpy as np

import jitflow as jf


def rnn(h, w, n, every):
    for i in jf.range(n):
        if i % every == 0:
            h = jf.tanh(jf.matmul(h, w) + 0.1)
        else:
            h = h * 0.9 + 0.05
    return h


def rnn_np(h, w, n, every):
    h, w = h.astype(np.float64), w.astype(np.float64)
    for i in range(n):
        h = np.tanh(h @ w + 0.1) if i % every == 0 else h * 0.9 + 0.05
    return h


_JAX = """
import json, sys, time
import numpy as np, jax, jax.numpy as jnp
h0, w0 = np.load(sys.argv[1]), np.load(sys.argv[2])
n, every, reps = int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
def body(i, h):
    return jax.lax.cond(i % every == 0, lambda h: jnp.tanh(h @ w + 0.1), lambda h: h * 0.9 + 0.05, h)
w = jnp.asarray(w0)
f = jax.jit(lambda h: jax.lax.fori_loop(0, n, body, h))
h = jnp.asarray(h0)
out = np.asarray(f(h).block_until_ready(), np.float64)
best = float("inf")
for _ in range(reps):
    t = time.perf_counter()
    for _ in range(3):
        f(h).block_until_ready()
    best = min(best, (time.perf_counter() - t) / 3)
print(json.dumps({"seconds": best, "out": out.tolist()}))
"""


def best_of(fn, reps, inner=3):
    fn()
    best = float("inf")
    for _ in range(reps):
        t = time.perf_counter()
        for _ in range(inner):
            fn()
        best = min(best, (time.perf_counter() - t) / inner)
    return best


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--width", type=int, default=128)
    ap.add_argument("--every", type=int, default=4)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--jax-python", default=None)
    a = ap.parse_args()
    rng = np.random.default_rng(0)
    h0 = rng.standard_normal((a.batch, a.width)).astype(np.float32)
    w0 = (rng.standard_normal((a.width, a.width)) / np.sqrt(a.width)).astype(np.float32)
    ref = rnn_np(h0, w0, a.steps, a.every)
    h, w, n, every = jf.constant(h0), jf.constant(w0), jf.constant(a.steps), jf.constant(a.every)

    guarded = jf.function(rnn, jit_compile=True)
    guarded(h, w, n, every)  # traced and compiled with guarded Ifs
    os.environ["JITFLOW_GUARDED_IFS"] = "0"
    branch = jf.function(rnn, jit_compile=True)
    branch(h, w, n, every)  # traced with the If an executor branch
    del os.environ["JITFLOW_GUARDED_IFS"]
    impls = {"jit_compile": lambda: guarded(h, w, n, every).numpy(),
             "executor branch": lambda: branch(h, w, n, every).numpy(),
             "numpy": lambda: rnn_np(h0, w0, a.steps, a.every)}
    for name, fn in impls.items():
        err = float(np.max(np.abs(np.asarray(fn(), np.float64) - ref)))
        assert err < 1e-3, (name, err)
    s0 = jf.debugging.stats()
    guarded(h, w, n, every)
    s1 = jf.debugging.stats()
    loops = s1["compiled_loop_runs"] - s0["compiled_loop_runs"]
    skipped = s1["skipped_branch_steps"] - s0["skipped_branch_steps"]
    times = {k: best_of(f, a.reps, 1 if k == "numpy" else 3) for k, f in impls.items()}
    try:
        import jax  # noqa: F401
        jax_python = sys.executable
    except ImportError:
        jax_python = a.jax_python
    if jax_python:
        with tempfile.TemporaryDirectory() as d:
            np.save(f"{d}/h.npy", h0)
            np.save(f"{d}/w.npy", w0)
            r = subprocess.run([jax_python, "-c", _JAX, f"{d}/h.npy", f"{d}/w.npy", str(a.steps), str(a.every),
                                str(a.reps)], capture_output=True, text=True, timeout=600, check=True)
        res = json.loads(r.stdout.strip().splitlines()[-1])
        assert float(np.max(np.abs(np.asarray(res["out"]) - ref))) < 1e-3, "jax's result differs"
        times["jax.jit (lax.cond in fori_loop)"] = res["seconds"]
    base = times["jit_compile"]
    print(f"{a.steps} steps, every {a.every}th h = tanh(h @ w + 0.1) with h {a.batch}x{a.width}, else "
          f"h * 0.9 + 0.05 (jit_compile: {loops} whole loop(s), {skipped} branch steps skipped per call)")
    print(f"{'implementation':<34}{'ms/call':>10}{'us/step':>10}{'ratio':>9}")
    for k, t in times.items():
        print(f"{k:<34}{t * 1e3:>10.3f}{t * 1e6 / a.steps:>10.2f}{t / base:>8.2f}x")


if __name__ == "__main__":
    main()
