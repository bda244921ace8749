"""model.fit throughput: the same Keras models (an MLP and a small CNN) trained with fit for a
fixed number of steps by jf.keras and, when they can be run, by tf.keras (TensorFlow backend,
jit_compile=True) and Keras on the JAX backend, all from this one run; steps per second and
the ratios jitflow / peer (> 1: jitflow is faster).

Each framework runs in its own process (the peers' thread pools do not share the cores with
jitflow's): this script is started again with --worker, the frameworks taking turns for
--rounds rounds (the machines are noisy: a turn each, the best kept). A peer runs when its interpreter can
import it: this one, or the one named by --tf-python / --jax-python (or the environment's
JITFLOW_BENCH_TF_PYTHON / JITFLOW_BENCH_JAX_PYTHON). Without TensorFlow or JAX it reports
jitflow alone.

    python benchmarks/keras_fit.py [--quick] [--tf-python /path/to/python]
"""
import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

MODELS = {
    # name: (input shape, classes, batch size, steps)
    "mlp": ((64,), 10, 128, 200),
    "cnn": ((28, 28, 1), 10, 64, 60),
}


def build(keras, name):
    shape, classes, _, _ = MODELS[name]
    layers = keras.layers
    if name == "mlp":
        body = [layers.Dense(256, activation="relu"), layers.Dense(256, activation="relu"), layers.Dense(classes)]
    else:
        body = [layers.Conv2D(16, 3, activation="relu"), layers.MaxPooling2D(2), layers.Conv2D(32, 3, activation="relu"),
                layers.MaxPooling2D(2), layers.Flatten(), layers.Dense(classes)]
    model = keras.Sequential([keras.Input(shape)] + body)
    model.compile(optimizer=keras.optimizers.Adam(1e-3),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"], jit_compile=True)
    return model


def data(name, steps):
    shape, classes, batch, _ = MODELS[name]
    rng = np.random.default_rng(0)
    n = batch * steps
    return rng.normal(size=(n,) + shape).astype(np.float32), rng.integers(0, classes, n).astype(np.int32)


def measure(keras, name, steps, repeats):
    """Best steps/s over `repeats` fits of `steps` steps, after a warm-up fit that traces and compiles."""
    model = build(keras, name)
    batch = MODELS[name][2]
    x, y = data(name, steps)
    model.fit(x[: 2 * batch], y[: 2 * batch], batch_size=batch, epochs=1, verbose=0, shuffle=False)
    best = 0.0
    for _ in range(repeats):
        start = time.perf_counter()
        model.fit(x, y, batch_size=batch, epochs=1, verbose=0, shuffle=False)
        best = max(best, steps / (time.perf_counter() - start))
    return best


def worker(framework, names, quick, repeats):
    if framework == "jitflow":
        import jitflow as jf
        keras = jf.keras
    else:
        os.environ["KERAS_BACKEND"] = "tensorflow" if framework == "tf" else "jax"
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
        if framework == "tf":
            import tensorflow as tf
            keras = tf.keras
        else:
            import keras
    out = {}
    for name in names:
        steps = MODELS[name][3] // (4 if quick else 1)
        out[name] = measure(keras, name, steps, repeats)
    print(json.dumps(out))


def run_worker(python, framework, names, quick):
    """steps/s per model from a worker process, or the reason it could not run."""
    cmd = [python, os.path.abspath(__file__), "--worker", framework, "--models", ",".join(names), "--repeats", "2"]
    if quick:
        cmd.append("--quick")
    env = dict(os.environ)
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1800, check=False)
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, str(e)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["failed"])[-1]
        return None, last
    return json.loads(done.stdout.strip().splitlines()[-1]), None


def can_import(python, module):
    if python is None:
        return False
    check = subprocess.run([python, "-c", f"import {module}"], capture_output=True, timeout=300, check=False)
    return check.returncode == 0


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="a quarter of the steps, fewer repeats")
    p.add_argument("--models", default="mlp,cnn")
    p.add_argument("--tf-python", default=os.environ.get("JITFLOW_BENCH_TF_PYTHON"))
    p.add_argument("--jax-python", default=os.environ.get("JITFLOW_BENCH_JAX_PYTHON"))
    p.add_argument("--rounds", type=int, default=3, help="turns each framework takes (best kept)")
    p.add_argument("--repeats", type=int, default=2, help=argparse.SUPPRESS)
    p.add_argument("--worker", choices=["jitflow", "tf", "jax"], help=argparse.SUPPRESS)
    args = p.parse_args()
    names = [n for n in args.models.split(",") if n]
    if args.worker:
        worker(args.worker, names, args.quick, args.repeats)
        return
    runners = {"jitflow": sys.executable}
    labels = {"jitflow": "jitflow"}
    peers = {"tf": ("tf.keras (TF, jit_compile=True)", args.tf_python or sys.executable, "tensorflow"),
             "jax": ("keras (JAX backend)", args.jax_python or sys.executable, "jax")}
    notes = {}
    for framework, (label, python, module) in peers.items():
        if can_import(python, module):
            runners[framework], labels[framework] = python, label
        else:
            notes[label] = f"not run: {module} is not importable by {python}"
    results = {}
    rounds = 1 if args.quick else args.rounds
    for _ in range(rounds):
        for framework, python in list(runners.items()):
            got, error = run_worker(python, framework, names, args.quick)
            if got is None:
                if framework == "jitflow":
                    sys.exit(f"jitflow worker failed: {error}")
                notes[labels[framework]] = f"failed: {error}"
                del runners[framework]
                results.pop(labels[framework], None)
                continue
            best = results.setdefault(labels[framework], {})
            for n in names:
                best[n] = max(best.get(n, 0.0), got[n])
    print(f"model.fit, steps/s (best of {rounds} rounds x 2 fits; batch sizes {[MODELS[n][2] for n in names]})")
    header = f"{'':34}" + "".join(f"{n:>12}" for n in names)
    print(header)
    for label, row in results.items():
        print(f"{label:34}" + "".join(f"{row[n]:12.1f}" for n in names))
    for label, row in results.items():
        if label != "jitflow":
            print(f"{'jitflow / ' + label.split(' ')[0]:34}" +
                  "".join(f"{results['jitflow'][n] / row[n]:11.2f}x" for n in names))
    for label, note in notes.items():
        print(f"{label}: {note}")


if __name__ == "__main__":
    main()
