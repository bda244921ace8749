"""Runs tests/python/gpu/fake_gpu in a child process against stand-in CUDA driver and cuBLAS
libraries (tests/cpp/gpu/fake_cuda.cc, fake_cublas.cc), built here with the C++ compiler.
The stand-in driver keeps device memory in host memory and records kernel launches instead
of running them; the stand-in cuBLAS computes its GEMMs on the host. So these tests check
placement, copies, caching, launches and the cuBLAS call mapping, but not kernel values:
those need a GPU (tests/python/gpu/test_gpu_execution.py)."""

import os
import pathlib
import shutil
import subprocess
import sys

HERE = pathlib.Path(__file__).parent
FAKES = HERE.parents[1] / "cpp" / "gpu"


def _build(src, out):
    cxx = os.environ.get("CXX") or shutil.which("g++") or shutil.which("c++")
    assert cxx, "a C++ compiler is needed to build the stand-in CUDA libraries"
    subprocess.run([cxx, "-std=c++17", "-O1", "-shared", "-fPIC", str(src), "-o", str(out)], check=True)
    return out


def test_fake_gpu_suite(tmp_path):
    driver = _build(FAKES / "fake_cuda.cc", tmp_path / "libfake_cuda.so")
    blas = _build(FAKES / "fake_cublas.cc", tmp_path / "libfake_cublas.so")
    env = dict(
        os.environ,
        JITFLOW_FAKE_GPU="1",
        JITFLOW_CUDA_DRIVER=str(driver),
        JITFLOW_CUBLAS=str(blas),
        JITFLOW_CACHE_DIR=str(tmp_path / "cache"),
    )
    r = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(HERE / "fake_gpu")],
        check=False,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    assert " passed" in out and "skipped" not in out and "error" not in out.lower(), out
