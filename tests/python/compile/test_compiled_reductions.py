"""Compiled column reductions (reductions that keep the operand's innermost dim): emitted as an
interchanged loop that reads the operand row by row, split across threads in parts that may
start mid-row. Values against float64 numpy, NaN/inf propagation, fused operands and users."""
import numpy as np
import pytest

import jitflow as jf

OPS = {"sum": (jf.reduce_sum, np.sum), "mean": (jf.reduce_mean, np.mean), "max": (jf.reduce_max, np.max),
       "min": (jf.reduce_min, np.min), "prod": (jf.reduce_prod, np.prod)}
TYPES = {"sum": "Sum", "mean": "Mean", "max": "Max", "min": "Min", "prod": "Prod"}
# (shape, axis): [300,100] and [7,300,130] are large enough to be split across two threads
# mid-row; [1000,3] stays on one thread; the [5,1,9] cases reduce around and over a unit dim.
CASES = [((300, 100), 0), ((7, 300, 130), (0, 1)), ((7, 300, 130), 1), ((7, 300, 130), 0), ((5, 1, 9), 0),
         ((5, 1, 9), (0, 1)), ((5, 1, 9), 1), ((1000, 3), 0), ((1, 9), 0)]


def compiled(fn, **kwargs):
    def body(*args):
        with jf.jit_scope():
            return fn(*args)
    return jf.function(body, **kwargs)


def assert_compiled(f, *args, types):
    rows = jf.explain(f, *args)
    got = {r.type for r in rows if r.status == "compiled"}
    assert set(types) <= got, f"not compiled: {set(types) - got}\n{rows}"
    assert f.get_concrete_function(*args).clusters


