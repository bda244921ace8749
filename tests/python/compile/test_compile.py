"""Compilation of jit_scope clusters (docs/jit_scope.md): which ops compile, cluster shapes,
values equal to eager and numpy, exact int64 constants, the compile cache, and best-effort
fallback."""
import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest
from conftest import assert_exact, assert_raised, run_in_child

import jitflow as jf

rng = np.random.default_rng(1)


def clusters(f, *args):
    return f.get_concrete_function(*args).clusters


def compiled_types(f, *args):
    cf = f.get_concrete_function(*args)
    types = {op.name: op.type for op in cf.graph.get_operations()}
    return sorted(types[o] for c in cf.clusters for o in c.ops if types.get(o) not in ("Const", None))


def test_seed_example_compiles_only_what_it_should():
    @jf.function
    def f(a, b):
        with jf.jit_scope():
            c = jf.matmul(a, b)
        with jf.jit_scope(compile_ops=False):
            d = jf.matmul(a, c)
        with jf.jit_scope(compile_ops=lambda node_def: "matmul" in node_def.op.lower()):
            e = jf.matmul(a, b) + d
        return e

    a = rng.random((8, 8), dtype=np.float32)
    np.testing.assert_allclose(f(a, a).numpy(), a @ a + a @ (a @ a), rtol=1e-4)
    ex = jf.explain(f, a, a).by_op()
    assert ex["MatMul"].status == "compiled"
    assert ex["MatMul_1"].status == "eager" and "_XlaCompile=False" in ex["MatMul_1"].reason
    assert ex["MatMul_2"].status == "compiled"
    assert ex["AddV2"].status == "eager"
    assert ex["MatMul"].cluster != ex["MatMul_2"].cluster  # different scopes never merge
    for c in clusters(f, a, a):
        assert c.backend == "cpu" and c.scope.startswith("jit_scope_")


def test_x_and_loss_clustered_y_never():
    a, b = rng.random((4, 4), dtype=np.float32), rng.random((4, 4), dtype=np.float32)

    @jf.function
    def f(a, b):
        with jf.jit_scope():
            x = jf.matmul(a, b)
        with jf.jit_scope(compile_ops=False):
            y = jf.matmul(b, a)
        loss = x + y
        return loss

    ex = jf.explain(f, a, b).by_op()
    assert ex["MatMul"].status == "compiled" and ex["AddV2"].status == "compiled"
    assert ex["MatMul"].cluster == ex["AddV2"].cluster
    assert ex["MatMul_1"].status == "eager"
    np.testing.assert_allclose(f(a, b).numpy(), a @ b + b @ a, rtol=1e-5)

    @jf.function
    def g(a, b):
        with jf.jit_scope(compile_ops=False):
            with jf.jit_scope():
                x = jf.matmul(a, b)
            y = jf.matmul(b, a)
            loss = x + y
        return loss

    ex = jf.explain(g, a, b).by_op()
    assert ex["MatMul"].status == "compiled"
    assert ex["MatMul_1"].status == "eager" and ex["AddV2"].status == "eager"


def test_two_scopes_add_outside_two_clusters():
    x = rng.random((3, 4), dtype=np.float32)
    w = rng.random((4, 5), dtype=np.float32)
    b = rng.random(5, dtype=np.float32)

    @jf.function
    def f(x, w, b):
        with jf.jit_scope():
            y = jf.matmul(x, w)
        z = y + b
        with jf.jit_scope():
            return jf.square(z)

    assert len(clusters(f, x, w, b)) == 2
    np.testing.assert_allclose(f(x, w, b).numpy(), np.square(x.astype(np.float64) @ w + b), rtol=1e-5)


def test_reshape_with_runtime_shape_input():
    @jf.function
    def f(x, shape):
        with jf.jit_scope():
            return jf.reshape(x * 1, shape)

    out = f(jf.constant([1, 2, 3, 4, 5, 6]), jf.constant([-1, 3]))
    np.testing.assert_array_equal(out.numpy(), [[1, 2, 3], [4, 5, 6]])


def test_control_dependencies_into_a_cluster():
    v = jf.Variable(0.0)

    @jf.function
    def f(x):
        assign = v.assign(x)
        with jf.control_dependencies([assign]), jf.jit_scope():
            y = v.read_value() * 4.0
        return y

    assert float(f(jf.constant(7.0))) == 28.0


