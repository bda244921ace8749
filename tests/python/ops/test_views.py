"""Shape-only eager ops return views sharing their input's buffer (reshape, expand_dims,
squeeze, a transpose that moves only size-1 dims, a contiguous slice), and nothing that
writes later reaches into a view: variable assignments, a function's recycled buffers, a
TensorArray's in-place writes. Values against numpy; sharing seen through .numpy()'s data
pointer (a read-only view of the tensor's memory)."""
import numpy as np
import pytest

import jitflow as jf


def _addr(t):
    return t.numpy().__array_interface__["data"][0]


def _base(rng):
    x = rng.standard_normal((4, 1, 6)).astype(np.float32)
    return x, jf.constant(x)


@pytest.mark.parametrize("case", ["reshape", "expand_dims", "squeeze", "transpose_unit", "rows", "row",
                                  "inner_run"])
def test_shape_only_ops_share_the_buffer(case, rng):
    x, t = _base(rng)
    ops = {
        "reshape": (lambda a: jf.reshape(a, [24]), lambda a: a.reshape(24), 0),
        "expand_dims": (lambda a: jf.expand_dims(a, 0), lambda a: a[None], 0),
        "squeeze": (lambda a: jf.squeeze(a, 1), lambda a: a[:, 0], 0),
        "transpose_unit": (lambda a: jf.transpose(a, [1, 0, 2]), lambda a: a.transpose(1, 0, 2), 0),
        "rows": (lambda a: a[1:3], lambda a: a[1:3], 6),
        "row": (lambda a: a[2], lambda a: a[2], 12),
        "inner_run": (lambda a: a[3, :, 2:5], lambda a: a[3, :, 2:5], 18 + 2),
    }
    op, ref, offset = ops[case]
    out = op(t)
    np.testing.assert_array_equal(out.numpy(), ref(x))
    assert _addr(out) == _addr(t) + 4 * offset, "the result copies instead of viewing its input"


@pytest.mark.parametrize("case", ["strided", "partial_inner", "transpose", "reverse"])
def test_other_slices_and_transposes_copy_correctly(case, rng):
    x, t = _base(rng)
    ops = {
        "strided": (lambda a: a[::2], lambda a: a[::2]),
        "partial_inner": (lambda a: a[1:3, :, 1:4], lambda a: a[1:3, :, 1:4]),
        "transpose": (lambda a: jf.transpose(a), lambda a: a.T),
        "reverse": (lambda a: a[::-1], lambda a: a[::-1]),
    }
    op, ref = ops[case]
    out = op(t)
    np.testing.assert_array_equal(out.numpy(), np.ascontiguousarray(ref(x)))
    base = _addr(t)
    assert not base <= _addr(out) < base + x.nbytes


def test_a_view_of_a_variable_read_keeps_its_values_after_assignments(rng):
    x = rng.standard_normal((4, 3)).astype(np.float32)
    v = jf.Variable(x)
    row, flat = v.read_value()[1:3], jf.reshape(v, [12])
    v.assign(np.zeros_like(x))
    v.assign_add(np.ones_like(x))
    np.testing.assert_array_equal(row.numpy(), x[1:3])
    np.testing.assert_array_equal(flat.numpy(), x.reshape(12))
    assert float(v.numpy()[0, 0]) == 1.0


@pytest.mark.parametrize("jit", [False, True])
def test_views_returned_by_a_function_survive_its_next_calls(jit, rng):
    # The executor and the cluster runner keep a buffer per value for the next run; a view
    # handed out holds that buffer too, so the next run must not write into it.
    def f(a):
        y = a * 2.0 + 1.0
        return y[1:3], jf.reshape(y, [-1]), jf.transpose(jf.expand_dims(y, 0), [1, 0, 2])

    g = jf.function(f, jit_compile=jit)
    a1, a2 = (rng.standard_normal((4, 5)).astype(np.float32) for _ in range(2))
    first = [r.numpy().copy() for r in g(jf.constant(a1))]
    kept = g(jf.constant(a1))
    for _ in range(3):
        g(jf.constant(a2))
    ref = a1 * 2.0 + 1.0
    for got, want in zip(kept, [ref[1:3], ref.reshape(-1), ref[:, None, :]]):
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-6)
    for got, want in zip(first, [ref[1:3], ref.reshape(-1), ref[:, None, :]]):
        np.testing.assert_allclose(got, want, rtol=1e-6)


def test_a_tensor_array_does_not_write_into_a_view_of_what_it_was_given(rng):
    x = rng.standard_normal((3, 4)).astype(np.float32)
    t = jf.constant(x)
    view = t[0:2]
    ta = jf.TensorArray(jf.float32, size=3).unstack(t)
    ta = ta.write(0, jf.zeros([4]))
    ta = ta.write(1, jf.ones([4]))
    np.testing.assert_array_equal(ta.stack().numpy()[:2], [[0] * 4, [1] * 4])
    np.testing.assert_array_equal(view.numpy(), x[0:2])
    np.testing.assert_array_equal(t.numpy(), x)
