"""gather_nd, the nd scatters, slice and repeat beyond their differential rows (op_rows.py):
batch_dims, index vectors shorter than the rank (slices), out-of-range indices in every mode
(compiled included), TF's errors, duplicates, NaN rules of max/min, gradients against finite
differences, and repeat against TF's results (numpy's repeat, negative counts as 0)."""
import numpy as np
import pytest
from conftest import numeric_grad

import jitflow as jf


def _modes(fn):
    return {"eager": fn, "function": jf.function(fn), "jit_compile": jf.function(fn, jit_compile=True)}


def _grad_check(f_jf, f_np, xs, rng):
    """d/dx of sum(f(x...) * w) by the tape and by central differences, for each x."""
    w = rng.standard_normal(np.shape(f_np(*xs)))
    ts = [jf.constant(x) for x in xs]
    with jf.GradientTape() as tape:
        for t in ts:
            tape.watch(t)
        loss = jf.reduce_sum(f_jf(*ts) * w)
    got = tape.gradient(loss, ts)
    want = numeric_grad(lambda *a: float(np.sum(f_np(*a) * w)), xs)
    for g, n in zip(got, want):
        np.testing.assert_allclose(g.numpy(), n, rtol=1e-6, atol=1e-6)


# ---- gather_nd -------------------------------------------------------------------------
@pytest.mark.parametrize("depth", [0, 1, 2, 3])
def test_gather_nd_slices_in_every_mode(depth, rng):
    p = rng.standard_normal((3, 4, 5))
    idx = np.stack([rng.integers(0, n, size=(2, 3)) for n in p.shape[:depth]], -1).astype(np.int32) \
        if depth else np.zeros((2, 3, 0), np.int32)
    want = np.stack([p[tuple(i)] for i in idx.reshape(6, depth)]).reshape(idx.shape[:-1] + p.shape[depth:])
    for mode, f in _modes(lambda a, i: jf.gather_nd(a, i)).items():
        np.testing.assert_array_equal(f(jf.constant(p), jf.constant(idx)).numpy(), want, err_msg=mode)
    if depth:  # repeated index vectors: the gradient adds
        idx[0, 0] = idx[1, 2]
        _grad_check(lambda a: jf.gather_nd(a, idx),
                    lambda a: np.stack([a[tuple(i)] for i in idx.reshape(6, depth)]).reshape(want.shape), [p], rng)


def test_gather_nd_compiles_inside_a_fused_cluster():
    p = jf.constant(np.arange(12.0).reshape(3, 4))
    before = jf.debugging.stats()["cluster_runs"]

    @jf.function(jit_compile=True)
    def f(a, i):
        return jf.exp(jf.gather_nd(a * 2.0, i)) + 1.0

    got = f(p, jf.constant([[2, 3], [0, 1]], jf.int64)).numpy()
    np.testing.assert_allclose(got, np.exp([22.0, 2.0]) + 1.0)
    assert jf.debugging.stats()["cluster_runs"] > before


@pytest.mark.parametrize("bad", [[0, 4], [-1, 0], [3, 0]])
def test_gather_nd_out_of_range_raises_in_every_mode(bad):
    p = jf.constant(np.arange(12.0).reshape(3, 4))
    for mode, f in _modes(lambda a, i: jf.gather_nd(a, i)).items():
        with pytest.raises(jf.errors.InvalidArgumentError, match="GatherNd") as e:
            f(p, jf.constant([[1, 1], bad]))
        if mode != "jit_compile":
            assert f"indices[1] = [{bad[0]}, {bad[1]}] does not index into param shape [3,4]" in str(e.value)


