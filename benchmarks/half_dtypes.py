"""float16 and bfloat16 against float32 in one run: a matmul and an elementwise chain
(x * 1.5 + y, tanh, a product with x, a row sum), eagerly, in a jf.function and compiled
(jit_compile=True), with the ratio of each half type's time to float32's. Eager kernels compute
each op in float32 and round its result; compiled clusters widen on load, compute the fused
chain in float32 and round on store (the matmul is a library step on the eager kernel), so a
ratio above 1 is the cost of widening and rounding; compare the ratios, not the absolute numbers.

Timings are interleaved repeat by repeat and the best is kept; results are checked against a
float64 numpy reference at each type's tolerance first.

    python benchmarks/half_dtypes.py [--quick]
"""

import argparse
import os
import timeit

import numpy as np

import jitflow as jf

DTYPES = ["float32", "float16", "bfloat16"]
TOL = {"float32": 1e-5, "float16": 2e-2, "bfloat16": 1e-1}


def chain(x, y):
    z = jf.tanh(x * 1.5 + y) * x
    return jf.reduce_sum(z, axis=1)


def cases(n_mm, n_ew):
    rng = np.random.default_rng(0)
    a = rng.uniform(-1, 1, (n_mm, n_mm))
    b = rng.uniform(-1, 1, (n_mm, n_mm))
    x = rng.uniform(-1, 1, (n_ew, 256))
    y = rng.uniform(-1, 1, (n_ew, 256))
    ref_chain = (np.tanh(x * 1.5 + y) * x).sum(axis=1)
    return [
        (f"matmul {n_mm}x{n_mm}", (a, b), jf.matmul, a @ b),
        (f"chain {n_ew}x256", (x, y), chain, ref_chain),
    ]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--quick", action="store_true")
    args = p.parse_args()
    repeats, number = (3, 3) if args.quick else (7, 10)
    n_mm, n_ew = (128, 256) if args.quick else (512, 2048)
    print(f"load average {os.getloadavg()[0]:.2f}; best of {repeats} x {number} calls")
    print(f"{'case':22s} {'mode':9s} " + " ".join(f"{d:>10s}" for d in DTYPES) + "   f16/f32  bf16/f32")
    for label, inputs, fn, ref in cases(n_mm, n_ew):
        for mode in ("eager", "function", "compiled"):
            call = fn if mode == "eager" else jf.function(fn, jit_compile=mode == "compiled")
            args_by = {d: [jf.constant(v, getattr(jf, d)) for v in inputs] for d in DTYPES}
            for d in DTYPES:  # first call (tracing) and the check
                got = call(*args_by[d]).numpy().astype(np.float64)
                scale = max(1.0, float(np.abs(ref).max()))
                np.testing.assert_allclose(got / scale, ref / scale, atol=TOL[d], err_msg=f"{label} {d}")
                if mode == "compiled":  # the call ran compiled code, not an eager fallback
                    before = jf.debugging.stats()["cluster_runs"]
                    call(*args_by[d])
                    assert jf.debugging.stats()["cluster_runs"] > before, f"{label} {d}: not compiled"
            best = {d: float("inf") for d in DTYPES}
            for _ in range(repeats):
                for d in DTYPES:
                    t = timeit.timeit(lambda d=d, f=call, a=args_by: f(*a[d]).numpy(), number=number) / number
                    best[d] = min(best[d], t)
            print(
                f"{label:22s} {mode:9s} "
                + " ".join(f"{best[d] * 1e3:9.3f}ms" for d in DTYPES)
                + f"   {best['float16'] / best['float32']:7.2f}x {best['bfloat16'] / best['float32']:8.2f}x"
            )


if __name__ == "__main__":
    main()
