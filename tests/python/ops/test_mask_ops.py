"""Ops with data-dependent output shapes beyond their differential rows (op_rows.py):
boolean_mask (axis, K-D masks, unknown dims, its gather-scatter gradient), one-argument where,
unique and unique_with_counts (out_idx, NaN and signed zeros), a bool key in Tensor.__getitem__,
TF's errors, and jit_compile=True naming the op (TF 2.21's behaviour is the reference). And the
rest of Tensor.__getitem__ beyond test_eager_ops.py: bounds, steps and indices computed in the
graph (and their gradients), keys TF refuses, and indices and bounds past int32 and int64. Keys
that crashed the interpreter are tried in a child process (conftest.run_in_child)."""
import numpy as np
import pytest
from conftest import assert_raised, numeric_grad, run_in_child

import jitflow as jf


def _modes(fn, signature=None):
    """Eager, traced, and traced with unknown dims (the masked dim is unknown anyway)."""
    modes = {"eager": fn, "function": jf.function(fn)}
    if signature is not None:
        modes["none_signature"] = jf.function(fn, input_signature=signature)
    return modes


def _np_mask(x, m, axis):
    lead = x.shape[:axis]
    flat = x.reshape(lead + (int(np.prod(m.shape)),) + x.shape[axis + m.ndim:])
    return np.take(flat, np.flatnonzero(m.reshape(-1)), axis=axis)


@pytest.mark.parametrize("xshape,mshape,axis", [
    ((5,), (5,), None), ((4, 3), (4,), 0), ((4, 3), (4, 3), None), ((2, 3, 4), (3,), 1),
    ((2, 3, 4), (3, 4), 1), ((2, 3, 4), (2, 3, 4), 0), ((3, 4), (4,), 1), ((3, 4), (3,), -2), ((0, 3), (0,), 0),
    ((3, 0), (3,), 0), ((2, 3), (2, 3), None),
])
@pytest.mark.parametrize("dtype", ["float32", "int64", "bool"])
def test_boolean_mask_against_numpy(xshape, mshape, axis, dtype, rng):
    x = (rng.standard_normal(xshape) * 3).astype(dtype)
    m = rng.random(mshape) < 0.5
    want = _np_mask(x, m, (axis or 0) % len(xshape))
    sig = [jf.TensorSpec([None] * len(xshape), getattr(jf, dtype)), jf.TensorSpec([None] * len(mshape), jf.bool)]
    for mode, f in _modes(lambda a, b: jf.boolean_mask(a, b, axis=axis), sig).items():
        got = f(jf.constant(x), jf.constant(m))
        assert got.dtype == getattr(jf, dtype), mode
        np.testing.assert_array_equal(got.numpy(), want, err_msg=mode)


def test_boolean_mask_examples_from_tf_docs():
    t = [[1, 2], [3, 4], [5, 6]]
    np.testing.assert_array_equal(jf.boolean_mask([0, 1, 2, 3], np.array([True, False, True, False])).numpy(), [0, 2])
    np.testing.assert_array_equal(jf.boolean_mask(t, np.array([True, False, True])).numpy(), [[1, 2], [5, 6]])
    # A non-bool mask selects its nonzero elements (TF's where does).
    np.testing.assert_array_equal(jf.boolean_mask(t, [1, 0, 2]).numpy(), [[1, 2], [5, 6]])
    np.testing.assert_array_equal(jf.boolean_mask(t, [True, False], axis=1).numpy(), [[1], [3], [5]])


def test_boolean_mask_errors_are_tfs():
    m = jf.constant([[1, 2], [3, 4]])
    with pytest.raises(ValueError, match="mask cannot be scalar"):
        jf.boolean_mask(m, True)
    with pytest.raises(ValueError, match=r"Shapes \(2,\) and \(3,\) are incompatible"):
        jf.boolean_mask(m, [True, False, True])
    with pytest.raises(ValueError, match=r"Shapes \(\) and \(2,\) are incompatible"):
        jf.boolean_mask(m, [True, False], axis=2)
    with pytest.raises(ValueError, match=r"Shapes \(\) and \(2,\) are incompatible"):
        jf.boolean_mask(m, [True, False], axis=-1)  # TF slices shape[-1:0]


