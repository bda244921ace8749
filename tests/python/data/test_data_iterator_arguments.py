"""An iterator (iter(dataset)) passed to a jf.function, as TF 2.21 treats it: keyed by its
element spec (one trace for every iterator of that spec), its elements pulled from the caller's
iterator when the function runs, so each call consumes what it reads. Expected values are TF's
for the same programs."""
import numpy as np
import pytest

import jitflow as jf

D = jf.data.Dataset


def _total(it):
    s = jf.constant(0)
    for x in it:
        s += x
    return s


def test_next_in_a_function_consumes_the_callers_iterator():
    f = jf.function(lambda it: next(it))
    it = iter(D.from_tensor_slices([1, 2, 3]))
    assert [int(f(it)) for _ in range(3)] == [1, 2, 3]  # it gave 1, 1, 1: the trace's first pull
    assert f.experimental_get_tracing_count() == 1
    with pytest.raises(jf.errors.OutOfRangeError):
        f(it)


def test_a_for_loop_over_an_iterator_argument_is_a_graph_loop():
    f = jf.function(_total)
    it = iter(D.from_tensor_slices([1, 2, 3]))
    assert int(f(it)) == 6
    assert int(f(it)) == 0  # exhausted by the first call, as in TF
    other = iter(D.from_tensor_slices([10, 20, 30]))
    next(other)
    assert int(f(other)) == 50
    assert f.experimental_get_tracing_count() == 1


def test_an_iterator_argument_keeps_its_element_structure():
    @jf.function
    def f(it):
        x, y = next(it)
        return x * 2.0, y + 1
    it = iter(D.from_tensor_slices((np.array([1.5, 2.5], np.float32), np.array([3, 4], np.int64))))
    a, b = f(it)
    assert float(a) == 3.0 and int(b) == 4 and b.dtype == jf.int64
    a, b = f(it)
    assert float(a) == 5.0 and int(b) == 5


def test_a_loop_var_changing_dtype_over_an_iterator_is_tfs_type_error():
    @jf.function
    def f(it):
        n = jf.constant(0, dtype=jf.int32)
        for _ in it:
            n = jf.constant(0, dtype=jf.float32)
        return n
    with pytest.raises(TypeError, match="'n' has dtype int32 before the loop, but dtype float32 after"):
        f(iter(D.from_tensor_slices([1, 2, 3])))
