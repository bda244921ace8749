"""A dropped jf.function is reclaimed with its concrete functions and their compiled code:
the C++ cache calls back into Python through a weak reference and shows the objects it holds
to the cycle collector, and compiled code is freed with the last cluster using it (clusters
with the same kernels share it through the compile cache)."""
import gc
import weakref

import numpy as np
import pytest

import jitflow as jf


def _make(mode, c):
    def body(x):
        return jf.exp(x * c) + 1.0

    def scoped(x):
        with jf.jit_scope():
            return body(x)
    if mode == "jit_scope":
        return jf.function(scoped)
    return jf.function(body, jit_compile=(mode == "jit_compile"))


@pytest.mark.parametrize("mode", ["function", "jit_scope", "jit_compile"])
def test_a_dropped_function_and_its_concrete_functions_are_freed(mode):
    x = jf.constant(np.ones(5, np.float32))
    f = _make(mode, 0.5)
    np.testing.assert_allclose(f(x).numpy(), np.exp(0.5) + 1.0, rtol=1e-6)
    refs = [weakref.ref(f), weakref.ref(f.get_concrete_function(x))]
    del f
    gc.collect()
    assert [r() for r in refs] == [None, None]


def test_compiled_code_is_freed_with_the_last_function_using_it():
    x = jf.constant(np.ones(5, np.float32))
    gc.collect()
    base = jf._C.cpu_code_objects_loaded()
    fs = [_make("jit_compile", 0.25 + k / 8) for k in range(5)]  # five different kernels
    for f in fs:
        f(x)
    assert jf._C.cpu_code_objects_loaded() == base + 5
    del fs, f
    gc.collect()
    assert jf._C.cpu_code_objects_loaded() == base


def test_shared_compiled_code_lives_while_any_function_uses_it():
    x = jf.constant(np.arange(4, dtype=np.float32))
    gc.collect()
    base = jf._C.cpu_code_objects_loaded()
    a, b = _make("jit_compile", 0.375), _make("jit_compile", 0.375)  # the same kernels
    a(x), b(x)
    assert jf._C.cpu_code_objects_loaded() == base + 1
    del a
    gc.collect()
    runs = jf.debugging.stats()["cluster_runs"]
    np.testing.assert_allclose(b(x).numpy(), np.exp(np.arange(4) * 0.375) + 1.0, rtol=1e-6)
    assert jf.debugging.stats()["cluster_runs"] > runs
    assert jf._C.cpu_code_objects_loaded() == base + 1
    del b
    gc.collect()
    assert jf._C.cpu_code_objects_loaded() == base


def test_an_object_holding_a_function_method_is_freed():
    class Model:
        def __init__(self):
            self.w = jf.Variable(np.full(3, 2.0, np.float32))

        @jf.function(jit_compile=True)
        def __call__(self, x):
            return self.w * x

    m = Model()
    np.testing.assert_allclose(m(jf.constant([1.0, 2.0, 3.0])).numpy(), [2.0, 4.0, 6.0])
    ref = weakref.ref(m)
    del m
    gc.collect()
    assert ref() is None


def test_functions_made_in_a_loop_do_not_accumulate():
    x = jf.constant(np.ones(3, np.float32))
    gc.collect()
    base = jf._C.cpu_code_objects_loaded()
    refs = []
    for k in range(50):
        f = _make("jit_scope", 1.0 + k)
        f(x)
        refs.append(weakref.ref(f))
    del f
    gc.collect()
    assert all(r() is None for r in refs)
    assert jf._C.cpu_code_objects_loaded() == base
