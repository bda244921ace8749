"""Variables under concurrent updates: assign_add / assign_sub are read-modify-writes under the
variable's own lock (TF's resource-variable kernels hold it), so threads updating one variable
lose no updates, eagerly, traced, compiled and through an optimizer; and, as TF, an update
of another shape is refused instead of broadcast, and assign checks the value's shape and dtype."""
import numpy as np
import pytest
from conftest import run_in_threads

import jitflow as jf

THREADS, CALLS = 8, 400


def _updater(mode, v, delta, method="assign_add"):
    def body():
        getattr(v, method)(delta, read_value=False)
    if mode == "eager":
        return body
    if mode == "jit_scope":
        def scoped():
            with jf.jit_scope():
                body()
        return jf.function(scoped)
    return jf.function(body, jit_compile=(mode == "jit_compile"))


@pytest.mark.parametrize("mode", ["eager", "function", "jit_scope", "jit_compile"])
@pytest.mark.parametrize("n", [70000, 1024, 1])
def test_concurrent_assign_add_loses_no_update(mode, n):
    v = jf.Variable(np.zeros(n, np.float32))
    f = _updater(mode, v, jf.constant(np.ones(n, np.float32)))
    f()  # trace (and compile) before the threads start

    def worker(_):
        for _ in range(CALLS):
            f()
    run_in_threads(worker, THREADS)
    np.testing.assert_array_equal(v.numpy(), np.full(n, THREADS * CALLS + 1, np.float32))


@pytest.mark.parametrize("mode", ["eager", "function"])
def test_concurrent_adds_and_subs_of_one_variable_cancel_exactly(mode):
    v = jf.Variable(np.full(5000, 7, np.int64))
    ones = jf.constant(np.ones(5000, np.int64))
    add, sub = _updater(mode, v, ones), _updater(mode, v, ones, "assign_sub")
    add(), sub()

    def worker(k):
        for _ in range(CALLS):
            (add if k % 2 else sub)()
    run_in_threads(worker, THREADS)
    np.testing.assert_array_equal(v.numpy(), np.full(5000, 7, np.int64))


def test_concurrent_optimizer_steps_on_one_variable_lose_no_update():
    # SGD without momentum is one assign_sub per variable: every thread's step lands.
    w = jf.Variable(np.zeros(3000, np.float64))
    opt = jf.optimizers.SGD(learning_rate=0.5)
    g = jf.constant(np.ones(3000, np.float64))
    step = jf.function(lambda: opt.apply_gradients([(g, w)]))
    step()

    def worker(_):
        for _ in range(CALLS):
            step()
    run_in_threads(worker, THREADS)
    np.testing.assert_array_equal(w.numpy(), np.full(3000, -0.5 * (THREADS * CALLS + 1)))


@pytest.mark.parametrize("method", ["assign_add", "assign_sub", "assign"])
@pytest.mark.parametrize("value", [1.0, [1.0], [[1.0, 2.0, 3.0]]], ids=["scalar", "one", "row"])
def test_an_update_of_another_shape_is_refused_not_broadcast(method, value):
    v = jf.Variable([1.0, 2.0, 3.0])
    # TF: assign checks the static shape in Python (ValueError); the updates in the kernel.
    error = ValueError if method == "assign" else jf.errors.InvalidArgumentError
    with pytest.raises(error, match="shape|type"):
        getattr(v, method)(value)
    np.testing.assert_array_equal(v.numpy(), [1.0, 2.0, 3.0])


def test_assign_add_of_another_shape_names_both_shapes_as_tf():
    v = jf.Variable([1.0, 2.0, 3.0])
    with pytest.raises(jf.errors.InvalidArgumentError,
                       match=r"Cannot update variable .* with shape \[3\] using a Tensor with shape \[1\], "
                             r"shapes must be equal"):
        v.assign_add([1.0])
    with pytest.raises(jf.errors.InvalidArgumentError, match="shapes must be equal"):
        jf.function(lambda: v.assign_sub(jf.ones([1])))()
    np.testing.assert_array_equal(v.numpy(), [1.0, 2.0, 3.0])


@pytest.mark.parametrize("method", ["assign", "assign_add", "assign_sub"])
@pytest.mark.parametrize("mode", ["function", "jit_compile"])
def test_an_update_with_dims_unknown_when_traced_is_checked_when_it_runs(method, mode):
    # As TF: the trace accepts the value of shape [None] (it was refused: "Cannot update
    # variable ... with shape [3] using a Tensor with shape [?]"); a run with another shape
    # raises and leaves the variable as it was.
    v = jf.Variable([1.0, 2.0, 3.0])

    @jf.function(input_signature=[jf.TensorSpec([None], jf.float32)], jit_compile=mode == "jit_compile")
    def f(x):
        getattr(v, method)(x * 2.0)
        return v.read_value()

    want = {"assign": [2.0, 2.0, 2.0], "assign_add": [3.0, 4.0, 5.0], "assign_sub": [-1.0, 0.0, 1.0]}[method]
    np.testing.assert_array_equal(f(jf.constant([1.0, 1.0, 1.0])).numpy(), want)
    with pytest.raises(jf.errors.InvalidArgumentError, match=r"shape \[3\].*\[2\]"):
        f(jf.constant([1.0, 1.0]))
    np.testing.assert_array_equal(v.numpy(), want)


def test_variable_assign_checks_shape_and_dtype_as_tf():
    a = jf.Variable([2.0, 3.0])
    with pytest.raises(ValueError, match=r"Shape mismatch.The variable shape \(2,\), and the assigned value shape \(3,\)"):
        a.assign([1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="requested dtype float32 for Tensor with dtype int32"):
        a.assign(jf.constant([1, 2]))

    @jf.function
    def f():
        a.assign([1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="Shape mismatch"):
        f()
    assert a.numpy().tolist() == [2.0, 3.0]
    a.assign([1, 2])  # Python ints convert to the variable's dtype
    assert a.numpy().tolist() == [1.0, 2.0]
