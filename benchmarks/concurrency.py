"""Load on one jf.function from many threads: 8 threads x 10,000 calls of a traced and of a
compiled function with three input shapes, every result checked, the trace count printed
(one per shape, whatever the contention), and the call rate against one thread's.

    python benchmarks/concurrency.py [--threads 8] [--calls 10000]
"""
import argparse
import threading
import time

import numpy as np

import jitflow as jf

SHAPES = [(3,), (2, 5), (4, 1, 7)]


def run(f, tensors, want, threads, calls):
    bad = []
    gate = threading.Barrier(threads)

    def worker(k):
        gate.wait()
        for i in range(calls):
            j = (i + k) % len(SHAPES)
            if not np.allclose(f(*tensors[j]).numpy(), want[j], rtol=1e-6):
                bad.append((k, i))
    ts = [threading.Thread(target=worker, args=(k,)) for k in range(threads)]
    t0 = time.perf_counter()
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return time.perf_counter() - t0, bad


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=8)
    ap.add_argument("--calls", type=int, default=10000)
    a = ap.parse_args()
    inputs = [(np.arange(np.prod(s), dtype=np.float32).reshape(s) / 10, np.full(s, 0.5, np.float32))
              for s in SHAPES]
    tensors = [(jf.constant(x), jf.constant(y)) for x, y in inputs]
    want = [np.sum(x.astype(np.float64) * y + 1.0, axis=-1) for x, y in inputs]
    print(f"{a.threads} threads x {a.calls} calls, shapes {SHAPES}, {jf._C.num_threads()} pool threads")
    for label, jit in (("traced", False), ("compiled", True)):
        f = jf.function(lambda x, y: jf.reduce_sum(x * y + 1.0, axis=-1), jit_compile=jit)
        many, bad = run(f, tensors, want, a.threads, a.calls)
        traces = f.experimental_get_tracing_count()
        one, _ = run(f, tensors, want, 1, a.calls)
        total = a.threads * a.calls
        print(f"  {label:<9} {total / many:>10.0f} calls/s with {a.threads} threads, "
              f"{a.calls / one:>10.0f} with one; traces {traces} (shapes {len(SHAPES)}), "
              f"wrong results {len(bad)}")
        assert not bad and traces == len(SHAPES)


if __name__ == "__main__":
    main()