def test_while_loop_in_a_scope():
    @jf.function
    def f(x):
        with jf.jit_scope():
            return jf.while_loop(lambda v: v < 50.0, lambda v: v * 2.0 + 1.0, [x])[0]

    assert float(f(jf.constant(2.0))) == 95.0


def test_cond_in_a_scope():
    @jf.function
    def f(x):
        with jf.jit_scope():
            return jf.cond(x > 2.0, lambda: x * 2.0, lambda: x + 1.0)

    assert float(f(jf.constant(3.0))) == 6.0


def test_loop_between_cluster_ops_does_not_deadlock():
    # a feeds the loop and the op after it: merging them would put the While on a cycle.
    @jf.function
    def f(x):
        with jf.jit_scope():
            a = x - 1.0
            r = jf.while_loop(lambda v: v < 60.0, lambda v: v * 2.0 + 1.0, [a])[0]
            return r + (a - a)

    assert float(f(jf.constant(2.0))) == 63.0
    ex = jf.explain(f, jf.constant(2.0)).by_op()
    # the loop is in no top-level cluster: it runs whole in its own step's cluster
    assert ex["While"].cluster.startswith("While/body/")
    assert ex["Sub"].cluster != ex["AddV2"].cluster


def test_dense_layer_in_one_scope_is_one_cluster():
    dense = jf.nn.Dense(4, activation="relu")

    def body(x):
        with jf.jit_scope():
            return dense(x)

    x = rng.random((2, 2, 3), dtype=np.float32)
    f = jf.function(body)
    out = f(x)
    assert len(clusters(f, x)) == 1
    ref = np.maximum(x.astype(np.float64) @ dense.kernel.numpy() + dense.bias.numpy(), 0)
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-5, atol=1e-6)
    g = jf.function(body, input_signature=[jf.TensorSpec([None, None, 3])])
    np.testing.assert_allclose(g(x).numpy(), ref, rtol=1e-5, atol=1e-6)
    assert len(g.get_concrete_function().clusters) == 1
    x5 = rng.random((5, 1, 3), dtype=np.float32)
    np.testing.assert_allclose(g(x5).numpy(), np.maximum(x5 @ dense.kernel.numpy() + dense.bias.numpy(), 0),
                               rtol=1e-5, atol=1e-6)


def test_compile_false_between_two_ops_makes_two_clusters():
    @jf.function
    def f(x):
        with jf.jit_scope():
            y = x * 2.0
            with jf.jit_scope(compile_ops=False):
                z = y * y
            w = y + z
        return w

    x = jf.constant([1.5, 0.5])
    np.testing.assert_allclose(f(x).numpy(), [12.0, 2.0])
    cs = clusters(f, x)
    assert len(cs) == 2
    assert jf.explain(f, x).by_op()["Mul_1"].status == "eager"