@pytest.mark.parametrize("traced", [False, True])
@pytest.mark.parametrize("axis,mshape", [(0, (3,)), (0, (3, 4)), (1, (4,)), (1, (4, 2))])
def test_boolean_mask_gradient_is_a_scatter(axis, mshape, traced, rng):
    x = rng.standard_normal((3, 4, 2))
    m = rng.random(mshape) < 0.6
    w = rng.standard_normal(_np_mask(x, m, axis).shape)

    def grad(xt, mt):
        with jf.GradientTape() as tape:
            tape.watch(xt)
            loss = jf.reduce_sum(jf.boolean_mask(xt, mt, axis=axis) * jf.constant(w))
        return tape.gradient(loss, xt)
    g = (jf.function(grad) if traced else grad)(jf.constant(x), jf.constant(m))
    want = numeric_grad(lambda a: float(np.sum(_np_mask(a, m, axis) * w)), [x])[0]
    np.testing.assert_allclose(g.numpy(), want, rtol=1e-6, atol=1e-8)
    assert np.all(g.numpy()[want == 0] == 0)  # a scatter: unmasked elements get exactly zero


@pytest.mark.parametrize("shape", [(5,), (3, 4), (2, 3, 4), (0,), (2, 0, 3), (1, 1)])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64", "bool"])
def test_where_gives_the_coordinates_of_true_elements(shape, dtype, rng):
    x = (rng.integers(-1, 2, size=shape)).astype(dtype)
    want = np.argwhere(x)
    for mode, f in _modes(jf.where, [jf.TensorSpec([None] * len(shape), getattr(jf, dtype))]).items():
        got = f(jf.constant(x))
        assert got.dtype == jf.int64, mode
        assert got.shape == want.shape, mode
        np.testing.assert_array_equal(got.numpy(), want, err_msg=mode)


def test_where_nan_is_true_and_negative_zero_false():
    x = np.array([np.nan, -0.0, 0.0, 1.0, -np.inf], np.float32)
    np.testing.assert_array_equal(jf.where(x).numpy(), [[0], [3], [4]])


def test_where_traced_has_an_unknown_count():
    @jf.function
    def f(x):
        c = jf.where(x)
        assert tuple(c.shape) == (None, 2)
        return c
    np.testing.assert_array_equal(f(jf.constant([[True, False], [False, True]])).numpy(), [[0, 0], [1, 1]])


def test_where_errors_are_tfs():
    with pytest.raises(jf.errors.InvalidArgumentError, match="Unhandled input dimensions: 0"):
        jf.where(jf.constant(3))
    with pytest.raises(ValueError, match="x and y must both be non-None or both be None"):
        jf.where(jf.constant([True]), None, 1)
    with pytest.raises(ValueError, match="x and y must both be non-None or both be None"):
        jf.where(jf.constant([True]), x=1)


def _unique_ref(x):
    _, first, inv, cnt = np.unique(x, return_index=True, return_inverse=True, return_counts=True)
    order = np.argsort(first)
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    return x[first[order]], rank[inv.reshape(-1)], cnt[order]


@pytest.mark.parametrize("out_idx", [jf.int32, jf.int64])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64", "bool"])
@pytest.mark.parametrize("n", [0, 1, 7, 50])
def test_unique_and_counts(n, dtype, out_idx, rng):
    x = rng.integers(-3, 4, size=n).astype(dtype)
    y, idx, cnt = _unique_ref(x)
    for mode, f in _modes(lambda a: jf.unique_with_counts(a, out_idx=out_idx),
                          [jf.TensorSpec([None], getattr(jf, dtype))]).items():
        r = f(jf.constant(x))
        assert r.y.dtype == getattr(jf, dtype) and r.idx.dtype == out_idx and r.count.dtype == out_idx, mode
        np.testing.assert_array_equal(r.y.numpy(), y, err_msg=mode)
        np.testing.assert_array_equal(r.idx.numpy(), idx, err_msg=mode)
        np.testing.assert_array_equal(r.count.numpy(), cnt, err_msg=mode)
        u = jf.unique(jf.constant(x), out_idx=out_idx) if mode == "eager" else jf.function(jf.unique)(jf.constant(x))
        np.testing.assert_array_equal(u.y.numpy(), y, err_msg=mode)
        np.testing.assert_array_equal(u.idx.numpy(), idx, err_msg=mode)
        assert u._fields == ("y", "idx") and r._fields == ("y", "idx", "count")


