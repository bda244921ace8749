"""Shared by the jf.keras layer tests: a layer's output and its trainable weights' gradients
against a float64 numpy reference of the layer (gradients by central differences)."""
import numpy as np
from conftest import numeric_grad

import jitflow as jf


def check_layer(layer, inputs, ref, rng, call=None, rtol=1e-6, grad_atol=1e-6):
    """The layer's output (float64) against ref(*inputs, *weights) and the gradients of
    sum(output * r) for every trainable weight against central differences of the reference."""
    call = call or (lambda *a: layer(*a))
    out = call(*[jf.constant(a) for a in inputs])  # builds the layer
    weights = [w.numpy() for w in layer.trainable_weights]
    want = ref(*inputs, *weights)
    np.testing.assert_allclose(out.numpy(), want, rtol=rtol, atol=1e-9)
    r = rng.normal(size=want.shape)
    with jf.GradientTape() as tape:
        loss = jf.reduce_sum(call(*[jf.constant(a) for a in inputs]) * r)
    grads = tape.gradient(loss, layer.trainable_weights)
    num = numeric_grad(lambda *ws: np.sum(ref(*inputs, *ws) * r), weights)
    for w, g, ng in zip(layer.trainable_weights, grads, num):
        np.testing.assert_allclose(jf.convert_to_tensor(g).numpy(), ng, rtol=1e-5, atol=grad_atol, err_msg=w.path)


def _sigmoid(z):
    return 1 / (1 + np.exp(-z))


def lstm_ref(x, h, c, k, rk, b):
    z = x @ k + h @ rk + b
    i, f, g, o = np.split(z, 4, axis=-1)
    c = _sigmoid(f) * c + _sigmoid(i) * np.tanh(g)
    return _sigmoid(o) * np.tanh(c), c


def gru_ref(x, h, k, rk, b):
    u = h.shape[-1]
    xz, xr, xh = np.split(x @ k + b[0], 3, -1)
    rz, rr, rh = np.split(h @ rk + b[1], 3, -1)
    z, r = _sigmoid(xz + rz), _sigmoid(xr + rr)
    hh = np.tanh(xh + r * rh)
    assert hh.shape[-1] == u
    return z * h + (1 - z) * hh
