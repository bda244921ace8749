"""An RNN written as an AutoGraph for loop over jf.range that reads its inputs from one
jf.TensorArray and writes each step's state into another (docs/loops.md): jitflow
jit_compile=True with the arrays compiled into the whole loop, the same with them kept on the
executor (JITFLOW_LOOP_ARRAYS=0, timed in a child process), jf.function, and jax.lax.scan under
jax.jit (in this interpreter when it imports jax, else in the one --jax-python names). Two cells:
elementwise (h = tanh(x_t * a + h * b + c)) and dense (h = tanh(x_t @ Wx + h @ Wh)). Ratios are
each column's time over jitflow jit_compile=True's, from one run: above 1 is slower.

    python benchmarks/rnn_scan.py [--steps 200] [--jax-python PY]
"""

import argparse
import inspect
import json
import os
import subprocess
import sys
import time

import numpy as np

import jitflow as jf

CASES = {  # name: (cell, batch, width)
    "elementwise 16x16": ("elementwise", 16, 16),
    "elementwise 64x256": ("elementwise", 64, 256),
    "dense 16x64": ("dense", 16, 64),
}


def inputs(cell, steps, batch, width):
    rng = np.random.default_rng(0)
    xs = rng.standard_normal((steps, batch, width)).astype(np.float32)
    wx = (rng.standard_normal((width, width)) / np.sqrt(width)).astype(np.float32)
    wh = (rng.standard_normal((width, width)) / np.sqrt(width)).astype(np.float32)
    return xs, wx, wh


def rnn(xs, wx, wh, dense):
    n = jf.shape(xs)[0]
    xta = jf.TensorArray(jf.float32, size=n).unstack(xs)
    out = jf.TensorArray(jf.float32, size=n)
    h = jf.zeros_like(xs[0])
    for t in jf.range(n):
        x = xta.read(t)
        if dense:
            h = jf.tanh(jf.matmul(x, wx) + jf.matmul(h, wh))
        else:
            h = jf.tanh(x * 0.9 + h * 0.5 + 0.1)
        out = out.write(t, h)
    return out.stack()


def reference(xs, wx, wh, dense):
    h = np.zeros(xs.shape[1:])
    out = np.zeros(xs.shape)
    for t in range(xs.shape[0]):
        h = np.tanh(xs[t] @ wx + h @ wh) if dense else np.tanh(xs[t] * 0.9 + h * 0.5 + 0.1)
        out[t] = h
    return out


def best_of(fn, reps=5, inner=3):
    fn()
    best = float("inf")
    for _ in range(reps):
        t = time.perf_counter()
        for _ in range(inner):
            fn()
        best = min(best, (time.perf_counter() - t) / inner)
    return best


def jitflow_times(case, steps, modes):
    cell, batch, width = CASES[case]
    dense = cell == "dense"
    xs, wx, wh = (jf.constant(a) for a in inputs(cell, steps, batch, width))
    ref = reference(*inputs(cell, steps, batch, width), dense)
    out = {}
    for mode in modes:
        f = jf.function(lambda a, b, c: rnn(a, b, c, dense), jit_compile=mode == "jit_compile")
        got = f(xs, wx, wh).numpy()
        assert np.max(np.abs(got - ref)) < 1e-4, (case, mode)
        before = jf.debugging.stats()
        f(xs, wx, wh)
        after = jf.debugging.stats()
        out[mode] = best_of(lambda f=f: f(xs, wx, wh))
        out[mode + " loops"] = after["compiled_loop_runs"] - before["compiled_loop_runs"]
    return out


_JAX = """
import json, sys, time
import numpy as np, jax, jax.numpy as jnp
CASES = {cases!r}
{helpers}
steps = int(sys.argv[1])
res = {{}}
for case, (cell, batch, width) in CASES.items():
    dense = cell == "dense"
    xs, wx, wh = inputs(cell, steps, batch, width)
    def body(h, x):
        h = jnp.tanh(x @ wx + h @ wh) if dense else jnp.tanh(x * 0.9 + h * 0.5 + 0.1)
        return h, h
    f = jax.jit(lambda xs, body=body: jax.lax.scan(body, jnp.zeros(xs.shape[1:], xs.dtype), xs)[1])
    xj = jnp.asarray(xs)
    got = np.asarray(f(xj).block_until_ready(), np.float64)
    assert np.max(np.abs(got - reference(xs, wx, wh, dense))) < 1e-4, case
    res[case] = best_of(lambda: f(xj).block_until_ready())
print(json.dumps(res))
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--jax-python", default=None, help="an interpreter with jax, when this one lacks it")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:  # JITFLOW_LOOP_ARRAYS=0 is set: the arrays stay on the executor
        print(json.dumps({c: jitflow_times(c, args.steps, ["jit_compile"]) for c in CASES}))
        return
    env = dict(os.environ, JITFLOW_LOOP_ARRAYS="0")
    r = subprocess.run(
        [sys.executable, __file__, "--child", "--steps", str(args.steps)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    )
    executor = json.loads(r.stdout.strip().splitlines()[-1])
    jax_times = {}
    python = sys.executable
    try:
        import jax  # noqa: F401
    except ImportError:
        python = args.jax_python
    if python:
        helpers = "\n".join(inspect.getsource(f) for f in (inputs, reference, best_of))
        src = _JAX.format(cases=CASES, helpers=helpers)
        r = subprocess.run(
            [python, "-c", src, str(args.steps)], capture_output=True, text=True, check=True, timeout=600
        )
        jax_times = json.loads(r.stdout.strip().splitlines()[-1])
    print(
        f"RNN over {args.steps} steps, inputs and outputs in jf.TensorArrays (ms per call; ratio: time over "
        "jit_compile's)"
    )
    print(f"{'case':<20}{'implementation':<34}{'ms':>9}{'ratio':>8}")
    for case in CASES:
        t = jitflow_times(case, args.steps, ["jit_compile", "function"])
        base = t["jit_compile"]
        rows = [
            (f"jit_compile ({t['jit_compile loops']} whole loop)", base),
            (
                f"jit_compile, arrays on executor ({executor[case]['jit_compile loops']} whole)",
                executor[case]["jit_compile"],
            ),
            ("jf.function", t["function"]),
        ]
        if case in jax_times:
            rows.append(("jax.lax.scan (jax.jit)", jax_times[case]))
        for name, secs in rows:
            print(f"{case:<20}{name:<34}{secs * 1e3:>9.3f}{secs / base:>7.2f}x")


if __name__ == "__main__":
    main()
