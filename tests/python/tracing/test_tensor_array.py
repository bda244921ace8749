"""jf.TensorArray: every method eagerly (TF 2's list semantics and errors) and traced (a buffer
and a size carried through loops), dynamic size in a data-dependent loop, O(n) copying in a
traced loop, compiled code around it, gradients of the RNN-over-time pattern vs finite
differences, 0-sized arrays, and TF 2.21's error types and messages."""
import numpy as np
import pytest
from conftest import numeric_grad, run_mode

import jitflow as jf

MODES = ["eager", "function"]


def _t(x):
    return x if isinstance(x, jf.Tensor) else jf.constant(x)


def _np(t):
    return np.asarray(t.numpy() if hasattr(t, "numpy") else t)


# ---- every method, eagerly and traced ----------------------------------------------------------
@pytest.mark.parametrize("mode", MODES)
def test_write_read_stack_size(mode):
    def fn(x):
        ta = jf.TensorArray(jf.float32, size=3, clear_after_read=False)
        ta = ta.write(0, x).write(2, x * 2.0)
        return ta.stack(), ta.read(2), ta.read(1), ta.size()
    s, r2, r1, n = run_mode(mode, fn, jf.constant([1.0, 2.0]))
    np.testing.assert_array_equal(_np(s), [[1, 2], [0, 0], [2, 4]])  # unwritten: zeros
    np.testing.assert_array_equal(_np(r2), [2, 4])
    np.testing.assert_array_equal(_np(r1), [0, 0])
    assert int(n) == 3 and n.dtype == jf.int32


@pytest.mark.parametrize("mode", MODES)
def test_unstack_gather_scatter_concat_split(mode):
    x = np.arange(12, dtype=np.float32).reshape(4, 3)

    def fn(x):
        a = jf.TensorArray(jf.float32, size=4, clear_after_read=False).unstack(x)
        g = a.gather([3, 0, 3])
        b = jf.TensorArray(jf.float32, size=4).scatter([2, 0], x[:2] * 10.0)
        c = a.concat()
        d = jf.TensorArray(jf.float32, size=2).split(jf.reshape(x, [-1]), [6, 6])
        return g, b.stack(), c, d.stack(), a.read(1)
    g, b, c, d, r = run_mode(mode, fn, jf.constant(x))
    np.testing.assert_array_equal(_np(g), x[[3, 0, 3]])
    want_b = np.zeros((4, 3), np.float32)
    want_b[2], want_b[0] = x[0] * 10, x[1] * 10
    np.testing.assert_array_equal(_np(b), want_b)
    np.testing.assert_array_equal(_np(c), x.reshape(-1))
    np.testing.assert_array_equal(_np(d), x.reshape(2, 6))
    np.testing.assert_array_equal(_np(r), x[1])


@pytest.mark.parametrize("mode", MODES)
def test_properties_identity_close(mode):
    seen = {}

    def fn(x):
        ta = jf.TensorArray(jf.float64, size=2, element_shape=[None, 3])
        seen["before"] = ta.element_shape
        ta = ta.write(0, x)
        seen["after"], seen["dtype"], seen["isinstance"] = ta.element_shape, ta.dtype, isinstance(ta, jf.TensorArray)
        seen["handle"] = ta.handle
        out = ta.identity().stack()
        ta.close()
        return out
    out = run_mode(mode, fn, jf.constant(np.ones((2, 3))))
    assert out.shape == (2, 2, 3)
    assert seen["before"].as_list() == [None, 3] and seen["after"].as_list() == [2, 3]
    assert seen["dtype"] == jf.float64 and seen["isinstance"] and seen["handle"] is None


@pytest.mark.parametrize("mode", MODES)
def test_int_and_bool_arrays(mode):
    def fn():
        a = jf.TensorArray(jf.int32, size=2).write(0, 3)
        b = jf.TensorArray(jf.bool, size=2).write(1, True)
        return a.stack(), b.stack()
    a, b = run_mode(mode, fn)
    assert a.dtype == jf.int32 and _np(a).tolist() == [3, 0]
    assert _np(b).tolist() == [False, True]


