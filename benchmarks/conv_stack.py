"""Convolution stacks in inference, to measure what jitflow's convolution rewrites gain: a
plain stack of three 3x3 convolutions (bias and relu after the first two), the same with a 2x2
max pool after each of the first two, and a stack of three conv + batch norm + relu blocks (Keras' bias-free Conv2D and BatchNormalization arithmetic), on
batches of 32x32 images with 32 channels, in one run:

  eager         op by op
  compiled      jf.function(jit_compile=True), with the fused post-ops and blocked layouts
  no rewrites   the same with JITFLOW_CONV_FUSION=0 and JITFLOW_CONV_BLOCKED=0 while tracing
  no layouts    the same with JITFLOW_CONV_BLOCKED=0 only
  jax.jit       the same math, in the interpreter --jax-python names (a child process)

Run it also under ONEDNN_MAX_CPU_ISA=AVX2: on AVX-512 cores oneDNN prefers NHWC itself and no
blocked chain forms (compiled = no layouts). Times are the best of several repeats, interleaved;
compare the ratios, not the absolute times.

    python benchmarks/conv_stack.py [--quick] [--jax-python PY] [--batch 32]
"""

import argparse
import json
import os
import subprocess
import tempfile
import timeit

import numpy as np

EPS = 1e-3
CH = 32


def inputs(batch):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((batch, 32, 32, CH)).astype(np.float32)
    ws = [
        (rng.standard_normal((3, 3, CH, CH)) * np.sqrt(2.0 / (9 * CH))).astype(np.float32) for _ in range(3)
    ]
    bs = [rng.uniform(-0.1, 0.1, CH).astype(np.float32) for _ in range(3)]
    bn = [
        [
            rng.uniform(-0.1, 0.1, CH),
            rng.uniform(0.5, 1.5, CH),
            rng.uniform(0.8, 1.2, CH),
            rng.uniform(-0.1, 0.1, CH),
        ]
        for _ in range(3)
    ]
    bn = [[v.astype(np.float32) for v in b] for b in bn]
    return x, ws, bs, bn


def plain(tf, conv, x, ws, bs):
    h = tf.nn.relu(conv(x, ws[0]) + bs[0])
    h = tf.nn.relu(conv(h, ws[1]) + bs[1])
    return conv(h, ws[2]) + bs[2]


def pooled(tf, conv, x, ws, bs):
    h = tf.nn.max_pool2d(tf.nn.relu(conv(x, ws[0]) + bs[0]), 2, 2, "VALID")
    h = tf.nn.max_pool2d(tf.nn.relu(conv(h, ws[1]) + bs[1]), 2, 2, "VALID")
    return conv(h, ws[2]) + bs[2]


def bn_blocks(tf, conv, x, ws, bn):
    h = x
    for w, (mean, var, gamma, beta) in zip(ws, bn):
        inv = gamma / tf.sqrt(var + EPS)
        h = tf.nn.relu((conv(h, w) - mean) * inv + beta)
    return h


def best(fn, repeat, target):
    fn()
    n = max(1, int(target / max(timeit.timeit(fn, number=1), 1e-6)))
    return min(timeit.repeat(fn, number=n, repeat=repeat)) / n


def jax_child(args):
    import jax
    import jax.numpy as jnp

    def max_pool2d(h, k, st, padding):
        return jax.lax.reduce_window(h, -np.inf, jax.lax.max, (1, k, k, 1), (1, st, st, 1), padding)

    class T:
        nn = type("nn", (), {"relu": staticmethod(jax.nn.relu), "max_pool2d": staticmethod(max_pool2d)})
        sqrt = staticmethod(jnp.sqrt)

    def conv(h, w):
        return jax.lax.conv_general_dilated(h, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))

    x, ws, bs, bn = inputs(args.batch)
    fns = {
        "plain": jax.jit(lambda x, ws, bs: plain(T, conv, x, ws, bs)),
        "pooled": jax.jit(lambda x, ws, bs: pooled(T, conv, x, ws, bs)),
        "bn_blocks": jax.jit(lambda x, ws, bn: bn_blocks(T, conv, x, ws, bn)),
    }
    out = {}
    for name, f in fns.items():
        a = (x, ws, bn) if name == "bn_blocks" else (x, ws, bs)
        a = jax.tree_util.tree_map(jnp.asarray, a)
        y = np.asarray(f(*a))
        t = best(lambda f=f, a=a: f(*a).block_until_ready(), args.repeat, args.target)
        out[name] = {"time": t, "sum": float(np.float64(y).sum())}
    print(json.dumps(out))


