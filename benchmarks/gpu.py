"""GPU benchmark, for a machine with a GPU: a fused elementwise chain against a device-to-device
copy (and CuPy, jax.jit), the seed's LSTM cell eager / jf.function / compiled, an MLP training
step, and softmax and layer norm rows, each against jax.jit on the same GPU when JAX is there.
Without a GPU it prints why there is nothing to measure and exits 0.

jax.jit runs in this interpreter when JAX imports here with a GPU backend, else in the one
--jax-python names (a child process, run first, so the two never share the GPU). Every ratio
comes from one run; times are per call (per step), from batches of calls ended by one wait
for the device, except the LSTM cell's, which copy h back every call.

    python benchmarks/gpu.py [--jax-python /path/to/python] [--small]
"""

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

EPS = 1e-5


def sizes(small):
    """Workload sizes; --small shrinks them for a smoke run (tools/gpu_check.sh smoke)."""
    if small:
        return {"chain": 1 << 12, "lstm": [(10, 10), (16, 32)], "mlp": (16, 32, 64, 10), "rows": (64, 128)}
    return {
        "chain": 1 << 24,
        "lstm": [(10, 10), (256, 512)],
        "mlp": (512, 1024, 4096, 10),
        "rows": (4096, 1024),
    }


def per_call_us(call, finish, number, repeat=5):
    """Best per-call time over `repeat` batches of `number` calls, each batch ended by finish()."""
    finish(call())
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        r = None
        for _ in range(number):
            r = call()
        finish(r)
        best = min(best, (time.perf_counter() - t) / number)
    return best * 1e6


def host_inputs(sz):
    rng = np.random.default_rng(0)
    batch, features, hidden, classes = sz["mlp"]
    rows, width = sz["rows"]
    d = {
        "chain": rng.standard_normal(sz["chain"]).astype(np.float32),
        "mlp_x": rng.standard_normal((batch, features)).astype(np.float32),
        "mlp_y": rng.integers(0, classes, batch).astype(np.int32),
        "mlp_w1": (rng.standard_normal((features, hidden)) * 0.02).astype(np.float32),
        "mlp_w2": (rng.standard_normal((hidden, classes)) * 0.02).astype(np.float32),
        "rows_x": rng.standard_normal((rows, width)).astype(np.float32),
        "rows_g": rng.uniform(0.5, 1.5, width).astype(np.float32),
        "rows_b": rng.standard_normal(width).astype(np.float32),
    }
    for b, u in sz["lstm"]:
        r = np.random.default_rng(1)
        shapes = [(b, u), (b, u), (b, u), (u, 4 * u), (u, 4 * u), (4 * u,)]
        d[f"lstm_{b}x{u}"] = [(r.standard_normal(s) * 0.1).astype(np.float32) for s in shapes]
    return d


# ---- JAX ----------------------------------------------------------------------------------


def jax_times(sz):
    """{row: microseconds} for jax.jit on its default (GPU) backend; {} without a GPU backend."""
    import jax
    import jax.numpy as jnp

    if jax.default_backend() != "gpu":
        return {"backend": jax.default_backend()}
    d = host_inputs(sz)
    block = jax.block_until_ready
    out = {"backend": "gpu", "device": str(jax.devices()[0])}
    x = jnp.asarray(d["chain"])
    chain = jax.jit(lambda a: jnp.tanh(a * 1.5 + 0.25) * a)
    out["chain"] = per_call_us(lambda: chain(x), block, 20)

    def cell(x, h, c, w, u, b):
        z = x @ w + h @ u + b
        i, f, g, o = jnp.split(z, 4, axis=1)
        c2 = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(g)
        return jax.nn.sigmoid(o) * jnp.tanh(c2), c2

    jcell = jax.jit(cell)
    for b, u in sz["lstm"]:
        args = [jnp.asarray(a) for a in d[f"lstm_{b}x{u}"]]
        out[f"lstm_{b}x{u}"] = per_call_us(lambda args=args: np.asarray(jcell(*args)[0]), lambda r: None, 200)

    def loss_fn(params, x, y):
        w1, w2 = params
        logits = jax.nn.relu(x @ w1) @ w2
        logp = jax.nn.log_softmax(logits, axis=-1)
        return -jnp.mean(jnp.take_along_axis(logp, y[:, None], axis=1))

    def step(params, x, y):
        loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
        return [p - 0.1 * g for p, g in zip(params, grads)], loss

    jstep = jax.jit(step, donate_argnums=0)
    state = {"p": [jnp.asarray(d["mlp_w1"]), jnp.asarray(d["mlp_w2"])]}
    mx, my = jnp.asarray(d["mlp_x"]), jnp.asarray(d["mlp_y"])

    def one_step():
        state["p"], loss = jstep(state["p"], mx, my)
        return loss

    out["mlp"] = per_call_us(one_step, lambda loss: float(loss), 50)
    rx, rg, rb = jnp.asarray(d["rows_x"]), jnp.asarray(d["rows_g"]), jnp.asarray(d["rows_b"])
    softmax = jax.jit(lambda x: jax.nn.softmax(x, axis=-1))

    def layer_norm(x, g, b):
        mu = jnp.mean(x, axis=-1, keepdims=True)
        dx = x - mu
        return dx * jax.lax.rsqrt(jnp.mean(dx * dx, axis=-1, keepdims=True) + EPS) * g + b

    ln = jax.jit(layer_norm)
    out["softmax"] = per_call_us(lambda: softmax(rx), block, 50)
    out["layer_norm"] = per_call_us(lambda: ln(rx, rg, rb), block, 50)
    return out