@pytest.mark.parametrize("mode", MODES)
def test_dynamic_size_grows(mode):
    def fn():
        ta = jf.TensorArray(jf.float32, size=0, dynamic_size=True)
        ta = ta.write(4, 1.0).write(1, 2.0)
        return ta.stack(), ta.size()
    s, n = run_mode(mode, fn)
    np.testing.assert_array_equal(_np(s), [0, 2, 0, 0, 1])
    assert int(n) == 5


def test_eager_array_is_a_mutable_list_as_in_tf():
    ta = jf.TensorArray(jf.float32, size=2)
    ta.write(0, 1.0)  # TF 2's eager TensorArray writes in place and returns itself
    assert ta.write(1, 2.0) is ta
    np.testing.assert_array_equal(ta.stack().numpy(), [1, 2])
    ta.close()
    assert int(ta.size()) == 0


# ---- TF's errors -------------------------------------------------------------------------------
def test_eager_errors_are_tfs():
    ta = jf.TensorArray(jf.float32, size=3)
    with pytest.raises(jf.errors.OutOfRangeError, match=r"Tried to write to index 5 but array is not resizeable and "
                                                        r"size is: 3"):
        ta.write(5, 1.0)
    with pytest.raises(jf.errors.OutOfRangeError, match=r"Writing to negative indices \(index -1\) is not allowed"):
        ta.write(-1, 1.0)
    with pytest.raises(jf.errors.OutOfRangeError, match="Tried to read from index 7 but array size is: 3"):
        ta.read(7)
    with pytest.raises(ValueError, match="Cannot convert a partially known TensorShape <unknown> to a Tensor"):
        ta.read(0)
    ta.write(0, [1.0, 2.0])
    ta.read(0)
    with pytest.raises(jf.errors.InvalidArgumentError, match="Could not read index 0 twice because it was cleared"):
        ta.read(0)
    with pytest.raises(ValueError, match=r"Incompatible shape for value \(\(3,\)\), expected \(\(2,\)\)"):
        ta.write(1, [1.0, 2.0, 3.0])
    with pytest.raises(jf.errors.InvalidArgumentError, match="TensorArray dtype is float32 but Op is trying to write "
                                                             "dtype int32"):
        ta.write(1, jf.constant([1, 2]))
    with pytest.raises(ValueError, match="Size must be declared for TensorArrays when eager execution is enabled"):
        jf.TensorArray(jf.float32)
    with pytest.raises(ValueError, match="Cannot unstack 2 tensors into a TensorArray of static size 1"):
        jf.TensorArray(jf.float32, size=1).unstack([[1.0], [2.0]])
    with pytest.raises(jf.errors.InvalidArgumentError, match="Concat saw a scalar shape at index 0"):
        jf.TensorArray(jf.float32, size=1).write(0, 1.0).concat()
    with pytest.raises(jf.errors.InvalidArgumentError, match="Expected sum of lengths to be equal to values.shape"):
        jf.TensorArray(jf.float32, size=2).split([1.0, 2.0, 3.0], [2, 2])
    with pytest.raises(jf.errors.InvalidArgumentError, match=r"TensorArray's size is not equal to the size of "
                                                             r"lengths \(3 vs. 2\)"):
        jf.TensorArray(jf.float32, size=3).split([1.0, 2.0, 3.0], [2, 1])
    with pytest.raises(TypeError, match="list indices must be integers"):
        jf.TensorArray(jf.float32, size=2).read(1.0)


def _traced(fn):
    return jf.function(fn)()


