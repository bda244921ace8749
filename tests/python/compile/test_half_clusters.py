"""Compiled clusters on float16 and bfloat16: loads widen to float32, the fused work runs in
float32 and stores round to nearest even (XLA CPU's rule), while eager kernels round after every
op. Conversions are checked bit for bit against numpy/ml_dtypes; fused chains, reductions and
matmuls against float64 numpy at the half type's tolerance in the five modes."""

import ml_dtypes
import numpy as np
import pytest

import jitflow as jf

HALVES = {
    "float16": (jf.float16, np.dtype(np.float16)),
    "bfloat16": (jf.bfloat16, np.dtype(ml_dtypes.bfloat16)),
}
# One unit in the last place (float16: 2**-10, bfloat16: 2**-7) and a little more for the
# float32 transcendental approximations and the reference's own rounding of inputs.
TOL = {"float16": 2e-3, "bfloat16": 1.6e-2}
MODES = ["eager", "function", "jit_scope", "jit_compile", "none_signature"]
# numpy warns on the overflowing and NaN inputs the rounding tests feed on purpose
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def runs():
    return jf.debugging.stats()["cluster_runs"]


def call(fn, mode, *xs):
    """fn on the tensors xs in `mode`; asserts compiled code ran in the compiled modes."""
    ts = [jf.constant(x) for x in xs]
    if mode == "eager":
        return fn(*ts)
    body = fn
    if mode == "jit_scope":

        def body(*a):
            with jf.jit_scope():
                return fn(*a)

    kw = {}
    if mode in ("jit_compile", "none_signature"):
        kw["jit_compile"] = True
    if mode == "none_signature":
        kw["input_signature"] = [jf.TensorSpec([None] * x.ndim, getattr(jf, x.dtype.name)) for x in xs]
    before = runs()
    out = jf.function(body, **kw)(*ts)
    if mode != "function":
        assert runs() > before, f"{mode}: no compiled code ran"
    return out


def bits(a):
    return np.asarray(a).view(np.uint16)


def same_halves(got, want):
    """Bit-equal, except that any NaN matches any NaN (payloads are not TF's contract)."""
    g, w = np.asarray(got), np.asarray(want)
    assert g.dtype == w.dtype and g.shape == w.shape
    nan = np.isnan(w.astype(np.float32))
    np.testing.assert_array_equal(np.isnan(g.astype(np.float32)), nan)
    np.testing.assert_array_equal(bits(g)[~nan], bits(w)[~nan])


@pytest.mark.parametrize("name", HALVES)
def test_every_half_value_widens_exactly(name):
    _dt, npdt = HALVES[name]
    x = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(npdt)
    f = jf.function(lambda a: jf.cast(a, jf.float32), jit_compile=True)
    before = runs()
    got = f(jf.constant(x)).numpy()
    assert runs() == before + 1
    want = x.astype(np.float32)
    nan = np.isnan(want)
    np.testing.assert_array_equal(np.isnan(got), nan)
    np.testing.assert_array_equal(got[~nan].view(np.uint32), want[~nan].view(np.uint32))


def narrowing_inputs(rng):
    """float32 values over the whole range: random bit patterns, every half value and the
    midpoints between neighbours (the ties), the overflow edge and the subnormals."""
    rand = rng.integers(0, 1 << 32, 200000, dtype=np.uint64).astype(np.uint32).view(np.float32)
    halves = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(np.float16).astype(np.float32)
    bf = (np.arange(1 << 16, dtype=np.uint32) << 16).view(np.float32)
    mids = []
    for h in (halves, bf):
        h = np.sort(h[np.isfinite(h)])
        mids.append((h[:-1].astype(np.float64) + h[1:]) / 2)
    edges = np.array(
        [
            65504,
            65519.99,
            65520,
            65536,
            6.1e-5,
            6e-8,
            2.9e-8,
            3e-8,
            1e-40,
            -0.0,
            np.inf,
            -np.inf,
            np.nan,
            3.4e38,
        ],
        np.float64,
    )
    return np.concatenate([rand, halves, bf, *[m.astype(np.float32) for m in mids], edges.astype(np.float32)])


