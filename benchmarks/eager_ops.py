"""Eager op cost against numpy, every figure measured in this one run (the machines are noisy:
compare the ratios, not the absolute numbers).

Two tables:
  * per-call overhead on tiny tensors (us per call; the kernel work is negligible, so this is
    the Python -> C++ dispatch, shape inference, allocation and result wrapping);
  * throughput on large tensors (GB/s of memory traffic for elementwise ops and a reduction,
    GFLOP/s for a 1024^3 matmul).

The last column is always "jitflow vs numpy" as a speed ratio: > 1 means jitflow is faster.
jitflow and numpy timings are interleaved repeat by repeat and the minimum is kept.
numpy runs elementwise ops on one thread; jitflow's eager kernels use its thread pool, and
matmul uses numpy's BLAS threads vs jitflow's Eigen contraction."""
import sys
import timeit

import numpy as np

import jitflow as jf

REPEAT = 7


def calibrate(fn, target):
    """Calls per repeat so one repeat takes about `target` seconds."""
    fn()
    n = 1
    while True:
        t = timeit.timeit(fn, number=n)
        if t >= target / 4 or n >= 1 << 22:
            return max(1, int(n * target / max(t, 1e-9)))
        n *= 4


def best_pair(f_jf, f_np, target):
    """Min seconds per call of each, measured alternately so both see the same noise."""
    n_jf, n_np = calibrate(f_jf, target), calibrate(f_np, target)
    t_jf = t_np = float("inf")
    for _ in range(REPEAT):
        t_jf = min(t_jf, timeit.timeit(f_jf, number=n_jf) / n_jf)
        t_np = min(t_np, timeit.timeit(f_np, number=n_np) / n_np)
    return t_jf, t_np


def header(title):
    print()
    print(title)
    print(f"{'workload':<34}{'jitflow':>12}{'numpy':>12}  {'unit':<8}{'jf vs np':>10}")
    print("-" * 78)


def row_time(name, f_jf, f_np, target=0.05):
    t_jf, t_np = best_pair(f_jf, f_np, target)
    print(f"{name:<34}{t_jf * 1e6:>12.2f}{t_np * 1e6:>12.2f}  {'us/call':<8}{t_np / t_jf:>9.2f}x")


def row_rate(name, f_jf, f_np, work, unit, target=0.3):
    """work: bytes moved (GB/s) or flops (GFLOP/s) per call."""
    t_jf, t_np = best_pair(f_jf, f_np, target)
    r_jf, r_np = work / t_jf / 1e9, work / t_np / 1e9
    print(f"{name:<34}{r_jf:>12.1f}{r_np:>12.1f}  {unit:<8}{r_jf / r_np:>9.2f}x")


def tiny():
    header("Per-call overhead on tiny tensors (lower is better; ratio = numpy time / jitflow time)")
    rng = np.random.default_rng(0)
    a2, b2 = rng.random(2, np.float32), rng.random(2, np.float32)
    m4, n4 = rng.random((4, 4), np.float32), rng.random((4, 4), np.float32)
    ta2, tb2, tm4, tn4 = jf.constant(a2), jf.constant(b2), jf.constant(m4), jf.constant(n4)

    row_time("add (2,) f32  jf.add", lambda: jf.add(ta2, tb2), lambda: np.add(a2, b2))
    row_time("add (2,) f32  a + b", lambda: ta2 + tb2, lambda: a2 + b2)
    row_time("mul by Python scalar (2,)", lambda: ta2 * 2.0, lambda: a2 * np.float32(2.0))
    row_time("exp (2,) f32", lambda: jf.exp(ta2), lambda: np.exp(a2))
    row_time("tanh (2,) f32", lambda: jf.tanh(ta2), lambda: np.tanh(a2))
    row_time("matmul 4x4 f32", lambda: jf.matmul(tm4, tn4), lambda: np.matmul(m4, n4))
    row_time("a @ b 4x4 f32", lambda: tm4 @ tn4, lambda: m4 @ n4)
    row_time("reduce_sum (4,4) all", lambda: jf.reduce_sum(tm4), lambda: np.sum(m4))
    row_time("reduce_sum (4,4) axis=1", lambda: jf.reduce_sum(tm4, 1), lambda: np.sum(m4, 1))
    row_time("reduce_max (2,)", lambda: jf.reduce_max(ta2), lambda: np.max(a2))
    row_time("reshape (4,4)->(16,)", lambda: jf.reshape(tm4, [16]), lambda: np.reshape(m4, (16,)))
    row_time("transpose 4x4", lambda: jf.transpose(tm4), lambda: np.ascontiguousarray(m4.T))
    row_time("slice t[1:3] (contiguous)", lambda: tm4[1:3], lambda: m4[1:3].copy())
    row_time("slice t[1:3, ::2]", lambda: tm4[1:3, ::2], lambda: m4[1:3, ::2].copy())
    row_time("concat 2x(2,)", lambda: jf.concat([ta2, tb2], 0), lambda: np.concatenate([a2, b2]))
    row_time("cast f32->i32 (2,)", lambda: jf.cast(ta2, jf.int32), lambda: a2.astype(np.int32))
    row_time("constant from ndarray (2,)", lambda: jf.constant(a2), lambda: np.array(a2))
    row_time(".numpy() / np.asarray", lambda: ta2.numpy(), lambda: np.asarray(a2))


def large():
    n = 1 << 24
    header(f"Throughput on large tensors, float32 ({n >> 20}M elements; higher is better; "
           "ratio = jitflow rate / numpy rate)")
    rng = np.random.default_rng(1)
    x, y = rng.random(n, np.float32), rng.random(n, np.float32)
    tx, ty = jf.constant(x), jf.constant(y)
    nb = x.nbytes
    out = np.empty_like(x)  # numpy gets its best case: no allocation
    row_rate("add 16M f32 (2 reads + 1 write)", lambda: tx + ty, lambda: np.add(x, y, out=out), 3 * nb, "GB/s")
    row_rate("mul 16M f32 (2 reads + 1 write)", lambda: tx * ty, lambda: np.multiply(x, y, out=out), 3 * nb,
             "GB/s")
    row_rate("exp 16M f32 (1 read + 1 write)", lambda: jf.exp(tx), lambda: np.exp(x, out=out), 2 * nb, "GB/s")
    row_rate("reduce_sum 16M f32 (1 read)", lambda: jf.reduce_sum(tx), lambda: np.sum(x), nb, "GB/s")
    k = 1024
    a, b = rng.random((k, k), np.float32), rng.random((k, k), np.float32)
    ta, tb = jf.constant(a), jf.constant(b)
    row_rate("matmul 1024^3 f32", lambda: jf.matmul(ta, tb), lambda: np.matmul(a, b), 2.0 * k ** 3, "GFLOP/s")
    ref = np.matmul(a.astype(np.float64), b.astype(np.float64))
    got = jf.matmul(ta, tb).numpy()
    assert np.allclose(got, ref, rtol=1e-4), "matmul result differs from numpy"


def main():
    threads = jf.config.threading.get_intra_op_parallelism_threads()
    print(f"jitflow {jf.__version__} (eager, {threads} threads), numpy {np.__version__}, "
          f"Python {sys.version.split()[0]}")
    tiny()
    large()


if __name__ == "__main__":
    sys.exit(main())
