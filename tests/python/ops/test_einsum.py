"""jf.einsum and jf.tensordot against float64 np.einsum / np.tensordot in the five modes (the
compiled ones asserting compiled code ran), every dtype einsum claims, empty dims, gradients by
finite differences, and TF 2.21's errors for bad equations and shapes."""

import numpy as np
import pytest
from conftest import numeric_grad, run_mode

import jitflow as jf

MODES = ["eager", "function", "signature", "jit_scope", "jit_compile"]

EQUATIONS = [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("ij,jk", [(2, 3), (3, 4)]),  # implicit output: labels used once, sorted
    ("ii->i", [(3, 3)]),  # a diagonal
    ("ii", [(3, 3)]),  # the trace
    ("iij->ji", [(3, 3, 2)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("...ij,...jk->...ik", [(2, 1, 2, 3), (5, 3, 4)]),  # broadcast batch dims
    ("ba,...", [(2, 3), (4,)]),
    ("i,i,i->", [(3,), (3,), (3,)]),
    ("ijk,kl,lm->im", [(2, 3, 4), (4, 5), (5, 2)]),
    ("ij->", [(2, 3)]),
    ("ij->ji", [(2, 3)]),
    ("bhqd,bhkd->bhqk", [(2, 3, 4, 5), (2, 3, 6, 5)]),
    ("i,j->ij", [(3,), (4,)]),
    ("ij,ij->ij", [(2, 3), (2, 3)]),
    ("abc,cd->", [(0, 2, 3), (3, 2)]),  # an empty dim
    ("ij,jk->ik", [(2, 0), (0, 4)]),  # an empty contraction: zeros
    ("ij,jk->ik", [(1, 1), (1, 1)]),
    ("ij,kj->ik", [(2, 3), (4, 3)]),  # read transposed by the matmul, not transposed first
    ("bji,bjk->bik", [(2, 3, 4), (2, 3, 5)]),
    # attention's contractions: operands transposed with their last label kept last
    ("bqhd,bkhd->bhqk", [(2, 5, 3, 4), (2, 7, 3, 4)]),
    ("bhqk,bkhd->bqhd", [(2, 3, 5, 7), (2, 7, 3, 4)]),
    ("btm,mchd->cbthd", [(2, 5, 6), (6, 3, 2, 4)]),
    ("bqhd,hdm->bqm", [(2, 5, 3, 4), (3, 4, 6)]),
    ("kib,jk->bij", [(3, 4, 2), (5, 3)]),
    ("dbq,bkd->bqk", [(4, 2, 3), (2, 5, 4)]),  # a transposed to [b, d, q], read transposed
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("eq,shapes", EQUATIONS, ids=[e + str(i) for i, (e, _) in enumerate(EQUATIONS)])
def test_einsum_matches_numpy(eq, shapes, mode, rng):
    xs = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    want = np.einsum(eq, *[x.astype(np.float64) for x in xs])
    got = run_mode(mode, lambda *a: jf.einsum(eq, *a), *[jf.constant(x) for x in xs])
    assert got.dtype == jf.float32 and tuple(got.shape) == want.shape
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-5)


def test_einsum_transposes_keep_each_operands_last_axis():
    # bqhd,bkhd->bhqk: k goes to [b, h, k, d] and the product reads it transposed (adj_y),
    # rather than to [b, h, d, k]; every transpose moves whole rows of the last axis.
    f = jf.function(lambda a, b: jf.einsum("bqhd,bkhd->bhqk", a, b), autograph=False)
    ops = f.get_concrete_function(
        jf.TensorSpec([2, 5, 3, 4]), jf.TensorSpec([2, 7, 3, 4])
    ).graph.get_operations()
    (mm,) = [op for op in ops if op.type == "BatchMatMulV2"]
    assert (mm.get_attr("adj_x"), mm.get_attr("adj_y")) == (False, True)
    shapes = sorted(tuple(op.outputs[0].shape) for op in ops if op.type == "Transpose")
    assert shapes == [(2, 3, 5, 4), (2, 3, 7, 4)]


@pytest.mark.parametrize("dtype", [np.float64, np.int32, np.int64])
def test_einsum_dtypes(dtype, rng):
    a = rng.integers(-5, 5, (2, 3, 4)).astype(dtype)
    b = rng.integers(-5, 5, (2, 4, 3)).astype(dtype)
    want = np.einsum("bij,bjk->bik", a.astype(np.float64), b.astype(np.float64))
    for mode in ("eager", "jit_compile"):
        got = run_mode(mode, lambda x, y: jf.einsum("bij,bjk->bik", x, y), jf.constant(a), jf.constant(b))
        assert got.numpy().dtype == dtype
        np.testing.assert_array_equal(got.numpy(), want.astype(dtype))


@pytest.mark.parametrize("mode", ["eager", "function", "jit_compile"])
@pytest.mark.parametrize(
    "eq,shapes",
    [
        ("ij,jk->ik", [(2, 3), (3, 2)]),
        ("iij->ji", [(2, 2, 3)]),
        ("...ij,...jk->...ik", [(2, 1, 2, 3), (2, 3, 2)]),
        ("ijk,kl,lm->im", [(2, 2, 3), (3, 2), (2, 2)]),
    ],
)
def test_einsum_gradient(eq, shapes, mode, rng):
    xs = [rng.standard_normal(s) for s in shapes]
    out_shape = np.einsum(eq, *xs).shape
    w = rng.standard_normal(out_shape)

    def fn(*args):
        with jf.GradientTape() as tape:
            for a in args:
                tape.watch(a)
            y = jf.reduce_sum(jf.einsum(eq, *args) * w)
        return tape.gradient(y, list(args))

    got = run_mode(mode, fn, *[jf.constant(x) for x in xs])
    want = numeric_grad(lambda *a: float(np.sum(np.einsum(eq, *a) * w)), xs)
    for g, n in zip(got, want):
        np.testing.assert_allclose(g.numpy(), n, rtol=1e-6, atol=1e-6)


def test_einsum_errors():
    x = jf.ones([2, 3])
    with pytest.raises(ValueError, match="Subscripts have incorrect format: i1"):
        jf.einsum("i1", x)
    with pytest.raises(ValueError, match='Got 1 inputs for equation "ij,jk->ik", expecting 2'):
        jf.einsum("ij,jk->ik", x)
    with pytest.raises(ValueError, match="Output subscripts contain a label appearing more than once"):
        jf.einsum("ij->ii", x)
    with pytest.raises(ValueError, match="Output subscripts contain the label k not present"):
        jf.einsum("ij->k", x)
    with pytest.raises(jf.errors.InvalidArgumentError, match="Expected input 0 to have rank 2 but got: 3"):
        jf.einsum("ij", jf.ones([2, 3, 4]))
    with pytest.raises(
        jf.errors.InvalidArgumentError, match="Expected dimension 3 at axis 0 of the input shaped"
    ):
        jf.einsum("ij,jk", x, jf.ones([4, 4]))
    with pytest.raises(jf.errors.InvalidArgumentError, match="1 broadcasting dimension"):
        jf.einsum("...i->i", x)
    with pytest.raises(TypeError):
        jf.einsum("ij->ij", jf.constant([[True]]))


@pytest.mark.parametrize("mode", ["eager", "signature", "jit_compile"])
@pytest.mark.parametrize(
    "axes,sa,sb",
    [
        (1, (2, 3), (3, 4)),
        (0, (2,), (3,)),
        (2, (2, 3, 4), (3, 4, 2)),
        ([[0, 2], [2, 0]], (2, 3, 4), (4, 5, 2)),
        ([[-1], [0]], (2, 3), (3,)),
    ],
)
def test_tensordot(axes, sa, sb, mode, rng):
    a, b = rng.standard_normal(sa).astype(np.float32), rng.standard_normal(sb).astype(np.float32)
    want = np.tensordot(a.astype(np.float64), b.astype(np.float64), axes)
    got = run_mode(mode, lambda x, y: jf.tensordot(x, y, axes), jf.constant(a), jf.constant(b))
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-5)


def test_tensordot_errors():
    x = jf.ones([2, 3])
    with pytest.raises(ValueError, match="must not be larger than the number of dimensions"):
        jf.tensordot(x, x, 3)
    with pytest.raises(ValueError, match="Different number of contraction axes `a` and `b`, 1 != 2"):
        jf.tensordot(x, x, [[0], [0, 1]])