@pytest.mark.parametrize("batch_dims", [1, 2])
def test_gather_nd_batch_dims(batch_dims, rng):
    p = rng.standard_normal((2, 3, 4, 5))
    ishape = (2, 3)[:batch_dims] + (6, 1)
    idx = rng.integers(0, p.shape[batch_dims], size=ishape).astype(np.int32)

    def ref(a):
        if batch_dims == 1:
            return np.stack([a[b][idx[b][..., 0]] for b in range(2)])
        return np.stack([np.stack([a[b, c][idx[b, c][..., 0]] for c in range(3)]) for b in range(2)])

    for mode, f in _modes(lambda a, i: jf.gather_nd(a, i, batch_dims=batch_dims)).items():
        np.testing.assert_array_equal(f(jf.constant(p), jf.constant(idx)).numpy(), ref(p), err_msg=mode)
    _grad_check(lambda a: jf.gather_nd(a, idx, batch_dims=batch_dims), ref, [p], rng)


def test_gather_nd_batch_dims_with_unknown_dims():
    sig = [jf.TensorSpec([None, None, None], jf.float64), jf.TensorSpec([None, None, 1], jf.int32)]
    f = jf.function(lambda a, i: jf.gather_nd(a, i, batch_dims=1), input_signature=sig)
    p = np.arange(24.0).reshape(2, 3, 4)
    idx = np.array([[[2], [0]], [[1], [1]]], np.int32)
    np.testing.assert_array_equal(f(jf.constant(p), jf.constant(idx)).numpy(), np.stack([p[0][[2, 0]], p[1][[1, 1]]]))


def test_gather_nd_errors():
    p = jf.constant(np.ones((3, 2)))
    with pytest.raises(jf.errors.InvalidArgumentError, match="index innermost dimension length must be <= params rank; saw: 3 vs. 2"):
        jf.gather_nd(p, [[0, 1, 0]])
    with pytest.raises(jf.errors.InvalidArgumentError, match="indices must be at least a vector"):
        jf.gather_nd(p, 1)
    with pytest.raises(TypeError, match="indices must be int32 or int64"):
        jf.gather_nd(p, [0.5])
    with pytest.raises(jf.errors.InvalidArgumentError, match=r"params is empty.  Params shape: \[3,0\]"):
        jf.gather_nd(jf.zeros([3, 0]), [[0]])
    with pytest.raises(ValueError, match="does not allow negative batch_dims"):
        jf.gather_nd(p, [[0]], batch_dims=-1)
    with pytest.raises(ValueError, match=r"must be less than rank\(`indices`\) = 2"):
        jf.gather_nd(jf.ones([2, 2, 2]), [[0, 1], [1, 0]], batch_dims=2)


# ---- scatter_nd and tensor_scatter_nd_* ------------------------------------------------------
def test_scatter_nd_adds_duplicates_and_scatters_slices(rng):
    np.testing.assert_array_equal(jf.scatter_nd([[0], [0], [2]], [1.0, 2.0, 3.0], [4]).numpy(), [3, 0, 3, 0])
    u = rng.standard_normal((3, 5))
    got = jf.scatter_nd(jf.constant([[1, 0], [2, 1], [1, 0]], jf.int64), u, jf.constant([3, 2, 5], jf.int64))
    want = np.zeros((3, 2, 5))
    np.add.at(want, ([1, 2, 1], [0, 1, 0]), u)
    np.testing.assert_allclose(got.numpy(), want)
    np.testing.assert_array_equal(jf.scatter_nd([[0], [0]], [True, True], [2]).numpy(), [True, False])
    # Python indices take the shape tensor's dtype (TF's shared Tindices attr).
    assert jf.scatter_nd([[0]], [5], jf.constant([2], jf.int64)).numpy().tolist() == [5, 0]


