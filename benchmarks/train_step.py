"""One MLP training step (forward, softmax cross-entropy, backward, Adam) four ways, all
measured in this one run (the machines are noisy: compare the ratios, not the absolute
numbers):

  eager      jf.GradientTape + jf.optimizers.Adam, op by op
  function   the same step as a jf.function (traced once, run from C++)
  compiled   the same jf.function with the whole step in a jit_scope (LLVM-compiled)
  jax.jit    the same math in JAX (pure function of params and Adam state), when installed

Timings are interleaved repeat by repeat and the minimum per step is kept; each timed block
starts after a short pause, so one runtime's worker threads still spinning after its block
(XLA's pool does) do not steal the cores from the next. The last columns are speed ratios:
> 1 means faster than eager / than JAX.

    python benchmarks/train_step.py [--quick]
"""
import argparse
import time
import timeit

import numpy as np

import jitflow as jf

try:
    import jax
    import jax.numpy as jnp
except ImportError:  # optional peer: pip install jax
    jax = None

LR, B1, B2, EPS = 1e-3, 0.9, 0.999, 1e-7


def init_params(sizes, seed):
    rng = np.random.default_rng(seed)
    params = []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
        limit = np.sqrt(6.0 / (fan_in + fan_out))
        params.append(rng.uniform(-limit, limit, (fan_in, fan_out)).astype(np.float32))
        params.append(np.zeros(fan_out, np.float32))
    return params


def data(batch, sizes, seed):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(batch, sizes[0])).astype(np.float32)
    y = np.eye(sizes[-1], dtype=np.float32)[rng.integers(0, sizes[-1], batch)]
    return x, y


# ---- jitflow ----------------------------------------------------------------------------
def jitflow_step(params0, x, y, mode):
    """One mode's step, with its own variables and optimizer."""
    variables = [jf.Variable(p) for p in params0]
    opt = jf.optimizers.Adam(LR, B1, B2, EPS)
    opt.build(variables)

    def step(x, y):
        with jf.GradientTape() as tape:
            h = x
            for i in range(0, len(variables) - 2, 2):
                h = jf.nn.relu(jf.matmul(h, variables[i]) + variables[i + 1])
            logits = jf.matmul(h, variables[-2]) + variables[-1]
            loss = -jf.reduce_mean(jf.reduce_sum(y * jf.nn.log_softmax(logits), axis=1))
        grads = tape.gradient(loss, variables)
        opt.apply_gradients(zip(grads, variables))
        return loss

    def compiled(x, y):
        with jf.jit_scope():
            return step(x, y)

    xt, yt = jf.constant(x), jf.constant(y)
    f = {"eager": step, "function": jf.function(step), "compiled": jf.function(compiled)}[mode]
    return lambda: f(xt, yt).numpy()


def all_steps(params0, x, y):
    fns = {m: jitflow_step(params0, x, y, m) for m in ("eager", "function", "compiled")}
    if jax is not None:
        fns["jax.jit"] = jax_step(params0, x, y)
    return fns


# ---- JAX --------------------------------------------------------------------------------
def jax_adam(loss_fn, params0, x, y):
    """A jax.jit step of Keras's Adam on loss_fn(params, x, y), params as a list; returns a
    callable running one step and giving the loss (benchmarks/models.py uses it too)."""
    @jax.jit
    def update(params, m, v, t, x, y):
        loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
        t = t + 1.0
        alpha = LR * jnp.sqrt(1 - B2**t) / (1 - B1**t)
        m = [mi + (g - mi) * (1 - B1) for mi, g in zip(m, grads)]
        v = [vi + (g * g - vi) * (1 - B2) for vi, g in zip(v, grads)]
        params = [p - alpha * mi / (jnp.sqrt(vi) + EPS) for p, mi, vi in zip(params, m, v)]
        return loss, params, m, v, t

    state = {"p": [jnp.asarray(p) for p in params0], "m": [jnp.zeros_like(p) for p in params0],
             "v": [jnp.zeros_like(p) for p in params0], "t": jnp.float32(0.0)}
    xj, yj = jnp.asarray(x), jnp.asarray(y)

    def run():
        loss, state["p"], state["m"], state["v"], state["t"] = update(
            state["p"], state["m"], state["v"], state["t"], xj, yj)
        return np.asarray(loss.block_until_ready())
    return run


