"""Input pipeline throughput: from_tensor_slices -> map(normalize, one_hot) -> shuffle -> batch
-> prefetch, iterated alone and feeding a small training step (a 784-128-10 MLP, SGD), in
elements per second, with the share of the training loop spent waiting for the next batch;
for jitflow and for tf.data in the same run when TensorFlow can be imported (here or by the
Python named in JITFLOW_TF_PYTHON, default /tmp/tfvenv/bin/python); without it, jitflow's
figures alone.

    python benchmarks/data.py [--elements N] [--parallel] [--tf-python PATH]

The pipeline jitflow runs here (tensor slices, traced maps, shuffle, batch, prefetch) is made
in C++ a batch at a time (python/jitflow/data/fast.py); "wait %" is the share of the training
loop's time spent in next() on the iterator.
"""
import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

N_FEATURES, N_CLASSES, HIDDEN, BATCH, SHUFFLE = 784, 10, 128, 128, 1024


def _data(n):
    rng = np.random.default_rng(0)
    x = rng.integers(0, 256, size=(n, N_FEATURES)).astype(np.float32)
    y = rng.integers(0, N_CLASSES, size=n).astype(np.int32)
    return x, y


def _measure(lib, n, parallel, repeats=3):
    """elements/s of the pipeline alone and feeding the training step, for lib (jitflow or tf)."""
    x, y = _data(n)
    calls = lib.data.AUTOTUNE if parallel else None

    def normalize(image, label):
        return image / 255.0, lib.one_hot(label, N_CLASSES)

    def pipeline():
        return (lib.data.Dataset.from_tensor_slices((x, y)).map(normalize, num_parallel_calls=calls)
                .shuffle(SHUFFLE, seed=1).batch(BATCH).prefetch(lib.data.AUTOTUNE))

    rng = np.random.default_rng(1)
    w1 = lib.Variable(rng.normal(0, 0.05, (N_FEATURES, HIDDEN)).astype(np.float32))
    w2 = lib.Variable(rng.normal(0, 0.05, (HIDDEN, N_CLASSES)).astype(np.float32))

    @lib.function
    def step(images, labels):
        with lib.GradientTape() as tape:
            h = lib.nn.relu(lib.matmul(images, w1))
            logits = lib.matmul(h, w2)
            loss = lib.reduce_mean(lib.nn.softmax_cross_entropy_with_logits(labels, logits))
        g1, g2 = tape.gradient(loss, [w1, w2])
        w1.assign_sub(0.01 * g1)
        w2.assign_sub(0.01 * g2)
        return loss

    for images, labels in pipeline().take(2):  # warm up: traces, compiles
        step(images, labels)
    results = {}
    for name, train in (("pipeline", False), ("training", True)):
        best, best_wait = 0.0, 1.0
        for _ in range(repeats):
            t, count, waited = time.perf_counter(), 0, 0.0
            loss = None
            it = iter(pipeline())
            while True:
                w = time.perf_counter()
                try:
                    images, labels = next(it)
                except StopIteration:
                    break
                waited += time.perf_counter() - w
                count += int(images.shape[0])
                if train:
                    loss = step(images, labels)
            if loss is not None:
                float(loss)
            total = time.perf_counter() - t
            best = max(best, count / total)
            best_wait = min(best_wait, waited / total)
        results[name] = best
        if train:
            results["wait %"] = 100.0 * best_wait  # share of the training loop spent waiting for input
    # The step alone on one batch, repeated: what the input has to keep up with.
    images, labels = next(iter(pipeline()))
    t = time.perf_counter()
    reps = max(1, n // BATCH)
    for _ in range(reps):
        loss = step(images, labels)
    float(loss)
    results["step only"] = reps * BATCH / (time.perf_counter() - t)
    return results


def _tf_figures(n, parallel, python=None, repeats=3):
    """tf.data's figures: measured here if TensorFlow imports, else by the TF Python in a child."""
    try:
        import tensorflow as tf
        return _measure(tf, n, parallel, repeats)
    except ImportError:
        pass
    python = python or os.environ.get("JITFLOW_TF_PYTHON", "/tmp/tfvenv/bin/python")
    if not os.path.exists(python):
        return None
    args = [python, os.path.abspath(__file__), "--tf-only", "--elements", str(n), "--repeats", str(repeats)] + (["--parallel"] if parallel else [])
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    out = subprocess.run(args, capture_output=True, text=True, env=env, check=False)
    if out.returncode != 0:
        print(f"tf.data run failed:\n{out.stderr[-2000:]}", file=sys.stderr)
        return None
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--elements", type=int, default=20000)
    p.add_argument("--parallel", action="store_true", help="map with num_parallel_calls=AUTOTUNE")
    p.add_argument("--tf-python", default=None, help="the Python that runs tf.data (default: $JITFLOW_TF_PYTHON "
                   "or /tmp/tfvenv/bin/python)")
    p.add_argument("--repeats", type=int, default=3, help="passes per figure; the best is reported")
    p.add_argument("--tf-only", action="store_true", help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.tf_only:
        import tensorflow as tf
        print(json.dumps(_measure(tf, a.elements, a.parallel, a.repeats)))
        return
    import jitflow as jf
    from jitflow.data import fast
    fast.enabled = False  # the element-at-a-time nodes: the figures before the C++ batches
    before = _measure(jf, a.elements, a.parallel, a.repeats)
    fast.enabled = True
    ours = _measure(jf, a.elements, a.parallel, a.repeats)
    theirs = _tf_figures(a.elements, a.parallel, a.tf_python, a.repeats)
    print(f"{a.elements} elements of {N_FEATURES} floats, batch {BATCH}, shuffle {SHUFFLE}, "
          f"map {'parallel (AUTOTUNE)' if a.parallel else 'sequential'}; elements/s (best of {a.repeats}); "
          f"load average {os.getloadavg()[0]:.2f}")
    print(f"{'':<12}{'jf element':>12}{'jitflow':>12}" + (f"{'tf.data':>12}{'ratio':>8}" if theirs else ""))
    for k, v in ours.items():
        fmt = "{:>12.1f}" if k == "wait %" else "{:>12.0f}"
        line = f"{k:<12}" + fmt.format(before[k]) + fmt.format(v)
        if theirs:
            line += fmt.format(theirs[k])
            if k != "wait %":
                line += f"{v / theirs[k]:>8.2f}"
        print(line)
    print("(jf element: each element through the Python nodes, as before the C++ batch path; "
          "ratio: jitflow / tf.data)")
    if theirs is None:
        print("(TensorFlow not found: jitflow's figures alone)")

if __name__ == "__main__":
    main()