ELEMENTWISE = {
    "add": (lambda a, b: a + b, 2), "sub": (lambda a, b: a - b, 2), "mul": (lambda a, b: a * b, 2),
    "div": (lambda a, b: a / b, 2), "max": (jf.maximum, 2), "min": (jf.minimum, 2),
    "pow": (lambda a, b: jf.pow(jf.abs(a), b), 2), "floordiv": (lambda a, b: a // b, 2),
    "floormod": (lambda a, b: a % b, 2),
    "neg": (jf.negative, 1), "abs": (jf.abs, 1), "square": (jf.square, 1), "relu": (jf.nn.relu, 1),
    "exp": (jf.exp, 1), "log": (lambda a: jf.log(jf.abs(a)), 1), "tanh": (jf.tanh, 1),
    "sigmoid": (jf.sigmoid, 1), "sqrt": (lambda a: jf.sqrt(jf.abs(a)), 1),
    "rsqrt": (lambda a: jf.rsqrt(jf.abs(a) + 0.5), 1), "sin": (jf.sin, 1), "cos": (jf.cos, 1),
    "erf": (jf.erf, 1), "where": (lambda a, b: jf.where(a > b, a, b), 2),
    "cmp": (lambda a, b: jf.cast(jf.logical_or(a < b, jf.equal(a, b)), a.dtype), 2),
}
SHAPES = [((5, 7), (7,)), ((3, 1, 4), (1, 6, 1)), ((0, 3), (3,)), ((1,), (4, 1)), ((), (2, 3))]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", sorted(ELEMENTWISE))
def test_compiled_equals_eager_equals_numpy(name, dtype):
    fn, arity = ELEMENTWISE[name]

    def compiled(*a):
        with jf.jit_scope():
            return fn(*a)
    f = jf.function(compiled)
    for sa, sb in SHAPES:
        args = [jf.constant(rng.standard_normal(sa).astype(dtype) * 3),
                jf.constant(rng.standard_normal(sb).astype(dtype) * 3 + 0.1)][:arity]
        eager = fn(*args).numpy()
        out = f(*args).numpy()
        tol = 1e-5 if dtype == np.float32 else 1e-12
        np.testing.assert_allclose(out, eager, rtol=tol, atol=tol)
        ref = fn(*[jf.constant(a.numpy().astype(np.float64)) for a in args]).numpy()
        np.testing.assert_allclose(out, ref, rtol=1e-4 if dtype == np.float32 else 1e-12, atol=1e-5)
    assert f.get_concrete_function(*args).clusters, f"{name} did not compile"


def test_nan_and_inf_propagate_like_eager():
    vals = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -2.0, 50.0, -50.0], np.float32)
    x = jf.constant(vals)

    def body(x):
        return [jf.maximum(x, 0.0), jf.minimum(x, 1.0), jf.tanh(x), jf.sigmoid(x), jf.exp(x),
                jf.nn.relu(x), jf.reduce_max(x), jf.reduce_min(x), x * 2.0 + 1.0]

    def compiled(x):
        with jf.jit_scope():
            return body(x)
    f = jf.function(compiled)
    for got, want in zip(f(x), body(x)):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6, equal_nan=True)
    assert f.get_concrete_function(x).clusters


@pytest.mark.parametrize("case", ["reduce_axes", "softmax", "log_softmax", "layer_norm", "mean_int",
                                  "transpose_slice_concat", "split_stack", "cast_bool", "matmul_chain"])
def test_compiled_fusions_match_eager(case):
    x = jf.constant(rng.standard_normal((6, 5, 4)).astype(np.float32))
    xi = jf.constant(rng.integers(-9, 9, (4, 6)).astype(np.int32))
    w = jf.constant(rng.standard_normal((4, 3)).astype(np.float32))
    bodies = {
        "reduce_axes": lambda: [jf.reduce_sum(x, [0, 2]), jf.reduce_max(x, 1, keepdims=True),
                                jf.reduce_mean(x), jf.reduce_prod(x * 0.1 + 1.0, -1), jf.reduce_min(x, [1, 2])],
        "softmax": lambda: jf.nn.softmax(x),
        "log_softmax": lambda: jf.nn.log_softmax(x * 3.0),
        "layer_norm": lambda: (x - jf.reduce_mean(x, -1, True)) * jf.rsqrt(
            jf.reduce_mean(jf.square(x - jf.reduce_mean(x, -1, True)), -1, True) + 1e-5),
        "mean_int": lambda: [jf.reduce_mean(xi, 1), jf.reduce_sum(xi), jf.reduce_max(xi, 0)],
        "transpose_slice_concat": lambda: jf.concat([jf.transpose(x, [2, 0, 1])[1:2, ::2], x[None, :2, :, 3] * 2.0], 1),
        "split_stack": lambda: jf.stack(jf.split(x, [1, 4], axis=1)[1:] * 2, axis=0) + 1.0,
        "cast_bool": lambda: jf.cast(jf.cast(x > 0.0, jf.int32) + xi[:1, :1], jf.float32),
        "matmul_chain": lambda: jf.nn.relu(jf.matmul(jf.reshape(x, [-1, 4]), w) + 1.0),
    }
    body = bodies[case]

    def compiled(x_, xi_, w_):
        nonlocal x, xi, w
        saved = x, xi, w
        x, xi, w = x_, xi_, w_  # the body reads the traced inputs, not constants
        try:
            with jf.jit_scope():
                return body()
        finally:
            x, xi, w = saved
    f = jf.function(compiled)
    got, want = f(x, xi, w), body()
    got = got if isinstance(got, list) else [got]
    want = want if isinstance(want, list) else [want]
    for g, e in zip(got, want):
        assert g.dtype == e.dtype and g.shape == e.shape
        np.testing.assert_allclose(g.numpy(), e.numpy(), rtol=2e-5, atol=2e-5)
    assert f.get_concrete_function(x, xi, w).clusters


