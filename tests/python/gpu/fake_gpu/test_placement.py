"""Placement, copies and device errors against the stand-in driver (device memory is host
memory there, so copies round-trip real values; kernels are recorded, not run)."""

import numpy as np
import pytest

import jitflow as jf

GPU = "/job:localhost/replica:0/task:0/device:GPU:0"
CPU = "/job:localhost/replica:0/task:0/device:CPU:0"


def test_the_stand_in_gpu_is_listed():
    gpus = jf.config.list_physical_devices("GPU")
    assert [d.name for d in gpus] == ["/physical_device:GPU:0"]


def test_constants_under_a_gpu_scope_live_on_the_gpu_and_copy_back(rng):
    a = rng.standard_normal((3, 5)).astype(np.float32)
    with jf.device("/GPU:0"):
        x = jf.constant(a)
    assert x.device == GPU
    assert jf.constant(a).device == CPU
    np.testing.assert_array_equal(x.numpy(), a)
    np.testing.assert_array_equal(np.asarray(x), a)
    assert x.__dlpack_device__() == (2, 0)  # kDLCUDA


def test_identity_moves_between_devices_like_tf(rng):
    a = rng.standard_normal(7)
    x = jf.constant(a)
    with jf.device("GPU:0"):
        g = jf.identity(x)
    with jf.device("/CPU:0"):
        h = jf.identity(g)
    assert (g.device, h.device) == (GPU, CPU)
    np.testing.assert_array_equal(h.numpy(), a)


def test_a_gpu_tensor_has_no_host_buffer():
    with jf.device("/GPU:0"):
        x = jf.constant([1.0, 2.0])
    with pytest.raises(BufferError) as e:
        memoryview(x)
    assert "on /job:localhost/replica:0/task:0/device:GPU:0 has no host buffer" in str(e.value.__context__)


def test_ops_follow_their_gpu_inputs_and_copy_host_inputs(fake):
    with jf.device("/GPU:0"):
        x = jf.constant(np.ones((4, 4), np.float32))
    fake.clear()
    y = x + jf.constant(np.ones((4, 4), np.float32))  # no scope: the GPU input decides
    assert y.device == GPU
    names = [n for n, *_ in fake.launches()]
    assert len(names) == 1 and names[0].startswith("jf_gpu_op_"), names


def test_an_explicit_cpu_scope_brings_gpu_inputs_back():
    with jf.device("/GPU:0"):
        x = jf.constant(np.arange(6.0).reshape(2, 3))
    with jf.device("/CPU:0"):
        y = x * 2.0
    assert y.device == CPU
    np.testing.assert_array_equal(y.numpy(), np.arange(6.0).reshape(2, 3) * 2)


def test_explicit_device_policy_names_both_devices():
    with jf.device("/GPU:0"):
        x = jf.constant(np.ones(3, np.float32))
    host = jf.constant(np.ones(3, np.float32))
    jf.config.experimental.set_device_policy("explicit")
    try:
        with pytest.raises(
            jf.errors.InvalidArgumentError,
            match=r"AddV2: input 1 \(float32\[3\]\) is on /CPU:0 but the op runs on /GPU:0",
        ):
            x + host
        assert (x + 1.0).device == GPU  # scalars still cross
        with jf.device("/GPU:0"):
            assert jf.identity(host).device == GPU  # identity is the explicit copy
    finally:
        jf.config.experimental.set_device_policy("silent")
    assert jf.config.experimental.get_device_policy() == "silent"
    with pytest.raises(jf.errors.InvalidArgumentError, match="device policy must be 'silent' or 'explicit'"):
        jf.config.experimental.set_device_policy("warn")


def test_gpu_index_out_of_range_is_named():
    jf.config.set_soft_device_placement(False)
    try:
        with (
            pytest.raises(RuntimeError, match=r"Cannot place ops on /GPU:1: only 1 GPU\(s\)"),
            jf.device("/GPU:1"),
        ):
            pass
    finally:
        jf.config.set_soft_device_placement(True)
    with jf.device("/GPU:1"):  # TF's default soft placement: a device that exists
        assert jf.constant([1.0]).device == CPU


def test_ops_without_a_gpu_kernel_run_on_the_cpu_soft_placement():
    before = jf._C.gpu_stats(0)["op_cpu_fallbacks"]
    with jf.device("/GPU:0"):
        r = jf.random.uniform([4], seed=1)  # stateful: no GPU kernel
    assert r.device == CPU
    assert jf._C.gpu_stats(0)["op_cpu_fallbacks"] == before + 1


def test_device_copies_use_the_caching_allocator():
    with jf.device("/GPU:0"):
        jf.constant(np.ones(1000, np.float32))  # allocate and free one block
        s0 = jf._C.gpu_stats(0)
        for _ in range(5):
            jf.constant(np.ones(1000, np.float32))
    s1 = jf._C.gpu_stats(0)
    assert s1["driver_allocations"] == s0["driver_allocations"]
    assert s1["allocator_cache_hits"] >= s0["allocator_cache_hits"] + 5