def jax_results(args, sz):
    """jax.jit's times: here if JAX has a GPU backend here, else from --jax-python's child."""
    try:
        import jax

        if jax.default_backend() == "gpu":
            return jax_times(sz)
    except ImportError:
        pass
    if not args.jax_python:
        return {}
    cmd = [args.jax_python, os.path.abspath(__file__), "--child"] + (["--small"] if args.small else [])
    # Its own Python and libraries: not the ones tools/gpu_check.sh's bundle puts first.
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONHOME", "PYTHONPATH", "LD_LIBRARY_PATH")}
    if os.environ.get("JITFLOW_HOST_LD_LIBRARY_PATH"):
        env["LD_LIBRARY_PATH"] = os.environ["JITFLOW_HOST_LD_LIBRARY_PATH"]
    res = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False, timeout=300)
    if res.returncode != 0:
        print(f"(the JAX child failed: {res.stderr.strip().splitlines()[-1:]})")
        return {}
    return json.loads(res.stdout.strip().splitlines()[-1])


# ---- jitflow ------------------------------------------------------------------------------


def vs_jax(ours, jx, name):
    """' (jax.jit N us, jax/jitflow X.XXx)' when JAX measured `name`."""
    if name not in jx:
        return ""
    return f"; jax.jit {jx[name]:.1f} us, jax/jitflow {jx[name] / ours:.2f}x"


def bench_chain(jf, d, jx, sync):
    x = d["chain"]
    n = x.size
    with jf.device("/GPU:0"):
        gx = jf.constant(x)

    @jf.function
    def fused(a):
        with jf.xla.experimental.jit_scope():
            return jf.tanh(a * 1.5 + 0.25) * a

    us = per_call_us(lambda: fused(gx), sync, 20)
    copy_us = jf._C.gpu_time_copy(0, n * 4, 20) * 1e6
    moved = 2 * n * 4  # read x, write y
    print(
        f"fused elementwise tanh(a*1.5+0.25)*a, {n} float32: {us:.1f} us = {moved / us / 1e3:.1f} GB/s; "
        f"device copy {copy_us:.1f} us = {moved / copy_us / 1e3:.1f} GB/s; fused/copy bandwidth "
        f"{copy_us / us:.2f} (target >= 0.85){vs_jax(us, jx, 'chain')}"
    )
    try:
        import cupy as cp

        cx = cp.asarray(x)
        k = cp.ElementwiseKernel("float32 a", "float32 y", "y = tanhf(a * 1.5f + 0.25f) * a", "fused")
        cu = per_call_us(lambda: k(cx), lambda r: cp.cuda.Device().synchronize(), 20)
        print(f"  CuPy ElementwiseKernel: {cu:.1f} us (CuPy/jitflow {cu / us:.2f}x)")
    except ImportError:
        print("  CuPy not installed")


def lstm_cell(jf):
    def cell(x, h, c, w, u, b):
        z = x @ w + h @ u + b
        i, f, g, o = jf.split(z, 4, axis=1)
        c2 = jf.sigmoid(f) * c + jf.sigmoid(i) * jf.tanh(g)
        return jf.sigmoid(o) * jf.tanh(c2), c2

    return cell


def bench_lstm(jf, d, jx, batch, units):
    cell = lstm_cell(jf)
    with jf.device("/GPU:0"):
        args = [jf.constant(a) for a in d[f"lstm_{batch}x{units}"]]

    def compiled_cell(*a):
        with jf.xla.experimental.jit_scope():
            return cell(*a)

    traced, compiled = jf.function(cell), jf.function(compiled_cell)
    back = lambda fn: lambda: fn(*args)[0].numpy()  # copies h back: waits for the device
    eager = per_call_us(back(cell), lambda r: None, 200)
    func = per_call_us(back(traced), lambda r: None, 200)
    comp = per_call_us(back(compiled), lambda r: None, 200)
    name = f"lstm_{batch}x{units}"
    print(
        f"LSTM cell {batch}x{units} (per call, copying h back): eager {eager:.1f} us, function {func:.1f} us, "
        f"compiled {comp:.1f} us; eager/function {eager / func:.1f}x (target >= 5), "
        f"eager/compiled {eager / comp:.1f}x{vs_jax(comp, jx, name)}"
        + (" (target jax/jitflow >= 4)" if name in jx else "")
    )


