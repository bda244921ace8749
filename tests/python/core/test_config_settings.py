"""The jf.config settings TF scripts call at their top (TF 2.21's names, defaults and errors):
visible devices, memory growth, op determinism, inter-op threads, device-placement logging."""
import warnings

import numpy as np
import pytest

import jitflow as jf


@pytest.fixture(autouse=True)
def _restore():
    yield
    for kind in ("CPU", "GPU"):
        jf.config.set_visible_devices(jf.config.list_physical_devices(kind), kind) if kind == "CPU" or \
            jf.config.list_physical_devices(kind) else None
    jf.config.experimental.disable_op_determinism()
    jf.config.threading.set_inter_op_parallelism_threads(0)


def test_visible_devices():
    cpus = jf.config.list_physical_devices("CPU")
    assert jf.config.get_visible_devices("CPU") == cpus
    jf.config.set_visible_devices([], "GPU")  # the usual way to keep a script off the GPUs
    assert jf.config.get_visible_devices("GPU") == []
    assert jf.config.list_logical_devices("GPU") == []
    assert [d.device_type for d in jf.config.list_logical_devices()] == ["CPU"]
    with pytest.raises(ValueError, match="CPU"):
        jf.config.set_visible_devices([], "CPU")


def test_memory_growth_only_on_gpus():
    cpu = jf.config.list_physical_devices("CPU")[0]
    with pytest.raises(ValueError, match="non-GPU"):
        jf.config.experimental.set_memory_growth(cpu, True)
    with pytest.raises(ValueError, match="non-GPU"):
        jf.config.experimental.get_memory_growth(cpu)
    for gpu in jf.config.list_physical_devices("GPU"):  # the idiom; no GPU here, so no iterations
        jf.config.experimental.set_memory_growth(gpu, True)
        assert jf.config.experimental.get_memory_growth(gpu) is True


def test_determinism_and_threads():
    assert jf.config.experimental.is_op_determinism_enabled() is False
    jf.config.experimental.enable_op_determinism()
    assert jf.config.experimental.is_op_determinism_enabled() is True
    assert jf.config.threading.get_inter_op_parallelism_threads() == 0  # TF's default: chosen by the runtime
    jf.config.threading.set_inter_op_parallelism_threads(2)
    assert jf.config.threading.get_inter_op_parallelism_threads() == 2
    with pytest.raises(jf.errors.InvalidArgumentError):
        jf.config.threading.set_inter_op_parallelism_threads(-1)


def test_tensor_float_32_is_on_by_default_as_in_tf():
    assert jf.config.experimental.tensor_float_32_execution_enabled() is True
    try:
        jf.config.experimental.enable_tensor_float_32_execution(False)
        assert jf.config.experimental.tensor_float_32_execution_enabled() is False
        # The CPU never rounds to TF32 (11 significant bits: 2049 would be 2048), so these
        # 12-bit integers multiply exactly either way.
        a = np.array([[2049, 2051], [2053, 2055]], np.float32)
        np.testing.assert_array_equal(jf.matmul(a, a.T).numpy(), a.astype(np.float64) @ a.T.astype(np.float64))
    finally:
        jf.config.experimental.enable_tensor_float_32_execution(True)
    assert jf.config.experimental.tensor_float_32_execution_enabled() is True
    a = np.array([[2049, 2051], [2053, 2055]], np.float32)
    np.testing.assert_array_equal(jf.matmul(a, a.T).numpy(), a.astype(np.float64) @ a.T.astype(np.float64))


def test_log_device_placement_says_what_to_use():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        jf.debugging.set_log_device_placement(True)
    assert any("jf.explain" in str(w.message) for w in caught)
    assert jf.debugging.get_log_device_placement() is True
    jf.debugging.set_log_device_placement(False)
