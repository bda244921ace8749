"""GPU code generation, checked without a GPU: PTX for every op with a CPU emitter and for
fused clusters, assembled by ptxas for sm_80 and sm_90; the no-GPU placement path."""

import re
import shutil
import subprocess

import numpy as np
import pytest
from gpu_bodies import BODIES

import jitflow as jf

PTXAS = shutil.which("ptxas") or (shutil.which("/usr/local/cuda/bin/ptxas"))
needs_ptxas = pytest.mark.skipif(PTXAS is None, reason="ptxas (CUDA toolkit) not installed")

rng = np.random.default_rng(7)


def ptx_for(name, arch):
    body = BODIES[name]

    def compiled(x, y):
        with jf.jit_scope():
            return body(x, y)

    f = jf.function(compiled)
    x = rng.standard_normal((4, 8)).astype(np.float32)
    y = rng.standard_normal((4, 8)).astype(np.float32)
    f(x, y)
    return jf.experimental.emit_ptx(f, x, y, arch=arch), jf.experimental.ptx_kernels(f, x, y, arch=arch)


@pytest.mark.parametrize("name", sorted(BODIES))
def test_ptx_emitted_with_kernel_signatures(name):
    ptx, kernels = ptx_for(name, "sm_80")
    assert ptx, "no cluster was compiled"
    for cluster, text in ptx.items():
        assert ".target sm_80" in text and ".address_size 64" in text
        assert kernels[cluster]
        for k in kernels[cluster]:
            # (bufs, params, total): the buffer and parameter tables by value (8-byte entries,
            # read with ld.param, never copied to local memory), then the 64-bit total.
            m = re.search(r"\.visible \.entry " + re.escape(k) + r"\(([^)]*)\)", text)
            assert m, f"entry {k} missing"
            tables = re.findall(r"\.param \.align 8 \.b8 \w+\[(\d+)\]", m.group(1))
            assert len(tables) == 2 and all(int(n) % 8 == 0 and int(n) >= 8 for n in tables), m.group(1)
            assert m.group(1).count(".param .u64") == 1
            assert "ld.param.u64" in text and not re.search(r"st\.local(\.v\d)?\.[ub]64", text)
        assert "%tid.x" in text and "%ctaid.x" in text and "%nctaid.x" in text
        assert "call" not in re.sub(r"//.*", "", text) or "__nv_" not in text  # libdevice inlined


@needs_ptxas
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("name", sorted(BODIES))
def test_ptxas_assembles(name, arch, tmp_path):
    ptx, _ = ptx_for(name, arch)
    for cluster, text in ptx.items():
        path = tmp_path / f"{cluster}.ptx"
        path.write_text(text)
        out = subprocess.run(
            [PTXAS, f"-arch={arch}", str(path), "-o", str(tmp_path / f"{cluster}.cubin")],
            capture_output=True,
            text=True,
            check=False,
        )
        assert out.returncode == 0, out.stderr


def test_bad_arch_is_an_error():
    ptx, _ = ptx_for("fused_chain", "sm_80")
    assert ptx
    f = jf.function(lambda x: x)
    with pytest.raises(jf.errors.InvalidArgumentError, match="sm_80"):

        @jf.function
        def g(x):
            with jf.jit_scope():
                return x * 2.0 + 1.0

        jf.experimental.emit_ptx(g, jf.constant([1.0]), arch="compute80")
    assert f(jf.constant(1.0)) is not None


def test_no_gpu_path_is_clear():
    status = jf._C.cuda_status()
    if status["available"]:
        assert jf.config.list_physical_devices("GPU")
        return
    assert jf.config.list_physical_devices("GPU") == []
    assert [d.device_type for d in jf.config.list_physical_devices()] == ["CPU"]
    jf.config.set_soft_device_placement(False)  # TF's default (on) would place on the CPU
    try:
        with pytest.raises(RuntimeError, match="libcuda.so.1"), jf.device("/GPU:0"):
            pass
    finally:
        jf.config.set_soft_device_placement(True)
    with jf.device("/CPU:0") as d:
        assert d == "/CPU:0"
        assert float(jf.constant(2.0) * 3.0) == 6.0
    with pytest.raises(ValueError, match="cannot parse"):
        jf.device("/TPU:0")


def test_ptx_is_cached_on_disk(tmp_path, monkeypatch):
    monkeypatch.setenv("JITFLOW_CACHE_DIR", str(tmp_path))

    @jf.function
    def g(x):
        with jf.jit_scope():
            return jf.exp(x) * 0.625 + 0.125

    x = jf.constant([1.0, 2.0])
    g(x)
    first = g.get_concrete_function(x)._cf.emit_ptx("sm_80")
    second = g.get_concrete_function(x)._cf.emit_ptx("sm_80")
    ((name, a),) = first.items()
    assert not a["from_cache"] and second[name]["from_cache"]
    assert second[name]["ptx"] == a["ptx"] and list(second[name]["kernels"]) == list(a["kernels"])
    other = g.get_concrete_function(x)._cf.emit_ptx("sm_90")
    assert not other[name]["from_cache"] and ".target sm_90" in other[name]["ptx"]


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
def test_reductions_are_block_reductions_with_warp_shuffles(dtype, tmp_path):
    @jf.function
    def f(x):
        with jf.jit_scope():
            return [jf.reduce_sum(x * 2, 1), jf.reduce_max(x, [0, 1]), jf.reduce_mean(x, 0)]

    x = (rng.standard_normal((6, 40)) * 10).astype(dtype)
    f(x)
    ptx = jf.experimental.emit_ptx(f, x, arch="sm_80")
    assert ptx
    for text in ptx.values():
        assert "shfl.sync.down.b32" in text and "bar.sync" in text and ".shared" in text
        if PTXAS:
            path = tmp_path / "r.ptx"
            path.write_text(text)
            out = subprocess.run(
                [PTXAS, "-arch=sm_80", str(path), "-o", str(tmp_path / "r.cubin")],
                capture_output=True,
                text=True,
                check=False,
            )
            assert out.returncode == 0, out.stderr


@pytest.mark.parametrize("name", ["softmax_rows", "cross_entropy", "layer_norm"])
def test_row_reductions_are_one_row_kernel_per_group(name):
    # Compiled for the GPU, each group of row reductions and the elementwise work around them
    # is one kernel (one block per row): shuffles and shared scratch combine the row's warps,
    # barriers separate the parts.
    ptx, kernels = ptx_for(name, "sm_80")
    assert ptx
    for cluster, text in ptx.items():  # softmax(x) and log_softmax(y) are two clusters
        rows = [k for k in kernels[cluster] if "_rows" in k]
        assert len(rows) == 1, kernels
        assert "shfl.sync.down" in text and "bar.sync" in text and ".shared" in text


def test_cheap_elementwise_kernels_keep_four_loads_in_flight_per_thread():
    # Memory-bound steps take four elements a trip, loaded before any is stored; a step with
    # a transcendental keeps one (its registers would cost resident threads).
    x = rng.standard_normal((64, 33)).astype(np.float32)

    def loads(body):
        f = jf.function(body, jit_compile=True)
        f(x)
        (text,) = jf.experimental.emit_ptx(f, x, arch="sm_80").values()
        return text.count("ld.global.f32")

    cheap = loads(lambda a: jf.maximum(a * 2.0 - 1.0, 0.0))
    expensive = loads(lambda a: jf.tanh(a * 2.0))
    assert cheap == 4 + 1  # four in the unrolled loop, one in the loop for the rest
    assert expensive == 1