def test_scatter_nd_errors():
    with pytest.raises(jf.errors.InvalidArgumentError, match=r"ScatterNd: indices\[1\] = \[5\] does not index into shape \[4\]"):
        jf.scatter_nd([[0], [5]], [1.0, 2.0], [4])
    with pytest.raises(jf.errors.InvalidArgumentError, match=r"indices\[1\] = \[-1\]"):
        jf.scatter_nd([[0], [-1]], [1.0, 2.0], [4])
    with pytest.raises(jf.errors.InvalidArgumentError, match=r"Dimensions \[0,1\) of indices\[shape=\[2,1\]\] must match"):
        jf.scatter_nd([[0], [1]], [1.0, 2.0, 3.0], [4])
    with pytest.raises(jf.errors.InvalidArgumentError, match="Dimension -2 must be >= 0"):
        jf.scatter_nd([[0]], [5], [-2])
    with pytest.raises(jf.errors.InvalidArgumentError, match="empty output shape"):
        jf.scatter_nd([[0]], jf.zeros([1, 0]), [4, 0])
    with pytest.raises(jf.errors.InvalidArgumentError, match="expected to be a int64 tensor but is a int32"):
        jf.scatter_nd(jf.constant([[0]], jf.int64), [5], jf.constant([2], jf.int32))


def test_scatter_nd_out_of_range_raises_inside_functions():
    f = jf.function(lambda i, u: jf.scatter_nd(i, u, [4]))
    with pytest.raises(jf.errors.InvalidArgumentError, match="ScatterNd"):
        f(jf.constant([[4]]), jf.constant([1.0]))
    with pytest.raises(jf.errors.InvalidArgumentError, match="ScatterNd"):
        jf.function(lambda i, u: jf.scatter_nd(i, u, [4]), jit_compile=True)(jf.constant([[0]]), jf.constant([1.0]))


def test_tensor_scatter_nd_ops_match_tf():
    t = [1, 2, 3, 4]
    assert jf.tensor_scatter_nd_update(t, [[1], [1]], [7, 8]).numpy().tolist() == [1, 8, 3, 4]  # the last wins
    assert jf.tensor_scatter_nd_add(t, [[1], [1]], [7, 0]).numpy().tolist() == [1, 9, 3, 4]
    assert jf.tensor_scatter_nd_sub(t, [[1], [1]], [7, 0]).numpy().tolist() == [1, -5, 3, 4]
    assert jf.tensor_scatter_nd_max(t, [[1], [1]], [7, 0]).numpy().tolist() == [1, 7, 3, 4]
    assert jf.tensor_scatter_nd_min(t, [[1], [1]], [7, 0]).numpy().tolist() == [1, 0, 3, 4]
    # Eigen's max/min, as TF: a NaN update never wins, a NaN already there stays.
    np.testing.assert_array_equal(jf.tensor_scatter_nd_max([1.0, 2.0], [[0]], [np.nan]).numpy(), [1.0, 2.0])
    np.testing.assert_array_equal(jf.tensor_scatter_nd_min([1.0, np.nan], [[1]], [0.0]).numpy(), [1.0, np.nan])
    assert jf.tensor_scatter_nd_add([1.0, 2.0], [[1]], [7]).numpy().tolist() == [1.0, 9.0]  # Python updates take the dtype
    assert jf.tensor_scatter_nd_update([True, False], [[1]], [True]).numpy().tolist() == [True, True]
    got = jf.tensor_scatter_nd_update(np.zeros((2, 3)), [[1]], [[1.0, 2.0, 3.0]]).numpy()
    np.testing.assert_array_equal(got, [[0, 0, 0], [1, 2, 3]])


def test_tensor_scatter_nd_errors():
    t = jf.constant([1, 2, 3, 4])
    with pytest.raises(jf.errors.InvalidArgumentError, match=r"TensorScatterUpdate: indices\[1\] = \[9\] does not index into shape \[4\]"):
        jf.tensor_scatter_nd_update(t, [[1], [9]], [7, 8])
    with pytest.raises(jf.errors.InvalidArgumentError, match="Outer dimensions of indices and update must match"):
        jf.tensor_scatter_nd_add(t, [[1], [1]], [7])
    with pytest.raises(jf.errors.InvalidArgumentError, match="Inner dimensions of output shape must match"):
        jf.tensor_scatter_nd_add(t, [[1, 0]], [7])
    with pytest.raises(jf.errors.InvalidArgumentError, match=r"Indices shape must have rank at least one. Found:\[\]"):
        jf.tensor_scatter_nd_update(t, 0, [5])
    with pytest.raises(TypeError):
        jf.tensor_scatter_nd_update(t, [[0]], jf.constant([5.0]))
    with pytest.raises(TypeError):
        jf.tensor_scatter_nd_add([True, False], [[1]], [True])