def test_traced_errors_are_tfs():
    with pytest.raises(jf.errors.InvalidArgumentError, match="Trying to modify element 5 in a list with 3 elements"):
        _traced(lambda: jf.TensorArray(jf.float32, size=3).write(5, 1.0).stack())
    with pytest.raises(jf.errors.InvalidArgumentError, match="Trying to modify element -1 in a list with 3 elements"):
        _traced(lambda: jf.TensorArray(jf.float32, size=3).write(-1, 1.0).stack())
    with pytest.raises(jf.errors.InvalidArgumentError, match="Trying to access element 5 in a list with 3 elements"):
        _traced(lambda: jf.TensorArray(jf.float32, size=3).write(0, 1.0).read(5))
    with pytest.raises(jf.errors.InvalidArgumentError, match="Index 5 out of range; list only has 3 elements"):
        _traced(lambda: jf.TensorArray(jf.float32, size=3).unstack([1.0, 2.0, 3.0]).gather([0, 5]))
    with pytest.raises(jf.errors.InvalidArgumentError, match="Trying to read an uninitialized tensor but "
                                                             "element_shape is not fully defined: <unknown>"):
        _traced(lambda: jf.TensorArray(jf.float32, size=3).read(1))
    with pytest.raises(jf.errors.InvalidArgumentError, match="Tried to stack list which only contains uninitialized "
                                                             "tensors and has a non-fully-defined element_shape"):
        _traced(lambda: jf.TensorArray(jf.float32, size=3).stack())
    with pytest.raises(jf.errors.InvalidArgumentError, match="Tried to stack elements of an empty list with "
                                                             "non-fully-defined element_shape: <unknown>"):
        _traced(lambda: jf.TensorArray(jf.float32, size=0).stack())
    with pytest.raises(ValueError, match=r"Inconsistent shapes: saw \(3,\) but expected \(2,\)"):
        _traced(lambda: jf.TensorArray(jf.float32, size=3).write(0, [1.0, 2.0]).write(1, [1.0, 2.0, 3.0]).stack())
    with pytest.raises(jf.errors.InvalidArgumentError, match="TensorArray dtype is float32 but Op is trying"):
        _traced(lambda: jf.TensorArray(jf.float32, size=3).write(0, jf.constant(1)).stack())
    with pytest.raises(ValueError, match="Argument `size` must be provided"):
        _traced(lambda: jf.TensorArray(jf.float32).stack())
    with pytest.raises(TypeError, match="Expected int32 passed to parameter 'index'"):
        _traced(lambda: jf.TensorArray(jf.float32, size=3).write(1.0, 1.0).stack())
    with pytest.raises(jf.errors.InvalidArgumentError, match="Concat saw a scalar shape at index 0"):
        _traced(lambda: jf.TensorArray(jf.float32, size=2).write(0, 1.0).concat())


# ---- 0-sized arrays ----------------------------------------------------------------------------
def test_empty_arrays():
    assert jf.TensorArray(jf.float32, size=0).stack().shape == (0,)  # TF eager: shape (0,)
    assert jf.TensorArray(jf.float32, size=0, element_shape=[2, 3]).stack().shape == (0, 2, 3)
    assert jf.function(lambda: jf.TensorArray(jf.float32, size=0, element_shape=[2]).stack())().shape == (0, 2)
    assert jf.function(lambda: jf.TensorArray(jf.float32, size=3).unstack(jf.zeros([3, 0])).gather([]))().shape \
        == (0, 0)
    assert jf.TensorArray(jf.float32, size=3).unstack(np.zeros((3, 2), np.float32)).gather([]).shape == (0,)

    @jf.function
    def loop(n):
        ta = jf.TensorArray(jf.float32, size=n)
        for i in jf.range(n):
            ta = ta.write(i, jf.fill([2], jf.cast(i, jf.float32)))
        return ta.stack()
    assert loop(jf.constant(0)).shape == (0, 2)
    np.testing.assert_array_equal(loop(jf.constant(3)).numpy(), [[0, 0], [1, 1], [2, 2]])