@pytest.mark.parametrize("name", HALVES)
def test_float32_rounds_to_nearest_even_as_numpy(name, rng):
    dt, npdt = HALVES[name]
    x = narrowing_inputs(rng)
    got = jf.function(lambda a: jf.cast(a, dt), jit_compile=True)(jf.constant(x)).numpy()
    same_halves(got, x.astype(npdt))
    same_halves(got, jf.cast(jf.constant(x), dt).numpy())  # the eager kernel rounds alike


@pytest.mark.parametrize("name", HALVES)
@pytest.mark.parametrize("src", ["float64", "int32", "int64", "bool", "other_half"])
def test_casts_into_and_out_of_half_types_match_eager(name, src, rng):
    """float64 and integers go through float32 (TF's rule: float64 rounds twice); the reverse
    casts from half values; compiled equals eager bit for bit."""
    dt, npdt = HALVES[name]
    if src == "float64":
        x = np.concatenate(
            [
                rng.standard_normal(5000) * 10.0 ** rng.integers(-8, 6, 5000),
                [1 + 2**-11 + 2**-40, 65519.999999, np.nan, -np.inf],
            ]
        )
        want = x.astype(np.float32).astype(npdt)
    elif src in ("int32", "int64"):
        x = rng.integers(-300000, 300000, 5000).astype(src)
        want = x.astype(np.float32).astype(npdt)
    elif src == "bool":
        x = rng.integers(0, 2, 50).astype(bool)
        want = x.astype(npdt)
    else:
        other = HALVES["bfloat16" if name == "float16" else "float16"][1]
        x = (rng.standard_normal(5000) * 100).astype(other)
        want = x.astype(np.float32).astype(npdt)
    f = jf.function(lambda a: jf.cast(a, dt), jit_compile=True)
    got = f(jf.constant(x)).numpy()
    same_halves(got, want)
    same_halves(got, jf.cast(jf.constant(x), dt).numpy())
    if src in ("int32", "bool"):  # and back out of the half type
        back = jf.function(lambda a: jf.cast(a, getattr(jf, src)), jit_compile=True)(jf.constant(got)).numpy()
        np.testing.assert_array_equal(back, jf.cast(jf.constant(got), getattr(jf, src)).numpy())


@pytest.mark.parametrize("name", HALVES)
def test_a_fused_chain_rounds_once_on_store_and_eager_after_every_op(name, rng):
    """(x * 3 + 1) * x: compiled, the float32 value rounded once; eager, each op's result
    rounded (TF's eager kernels). Both exactly, from numpy float32 arithmetic."""
    _dt, npdt = HALVES[name]
    x = (rng.standard_normal(4096) * 4).astype(npdt)
    w = x.astype(np.float32)
    once = ((w * np.float32(3) + np.float32(1)) * w).astype(npdt)
    r = lambda v: v.astype(npdt).astype(np.float32)
    each = r(r(r(w * np.float32(3)) + np.float32(1)) * w).astype(npdt)
    assert (bits(once) != bits(each)).any()  # the two rules differ on these inputs
    fn = lambda a: (a * 3 + 1) * a
    same_halves(call(fn, "jit_compile", x).numpy(), once)
    same_halves(call(fn, "eager", x).numpy(), each)


def chain(a, b):
    y = jf.tanh(a * b + 0.5) + jf.sigmoid(a) - jf.exp(b * 0.25)
    z = jf.maximum(y, -1.0) * jf.sqrt(jf.abs(a) + 1.0) / (jf.square(b) + 1.0)
    return jf.nn.relu(z) - jf.rsqrt(jf.abs(b) + 2.0) + jf.math.log(jf.abs(a) + 1.0), jf.less(a, b)


def chain_ref(a, b):
    y = np.tanh(a * b + 0.5) + 1 / (1 + np.exp(-a)) - np.exp(b * 0.25)
    z = np.maximum(y, -1.0) * np.sqrt(np.abs(a) + 1.0) / (b * b + 1.0)
    return np.maximum(z, 0) - 1 / np.sqrt(np.abs(b) + 2.0) + np.log(np.abs(a) + 1.0), a < b


