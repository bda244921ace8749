"""The built wheels (tools/build_wheel.sh, `make wheel`) checked as a user gets them: auditwheel's
verdict, then each wheel installed into a fresh virtualenv and run from outside the source tree
(a compiled jit_scope function, `jitflow --version`, `python -m jitflow.info`, ldd on what it
loads, and the eager kernels' instruction-set variants giving the baseline's bits). Run by
`make wheel-check`, not by `make test`: building the wheels takes far longer than the suite."""
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
DIST = pathlib.Path(os.environ.get("JITFLOW_WHEEL_DIR", ROOT / "build" / "wheel" / "dist"))
AUDITWHEEL = ROOT / "build" / "wheel" / "tools" / "bin" / "auditwheel"
WHEELS = sorted(DIST.glob("jitflow-*.whl"))
# Which CPython tags must be there: JITFLOW_WHEEL_TAGS="cp311" when CI builds one.
EXPECTED_TAGS = os.environ.get("JITFLOW_WHEEL_TAGS", "cp311 cp312").split()
# What a manylinux wheel may take from the system: the allow-list of auditwheel's policy for
# the wheel's tag (libc, libm, libstdc++, libgcc_s, libpthread, libdl, ..., and libz), and the
# loader itself; everything else must come from inside the wheel.
POLICY = ROOT / "build" / "wheel" / "tools" / "lib"
LOADER = {"ld-linux-x86-64.so.2", "linux-vdso.so.1"}


def _allow_list(wheel):
    tag = re.search(r"-(manylinux_\d+_\d+)_x86_64\.", wheel.name).group(1)
    policy = next(POLICY.glob("python3*/site-packages/auditwheel/policy/manylinux-policy.json"))
    return set(next(p for p in json.loads(policy.read_text()) if p["name"] == tag)["lib_whitelist"]) | LOADER


def _tag(wheel):
    return re.search(r"-(cp\d+)-cp\d+-", wheel.name).group(1)


def _interpreter(tag):
    """A CPython for the tag: this test's own, the dev venv's, python3.X on PATH, or pyenv's."""
    want = f"{tag[2]}.{tag[3:]}"
    candidates = [sys.executable, str(ROOT / ".venv" / "bin" / "python"), f"python{want}"]
    pyenv = pathlib.Path(os.environ.get("PYENV_ROOT", pathlib.Path.home() / ".pyenv")) / "versions"
    candidates += sorted(str(p) for p in pyenv.glob(f"{want}*/bin/python{want}"))
    for cand in candidates:
        try:
            out = subprocess.run([cand, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                                 check=False, capture_output=True, text=True)
        except OSError:
            continue
        if out.returncode == 0 and out.stdout.strip() == want:
            return cand
    raise AssertionError(f"no CPython {want} found to install {tag}'s wheel into")


def _cpu_flags():
    for line in pathlib.Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("flags"):
            return set(line.split(":", 1)[1].split())
    return set()


def _host_isas():
    """The eager variants this CPU can run, as JITFLOW_EAGER_ISA names them."""
    flags = _cpu_flags()
    isas = ["baseline"]
    if "avx2" in flags:
        isas.append("avx2")
        if {"avx512f", "avx512dq", "avx512bw", "avx512vl"} <= flags:
            isas.append("avx512")
    return isas


def test_the_wheels_were_built():
    tags = sorted(_tag(w) for w in WHEELS)
    assert tags and set(EXPECTED_TAGS) <= set(tags), \
        f"wheels in {DIST}: {[w.name for w in WHEELS]}; run `make wheel` first"
    for wheel in WHEELS:
        assert re.search(r"-manylinux_\d+_\d+_x86_64\.", wheel.name), wheel.name


@pytest.mark.parametrize("wheel", WHEELS, ids=[w.name for w in WHEELS])
def test_auditwheel_show(wheel):
    out = subprocess.run([str(AUDITWHEEL), "show", str(wheel)], check=False, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    text = " ".join(out.stdout.split())
    platform = re.search(r"-(manylinux_\d+_\d+_x86_64)\.", wheel.name).group(1)
    assert f'consistent with the following platform tag: "{platform}"' in text, text
    # The versioned libraries it lists are the allow-list's and the grafted ones, renamed with
    # a hash (OpenMP among them); the ldd test below finds oneDNN inside the wheel.
    assert re.search(r"libgomp-[0-9a-f]{8}\.so", text), text


@pytest.fixture(scope="module", params=WHEELS, ids=[w.name for w in WHEELS])
def installed(request, tmp_path_factory):
    """A fresh virtualenv with the wheel and its dependencies, and a working directory outside
    the source tree."""
    wheel = request.param
    base = tmp_path_factory.mktemp(_tag(wheel))
    venv = base / "venv"
    subprocess.run([_interpreter(_tag(wheel)), "-m", "venv", str(venv)], check=True)
    py = venv / "bin" / "python"
    pip = subprocess.run([str(py), "-m", "pip", "install", "-q", str(wheel)], check=False, capture_output=True, text=True)
    assert pip.returncode == 0, pip.stdout + pip.stderr
    work = base / "work"
    work.mkdir()
    return {"python": py, "venv": venv, "work": work, "wheel": wheel}


def _run(installed, code=None, args=(), env=None):
    cmd = [str(installed["python"])] + (["-c", code] if code else []) + list(args)
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "JITFLOW_"))}
    clean["JITFLOW_CACHE_DIR"] = str(installed["work"] / "cache")
    return subprocess.run(cmd, check=False, capture_output=True, text=True, cwd=installed["work"], env={**clean, **(env or {})},
                          timeout=600)


