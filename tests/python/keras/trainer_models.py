"""Minimal Layer-like models for the Trainer's tests: jf.Modules with the interface Trainer uses
(self(x, training=...), trainable_variables, losses, variables) and save_weights."""
import numpy as np

import jitflow as jf
from jitflow.keras import initializers as I
from jitflow.keras.trainer import Trainer


class MLP(Trainer, jf.Module):
    """relu(x @ w1 + b1) @ w2 + b2; `dropout` adds a random op when training, `l2` a weight penalty."""

    def __init__(self, inputs=2, hidden=16, outputs=3, seed=None, dropout=0.0, l2=0.0):
        jf.Module.__init__(self)
        Trainer.__init__(self)
        s1, s2 = (None, None) if seed is None else (seed, seed + 1)
        self.w1 = jf.Variable(I.GlorotUniform(seed=s1)((inputs, hidden)), name="w1")
        self.b1 = jf.Variable(np.zeros(hidden, np.float32), name="b1")
        self.w2 = jf.Variable(I.GlorotUniform(seed=s2)((hidden, outputs)), name="w2")
        self.b2 = jf.Variable(np.zeros(outputs, np.float32), name="b2")
        self.dropout, self.l2 = dropout, l2
        self.calls = 0

    def __call__(self, x, training=False):
        self.calls += 1  # counts Python calls: eager ones and traces
        h = jf.nn.relu(jf.matmul(x, self.w1) + self.b1)
        if training and self.dropout:
            h = jf.nn.dropout(h, self.dropout)
        return jf.matmul(h, self.w2) + self.b2

    @property
    def losses(self):
        return [self.l2 * jf.reduce_sum(jf.square(self.w1))] if self.l2 else []

    def get_weights(self):
        return [v.numpy().copy() for v in (self.w1, self.b1, self.w2, self.b2)]

    def save_weights(self, path, overwrite=True):
        np.savez(path, *self.get_weights())


def spiral(n=240, seed=0):
    """Three interleaved spiral arms in 2-D: a task an MLP learns and a linear model does not."""
    rng = np.random.default_rng(seed)
    t = rng.uniform(0.3, 1.0, n)
    label = rng.integers(0, 3, n)
    angle = 2.5 * t * np.pi + label * 2 * np.pi / 3
    x = np.stack([t * np.cos(angle), t * np.sin(angle)], 1) + rng.normal(0, 0.03, (n, 2))
    return x.astype(np.float32), label.astype(np.int64)