# ---- loops -------------------------------------------------------------------------------------
def test_while_loop_carries_arrays_eager_and_traced():
    def fn():
        ta = jf.TensorArray(jf.float32, size=4)

        def body(i, ta):
            return i + 1, ta.write(i, jf.cast(i * i, jf.float32))
        _, ta = jf.while_loop(lambda i, ta: i < 4, body, [jf.constant(0), ta])
        return ta.stack()
    for mode in MODES:
        np.testing.assert_array_equal(_np(run_mode(mode, fn)), [0, 1, 4, 9])


def test_unknown_dims_nested_loops_and_a_single_loop_var():
    @jf.function(input_signature=[jf.TensorSpec([None, None], jf.float32)])
    def doubled(x):
        n = jf.shape(x)[0]
        src = jf.TensorArray(jf.float32, size=n).unstack(x)
        out = jf.TensorArray(jf.float32, size=n).write(0, src.read(0) * 2.0)  # element shape (None,)
        for i in jf.range(1, n):
            out = out.write(i, src.read(i) * 2.0)
        return out.stack()
    x = np.arange(6, dtype=np.float32).reshape(3, 2)
    np.testing.assert_array_equal(doubled(x).numpy(), 2 * x)

    @jf.function
    def nested(n):
        outer = jf.TensorArray(jf.float32, size=n)
        for i in jf.range(n):
            inner = jf.TensorArray(jf.float32, size=3)
            for j in jf.range(3):
                inner = inner.write(j, jf.cast(i * 10 + j, jf.float32))
            outer = outer.write(i, inner.stack())
        return outer.stack()
    np.testing.assert_array_equal(nested(jf.constant(2)).numpy(), [[0, 1, 2], [10, 11, 12]])

    @jf.function
    def counting(n):
        ta = jf.TensorArray(jf.float32, size=0, dynamic_size=True, element_shape=[])
        return jf.while_loop(lambda ta: ta.size() < n,
                             lambda ta: ta.write(ta.size(), jf.cast(ta.size(), jf.float32)), ta).stack()
    np.testing.assert_array_equal(counting(jf.constant(3)).numpy(), [0, 1, 2])

    # An element shape the trace does not know is learnt when the loop's first write runs, as
    # TF's TensorList learns it; unwritten rows are zeros of it.
    @jf.function(input_signature=[jf.TensorSpec([None, None], jf.float32)])
    def unknown_in_loop(x):
        out = jf.TensorArray(jf.float32, size=jf.shape(x)[0] + 1)
        for i in jf.range(jf.shape(x)[0]):
            out = out.write(i, x[i])
        return out.stack()
    np.testing.assert_array_equal(unknown_in_loop(x).numpy(), np.concatenate([x, np.zeros((1, 2), np.float32)]))
    wide = np.arange(8, dtype=np.float32).reshape(2, 4)
    np.testing.assert_array_equal(unknown_in_loop(wide).numpy(), np.concatenate([wide, np.zeros((1, 4), np.float32)]))

    @jf.function(input_signature=[jf.TensorSpec([None], jf.float32)])
    def two_shapes(x):
        out = jf.TensorArray(jf.float32, size=2)
        for i in jf.range(2):
            out = out.write(i, x[:jf.shape(x)[0] - i])
        return out.stack()
    with pytest.raises(jf.errors.InvalidArgumentError, match=r"Incompatible shapes"):
        two_shapes(np.ones(3, np.float32))

    @jf.function
    def never_written(n):
        out = jf.TensorArray(jf.float32, size=2)
        return jf.while_loop(lambda i, ta: i < n, lambda i, ta: (i + 1, ta), [0, out])[1].stack()
    with pytest.raises(ValueError, match=r"needs an element shape before the loop .* writes no element"):
        never_written(jf.constant(2))


