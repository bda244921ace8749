"""The op-coverage test: walks the op records (cpp/ir/ops.def) and fails for any op that lacks
a differential row (op_rows.py), an eager kernel for a dtype it claims (checked against numpy),
a compiled form for a dtype its JIT column claims (compiled code must run), a gradient that
matches finite differences or a recorded reason for having none, an eager-only reason, or a
public Python name."""
import numpy as np
import pytest
from conftest import numeric_grad
from op_rows import EXEMPT, F32, F64, ROWS, Row, sized, special_values

import jitflow as jf
from jitflow import _C
from jitflow.autodiff import registry

RECORDS = {r["name"]: r for r in _C.op_records()}
for _name, _row in ROWS.items():
    _row.name = _name
ALL_DTYPES = ["float32", "float64", "int32", "int64", "bool", "float16", "bfloat16", "int8", "int16", "uint8",
              "uint16", "uint32", "uint64", "complex64", "complex128"]
# Half floats: TF computes each op in float32 and rounds the result, the references compute in
# float64 and round: they may differ by a unit in the last place (float16: 2**-10, bfloat16:
# 2**-7), twice where a result is rounded twice (a product, then its sum).
_HALF_TOL = {"float16": 2e-3, "bfloat16": 1.6e-2}


def _cases(key):
    # strings: the rows make numeric data; tracing/test_string_inputs.py runs the string ops
    return [(n, d) for n, r in RECORDS.items() if n in ROWS for d in r[key] if d != "string"]


def _tensors(xs):
    return [jf.constant(x) if isinstance(x, np.ndarray) else x for x in xs]


def _outputs(out):
    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    return [o.numpy() for o in outs]


def _expected(row, xs):
    ref = row.ref(*xs)
    return [np.asarray(r) for r in (ref if isinstance(ref, tuple) else (ref,))]


def _assert_close(got, want, dtype, what):
    assert len(got) == len(want), what
    for g, w in zip(got, want):
        assert g.shape == w.shape, f"{what}: shape {g.shape}, expected {w.shape}"
        if dtype == F32:
            np.testing.assert_allclose(g, w, rtol=3e-6, atol=3e-6, err_msg=what)
        elif dtype == F64:
            np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12, err_msg=what)
        elif dtype in _HALF_TOL and g.dtype.kind not in "biu":
            tol = _HALF_TOL[dtype]
            np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=tol, atol=tol, err_msg=what)
        elif dtype in ("complex64", "complex128"):
            tol = 1e-5 if dtype == "complex64" else 1e-12
            np.testing.assert_allclose(g, w, rtol=tol, atol=tol, err_msg=what)
        else:
            np.testing.assert_array_equal(g, w, err_msg=what)


MODES = ["eager", "function", "jit_scope", "jit_compile", "none_signature"]


def _compiled_call(row, xs, mode, jit):
    """The row's call as a jf.function of the mode: traced, with its ops in a jit_scope, with
    jit_compile=True, or with an all-None input_signature (compiled when the dtype is)."""
    if mode == "jit_scope":
        def body(*a):
            with jf.jit_scope():
                return row.call(*a)
    else:
        body = row.call
    kw = {}
    if mode == "jit_compile" or (mode == "none_signature" and jit):
        kw["jit_compile"] = True
    if row.baked:
        return jf.function(lambda: body(*xs), **kw)()
    if mode == "none_signature":
        kw["input_signature"] = [jf.TensorSpec([None] * x.ndim, getattr(jf, x.dtype.name)) for x in xs]
    return jf.function(body, **kw)(*_tensors(xs))


def _folded(row, xs):
    """Whether graph optimization removed the op for these inputs (the shape of a known
    shape is a constant): then nothing is left to compile."""
    f = jf.function(row.call)
    kept = {n.op for n in f.get_concrete_function(*_tensors(xs))._cf.optimized_graph.nodes()}
    return row.name not in kept