def test_unique_merges_signed_zeros_and_keeps_each_nan():
    # TF: 0.0 == -0.0 share an entry (the first one's value), NaN != NaN gives one entry each.
    y, idx = jf.unique(jf.constant([0.0, -0.0, np.nan, np.nan, 1.0]))
    np.testing.assert_array_equal(idx.numpy(), [0, 0, 1, 2, 3])
    assert np.signbit(y.numpy()[0]) == np.False_ and np.isnan(y.numpy()[1:3]).all()


def test_unique_errors_are_tfs():
    with pytest.raises(jf.errors.InvalidArgumentError, match="unique expects a 1D vector"):
        jf.unique(jf.constant([[1, 2]]))
    with pytest.raises(jf.errors.InvalidArgumentError, match="unique expects a 1D vector"):
        jf.unique_with_counts(jf.constant(1))
    with pytest.raises(jf.errors.InvalidArgumentError, match="'out_idx' of float32 is not in the list"):
        jf.unique(jf.constant([1, 2]), out_idx=jf.float32)


def test_unique_and_where_are_not_differentiable():
    x = jf.constant([1.0, 2.0, 1.0])
    with jf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = jf.reduce_sum(jf.unique(x).y * 2.0)
        w = jf.reduce_sum(jf.cast(jf.where(x > 1.5), jf.float32))
    assert tape.gradient(y, x) is None
    assert tape.gradient(w, x) is None


@pytest.mark.parametrize("op,call", [
    ("Where", lambda x: jf.where(x > 0)),
    ("Unique", lambda x: jf.unique(x).y),
    ("UniqueWithCounts", lambda x: jf.unique_with_counts(x).count),
    ("Where", lambda x: jf.boolean_mask(x, x > 0)),
    ("Where", lambda x: x[x > 0]),
])
def test_jit_compile_names_the_value_shaped_op(op, call):
    f = jf.function(call, jit_compile=True)
    with pytest.raises(jf.errors.InvalidArgumentError, match=rf"'{op}'.*output shape depends on its input values"):
        f(jf.constant([1.0, -2.0, 3.0]))


def test_value_shaped_ops_run_eagerly_next_to_a_compiled_cluster():
    @jf.function
    def f(x):
        with jf.jit_scope():
            y = x * 2.0 + 1.0
        return jf.reduce_sum(jf.boolean_mask(y, y > 2.0))
    x = np.array([0.1, 0.9, -3.0, 2.0], np.float32)
    y = x * 2 + 1
    np.testing.assert_allclose(f(jf.constant(x)).numpy(), y[y > 2].sum(), rtol=1e-6)


# ---- Tensor.__getitem__ with a bool key: TF routes it to boolean_mask --------------------------
@pytest.mark.parametrize("kind", ["tensor", "ndarray"])
@pytest.mark.parametrize("mshape", [(3,), (3, 4)])
def test_getitem_bool_key_is_boolean_mask(kind, mshape, rng):
    x = rng.standard_normal((3, 4))
    m = rng.random(mshape) < 0.5
    key = jf.constant(m) if kind == "tensor" else m
    np.testing.assert_array_equal(jf.constant(x)[key].numpy(), x[m])

    @jf.function
    def f(a, b):
        return a[b]
    np.testing.assert_array_equal(f(jf.constant(x), jf.constant(m)).numpy(), x[m])
    # And its gradient, traced: the scatter of boolean_mask.
    w = rng.standard_normal(x[m].shape)

    @jf.function
    def g(a, b):
        with jf.GradientTape() as tape:
            tape.watch(a)
            loss = jf.reduce_sum(a[b] * jf.constant(w))
        return tape.gradient(loss, a)
    want = np.zeros_like(x)
    want[m] = w
    np.testing.assert_allclose(g(jf.constant(x), jf.constant(m)).numpy(), want)


def test_getitem_bool_keys_that_tf_refuses():
    x = jf.constant([[1, 2], [3, 4]])
    with pytest.raises(ValueError, match="mask cannot be scalar"):
        x[True]
    # Only a whole key is a mask: inside a tuple a bool tensor is TF's TypeError.
    with pytest.raises(TypeError, match="valid indices"):
        x[:, jf.constant([True, False])]
    with pytest.raises(TypeError, match="valid indices"):
        x[jf.constant([True, False]), 0]
    with pytest.raises(ValueError, match="incompatible"):
        x[np.array([True, False, True])]


