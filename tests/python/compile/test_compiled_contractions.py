"""Contractions inside compiled clusters: matmuls and einsums whose operands are reshapes (of
inputs, of computed and transposed values), reshapes that only insert or remove 1s, constants
of one repeated value (a slice gradient's zero padding), and a causal attention block with its
gradients. Values and gradients against float64 numpy, at batched and transposed shapes and
with 0- and 1-sized dims; every case asserts that compiled code ran (cluster_runs), and the
number of loops emitted (a child's JITFLOW_DUMP) shows a reshaped operand is not copied."""

import os
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import jitflow as jf


def run_compiled(fn, *args):
    """fn(*args) under jit_compile=True, asserting compiled code ran; numpy results."""
    before = jf.debugging.stats()["cluster_runs"]
    out = jf.function(fn, jit_compile=True)(*[jf.constant(a) for a in args])
    assert jf.debugging.stats()["cluster_runs"] > before, "no compiled code ran"
    return [o.numpy() for o in (out if isinstance(out, (list, tuple)) else [out])]


def close(got, want, dtype):
    tol = 1e-4 if dtype == np.float32 else 1e-11
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * max(1.0, float(np.abs(want).max(initial=0))))


DTYPES = [np.float32, np.float64]
# (batch, rows, inner, cols): 0- and 1-sized dims included.
SHAPES = [(2, 5, 6, 3), (1, 1, 4, 1), (3, 0, 4, 2), (2, 4, 0, 3), (0, 3, 2, 2), (4, 17, 33, 9)]


@pytest.mark.parametrize("dtype", DTYPES, ids=["float32", "float64"])
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_matmul_of_reshaped_input_and_computed_value(shape, dtype, rng):
    b, m, k, n = shape
    x = rng.standard_normal((b, m, k)).astype(dtype)
    w = rng.standard_normal((k, n)).astype(dtype)

    def f(x, w):
        flat = jf.reshape(x, [b * m, k])  # a reshape of an input
        y = jf.matmul(flat, w)
        t = jf.reshape(jf.transpose(x * 2.0, [1, 0, 2]), [m * b, k])  # of a computed, transposed value
        z = jf.matmul(t, jf.reshape(w * w, [k, n]), transpose_b=False)
        return y * 3.0, z

    y, z = run_compiled(f, x, w)
    x64, w64 = x.astype(np.float64), w.astype(np.float64)
    close(y, x64.reshape(b * m, k) @ w64 * 3.0, dtype)
    close(z, (2 * x64).transpose(1, 0, 2).reshape(m * b, k) @ (w64 * w64), dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=["float32", "float64"])
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_batched_matmul_of_reshapes_with_adjoints(shape, dtype, rng):
    b, m, k, n = shape
    a = rng.standard_normal((b * k * m,)).astype(dtype)
    c = rng.standard_normal((b, n * k)).astype(dtype)

    def f(a, c):
        aa = jf.reshape(a, [b, k, m])  # used transposed: adj_x
        cc = jf.reshape(c, [b, n, k])  # used transposed: adj_y
        return jf.matmul(aa, cc, adjoint_a=True, adjoint_b=True)

    (got,) = run_compiled(f, a, c)
    want = np.swapaxes(a.astype(np.float64).reshape(b, k, m), 1, 2) @ np.swapaxes(
        c.astype(np.float64).reshape(b, n, k), 1, 2
    )
    close(got, want, dtype)


EINSUMS = [
    ("btm,mchd->cbthd", [(2, 5, 6), (6, 3, 2, 4)]),
    ("bqhd,bkhd->bhqk", [(2, 5, 3, 4), (2, 7, 3, 4)]),
    ("bhqk,bkhd->bqhd", [(2, 3, 5, 7), (2, 7, 3, 4)]),
    ("bqhd,hdm->bqm", [(2, 5, 3, 4), (3, 4, 6)]),
    ("bqhd,bkhd->bhqk", [(1, 1, 1, 1), (1, 1, 1, 1)]),
    ("bqhd,bkhd->bhqk", [(2, 0, 3, 4), (2, 5, 3, 4)]),
    ("bqhd,hdm->bqm", [(2, 5, 3, 0), (3, 0, 6)]),
]


@pytest.mark.parametrize("eq,shapes", EINSUMS, ids=[f"{e}{s}" for e, s in EINSUMS])
def test_compiled_einsum_and_its_gradients(eq, shapes, rng):
    xs = [rng.standard_normal(s) for s in shapes]
    out_shape = np.einsum(eq, *xs).shape
    g = rng.standard_normal(out_shape)

    def f(a, b, g):
        with jf.GradientTape() as tape:
            tape.watch([a, b])
            y = jf.einsum(eq, a, b)
            loss = jf.reduce_sum(y * g)
        da, db = tape.gradient(loss, [a, b])
        return y, da, db

    y, da, db = run_compiled(f, *xs, g)
    a, b = xs
    close(y, np.einsum(eq, a, b), np.float64)
    ins, out = eq.split("->")
    sa, sb = ins.split(",")
    # d loss / d a = einsum(g, b -> a's subscripts), and likewise for b (each index of a is in
    # the output or in b: no summed-away index of one operand alone).
    close(da, np.einsum(f"{out},{sb}->{sa}", g, b), np.float64)
    close(db, np.einsum(f"{out},{sa}->{sb}", g, a), np.float64)


