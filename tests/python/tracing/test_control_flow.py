"""jf.cond's and jf.while_loop's arguments, checked as TF 2.21 checks them, eagerly and inside
jf.function: the predicate (a scalar bool; strings, None and non-bool values refused),
maximum_iterations (a negative bound runs no iteration, a fractional one is refused),
shape_invariants (TensorShape's rules), and structures that cannot be flattened
(self-referencing or too deep) refused without a crash. Traced control flow against eager:
test_function.py and test_autograph.py; gradients: autodiff/test_while_grad.py; compiled:
compile/test_compiled_control_flow.py."""
import numpy as np
import pytest
from conftest import eager_and_traced, run_in_child

import jitflow as jf

IAE = jf.errors.InvalidArgumentError


# ---- cond's predicate ----------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["eager", "function"])
def test_cond_on_a_string_raises(mode):
    # Was Python truthiness ('yes' chose true_fn). TF in tf.function: InvalidArgumentError
    # "Input 'pred' passed string expected bool".
    fn = eager_and_traced(lambda: jf.cond("yes", lambda: jf.constant(1), lambda: jf.constant(2)))[mode]
    with pytest.raises(IAE, match="predicate must be a scalar bool"):
        fn()


@pytest.mark.parametrize("pred", [1, 1.0, jf.constant(1), jf.constant(1.0)], ids=repr)
def test_traced_cond_on_a_non_bool_value_raises(pred):
    # TF in tf.function: InvalidArgumentError "Input 'pred' passed int32 expected bool".
    f = jf.function(lambda: jf.cond(pred, lambda: jf.constant(1), lambda: jf.constant(2)))
    with pytest.raises(IAE, match="predicate must be a scalar bool tensor"):
        f()


def test_cond_on_none_raises_value_error_and_eager_cond_keeps_tfs_truth_of_scalars():
    with pytest.raises(ValueError, match="None"):
        jf.cond(None, lambda: 1, lambda: 2)
    assert jf.cond(1, lambda: 1, lambda: 2) == 1                # TF eager: the scalar's truth
    assert jf.cond(jf.constant(0.0), lambda: 1, lambda: 2) == 2
    with pytest.raises(ValueError):
        jf.cond(jf.constant([True, False]), lambda: 1, lambda: 2)
    f = jf.function(lambda: jf.cond(True, lambda: jf.constant(1), lambda: jf.constant(2)))
    assert int(f()) == 1


# ---- while_loop's bounds and shape invariants ----------------------------------------------------
@pytest.mark.parametrize("mode", ["eager", "function"])
def test_while_loop_negative_maximum_iterations_runs_no_iteration(mode):
    # -1 was the traced loop's "no bound" (it ran to i == 10). TF: i < maximum_iterations, so 0.
    # (Eager mode was already right; the test keeps it so.)
    loop = eager_and_traced(lambda: jf.while_loop(lambda i: i < 10, lambda i: i + 1, [jf.constant(0)], maximum_iterations=-1))
    assert int(loop[mode]()[0]) == 0


@pytest.mark.parametrize("mode", ["eager", "function"])
def test_while_loop_fractional_maximum_iterations_raises(mode):
    # Was int(2.5) == 2 iterations. TF in tf.function: TypeError "Expected int32, but got 2.5".
    loop = eager_and_traced(lambda: jf.while_loop(lambda i: i < 10, lambda i: i + 1, [jf.constant(0)], maximum_iterations=2.5))
    with pytest.raises(TypeError, match="maximum_iterations"):
        loop[mode]()


def test_while_loop_shape_invariants_follow_tf_tensorshape():
    def loop(inv):
        return jf.function(lambda: jf.while_loop(lambda i: jf.reduce_sum(i) < 3, lambda i: i + 1, [jf.zeros([2])],
                                                 shape_invariants=[inv]))()
    with pytest.raises(ValueError, match="Dimension -5 must be >= 0"):  # was accepted as unknown
        loop([-5])
    with pytest.raises(ValueError, match="does not fit in int64"):      # was pybind's RuntimeError
        loop([2**70])
    np.testing.assert_array_equal(loop([None])[0].numpy(), [2.0, 2.0])


# ---- structures that cannot be flattened ---------------------------------------------------------
# Each case runs in a child process (conftest.run_in_child): a crash fails only its test.
_SELF_LIST = "v = [1.0]\nv.append(v)"
_DEEP_LIST = "v = 1.0\nfor _ in range(200000):\n    v = [v]"


@pytest.mark.parametrize("make", [_SELF_LIST, _DEEP_LIST], ids=["self_list", "deep_list"])
@pytest.mark.parametrize("call", ["jf.function(lambda p: jf.cond(p, lambda: v, lambda: v))(jf.constant(True))",
                                  "jf.function(lambda: jf.while_loop(lambda x: False, lambda x: x, [v]))()"],
                         ids=["cond", "while_loop"])
def test_cond_and_while_loop_refuse_unflattenable_structures(make, call):
    # cond already refused these (cpp/python/nest.cc); while_loop's self-referencing loop_vars
    # raised TypeError.
    out = run_in_child(f"{make}\nreport(lambda: {call})")
    assert out.get("raised") in ("ValueError", "RecursionError", "InvalidArgumentError"), out