# ---- Tensor.__getitem__ with slice bounds and steps computed in the graph ----------------------
_TRACED_KEYS = ["x[i:]", "x[:i]", "x[::i]", "x[:, i]", "x[:, i:]", "x[i:, ::i]", "x[-i:, :i]", "x[i:1]",
                "x[..., i::2]", "x[None, i:, 1]", "x[::i][1:]", "x[i, i:]", "x[..., None][i:]"]


@pytest.mark.parametrize("key", _TRACED_KEYS)
@pytest.mark.parametrize("i", [1, 2, -1, -3, 7])
@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_traced_slice_bounds_and_steps_match_numpy(key, i, dtype, rng):
    """TF's _slice_helper: a tensor bound or step becomes an entry of the packed begin/end/strides;
    out-of-range slice bounds clamp (x[7:] is empty), as numpy's."""
    x = rng.standard_normal((3, 4))
    if ("x[i," in key or ", i]" in key) and not -3 <= i < 3:
        return  # an index, not a slice bound: out of range raises (test_traced_index_errors_are_tfs)
    want = eval(key, {"x": x, "i": i})
    f = jf.function(lambda a, b: eval(key, {"x": a, "i": b}))
    got = f(jf.constant(x), jf.constant(i, getattr(jf, dtype)))
    np.testing.assert_array_equal(got.numpy(), want)
    sig = [jf.TensorSpec([None, None], jf.float64), jf.TensorSpec([], getattr(jf, dtype))]
    fs = jf.function(lambda a, b: eval(key, {"x": a, "i": b}), input_signature=sig)
    np.testing.assert_array_equal(fs(jf.constant(x), jf.constant(i, getattr(jf, dtype))).numpy(), want)


@pytest.mark.parametrize("key", _TRACED_KEYS)
@pytest.mark.parametrize("unknown_dims", [False, True])
def test_gradient_through_traced_slice_bounds(key, unknown_dims, rng):
    """TF differentiates slices with run-time bounds: a scatter of g to the selected positions."""
    x = rng.standard_normal((3, 4))
    i = 1
    w = rng.standard_normal(np.shape(eval(key, {"x": x, "i": i})))

    def grad(a, b):
        with jf.GradientTape() as tape:
            tape.watch(a)
            loss = jf.reduce_sum(eval(key, {"x": a, "i": b}) * jf.constant(w))
        return tape.gradient(loss, a)
    sig = [jf.TensorSpec([None, None], jf.float64), jf.TensorSpec([], jf.int32)] if unknown_dims else None
    g = jf.function(grad, input_signature=sig)(jf.constant(x), jf.constant(i))
    want = numeric_grad(lambda a: float(np.sum(eval(key, {"x": a, "i": i}) * w)), [x])[0]
    np.testing.assert_allclose(g.numpy(), want, rtol=1e-6, atol=1e-8)


def test_traced_index_errors_are_tfs():
    x = jf.constant(np.arange(12.0).reshape(3, 4))
    with pytest.raises(jf.errors.InvalidArgumentError, match="slice index 10 of dimension 0 out of bounds"):
        jf.function(lambda a, i: a[i])(x, jf.constant(10))
    with pytest.raises(jf.errors.InvalidArgumentError, match="strides\\[0\\] must be non-zero"):
        jf.function(lambda a, i: a[::i])(x, jf.constant(0))
    # Compiled (jit_compile=True compiles run-time bounds, as TF's XLA): the same errors.
    with pytest.raises(jf.errors.InvalidArgumentError, match="slice index 10 of dimension 0 out of bounds"):
        jf.function(lambda a, i: a[i] + 1.0, jit_compile=True)(x, jf.constant(10))
    with pytest.raises(jf.errors.InvalidArgumentError, match="strides\\[0\\] must be non-zero"):
        jf.function(lambda a, i: a[::i] + 1.0, jit_compile=True)(x, jf.constant(0))


