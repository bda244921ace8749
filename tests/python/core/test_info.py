"""jf.config.info(), `python -m jitflow.info` and the `jitflow` command: the facts a bug report
needs (versions, the JIT's CPU, the eager kernels' instruction set, the cache directory, the CUDA
driver), each checked against where it comes from; and JITFLOW_EAGER_ISA's refusals."""
import json
import os
import re
import subprocess
import sys

import numpy as np
from conftest import assert_raised, run_in_child

import jitflow as jf
from jitflow import _C

KEYS = {"jitflow", "python", "platform", "numpy", "llvm", "onednn", "jit_target", "jit_cpu", "jit_cpu_features",
        "eager_isa", "eager_isa_variants", "cache_dir", "cuda_driver_found", "cuda_driver_version", "cuda_devices",
        "cuda_error", "extension", "executable"}


def test_info_reports_where_each_fact_comes_from():
    info = jf.config.info()
    assert set(info) == KEYS
    assert info["jitflow"] == jf.__version__ and re.fullmatch(r"\d+\.\d+\.\d+", info["jitflow"])
    assert info["numpy"] == np.__version__
    assert info["python"].endswith(".".join(map(str, sys.version_info[:3])))
    assert info["llvm"] == _C.llvm_version() and info["llvm"].startswith("16.")
    assert re.fullmatch(r"\d+\.\d+\.\d+", info["onednn"]), info["onednn"]
    triple, cpu, _ = _C.cpu_jit_target().split("|", 2)
    assert (info["jit_target"], info["jit_cpu"]) == (triple, cpu) and triple.startswith("x86_64")
    # LLVM's feature names for the JIT's CPU; sse2 is in every x86-64's.
    assert "sse2" in info["jit_cpu_features"] and info["jit_cpu_features"] == sorted(info["jit_cpu_features"])
    assert info["cache_dir"] == os.environ["JITFLOW_CACHE_DIR"]  # conftest's private cache
    assert info["extension"] == _C.__file__
    cuda = _C.cuda_status()
    assert info["cuda_driver_found"] is bool(cuda["available"])
    assert info["cuda_devices"] == (cuda["device_count"] if cuda["available"] else 0)


def test_eager_isa_matches_the_build():
    info = jf.config.info()
    if info["eager_isa_variants"]:  # a portable build (the wheel's): the host's widest variant
        assert info["eager_isa_variants"] == ["avx512", "avx2"]
        assert info["eager_isa"] in ("avx512", "avx2", "x86-64-v2")
    else:  # `make build`: compiled for this machine, nothing to choose
        assert info["eager_isa"] == "native"


def test_jit_cpu_follows_the_override_and_the_cache_can_be_off():
    out = run_in_child("report(lambda: [jf.config.info()[k] for k in ('jit_cpu', 'cache_dir')])",
                       env={"JITFLOW_CPU": "x86-64", "JITFLOW_CACHE_DIR": "off"})
    assert out["value"] == ["x86-64", None], out


def test_an_eager_isa_override_the_build_cannot_honour_is_refused():
    # A native build has no variants; a portable one has none called sse9.
    want = "sse9" if jf.config.info()["eager_isa_variants"] else "avx2"
    out = run_in_child("report(lambda: jf.math.exp(jf.constant([1.0])).numpy().tolist())",
                       env={"JITFLOW_EAGER_ISA": want})
    if want == "avx2":
        assert_raised(out, "InvalidArgumentError", "JITFLOW_EAGER_ISA=avx2", "has no variants")
    else:
        assert_raised(out, "InvalidArgumentError", "JITFLOW_EAGER_ISA=sse9 is not one of")
    # The names a native build accepts leave the kernels as they are.
    out = run_in_child("report(lambda: jf.math.exp(jf.constant([0.0])).numpy().tolist())",
                       env={"JITFLOW_EAGER_ISA": "auto"})
    assert out["value"] == [1.0], out


def test_python_m_jitflow_info_and_version():
    env = {**os.environ}
    out = subprocess.run([sys.executable, "-m", "jitflow.info", "--json"], capture_output=True, text=True,
                         env=env, check=False, timeout=120)
    assert out.returncode == 0, out.stderr
    assert set(json.loads(out.stdout)) == KEYS
    table = subprocess.run([sys.executable, "-m", "jitflow.info"], capture_output=True, text=True, env=env,
                           check=False, timeout=120)
    assert table.returncode == 0, table.stderr
    rows = dict(line.split(None, 1) for line in table.stdout.splitlines())
    assert rows["llvm"] == _C.llvm_version() and rows["jitflow"] == jf.__version__
    version = subprocess.run([sys.executable, "-m", "jitflow.info", "--version"], capture_output=True, text=True,
                             env=env, check=False, timeout=120)
    assert version.stdout.strip() == f"jitflow {jf.__version__}", version.stdout
