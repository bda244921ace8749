"""Access to the stand-in CUDA driver and cuBLAS that test_fake_gpu.py loads: the kernel
launches the driver recorded, its allocation, copy and synchronization counts, and the GEMM
calls."""

import ctypes
import os

import pytest


class FakeGpu:
    def __init__(self):
        self.cuda = ctypes.CDLL(os.environ["JITFLOW_CUDA_DRIVER"])
        self.blas = ctypes.CDLL(os.environ["JITFLOW_CUBLAS"])
        self.cuda.fake_cuda_launch.restype = ctypes.c_char_p
        for name in ("fake_cuda_copies", "fake_cuda_copy_bytes", "fake_cuda_synchronizations",
                     "fake_cuda_graph_launches"):
            getattr(self.cuda, name).restype = ctypes.c_int64

    def clear(self):
        self.cuda.fake_cuda_clear_launches()

    def launches(self):
        """[(kernel name, grid, block, total elements)] since the last clear()."""
        out = []
        for i in range(self.cuda.fake_cuda_launch_count()):
            g, b, t = ctypes.c_uint(), ctypes.c_uint(), ctypes.c_int64()
            bufs, params = ctypes.c_uint64(), ctypes.c_uint64()
            name = self.cuda.fake_cuda_launch(
                i, ctypes.byref(g), ctypes.byref(b), ctypes.byref(t), ctypes.byref(bufs), ctypes.byref(params)
            )
            out.append((name.decode(), g.value, b.value, t.value))
        return out

    def tables(self, i):
        """The buffer-table address of launch i (a host copy when the tables go by value)."""
        g, b, t = ctypes.c_uint(), ctypes.c_uint(), ctypes.c_int64()
        bufs, params = ctypes.c_uint64(), ctypes.c_uint64()
        self.cuda.fake_cuda_launch(
            i, ctypes.byref(g), ctypes.byref(b), ctypes.byref(t), ctypes.byref(bufs), ctypes.byref(params)
        )
        return bufs.value

    def counters(self):
        """Driver calls so far: allocations, copies by direction (and their bytes),
        synchronizations, GEMMs."""
        c = self.cuda
        return {
            "allocations": c.fake_cuda_allocations(),
            "h2d": c.fake_cuda_copies(0),
            "d2h": c.fake_cuda_copies(1),
            "d2d": c.fake_cuda_copies(2),
            "d2h_bytes": c.fake_cuda_copy_bytes(1),
            "h2d_bytes": c.fake_cuda_copy_bytes(0),
            "synchronizations": c.fake_cuda_synchronizations(),
            "gemms": self.blas.fake_cublas_calls(),
        }

    def graph_launches(self):
        return self.cuda.fake_cuda_graph_launches()

    def enable_graphs(self, on):
        """On: stream capture works (launches go into a graph, replayed by cuGraphLaunch);
        off, the default, the stand-in refuses it, as a driver without graphs does."""
        self.cuda.fake_cuda_enable_graphs(1 if on else 0)

    def gemm_calls(self):
        return self.blas.fake_cublas_calls()

    def sgemm_math_mode(self):
        """cublasMath_t the handle had at the last SGEMM (-1: none yet)."""
        return self.blas.fake_cublas_sgemm_math_mode()

    def compute_gemms(self, on):
        """Off: the stand-in cuBLAS checks its arguments but skips the arithmetic (big shapes)."""
        self.blas.fake_cublas_set_compute(1 if on else 0)


@pytest.fixture
def fake():
    f = FakeGpu()
    f.clear()
    return f