SHAPES = [(64, 33), (1, 1), (0, 5), (3, 0), (7,)]


@pytest.mark.parametrize("name", HALVES)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("shape", SHAPES)
def test_elementwise_chain_in_five_modes(name, mode, shape, rng):
    dt, npdt = HALVES[name]
    a = rng.uniform(-3, 3, shape).astype(npdt)
    b = rng.uniform(-3, 3, shape).astype(npdt)
    if mode == "jit_scope" and 0 in shape:  # nothing to compute: no cluster runs
        return
    got, less = call(chain, mode, a, b)
    want, want_less = chain_ref(a.astype(np.float64), b.astype(np.float64))
    assert got.dtype == dt and got.shape == shape
    # eager rounds after each of ~15 ops: a few units in the last place more than compiled
    tol = TOL[name] * (1 if mode != "eager" and mode != "function" else 4)
    np.testing.assert_allclose(got.numpy().astype(np.float64), want, rtol=tol, atol=tol)
    np.testing.assert_array_equal(less.numpy(), want_less)


REDUCTIONS = {
    "sum": (jf.reduce_sum, np.sum),
    "mean": (jf.reduce_mean, np.mean),
    "max": (jf.reduce_max, np.max),
    "min": (jf.reduce_min, np.min),
    "prod": (jf.reduce_prod, np.prod),
}


@pytest.mark.parametrize("name", HALVES)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("op", REDUCTIONS)
@pytest.mark.parametrize(
    "shape,axis",
    [
        ((40, 300), 1),
        ((40, 300), 0),
        ((6, 5, 7), (0, 2)),
        ((5, 0), 1),
        ((0, 4), 0),
        ((1, 1), None),
        ((300,), None),
    ],
)
def test_reductions_accumulate_in_float32(name, mode, op, shape, axis, rng):
    dt, npdt = HALVES[name]
    lo, hi = (0.98, 1.02) if op == "prod" else (-2, 2)
    x = rng.uniform(lo, hi, shape).astype(npdt)
    if (mode == "jit_scope" and x.size == 0) or (op in ("max", "min") and x.size == 0):
        return  # no cluster / TF's empty max is -inf (checked with float32 elsewhere)
    fn = lambda a: REDUCTIONS[op][0](a * 1.0, axis=axis)
    got = call(fn, mode, x)
    wide = x.astype(np.float64)
    want = REDUCTIONS[op][1](wide, axis=axis)
    assert got.dtype == dt and got.shape == np.shape(want)
    if op in ("max", "min"):
        np.testing.assert_array_equal(got.numpy().astype(np.float64), want)
        return
    # float32 accumulation, one rounding: relative to the sum of magnitudes
    scale = np.max(np.sum(np.abs(wide), axis=axis), initial=1.0) if op == "sum" else 1.0
    np.testing.assert_allclose(got.numpy().astype(np.float64), want, rtol=TOL[name], atol=TOL[name] * scale)


@pytest.mark.parametrize("name", HALVES)
def test_a_long_sum_does_not_stall_as_a_half_running_sum_would(name):
    """4096 ones: a float16 running sum stops at 2048 (2048 + 1 rounds back), a bfloat16 one at
    256; float32 accumulation gives 4096, exactly representable in both."""
    _dt, npdt = HALVES[name]
    x = np.ones(4096, npdt)
    for mode in ("jit_compile", "jit_scope", "eager"):
        assert float(call(lambda a: jf.reduce_sum(a + 0.0), mode, x).numpy()) == 4096.0
        assert float(call(lambda a: jf.reduce_mean(a + 0.0), mode, x).numpy()) == 1.0


def softmax_by_ops(x):
    e = jf.exp(x - jf.reduce_max(x, axis=-1, keepdims=True))
    return e / jf.reduce_sum(e, axis=-1, keepdims=True)


