"""Bad input to jf.data raises TensorFlow 2.21's exception types and messages at the point TF
raises them: when the dataset is built (mismatched slices, a non-boolean predicate, bad
arguments) or when the element is pulled (ragged batches, a generator's wrong values)."""
import numpy as np
import pytest

import jitflow as jf

D = jf.data.Dataset


def test_from_tensor_slices_mismatched_sizes_at_construction():
    with pytest.raises(ValueError, match="Dimensions 2 and 3 are not compatible"):
        D.from_tensor_slices(([1, 2], [1, 2, 3]))
    with pytest.raises(ValueError, match="Unbatching a tensor is only supported for rank >= 1"):
        D.from_tensor_slices(1)


def test_batch_of_ragged_elements_when_iterating():
    ds = D.range(5).map(lambda x: jf.fill([x], x)).batch(2)  # building it is fine
    with pytest.raises(jf.errors.InvalidArgumentError,
                       match=r"Cannot add tensor to the batch: number of elements does not match. "
                             r"Shapes are: \[tensor\]: \[1\], \[batch\]: \[0\]"):
        list(ds)


def test_padded_batch_too_small():
    ds = D.range(5).map(lambda x: jf.fill([x], x)).padded_batch(2, padded_shapes=[2])
    with pytest.raises(jf.errors.DataLossError, match="Attempted to pad to a smaller size than the input element"):
        list(ds)


def test_state_functions_returning_another_structure():
    with pytest.raises(jf.errors.InvalidArgumentError,
                       match=r"initial state and the reduce function output does not match. \(initial_state=2, output=1\)"):
        D.range(5).reduce((np.int64(0), np.int64(0)), lambda s, x: s[0] + x)
    with pytest.raises(TypeError, match="new state must match the initial state"):
        D.range(5).scan(np.int64(0), lambda s, x: ((s, s), x))
    with pytest.raises(jf.errors.InvalidArgumentError, match="AddV2"):
        D.range(5).reduce(np.int32(0), lambda s, x: s + x)


def test_filter_predicate_must_be_a_bool_scalar():
    with pytest.raises(ValueError, match=r"must return a `tf.bool` scalar tensor, but its return type is "
                                         r"TensorSpec\(shape=\(\), dtype=tf.int64, name=None\)"):
        D.range(5).filter(lambda x: x)
    with pytest.raises(ValueError, match=r"TensorSpec\(shape=\(2,\), dtype=tf.bool"):
        D.range(5).filter(lambda x: jf.fill([2], True))


def test_map_function_errors():
    def bad(x):
        raise ValueError("boom")
    with pytest.raises(ValueError, match="boom"):
        D.range(3).map(bad)  # traced when map is called, as TF
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'b'"):
        D.range(3).map(lambda a, b: a)

    def check(x):
        jf.debugging.assert_less(x, jf.constant(3, jf.int64), message="too big")
        return x * 2
    for calls in (None, 4):
        it = iter(D.range(10).map(check, num_parallel_calls=calls))
        assert [int(next(it)) for _ in range(3)] == [0, 2, 4]
        with pytest.raises(jf.errors.InvalidArgumentError, match="too big") as e:
            next(it)
        msg = str(e.value)
        assert "test_data_errors.py" in msg and "jf.debugging.assert_less(x" in msg, "it names the user's line"


def test_generator_errors_when_iterating():
    spec = jf.TensorSpec([2], jf.float32)
    with pytest.raises(jf.errors.InvalidArgumentError,
                       match=r"`generator` yielded an element of shape \(3,\) where an element of shape \(2,\) was expected"):
        list(D.from_generator(lambda: iter([np.zeros(3)]), output_signature=spec))
    with pytest.raises(jf.errors.InvalidArgumentError, match="could not be converted to the expected type. The "
                                                             "expected type was float32"):
        list(D.from_generator(lambda: iter(["a"]), output_signature=jf.TensorSpec([], jf.float32)))
    with pytest.raises(jf.errors.InvalidArgumentError, match="did not match the expected structure"):
        list(D.from_generator(lambda: iter([1]), output_signature=(spec, spec)))


def test_argument_errors():
    d = D.range(5)
    with pytest.raises(TypeError, match="Incompatible dataset elements"):
        d.concatenate(d.map(lambda x: (x, x)))
    with pytest.raises(TypeError, match="Incompatible dataset elements"):
        d.concatenate(d.map(lambda x: jf.cast(x, jf.int32)))
    with pytest.raises(TypeError, match="The dataset is infinite"):
        len(d.repeat())
    with pytest.raises(TypeError, match="The dataset length is unknown"):
        len(d.filter(lambda x: True))
    with pytest.raises(ValueError, match="Cannot unbatch an input with scalar components"):
        d.unbatch()
    with pytest.raises(jf.errors.InvalidArgumentError, match=r"Index must be between 0 and 1 \(currently index = 3\)"):
        d.shard(2, 3)
    with pytest.raises(jf.errors.InvalidArgumentError, match="Batch size must be greater than zero"):
        d.batch(0)
    with pytest.raises(jf.errors.InvalidArgumentError, match="buffer_size must be greater than zero"):
        d.shuffle(0)
    with pytest.raises(TypeError, match="Cannot convert 'a' to EagerTensor of dtype int64"):
        d.take("a")
    with pytest.raises(TypeError, match="Cannot convert 1.5 to EagerTensor of dtype int64"):
        D.range(1.5)
    with pytest.raises(TypeError, match="Invalid input to `zip`"):
        D.zip((d, 1))