@pytest.mark.parametrize(
    "shape,target",
    [
        ((4, 6), (1, 4, 6, 1)),
        ((1, 5, 1, 3), (5, 3)),
        ((3, 1, 2), (1, 3, 2, 1)),
        ((0, 4), (1, 0, 4)),
        ((2, 3), (3, 2)),
        ((6, 4), (4, 1, 6)),
    ],
)
def test_reshapes_that_insert_or_remove_ones_fused(shape, target, rng):
    x = rng.standard_normal(shape).astype(np.float32)
    y = rng.standard_normal(target).astype(np.float32)

    def f(x, y):
        return jf.exp(jf.reshape(x * 2.0, target)) + y

    (got,) = run_compiled(f, x, y)
    close(got, np.exp(2.0 * x.astype(np.float64)).reshape(target) + y, np.float32)


@pytest.mark.parametrize("value", [0.0, -0.0, 2.5, float("nan")])
def test_constants_of_one_repeated_value(value, rng):
    x = rng.standard_normal((8, 16)).astype(np.float32)
    c = np.full((8, 16), value, np.float32)
    ints = np.full((8, 16), 7, np.int32)
    mixed = np.arange(8 * 16, dtype=np.float32).reshape(8, 16)  # not one value: read as a buffer

    def f(x):
        z = x * jf.constant(c)
        return z, 1.0 / z, jf.cast(x, jf.int32) + jf.constant(ints), x + jf.constant(mixed)

    z, inv, i, m = run_compiled(f, x)
    with np.errstate(divide="ignore", invalid="ignore"):
        want = (x.astype(np.float64) * np.float64(value)).astype(np.float32)  # one rounding
        np.testing.assert_array_equal(z, want)
        np.testing.assert_array_equal(np.signbit(z), np.signbit(want))  # -0.0 stays -0.0
        np.testing.assert_allclose(inv, 1.0 / want.astype(np.float64), rtol=1e-6)  # +-inf at zeros
    np.testing.assert_array_equal(i, x.astype(np.int32) + 7)
    np.testing.assert_array_equal(m, x + mixed)


def _numpy_attention(x, wqkv, wo):
    """Loss and the gradients of wqkv and wo of the attention block, float64, by hand."""
    qkv = np.einsum("btm,mchd->cbthd", x, wqkv)
    q, k, v = qkv
    scale = 1.0 / np.sqrt(q.shape[-1])
    s = np.einsum("bqhd,bkhd->bhqk", q, k) * scale
    t = s.shape[-1]
    mask = np.tril(np.ones((t, t)))
    s = s * mask + (1.0 - mask) * -1e9
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    o = np.einsum("bhqk,bkhd->bqhd", p, v)
    out = np.einsum("bqhd,hdm->bqm", o, wo)
    loss = np.mean((out - x) ** 2)
    dout = 2.0 * (out - x) / out.size
    dwo = np.einsum("bqhd,bqm->hdm", o, dout)
    do = np.einsum("bqm,hdm->bqhd", dout, wo)
    dp = np.einsum("bqhd,bkhd->bhqk", do, v)
    dv = np.einsum("bhqk,bqhd->bkhd", p, do)
    ds = p * (dp - (dp * p).sum(-1, keepdims=True)) * mask * scale
    dq = np.einsum("bhqk,bkhd->bqhd", ds, k)
    dk = np.einsum("bhqk,bqhd->bkhd", ds, q)
    dwqkv = np.einsum("btm,cbthd->mchd", x, np.stack([dq, dk, dv]))
    return loss, dwqkv, dwo


@pytest.mark.parametrize("b,t,h,d", [(2, 8, 2, 4), (1, 1, 1, 1), (3, 5, 1, 8), (2, 16, 4, 8)])
def test_causal_attention_block_and_gradients(b, t, h, d, rng):
    m = h * d
    x = rng.standard_normal((b, t, m)).astype(np.float32)
    wqkv = (rng.standard_normal((m, 3, h, d)) / np.sqrt(m)).astype(np.float32)
    wo = (rng.standard_normal((h, d, m)) / np.sqrt(m)).astype(np.float32)

    def step(x, wqkv, wo):
        with jf.GradientTape() as tape:
            tape.watch([wqkv, wo])
            qkv = jf.einsum("btm,mchd->cbthd", x, wqkv)
            q, k, v = qkv[0], qkv[1], qkv[2]
            scores = jf.einsum("bqhd,bkhd->bhqk", q, k) * (1.0 / float(np.sqrt(d)))
            causal = jf.linalg.band_part(jf.ones_like(scores), -1, 0)
            scores = scores * causal + (1.0 - causal) * -1e9
            p = jf.nn.softmax(scores, axis=-1)
            out = jf.einsum("bqhd,hdm->bqm", jf.einsum("bhqk,bkhd->bqhd", p, v), wo)
            loss = jf.reduce_mean(jf.square(out - x))
        gq, go = tape.gradient(loss, [wqkv, wo])
        return loss, gq, go

    loss, gq, go = run_compiled(step, x, wqkv, wo)
    want = _numpy_attention(*(a.astype(np.float64) for a in (x, wqkv, wo)))
    np.testing.assert_allclose(loss, want[0], rtol=1e-5)
    for got, w in zip((gq, go), want[1:]):
        np.testing.assert_allclose(got, w, rtol=2e-3, atol=2e-4 * np.abs(w).max())