@pytest.mark.parametrize("traced", [False, True])
def test_float_indices_are_tfs_type_error(traced):
    x = jf.constant(np.arange(12.0).reshape(3, 4))
    keys = [lambda a, f: a[f], lambda a, f: a[f:], lambda a, f: a[:, ::f], lambda a, f: a[1.0],
            lambda a, f: a[..., 0.5:]]
    for k in keys:
        call = jf.function(k) if traced else k
        with pytest.raises(TypeError, match=r"Only integers, slices \(`:`\), ellipsis"):
            call(x, jf.constant(1.0))


def test_new_axis_and_ellipsis(rng):
    x = rng.standard_normal((2, 3, 4))
    for key in ["x[..., None]", "x[None, ..., 1]", "x[:, None, ..., None, 2]", "x[..., None, :]"]:
        want = eval(key, {"x": x})
        np.testing.assert_array_equal(eval(key, {"x": jf.constant(x)}).numpy(), want, err_msg=key)
        f = jf.function(lambda a, key=key: eval(key, {"x": a}))
        np.testing.assert_array_equal(f(jf.constant(x)).numpy(), want, err_msg=key)


def test_boolean_mask_with_an_axis_computed_in_the_graph(rng):
    """TF accepts a tensor axis: a 1-D mask gathers along it; a constant axis is read."""
    x = rng.standard_normal((3, 4))
    f = jf.function(lambda a, m, ax: jf.boolean_mask(a, m, axis=ax))
    m1 = np.array([True, False, True, True])
    np.testing.assert_array_equal(f(x, m1, jf.constant(1)).numpy(), x[:, m1])
    m0 = np.array([False, True, True])
    np.testing.assert_array_equal(f(x, m0, jf.constant(0)).numpy(), x[m0])
    g = jf.function(lambda a, m: jf.boolean_mask(a, m, axis=jf.constant(1)))
    np.testing.assert_array_equal(g(x, m1).numpy(), x[:, m1])
    with pytest.raises(NotImplementedError, match="axis known when tracing"):
        f(x[None], np.ones((3, 4), bool), jf.constant(1))


# ---- Tensor.__getitem__ with a tensor index computed in the graph, and bad keys ------------------
_TF_INDEX_MSG = "scalar tf.int32/tf.int64 tensors are valid indices"


@pytest.mark.parametrize("key", [
    "jf.constant(1.5)",                     # a float tensor: was a segfault
    "np.array([0, 1])",                     # a numpy array: was a segfault
    "np.array(1.0)",                        # a 0-d float array
    "jf.constant([0, 1])",                  # an int vector tensor (TF: only scalars)
    "(0, jf.constant(2.0))",                # inside a tuple
    "slice(jf.constant(1.0), None)",        # as a slice bound
    "BadIndex()",                           # an object whose __index__ raises: was a segfault
])
def test_indexing_with_a_bad_key_raises_tf_type_error(key):
    out = run_in_child(f"""
        class BadIndex:
            def __index__(self):
                raise RuntimeError("no index")
        x = jf.constant(np.ones((3, 4), np.float32))
        report(lambda: x[{key}])
        """)
    assert_raised(out, "TypeError", _TF_INDEX_MSG)


@pytest.mark.parametrize("key, want", [
    ("a[i]", "x[1]"),
    ("a[i:]", "x[1:]"),
    ("a[:, i]", "x[:, 1]"),
    ("a[i, 1:]", "x[1, 1:]"),
    ("a[-i]", "x[-1]"),
    ("a[::i + 1]", "x[::2]"),
    ("a[None, ..., i]", "x[None, ..., 1]"),
])
@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_indexing_with_a_traced_int_tensor_works(key, want, dtype):
    # TF: a scalar int tensor index inside tf.function is a StridedSlice whose begin/end are
    # computed in the graph. It was a segfault (the tensor's __index__ failed in C++).
    out = run_in_child(f"""
        x = np.arange(12, dtype=np.float32).reshape(3, 4)
        f = jf.function(lambda a, i: {key})
        got = f(jf.constant(x), jf.constant(1, jf.{dtype}))
        report(lambda: [got.numpy().tolist(), {want}.tolist(), list(got.shape)])
        """)
    got, want_value, shape = out["value"]
    assert got == want_value
    assert tuple(shape) == np.shape(want_value)


