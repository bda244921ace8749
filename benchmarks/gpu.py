"""GPU benchmark, for a machine with a GPU: the bandwidth of a fused elementwise cluster as a
fraction of a device-to-device copy, and the per-call time of an LSTM cell eager vs
jf.function vs jit_scope-compiled on /GPU:0, with CuPy and JAX alongside when installed.
Without a GPU it prints why there is nothing to measure and exits 0. All ratios come from
one run."""
import sys
import timeit

import numpy as np

import jitflow as jf


def best_us(fn, number, repeat=7):
    fn()
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number * 1e6


def fused_bandwidth(n):
    x = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    with jf.device("/GPU:0"):
        gx = jf.constant(x)

    @jf.function
    def fused(a):
        with jf.xla.experimental.jit_scope():
            return jf.tanh(a * 1.5 + 0.25) * a

    fused(gx)
    us = best_us(lambda: fused(gx), 20)
    copy_us = jf._C.gpu_time_copy(0, n * 4, 20) * 1e6
    bytes_moved = 2 * n * 4  # read x, write y
    print(f"fused elementwise, {n} float32: {us:.1f} us = {bytes_moved / us / 1e3:.1f} GB/s; device copy "
          f"{copy_us:.1f} us = {bytes_moved / copy_us / 1e3:.1f} GB/s; fused/copy bandwidth "
          f"{copy_us / us:.2f}")
    try:
        import cupy as cp
        cx = cp.asarray(x)
        k = cp.ElementwiseKernel("float32 a", "float32 y", "y = tanhf(a * 1.5f + 0.25f) * a", "fused")
        k(cx)
        cp.cuda.Device().synchronize()
        cu = best_us(lambda: (k(cx), cp.cuda.Device().synchronize()), 20)
        print(f"  CuPy ElementwiseKernel: {cu:.1f} us (jitflow/CuPy time {us / cu:.2f})")
    except ImportError:
        print("  CuPy not installed")


def lstm_cell(x, h, c, w, u, b):
    z = x @ w + h @ u + b
    i, f, g, o = jf.split(z, 4, axis=1)
    c2 = jf.sigmoid(f) * c + jf.sigmoid(i) * jf.tanh(g)
    return jf.sigmoid(o) * jf.tanh(c2), c2


def lstm(batch, units):
    rng = np.random.default_rng(1)
    host = [rng.standard_normal(s).astype(np.float32) * 0.1 for s in
            [(batch, units), (batch, units), (batch, units), (units, 4 * units), (units, 4 * units), (4 * units,)]]
    with jf.device("/GPU:0"):
        args = [jf.constant(a) for a in host]

    def sync(out):
        out[0].numpy()  # copies back, which waits for the device

    def compiled_cell(*a):
        with jf.xla.experimental.jit_scope():
            return lstm_cell(*a)

    traced, compiled = jf.function(lstm_cell), jf.function(compiled_cell)
    eager = best_us(lambda: sync(lstm_cell(*args)), 200)
    func = best_us(lambda: sync(traced(*args)), 200)
    comp = best_us(lambda: sync(compiled(*args)), 200)
    print(f"LSTM cell {batch}x{units} on /GPU:0 (per call, incl. copying h back): eager {eager:.1f} us, "
          f"function {func:.1f} us, compiled {comp:.1f} us; eager/function {eager / func:.1f}x, "
          f"eager/compiled {eager / comp:.1f}x")
    try:
        import jax
        import jax.numpy as jnp
        if jax.default_backend() != "gpu":
            raise ImportError

        def jcell(x, h, c, w, u, b):
            z = x @ w + h @ u + b
            i, f, g, o = jnp.split(z, 4, axis=1)
            c2 = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(g)
            return jax.nn.sigmoid(o) * jnp.tanh(c2), c2

        jf_ = jax.jit(jcell)
        ja = [jnp.asarray(a) for a in host]
        jax_us = best_us(lambda: np.asarray(jf_(*ja)[0]), 200)
        print(f"  jax.jit on GPU: {jax_us:.1f} us (compiled/jax time {comp / jax_us:.2f})")
    except ImportError:
        print("  JAX with a GPU backend not installed")


def main():
    status = jf._C.cuda_status()
    if not status["available"]:
        print(f"no GPU: {status['error']} -- nothing to measure here. PTX generation and the GPU "
              "runtime's host side are tested by tests/python/gpu/test_gpu_codegen.py and "
              "tests/python/gpu/test_fake_gpu.py")
        return 0
    names = [jf._C.cuda_device_name(i) for i in range(status["device_count"])]
    print(f"GPUs: {names}; driver {status['driver_version']}")
    fused_bandwidth(1 << 24)
    for batch, units in [(10, 10), (256, 512)]:
        lstm(batch, units)
    return 0


if __name__ == "__main__":
    sys.exit(main())
