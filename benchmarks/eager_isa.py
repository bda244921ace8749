"""The eager kernels' instruction-set variants against the portable baseline, in one run: each
op with a variant (kernels/simd/table.h) timed in a child process per JITFLOW_EAGER_ISA the CPU
runs, on one thread (JITFLOW_NUM_THREADS=1: the kernel, not the pool), and the speed-up over
the baseline printed per op. Needs a portable build (the wheel's: `make wheel`, then run this
file with that wheel's Python); a native build has no variants and says so.

    python benchmarks/eager_isa.py [elements]     default 1,000,000 float32 (and float64)"""
import json
import os
import subprocess
import sys

CHILD = r"""
import json, sys, timeit
import numpy as np
import jitflow as jf
n = int(sys.argv[1])
rng = np.random.default_rng(0)
ops = {"exp": jf.math.exp, "log": jf.math.log, "tanh": jf.math.tanh, "sigmoid": jf.math.sigmoid,
       "sin": jf.math.sin, "erf": jf.math.erf, "sqrt": jf.math.sqrt, "relu": jf.nn.relu,
       "add": jf.math.add, "multiply": jf.math.multiply, "divide": jf.math.divide,
       "squared_difference": jf.math.squared_difference}
out = {"isa": jf.config.info()["eager_isa"]}
for dt in (np.float32, np.float64):
    x = jf.constant(rng.uniform(0.1, 4, n).astype(dt))
    y = jf.constant(rng.uniform(0.1, 4, n).astype(dt))
    for name, fn in ops.items():
        args = (x, y) if name in ("add", "multiply", "divide", "squared_difference") else (x,)
        fn(*args)
        calls = max(1, int(0.05 / max(timeit.timeit(lambda: fn(*args), number=1), 1e-6)))
        best = min(timeit.repeat(lambda: fn(*args), number=calls, repeat=7)) / calls
        out[f"{name}/{np.dtype(dt).name}"] = best
print(json.dumps(out))
"""


def host_isas():
    flags = set()
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("flags"):
                flags = set(line.split(":", 1)[1].split())
                break
    isas = ["baseline"]
    if "avx2" in flags:
        isas.append("avx2")
        if {"avx512f", "avx512dq", "avx512bw", "avx512vl"} <= flags:
            isas.append("avx512")
    return isas


def run(isa, n):
    env = {**os.environ, "JITFLOW_EAGER_ISA": isa, "JITFLOW_NUM_THREADS": "1"}
    out = subprocess.run([sys.executable, "-c", CHILD, str(n)], capture_output=True, text=True, env=env,
                         check=False)
    if out.returncode != 0:
        sys.exit(f"JITFLOW_EAGER_ISA={isa}: {out.stderr.strip().splitlines()[-1]}")
    return json.loads(out.stdout)


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    probe = subprocess.run([sys.executable, "-c", "import jitflow as jf; print(jf.config.info()['eager_isa'])"],
                           capture_output=True, text=True, check=False)
    if probe.stdout.strip() == "native":
        sys.exit("this jitflow is a native build (JITFLOW_NATIVE=ON): no variants to compare; "
                 "run this file with a wheel's Python")
    results = {isa: run(isa, n) for isa in host_isas()}
    base = results["baseline"]
    names = [k for k in base if k != "isa"]
    head = f"{'op':<28}{'baseline us':>12}" + "".join(f"{results[i]['isa'] + ' x':>12}" for i in results
                                                      if i != "baseline")
    print(f"{n:,} elements, one thread; speed-up over the {base['isa']} baseline (> 1: faster)")
    print(head)
    for k in names:
        row = f"{k:<28}{base[k] * 1e6:>12.1f}"
        for isa, r in results.items():
            if isa != "baseline":
                row += f"{base[k] / r[k]:>12.2f}"
        print(row)


if __name__ == "__main__":
    main()