@pytest.mark.parametrize("key", ["x[i]", "x[:, i]", "x[i, 2]", "x[-i]", "x[None, ..., i]", "x[i, i] * x[i, 0]"])
@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_gradient_through_a_traced_int_tensor_index(key, dtype):
    # In process: no crash risk here. TF differentiates x[i] for a traced i; the gradient is g
    # placed at the index (a one-hot mask per indexed axis).
    import jitflow as jf
    x = jf.Variable(np.arange(12, dtype=np.float32).reshape(3, 4) / 7.0)

    def grad_of(index_expr):
        @jf.function
        def g(i):
            with jf.GradientTape() as tape:
                y = jf.reduce_sum(eval(index_expr, {"x": x, "i": i}) * 3.0)
            return tape.gradient(y, x)
        return g

    i = jf.constant(1, getattr(jf, dtype))
    np.testing.assert_allclose(grad_of(key)(i).numpy(), grad_of(key.replace("i", "1"))(i).numpy(), rtol=1e-6)


def test_gradient_through_a_traced_slice_bound():
    # TF differentiates x[i:] too (more forms: test_gradient_through_traced_slice_bounds).
    import jitflow as jf
    x = jf.Variable(jf.ones([3, 4]))

    @jf.function
    def g(i):
        with jf.GradientTape() as tape:
            y = jf.reduce_sum(x[i:])
        return tape.gradient(y, x)
    np.testing.assert_array_equal(g(jf.constant(1)).numpy(), [[0] * 4, [1] * 4, [1] * 4])


def test_traced_tensor_index_out_of_range_raises_invalid_argument():
    out = run_in_child("""
        f = jf.function(lambda a, i: a[i])
        report(lambda: f(jf.zeros([3, 4]), jf.constant(3)))
        """)
    assert_raised(out, "InvalidArgumentError", "StridedSlice", "slice index 3 of dimension 0 out of bounds")


def test_traced_float_tensor_index_raises_type_error():
    out = run_in_child("""
        f = jf.function(lambda a, i: a[i])
        report(lambda: f(jf.zeros([3, 4]), jf.constant(1.0)))
        """)
    assert_raised(out, "TypeError", _TF_INDEX_MSG)


def test_traced_tensor_index_under_jit_scope_runs_and_under_jit_compile_names_the_op():
    out = run_in_child("""
        def body(a, i):
            with jf.jit_scope():
                return a[i] * 2.0 + 1.0
        f = jf.function(body)
        report(lambda: f(jf.ones([3, 4]), jf.constant(1)))
        """)
    assert out["value"] == [3.0] * 4
    # jit_compile=True compiles it, as TF's XLA does (the runner computes the bounds first).
    out = run_in_child("""
        f = jf.function(lambda a, i: a[i] * 2.0, jit_compile=True)
        report(lambda: f(jf.ones([3, 4]), jf.constant(1)))
        """)
    assert out["value"] == [2.0] * 4


# ---- Tensor.__getitem__ with indices and bounds of 2**31 and more --------------------------------
@pytest.mark.parametrize("key", [2**32, 2**31, -2**32, (0, 2**32)], ids=repr)
def test_index_past_int32_is_out_of_bounds_not_wrapped(key):
    # x[2**32] returned x[0] (the index wrapped in an int32 begin). TF: InvalidArgumentError.
    with pytest.raises(jf.errors.InvalidArgumentError, match="out of bounds"):
        jf.zeros([3, 3])[key]


def test_index_past_int64_raises_value_error():
    # TF: ValueError "Can't convert Python sequence with out-of-range integer to Tensor."
    with pytest.raises(ValueError, match="out-of-range integer"):
        jf.zeros([3])[2**63]
    with pytest.raises(ValueError, match="out-of-range integer"):
        jf.zeros([2**63, 0])


def test_slices_with_huge_bounds_and_steps():
    x = np.arange(5, dtype=np.float32)
    t = jf.constant(x)
    # A step of 2**62 wrapped to 0 in int32 ("strides must be non-zero"); TF gives [x[0]].
    for key in [slice(None, None, 2**62), slice(None, None, -2**63), slice(2**40, None), slice(None, 2**40),
                slice(-2**40, None), slice(None, None, 2**31), slice(4, -2**63, -2**62)]:
        np.testing.assert_array_equal(t[key].numpy(), x[key], err_msg=repr(key))
