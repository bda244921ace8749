"""AutoGraph's statement state as TF converts it: dict items, list items and attributes
(TF's composite names) carried through tensor conds and loops, closures that read a loop
variable's current value, returns inside tensor loops, names first bound in a loop, returns in
finally blocks and in handlers. Each program runs in the four graph modes (jf.function,
jit_scope, jit_compile=True, an all-None input_signature) and is compared with the same
Python run eagerly."""
import numpy as np
import pytest
from conftest import run_mode

import jitflow as jf

MODES = ["function", "jit_scope", "jit_compile", "signature"]


run = run_mode  # conftest: "signature" traces once for any shape (every dim None)


def same_as_eager(mode, fn, *args):
    got, want = run(mode, fn, *args), fn(*args)
    got, want = jf.nest.flatten(got), jf.nest.flatten(want)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        w = w if isinstance(w, jf.Tensor) else jf.constant(w)
        assert g.dtype == w.dtype, (g, w)
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-6)


# ---- composite names in branches ----------------------------------------------------------
def items_set_in_both_branches(x):
    d = {"a": x}
    pair = [x, x]
    if jf.reduce_sum(d["a"]) > 0.0:
        d["b"] = x * 2.0
        pair[1] = x + 1.0
    else:
        d["b"] = x * -3.0
        pair[1] = x - 1.0
    return d["b"], pair[1], d["a"]


@pytest.mark.parametrize("mode", MODES)
def test_dict_and_list_items_set_in_both_branches_of_a_tensor_if(mode):
    for x in ([1.0, 2.0], [-1.0, -2.0]):
        same_as_eager(mode, items_set_in_both_branches, jf.constant(x))


# ---- composite names in loops ------------------------------------------------------------
class _Accumulator:
    def __init__(self, total):
        self.total = total


def items_and_attributes_in_a_while(x, n):
    d = {"s": x}
    acc = [x * 0.0]
    box = _Accumulator(x)
    i = 0
    while i < n:
        d["s"] = d["s"] * 2.0 + 1.0
        acc[0] += x
        box.total = box.total + d["s"]
        i += 1
    return d["s"], acc[0], box.total


def items_in_a_for_over_rows(m):
    y = {"a": m[0] * 0.0, "rows": 0}
    for row in m[1:]:
        y["a"] = y["a"] + row * 2.0
        y["rows"] += 1
    return y["a"], y["rows"]


@pytest.mark.parametrize("mode", MODES)
def test_items_and_attributes_updated_in_tensor_loops_including_zero_trips(mode):
    for n in (0, 1, 3):  # a loop that runs zero times leaves them as they were
        same_as_eager(mode, items_and_attributes_in_a_while, jf.constant([1.0, -0.5]), jf.constant(n))
    for rows in (1, 2, 4):
        same_as_eager(mode, items_in_a_for_over_rows, jf.constant(np.arange(rows * 2.0).reshape(rows, 2)))


# ---- closures read the current value of a loop variable -----------------------------------
def closure_over_a_while_variable(x, n):
    i = 0

    def scaled():
        return x * jf.cast(i, jf.float32) + 1.0
    s = x * 0.0
    while i < n:
        s = s * 10.0 + scaled()
        i += 1
    return s


def lambda_over_a_for_target(x, n):
    k = jf.constant(0)
    bump = lambda: x * jf.cast(k, jf.float32) + 2.0  # a closure over the loop's target
    s = x * 0.0
    for k in jf.range(n):
        s = s * 10.0 + bump()
    return s, k


@pytest.mark.parametrize("mode", MODES)
def test_a_closure_reads_a_loop_variables_current_value(mode):
    for n in (0, 2, 3):
        same_as_eager(mode, closure_over_a_while_variable, jf.constant([1.0, 0.5]), jf.constant(n))
        same_as_eager(mode, lambda_over_a_for_target, jf.constant([1.0, 0.5]), jf.constant(n))


# ---- returns -------------------------------------------------------------------------------
def return_in_finally(x):
    try:
        return x * 2.0
    finally:
        if jf.reduce_sum(x) > 0.0:
            return x + 1.0  # noqa: B012 (a return in finally replaces the value, as in Python)
        return x - 1.0  # noqa: B012, SIM107 (the construct under test)


def _raising(x):
    raise ValueError("an exception used for control flow")


def return_from_a_tail_branch_while_handling(x, c):
    if c:
        return x * 2.0
    try:
        return _raising(x)
    except ValueError:
        pass
    return x + 1.0


@pytest.mark.parametrize("mode", MODES)
def test_a_return_in_finally_and_a_return_whose_value_raised(mode):
    for x in ([1.0, 2.0], [-1.0, -2.0]):
        same_as_eager(mode, return_in_finally, jf.constant(x))
    for c in (True, False):
        same_as_eager(mode, return_from_a_tail_branch_while_handling, jf.constant([1.0, 3.0]), jf.constant(c))


def test_a_handled_exception_in_a_return_value_is_not_a_return():
    def f(x):
        try:
            return _raising(x)
        except ValueError:
            pass
        return x * 3.0

    assert jf.function(f)(jf.constant(2.0)).numpy() == 6.0


def returns_in_a_for(x):
    s = x[0] * 0.0
    for v in x:
        s = s + v * 2.0
        if v > 0.0:
            return s
        else:
            return -s
    return s


def return_in_a_while(x, n):
    while n > 0:
        n -= 1
        x = x * 2.0 + 1.0
        return x
    return x


@pytest.mark.parametrize("mode", MODES)
def test_a_return_inside_a_tensor_loop(mode):
    for x in ([3.0, 1.0], [-2.0], [-1.0, 4.0, 5.0]):
        same_as_eager(mode, returns_in_a_for, jf.constant(x))
    for n in (1, 3):
        same_as_eager(mode, return_in_a_while, jf.constant([1.0, 2.0]), jf.constant(n))


@pytest.mark.parametrize("mode", ["function", "jit_scope", "signature"])
def test_a_loop_that_must_bind_its_value_checks_it_ran_at_run_time(mode):
    # TF: a return value or a name first bound in a tensor loop enters it as zeros, and an
    # assertion checks that the loop ran at least once
    def first_bound_in_loop(x, n):
        i = 0
        while i < n:
            z = x * jf.cast(i, jf.float32)
            i += 1
        return z

    same_as_eager(mode, first_bound_in_loop, jf.constant([1.0, 2.0]), jf.constant(3))
    with pytest.raises(jf.errors.InvalidArgumentError, match=r"loop must iterate at least once to initialize z"):
        run(mode, first_bound_in_loop, jf.constant([1.0, 2.0]), jf.constant(0))
    with pytest.raises(jf.errors.InvalidArgumentError,
                       match="loop must iterate at least once to initialize the function return value"):
        run(mode, return_in_a_while, jf.constant([1.0, 2.0]), jf.constant(0))


def grows_in_the_loop(n):
    i = 0
    while i < n:
        v = jf.range(i) * 2  # its length changes: the placeholder has an unknown dim
        i += 1
    return v


@pytest.mark.parametrize("mode", ["function", "jit_scope", "signature"])
def test_a_name_first_bound_in_a_loop_may_change_shape(mode):
    for n in (1, 4):
        got = run(mode, grows_in_the_loop, jf.constant(n))
        np.testing.assert_array_equal(got.numpy(), np.arange(n - 1) * 2)
