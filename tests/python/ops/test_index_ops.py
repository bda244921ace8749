"""Gathering and shaping ops beyond their differential rows (op_rows.py): gather with
batch_dims and negative axes, out-of-range indices, one_hot's dtype rules, SYMMETRIC pads,
the mirror-pad gradient, pads too big to count, and the compositions (eye, sequence_mask,
size, shape_n, unstack, meshgrid, linspace) against numpy."""
import numpy as np
import pytest
from conftest import eager_and_traced, numeric_grad

import jitflow as jf


@pytest.mark.parametrize("batch_dims,axis", [(0, 0), (0, -1), (1, 1), (1, -1), (1, 2), (2, 2)])
def test_gather_batch_dims_and_axes(batch_dims, axis, rng):
    p = rng.standard_normal((2, 3, 4, 5))
    ax = axis % 4
    ishape = (2, 3, 6)[:batch_dims] + (6,)
    idx = rng.integers(0, p.shape[ax], size=ishape).astype(np.int64)

    def ref(p, idx):
        if batch_dims == 0:
            return np.take(p, idx, axis=ax)
        out = [ref_b(p[b], idx[b], batch_dims - 1) for b in range(p.shape[0])]
        return np.stack(out)

    def ref_b(p, idx, bd):
        if bd == 0:
            return np.take(p, idx, axis=ax - batch_dims)
        return np.stack([ref_b(p[b], idx[b], bd - 1) for b in range(p.shape[0])])

    want = ref(p, idx)
    for mode, f in eager_and_traced(lambda a, i: jf.gather(a, i, axis=axis, batch_dims=batch_dims)).items():
        np.testing.assert_array_equal(f(jf.constant(p), jf.constant(idx)).numpy(), want, err_msg=mode)
    # The gradient: a scatter-add (indices repeat), against finite differences.
    w = rng.standard_normal(want.shape)
    pt = jf.constant(p)
    with jf.GradientTape() as tape:
        tape.watch(pt)
        loss = jf.reduce_sum(jf.gather(pt, idx, axis=axis, batch_dims=batch_dims) * w)
    (num,) = numeric_grad(lambda q: float(np.sum(ref(q, idx) * w)), [p])
    np.testing.assert_allclose(tape.gradient(loss, pt).numpy(), num, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("bad", [3, -1])
def test_gather_out_of_range_raises_in_every_mode(bad):
    p = jf.constant(np.arange(6.0).reshape(3, 2))
    for f in eager_and_traced(lambda a, i: jf.gather(a, i)).values():
        with pytest.raises(jf.errors.InvalidArgumentError, match=rf"GatherV2: indices\[1\] = {bad} is not in \[0, 3\)"):
            f(p, jf.constant([0, bad]))


def test_gather_bad_arguments_raise_tf_errors():
    p = jf.constant(np.ones((3, 2)))
    with pytest.raises(TypeError, match="indices must be int32 or int64"):
        jf.gather(p, jf.constant([0.5]))
    with pytest.raises(jf.errors.InvalidArgumentError, match=r"Expected axis in the range \[-2, 2\), but got 2"):
        jf.gather(p, [0], axis=2)
    with pytest.raises(jf.errors.InvalidArgumentError, match="batch_dims"):
        jf.gather(p, [[0]], axis=0, batch_dims=1)


def test_one_hot_dtypes_axis_and_out_of_range():
    i = np.array([[0, 3], [-1, 2]])
    want = (np.arange(3) == i[..., None])
    np.testing.assert_array_equal(jf.one_hot(i, 3).numpy(), want.astype(np.float32))
    assert jf.one_hot(i, 3).dtype == jf.float32
    assert jf.one_hot(i, 3, dtype=jf.int64).dtype == jf.int64
    np.testing.assert_array_equal(jf.one_hot(i, 3, on_value=5, off_value=-1).numpy(), np.where(want, 5, -1))
    np.testing.assert_array_equal(jf.one_hot(i, 3, axis=0).numpy(), np.moveaxis(want, -1, 0).astype(np.float32))
    with pytest.raises(TypeError):
        jf.one_hot(i, 3, on_value=1.0, off_value=jf.constant(0, jf.int32))


@pytest.mark.parametrize("mode", ["REFLECT", "SYMMETRIC", "constant", "symmetric"])
def test_pad_modes_and_mirror_gradient(mode, rng):
    x = rng.standard_normal((4, 5))
    pads = [[2, 1], [3, 0]] if mode.upper() == "REFLECT" else [[3, 4], [1, 5]]
    np_mode = mode.lower()
    want = np.pad(x, pads, mode=np_mode)
    for m, f in eager_and_traced(lambda a: jf.pad(a, pads, mode)).items():
        np.testing.assert_array_equal(f(jf.constant(x)).numpy(), want, err_msg=m)
    w = rng.standard_normal(want.shape)
    xt = jf.constant(x)
    with jf.GradientTape() as tape:
        tape.watch(xt)
        loss = jf.reduce_sum(jf.pad(xt, pads, mode) * w)
    (num,) = numeric_grad(lambda a: float(np.sum(np.pad(a, pads, mode=np_mode) * w)), [x])
    np.testing.assert_allclose(tape.gradient(loss, xt).numpy(), num, rtol=1e-6, atol=1e-6)


def test_pad_errors():
    x = jf.constant(np.ones((2, 3)))
    with pytest.raises(jf.errors.InvalidArgumentError, match="paddings must be no greater"):
        jf.pad(x, [[2, 0], [0, 0]], "REFLECT")
    with pytest.raises(ValueError, match="CONSTANT"):
        jf.pad(x, [[0, 0], [0, 0]], "WRAP")
    with pytest.raises(jf.errors.InvalidArgumentError, match="non-negative"):
        jf.pad(x, [[-1, 0], [0, 0]])


def test_pad_whose_size_overflows_raises():
    with pytest.raises(jf.errors.InvalidArgumentError, match="more than 2"):
        jf.pad(jf.zeros([1]), jf.constant([[2**62, 2**62]], jf.int64))


def test_roll_tile_reverse_against_numpy(rng):
    x = rng.integers(-9, 9, size=(3, 4, 2))
    np.testing.assert_array_equal(jf.roll(x, 5, 1).numpy(), np.roll(x, 5, 1))
    np.testing.assert_array_equal(jf.roll(x, [1, 2, -7], [0, 0, 2]).numpy(), np.roll(x, (1, 2, -7), (0, 0, 2)))
    np.testing.assert_array_equal(jf.tile(x, [1, 0, 3]).numpy(), np.tile(x, (1, 0, 3)))
    np.testing.assert_array_equal(jf.reverse(x, [0, -1]).numpy(), x[::-1, :, ::-1])
    with pytest.raises(jf.errors.InvalidArgumentError, match="more than once"):
        jf.reverse(x, [0, -3])


def test_unsorted_segment_sum_and_embedding_lookup(rng):
    data = rng.standard_normal((5, 3))
    ids = np.array([3, 0, 3, 1, 0])
    want = np.zeros((4, 3))
    np.add.at(want, ids, data)
    np.testing.assert_allclose(jf.math.unsorted_segment_sum(data, ids, 4).numpy(), want)
    with pytest.raises(jf.errors.InvalidArgumentError, match="segment_ids"):
        jf.math.unsorted_segment_sum(data, np.array([0, 1, 2, 3, 4]), 4)
    table = rng.standard_normal((10, 4)).astype(np.float32)
    np.testing.assert_array_equal(jf.nn.embedding_lookup(table, [[1, 9], [0, 1]]).numpy(), table[[[1, 9], [0, 1]]])


def test_compositions_against_numpy():
    np.testing.assert_array_equal(jf.eye(3).numpy(), np.eye(3, dtype=np.float32))
    np.testing.assert_array_equal(jf.eye(2, 4, batch_shape=[3], dtype=jf.int32).numpy(),
                                  np.broadcast_to(np.eye(2, 4, dtype=np.int32), (3, 2, 4)))
    np.testing.assert_array_equal(jf.sequence_mask([1, 3, 0], 4).numpy(), np.arange(4) < np.array([1, 3, 0])[:, None])
    np.testing.assert_array_equal(jf.sequence_mask([[2], [0]]).numpy(), np.arange(2) < np.array([[2], [0]])[..., None])
    x = np.zeros((2, 3, 4))
    assert jf.size(x).numpy() == 24 and jf.size(x).dtype == jf.int32
    assert [s.numpy().tolist() for s in jf.shape_n([x, x[0]])] == [[2, 3, 4], [3, 4]]
    parts = jf.unstack(np.arange(6).reshape(2, 3), axis=1)
    assert [p.numpy().tolist() for p in parts] == [[0, 3], [1, 4], [2, 5]]
    for indexing in ("xy", "ij"):
        got = jf.meshgrid(np.arange(3), np.arange(4), np.arange(2), indexing=indexing)
        for g, w in zip(got, np.meshgrid(np.arange(3), np.arange(4), np.arange(2), indexing=indexing)):
            np.testing.assert_array_equal(g.numpy(), w)
    np.testing.assert_allclose(jf.linspace(-1.0, 2.0, 7).numpy(), np.linspace(-1.0, 2.0, 7), rtol=1e-6)
    np.testing.assert_allclose(jf.linspace([0.0, 1.0], [1.0, 3.0], 3, axis=1).numpy(),
                               np.linspace([0.0, 1.0], [1.0, 3.0], 3, axis=1), rtol=1e-6)
    assert jf.linspace(0.0, 1.0, 4).numpy()[-1] == 1.0


@pytest.mark.parametrize("mode", ["jit_scope", "jit_compile", "none_signature"])
def test_compiled_gather_checks_its_indices(mode, rng):
    """Compiled gathers raise eager's error for an index out of range (XLA would clamp)."""
    def body(p, i):
        if mode == "jit_scope":
            with jf.jit_scope():
                return jf.gather(p * 2.0, i, axis=1) + 1.0
        return jf.gather(p * 2.0, i, axis=1) + 1.0
    kw = {"jit_compile": True} if mode != "jit_scope" else {}
    if mode == "none_signature":
        kw["input_signature"] = [jf.TensorSpec([None, None]), jf.TensorSpec([None], jf.int32)]
    f = jf.function(body, **kw)
    p = rng.standard_normal((3, 4)).astype(np.float32)
    before = jf.debugging.stats()["cluster_runs"]
    np.testing.assert_allclose(f(p, np.array([3, 0], np.int32)).numpy(), p[:, [3, 0]] * 2 + 1, rtol=1e-6)
    assert jf.debugging.stats()["cluster_runs"] > before
    for bad in (4, -1):
        with pytest.raises(jf.errors.InvalidArgumentError, match=r"GatherV2: indices are not in .*compiled in"):
            f(p, np.array([0, bad], np.int32))


def test_an_index_map_chain_fuses_into_one_compiled_cluster(rng):
    """Reverse, tile, pad, roll and a gather feed elementwise ops inside one cluster."""
    def body(x, i):
        with jf.jit_scope():
            y = jf.tile(jf.reverse(x, [0]), [1, 2]) * 3.0
            y = jf.roll(jf.pad(y, [[1, 1], [0, 2]], constant_values=-1.0), 2, 1)
            return jf.gather(jf.pad(y, [[0, 0], [1, 1]], "SYMMETRIC"), i) + jf.one_hot(i, 8, dtype=jf.float64)[:, :1]
    f = jf.function(body)
    x = rng.standard_normal((3, 4))
    i = np.array([4, 0, 2])
    y = np.tile(x[::-1], (1, 2)) * 3.0
    y = np.roll(np.pad(y, ((1, 1), (0, 2)), constant_values=-1.0), 2, 1)
    want = np.pad(y, ((0, 0), (1, 1)), mode="symmetric")[i] + (np.arange(8) == i[:, None])[:, :1]
    before = jf.debugging.stats()["cluster_runs"]
    np.testing.assert_allclose(f(x, i).numpy(), want, rtol=1e-12)
    assert jf.debugging.stats()["cluster_runs"] == before + 1
    assert len(f.get_concrete_function(x, i).clusters) == 1


@pytest.mark.parametrize("mode", ["jit_scope", "jit_compile", "none_signature"])
def test_slices_with_run_time_bounds_compile(mode, rng):
    """x[i], x[i:], x[:, i], x[::i], x[-i:, :i] with a traced i run compiled code (XLA compiles
    dynamic slices): the runner computes the bounds (i + 1, ...) before the kernels, and a new
    value of i recomputes them."""
    x = rng.standard_normal((4, 5))
    keys = {"x[i]": lambda a, i: a[i], "x[i:]": lambda a, i: a[i:], "x[:, i]": lambda a, i: a[:, i],
            "x[::i]": lambda a, i: a[::i], "x[-i:, :i]": lambda a, i: a[-i:, :i]}
    for name, key in keys.items():
        def body(a, i, key=key):
            if mode == "jit_scope":
                with jf.jit_scope():
                    return key(a, i) * 2.0 + 1.0
            return key(a, i) * 2.0 + 1.0
        kw = {} if mode == "jit_scope" else {"jit_compile": True}
        if mode == "none_signature":
            kw["input_signature"] = [jf.TensorSpec([None, None], jf.float64), jf.TensorSpec([], jf.int32)]
        f = jf.function(body, **kw)
        for i in ([1, 3, 2] if name == "x[::i]" else [1, 3, -1, 2]):
            before = jf.debugging.stats()["cluster_runs"]
            got = f(x, jf.constant(i)).numpy()
            assert jf.debugging.stats()["cluster_runs"] == before + 1, (name, i)
            np.testing.assert_allclose(got, eval(name, {"x": x, "i": i}) * 2.0 + 1.0, rtol=1e-12, err_msg=name)


# The compositions (Python functions built from op records) in every mode, against numpy.
COMPOSITIONS = {
    "eye": (lambda x: jf.eye(3, 4, dtype=jf.float64) * x[0, 0], lambda x: np.eye(3, 4) * x[0, 0]),
    "sequence_mask": (lambda x: jf.cast(jf.sequence_mask(jf.cast(x[:, 0] * 0.0 + 2.0, jf.int32), 4), jf.float64) * x,
                      lambda x: (np.arange(4) < 2)[None, :] * x),
    "size": (lambda x: jf.cast(jf.size(x), jf.float64) * x, lambda x: x.size * x),
    "unstack": (lambda x: jf.stack(jf.unstack(x, axis=1)[::-1], axis=1), lambda x: x[:, ::-1]),
    "meshgrid": (lambda x: jf.meshgrid(x[0], x[:, 0])[0] + jf.meshgrid(x[0], x[:, 0])[1],
                 lambda x: np.add(*np.meshgrid(x[0], x[:, 0]))),
    "linspace": (lambda x: jf.cast(jf.linspace(0.0, 1.0, 4), jf.float64) * x,
                 lambda x: np.linspace(0.0, 1.0, 4).astype(np.float32) * x),
    "repeat": (lambda x: jf.repeat(x, 2, axis=1), lambda x: np.repeat(x, 2, axis=1)),
    "embedding_lookup": (lambda x: jf.nn.embedding_lookup(x, [2, 0, 2]), lambda x: x[[2, 0, 2]]),
    "boolean_mask": (lambda x: jf.boolean_mask(x, [True, False, True]), lambda x: x[[0, 2]]),
    "polyval": (lambda x: jf.math.polyval([2.0, x[0], -3.0], x), lambda x: 2.0 * x**2 + x[0] * x - 3.0),
}


@pytest.mark.parametrize("mode", ["eager", "function", "jit_scope", "jit_compile", "none_signature"])
@pytest.mark.parametrize("name", sorted(COMPOSITIONS))
def test_compositions_in_every_mode(name, mode, rng):
    fn, ref = COMPOSITIONS[name]
    x = rng.standard_normal((3, 4))
    if mode == "eager":
        got = fn(jf.constant(x))
    else:
        def body(a):
            if mode == "jit_scope":
                with jf.jit_scope():
                    return fn(a)
            return fn(a)
        kw = {"jit_compile": True} if mode in ("jit_compile", "none_signature") else {}
        if mode == "none_signature":
            kw["input_signature"] = [jf.TensorSpec([None, None], jf.float64)]
        f = jf.function(body, **kw)
        if name == "unstack" and mode == "none_signature":  # TF: num cannot be inferred either
            with pytest.raises(ValueError, match="Cannot infer argument `num`"):
                f(jf.constant(x))
            return
        if name == "boolean_mask" and kw.get("jit_compile"):
            # Its output shape depends on the mask's values: eager only, as under TF's XLA.
            with pytest.raises(jf.errors.InvalidArgumentError, match="Where"):
                f(jf.constant(x))
            return
        before = jf.debugging.stats()["cluster_runs"]
        got = f(jf.constant(x))
        if kw.get("jit_compile"):
            assert jf.debugging.stats()["cluster_runs"] > before, "no compiled code ran"
    np.testing.assert_allclose(got.numpy(), ref(x), rtol=1e-12, atol=1e-12)
