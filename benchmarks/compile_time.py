"""Compile time of one fused cluster as it deepens, when every step reuses the previous value
(x = x * x + x: residual and gated blocks have this shape). Each value is generated once per
element, so compile time grows with the number of ops, not exponentially with the depth.

    python benchmarks/compile_time.py
"""
import os
import time

import numpy as np

os.environ["JITFLOW_CACHE_DIR"] = "off"  # measure compiling, not the disk cache
import jitflow as jf


def squares(depth):
    def f(x):
        with jf.jit_scope():
            for _ in range(depth):
                x = x * x + x
            return x
    return jf.function(f)


def main():
    x0 = np.full(4096, 1e-4, np.float32)
    print(f"{'depth':>6}{'ops':>7}{'clusters':>10}{'compile s':>11}{'first call s':>14}{'max rel err':>13}")
    for depth in (10, 20, 40, 80, 1000):
        f = squares(depth)
        t = time.perf_counter()
        out = f(jf.constant(x0)).numpy()
        first = time.perf_counter() - t
        clusters = f.get_concrete_function(jf.constant(x0))._cf.clusters
        ref = x0.astype(np.float64)
        for _ in range(depth):
            ref = ref * ref + ref
        err = float(np.max(np.abs(out - ref) / np.abs(ref)))
        print(f"{depth:>6}{2 * depth:>7}{len(clusters):>10}{sum(c['compile_seconds'] for c in clusters):>11.3f}"
              f"{first:>14.3f}{err:>13.1e}")


if __name__ == "__main__":
    main()