def loop_kernels(ir):
    """The loop kernels a dumped module defines, leaving out small matmuls' code (functions
    named <prefix>_dot_<dtype>, and each such step's entry calling one)."""
    return sum("_dot_" not in f for f in re.split(r"^define ", ir, flags=re.MULTILINE)[1:])


def test_a_reshaped_operand_is_not_copied(tmp_path):
    # Loops emitted for matmul(reshape(x), w) * 2: the product's scale only. The reshape of the
    # input (and of the transposed, scaled value) reaches the matmul as a view of its buffer.
    script = textwrap.dedent(f"""
        import os, numpy as np, jitflow as jf
        def plain(x, w):
            return jf.matmul(jf.reshape(x, [-1, 6]), w) * 2.0
        def transposed(x, w):
            return jf.matmul(jf.reshape(jf.transpose(x * 3.0, [1, 0, 2]), [-1, 6]), w) * 2.0
        x, w = np.ones((4, 5, 6), np.float32), np.ones((6, 7), np.float32)
        for f in (plain, transposed):
            os.environ["JITFLOW_DUMP"] = os.path.join({str(tmp_path)!r}, f.__name__)
            os.mkdir(os.environ["JITFLOW_DUMP"])
            before = jf.debugging.stats()["cluster_runs"]
            y = jf.function(f, jit_compile=True)(x, w).numpy()
            assert jf.debugging.stats()["cluster_runs"] == before + 1
            assert np.allclose(y, 2.0 * (3.0 if f is transposed else 1.0) * 6.0)
    """)
    env = dict(os.environ, JITFLOW_CACHE_DIR="off")
    subprocess.run([sys.executable, "-c", script], env=env, check=True, capture_output=True)
    loops = {}
    for name in ("plain", "transposed"):
        (ll,) = (tmp_path / name).glob("*.before_opt.ll")
        loops[name] = loop_kernels(ll.read_text())
    # plain: the scale; transposed: the scaled transpose (its own rows, no reshape) and the scale.
    assert loops == {"plain": 1, "transposed": 2}


def test_a_specialization_does_not_pair_dims_from_one_runs_shapes(rng):
    # y's dims are unknown when traced; y of ones at run time broadcasts, which runs a
    # specialization lowered from that run's shapes. There [1, 2, 6] -> [2, 6] only drops a 1,
    # but the same specialization serves x of [1, 3, 4], where it does not: it may not pair
    # dims from one run's shapes.
    spec = jf.TensorSpec([None, None, None], jf.float32)

    @jf.function(input_signature=[spec, spec], jit_compile=True)
    def f(x, y):
        return jf.exp(jf.reshape(x * y, [2, 6]))

    before = jf.debugging.stats()
    for shape in [(1, 2, 6), (1, 3, 4), (1, 2, 6), (1, 12, 1)]:
        x = rng.standard_normal(shape).astype(np.float32)
        y = np.full((1, 1, 1), 2.0, np.float32)
        close(f(x, y).numpy(), np.exp(2.0 * x.astype(np.float64)).reshape(2, 6), np.float32)
    after = jf.debugging.stats()
    assert after["cluster_runs"] >= before["cluster_runs"] + 4
    assert after["specializations"] > before["specializations"]


def test_a_matmul_reads_a_constant_of_one_value_as_its_buffer(tmp_path):
    # The broadcast scalar would be written out into a buffer every run: the matmul reads the
    # constant's own buffer instead, so the only loop emitted is the scale.
    script = textwrap.dedent(f"""
        import os, numpy as np, jitflow as jf
        os.environ["JITFLOW_DUMP"] = {str(tmp_path)!r}
        def f(x):
            return jf.matmul(x, jf.constant(np.full((6, 7), 0.5, np.float32))) * 2.0
        y = jf.function(f, jit_compile=True)(np.ones((4, 6), np.float32)).numpy()
        assert np.allclose(y, 6.0)
    """)
    env = dict(os.environ, JITFLOW_CACHE_DIR="off")
    subprocess.run([sys.executable, "-c", script], env=env, check=True, capture_output=True)
    (ll,) = tmp_path.glob("*.before_opt.ll")
    assert loop_kernels(ll.read_text()) == 1