# Python ints are baked into compiled code exactly (no trip through double), and kernels that
# differ only in a constant are distinct programs in the compile cache.
BIG = 2**53 + 1  # the first integer a double cannot hold
exact = assert_exact


def test_int64_immediates_are_exact_when_compiled():
    x = jf.constant(np.array([0, 1], np.int64))
    exact(jf.function(lambda a: a + BIG, jit_compile=True)(x), [BIG, BIG + 1], np.int64)
    exact(jf.function(lambda a: a * 0 + (2**63 - 1), jit_compile=True)(x), [2**63 - 1] * 2, np.int64)


def test_compiled_kernels_differing_only_in_a_constant_are_distinct():
    xi = jf.constant(np.array([0, 1], np.int64))
    a = jf.function(lambda t: t + 1000000001, jit_compile=True)(xi)
    b = jf.function(lambda t: t + 1000000002, jit_compile=True)(xi)  # gave a's values
    exact(a, [1000000001, 1000000002], np.int64)
    exact(b, [1000000002, 1000000003], np.int64)
    xf = jf.constant(np.array([0.0], np.float32))
    c = jf.function(lambda t: t + 1.0000001, jit_compile=True)(xf)
    d = jf.function(lambda t: t + 1.0000002, jit_compile=True)(xf)
    exact(c, [np.float32(1.0000001)], np.float32)
    exact(d, [np.float32(1.0000002)], np.float32)


def test_compile_cache_second_call_and_new_batch_size():
    def body(x):
        with jf.jit_scope():
            return jf.tanh(x * 1.25 + 0.75) * 0.5

    f = jf.function(body)
    jf.debugging.reset_stats()
    f(np.ones((3, 8), np.float32))
    s = jf.debugging.stats()
    assert s["compilations"] + s["cache_hits"] == 1
    f(np.ones((3, 8), np.float32))
    assert jf.debugging.stats()["compilations"] == s["compilations"]  # no retrace, no compile
    # Retrace, same kernel (both sizes are small enough for the same LLVM pipeline, which is
    # part of the key: test_llvm_pipeline.py).
    out = f(np.full((15, 8), 2.0, np.float32))
    s2 = jf.debugging.stats()
    assert s2["traces"] == 2 and s2["compilations"] == s["compilations"] and s2["cache_hits"] >= 1
    np.testing.assert_allclose(out.numpy(), np.tanh(2.0 * 1.25 + 0.75) * 0.5, rtol=1e-6)
    assert s2["cluster_runs"] == 3

    g = jf.function(body, input_signature=[jf.TensorSpec([None, 8])])
    for n in (1, 5, 100):
        np.testing.assert_allclose(g(np.ones((n, 8), np.float32)).numpy(), np.tanh(2.0) * 0.5, rtol=1e-6)
    assert g.experimental_get_tracing_count() == 1


_CHILD = textwrap.dedent("""
    import numpy as np, jitflow as jf
    @jf.function
    def f(x):
        with jf.jit_scope():
            return jf.exp(x * 0.375) - 0.125
    out = f(np.arange(4, dtype=np.float32))
    assert np.allclose(out.numpy(), np.exp(np.arange(4) * 0.375) - 0.125, rtol=1e-6)
    s = jf.debugging.stats()
    print(s["compilations"], s["cache_hits"])
""")


def _run_child(cache_dir):
    env = dict(os.environ, JITFLOW_CACHE_DIR=str(cache_dir))
    out = subprocess.run([sys.executable, "-c", _CHILD], env=env, capture_output=True, text=True, check=True)
    return tuple(int(v) for v in out.stdout.split())