@pytest.mark.parametrize("fn,np_fn", [(jf.tensor_scatter_nd_update, None), (jf.tensor_scatter_nd_add, np.add),
                                      (jf.tensor_scatter_nd_sub, np.subtract), (jf.tensor_scatter_nd_max, np.maximum),
                                      (jf.tensor_scatter_nd_min, np.minimum)])
def test_tensor_scatter_gradients_with_slices(fn, np_fn, rng):
    t = rng.standard_normal((3, 4))
    idx = np.array([[2], [0]], np.int32)
    u = rng.standard_normal((2, 4))

    def ref(a, b):
        out = a.copy()
        for k, (i,) in enumerate(idx):
            out[i] = b[k] if np_fn is None else np_fn(out[i], b[k])
        return out

    _grad_check(lambda a, b: fn(a, idx, b), ref, [t, u], rng)


def test_tensor_scatter_max_gradient_splits_ties_as_tf():
    x = jf.constant([1.0, 2.0, 3.0])
    u = jf.constant([2.0, 2.0])
    with jf.GradientTape() as tape:
        tape.watch([x, u])
        y = jf.tensor_scatter_nd_max(x, [[1], [1]], u)
    gx, gu = tape.gradient(y, [x, u])
    np.testing.assert_allclose(gx.numpy(), [1.0, 1 / 3, 1.0], rtol=1e-6)
    np.testing.assert_allclose(gu.numpy(), [1 / 3, 1 / 3], rtol=1e-6)


def test_scatter_nd_gradient(rng):
    idx = np.array([[1, 0], [2, 1], [1, 0]], np.int32)
    u = rng.standard_normal((3, 5))

    def ref(b):
        out = np.zeros((3, 2, 5))
        np.add.at(out, (idx[:, 0], idx[:, 1]), b)
        return out

    _grad_check(lambda b: jf.scatter_nd(idx, b, [3, 2, 5]), ref, [u], rng)


# ---- slice -------------------------------------------------------------------------------
@pytest.mark.parametrize("begin,size", [([1, 0, 2], [-1, 2, 1]), ([0, 1, 0], [3, -1, -1]), ([3, 4, 5], [0, 0, 0])])
def test_slice_in_every_mode_and_its_gradient(begin, size, rng):
    x = rng.standard_normal((3, 4, 5))
    sl = tuple(slice(b, None if s == -1 else b + s) for b, s in zip(begin, size))
    for mode, f in _modes(lambda a: jf.slice(a, begin, size)).items():
        np.testing.assert_array_equal(f(jf.constant(x)).numpy(), x[sl], err_msg=mode)
    sig = jf.function(lambda a: jf.slice(a, begin, size) * 2.0, jit_compile=True,
                      input_signature=[jf.TensorSpec([None, None, None], jf.float64)])
    np.testing.assert_array_equal(sig(jf.constant(x)).numpy(), x[sl] * 2.0)
    _grad_check(lambda a: jf.slice(a, begin, size), lambda a: a[sl], [x], rng)


def test_slice_with_traced_bounds_and_its_gradient(rng):
    x = rng.standard_normal((3, 4))

    @jf.function
    def f(a, b):  # begin known only at run time: the gradient's paddings are computed
        y = jf.slice(a, b, [2, -1])
        return y, jf.gradients(jf.reduce_sum(y), a)[0]

    y, g = f(jf.constant(x), jf.constant([1, 2]))
    np.testing.assert_array_equal(y.numpy(), x[1:3, 2:])
    want = np.zeros_like(x)
    want[1:3, 2:] = 1
    np.testing.assert_array_equal(g.numpy(), want)


