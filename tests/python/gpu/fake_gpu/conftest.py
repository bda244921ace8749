"""Access to the stand-in CUDA driver and cuBLAS that test_fake_gpu.py loads: the kernel
launches the driver recorded, its allocation counts, and the GEMM calls."""
import ctypes
import os

import pytest


class FakeGpu:
    def __init__(self):
        self.cuda = ctypes.CDLL(os.environ["JITFLOW_CUDA_DRIVER"])
        self.blas = ctypes.CDLL(os.environ["JITFLOW_CUBLAS"])
        self.cuda.fake_cuda_launch.restype = ctypes.c_char_p

    def clear(self):
        self.cuda.fake_cuda_clear_launches()

    def launches(self):
        """[(kernel name, grid, block, total elements)] since the last clear()."""
        out = []
        for i in range(self.cuda.fake_cuda_launch_count()):
            g, b, t = ctypes.c_uint(), ctypes.c_uint(), ctypes.c_int64()
            bufs, params = ctypes.c_uint64(), ctypes.c_uint64()
            name = self.cuda.fake_cuda_launch(i, ctypes.byref(g), ctypes.byref(b), ctypes.byref(t),
                                              ctypes.byref(bufs), ctypes.byref(params))
            out.append((name.decode(), g.value, b.value, t.value))
        return out

    def gemm_calls(self):
        return self.blas.fake_cublas_calls()


@pytest.fixture
def fake():
    f = FakeGpu()
    f.clear()
    return f
