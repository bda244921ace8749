"""A 1,000-step elementwise recurrence written as a Python loop over jf.range (AutoGraph turns
it into a While): eager, jf.function (body on eager kernels), jit_scope and jit_compile=True
(the whole loop one compiled cluster run: docs/loops.md), against numpy, jax.lax.fori_loop
under jax.jit and TF (tf.function, with and without jit_compile) when installed. Ratios are
each column's time over jitflow jit_compile=True, taken in one run, so a ratio above 1 is
slower than jitflow's compiled loop. jax runs in this interpreter when it imports, else in the
one --jax-python names (a child process timing the same loop on the same inputs).

--branchy times a loop whose body branches on the counter (`if i % 3 == 0:` the tanh step,
else `x * 0.95 + 0.01`): the If is computed inline in the compiled step (docs/loops.md), so the
loop still runs whole; jax runs `lax.cond` inside its `fori_loop`.

    python benchmarks/recurrence.py [--steps 1000] [--sizes 256,16384] [--branchy] [--jax-python PY]
"""
import argparse
import json
import subprocess
import time

import numpy as np

import jitflow as jf

A, B, C = 1.01, 0.1, 0.9
D, E = 0.95, 0.01
BRANCHY = False  # set by --branchy


def step_np(x, i=0):
    return x * D + E if BRANCHY and i % 3 else np.tanh(x * A + B) * C


def plain_loop(x, n):
    for _ in jf.range(n):
        x = jf.tanh(x * A + B) * C
    return x


def branchy_loop(x, n):
    for i in jf.range(n):
        if i % 3 == 0:
            x = jf.tanh(x * A + B) * C
        else:
            x = x * D + E
    return x


def recurrence(x, n):
    return branchy_loop(x, n) if BRANCHY else plain_loop(x, n)


def scoped(x, n):
    with jf.jit_scope():
        return branchy_loop(x, n) if BRANCHY else plain_loop(x, n)


def best_of(fn, reps, inner):
    fn()  # warm: trace, compile
    best = float("inf")
    for _ in range(reps):
        t = time.perf_counter()
        for _ in range(inner):
            fn()
        best = min(best, (time.perf_counter() - t) / inner)
    return best


def implementations(x0, steps):
    n = jf.constant(steps)
    x = jf.constant(x0)
    def call(f):
        return lambda: f(x, n)
    impls = {
        "eager": lambda: recurrence(x, steps),
        "function": call(jf.function(recurrence)),
        "jit_scope": call(jf.function(scoped)),
        "jit_compile": call(jf.function(recurrence, jit_compile=True)),
    }

    def numpy_loop():
        v = x0
        for i in range(steps):
            v = step_np(v, i)
        return v
    impls["numpy"] = numpy_loop
    try:
        import jax
        import jax.numpy as jnp

        def jax_step(i, v):
            if BRANCHY:
                return jax.lax.cond(i % 3 == 0, lambda v: jnp.tanh(v * A + B) * C, lambda v: v * D + E, v)
            return jnp.tanh(v * A + B) * C

        @jax.jit
        def jax_loop(v):
            return jax.lax.fori_loop(0, steps, jax_step, v)
        xj = jnp.asarray(x0)
        impls["jax.lax.fori_loop"] = lambda: jax_loop(xj).block_until_ready()
    except ImportError:
        pass
    try:
        import tensorflow as tf

        def tf_loop(v, n):
            for i in tf.range(n):
                if not BRANCHY or i % 3 == 0:
                    v = tf.tanh(v * A + B) * C
                else:
                    v = v * D + E
            return v
        xt, nt = tf.constant(x0), tf.constant(steps)
        tf_fn, tf_xla = tf.function(tf_loop), tf.function(tf_loop, jit_compile=True)
        impls["TF function"] = lambda: tf_fn(xt, nt).numpy()
        impls["TF XLA"] = lambda: tf_xla(xt, nt).numpy()
    except ImportError:
        pass
    return impls


