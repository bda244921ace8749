"""jf.device and soft device placement without the GPU a scope names: TF's default (soft
placement on) runs the ops on the CPU, eagerly and in functions; with it off, entering the scope
raises TF's error. (Placement on a GPU: gpu/fake_gpu/test_placement.py.)"""
import pytest

import jitflow as jf
from jitflow import _C

CPU0 = "/job:localhost/replica:0/task:0/device:CPU:0"


def _missing_gpu():
    """A GPU this machine lacks (GPU:0 here without a driver, past the count otherwise)."""
    status = _C.cuda_status()
    return f"GPU:{status['device_count'] if status['available'] else 0}"


def test_gpu_scope_without_that_gpu_runs_on_the_cpu_by_default():
    assert jf.config.get_soft_device_placement() is True  # TF's default
    f = jf.function(lambda a: a * 2.0)
    with jf.device(_missing_gpu()):
        x = jf.constant([1.0]) + 1.0
        y = f(jf.constant(3.0))
    assert x.device == CPU0 and x.numpy()[0] == 2.0
    assert y.device == CPU0 and y.numpy() == 6.0
    with jf.device("/GPU:99"):
        assert (jf.constant([1.0]) * 2.0).device == CPU0


def test_soft_placement_off_keeps_the_explicit_error():
    jf.config.set_soft_device_placement(False)
    try:
        assert jf.config.get_soft_device_placement() is False
        with pytest.raises(RuntimeError, match=r"Cannot place ops on /GPU:\d+: .*soft device placement is off"), \
                jf.device(_missing_gpu()):
            pass
    finally:
        jf.config.set_soft_device_placement(True)
    with jf.device(_missing_gpu()):
        assert jf.constant(1.0).device == CPU0