def test_slice_errors():
    p = jf.constant(np.ones((3, 2)))
    with pytest.raises(jf.errors.InvalidArgumentError, match=r"Slice: Expected size\[0\] in \[0, 2\], but got 3"):
        jf.slice(p, [1, 0], [3, 1])
    with pytest.raises(jf.errors.InvalidArgumentError, match=r"Expected begin\[0\] in \[0, 3\], but got -1"):
        jf.slice(p, [-1, 0], [1, 1])
    with pytest.raises(jf.errors.InvalidArgumentError, match=r"Expected size\[0\] in \[0, 2\], but got -2"):
        jf.slice(p, [1, 0], [-2, 1])
    with pytest.raises(jf.errors.InvalidArgumentError, match="1-D tensors of size 2"):
        jf.slice(p, [1], [1])
    with pytest.raises(jf.errors.InvalidArgumentError, match="expected to be a int64 tensor but is a int32"):
        jf.slice(p, jf.constant([0, 0], jf.int64), jf.constant([1, 1], jf.int32))


# ---- repeat ------------------------------------------------------------------------------
@pytest.mark.parametrize("repeats,axis", [(2, None), (3, 0), ([1, 2], 0), ([1, 2, 0], -1), ([2, -1], 0),
                                          ([0, 0], 0), (np.array([2]), 1), (0, 1)])
def test_repeat_matches_tf(repeats, axis):
    x = np.arange(6).reshape(2, 3) if axis in (-1, 1) and np.size(repeats) == 3 else np.arange(4).reshape(2, 2)
    r = np.maximum(np.asarray(repeats), 0)  # TF: a negative count repeats 0 times
    want = np.repeat(x, r.reshape(()) if r.size == 1 else r, axis=axis)
    for mode, f in _modes(lambda a: jf.repeat(a, repeats, axis=axis)).items():
        np.testing.assert_array_equal(f(jf.constant(x)).numpy(), want, err_msg=mode)


def test_repeat_with_traced_counts():
    x = np.arange(6).reshape(3, 2)
    f = jf.function(lambda a, r: jf.repeat(a, r, axis=0))
    np.testing.assert_array_equal(f(jf.constant(x), jf.constant([2, 0, 3])).numpy(), np.repeat(x, [2, 0, 3], 0))
    np.testing.assert_array_equal(f(jf.constant(x), jf.constant([2, -1, 1])).numpy(), np.repeat(x, [2, 0, 1], 0))
    np.testing.assert_array_equal(f(jf.constant(x), jf.constant(2)).numpy(), np.repeat(x, 2, 0))
    g = jf.function(lambda a, r: jf.repeat(a, r, axis=1))
    np.testing.assert_array_equal(g(jf.constant(x), jf.constant([3, 1])).numpy(), np.repeat(x, [3, 1], 1))


def test_repeat_scalar_unknown_dims_and_gradient(rng):
    assert jf.repeat(3, 2).numpy().tolist() == [3, 3]
    assert jf.repeat([1.5], 2).dtype == jf.float32
    f = jf.function(lambda a: jf.repeat(a, 2, axis=1), input_signature=[jf.TensorSpec([None, None], jf.float64)])
    x = rng.standard_normal((2, 3))
    np.testing.assert_array_equal(f(jf.constant(x)).numpy(), np.repeat(x, 2, 1))
    _grad_check(lambda a: jf.repeat(a, [2, 0, 1], axis=-1), lambda a: np.repeat(a, [2, 0, 1], -1), [x], rng)
    _grad_check(lambda a: jf.repeat(a, 3), lambda a: np.repeat(a, 3), [x], rng)


def test_repeat_errors():
    x = [[1, 2], [3, 4]]
    with pytest.raises(ValueError, match="Dimensions 2 and 3 are not compatible"):
        jf.repeat(x, [1, 2, 3], axis=0)
    with pytest.raises(ValueError, match=r"axis=2 out of bounds: expected -2<=axis<2"):
        jf.repeat(x, 2, axis=2)
    with pytest.raises(ValueError, match=r"must have rank at most 1"):
        jf.repeat(x, [[1, 2]], axis=0)
    with pytest.raises(TypeError, match="axis"):
        jf.repeat(x, 2, axis=0.5)
