"""Sharing a process with other native libraries (TF, JAX, PyTorch): the extension exports
nothing but Python's entry point and carries its own LLVM, so no other copy of LLVM, Eigen or
the standard library's template instances can interpose on it, in any import order."""
import shutil
import subprocess
import sys

import jitflow as jf


def test_the_extension_exports_only_its_python_entry_point():
    nm = shutil.which("nm")
    assert nm, "binutils' nm is needed (it comes with g++)"
    out = subprocess.run([nm, "-D", "--defined-only", jf._C.__file__], capture_output=True, text=True,
                         check=True).stdout
    names = {line.split()[-1] for line in out.splitlines() if line.strip()}
    assert names == {"PyInit__C"}, sorted(names)[:20]


def test_llvm_is_inside_the_extension_not_a_shared_library_others_can_interpose():
    # A child process: what it maps is only jitflow's doing.
    src = """
import jitflow as jf
f = jf.function(lambda x: jf.exp(x) * 2.0, jit_compile=True)
print(float(f(jf.constant(0.0))))
print(jf.debugging.stats()["cluster_runs"])
print(any("libLLVM" in line for line in open("/proc/self/maps")))
"""
    r = subprocess.run([sys.executable, "-c", src], check=False, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    value, runs, mapped = r.stdout.split()
    assert float(value) == 2.0 and int(runs) >= 1
    assert mapped == "False", "libLLVM is loaded as a shared library: TF's exported LLVM can interpose on it"