def jax_step(params0, x, y):
    def loss_fn(params, x, y):
        h = x
        for i in range(0, len(params) - 2, 2):
            h = jax.nn.relu(h @ params[i] + params[i + 1])
        logits = h @ params[-2] + params[-1]
        return -jnp.mean(jnp.sum(y * jax.nn.log_softmax(logits), axis=1))
    return jax_adam(loss_fn, params0, x, y)


# ---- timing -----------------------------------------------------------------------------
def per_step(fns, repeat, target):
    for f in fns.values():  # trace / compile / warm up, then check the first losses agree
        f()
    number = {}
    for k, f in fns.items():
        t = timeit.timeit(f, number=3) / 3
        number[k] = max(3, int(target / max(t, 1e-7)))
    best = {k: float("inf") for k in fns}
    for _ in range(repeat):
        for k, f in fns.items():
            time.sleep(0.05)
            best[k] = min(best[k], timeit.timeit(f, number=number[k]) / number[k])
    return best


def check_same_losses(params0, x, y):
    """Three steps of every implementation from the same start give the same losses."""
    runs = all_steps(params0, x, y)
    losses = {k: [float(f()) for _ in range(3)] for k, f in runs.items()}
    ref = losses["eager"]
    for k, ls in losses.items():
        np.testing.assert_allclose(ls, ref, rtol=2e-4, err_msg=f"{k} diverges from eager")
    return ref


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer repeats (a smoke run)")
    args = ap.parse_args()
    repeat, target = (2, 0.05) if args.quick else (7, 0.25)
    configs = [("tiny   32 x 16-32-32-4", 32, [16, 32, 32, 4]),
               ("small  64 x 64-128-128-10", 64, [64, 128, 128, 10]),
               ("medium 256 x 784-512-512-10", 256, [784, 512, 512, 10])]
    print(f"jitflow {jf.__version__}, {jf._C.num_threads()} threads; "
          + (f"JAX {jax.__version__} ({jax.devices()[0].platform})" if jax is not None else
             "JAX not installed: the jax.jit column is skipped (pip install jax)"))
    cols = ["eager", "function", "compiled"] + (["jax.jit"] if jax is not None else [])
    head = "".join(f"{c:>11}" for c in cols)
    extra = f"{'fn/eager':>10}{'comp/eager':>11}" + (f"{'comp/jax':>10}" if jax is not None else "")
    print(f"\n{'MLP training step (us/step)':<30}{head}{extra}")
    print("-" * (30 + len(head) + len(extra)))
    for name, batch, sizes in configs:
        params0 = init_params(sizes, 0)
        x, y = data(batch, sizes, 1)
        check_same_losses(params0, x, y)
        fns = all_steps(params0, x, y)
        t = per_step(fns, repeat, target)
        row = "".join(f"{t[c] * 1e6:>11.1f}" for c in cols)
        ratios = f"{t['eager'] / t['function']:>9.1f}x{t['eager'] / t['compiled']:>10.1f}x"
        if jax is not None:
            ratios += f"{t['jax.jit'] / t['compiled']:>9.2f}x"
        print(f"{name:<30}{row}{ratios}")
    if jax is None:
        print("\nJAX is not installed: no jax.jit comparison in this run.")
    print("\nRatios: fn/eager and comp/eager = eager time / that time; comp/jax = JAX time / "
          "compiled time (> 1: jitflow's compiled step is faster).")


if __name__ == "__main__":
    main()
