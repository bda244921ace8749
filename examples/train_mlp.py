"""Trains a small MLP on a noisy two-arm spiral it generates, three ways: eagerly, as a
jf.function, and as a jf.function whose whole step (forward, backward, Adam) sits in a
jit_scope and is compiled. Prints the loss and the time per step of each.

    python examples/train_mlp.py [--steps 300] [--hidden 64]
"""
import argparse
import time

import numpy as np

import jitflow as jf


def spiral(n, rng):
    """Two interleaved spiral arms in 2-D with noise; labels one-hot."""
    t = rng.uniform(0.0, 3.5, n)
    label = rng.integers(0, 2, n)
    r = 0.4 + t
    angle = 1.8 * t + np.pi * label
    x = np.stack([r * np.cos(angle), r * np.sin(angle)], 1) + rng.normal(0.0, 0.08, (n, 2))
    return x.astype(np.float32), np.eye(2, dtype=np.float32)[label], label


class MLP:
    def __init__(self, hidden, seed):
        self.layers = [jf.nn.Dense(hidden, activation="tanh", seed=seed),
                       jf.nn.Dense(hidden, activation="tanh", seed=seed + 1),
                       jf.nn.Dense(2, seed=seed + 2)]

    def __call__(self, x):
        for layer in self.layers:
            x = layer(x)
        return x

    @property
    def variables(self):
        return [v for layer in self.layers for v in layer.trainable_variables]


def make_step(model, opt):
    def step(x, y):
        with jf.GradientTape() as tape:
            logits = model(x)
            loss = -jf.reduce_mean(jf.reduce_sum(y * jf.nn.log_softmax(logits), axis=1))
        grads = tape.gradient(loss, model.variables)
        opt.apply_gradients(zip(grads, model.variables))
        return loss
    return step


def train(mode, x, y, labels, steps, hidden):
    model = MLP(hidden, seed=7)
    model(x[:1])  # build the weights (the same initial values in every mode)
    opt = jf.optimizers.Adam(0.02)
    opt.build(model.variables)
    step = make_step(model, opt)
    if mode == "function":
        step = jf.function(step)
    elif mode == "compiled":
        inner = step

        def compiled(x, y):
            with jf.jit_scope():
                return inner(x, y)
        step = jf.function(compiled)
    xt, yt = jf.constant(x), jf.constant(y)
    t0 = time.perf_counter()
    first = float(step(xt, yt))  # traces and compiles in the jf.function modes
    warmup = time.perf_counter() - t0
    t0 = time.perf_counter()
    for i in range(1, steps):
        loss = step(xt, yt)
        if i % max(1, steps // 5) == 0:
            print(f"  {mode:9s} step {i:4d}  loss {float(loss):.4f}")
    per_step = (time.perf_counter() - t0) / (steps - 1)
    last = float(loss)
    accuracy = float(np.mean(np.argmax(model(xt).numpy(), 1) == labels))
    print(f"{mode:9s} loss {first:.4f} -> {last:.4f}  accuracy {accuracy:.1%}  "
          f"{per_step * 1e6:8.1f} us/step  (first call {warmup * 1e3:.0f} ms)")
    assert last < first, f"{mode}: the loss did not go down"
    if mode == "compiled":
        cf = step.get_concrete_function(xt, yt)
        print(f"          {len(cf.clusters)} compiled cluster(s): "
              f"{sum(len(c.ops) for c in cf.clusters)} ops")
    return per_step


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--n", type=int, default=512)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    x, y, labels = spiral(args.n, rng)
    print(f"spiral: {args.n} points, MLP 2-{args.hidden}-{args.hidden}-2, Adam, {args.steps} steps")
    times = {m: train(m, x, y, labels, args.steps, args.hidden) for m in ("eager", "function", "compiled")}
    print(f"speed-up vs eager: function {times['eager'] / times['function']:.1f}x, "
          f"compiled {times['eager'] / times['compiled']:.1f}x")


if __name__ == "__main__":
    main()
