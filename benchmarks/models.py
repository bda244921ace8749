"""Two models trained one step at a time, each written once against the TF API (`tf` is
jitflow or tensorflow): a transformer-style feed-forward block (layer norm, a GELU feed-forward
layer with a residual, a classifier and softmax cross-entropy) and a small CNN on 32x32x3
images (two conv + bias + relu + 2x2 max-pool stages, a dense classifier, sparse softmax
cross-entropy), then backward and Adam. Each is measured in one run:

  eager      op by op
  function   a jf.function (traced once, run from C++)
  compiled   the same function with jit_compile=True (one LLVM-compiled program)
  jax.jit    the same math in JAX, when installed
  TF XLA     the same code under tf.function(jit_compile=True), when tensorflow is installed
  no conv rw (CNN) compiled with the convolution rewrites off (no oneDNN post-ops or layouts)

Timings are interleaved repeat by repeat and the best is kept; compare the ratios, not the
absolute numbers (the machines are noisy). Before timing, every implementation's first three
losses are checked against each other.

    python benchmarks/models.py [--quick] [--model ffn|cnn]
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


def tf_api_step(tf, params0, fwd=forward):
    """A training step closing over its own variables and Adam slots (written out, so the same
    code runs on both frameworks and the whole update is inside the compiled function)."""
    p = [tf.Variable(v) for v in params0]
    m = [tf.Variable(np.zeros_like(v)) for v in params0]
    v_ = [tf.Variable(np.zeros_like(v)) for v in params0]
    t = tf.Variable(0.0)

    def step(x, y):
        with tf.GradientTape() as tape:
            loss = fwd(tf, p, x, y)
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


def jitflow_runs(params0, x, y, fwd=forward):
    xt, yt = jf.constant(x), jf.constant(y)
    runs = {}
    for mode in ("eager", "function", "compiled"):
        step = tf_api_step(jf, params0, fwd)
        f = {"eager": step, "function": jf.function(step),
             "compiled": jf.function(step, jit_compile=True)}[mode]
        runs[mode] = (lambda f=f: f(xt, yt).numpy())
    return runs


def tf_xla_run(params0, x, y, fwd=forward):
    try:
        import tensorflow as tf
    except ImportError:
        return None
    f = tf.function(tf_api_step(tf, params0, fwd), jit_compile=True)
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


def all_runs(params0, x, y, model="ffn"):
    fwd, jax_make = (forward, jax_run) if model == "ffn" else (cnn_forward, cnn_jax_run)
    runs = jitflow_runs(params0, x, y, fwd)
    if model == "cnn":
        runs["no conv rw"] = unrewritten_run(params0, x, y, fwd)
    for name, make in (("jax.jit", lambda *a: jax_make(*a)), ("TF XLA", lambda *a: tf_xla_run(*a, fwd))):
        r = make(params0, x, y)
        if r is not None:
            runs[name] = r
    return runs


# ---- the CNN ------------------------------------------------------------------------------
def cnn_init(batch, seed, classes=10):
    rng = np.random.default_rng(seed)

    def he(*shape):
        return (rng.normal(size=shape) * np.sqrt(2.0 / np.prod(shape[:-1]))).astype(np.float32)
    params = [he(3, 3, 3, 16), np.zeros(16, np.float32), he(3, 3, 16, 32), np.zeros(32, np.float32),
              he(8 * 8 * 32, classes), np.zeros(classes, np.float32)]
    x = rng.normal(size=(batch, 32, 32, 3)).astype(np.float32)
    y = rng.integers(0, classes, batch).astype(np.int32)
    return params, x, y


def cnn_forward(tf, p, x, y):
    k1, c1, k2, c2, w3, b3 = p
    h = tf.nn.max_pool2d(tf.nn.relu(tf.nn.bias_add(tf.nn.conv2d(x, k1, 1, "SAME"), c1)), 2, 2, "VALID")
    h = tf.nn.max_pool2d(tf.nn.relu(tf.nn.bias_add(tf.nn.conv2d(h, k2, 1, "SAME"), c2)), 2, 2, "VALID")
    logits = tf.matmul(tf.reshape(h, [-1, 8 * 8 * 32]), w3) + b3
    return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))


def unrewritten_run(params0, x, y, fwd):
    """The compiled step traced with jitflow's convolution rewrites off (JITFLOW_CONV_FUSION=0,
    JITFLOW_CONV_BLOCKED=0: no oneDNN post-ops, no blocked layouts), to measure what they gain."""
    f = jf.function(tf_api_step(jf, params0, fwd), jit_compile=True)
    xt, yt = jf.constant(x), jf.constant(y)
    traced = []

    def run():
        if traced:
            return f(xt, yt).numpy()
        off = {"JITFLOW_CONV_FUSION": "0", "JITFLOW_CONV_BLOCKED": "0"}
        saved = {k: os.environ.get(k) for k in off}
        os.environ.update(off)
        try:
            out = f(xt, yt).numpy()
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k)
                else:
                    os.environ[k] = v
        traced.append(True)
        return out
    return run


def cnn_jax_run(params0, x, y):
    if train_step.jax is None:
        return None
    jax = train_step.jax

    def conv(h, k, b):
        h = jax.lax.conv_general_dilated(h, k, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
        return jax.nn.relu(h + b)

    def pool(h):
        return jax.lax.reduce_window(h, -np.inf, jax.lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")

    def loss_fn(p, x, y):
        k1, c1, k2, c2, w3, b3 = p
        h = pool(conv(pool(conv(x, k1, c1)), k2, c2))
        logits = h.reshape(h.shape[0], -1) @ w3 + b3
        return -jax.numpy.take_along_axis(jax.nn.log_softmax(logits), y[:, None], 1).mean()
    return train_step.jax_adam(loss_fn, params0, x, y)


# ---- timing -------------------------------------------------------------------------------
def check_same_losses(params0, x, y, model="ffn"):
    runs = all_runs(params0, x, y, model)
    losses = {k: [float(f()) for _ in range(3)] for k, f in runs.items()}
    for k, ls in losses.items():
        np.testing.assert_allclose(ls, losses["eager"], rtol=5e-4, err_msg=f"{k} diverges from eager")
    before = jf.debugging.stats()["cluster_runs"]
    runs["compiled"]()
    assert jf.debugging.stats()["cluster_runs"] > before, "the compiled step ran no compiled code"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer repeats (a smoke run)")
    ap.add_argument("--model", choices=("all", "ffn", "cnn"), default="all")
    args = ap.parse_args()
    os.environ.setdefault("JITFLOW_CACHE_DIR", tempfile.mkdtemp(prefix="jf-bench-cache-"))
    repeat, target = (2, 0.05) if args.quick else (7, 0.3)
    configs = [("small   128 tok, 128-512-128, 32 cls", 128, 128, 512, 32),
               ("medium  512 tok, 256-1024-256, 256 cls", 512, 256, 1024, 256)]
    print(f"jitflow {jf.__version__}, {jf._C.num_threads()} threads")
    for name, tokens, dim, hidden, classes in configs if args.model in ("all", "ffn") else ():
        params0, x, y = init(tokens, dim, hidden, classes, 0)
        check_same_losses(params0, x, y)
        t = train_step.per_step(all_runs(params0, x, y), repeat, target)
        print(f"\nFFN block training step, {name} (ms/step, and speed relative to compiled)")
        for k, v in t.items():
            print(f"  {k:<10}{v * 1e3:>9.3f} ms   compiled is {v / t['compiled']:>5.2f}x faster")
    for batch in (32, 128) if args.model in ("all", "cnn") else ():
        params0, x, y = cnn_init(batch, 0)
        check_same_losses(params0, x, y, "cnn")
        t = train_step.per_step(all_runs(params0, x, y, "cnn"), repeat, target)
        print(f"\nCNN training step, batch {batch} of 32x32x3 (ms/step, and speed relative to compiled)")
        for k, v in t.items():
            print(f"  {k:<10}{v * 1e3:>9.3f} ms   compiled is {v / t['compiled']:>5.2f}x faster")
    print("\n'compiled is Nx faster' = that column's time / the jit_compile=True time (> 1: "
          "jitflow's compiled step is faster).")


if __name__ == "__main__":
    main()
