"""Where a GPU call's time goes, for a device session: host cost per eager op and per traced
op, the wait and copy back, and the counters (allocations, CPU fallbacks) per call of the
LSTM cell and the MLP step; the driver's own launch floor. Run with
tools/gpu_check.sh py ARCHIVE tools/gpu_probe.py [ew | mlp]: `ew` times elementwise kernels
against a device copy only; `mlp` runs a few compiled MLP steps only (for a profiler)."""

import os
import sys
import time

import numpy as np

import jitflow as jf

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "benchmarks"))
from gpu import lstm_cell, mlp_step  # benchmarks/gpu.py: the same workloads


def us(f, n=500):
    f()
    best = 1e9
    for _ in range(3):
        t = time.perf_counter()
        for _ in range(n):
            f()
        best = min(best, (time.perf_counter() - t) / n)
    return best * 1e6


def sync():
    jf._C.gpu_synchronize(0)


def delta(f):
    a = jf._C.gpu_stats(0)
    s = jf.debugging.stats()
    f()
    sync()
    b = jf._C.gpu_stats(0)
    s2 = jf.debugging.stats()
    d = {k: b[k] - a[k] for k in a if b[k] != a[k] and "bytes" not in k}
    d.update({k: s2[k] - s[k] for k in s if isinstance(s[k], int) and s2[k] != s[k]})
    return d


rng = np.random.default_rng(0)
MODE = sys.argv[1] if len(sys.argv) > 1 else "all"
if MODE == "ew":
    n = 1 << 24
    with jf.device("/GPU:0"):
        big = jf.constant(rng.standard_normal(n).astype(np.float32))
    copy = jf._C.gpu_time_copy(0, n * 4, 20) * 1e6
    kernels = {
        "a*2": lambda a: a * 2.0,
        "a*1.5+0.25": lambda a: a * 1.5 + 0.25,
        "tanh(a)": jf.tanh,
        "tanh(a*1.5+0.25)*a": lambda a: jf.tanh(a * 1.5 + 0.25) * a,
    }
    for name, body in kernels.items():
        f = jf.function(body, jit_compile=True)
        t = us(lambda f=f: (f(big), sync()), 20)
        print(f"elementwise {name}: {t:.1f} us, copy {copy:.1f} us, copy/kernel {copy / t:.2f}")
    sys.exit(0)
with jf.device("/GPU:0"):
    a = jf.constant(rng.standard_normal((10, 10)).astype(np.float32))
    b = jf.constant(rng.standard_normal((10, 10)).astype(np.float32))
print("eager add 10x10, no wait:", round(us(lambda: a + b), 2), "us")
print("synchronize alone:", round(us(sync), 2), "us")
print("a.numpy() 10x10:", round(us(lambda: a.numpy()), 2), "us")
f1 = jf.function(lambda a, b: a + b)
f10 = jf.function(lambda a, b: (((((((((a + b) * b) + b) * b) + b) * b) + b) * b) + b) * b)
print("function 1 add, no wait:", round(us(lambda: f1(a, b)), 2), "us")
print("function 10 ops, no wait:", round(us(lambda: f10(a, b)), 2), "us")
print("eager 10 ops, no wait:", round(us(lambda: (((((((((a + b) * b) + b) * b) + b) * b) + b) * b) + b) * b), 2), "us")
print("matmul 10x10 eager:", round(us(lambda: a @ b), 2), "us")


cell = lstm_cell(jf)
shapes = [(10, 10), (10, 10), (10, 10), (10, 40), (10, 40), (40,)]
with jf.device("/GPU:0"):
    args = [jf.constant(rng.standard_normal(s).astype(np.float32)) for s in shapes]
fn = jf.function(cell)
fn(*args)
print("LSTM eager call counters:", delta(lambda: cell(*args)))
print("LSTM function call counters:", delta(lambda: fn(*args)))
print("LSTM eager no wait:", round(us(lambda: cell(*args), 200), 1), "us; function no wait:",
      round(us(lambda: fn(*args), 200), 1), "us")
cf = fn.get_concrete_function(*args)
print("LSTM graph ops:", len(cf.graph.get_operations()))