SMOKE = """
import json, numpy as np, jitflow as jf

@jf.function
def step(x, w, b):
    with jf.jit_scope():
        return jf.nn.relu(jf.matmul(x, w) + b)

x = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
w = np.linspace(-2, 2, 20, dtype=np.float32).reshape(4, 5)
b = np.linspace(-0.5, 0.5, 5, dtype=np.float32)
out = step(x, w, b).numpy()
print(json.dumps({"file": jf.__file__, "out": out.tolist(), "ref": np.maximum(x.astype(np.float64) @ w + b, 0).tolist(),
                  "stats": {k: v for k, v in jf.debugging.stats().items() if isinstance(v, int)}}))
"""


def test_a_compiled_function_runs_from_the_wheel(installed):
    out = _run(installed, SMOKE)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["file"].startswith(str(installed["venv"])), got["file"]  # not the source tree's
    np.testing.assert_allclose(got["out"], got["ref"], rtol=1e-5, atol=1e-6)
    assert got["stats"]["cluster_runs"] >= 1 and got["stats"]["cluster_fallbacks"] == 0, got["stats"]


def test_ldd_finds_everything_in_the_wheel_or_the_allow_list(installed):
    site = next(installed["venv"].glob("lib/python3.*/site-packages"))
    objects = sorted(site.glob("jitflow/_C*.so")) + sorted(site.glob("jitflow.libs/*.so*"))
    assert len(objects) >= 2, objects  # the extension and what auditwheel grafted
    grafted = {p.name for p in site.glob("jitflow.libs/*")}
    assert any(n.startswith("libdnnl") for n in grafted) and any(n.startswith("libgomp") for n in grafted), grafted
    allowed = _allow_list(installed["wheel"])
    assert {"libc.so.6", "libstdc++.so.6"} <= allowed and "libdnnl.so.2" not in allowed
    for obj in objects:
        out = subprocess.run(["ldd", str(obj)], check=False, capture_output=True, text=True)
        assert out.returncode == 0, out.stderr
        for line in out.stdout.splitlines():
            assert "not found" not in line, f"{obj.name}: {line}"
            m = re.match(r"\s*(\S+) => (\S+)", line)
            if not m:
                continue
            name, path = m.groups()
            inside = pathlib.Path(path).resolve().is_relative_to(site.resolve())
            assert inside or name in allowed, f"{obj.name} loads {name} from {path}"


def test_version_and_info(installed):
    version = subprocess.run([str(installed["venv"] / "bin" / "jitflow"), "--version"], check=False, capture_output=True,
                             text=True, cwd=installed["work"])
    assert version.returncode == 0, version.stderr
    assert re.fullmatch(r"jitflow \d+\.\d+\.\d+\S*", version.stdout.strip()), version.stdout
    out = _run(installed, args=["-m", "jitflow.info", "--json"])
    assert out.returncode == 0, out.stderr
    info = json.loads(out.stdout)
    assert version.stdout.split()[1] == info["jitflow"]
    assert info["llvm"].startswith("16."), info
    assert re.fullmatch(r"\d+\.\d+\.\d+", info["onednn"]), info
    assert info["eager_isa_variants"] == ["avx512", "avx2"], info
    best = _host_isas()[-1]
    assert info["eager_isa"] == ("x86-64-v2" if best == "baseline" else best), info
    assert info["jit_cpu"] and info["jit_cpu_features"], info
    assert info["cache_dir"] == str(installed["work"] / "cache"), info
    assert isinstance(info["cuda_driver_found"], bool), info
    assert info["extension"].startswith(str(installed["venv"])), info