@pytest.mark.parametrize("name", HALVES)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("shape", [(33, 257), (1, 1), (0, 8), (4, 1)])
def test_softmax_written_with_ops(name, mode, shape, rng):
    _dt, npdt = HALVES[name]
    x = (rng.standard_normal(shape) * 3).astype(npdt)
    if mode == "jit_scope" and x.size == 0:
        return
    got = call(softmax_by_ops, mode, x)
    w = x.astype(np.float64)
    e = np.exp(w - w.max(-1, keepdims=True)) if w.size else w
    want = e / e.sum(-1, keepdims=True) if w.size else w
    np.testing.assert_allclose(got.numpy().astype(np.float64), want, rtol=TOL[name], atol=TOL[name] / 4)


def _softplus(x):
    return np.logaddexp(0, x)


ACTIVATIONS = {
    "softmax": (
        jf.nn.softmax,
        lambda x: (
            np.exp(x - x.max(-1, keepdims=True)) / np.exp(x - x.max(-1, keepdims=True)).sum(-1, keepdims=True)
        ),
    ),
    "log_softmax": (
        jf.nn.log_softmax,
        lambda x: (
            x - x.max(-1, keepdims=True) - np.log(np.exp(x - x.max(-1, keepdims=True)).sum(-1, keepdims=True))
        ),
    ),
    "relu6": (jf.nn.relu6, lambda x: np.clip(x, 0, 6)),
    "elu": (jf.nn.elu, lambda x: np.where(x < 0, np.expm1(x), x)),
    "selu": (jf.nn.selu, lambda x: np.where(x < 0, 1.7580993408473768 * np.expm1(x), 1.0507009873554805 * x)),
    "softplus": (jf.nn.softplus, _softplus),
    "softsign": (jf.nn.softsign, lambda x: x / (1 + np.abs(x))),
    "leaky_relu": (jf.nn.leaky_relu, lambda x: np.where(x > 0, x, 0.2 * x)),
}


@pytest.mark.parametrize("name", HALVES)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("act", ACTIVATIONS)
@pytest.mark.parametrize("shape", [(17, 129), (1, 1), (0, 3)])
def test_softmax_and_activations(name, mode, act, shape, rng):
    """The ops themselves on half types: eager computes each in float32 and rounds its result;
    compiled, softmax becomes row reductions in float32 and the activations fuse with the
    multiply before them. Against float64 numpy (softplus: TF's half threshold, where
    softplus(x) is x, moves the result by less than the tolerance)."""
    dt, npdt = HALVES[name]
    x = (rng.standard_normal(shape) * 4).astype(npdt)
    if mode == "jit_scope" and x.size == 0:
        return
    fn, ref = ACTIVATIONS[act]
    got = call(lambda a: fn(a * 1.0), mode, x)
    assert got.dtype == dt and got.shape == shape
    want = ref(x.astype(np.float64)) if x.size else np.zeros(shape)
    scale = np.maximum(np.abs(want), 1.0) if act in ("softplus", "log_softmax") else 1.0
    np.testing.assert_allclose(
        got.numpy().astype(np.float64) / scale, want / scale, rtol=TOL[name], atol=TOL[name]
    )


@pytest.mark.parametrize("name", HALVES)
@pytest.mark.parametrize("mode", MODES)
def test_matmul_with_bias_and_relu(name, mode, rng):
    """The matmul is a library step on the half eager kernel (float32 accumulation), its
    operands and result in half memory; the bias and relu are fused around it."""
    _dt, npdt = HALVES[name]
    a = rng.uniform(-1, 1, (37, 64)).astype(npdt)
    b = rng.uniform(-1, 1, (64, 19)).astype(npdt)
    c = rng.uniform(-1, 1, (19,)).astype(npdt)
    fn = lambda x, y, z: jf.nn.relu(jf.matmul(x * 0.5, y) + z)
    got = call(fn, mode, a, b, c)
    want = np.maximum((a.astype(np.float64) * 0.5) @ b.astype(np.float64) + c.astype(np.float64), 0)
    np.testing.assert_allclose(got.numpy().astype(np.float64), want, rtol=TOL[name], atol=TOL[name] * 8)


@pytest.mark.parametrize("name", HALVES)
def test_explain_compiles_half_ops_without_a_dtype_reason(name):
    _dt, npdt = HALVES[name]

    def f(x):
        with jf.jit_scope():
            return jf.reduce_sum(jf.exp(jf.cast(x, jf.float32) * 2.0) + jf.cast(x * x, jf.float32))

    x = jf.constant(np.ones((3, 4), npdt))
    rows = jf.explain(jf.function(f), x)
    text = str(rows)
    assert {r.status for r in rows} == {"compiled"}, text
    assert "no emitter" not in text and "run eagerly" not in text, text