def mlp_step(jf, w1, w2):
    """The MLP training step on variables w1, w2: relu(x @ w1) @ w2, sparse softmax
    cross-entropy, both gradients, SGD at 0.1; returns the loss."""

    def step(x, y):
        with jf.GradientTape() as tape:
            logits = jf.nn.relu(x @ w1) @ w2
            loss = jf.reduce_mean(jf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
        g1, g2 = tape.gradient(loss, [w1, w2])
        w1.assign_sub(0.1 * g1)
        w2.assign_sub(0.1 * g2)
        return loss

    return step


def bench_mlp(jf, d, jx):
    batch, features, hidden, classes = d["mlp_sizes"]
    results = {}
    for mode in ("function", "compiled"):
        with jf.device("/GPU:0"):
            w1 = jf.Variable(d["mlp_w1"])
            w2 = jf.Variable(d["mlp_w2"])
            x = jf.constant(d["mlp_x"])
            y = jf.constant(d["mlp_y"])
        f = jf.function(mlp_step(jf, w1, w2), jit_compile=mode == "compiled")
        results[mode] = per_call_us(lambda f=f, x=x, y=y: f(x, y), lambda loss: float(loss.numpy()), 50)
    print(
        f"MLP training step {batch}x{features} -> {hidden} -> {classes} (relu, sparse softmax cross-entropy, "
        f"SGD; per step): function {results['function']:.1f} us, compiled {results['compiled']:.1f} us"
        f"{vs_jax(results['compiled'], jx, 'mlp')}" + (" (target >= 1.0)" if "mlp" in jx else "")
    )


def bench_rows(jf, d, jx, sync):
    rows, width = d["rows_x"].shape
    with jf.device("/GPU:0"):
        x, g, b = (jf.constant(d[k]) for k in ("rows_x", "rows_g", "rows_b"))

    @jf.function(jit_compile=True)
    def softmax(x):
        return jf.nn.softmax(x, axis=-1)

    @jf.function(jit_compile=True)
    def layer_norm(x, g, b):
        mu = jf.reduce_mean(x, axis=-1, keepdims=True)
        dx = x - mu
        return dx * jf.math.rsqrt(jf.reduce_mean(dx * dx, axis=-1, keepdims=True) + EPS) * g + b

    moved = 2 * d["rows_x"].nbytes
    copy_us = jf._C.gpu_time_copy(0, d["rows_x"].nbytes, 20) * 1e6
    for name, call in (("softmax", lambda: softmax(x)), ("layer_norm", lambda: layer_norm(x, g, b))):
        us = per_call_us(call, sync, 50)
        print(
            f"{name} rows {rows}x{width} float32, compiled: {us:.1f} us = {moved / us / 1e3:.1f} GB/s "
            f"(copy/{name} {copy_us / us:.2f}){vs_jax(us, jx, name)}"
            + (" (target >= 1.0)" if name in jx else "")
        )


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jax-python", default=None, help="an interpreter whose jax has a GPU backend")
    ap.add_argument("--small", action="store_true", help="tiny sizes: a smoke run, not a measurement")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    sz = sizes(args.small)
    if args.child:
        print(json.dumps(jax_times(sz)))
        return 0
    import jitflow as jf

    status = jf._C.cuda_status()
    if not status["available"]:
        print(
            f"no GPU: {status['error']} -- nothing to measure here. PTX generation and the GPU "
            "runtime's host side are tested by tests/python/gpu/test_gpu_codegen.py and "
            "tests/python/gpu/test_fake_gpu.py; tools/gpu_check.sh carries a build to a GPU machine"
        )
        return 0
    jx = jax_results(args, sz)  # first: the child has the GPU to itself
    names = [jf._C.cuda_device_name(i) for i in range(status["device_count"])]
    print(f"GPUs: {names}; driver {status['driver_version']}; jitflow {jf.__version__}")
    if jx.get("backend") == "gpu":
        print(f"jax.jit on {jx['device']}")
    else:
        print(f"jax.jit: not measured ({jx.get('backend', 'no JAX with a GPU backend')})")
    d = host_inputs(sz)
    d["mlp_sizes"] = sz["mlp"]
    sync = lambda r: jf._C.gpu_synchronize(0)
    bench_chain(jf, d, jx, sync)
    for batch, units in sz["lstm"]:
        bench_lstm(jf, d, jx, batch, units)
    bench_mlp(jf, d, jx)
    bench_rows(jf, d, jx, sync)
    return 0


if __name__ == "__main__":
    sys.exit(main())