def _run_row(row: Row, dtype, rng, mode):
    jit = dtype in RECORDS[row.name]["jit_types"]
    compiled = mode in ("jit_scope", "jit_compile") or (mode == "none_signature" and jit)
    if row.check is not None:  # random: the call takes the dtype and has no reference values
        out = row.call(dtype) if mode == "eager" else jf.function(lambda: row.call(dtype))()
        for o in _outputs(out):
            row.check(o, dtype)
        return
    xs = row.make(dtype, rng)
    if mode == "eager":
        got = _outputs(row.call(*_tensors(xs)))
    elif mode == "jit_compile" and not jit and not row.runs_around_jit and not row.baked:
        # (a function returning a constant of a dtype no emitter covers returns it uncompiled,
        # as there is nothing to compute: its values are checked below)
        # jit_compile=True promises compiled code: an op that cannot compile is an error,
        # unless graph optimization removed it (the shape of a known shape is a constant).
        try:
            got = _outputs(_compiled_call(row, xs, mode, jit))
        except jf.errors.InvalidArgumentError as e:
            assert row.name in str(e), str(e)
            return
        assert _folded(row, xs), f"jit_compile=True ran {row.name} on {dtype} without compiling it"
    else:
        before = jf.debugging.stats()["cluster_runs"]
        got = _outputs(_compiled_call(row, xs, mode, jit))
        ran = jf.debugging.stats()["cluster_runs"] - before
        # Under jit_scope a cluster of only views and constants stays eager (TF drops it).
        trivial = mode == "jit_scope" and RECORDS[row.name]["lower"] in ("const", "view")
        # A TensorArray op (it runs around jit) compiles only in a loop that runs whole, CPU only
        # (tests/python/compile/test_compiled_tensor_arrays.py).
        if compiled and jit and not trivial and not row.runs_around_jit and ran == 0:
            assert _folded(row, xs), f"{mode}: no compiled code ran"
    _assert_close(got, _expected(row, xs), dtype, f"{mode} {dtype}")


def test_every_op_has_a_row_or_says_why_not():
    missing = [n for n in RECORDS if n not in ROWS and not EXEMPT.get(n)]
    assert not missing, f"ops without a row in tests/python/op_rows.py: {missing}"
    stale = [n for n in list(ROWS) + list(EXEMPT) if n not in RECORDS]
    assert not stale, f"rows for ops that have no record: {stale}"


@pytest.mark.parametrize("name", sorted(RECORDS))
def test_record_is_complete(name):
    r = RECORDS[name]
    if r["lower"] in ("eager", "graph"):
        assert r["jit_reason"], f"{name} never compiles and must say why"
    elif set(r["jit_types"]) != set(r["types"]):
        assert r["jit_reason"], f"{name} compiles for fewer dtypes than it claims and must say why"
    if r["differentiable"]:
        assert registry.has_gradient(name), f"{name}: its record says kGrad but no gradient is registered"
    else:
        assert r["grad_reason"] and not registry.has_gradient(name), name
        assert registry.get_gradient_function(name) is None
    assert r["py_names"] or r["py_reason"], f"{name} has no public name and says not why"
    for path in r["py_names"]:
        obj = jf
        for part in path.split("."):
            obj = getattr(obj, part)  # AttributeError: the record names a missing function
        assert callable(obj), path
    if r["lower"] == "math":
        assert r["math"], name


def _sized_cases():
    """Sizes 1 and 0 only for rows whose call takes any size (random rows draw fixed sizes)."""
    return [(n, d, size) for n, d in _cases("types") for size in (2, 1, 0)
            if size == 2 or (ROWS[n].resizable and ROWS[n].check is None)]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name,dtype,size", _sized_cases())
def test_every_claimed_dtype_in_every_mode(name, dtype, mode, size, rng):
    """The row against numpy, with its 2-dims of size 2, 1 and 0, eagerly and in each kind of
    function; compiled modes must run compiled code for the dtypes the record compiles."""
    row = ROWS[name]
    with sized(size):
        _run_row(row, dtype, rng, mode)


# ---- special values: subnormals, signed zeros, infinities and NaN -----------------------------
# Every float row runs on op_rows.special_inputs() (size 8: 16 or more elements per input, so an
# eager kernel's vector loop sees each value), eagerly and compiled, against its float64 numpy
# reference: NaN where it has NaN, its infinities, finite values to rtol + the smallest normal
# (a subnormal result may round differently), and the sign of a zero result. The sign is not
# checked where it depends on the order of a sum or on which of two equal zeros a max keeps.
_UNSIGNED_ZERO_KINDS = {"reduce", "library", "addn", "argreduce"}
_UNSIGNED_ZERO_OPS = {"Maximum", "Minimum", "UnsortedSegmentSum", "UnsortedSegmentMax", "UnsortedSegmentMin",
                      "UnsortedSegmentProd", "SegmentSum", "SegmentMean", "SegmentMax", "SegmentMin", "SegmentProd",
                      "TensorScatterAdd", "TensorScatterSub", "ScatterNd", "TensorScatterMax", "TensorScatterMin"}


