"""A transformer-style feed-forward block trained one step at a time: layer norm, a GELU
feed-forward layer with a residual, a classifier and softmax cross-entropy, then backward and
Adam. One model, written once against the TF API (`tf` is jitflow or tensorflow), measured in
one run:

  eager      op by op
  function   a jf.function (traced once, run from C++)
  compiled   the same function with jit_compile=True (one LLVM-compiled program)
  jax.jit    the same math in JAX, when installed
  TF XLA     the same code under tf.function(jit_compile=True), when tensorflow is installed

Timings are interleaved repeat by repeat and the best is kept; compare the ratios, not the
absolute numbers (the machines are noisy). Before timing, every implementation's first three
losses are checked against each other.

    python benchmarks/models.py [--quick]
"""
import argparse
import os
import tempfile

import numpy as np
import train_step  # the JAX Adam step, the timing loop and the Adam constants
from train_step import B1, B2, EPS, LR

import jitflow as jf

LN_EPS = 1e-5


def init(tokens, dim, hidden, classes, seed):
    rng = np.random.default_rng(seed)

    def glorot(a, b):
        return rng.uniform(-np.sqrt(6 / (a + b)), np.sqrt(6 / (a + b)), (a, b)).astype(np.float32)
    params = [np.ones(dim, np.float32), np.zeros(dim, np.float32),          # layer norm
              glorot(dim, hidden), np.zeros(hidden, np.float32),             # FFN in
              glorot(hidden, dim), np.zeros(dim, np.float32),                # FFN out
              glorot(dim, classes), np.zeros(classes, np.float32)]           # classifier
    x = rng.normal(size=(tokens, dim)).astype(np.float32)
    y = np.eye(classes, dtype=np.float32)[rng.integers(0, classes, tokens)]
    return params, x, y


# ---- the model, for jitflow and TensorFlow ------------------------------------------------
def forward(tf, p, x, y):
    gamma, beta, w1, b1, w2, b2, w3, b3 = p
    mean, var = tf.nn.moments(x, axes=[-1], keepdims=True)
    h = (x - mean) * tf.math.rsqrt(var + LN_EPS) * gamma + beta
    h = x + tf.matmul(tf.nn.gelu(tf.matmul(h, w1) + b1), w2) + b2
    logits = tf.matmul(h, w3) + b3
    return tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits(labels=y, logits=logits))


def tf_api_step(tf, params0):
    """A training step closing over its own variables and Adam slots (written out, so the same
    code runs on both frameworks and the whole update is inside the compiled function)."""
    p = [tf.Variable(v) for v in params0]
    m = [tf.Variable(np.zeros_like(v)) for v in params0]
    v_ = [tf.Variable(np.zeros_like(v)) for v in params0]
    t = tf.Variable(0.0)

    def step(x, y):
        with tf.GradientTape() as tape:
            loss = forward(tf, p, x, y)
        grads = tape.gradient(loss, p)
        # Values first, writes last: every variable is read before it is written, so the
        # whole step is one compiled unit (the writes run after it).
        step_t = t + 1.0
        alpha = LR * tf.sqrt(1.0 - B2 ** step_t) / (1.0 - B1 ** step_t)
        for pi, mi, vi, g in zip(p, m, v_, grads):
            m_new = mi + (g - mi) * (1.0 - B1)
            v_new = vi + (g * g - vi) * (1.0 - B2)
            mi.assign(m_new)
            vi.assign(v_new)
            pi.assign_sub(alpha * m_new / (tf.sqrt(v_new) + EPS))
        t.assign(step_t)
        return loss
    return step


def jitflow_runs(params0, x, y):
    xt, yt = jf.constant(x), jf.constant(y)
    runs = {}
    for mode in ("eager", "function", "compiled"):
        step = tf_api_step(jf, params0)
        f = {"eager": step, "function": jf.function(step),
             "compiled": jf.function(step, jit_compile=True)}[mode]
        runs[mode] = (lambda f=f: f(xt, yt).numpy())
    return runs


def tf_xla_run(params0, x, y):
    try:
        import tensorflow as tf
    except ImportError:
        return None
    f = tf.function(tf_api_step(tf, params0), jit_compile=True)
    xt, yt = tf.constant(x), tf.constant(y)
    return lambda: f(xt, yt).numpy()


# ---- JAX ----------------------------------------------------------------------------------
def jax_run(params0, x, y):
    if train_step.jax is None:
        return None
    jax = train_step.jax

    def loss_fn(p, x, y):
        gamma, beta, w1, b1, w2, b2, w3, b3 = p
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        h = (x - mean) * jax.lax.rsqrt(var + LN_EPS) * gamma + beta
        h = x + jax.nn.gelu(h @ w1 + b1, approximate=False) @ w2 + b2
        logits = h @ w3 + b3
        return -(y * jax.nn.log_softmax(logits)).sum(-1).mean()
    return train_step.jax_adam(loss_fn, params0, x, y)


def all_runs(params0, x, y):
    runs = jitflow_runs(params0, x, y)
    for name, make in (("jax.jit", jax_run), ("TF XLA", tf_xla_run)):
        r = make(params0, x, y)
        if r is not None:
            runs[name] = r
    return runs


# ---- timing -------------------------------------------------------------------------------
def check_same_losses(params0, x, y):
    runs = all_runs(params0, x, y)
    losses = {k: [float(f()) for _ in range(3)] for k, f in runs.items()}
    for k, ls in losses.items():
        np.testing.assert_allclose(ls, losses["eager"], rtol=5e-4, err_msg=f"{k} diverges from eager")
    before = jf.debugging.stats()["cluster_runs"]
    runs["compiled"]()
    assert jf.debugging.stats()["cluster_runs"] > before, "the compiled step ran no compiled code"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer repeats (a smoke run)")
    args = ap.parse_args()
    os.environ.setdefault("JITFLOW_CACHE_DIR", tempfile.mkdtemp(prefix="jf-bench-cache-"))
    repeat, target = (2, 0.05) if args.quick else (7, 0.3)
    configs = [("small   128 tok, 128-512-128, 32 cls", 128, 128, 512, 32),
               ("medium  512 tok, 256-1024-256, 256 cls", 512, 256, 1024, 256)]
    print(f"jitflow {jf.__version__}, {jf._C.num_threads()} threads")
    for name, tokens, dim, hidden, classes in configs:
        params0, x, y = init(tokens, dim, hidden, classes, 0)
        check_same_losses(params0, x, y)
        t = train_step.per_step(all_runs(params0, x, y), repeat, target)
        print(f"\nFFN block training step, {name} (ms/step, and speed relative to compiled)")
        for k, v in t.items():
            print(f"  {k:<10}{v * 1e3:>9.3f} ms   compiled is {v / t['compiled']:>5.2f}x faster")
    print("\n'compiled is Nx faster' = that column's time / the jit_compile=True time (> 1: "
          "jitflow's compiled step is faster).")


if __name__ == "__main__":
    main()