@pytest.mark.parametrize("name", HALVES)
def test_outputs_round_but_values_used_inside_stay_float32(name, rng):
    """y is returned (rounded) and also used by z inside the cluster, which reads it unrounded:
    z equals the float32 arithmetic rounded once."""
    _dt, npdt = HALVES[name]
    x = (rng.standard_normal(2048) * 3).astype(npdt)
    y, z = call(lambda a: (a * 1.1, a * 1.1 * 7.0), "jit_compile", x)
    w, c = x.astype(np.float32), np.float32(npdt.type(1.1))  # the constant is a half value
    same_halves(y.numpy(), (w * c).astype(npdt))
    same_halves(z.numpy(), (w * c * np.float32(7.0)).astype(npdt))


_NO_F16C_CHILD = r"""
import json, sys
import ml_dtypes, numpy as np
import jitflow as jf
from jitflow import _C
x = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(np.float16)
wide = jf.function(lambda a: jf.cast(a, jf.float32), jit_compile=True)(jf.constant(x)).numpy()
rng = np.random.default_rng(0)
f = rng.integers(0, 1 << 32, 100000, dtype=np.uint64).astype(np.uint32).view(np.float32)
f = np.concatenate([f, x.astype(np.float32)])
narrow = jf.function(lambda a: jf.cast(a, jf.float16), jit_compile=True)(jf.constant(f)).numpy()
chain = jf.function(lambda a: (a * 3 + 1) * a, jit_compile=True)(jf.constant(x[:30000])).numpy()
y = np.linspace(0.5, 3, 1000).astype(np.float16)
log = jf.function(lambda a: jf.math.log(a) * 3, jit_compile=True)(jf.constant(y)).numpy()
print(json.dumps({"target": _C.cpu_jit_target(), "wide": wide.view(np.uint32).tolist(), "log": log.tolist(),
                  "narrow": narrow.view(np.uint16).tolist(), "chain": chain.view(np.uint16).tolist()}))
"""


def test_float16_without_f16c_converts_through_the_jit_routines():
    """JITFLOW_CPU=x86-64-v2 has no F16C: LLVM calls __extendhfsf2/__truncsfhf2, which the JIT
    defines (half_routines.cc). Same bits as numpy (NaNs only as NaNs)."""
    import json
    import os
    import subprocess
    import sys

    r = subprocess.run(
        [sys.executable, "-c", _NO_F16C_CHILD],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        env={**os.environ, "JITFLOW_CPU": "x86-64-v2"},
    )
    assert r.returncode == 0, r.stderr[-3000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["target"].split("|")[1] == "x86-64-v2", out["target"]
    x = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(np.float16)
    want = x.astype(np.float32)
    got = np.array(out["wide"], np.uint32).view(np.float32)
    nan = np.isnan(want)
    np.testing.assert_array_equal(np.isnan(got), nan)
    np.testing.assert_array_equal(got[~nan].view(np.uint32), want[~nan].view(np.uint32))
    rng = np.random.default_rng(0)
    f = rng.integers(0, 1 << 32, 100000, dtype=np.uint64).astype(np.uint32).view(np.float32)
    f = np.concatenate([f, x.astype(np.float32)])
    with np.errstate(all="ignore"):
        same_halves(np.array(out["narrow"], np.uint16).view(np.float16), f.astype(np.float16))
        w = x[:30000].astype(np.float32)
        same_halves(
            np.array(out["chain"], np.uint16).view(np.float16),
            ((w * np.float32(3) + np.float32(1)) * w).astype(np.float16),
        )
    # Math calls in a loop 8 lanes wide: libmvec's SSE variants (or scalar calls), not AVX2's
    y = np.linspace(0.5, 3, 1000).astype(np.float16).astype(np.float64)
    np.testing.assert_allclose(out["log"], np.log(y) * 3, rtol=2e-3, atol=2e-3)
