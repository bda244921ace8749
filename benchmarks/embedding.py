"""Embedding benchmark (issue "TF API breadth I"): an embedding lookup, a masked mean over the
sequence, a dense layer, and one_hot cross-entropy plus argmax accuracy, as a classifier's
evaluation step. Compiled (jit_compile=True) vs traced vs eager vs numpy, and jax.jit and TF's
XLA (tf.function(jit_compile=True)) when installed, all measured in one run."""
import os
import tempfile
import timeit

import numpy as np

import jitflow as jf

VOCAB, DIM, CLASSES = 20000, 64, 10
BATCH, SEQ = 512, 48


def best(fn, number=5, repeat=7):
    fn()
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number


def make_inputs(rng):
    table = rng.standard_normal((VOCAB, DIM)).astype(np.float32) * 0.1
    w = rng.standard_normal((DIM, CLASSES)).astype(np.float32) * 0.1
    ids = rng.integers(0, VOCAB, size=(BATCH, SEQ)).astype(np.int32)
    lengths = rng.integers(1, SEQ + 1, size=(BATCH,)).astype(np.int32)
    labels = rng.integers(0, CLASSES, size=(BATCH,)).astype(np.int32)
    return table, w, ids, lengths, labels


def step(tf, table, w, ids, lengths, labels):
    """Written against the TF API: `tf` is jitflow or tensorflow."""
    emb = tf.gather(table, ids)                                        # [B, S, D]
    mask = tf.cast(tf.sequence_mask(lengths, SEQ), tf.float32)         # [B, S]
    pooled = tf.reduce_sum(emb * mask[:, :, None], axis=1) / tf.reduce_sum(mask, axis=1, keepdims=True)
    logits = tf.matmul(pooled, w)
    loss = -tf.reduce_mean(tf.reduce_sum(tf.one_hot(labels, CLASSES) * tf.nn.log_softmax(logits), axis=1))
    acc = tf.reduce_mean(tf.cast(tf.equal(tf.cast(tf.argmax(logits, axis=1), tf.int32), labels), tf.float32))
    return loss, acc


def step_numpy(table, w, ids, lengths, labels):
    emb = table[ids]
    mask = (np.arange(SEQ)[None, :] < lengths[:, None]).astype(np.float32)
    pooled = (emb * mask[:, :, None]).sum(1) / mask.sum(1, keepdims=True)
    logits = pooled @ w
    z = logits - logits.max(1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(1, keepdims=True))
    loss = -(np.eye(CLASSES, dtype=np.float32)[labels] * logp).sum(1).mean()
    acc = (logits.argmax(1) == labels).astype(np.float32).mean()
    return loss, acc


def main():
    os.environ.setdefault("JITFLOW_CACHE_DIR", tempfile.mkdtemp(prefix="jf-bench-cache-"))
    rng = np.random.default_rng(0)
    args = make_inputs(rng)
    targs = [jf.constant(a) for a in args]
    want = step_numpy(*args)
    compiled = jf.function(lambda *a: step(jf, *a), jit_compile=True)
    traced = jf.function(lambda *a: step(jf, *a))
    for name, f in [("compiled", compiled), ("traced", traced), ("eager", lambda *a: step(jf, *a))]:
        loss, acc = f(*targs)
        assert abs(float(loss) - want[0]) < 1e-4 and abs(float(acc) - want[1]) < 1e-6, (name, loss, acc, want)
    before = jf.debugging.stats()["cluster_runs"]
    compiled(*targs)
    assert jf.debugging.stats()["cluster_runs"] > before, "the compiled step ran no compiled code"
    times = {
        "jitflow compiled": best(lambda: compiled(*targs)),
        "jitflow traced": best(lambda: traced(*targs)),
        "jitflow eager": best(lambda: step(jf, *targs)),
        "numpy": best(lambda: step_numpy(*args)),
    }
    try:
        import jax
        import jax.numpy as jnp
        jargs = [jnp.asarray(a) for a in args]

        def jstep(table, w, ids, lengths, labels):
            emb = table[ids]
            mask = (jnp.arange(SEQ)[None, :] < lengths[:, None]).astype(jnp.float32)
            pooled = (emb * mask[:, :, None]).sum(1) / mask.sum(1, keepdims=True)
            logits = pooled @ w
            logp = jax.nn.log_softmax(logits)
            loss = -(jax.nn.one_hot(labels, CLASSES) * logp).sum(1).mean()
            return loss, (logits.argmax(1) == labels).astype(jnp.float32).mean()
        jf_ = jax.jit(jstep)
        times["jax.jit"] = best(lambda: jax.block_until_ready(jf_(*jargs)))
    except ImportError:
        print("jax not installed: no jax.jit figure")
    try:
        import tensorflow as tf
        xla = tf.function(lambda *a: step(tf, *a), jit_compile=True)
        targs_tf = [tf.constant(a) for a in args]
        times["TF XLA"] = best(lambda: [t.numpy() for t in xla(*targs_tf)])
    except ImportError:
        print("tensorflow not installed: no TF XLA figure")
    base = times["jitflow compiled"]
    print(f"embedding step: batch {BATCH}, seq {SEQ}, vocab {VOCAB}x{DIM}, {CLASSES} classes, "
          f"threads {jf.config.threading.get_intra_op_parallelism_threads()}")
    for name, t in times.items():
        print(f"  {name:<18}{t * 1e3:>9.3f} ms   {t / base:>6.2f}x the compiled time")


if __name__ == "__main__":
    main()
