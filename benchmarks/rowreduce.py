"""Row-reduction benchmark: softmax, log-softmax, layer norm, RMS norm and softmax
cross-entropy over the last axis of a 4096x1024 float32 tensor, in jitflow eager / function /
compiled (jit_compile=True), against jax.jit and the copy floor, in one run.

The copy floor is the time numpy's copyto takes to move the bytes the workload must move (its
inputs read once, its output written once) at the copy bandwidth measured in the same run.
jax.jit runs in the interpreter --jax-python names (a child process: JAX is not installed next
to jitflow), interleaved with nothing else; compare the ratios, not the absolute times.

    python benchmarks/rowreduce.py [--jax-python /path/to/python] [--rows 4096 --width 1024]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import timeit

import numpy as np

EPS = 1e-5
WORKLOADS = ["softmax", "log_softmax", "layer_norm", "rms_norm", "softmax_xent"]


def inputs(rows, width):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((rows, width)).astype(np.float32)
    g = rng.uniform(0.5, 1.5, width).astype(np.float32)
    b = rng.standard_normal(width).astype(np.float32)
    labels = rng.uniform(0, 1, (rows, width)).astype(np.float32)
    labels /= labels.sum(-1, keepdims=True)
    return {"x": x, "g": g, "b": b, "labels": labels}


def make(tf, name, nn):
    """The workload as a function of the TF-like API `tf` (jitflow or jax.numpy + jax.nn)."""
    if name == "softmax":
        return lambda x, g, b, labels: nn.softmax(x, axis=-1)
    if name == "log_softmax":
        return lambda x, g, b, labels: nn.log_softmax(x, axis=-1)
    if name == "layer_norm":
        def ln(x, g, b, labels):
            mu = tf.mean(x, axis=-1, keepdims=True)
            d = x - mu
            return d * tf.rsqrt(tf.mean(d * d, axis=-1, keepdims=True) + EPS) * g + b
        return ln
    if name == "rms_norm":
        return lambda x, g, b, labels: x * tf.rsqrt(tf.mean(x * x, axis=-1, keepdims=True) + EPS) * g
    if name == "softmax_xent":
        return lambda x, g, b, labels: nn.xent(labels, x)
    raise ValueError(name)


def bytes_moved(name, d):
    x = d["x"].nbytes
    return {"softmax": 2 * x, "log_softmax": 2 * x, "layer_norm": 2 * x, "rms_norm": 2 * x,
            "softmax_xent": 2 * x + d["x"].shape[0] * 4}[name]


def best(fn, repeat, target):
    fn()
    n = max(3, int(target / max(timeit.timeit(fn, number=3) / 3, 1e-7)))
    return min(timeit.repeat(fn, number=n, repeat=repeat)) / n


def jax_child(args):
    import jax
    import jax.numpy as jnp

    class Api:
        mean = staticmethod(jnp.mean)
        rsqrt = staticmethod(jax.lax.rsqrt)

    class Nn:
        softmax = staticmethod(jax.nn.softmax)
        log_softmax = staticmethod(jax.nn.log_softmax)

        @staticmethod
        def xent(labels, x):
            return -jnp.sum(labels * jax.nn.log_softmax(x, axis=-1), axis=-1)

    d = {k: jnp.asarray(v) for k, v in inputs(args.rows, args.width).items()}
    out = {}
    for name in WORKLOADS:
        f = jax.jit(make(Api, name, Nn))
        out[name] = best(lambda f=f: jax.block_until_ready(f(**d)), args.repeat, args.target)
        out[name + ":check"] = float(np.asarray(f(**d), np.float64).sum())
    print(json.dumps(out))


def jitflow_fns(name):
    import jitflow as jf

    class Api:
        mean = staticmethod(jf.reduce_mean)
        rsqrt = staticmethod(jf.math.rsqrt)

    class Nn:
        softmax = staticmethod(jf.nn.softmax)
        log_softmax = staticmethod(jf.nn.log_softmax)

        @staticmethod
        def xent(labels, x):
            return jf.nn.softmax_cross_entropy_with_logits(labels, x)

    body = make(Api, name, Nn)
    return {"eager": body, "function": jf.function(body), "compiled": jf.function(body, jit_compile=True)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jax-python", default=None, help="an interpreter with jax")
    ap.add_argument("--rows", type=int, default=4096)
    ap.add_argument("--width", type=int, default=1024)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--target", type=float, default=0.2, help="seconds per timing")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return jax_child(args)
    import jitflow as jf
    os.environ.setdefault("JITFLOW_CACHE_DIR", tempfile.mkdtemp(prefix="jf-bench-cache-"))
    jax_times = {}
    if args.jax_python:
        cmd = [args.jax_python, os.path.abspath(__file__), "--child", "--rows", str(args.rows), "--width",
               str(args.width), "--repeat", str(args.repeat), "--target", str(args.target)]
        env = dict(os.environ, KERAS_BACKEND="jax")
        res = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
        if res.returncode == 0:
            jax_times = json.loads(res.stdout.strip().splitlines()[-1])
        else:
            print(f"(the JAX child failed: {res.stderr.strip().splitlines()[-1:]})")
    d = inputs(args.rows, args.width)
    src = d["x"]
    dst = np.empty_like(src)
    t_copy = best(lambda: np.copyto(dst, src), args.repeat, args.target)
    bw = 2 * src.nbytes / t_copy
    print(f"jitflow {jf.__version__}, {jf._C.num_threads()} threads; {args.rows}x{args.width} float32; "
          f"copy bandwidth (numpy copyto) {bw / 1e9:.1f} GB/s; load average {os.getloadavg()[0]:.2f}")
    print(f"{'workload (ms)':<14}{'eager':>9}{'function':>10}{'compiled':>10}{'jax.jit':>9}{'floor':>8}"
          f"{'  vs jax':>9}{'  floor/compiled':>17}")
    dj = {k: jf.constant(v) for k, v in d.items()}
    for name in WORKLOADS:
        fns = jitflow_fns(name)
        before = jf.debugging.stats()["row_group_runs"]
        got = np.asarray(fns["compiled"](**dj).numpy(), np.float64)
        fused = jf.debugging.stats()["row_group_runs"] > before
        want = np.asarray(fns["eager"](**dj).numpy(), np.float64)
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5, err_msg=name)
        if name + ":check" in jax_times:
            assert abs(jax_times[name + ":check"] - want.sum()) <= 1e-3 * abs(want).sum() + 1e-2, name
        t = {k: best(lambda f=f: f(**dj), args.repeat, args.target) for k, f in fns.items()}
        floor = bytes_moved(name, d) / bw
        tj = jax_times.get(name)
        vs_jax = f"{tj / t['compiled']:>8.2f}x" if tj else f"{'-':>9}"
        print(f"{name:<14}{t['eager'] * 1e3:>9.3f}{t['function'] * 1e3:>10.3f}{t['compiled'] * 1e3:>10.3f}"
              f"{(tj or float('nan')) * 1e3:>9.3f}{floor * 1e3:>8.3f}{vs_jax}{floor / t['compiled']:>16.2f}x"
              f"{'' if fused else '  (no row group ran)'}")
    print("\n'vs jax' = jax.jit time / compiled time (>= 1: jitflow compiled is as fast or faster); "
          "'floor/compiled' = copy-floor time / compiled time (1.0 = at the floor; the target is >= 0.77, "
          "i.e. within 1.3x).")


if __name__ == "__main__":
    sys.exit(main())