B, F, H, C = 512, 1024, 4096, 10
with jf.device("/GPU:0"):
    w1 = jf.Variable(rng.standard_normal((F, H)).astype(np.float32) * 0.02)
    w2 = jf.Variable(rng.standard_normal((H, C)).astype(np.float32) * 0.02)
    x = jf.constant(rng.standard_normal((B, F)).astype(np.float32))
    y = jf.constant(rng.integers(0, C, B).astype(np.int32))
step = mlp_step(jf, w1, w2)


if MODE == "mlp":
    st = jf.function(step, jit_compile=True)
    for _ in range(6):
        float(st(x, y).numpy())
    sys.exit(0)
for jit in (False, True):
    st = jf.function(step, jit_compile=jit)
    float(st(x, y).numpy())
    print(f"MLP step jit={jit} counters:", delta(lambda st=st: st(x, y)))
    print(f"MLP step jit={jit} host time, no wait:", round(us(lambda st=st: st(x, y), 50), 1), "us; with wait:",
          round(us(lambda st=st: (st(x, y), sync()), 50), 1), "us")
    sync()
with jf.device("/GPU:0"):
    big = jf.constant(rng.standard_normal((B, F)).astype(np.float32))
    wb = jf.constant(rng.standard_normal((F, H)).astype(np.float32))
print("matmul 512x1024x4096 alone:", round(us(lambda: (big @ wb, sync()), 50), 1), "us")

# ---- The driver's own floor, through ctypes: an empty kernel's launch and cuCtxSetCurrent.
import ctypes

cu = ctypes.CDLL("libcuda.so.1")
ctx, dev, mod, fn, fn_tab, stream = (ctypes.c_void_p() for _ in range(6))
cu.cuInit(0)
cu.cuDeviceGet(ctypes.byref(ctypes.c_int()), 0)
cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), 0)
cu.cuCtxSetCurrent(ctx)
ptx = b""".version 7.0
.target sm_70
.address_size 64
.visible .entry k(.param .u64 a, .param .u64 b, .param .u64 n) { ret; }
.visible .entry t(.param .align 8 .b8 bufs[64], .param .align 8 .b8 dims[64], .param .u64 n) { ret; }
"""
assert cu.cuModuleLoadData(ctypes.byref(mod), ptx) == 0
cu.cuModuleGetFunction(ctypes.byref(fn), mod, b"k")
cu.cuModuleGetFunction(ctypes.byref(fn_tab), mod, b"t")
cu.cuStreamCreate(ctypes.byref(stream), 1)
vals = [ctypes.c_uint64(0) for _ in range(3)]
argv = (ctypes.c_void_p * 3)(*[ctypes.cast(ctypes.byref(v), ctypes.c_void_p) for v in vals])
tab = (ctypes.c_uint64 * 8)()
argt = (ctypes.c_void_p * 3)(ctypes.cast(tab, ctypes.c_void_p), ctypes.cast(tab, ctypes.c_void_p),
                             ctypes.cast(ctypes.byref(vals[2]), ctypes.c_void_p))
launch = cu.cuLaunchKernel
launch.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]


def launches(f, args, n=2000):
    t = time.perf_counter()
    for _ in range(n):
        launch(f, 132, 1, 1, 256, 1, 1, 0, stream, args, None)
    host = (time.perf_counter() - t) / n
    cu.cuStreamSynchronize(stream)
    return host * 1e6


launches(fn, argv)
t0 = time.perf_counter()
for _ in range(2000):
    pass
loop = (time.perf_counter() - t0) / 2000 * 1e6
print(f"ctypes: empty kernel launch {launches(fn, argv):.2f} us host; with 64-byte by-value tables "
      f"{launches(fn_tab, argt):.2f} us (python loop+ctypes call cost included; empty loop {loop:.2f} us)")
t = time.perf_counter()
for _ in range(2000):
    cu.cuCtxSetCurrent(ctx)
print(f"ctypes: cuCtxSetCurrent {(time.perf_counter() - t) / 2000 * 1e6:.2f} us")
t = time.perf_counter()
for _ in range(2000):
    cu.cuCtxGetCurrent(ctypes.byref(dev))
print(f"ctypes: cuCtxGetCurrent (a ctypes call's floor) {(time.perf_counter() - t) / 2000 * 1e6:.2f} us")