def reduce_input(rng, op, shape, dtype):
    if np.dtype(dtype).kind == "i":
        return rng.integers(-50, 50, shape).astype(dtype)
    if op == "prod":  # small magnitudes: long products stay near 1
        return rng.uniform(0.98, 1.02, shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def assert_reduced(op, got, x, axis, keepdims):
    """got against numpy on the float64 (or int64) input; max/min must be exact."""
    kw = {"axis": axis, "keepdims": keepdims}
    wide = x.astype(np.int64 if x.dtype.kind == "i" else np.float64)
    want = OPS[op][1](wide, **kw)
    assert got.dtype == x.dtype and got.shape == want.shape
    if op in ("max", "min") or x.dtype.kind == "i":
        np.testing.assert_array_equal(got, want)
        return
    f32 = x.dtype == np.float32
    if op == "prod":
        red = x.size // max(want.size, 1)
        np.testing.assert_allclose(got, want, rtol=(1e-7 if f32 else 1e-15) * red + 1e-6)
        return
    scale = np.sum(np.abs(wide), **kw) / (1 if op == "sum" else x.size // max(want.size, 1))
    tol = 2e-6 if f32 else 1e-13
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * np.max(scale))


OP_DTYPES = [(op, d) for op in OPS for d in (np.float32, np.float64)] + \
    [(op, np.int32) for op in ("sum", "max", "min")]


@pytest.mark.parametrize("keepdims", [False, True], ids=["", "keep"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{'x'.join(map(str, c[0]))}-ax{c[1]}")
@pytest.mark.parametrize("op,dtype", OP_DTYPES, ids=lambda v: v if isinstance(v, str) else np.dtype(v).name)
def test_column_reduction_matches_numpy(op, dtype, case, keepdims, rng):
    shape, axis = case
    x = reduce_input(rng, op, shape, dtype)
    f = compiled(lambda t: OPS[op][0](t, axis=axis, keepdims=keepdims))
    assert_reduced(op, f(x).numpy(), x, axis, keepdims)
    assert_compiled(f, x, types=[TYPES[op]])


@pytest.mark.parametrize("case", [((300, 100), 0), ((7, 300, 130), (0, 1)), ((7, 300, 130), 1)],
                         ids=["300x100-ax0", "7x300x130-ax01", "7x300x130-ax1"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
def test_max_min_propagate_nan_in_its_column_only(dtype, case, rng):
    shape, axis = case
    x = rng.standard_normal(shape).astype(dtype)
    cols = [0, 3, shape[-1] // 2, shape[-1] - 1]
    for k, c in enumerate(cols):  # first, middle and last reduced positions, both thread parts
        pos = [0, shape[-2] // 2, shape[-2] - 1, 1][k]
        x[(0,) * (len(shape) - 2) + (pos, c)] = np.nan
    x[(-1,) * (len(shape) - 1) + (7,)] = np.nan
    f = compiled(lambda t: [jf.reduce_max(t, axis=axis), jf.reduce_min(t, axis=axis)])
    got_max, got_min = (r.numpy() for r in f(x))
    want_max, want_min = x.astype(np.float64).max(axis), x.astype(np.float64).min(axis)
    assert np.isnan(want_max).sum() == len(cols) + 1
    np.testing.assert_array_equal(np.isnan(got_max), np.isnan(want_max))
    np.testing.assert_array_equal(np.isnan(got_min), np.isnan(want_min))
    np.testing.assert_array_equal(got_max, want_max)  # NaNs in the same places, the rest exact
    np.testing.assert_array_equal(got_min, want_min)
    assert_compiled(f, x, types=["Max", "Min"])


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
def test_sum_and_mean_with_infinities(dtype, rng):
    x = rng.standard_normal((300, 100)).astype(dtype)
    x[5, 3] = np.inf                        # +inf
    x[290, 60] = -np.inf                    # -inf, in the second thread's part
    x[0, 70], x[299, 70] = np.inf, -np.inf  # inf - inf = nan
    x[10, 99] = np.nan
    f = compiled(lambda t: [jf.reduce_sum(t, axis=0), jf.reduce_mean(t, axis=0, keepdims=True)])
    got_sum, got_mean = (r.numpy() for r in f(x))
    x64 = x.astype(np.float64)
    with np.errstate(invalid="ignore"):
        want_sum, want_mean = x64.sum(0), x64.mean(0, keepdims=True)
    assert (want_sum[3], want_sum[60]) == (np.inf, -np.inf) and np.isnan(want_sum[[70, 99]]).all()
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got_sum, want_sum, rtol=tol, atol=tol * 300)
    np.testing.assert_allclose(got_mean, want_mean, rtol=tol, atol=tol)
    assert_compiled(f, x, types=["Sum", "Mean"])


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
def test_column_reductions_of_fused_operands_feeding_elementwise_ops(dtype, rng):
    a, b = (rng.standard_normal((300, 100)).astype(dtype) for _ in range(2))
    bias = rng.standard_normal(100).astype(dtype)
    c = rng.standard_normal((7, 300, 130)).astype(dtype)

    def body(a, b, bias, c):
        s = jf.reduce_sum(a * b + 1.0, axis=0)                      # fused operand
        centered = a - jf.reduce_mean(a, axis=0, keepdims=True)     # result broadcast back
        m = jf.reduce_max(jf.abs(c) * 0.5, axis=(0, 1))
        return [jf.tanh(s * 0.01) + bias, centered * 2.0, m - jf.reduce_min(c, axis=1)[3],
                jf.reduce_sum(jf.reduce_sum(c, axis=1), axis=0) * 0.5]

    f = compiled(body)
    got = [r.numpy() for r in f(a, b, bias, c)]
    a64, b64, bias64, c64 = (v.astype(np.float64) for v in (a, b, bias, c))
    want = [np.tanh((a64 * b64 + 1.0).sum(0) * 0.01) + bias64, (a64 - a64.mean(0, keepdims=True)) * 2.0,
            (np.abs(c64) * 0.5).max((0, 1)) - c64.min(1)[3], c64.sum(1).sum(0) * 0.5]
    tol = 2e-5 if dtype == np.float32 else 1e-12
    for g, w, scale in zip(got, want, [1.0, 1.0, 1.0, 2100.0]):
        assert g.dtype == dtype and g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol * scale)
    assert_compiled(f, a, b, bias, c, types=["Sum", "Mean", "Max", "Min", "AddV2", "Tanh", "Mul"])


OPERANDS = {  # operands read at other than their own row-major index
    "transposed": (lambda x, r: jf.transpose(x), lambda x, r: x.T),
    "sliced": (lambda x, r: x[10:290:3, 5:], lambda x, r: x[10:290:3, 5:]),
    "broadcast_row": (lambda x, r: x * r, lambda x, r: x * r),
    "broadcast_col": (lambda x, r: x[:, :1] - r, lambda x, r: x[:, :1] - r),
}


@pytest.mark.parametrize("operand", list(OPERANDS))
def test_column_reductions_of_strided_and_broadcast_operands(operand, rng):
    x = rng.standard_normal((300, 300)).astype(np.float32)
    r = rng.standard_normal(300).astype(np.float32)
    make, ref = OPERANDS[operand]
    f = compiled(lambda x, r: [jf.reduce_sum(make(x, r), axis=0), jf.reduce_max(make(x, r), axis=0)])
    s, m = (t.numpy() for t in f(x, r))
    want = ref(x.astype(np.float64), r.astype(np.float64))
    np.testing.assert_allclose(s, want.sum(0), rtol=1e-5, atol=1e-5 * np.abs(want).sum(0).max())
    np.testing.assert_allclose(m, want.max(0), rtol=1e-6)
    assert_compiled(f, x, r, types=["Sum", "Max"])


def test_column_reduction_with_run_time_dims(rng):
    # Dims are run-time parameters: every call has new row lengths and thread split points.
    f = compiled(lambda x: [jf.reduce_sum(x * 2.0, axis=0), jf.reduce_max(x, axis=0)],
                 input_signature=[jf.TensorSpec([None, None])])
    for shape in [(300, 100), (1000, 3), (513, 129), (2, 70000), (1, 1), (0, 5)]:
        x = rng.standard_normal(shape).astype(np.float32)
        s, m = (r.numpy() for r in f(x))
        np.testing.assert_allclose(s, x.astype(np.float64).sum(0) * 2.0, rtol=1e-5, atol=1e-5 * shape[0])
        if shape[0]:
            np.testing.assert_array_equal(m, x.max(0))
        else:
            np.testing.assert_array_equal(m, np.full(5, -np.inf, np.float32))  # TF's empty max
    assert f.experimental_get_tracing_count() == 1
    assert_compiled(f, x, types=["Sum", "Max"])


def test_bias_gradient_in_a_compiled_step_is_a_column_sum(rng):
    x = rng.standard_normal((384, 64)).astype(np.float32)
    y = rng.standard_normal((384, 96)).astype(np.float32)
    w = jf.Variable(rng.standard_normal((64, 96)).astype(np.float32) * 0.1)
    b = jf.Variable(rng.standard_normal(96).astype(np.float32))

    def step(x, y):
        with jf.GradientTape() as tape:
            loss = jf.reduce_sum(jf.tanh(jf.matmul(x, w) + b) * y)
        return tape.gradient(loss, [w, b])

    f = compiled(step)
    gw, gb = (g.numpy() for g in f(x, y))
    t = np.tanh(x.astype(np.float64) @ w.numpy() + b.numpy())
    dh = (1 - t * t) * y
    np.testing.assert_allclose(gb, dh.sum(0), rtol=1e-4, atol=1e-4 * np.sqrt(384))
    np.testing.assert_allclose(gw, x.T.astype(np.float64) @ dh, rtol=1e-4, atol=1e-4 * np.sqrt(384))
    assert_compiled(f, x, y, types=["Sum", "MatMul"])