def _special_cases():
    return [(n, d) for n, d in _cases("types") if d in (F32, F64) and ROWS[n].check is None]


def _assert_special(got, want, dtype, what, signed_zeros):
    assert len(got) == len(want), what
    tiny = np.finfo(dtype).tiny
    rtol = 3e-6 if dtype == F32 else 1e-12
    for g, w in zip(got, want):
        assert g.shape == w.shape, f"{what}: shape {g.shape}, expected {w.shape}"
        if g.dtype.kind != "f":
            np.testing.assert_array_equal(g, w, err_msg=what)
            continue
        g64, w64 = g.astype(np.float64), w.astype(np.float64)
        bad = np.isnan(g64) != np.isnan(w64)
        inf = np.isinf(w64) | np.isinf(g64)
        # The largest finite value for an overflowing reference is one rounding off, not wrong.
        top = np.abs(np.where(np.isinf(g64), w64, g64)) == np.finfo(dtype).max
        bad |= inf & ~np.isnan(w64) & (g64 != w64) & ~(top & (np.sign(g64) == np.sign(w64)))
        fin = np.isfinite(w64) & np.isfinite(g64)
        diff = np.where(fin, g64, 0) - np.where(fin, w64, 0)  # inf - inf stays out of it
        bad |= fin & (np.abs(diff) > rtol * np.abs(np.where(fin, w64, 0)) + tiny)
        if signed_zeros:
            bad |= fin & (w64 == 0) & (g64 == 0) & (np.signbit(g64) != np.signbit(w64))
        assert not bad.any(), (f"{what}: {int(bad.sum())} wrong: " + ", ".join(
            f"[{i}] got {g.flat[i]!r}, want {w.flat[i]!r}" for i in np.flatnonzero(bad)[:6]))


def _run_special(row, dtype, rng, mode):
    """The row on special values in `mode` ("eager", or "compiled": jit_compile=True for a
    dtype its record compiles); raises AssertionError naming what differs."""
    rec = RECORDS[row.name]
    with sized(8), special_values(row.special_inputs):
        xs = row.make(dtype, rng)
    if mode == "eager":
        got = _outputs(row.call(*_tensors(xs)))
    else:
        before = jf.debugging.stats()["cluster_runs"]
        got = _outputs(_compiled_call(row, xs, "jit_compile", True))
        assert jf.debugging.stats()["cluster_runs"] > before or _folded(row, xs), "no compiled code ran"
    with np.errstate(all="ignore"):
        want = (row.special_ref or row.ref)(*xs)
    want = [np.asarray(r) for r in (want if isinstance(want, tuple) else (want,))]
    signed = rec["lower"] not in _UNSIGNED_ZERO_KINDS and row.name not in _UNSIGNED_ZERO_OPS
    _assert_special(got, want, dtype, f"{row.name} {dtype} {mode}", signed)


# Compiled only for the dtypes the record compiles (the others run their eager kernel, which
# the eager case covers): parametrized that way rather than skipped.
_SPECIAL_MODES = [(n, d, m) for n, d in _special_cases() for m in ("eager", "compiled")
                  if m == "eager" or d in RECORDS[n]["jit_types"]]


@pytest.mark.parametrize("name,dtype,mode", _SPECIAL_MODES)
def test_special_values_in_every_float_op(name, dtype, mode, rng):
    _run_special(ROWS[name], dtype, rng, mode)


# The compiled code of an AVX2 machine (JITFLOW_CPU=haswell: LLVM targets that CPU, whose
# vector width, FMA and libmvec variants differ from a newer host's) on the same special
# values. The override holds for a whole process: one child compiles every case and reports
# what differed; a test per op reads its entry.
_AVX2_CASES = [(n, d) for n, d in _special_cases() if d in RECORDS[n]["jit_types"]]
_AVX2_CHILD = '''
import json, os, sys, zlib
sys.path[:0] = [os.path.join({here!r}, ".."), {here!r}]
import numpy as np
import test_op_coverage as T
from jitflow import _C
fails = {{}}
for name, dtype in T._AVX2_CASES:
    rng = np.random.default_rng(zlib.crc32(f"{{name}}-{{dtype}}".encode()))
    try:
        T._run_special(T.ROWS[name], dtype, rng, "compiled")
    except Exception as e:  # noqa: BLE001 - reported per op
        fails[f"{{name}}-{{dtype}}"] = f"{{type(e).__name__}}: {{e}}"
print(json.dumps({{"target": _C.cpu_jit_target(), "fails": fails}}))
'''