def test_cond_returns_arrays():
    @jf.function
    def f(p):
        ta = jf.TensorArray(jf.float32, size=2, element_shape=[])
        ta = jf.cond(p, lambda: ta.write(0, 1.0), lambda: ta.write(1, 2.0))
        return ta.stack()
    np.testing.assert_array_equal(f(jf.constant(True)).numpy(), [1, 0])
    np.testing.assert_array_equal(f(jf.constant(False)).numpy(), [0, 2])


def _collatz(n):
    out = []
    while n != 1:
        out.append(n)
        n = n // 2 if n % 2 == 0 else 3 * n + 1
    return out


def test_dynamic_size_in_a_data_dependent_loop():
    @jf.function
    def steps(n):
        ta = jf.TensorArray(jf.int32, size=0, dynamic_size=True)
        i = 0
        while n != 1:  # AutoGraph: a While whose trip count depends on the data
            ta = ta.write(i, n)
            n = jf.where(n % 2 == 0, n // 2, 3 * n + 1)
            i += 1
        return ta.stack(), ta.size()
    for start in (1, 6, 27):
        s, size = steps(jf.constant(start))
        assert s.numpy().tolist() == _collatz(start) and int(size) == len(_collatz(start))
    assert steps.experimental_get_tracing_count() == 1


def test_traced_loop_copies_linearly():
    """n writes in a traced loop copy O(n) bytes: each write updates the loop-carried buffer in
    place; only the first write of a fixed array (whose zeros are a shared constant) and the
    geometric growth of a dynamic one copy. Quadratic copying would be 16x for 4x the writes."""
    def run(fn, n):
        fn(jf.constant(n))
        before = jf.debugging.stats()["tensor_array_copied_bytes"]
        out = fn(jf.constant(n))
        assert out.shape == (n, 16)
        np.testing.assert_array_equal(out.numpy()[:, 0], np.arange(n))
        return jf.debugging.stats()["tensor_array_copied_bytes"] - before

    @jf.function
    def fixed(n):
        ta = jf.TensorArray(jf.float32, size=n)
        for i in jf.range(n):
            ta = ta.write(i, jf.fill([16], jf.cast(i, jf.float32)))
        return ta.stack()

    @jf.function
    def growing(n):
        ta = jf.TensorArray(jf.float32, size=0, dynamic_size=True)
        for i in jf.range(n):
            ta = ta.write(i, jf.fill([16], jf.cast(i, jf.float32)))
        return ta.stack()
    row = 16 * 4
    assert run(fixed, 200) == 200 * row and run(fixed, 800) == 800 * row
    small, big = run(growing, 200), run(growing, 800)
    assert small <= 2 * 200 * row and big <= 2 * 800 * row, (small, big)


def test_write_in_place_never_changes_a_value_someone_holds():
    @jf.function
    def f(x):
        ta = jf.TensorArray(jf.float32, size=2).unstack(x)
        before = ta.stack()          # shares the buffer
        after = ta.write(0, 9.0)     # must copy: `before` still reads it
        return before, after.stack()
    x = np.array([1.0, 2.0], np.float32)
    before, after = f(x)
    assert before.numpy().tolist() == [1, 2] and after.numpy().tolist() == [9, 2]
    assert x.tolist() == [1, 2]


def test_jf_function_returns_an_array():
    @jf.function
    def f():
        return jf.TensorArray(jf.float32, size=2).write(1, 5.0)
    ta = f()
    assert isinstance(ta, jf.TensorArray)
    np.testing.assert_array_equal(ta.stack().numpy(), [0, 5])


# ---- compiled ----------------------------------------------------------------------------------
def _steps(x, w):
    ta = jf.TensorArray(jf.float32, size=4)
    for i in jf.range(4):
        with jf.jit_scope():
            y = jf.tanh(x * w + jf.cast(i, jf.float32))
        ta = ta.write(i, y)
    return ta.stack() * 2.0


def _steps_ref(x, w):
    return np.stack([np.tanh(x * w + i) for i in range(4)]) * 2.0


@pytest.mark.parametrize("kw", [{}, {"jit_compile": True}])
def test_compiled_code_runs_around_array_ops(kw):
    x, w = np.array([0.5, -1.0], np.float32), np.float32(0.7)
    before = jf.debugging.stats()["cluster_runs"]
    got = jf.function(_steps, **kw)(jf.constant(x), jf.constant(w))
    assert jf.debugging.stats()["cluster_runs"] > before
    np.testing.assert_allclose(got.numpy(), _steps_ref(x, w), rtol=1e-6)


# ---- gradients: the RNN-over-time pattern ------------------------------------------------------
def _rnn(x, w, u, dynamic=False):
    xs = jf.TensorArray(jf.float64, size=4).unstack(x)
    hs = jf.TensorArray(jf.float64, size=1 if dynamic else 4, dynamic_size=dynamic)
    h = jf.zeros([2], jf.float64)
    for t in jf.range(4):
        h = jf.tanh(jf.reshape(jf.matmul(w, jf.reshape(h, [2, 1])), [2]) + xs.read(t) * u)
        hs = hs.write(t, h)
    return jf.reduce_sum(hs.stack() ** 2)


def _rnn_np(x, w, u):
    h, loss = np.zeros(2), 0.0
    for t in range(4):
        h = np.tanh(w @ h + x[t] * u)
        loss += np.sum(h ** 2)
    return loss


def _rnn_grads(x, w, u, dynamic=False):
    x, w, u = _t(x), _t(w), _t(u)
    with jf.GradientTape() as tape:
        tape.watch([x, w, u])
        loss = _rnn(x, w, u, dynamic)
    return tape.gradient(loss, [x, w, u])


@pytest.mark.parametrize("dynamic", [False, True])
@pytest.mark.parametrize("mode", ["eager", "function", "jit_scope", "jit_compile"])
def test_rnn_over_time_gradient_matches_finite_differences(mode, dynamic, rng):
    x, w, u = rng.standard_normal((4, 2)), rng.standard_normal((2, 2)) * 0.5, rng.standard_normal(2)
    if mode == "eager":
        got = _rnn_grads(x, w, u, dynamic)
    elif mode == "function":
        got = jf.function(lambda x, w, u: _rnn_grads(x, w, u, dynamic))(x, w, u)
    elif mode == "jit_compile" and dynamic:
        # TF's XLA needs a fixed size too: a growing array's stack gradient is a Range whose
        # length is only known at run time, which jit_compile=True refuses by name.
        with pytest.raises(jf.errors.InvalidArgumentError, match="TensorArrayStack_grad/Range"):
            jf.function(lambda x, w, u: _rnn_grads(x, w, u, dynamic), jit_compile=True)(x, w, u)
        return
    elif mode == "jit_compile":
        # The backward loop's reads of the saved values run between its compiled units (it
        # was refused: "cannot compile the function as one unit").
        before = jf.debugging.stats()["cluster_runs"]
        got = jf.function(lambda x, w, u: _rnn_grads(x, w, u, dynamic), jit_compile=True)(x, w, u)
        assert jf.debugging.stats()["cluster_runs"] > before
    else:
        def scoped(x, w, u):
            with jf.jit_scope():
                return _rnn_grads(x, w, u, dynamic)
        before = jf.debugging.stats()["cluster_runs"]
        got = jf.function(scoped)(x, w, u)
        assert jf.debugging.stats()["cluster_runs"] > before
    want = numeric_grad(_rnn_np, [x, w, u])
    for g, n in zip(got, want):
        np.testing.assert_allclose(g.numpy(), n, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("mode", MODES)
def test_gather_scatter_concat_gradients(mode, rng):
    x = rng.standard_normal((3, 2))

    def loss(x):
        a = jf.TensorArray(jf.float64, size=3, clear_after_read=False).unstack(x * x)
        b = jf.TensorArray(jf.float64, size=4).scatter([3, 1], a.gather([2, 0]) * 3.0)
        return jf.reduce_sum(b.concat() * jf.constant(np.arange(8.0))) + jf.reduce_sum(a.read(1))

    def np_loss(x):
        b = np.zeros((4, 2))
        b[3], b[1] = 3 * x[2] ** 2, 3 * x[0] ** 2
        return float(np.sum(b.reshape(-1) * np.arange(8.0)) + np.sum(x[1] ** 2))

    def grads(x):
        x = _t(x)
        with jf.GradientTape() as tape:
            tape.watch(x)
            y = loss(x)
        return tape.gradient(y, x)
    np.testing.assert_allclose(_np(run_mode(mode, grads, x)), numeric_grad(np_loss, [x])[0], rtol=1e-6)


def test_rnn_gradient_through_a_traced_loop_copies_linearly():
    """The While gradient saves loop vars in place (TensorArrayWrite accumulators, capacity
    doubling) and does not save an array the body only overwrites: 4x the steps copy ~4x the
    bytes (saving the [n, 8] output array at every step, or concatenating accumulators, would
    be 16x)."""
    def make(n):
        @jf.function
        def grad(x, w):
            with jf.GradientTape() as tape:
                tape.watch(w)
                xs = jf.TensorArray(jf.float32, size=n).unstack(x)
                hs = jf.TensorArray(jf.float32, size=n)
                h = jf.zeros([1, 8])
                for i in jf.range(n):
                    h = jf.tanh(jf.matmul(h, w) + xs.read(i))
                    hs = hs.write(i, h)
                loss = jf.reduce_sum(hs.stack())
            return tape.gradient(loss, w)
        return grad

    def copied(n, rng):
        f = make(n)
        x, w = rng.standard_normal((n, 1, 8)).astype(np.float32), (0.1 * rng.standard_normal((8, 8))).astype(np.float32)
        f(x, w)
        before = jf.debugging.stats()["tensor_array_copied_bytes"]
        f(x, w)
        return jf.debugging.stats()["tensor_array_copied_bytes"] - before
    rng = np.random.default_rng(0)
    small, big = copied(64, rng), copied(256, rng)
    assert 0 < big <= 5 * small, (small, big)


def test_an_array_only_one_branch_writes():
    # TF's arrays are variant tensors, so a cond whose one branch writes a fresh array and whose
    # other leaves it untouched is fine there; unwritten elements stack as zeros (TF 2.21's
    # values for these calls).
    @jf.function
    def functional(p):
        ta = jf.TensorArray(jf.float32, size=2)
        ta = jf.cond(p, lambda: ta.write(0, jf.ones([3])), lambda: ta)
        return ta.stack()

    np.testing.assert_array_equal(functional(jf.constant(True)).numpy(), [[1, 1, 1], [0, 0, 0]])
    np.testing.assert_array_equal(functional(jf.constant(False)).numpy(), np.zeros((2, 3)))

    @jf.function
    def statement(p):
        ta = jf.TensorArray(jf.float32, size=2)
        if p:
            ta = ta.write(1, jf.ones([2]))
        return ta.stack()

    np.testing.assert_array_equal(statement(jf.constant(True)).numpy(), [[0, 0], [1, 1]])
    np.testing.assert_array_equal(statement(jf.constant(False)).numpy(), np.zeros((2, 2)))


def test_conditional_writes_inside_a_loop():
    @jf.function
    def squares_of_evens(n):
        acc = jf.TensorArray(jf.int32, size=0, dynamic_size=True)
        k = 0
        for i in jf.range(n):
            if i % 2 == 0:
                acc = acc.write(k, i * i)
                k += 1
            if i > 6:
                break
        return acc.stack()

    assert squares_of_evens(jf.constant(10)).numpy().tolist() == [0, 4, 16, 36]
    assert squares_of_evens(jf.constant(5)).numpy().tolist() == [0, 4, 16]
