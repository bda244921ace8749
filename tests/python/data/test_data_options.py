"""tf.data.Options with TF 2.21's names and defaults: unknown names refused, with_options kept
through later transformations and merged in order (what a later call sets wins), the
distribution guide's auto_shard_policy idiom. The expected values are TF's for the same calls."""
import pytest

import jitflow as jf

D = jf.data.Dataset


def test_defaults_and_unknown_names_as_tf():
    o = jf.data.Options()
    assert o.deterministic is None and o.threading.private_threadpool_size is None
    assert o.experimental_distribute.auto_shard_policy == jf.data.experimental.AutoShardPolicy.AUTO == 0
    assert [int(p) for p in jf.data.experimental.AutoShardPolicy] == [-1, 0, 1, 2, 3]
    with pytest.raises(AttributeError, match="Cannot set the property foo on Options."):
        o.foo = 1
    with pytest.raises(AttributeError, match="Cannot set the property bar on ThreadingOptions."):
        o.threading.bar = 1
    with pytest.raises(TypeError, match="unhashable"):  # compared by value, as TF's
        hash(o)
    o.experimental_deterministic = False  # TF's older name for deterministic
    assert o.deterministic is False and o.experimental_threading is o.threading


def test_with_options_is_merged_in_order_and_kept_downstream():
    a, b = jf.data.Options(), jf.data.Options()
    a.deterministic = False
    a.threading.private_threadpool_size = 4
    b.threading.private_threadpool_size = 2
    b.experimental_distribute.auto_shard_policy = jf.data.experimental.AutoShardPolicy.OFF
    ds = D.range(3).with_options(a).map(lambda x: x + 1).with_options(b).batch(2)
    got = ds.options()
    assert got.deterministic is False and got.threading.private_threadpool_size == 2
    assert got.experimental_distribute.auto_shard_policy == jf.data.experimental.AutoShardPolicy.OFF
    assert [x.tolist() for x in ds.as_numpy_iterator()] == [[1, 2], [3]]  # elements unchanged
    assert D.range(3).options() == jf.data.Options()
    with pytest.raises(TypeError):
        D.range(3).with_options({"deterministic": False})
