"""Shape vectors the graph knows in part (TF's constant partial shape): zeros([tf.shape(x)[0],
2]) has two columns when traced, as in TF, so code that reads a static dim after such an op
(a layer sizing its weights from x.shape[-1]) sees what TF sees. The expected static shapes
are TF 2.21's for the same functions and signature; the values are checked against numpy."""
import numpy as np
import pytest

import jitflow as jf

SPEC = jf.TensorSpec([None, 8], jf.float32)

# name: (function, TF 2.21's static output shape, the value for x of shape [5, 8])
CASES = {
    "zeros": (lambda x: jf.zeros([jf.shape(x)[0], 2]), (None, 2), lambda x: np.zeros([5, 2])),
    "fill": (lambda x: jf.fill([3, jf.shape(x)[0]], 1.0), (3, None), lambda x: np.ones([3, 5])),
    "ones_concat": (lambda x: jf.ones(jf.concat([jf.shape(x)[:1], [5]], 0)), (None, 5),
                    lambda x: np.ones([5, 5])),
    "reshape": (lambda x: jf.reshape(x, [jf.shape(x)[0], -1, 4]), (None, None, 4),
                lambda x: x.reshape(5, 2, 4)),
    "reshape_known_input": (lambda x: jf.reshape(jf.zeros([6, 4]), [jf.shape(x)[0] - 2, 8]), (3, 8),
                            lambda x: np.zeros([3, 8])),
    "reshape_to_own_shape": (lambda x: jf.reshape(x, jf.shape(x)), (None, 8), lambda x: x),
    "broadcast_to": (lambda x: jf.broadcast_to(jf.constant([1.0, 2.0]), [jf.shape(x)[0], 3, 2]),
                     (None, 3, 2), lambda x: np.broadcast_to([1.0, 2.0], [5, 3, 2])),
    "tile": (lambda x: jf.tile(jf.zeros([2, 3]), [jf.shape(x)[0], 2]), (None, 6),
             lambda x: np.zeros([10, 6])),
    "known_dim_of_shape": (lambda x: jf.zeros([jf.shape(x)[1], jf.shape(x)[0]]), (8, None),
                           lambda x: np.zeros([8, 5])),
    "slice_of_shape": (lambda x: jf.zeros(jf.concat([[2], jf.shape(x)[1:]], 0)), (2, 8),
                       lambda x: np.zeros([2, 8])),
    "cast": (lambda x: jf.zeros(jf.cast(jf.stack([jf.shape(x)[0], 3]), jf.int64)), (None, 3),
             lambda x: np.zeros([5, 3])),
}


@pytest.mark.parametrize("jit", [False, True], ids=["function", "jit_compile"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_static_shape_as_tf_and_values(name, jit):
    fn, tf_shape, ref = CASES[name]
    f = jf.function(fn, input_signature=[SPEC], jit_compile=jit)
    if jit and name == "tile":
        # Multiples computed at run time do not compile (kernels take dims as arguments,
        # not one compile per shape as XLA): refused by name, never a silent fallback.
        with pytest.raises(jf.errors.InvalidArgumentError, match="'Tile'.*computed at run time"):
            f.get_concrete_function()
        return
    out = f.get_concrete_function().structured_outputs
    assert tuple(out.shape.as_list()) == tf_shape
    x = np.arange(40, dtype=np.float32).reshape(5, 8)
    got = f(jf.constant(x)).numpy()
    np.testing.assert_array_equal(got, ref(x))


def test_random_shape_knows_its_columns():
    f = jf.function(lambda x: jf.random.uniform([jf.shape(x)[0], 7]), input_signature=[SPEC])
    assert f.get_concrete_function().structured_outputs.shape.as_list() == [None, 7]
    assert f(jf.zeros([4, 8])).shape == (4, 7)


def test_a_dense_layer_after_a_partial_reshape_builds():
    # The last dim the reshape gives is what a weight matmul needs to know when traced.
    w = jf.Variable(np.ones([4, 3], np.float32))

    @jf.function(input_signature=[SPEC])
    def f(x):
        h = jf.reshape(x, [jf.shape(x)[0], -1, 4])
        assert h.shape[-1] == 4
        return jf.matmul(h, w)
    x = np.arange(40, dtype=np.float32).reshape(5, 8)
    np.testing.assert_allclose(f(jf.constant(x)).numpy(), x.reshape(5, 2, 4) @ np.ones([4, 3]))


def test_a_wrong_run_time_value_still_fails_at_run_time():
    # The known part is checked when the op runs: a known element that disagrees with the
    # graph's claim cannot happen, but an unknown one can still be any size.
    f = jf.function(lambda x, n: jf.reshape(x, [n, 8]),
                    input_signature=[SPEC, jf.TensorSpec([], jf.int32)])
    assert f.get_concrete_function().structured_outputs.shape.as_list() == [None, 8]
    with pytest.raises(jf.errors.InvalidArgumentError):
        f(jf.zeros([5, 8]), jf.constant(3))
