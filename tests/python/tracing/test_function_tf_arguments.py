"""jf.function takes every argument TF 2.21's tf.function takes, in its order: the deprecated
spellings with TF's meaning and deprecation warning, the FunctionDef annotations checked as TF
checks them."""
import numpy as np
import pytest

import jitflow as jf


def _double(x):
    return x * 2.0 + 1.0


def test_experimental_compile_is_jit_compile_with_a_deprecation_warning():
    with pytest.warns(DeprecationWarning, match="experimental_compile is deprecated, use jit_compile instead"):
        f = jf.function(_double, experimental_compile=True)
    before = jf.debugging.stats()["cluster_runs"]
    np.testing.assert_allclose(f(jf.constant([1.0, 2.0])).numpy(), [3.0, 5.0])
    assert jf.debugging.stats()["cluster_runs"] > before  # compiled, as jit_compile=True
    with pytest.warns(DeprecationWarning):
        g = jf.function(experimental_compile=False)(_double)  # the decorator form
    assert g(jf.constant(1.0)).numpy() == 3.0
    with pytest.raises(ValueError, match="Cannot specify both 'experimental_compile' and 'jit_compile'."), \
            pytest.warns(DeprecationWarning):
        jf.function(_double, jit_compile=True, experimental_compile=True)


def test_experimental_relax_shapes_is_reduce_retracing():
    with pytest.warns(DeprecationWarning, match="experimental_relax_shapes is deprecated, use reduce_retracing"):
        f = jf.function(_double, experimental_relax_shapes=True)
    for n in (2, 3, 4):
        f(jf.ones([n]))
    assert f.experimental_get_tracing_count() == 2  # the second shape relaxes to [None]
    # as in TF, a false experimental_relax_shapes leaves reduce_retracing as it was given
    with pytest.warns(DeprecationWarning):
        g = jf.function(_double, reduce_retracing=True, experimental_relax_shapes=False)
    for n in (2, 3, 4):
        g(jf.ones([n]))
    assert g.experimental_get_tracing_count() == 2


def test_experimental_follow_type_hints_is_accepted_and_ignored():
    def typed(x: jf.Tensor, n: int):
        return x * n

    with pytest.warns(DeprecationWarning, match="experimental_follow_type_hints is deprecated"):
        f = jf.function(typed, experimental_follow_type_hints=True)
    assert f(jf.constant(2.0), 3).numpy() == 6.0


def test_experimental_implements_and_attributes_are_checked_and_have_no_effect():
    f = jf.function(_double, experimental_implements="mycompany.double_plus_one",
                    experimental_attributes={"_noinline": True, "api_implements": "double"})
    assert f(jf.constant(1.0)).numpy() == 3.0
    with pytest.raises(ValueError, match="`_XlaMustCompile is not supported by tf.function as an attribute."):
        jf.function(_double, experimental_attributes={"_XlaMustCompile": True})


def test_positional_arguments_follow_tf_function_s_order():
    # func, input_signature, autograph, jit_compile, reduce_retracing, experimental_implements,
    # experimental_autograph_options, experimental_attributes
    f = jf.function(_double, [jf.TensorSpec([None])], True, True, False, None, None, None)
    before = jf.debugging.stats()["cluster_runs"]
    np.testing.assert_allclose(f(jf.constant([1.0, 2.0, 3.0])).numpy(), [3.0, 5.0, 7.0])
    f(jf.constant([1.0]))
    assert f.experimental_get_tracing_count() == 1
    assert jf.debugging.stats()["cluster_runs"] > before


def test_input_signature_converts_python_values_to_its_dtypes():
    # TF 2.21 binds Python numbers, lists and numpy values to an input_signature's TensorSpecs
    # (converting to their dtype: 3 -> 6.0, an int64 array -> int32), one trace for all.
    f = jf.function(lambda x: x * 2, input_signature=[jf.TensorSpec([], jf.float32)])
    got = [f(v) for v in (1.0, 3, np.float32(2), np.float64(2.5), jf.constant(1.5))]
    assert [float(t) for t in got] == [2.0, 6.0, 4.0, 5.0, 3.0]
    assert all(t.dtype == jf.float32 for t in got)
    assert f.experimental_get_tracing_count() == 1
    g = jf.function(lambda x: x * 2, input_signature=[jf.TensorSpec([None], jf.int32)])
    np.testing.assert_array_equal(g([1, 2, 3]).numpy(), [2, 4, 6])
    np.testing.assert_array_equal(g(np.array([1, 2], np.int64)).numpy(), [2, 4])
    with pytest.raises(TypeError, match=r"Binding inputs to jf.function failed due to `Cannot convert \[1.5\]"):
        g([1.5])
    s = jf.function(lambda s: s + s, input_signature=[jf.TensorSpec([], jf.string)])
    assert s("ab").numpy() == b"abab" and s(b"cd").numpy() == b"cdcd"
    assert s.experimental_get_tracing_count() == 1
    with pytest.raises(TypeError, match="does not match input_signature"):  # a tensor is not cast
        f(jf.constant(1, jf.int32))


def test_a_concrete_function_converts_python_values_to_its_inputs():
    # TF: cf(2.0, [1, 2]) binds to the traced float32 and int64 inputs.
    cf = jf.function(lambda x, y: (x * 2.0, y + 1)).get_concrete_function(
        jf.TensorSpec([], jf.float32), jf.TensorSpec([2], jf.int64))
    a, b = cf(2.0, [1, 2])
    assert a.dtype == jf.float32 and float(a) == 4.0
    assert b.dtype == jf.int64 and b.numpy().tolist() == [2, 3]