def traced(jf, fn, args, env):
    """fn compiled, traced (and so optimized) with `env` set."""
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        f = jf.function(fn, jit_compile=True)
        f(*args)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return f


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--jax-python", default=None, help="an interpreter with jax")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--repeat", type=int, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--target", type=float, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    args.repeat = args.repeat or (2 if args.quick else 7)
    args.target = args.target or (0.05 if args.quick else 0.3)
    if args.child:
        return jax_child(args)
    os.environ.setdefault("JITFLOW_CACHE_DIR", tempfile.mkdtemp(prefix="jf-bench-cache-"))
    import jitflow as jf

    def conv(h, w):
        return jf.nn.conv2d(h, w, 1, "SAME")

    x, ws, bs, bn = inputs(args.batch)
    jx = jf.constant(x)
    jws = [jf.constant(w) for w in ws]
    jbs = [jf.constant(b) for b in bs]
    jbn = [[jf.constant(v) for v in b] for b in bn]
    work = {
        "plain": (lambda x, ws, bs: plain(jf, conv, x, ws, bs), (jx, jws, jbs)),
        "pooled": (lambda x, ws, bs: pooled(jf, conv, x, ws, bs), (jx, jws, jbs)),
        "bn_blocks": (lambda x, ws, bn: bn_blocks(jf, conv, x, ws, bn), (jx, jws, jbn)),
    }
    peers = {}
    if args.jax_python:
        cmd = [
            args.jax_python,
            os.path.abspath(__file__),
            "--child",
            "--batch",
            str(args.batch),
            "--repeat",
            str(args.repeat),
            "--target",
            str(args.target),
        ]
        r = subprocess.run(cmd, check=True, capture_output=True, text=True)
        peers = json.loads(r.stdout.strip().splitlines()[-1])
    off = {"JITFLOW_CONV_FUSION": "0", "JITFLOW_CONV_BLOCKED": "0"}
    print(
        f"jitflow {jf.__version__}, {jf._C.num_threads()} threads, batch {args.batch} of 32x32x{CH}, "
        f"ONEDNN_MAX_CPU_ISA={os.environ.get('ONEDNN_MAX_CPU_ISA', '(unset)')}"
    )
    for name, (fn, a) in work.items():
        fns = {
            "eager": fn,
            "compiled": traced(jf, fn, a, {}),
            "no rewrites": traced(jf, fn, a, off),
            "no layouts": traced(jf, fn, a, {"JITFLOW_CONV_BLOCKED": "0"}),
        }
        want = fns["no rewrites"](*a).numpy()
        for k, f in fns.items():
            np.testing.assert_allclose(f(*a).numpy(), want, rtol=1e-3, atol=1e-3, err_msg=k)
        if name in peers:
            got = peers[name]["sum"]
            assert abs(got - float(np.float64(want).sum())) <= 1e-3 * max(1.0, abs(got)), (name, got)
        s0 = jf.debugging.stats()
        fns["compiled"](*a)
        s1 = jf.debugging.stats()
        counts = {k: s1[k] - s0[k] for k in ("conv_postop_runs", "conv_blocked_runs", "conv_layout_reorders")}
        # Interleaved: each repeat times every column once.
        times = {k: [] for k in fns}
        for _ in range(args.repeat):
            for k, f in fns.items():
                times[k].append(best(lambda f=f, a=a: f(*a).numpy(), 1, args.target))
        t = {k: min(v) for k, v in times.items()}
        if name in peers:
            t["jax.jit"] = peers[name]["time"]
        print(f"\n{name}: per compiled run {counts}")
        for k, v in t.items():
            print(f"  {k:<12}{v * 1e3:>9.3f} ms   compiled is {v / t['compiled']:>5.2f}x faster")


if __name__ == "__main__":
    main()