@pytest.fixture(scope="module")
def avx2_results():
    import json
    import os
    import subprocess
    import sys
    src = _AVX2_CHILD.format(here=os.path.dirname(os.path.abspath(__file__)))
    r = subprocess.run([sys.executable, "-c", src], capture_output=True, text=True, timeout=600, check=False,
                       env={**os.environ, "JITFLOW_CPU": "haswell"})
    if "needs instructions this CPU" in r.stderr:
        # A host without AVX2 cannot run haswell code: the override must refuse it by name
        # (checked below) rather than run it; the cases are covered on an AVX2 host.
        return {"refused": r.stderr}
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("name,dtype", _AVX2_CASES)
def test_special_values_compiled_for_an_avx2_cpu(name, dtype, avx2_results):
    if "refused" in avx2_results:
        assert "InvalidArgumentError" in avx2_results["refused"] and "haswell" in avx2_results["refused"], \
            avx2_results["refused"][-2000:]
        return
    assert avx2_results["target"].split("|")[1] == "haswell", avx2_results["target"]
    assert f"{name}-{dtype}" not in avx2_results["fails"], avx2_results["fails"].get(f"{name}-{dtype}")


# Ops whose public function takes more dtypes than the op by composing others: random ints
# are drawn as floats, and truediv divides ints as float64 (as TF does).
_COMPOSED = {"RandomUniform", "RandomStandardNormal", "RealDiv"}
# nn.leaky_relu casts integer features to float32 (as TF does); the op itself refuses them
# (test_nn_activations_losses.py).
_COMPOSED |= {"LeakyRelu"}
# tf.abs of a complex value is ComplexAbs; real, imag, conj and angle answer for real values
# themselves, as TF's do (test_complex.py).
_COMPOSED |= {"Abs", "Real", "Imag", "Conj", "Angle", "ComplexAbs"}
# (their rows build complex inputs from real ones for the gradient check)
_COMPOSED |= {"FFT", "IFFT", "IRFFT"}


@pytest.mark.parametrize("name,dtype", [(n, d) for n, r in RECORDS.items() if n in ROWS and n not in _COMPOSED
                                        for d in ALL_DTYPES if d not in r["types"]])
def test_unclaimed_dtype_is_refused(name, dtype, rng):
    row = ROWS[name]
    with pytest.raises((TypeError, jf.errors.InvalidArgumentError)):
        row.call(*_tensors(row.make(dtype, rng)))


@pytest.mark.parametrize("name", [n for n, r in RECORDS.items() if r["differentiable"] and n in ROWS])
def test_gradient_matches_finite_differences(name, rng):
    row = ROWS[name]
    assert row.grad, f"{name} is differentiable: its row must name the inputs to check"
    xs = list(row.make(row.grad_dtype, rng))
    ref = row.grad_ref or row.ref
    outs = [np.asarray(o) for o in _outputs(row.call(*_tensors(xs)))]
    # A complex output is weighed by its real and its imaginary part (a real loss, as TF
    # differentiates); integer outputs (TopKV2's indices) carry no gradient.
    ws = [(rng.standard_normal(o.shape).astype(o.real.dtype), rng.standard_normal(o.shape).astype(o.real.dtype))
          for o in outs]
    floats = [o.dtype.kind in "fc" for o in outs]

    def loss_np(*gx):
        vals = list(xs)
        for i, v in zip(row.grad, gx):
            vals[i] = v
        r = ref(*vals)
        return sum(float(np.sum(np.real(o).astype(np.float64) * w + np.imag(o).astype(np.float64) * w2))
                   for o, (w, w2), f in zip(r if isinstance(r, tuple) else (r,), ws, floats) if f)

    def weighed(o, w, w2):
        loss = jf.reduce_sum(jf.math.real(o) * jf.constant(w))
        return loss + jf.reduce_sum(jf.math.imag(o) * jf.constant(w2)) if o.dtype.is_complex else loss

    tensors = _tensors(xs)
    with jf.GradientTape() as tape:
        for i in row.grad:
            tape.watch(tensors[i])
        out = row.call(*tensors)
        outs_t = list(out) if isinstance(out, (tuple, list)) else [out]
        loss = jf.add_n([weighed(o, *w) for o, w, f in zip(outs_t, ws, floats) if f])
    grads = tape.gradient(loss, [tensors[i] for i in row.grad])
    want = numeric_grad(loss_np, [xs[i] for i in row.grad])
    for i, g, w in zip(row.grad, grads, want):
        assert g is not None, f"{name}: no gradient for input {i}"
        np.testing.assert_allclose(g.numpy(), w, rtol=1e-5, atol=1e-6, err_msg=f"{name} input {i}")


