"""Compiled softmax and log-softmax over an axis other than the last: TF's graph moves the axis
last, normalises and moves it back, and the compiler reduces over that axis in the data's own
layout instead. Results against float64 numpy at several ranks, axes and shapes (size-1 and
empty dims), with consumers around the op and its gradient; every case asserts compiled code ran."""

import numpy as np
import pytest
from conftest import run_mode

import jitflow as jf

CASES = [
    ((64, 33), 0),
    ((6, 7, 9), 0),
    ((6, 7, 9), 1),
    ((6, 7, 9), -2),
    ((2, 3, 4, 5), 1),
    ((1, 5), 0),
    ((5, 1), 0),
    ((0, 4), 0),
    ((3, 0), 0),
]


def _softmax(x, axis):
    e = np.exp(x - x.max(axis, keepdims=True)) if x.size else x
    return e / e.sum(axis, keepdims=True) if x.size else x


def _log_softmax(x, axis):
    if not x.size:
        return x
    s = x - x.max(axis, keepdims=True)
    return s - np.log(np.exp(s).sum(axis, keepdims=True))


@pytest.mark.parametrize("mode", ["jit_compile", "jit_scope"])
@pytest.mark.parametrize("shape, axis", CASES, ids=str)
@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_softmax_over_a_leading_or_middle_axis_matches_float64(name, shape, axis, mode):
    x = (np.random.default_rng(3).standard_normal(shape) * 4).astype(np.float32)
    op, ref = (jf.nn.softmax, _softmax) if name == "softmax" else (jf.nn.log_softmax, _log_softmax)
    out = run_mode(mode, lambda v: op(v * 0.5, axis=axis) + 1.0, jf.constant(x)).numpy()
    want = ref(x.astype(np.float64) * 0.5, axis) + 1.0
    assert out.shape == want.shape
    np.testing.assert_allclose(out, want, rtol=2e-5, atol=2e-5)


def test_the_transposed_operand_and_the_result_can_both_be_outputs():
    x = np.random.default_rng(4).standard_normal((5, 8)).astype(np.float32)

    def f(v):
        t = jf.transpose(v)
        return t, jf.transpose(jf.nn.softmax(t)) * 2.0

    t, s = run_mode("jit_compile", f, jf.constant(x))
    np.testing.assert_array_equal(t.numpy(), x.T)
    np.testing.assert_allclose(s.numpy(), _softmax(x.astype(np.float64), 0) * 2.0, rtol=2e-5, atol=2e-6)


def test_float64_keeps_its_precision():
    x = np.random.default_rng(5).standard_normal((40, 3, 6)) * 10
    out = run_mode("jit_compile", lambda v: jf.nn.softmax(v, axis=0), jf.constant(x)).numpy()
    np.testing.assert_allclose(out, _softmax(x, 0), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("axis", [0, 1])
def test_the_gradient_over_a_leading_axis_is_softmax_s_jacobian(axis):
    rng = np.random.default_rng(6)
    x = rng.standard_normal((7, 5, 3)).astype(np.float32)
    w = rng.standard_normal((7, 5, 3)).astype(np.float32)

    def f(v, ww):
        with jf.GradientTape() as tape:
            tape.watch(v)
            loss = jf.reduce_sum(jf.nn.softmax(v, axis=axis) * ww)
        return tape.gradient(loss, v)

    got = run_mode("jit_compile", f, jf.constant(x), jf.constant(w)).numpy()
    s = _softmax(x.astype(np.float64), axis)
    want = s * (w - (s * w).sum(axis, keepdims=True))  # the softmax Jacobian applied to w
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
