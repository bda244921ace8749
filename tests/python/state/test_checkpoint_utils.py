"""jf.train.get_checkpoint_state, load_checkpoint and checkpoints_iterator on a directory a
CheckpointManager writes: the state names the saves in order, the reader returns the saved
values exactly, and the iterator yields each new save once and stops at its timeout."""
import threading
import time

import numpy as np
import pytest

import jitflow as jf


def test_state_and_reader(tmp_path):
    assert jf.train.get_checkpoint_state(str(tmp_path)) is None
    v = jf.Variable(np.arange(6, dtype=np.float32).reshape(2, 3))
    ckpt = jf.train.Checkpoint(weights=v)
    manager = jf.train.CheckpointManager(ckpt, str(tmp_path), max_to_keep=3)
    first = manager.save()
    v.assign_add(np.ones((2, 3), np.float32))
    second = manager.save()
    state = jf.train.get_checkpoint_state(str(tmp_path))
    assert state.model_checkpoint_path == second
    assert state.all_model_checkpoint_paths == [first, second]
    assert len(state.all_model_checkpoint_timestamps) == 2
    reader = jf.train.load_checkpoint(str(tmp_path))  # a directory: its latest checkpoint
    name = "weights/.ATTRIBUTES/VARIABLE_VALUE"
    assert reader.has_tensor(name) and reader.has_tensor("weights")
    np.testing.assert_array_equal(reader.get_tensor(name), np.arange(6).reshape(2, 3) + 1)
    assert reader.get_variable_to_shape_map()[name] == [2, 3]
    assert reader.get_variable_to_dtype_map()[name] == jf.float32
    np.testing.assert_array_equal(jf.train.load_checkpoint(first).get_tensor(name), np.arange(6).reshape(2, 3))
    with pytest.raises(jf.errors.NotFoundError, match="not found in checkpoint"):
        reader.get_tensor("nope")


def test_iterator_yields_new_saves_then_times_out(tmp_path):
    ckpt = jf.train.Checkpoint(v=jf.Variable(1.0))
    manager = jf.train.CheckpointManager(ckpt, str(tmp_path), max_to_keep=5)
    first = manager.save()
    later = []

    def save_again():
        time.sleep(0.3)
        later.append(manager.save())

    saver = threading.Thread(target=save_again)
    saver.start()
    seen = list(jf.train.checkpoints_iterator(str(tmp_path), timeout=2.5))
    saver.join()
    assert seen == [first, later[0]]
    calls = []
    assert list(jf.train.checkpoints_iterator(str(tmp_path / "empty"), timeout=0.1,
                                              timeout_fn=lambda: calls.append(1) or True)) == []
    assert calls == [1]