def test_eager_variants_give_the_baselines_bits(installed):
    """Each variant the host can run (JITFLOW_EAGER_ISA picks it) against the baseline build:
    the same bits for every value, NaNs aside (any NaN is a NaN), signs of zero included."""
    program = pathlib.Path(__file__).with_name("isa_program.py")
    results = {}
    for isa in _host_isas():
        path = installed["work"] / f"{isa}.npz"
        out = _run(installed, args=[str(program), str(path)], env={"JITFLOW_EAGER_ISA": isa})
        assert out.returncode == 0, out.stderr
        results[isa] = dict(np.load(path))
        assert str(results[isa].pop("isa")) == ("x86-64-v2" if isa == "baseline" else isa)
    base = results.pop("baseline")
    assert len(base) == 2 * (16 * 2 + 7 * 4)
    for isa, got in results.items():
        differ = []
        for key, ref in base.items():
            val = got[key]
            same = (val.view(np.uint8).reshape(val.shape + (-1,)) == ref.view(np.uint8).reshape(ref.shape + (-1,))
                    ).all(axis=-1) | (np.isnan(val) & np.isnan(ref))
            if not same.all():
                differ.append(f"{key}: {int((~same).sum())} of {same.size}")
        assert not differ, f"{isa} differs from the baseline: {differ}"


def _qemu_run(installed, cpu, out):
    """isa_program.py under QEMU's user-mode emulation of another CPU: CPUID reports that CPU's
    features and an instruction it lacks stops the process (SIGILL)."""
    qemu = shutil.which("qemu-x86_64")
    assert qemu, "qemu-x86_64 not found: apt-get install qemu-user (make wheel-check installs it)"
    program = pathlib.Path(__file__).with_name("isa_program.py")
    r = subprocess.run([qemu, "-cpu", cpu, str(installed["python"]), str(program), str(out)], check=False,
                       capture_output=True, text=True, cwd=installed["work"], timeout=900,
                       env={"JITFLOW_CACHE_DIR": "off", "PATH": os.environ.get("PATH", "")})
    assert r.returncode == 0, f"under -cpu {cpu}: exit {r.returncode}: {r.stderr[-2000:]}"
    got = dict(np.load(out))
    return str(got.pop("isa")), got


def _bit_differences(ref, got):
    return [key for key in ref if not (
        (ref[key].view(np.uint8).reshape(ref[key].shape + (-1,)) == got[key].view(np.uint8).reshape(
            got[key].shape + (-1,))).all(axis=-1) | (np.isnan(ref[key]) & np.isnan(got[key]))).all()]


def test_an_older_cpu_runs_the_baseline_and_gets_the_same_bits(installed):
    """The wheel on emulated CPUs: a Nehalem (x86-64-v2, no AVX) takes the baseline kernels by
    CPUID and runs without an illegal instruction; a Haswell takes the AVX2 variant. Both
    without FMA, their results are the same bits: glibc's libm picks FMA versions of sin, cos,
    tanh, log1p and expm1 on CPUs with FMA, and float64 kernels call those (the baseline and
    the variants alike), so a host's FMA changes their last bit (numpy's too); with FMA, the
    emulated Haswell matches this machine."""
    work = installed["work"]
    isa, nehalem = _qemu_run(installed, "Nehalem", work / "nehalem.npz")
    assert isa == "x86-64-v2"
    isa, haswell = _qemu_run(installed, "Haswell,-fma", work / "haswell_nofma.npz")
    assert isa == "avx2"
    assert len(nehalem) == 120 and not _bit_differences(nehalem, haswell)
    isa, haswell_fma = _qemu_run(installed, "Haswell", work / "haswell.npz")
    assert isa == "avx2"
    out = _run(installed, args=[str(pathlib.Path(__file__).with_name("isa_program.py")), str(work / "host.npz")])
    assert out.returncode == 0, out.stderr
    host = dict(np.load(work / "host.npz"))
    host.pop("isa")
    if "fma" in _cpu_flags():
        assert not _bit_differences(host, haswell_fma), _bit_differences(host, haswell_fma)


def test_an_override_the_cpu_cannot_run_is_refused(installed):
    out = _run(installed, "import jitflow as jf; jf.math.exp(jf.constant([1.0]))",
               env={"JITFLOW_EAGER_ISA": "sse9"})
    assert out.returncode != 0
    assert "InvalidArgumentError" in out.stderr and "JITFLOW_EAGER_ISA=sse9 is not one of" in out.stderr, out.stderr