_JAX_CHILD = """
import json, sys, time
import numpy as np, jax, jax.numpy as jnp
steps, size, reps, branchy = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "1"
A, B, C, D, E = {A!r}, {B!r}, {C!r}, {D!r}, {E!r}
x0 = np.linspace(-1, 1, size).astype(np.float32)
def step(i, v):
    if branchy:
        return jax.lax.cond(i % 3 == 0, lambda v: jnp.tanh(v * A + B) * C, lambda v: v * D + E, v)
    return jnp.tanh(v * A + B) * C
f = jax.jit(lambda v: jax.lax.fori_loop(0, steps, step, v))
xj = jnp.asarray(x0)
out = np.asarray(f(xj).block_until_ready(), np.float64)
best = float("inf")
for _ in range(reps):
    t = time.perf_counter()
    for _ in range(3):
        f(xj).block_until_ready()
    best = min(best, (time.perf_counter() - t) / 3)
print(json.dumps({{"seconds": best, "out": out.tolist()}}))
"""


def jax_in_child(python, steps, size, reps):
    """jax.lax.fori_loop's best time per call and its result, from another interpreter."""
    src = _JAX_CHILD.format(A=A, B=B, C=C, D=D, E=E)
    r = subprocess.run([python, "-c", src, str(steps), str(size), str(reps), str(int(BRANCHY))], capture_output=True,
                       text=True, timeout=600, check=True)
    res = json.loads(r.stdout.strip().splitlines()[-1])
    return res["seconds"], np.asarray(res["out"])


def check(impls, x0, steps):
    ref = x0.astype(np.float64)
    for i in range(steps):
        ref = step_np(ref, i)
    for name, fn in impls.items():
        out = fn()
        out = np.asarray(out.numpy() if hasattr(out, "numpy") else out, np.float64)
        err = float(np.max(np.abs(out - ref)))
        assert err < 1e-4, (name, err)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--sizes", default="256,16384")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--branchy", action="store_true", help="branch on the counter in the loop body")
    ap.add_argument("--jax-python", default=None, help="an interpreter with jax, when this one lacks it")
    args = ap.parse_args()
    global BRANCHY
    BRANCHY = args.branchy
    for size in [int(s) for s in args.sizes.split(",")]:
        x0 = np.linspace(-1, 1, size).astype(np.float32)
        impls = implementations(x0, args.steps)
        check(impls, x0, args.steps)
        before = jf.debugging.stats()
        impls["jit_compile"]()
        after = jf.debugging.stats()
        ran = after["cluster_runs"] - before["cluster_runs"]
        loops = after["compiled_loop_runs"] - before["compiled_loop_runs"]
        times = {k: best_of(v, args.reps, 1 if k in ("eager", "numpy") else 3) for k, v in impls.items()}
        if "jax.lax.fori_loop" not in times and args.jax_python:
            secs, out = jax_in_child(args.jax_python, args.steps, size, args.reps)
            ref = x0.astype(np.float64)
            for i in range(args.steps):
                ref = step_np(ref, i)
            assert float(np.max(np.abs(out - ref))) < 1e-4, "jax's result differs"
            times["jax.lax.fori_loop"] = secs
        base = times["jit_compile"]
        what = f"i % 3 == 0 ? tanh(x*{A}+{B})*{C} : x*{D}+{E}" if BRANCHY else f"tanh(x*{A}+{B})*{C}"
        print(f"\n{args.steps} steps of x = {what} on {size} float32 "
              f"(jit_compile: {ran} cluster runs, {loops} whole compiled loop(s) per call)")
        print(f"{'implementation':<20}{'ms/call':>10}{'us/step':>10}{'ratio':>9}")
        for k, t in times.items():
            print(f"{k:<20}{t * 1e3:>10.3f}{t * 1e6 / args.steps:>10.2f}{t / base:>8.2f}x")


if __name__ == "__main__":
    main()
