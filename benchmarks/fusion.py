"""Fusion benchmark: compiled (jit_scope) vs traced-uncompiled vs eager vs numpy, measured
in one run, with the machine's copy bandwidth as the yardstick for memory-bound kernels.

Workloads: a 16M-float32 elementwise chain tanh(x*a+b)*c, softmax over rows, layer norm,
and the seed's LSTM cell (10x10). Also the compile time of the LSTM cell's cluster."""
import os
import tempfile
import time
import timeit

import numpy as np

import jitflow as jf

N = 1 << 24


def best(fn, number=5, repeat=7):
    fn()
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number


def row(name, t_comp, t_fn, t_eager, t_np, extra=""):
    print(f"{name:<26}{t_comp*1e3:>10.3f}{t_fn*1e3:>10.3f}{t_eager*1e3:>10.3f}{t_np*1e3:>10.3f}"
          f"{t_eager/t_comp:>10.2f}x{t_np/t_comp:>9.2f}x  {extra}")


def variants(body):
    def compiled(*a):
        with jf.jit_scope():
            return body(*a)
    return jf.function(compiled), jf.function(body), body


def main():
    os.environ.setdefault("JITFLOW_CACHE_DIR", tempfile.mkdtemp(prefix="jf-bench-cache-"))
    print(f"threads: {jf.config.threading.get_intra_op_parallelism_threads()}")
    x = np.random.rand(N).astype(np.float32)
    y = np.empty_like(x)
    t_copy = best(lambda: np.copyto(y, x))
    copy_gbs = 2 * x.nbytes / t_copy / 1e9
    print(f"copy bandwidth (numpy copyto, 16M f32): {copy_gbs:.1f} GB/s")
    print(f"{'workload (ms)':<26}{'compiled':>10}{'function':>10}{'eager':>10}{'numpy':>10}"
          f"{'eager/cmp':>11}{'np/cmp':>10}")

    xt = jf.constant(x)
    comp, fn, eager = variants(lambda v: jf.tanh(v * 1.5 + 0.5) * 2.0)
    tc, tf_, te = best(lambda: comp(xt)), best(lambda: fn(xt)), best(lambda: eager(xt))
    tn = best(lambda: np.tanh(x * 1.5 + 0.5) * 2.0)
    gbs = 2 * x.nbytes / tc / 1e9
    row("chain tanh(x*a+b)*c 16M", tc, tf_, te, tn, f"{gbs:.1f} GB/s = {gbs / copy_gbs:.0%} of copy")

    m = np.random.rand(4096, 1024).astype(np.float32)
    mt = jf.constant(m)
    comp, fn, eager = variants(lambda v: jf.nn.softmax(v))

    def np_softmax(v):
        e = np.exp(v - v.max(1, keepdims=True))
        return e / e.sum(1, keepdims=True)
    row("softmax 4096x1024", best(lambda: comp(mt)), best(lambda: fn(mt)), best(lambda: eager(mt)),
        best(lambda: np_softmax(m)))

    g = jf.constant(np.random.rand(1024).astype(np.float32))
    bb = jf.constant(np.random.rand(1024).astype(np.float32))

    def layer_norm(v):
        mu = jf.reduce_mean(v, axis=1, keepdims=True)
        d = v - mu
        var = jf.reduce_mean(d * d, axis=1, keepdims=True)
        return d * jf.rsqrt(var + 1e-5) * g + bb
    comp, fn, eager = variants(layer_norm)

    def np_ln(v):
        mu = v.mean(1, keepdims=True)
        d = v - mu
        return d / np.sqrt((d * d).mean(1, keepdims=True) + 1e-5) * g.numpy() + bb.numpy()
    row("layer norm 4096x1024", best(lambda: comp(mt)), best(lambda: fn(mt)), best(lambda: eager(mt)),
        best(lambda: np_ln(m)))

    cell = jf.nn.LSTMCell(10)
    inp = jf.zeros([10, 10])
    state = [jf.zeros([10, 10]), jf.zeros([10, 10])]
    os.environ["JITFLOW_CACHE_DIR"] = "off"
    t0 = time.perf_counter()
    comp, fn, eager = variants(lambda i, s: cell(i, s))
    comp(inp, state)
    first_call = time.perf_counter() - t0
    cf = comp.get_concrete_function(inp, state)
    compile_s = sum(c["compile_seconds"] for c in cf._cf.clusters)
    np_w = [v.numpy() for v in (cell.kernel, cell.recurrent_kernel, cell.bias)]

    def np_lstm(i, h, c):
        z = i @ np_w[0] + h @ np_w[1] + np_w[2]
        z0, z1, z2, z3 = np.split(z, 4, axis=1)
        sig = lambda t: 1 / (1 + np.exp(-t))
        c2 = sig(z1) * c + sig(z0) * np.tanh(z2)
        return sig(z3) * np.tanh(c2), c2
    zn = np.zeros((10, 10), np.float32)
    row("LSTM cell 10x10 (seed)", best(lambda: comp(inp, state), 2000), best(lambda: fn(inp, state), 2000),
        best(lambda: eager(inp, state), 2000), best(lambda: np_lstm(zn, zn, zn), 2000),
        f"cluster compile {compile_s*1e3:.1f} ms (first call {first_call*1e3:.1f} ms)")


if __name__ == "__main__":
    main()