def test_ops_without_a_gradient_say_why():
    reasons = {n: registry.not_differentiable_reason(n) for n, r in RECORDS.items() if not r["differentiable"]}
    assert all(reasons.values()), reasons
    assert reasons["Equal"] == "its output is bool"


def test_registering_a_gradient_for_a_non_differentiable_op_raises():
    with pytest.raises(KeyError, match="not differentiable"):
        registry.register_gradient("ArgMax")(lambda op, g: [None, None])
    with pytest.raises(KeyError, match="ops.def"):
        registry.not_differentiable("MatMul")


def test_constant_of_a_graph_tensor_raises_instead_of_crashing():
    @jf.function
    def f(x):
        return jf.constant(x)

    with pytest.raises(TypeError, match="non-tensor"):
        f(jf.constant([1.0]))


def test_tf_names_jitflow_lacks_say_so():
    with pytest.raises(AttributeError, match=r"jitflow does not implement tf.nn.ctc_beam_search_decoder yet"):
        jf.nn.ctc_beam_search_decoder  # noqa: B018
    with pytest.raises(AttributeError, match=r"jitflow does not implement tf.linalg.eig yet"):
        jf.linalg.eig  # noqa: B018
    with pytest.raises(AttributeError, match=r"has no attribute 'not_a_tf_name'") as e:
        jf.not_a_tf_name  # noqa: B018
    assert "does not implement" not in str(e.value)


def test_math_namespace_holds_tf_math_names():
    assert jf.math.exp is jf.exp and jf.math.reduce_sum is jf.reduce_sum
    assert jf.math.truediv is jf.truediv and jf.linalg.matmul is jf.matmul


def _ptx_case(name):
    r = RECORDS[name]
    return F32 if F32 in r["jit_types"] else r["jit_types"][0]


# Library steps run on cuBLAS (tests/python/gpu/fake_gpu); Const alone makes no kernel.
_PTX_OPS = [n for n, r in RECORDS.items() if n in ROWS and r["jit_types"]
            and r["lower"] not in ("library", "const") and not ROWS[n].runs_around_jit]


@pytest.mark.parametrize("name", _PTX_OPS)
def test_nvptx_backend_emits_every_compiled_op(name, rng):
    """The NVPTX backend dispatches from the same records: every op that compiles on the CPU
    gives PTX with no unresolved library call (libdevice linked in)."""
    row = ROWS[name]
    xs = _tensors(row.make(_ptx_case(name), rng))

    @jf.function
    def f(*args):
        with jf.jit_scope():
            out = row.call(*args)
            # A lone view is no cluster under jit_scope (TF drops trivial clusters): feed a multiply.
            return out * 2.0 if RECORDS[name]["lower"] == "view" else out
    ptx = jf.experimental.emit_ptx(f, *xs, arch="sm_80")
    if not ptx and not row.baked:  # a shape known at trace time folds away: make it unknown
        spec = [jf.TensorSpec([None] * len(x.shape), x.dtype) for x in xs]
        f = jf.function(f.python_function, input_signature=spec)
        ptx = jf.experimental.emit_ptx(f, *xs, arch="sm_80")
    assert ptx, f"{name}: no cluster compiled for the GPU"
    for text in ptx.values():
        assert ".entry" in text
        assert ".extern .func" not in text, f"{name}: an unresolved call in the PTX"


def test_docs_ops_md_is_generated_from_the_records():
    import os

    from jitflow import _ops_doc
    path = os.path.join(os.path.dirname(__file__), "..", "..", "..", "docs", "ops.md")
    with open(path) as f:
        assert f.read() == _ops_doc.markdown(), "docs/ops.md is stale: python -m jitflow._ops_doc > docs/ops.md"