def test_disk_cache_warm_process_and_corrupt_entries(tmp_path):
    assert _run_child(tmp_path) == (1, 0)    # cold: compiles and stores
    assert _run_child(tmp_path) == (0, 1)    # warm: loads object code, no compile
    entries = list(tmp_path.glob("*.jfc"))
    assert len(entries) == 1
    data = entries[0].read_bytes()
    entries[0].write_bytes(data[: len(data) // 2])   # truncated
    assert _run_child(tmp_path) == (1, 0)
    data = bytearray(entries[0].read_bytes())
    data[len(data) // 2] ^= 0xFF                      # flipped bit
    entries[0].write_bytes(bytes(data))
    assert _run_child(tmp_path) == (1, 0)
    assert _run_child(tmp_path) == (0, 1)


def test_injected_compile_failure_falls_back_with_warning_and_reason():
    os.environ["JITFLOW_FAIL_COMPILE"] = "1"
    try:
        @jf.function
        def f(x):
            with jf.jit_scope():
                return jf.sin(x) * 1.75 - 0.3125

        x = jf.constant([0.5, 1.0])
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            out = f(x)
        assert any("could not be compiled" in str(m.message) for m in w)
        np.testing.assert_allclose(out.numpy(), np.sin([0.5, 1.0]) * 1.75 - 0.3125, rtol=1e-6)
        ex = jf.explain(f, x).by_op()
        assert ex["Sin"].status == "eager" and "injected" in ex["Sin"].reason
        assert not f.get_concrete_function(x).clusters
    finally:
        del os.environ["JITFLOW_FAIL_COMPILE"]


def test_op_without_emitter_in_scope_runs_eagerly_with_reason():
    @jf.function
    def f(x):
        with jf.jit_scope():
            return jf.math.unsorted_segment_sum(x * 2.0, [0, 1, 0], 2)  # a scatter: no emitter

    x = jf.constant([1.0, 3.0, 2.0])
    assert f(x).numpy().tolist() == [6.0, 6.0]
    ex = jf.explain(f, x).by_op()
    row = ex["UnsortedSegmentSum"]
    assert row.status == "eager" and "UnsortedSegmentSum" in row.reason and "scatter" in row.reason


def test_jit_compile_whole_function():
    @jf.function(jit_compile=True)
    def f(x, y):
        return jf.reduce_sum(jf.tanh(x) * y, axis=1)

    x, y = rng.random((4, 3), dtype=np.float32), rng.random((4, 3), dtype=np.float32)
    np.testing.assert_allclose(f(x, y).numpy(), (np.tanh(x) * y).sum(1), rtol=1e-5)
    assert len(clusters(f, x, y)) == 1

    @jf.function(jit_compile=True)
    def g(x):
        return jf.math.unsorted_segment_sum(x, [0, 1, 0, 0], 2)  # a scatter: no emitter yet

    with pytest.raises(jf.errors.InvalidArgumentError) as e:
        g(x)
    assert "UnsortedSegmentSum" in str(e.value) and "test_compile.py" in str(e.value)


def test_auto_clustering_set_jit():
    def body(x):
        return jf.exp(x) * 2.0 + 1.0

    jf.config.optimizer.set_jit(True)
    try:
        f = jf.function(body)
        x = jf.constant([0.0, 1.0])
        np.testing.assert_allclose(f(x).numpy(), np.exp([0.0, 1.0]) * 2 + 1, rtol=1e-6)
        assert len(clusters(f, x)) == 1
    finally:
        jf.config.optimizer.set_jit(False)
    g = jf.function(body)
    assert not clusters(g, x)


def test_as_dot_and_dump_show_clusters(tmp_path, monkeypatch):
    monkeypatch.setenv("JITFLOW_CACHE_DIR", "off")  # compile for real, so the IR is dumped
    os.environ["JITFLOW_DUMP"] = str(tmp_path)
    try:
        @jf.function
        def dumped_cluster_fn(x):
            with jf.jit_scope():
                return jf.exp(x) + 1.5
        dumped_cluster_fn(jf.constant([1.0]))
    finally:
        del os.environ["JITFLOW_DUMP"]
    names = {p.name for p in tmp_path.iterdir()}
    assert any(n.endswith(".clusters.txt") for n in names)
    assert any(n.endswith("before_opt.ll") for n in names) and any(n.endswith("after_opt.ll") for n in names)
    dot = dumped_cluster_fn.get_concrete_function(jf.constant([1.0])).graph.as_dot()
    assert "subgraph cluster_" in dot


def test_variable_write_then_read_keeps_program_order_across_clusters():
    # Side effects are chained (TF's automatic control dependencies): the read after the
    # write must see the new value even though both neighbours are compiled.
    v = jf.Variable(1.0)

    @jf.function
    def f(x):
        with jf.jit_scope():
            a = x * 2.0
            v.assign(a)
            b = v.read_value() + 1.0
            return a, b

    a, b = f(jf.constant(5.0))
    assert (float(a), float(b)) == (10.0, 11.0)
    ex = jf.explain(f, jf.constant(5.0)).by_op()
    assert ex["Mul"].cluster != ex["AddV2"].cluster
    reads = [op for op in f.get_concrete_function(jf.constant(5.0)).graph.get_operations()
             if op.type == "ReadVariableOp"]
    assert reads and any(c.type == "AssignVariableOp" for c in reads[0].control_inputs)


def test_jit_compile_with_variable_reads_and_writes():
    w = jf.Variable(np.ones((3, 2), np.float32))
    steps = jf.Variable(0)

    @jf.function(jit_compile=True)
    def train_step(x, y):
        pred = jf.matmul(x, w)
        err = pred - y
        grad = jf.matmul(x, err, transpose_a=True) * (2.0 / 4.0)
        w.assign_sub(grad * 0.1)
        steps.assign_add(1)
        return jf.reduce_mean(err * err)

    x = rng.random((4, 3), dtype=np.float32)
    y = rng.random((4, 2), dtype=np.float32)
    w0 = w.numpy().astype(np.float64)
    loss = float(train_step(x, y))
    err = x @ w0 - y
    np.testing.assert_allclose(loss, np.mean(err * err), rtol=1e-5)
    np.testing.assert_allclose(w.numpy(), w0 - 0.1 * (x.T @ err) * 0.5, rtol=1e-5)
    assert int(steps.numpy()) == 1
    cs = clusters(train_step, x, y)
    assert len(cs) == 1
    types = {op.type for op in train_step.get_concrete_function(x, y).graph.get_operations()}
    assert "AssignSubVariableOp" in types
    train_step(x, y)
    assert int(steps.numpy()) == 2


def test_jit_compile_splits_around_a_read_of_what_it_wrote():
    # TF's XLA orders the write and the read inside its one computation; jitflow runs them
    # between two compiled units (it refused the function: "cannot compile ... as one unit").
    v = jf.Variable([1.0, 2.0])

    @jf.function(jit_compile=True)
    def f(x):
        v.assign(jf.tanh(x) * 2.0)
        return v.read_value() * x + 1.0

    x = np.array([0.5, -1.0], np.float32)
    out, compiled = _compiled_ran(f, x)
    assert compiled
    want = np.tanh(x.astype(np.float64)) * 2.0
    np.testing.assert_allclose(v.numpy(), want, rtol=1e-6)
    np.testing.assert_allclose(out.numpy(), want * x + 1.0, rtol=1e-6)
    assert len(clusters(f, x)) == 2


def test_zeros_like_and_ones_like_of_an_outside_input_compile():
    # Their operand's shape is all they read: it must still reach the cluster at run time.
    @jf.function
    def f(x, y):
        with jf.jit_scope():
            return jf.zeros_like(x) + y * 2.0, jf.ones_like(x) * 3.0

    x = np.random.rand(3, 4).astype(np.float32)
    y = np.random.rand(3, 4).astype(np.float32)
    a, b = f(x, y)
    np.testing.assert_allclose(a.numpy(), y.astype(np.float64) * 2.0, rtol=1e-6)
    np.testing.assert_allclose(b.numpy(), np.full((3, 4), 3.0))
    cf = f.get_concrete_function(x, y)
    assert len(cf.clusters) >= 1
    assert any(op.endswith("ZerosLike") for c in cf.clusters for op in c.ops)
    x2 = np.random.rand(5, 4).astype(np.float32)  # a new batch size: same kernel, new dims
    a2, _ = f(x2, np.ones((5, 4), np.float32))
    np.testing.assert_allclose(a2.numpy(), np.full((5, 4), 2.0))


def _compiled_ran(f, *args):
    before = jf.debugging.stats()["cluster_runs"]
    out = f(*args)
    return out, jf.debugging.stats()["cluster_runs"] > before


def test_shape_compiles_and_feeds_shape_inputs(rng):
    """Shape compiles (XLA compiles it), and a fill to the shape of an input compiles with it,
    for every run-time shape of an all-None signature."""
    spec = [jf.TensorSpec([None, None])]

    @jf.function(input_signature=spec, jit_compile=True)
    def f(x):
        s = jf.shape(x)
        return jf.zeros(s) + x * 2.0 + jf.cast(jf.reduce_sum(s), jf.float32), jf.shape(x, out_type=jf.int64)

    for shape in [(3, 5), (1, 5), (4, 1), (0, 2)]:
        x = rng.standard_normal(shape).astype(np.float32)
        (y, s), ran = _compiled_ran(f, x)
        assert ran, shape
        np.testing.assert_allclose(y.numpy(), x * 2.0 + sum(shape), rtol=1e-6)
        assert s.numpy().tolist() == list(shape) and s.dtype == jf.int64


def test_a_long_fused_chain_compiles_without_recursing_per_op():
    """Code generation walked a fused cluster's expression recursively, a few hundred bytes of
    stack per op: a 20,000-op chain under jit_compile=True overflowed the main thread's 8 MiB
    and killed the interpreter. On a thread with 2 MiB of stack, this 10,000-op chain needs as
    much per op as the old walk would, and still compiles (the walks keep their own stacks)."""
    out = run_in_child("""
        import threading
        def chain():
            @jf.function(jit_compile=True)
            def f(x):
                for _ in range(5000):
                    x = x * 1.0001 + 0.5
                return x
            return f(jf.constant(np.ones(4, np.float32))).numpy().tolist()
        got = {}
        threading.stack_size(2 << 20)
        t = threading.Thread(target=lambda: got.update(value=chain()))
        t.start()
        t.join()
        want = np.ones(4, np.float32)
        for _ in range(5000):
            want = want * np.float32(1.0001) + np.float32(0.5)
        report(lambda: [got["value"], want.tolist(), jf.debugging.stats()["cluster_runs"]])
    """)
    got, want, runs = out["value"]
    np.testing.assert_allclose(got, want, rtol=1e-6)
    assert runs == 1


# ---- JITFLOW_CPU: compiled code for another (older) CPU -------------------------------------------
_CPU_CHILD = """
    from jitflow import _C
    f = jf.function(lambda x: jf.exp(x * 0.375) - 0.125, jit_compile=True)
    def run():
        y = f(np.arange(4, dtype=np.float32)).numpy()
        assert np.allclose(y, np.exp(np.arange(4) * 0.375) - 0.125, rtol=1e-6)
        s = jf.debugging.stats()
        return [_C.cpu_jit_target().split("|")[1], s["compilations"], s["cache_hits"], s["cluster_runs"]]
    report(run)
"""


def test_cpu_override_compiles_for_that_cpu_and_keys_the_cache_apart(tmp_path):
    """JITFLOW_CPU=haswell has LLVM target an AVX2 machine (the tests check that code on newer
    hosts); its objects are cached under their own keys, so host and haswell code never mix."""
    host = run_in_child(_CPU_CHILD, env={"JITFLOW_CACHE_DIR": str(tmp_path), "JITFLOW_CPU": ""})
    assert host["value"] == [jf._C.llvm_host_cpu(), 1, 0, 1]
    first = run_in_child(_CPU_CHILD, env={"JITFLOW_CACHE_DIR": str(tmp_path), "JITFLOW_CPU": "haswell"})
    if "raised" in first and "needs instructions this CPU" in first["message"]:
        # A host without AVX2 refuses the override (the refusal is the behaviour to check).
        assert_raised(first, jf.errors.InvalidArgumentError, "needs instructions this CPU")
        return
    assert first["value"] == ["haswell", 1, 0, 1]  # the host's entry is not taken
    again = run_in_child(_CPU_CHILD, env={"JITFLOW_CACHE_DIR": str(tmp_path), "JITFLOW_CPU": "haswell"})
    assert again["value"] == ["haswell", 0, 1, 1]
    assert len(list(tmp_path.glob("*.jfc"))) == 2


def test_cpu_override_must_be_a_cpu_llvm_knows():
    out = run_in_child(_CPU_CHILD, env={"JITFLOW_CPU": "not-a-cpu"})
    assert_raised(out, "InvalidArgumentError", "JITFLOW_CPU=not-a-cpu is not a CPU LLVM knows")


def _cpu_flags():
    try:
        with open("/proc/cpuinfo") as f:
            return f.read()
    except OSError:
        return None


@pytest.mark.skipif(_cpu_flags() is None or "amx_tile" in _cpu_flags(), reason="needs a CPU known to lack AMX")
def test_cpu_override_refuses_instructions_the_host_lacks():
    # Sapphire Rapids code may use AMX tiles: on a CPU without them it would die of SIGILL.
    out = run_in_child(_CPU_CHILD, env={"JITFLOW_CPU": "sapphirerapids"})
    assert_raised(out, "InvalidArgumentError", "JITFLOW_CPU=sapphirerapids needs instructions", "amx-tile")
