#!/usr/bin/env bash
# Carries this machine's build of jitflow to a GPU machine and checks it there: `pack` bundles
# the built extension, the shared libraries it links, this Python 3.11 (interpreter, standard
# library, numpy, ml_dtypes, pytest) and CUDA's libdevice into one archive; `run`, on the GPU
# machine in a checkout of the same tree, unpacks it and runs tests/python/gpu and
# benchmarks/gpu.py within five minutes; `smoke` unpacks it here and imports jitflow and runs
# the stand-in-driver suite with nothing but the bundle, to show it is self-contained.
#
#   tools/gpu_check.sh pack  [ARCHIVE]   default build/gpu_bundle.tar.xz (under the 64 MiB a
#                                        device session carries)
#   tools/gpu_check.sh run   [ARCHIVE]   on the GPU machine; JAX_PYTHON=/path/to/python picks the
#                                        interpreter with jax (default: python3 if it has jax)
#   tools/gpu_check.sh smoke [ARCHIVE]   here, without a GPU
#   tools/gpu_check.sh py ARCHIVE SCRIPT [ARGS]  the bundle's Python on a script, on the GPU machine
#
# With a device session's `run` tool: pack here, then run
#   tools/gpu_check.sh run build/gpu_bundle.tar.xz   carrying build/gpu_bundle.tar.xz.
# The interpreter and libraries link this machine's glibc (ldd --version); the GPU machine's
# must be as new. The GPU machine needs the NVIDIA driver (libcuda.so.1) and cuBLAS; cuBLAS is
# looked for on the loader path, in /usr/local/cuda*, and in the nvidia-cublas wheels of the
# machine's python3.
set -euo pipefail
cd "$(dirname "$0")/.."
cmd=${1:-}
ARCHIVE=${2:-build/gpu_bundle.tar.xz}

die() {
  echo "gpu_check: $*" >&2
  exit 1
}

pack() {
  local ext venv_home pyroot stage site exts
  exts=(python/jitflow/_C.cpython-311-*.so)
  ext=${exts[0]}
  [ -f "$ext" ] || die "no python/jitflow/_C.cpython-311-*.so: build first (cmake --build build/dev)"
  venv_home=$(sed -n 's/^home = //p' .venv/pyvenv.cfg)
  pyroot=$(dirname "$venv_home")
  [ -x "$pyroot/bin/python3.11" ] || die "no Python 3.11 at $pyroot (from .venv/pyvenv.cfg)"
  stage=$(mktemp -d)
  trap 'rm -rf "$stage"' RETURN
  mkdir -p "$stage/b/py/bin" "$stage/b/py/lib" "$stage/b/libs" "$stage/b/jitflow" \
    "$stage/b/cuda/nvvm/libdevice"
  # The interpreter and its standard library, without what neither tests nor benchmarks use.
  cp "$pyroot/bin/python3.11" "$stage/b/py/bin/"
  cp -L "$pyroot"/lib/libpython3.11.so.1.0 "$stage/b/py/lib/" 2>/dev/null || true
  tar -C "$pyroot/lib" -cf - --exclude='python3.11/site-packages' --exclude='python3.11/test' \
    --exclude='python3.11/idlelib' --exclude='python3.11/tkinter' --exclude='python3.11/turtledemo' \
    --exclude='python3.11/ensurepip' --exclude='python3.11/lib2to3' --exclude='python3.11/config-3.11-*' \
    --exclude='python3.11/pydoc_data' --exclude='__pycache__' --exclude='*/tests' python3.11 |
    tar -C "$stage/b/py/lib" -xf -
  # The packages jitflow and pytest import.
  site=.venv/lib/python3.11/site-packages
  mkdir -p "$stage/b/py/lib/python3.11/site-packages"
  local p
  for p in numpy numpy.libs ml_dtypes pytest _pytest pluggy iniconfig packaging pygments py.py; do
    [ -e "$site/$p" ] || continue
    tar -C "$site" -cf - --exclude='__pycache__' --exclude='tests' --exclude='*.pyi' --exclude='f2py' \
      --exclude='_core/include' "$p" | tar -C "$stage/b/py/lib/python3.11/site-packages" -xf -
  done
  # The extension (LLVM is linked into it) without symbols, and the libraries ldd resolves
  # for it other than glibc's own.
  cp "$ext" "$stage/b/jitflow/"
  strip --strip-unneeded "$stage/b/jitflow/$(basename "$ext")" 2>/dev/null || true
  ldd "$ext" | awk '/=> \// {print $3}' | while read -r lib; do
    case "$(basename "$lib")" in
      libc.so.* | libm.so.* | libpthread.so.* | libdl.so.* | librt.so.* | ld-linux*) ;;
      *) cp -L "$lib" "$stage/b/libs/" ;;
    esac
  done
  # libdevice: the GPU machine may have the driver but no CUDA toolkit.
  local libdevice
  for libdevice in "${CUDA_HOME:-/usr/local/cuda}/nvvm/libdevice/libdevice.10.bc" \
    /usr/local/cuda/nvvm/libdevice/libdevice.10.bc /usr/lib/cuda/nvvm/libdevice/libdevice.10.bc; do
    if [ -f "$libdevice" ]; then
      cp "$libdevice" "$stage/b/cuda/nvvm/libdevice/"
      break
    fi
  done
  [ -f "$stage/b/cuda/nvvm/libdevice/libdevice.10.bc" ] || echo "gpu_check: no libdevice found; kernels calling exp/log/... will not compile" >&2
  git rev-parse HEAD >"$stage/b/REVISION" 2>/dev/null || true
  mkdir -p "$(dirname "$ARCHIVE")"
  tar -C "$stage" -cf - b | xz -T2 -6 >"$ARCHIVE"
  echo "gpu_check: packed $(du -h "$ARCHIVE" | cut -f1) into $ARCHIVE (revision $(cat "$stage/b/REVISION" 2>/dev/null || echo '?'))"
}

# Unpacks the archive into $DIR (GPU_CHECK_DIR, or a fresh temporary directory) and sets
# up the environment the bundle needs.
unpack() {
  [ -f "$ARCHIVE" ] || die "no $ARCHIVE: run '$0 pack' first"
  DIR=${GPU_CHECK_DIR:-$(mktemp -d)}
  tar -C "$DIR" -xJf "$ARCHIVE"
  B=$DIR/b
  # The package from this checkout with the bundle's extension, beside the tree (a build
  # in python/jitflow is never overwritten).
  mkdir -p "$DIR/pkg"
  tar -C python -cf - --exclude='__pycache__' --exclude='_C.*.so' jitflow | tar -C "$DIR/pkg" -xf -
  cp "$B"/jitflow/_C.cpython-311-*.so "$DIR/pkg/jitflow/"
  PY=$B/py/bin/python3.11
  export PYTHONHOME=$B/py PYTHONPATH=$DIR/pkg PYTHONNOUSERSITE=1
  export JITFLOW_HOST_LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}
  export LD_LIBRARY_PATH=$B/py/lib:$B/libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  export CUDA_HOME=$B/cuda
  export JITFLOW_CACHE_DIR=${JITFLOW_CACHE_DIR:-$DIR/cache}
}

find_cublas() {
  local c
  [ -n "${JITFLOW_CUBLAS:-}" ] && return
  if ldconfig -p 2>/dev/null | grep -q 'libcublas\.so\.1[123]'; then return; fi
  for c in /usr/local/cuda*/lib64/libcublas.so.1[123] /usr/local/cuda*/targets/*/lib/libcublas.so.1[123]; do
    [ -f "$c" ] && export JITFLOW_CUBLAS=$c && return
  done
  if command -v python3 >/dev/null; then
    c=$(python3 - <<'EOF' 2>/dev/null || true
import glob, os, site
for d in site.getsitepackages() + [site.getusersitepackages()]:
    for f in sorted(glob.glob(os.path.join(d, "nvidia", "cublas", "lib", "libcublas.so.1*"))):
        print(f)
        raise SystemExit
EOF
    )
    if [ -n "$c" ]; then
      export JITFLOW_CUBLAS=$c
      # cuBLAS loads cublasLt from its own directory.
      LD_LIBRARY_PATH=$(dirname "$c"):$LD_LIBRARY_PATH
      export LD_LIBRARY_PATH
    fi
  fi
}

run() {
  local jax_py="${JAX_PYTHON:-}" start rc=0
  # Looked for before unpack: the bundle's PYTHONHOME would break the machine's own python3.
  if [ -z "$jax_py" ] && command -v python3 >/dev/null && python3 -c 'import jax' 2>/dev/null; then
    jax_py=$(command -v python3)
  fi
  # GPU_CHECK_TESTS narrows the test run (a device session's minutes are few); the default
  # is the whole GPU suite.
  local tests
  read -r -a tests <<<"${GPU_CHECK_TESTS:-tests/python/gpu}"
  start=$(date +%s)
  unpack
  find_cublas
  "$PY" -c 'import jitflow as jf, sys; s = jf._C.cuda_status(); print("gpu_check:", jf.__version__, s); sys.exit(0 if s["available"] else 3)' ||
    die "jitflow sees no GPU here"
  # The stand-in-driver suite builds its fake driver with a C++ compiler; without one it
  # cannot run (it runs in CI on the CPU machine anyway).
  if ! command -v "${CXX:-c++}" >/dev/null && ! command -v g++ >/dev/null; then
    tests=(tests/python/gpu/test_gpu_execution.py tests/python/gpu/test_gpu_codegen.py)
    echo "gpu_check: no C++ compiler: the stand-in-driver suite is left to CI"
  fi
  timeout 200 "$PY" -m pytest -q -p no:cacheprovider "${tests[@]}" || rc=$?
  timeout 240 "$PY" benchmarks/gpu.py ${jax_py:+--jax-python "$jax_py"} || rc=$((rc ? rc : $?))
  echo "gpu_check: done in $(($(date +%s) - start)) s, exit $rc"
  return $rc
}

smoke() {
  unpack
  local lib
  lib=$(mktemp -d)
  g++ -std=c++17 -O1 -shared -fPIC tests/cpp/gpu/fake_cuda.cc -o "$lib/libfake_cuda.so"
  g++ -std=c++17 -O1 -shared -fPIC tests/cpp/gpu/fake_cublas.cc -o "$lib/libfake_cublas.so"
  # Nothing from this machine's Python: a bare environment but for the bundle's.
  env -i PATH=/usr/bin:/bin HOME="$HOME" PYTHONHOME="$PYTHONHOME" PYTHONPATH="$PYTHONPATH" PYTHONNOUSERSITE=1 \
    LD_LIBRARY_PATH="$B/py/lib:$B/libs" CUDA_HOME="$CUDA_HOME" JITFLOW_CACHE_DIR="$JITFLOW_CACHE_DIR" \
    JITFLOW_FAKE_GPU=1 JITFLOW_CUDA_DRIVER="$lib/libfake_cuda.so" JITFLOW_CUBLAS="$lib/libfake_cublas.so" \
    "$PY" -c 'import sys, numpy, jitflow as jf; print("gpu_check smoke:", sys.executable, sys.version.split()[0], "numpy", numpy.__version__, "jitflow", jf.__version__, jf._C.cuda_status())'
  env -i PATH=/usr/bin:/bin HOME="$HOME" PYTHONHOME="$PYTHONHOME" PYTHONPATH="$PYTHONPATH" PYTHONNOUSERSITE=1 \
    LD_LIBRARY_PATH="$B/py/lib:$B/libs" CUDA_HOME="$CUDA_HOME" JITFLOW_CACHE_DIR="$JITFLOW_CACHE_DIR" \
    JITFLOW_FAKE_GPU=1 JITFLOW_CUDA_DRIVER="$lib/libfake_cuda.so" JITFLOW_CUBLAS="$lib/libfake_cublas.so" \
    "$PY" -m pytest -q -p no:cacheprovider tests/python/gpu/fake_gpu tests/python/gpu/test_gpu_codegen.py
  env -i PATH=/usr/bin:/bin HOME="$HOME" PYTHONHOME="$PYTHONHOME" PYTHONPATH="$PYTHONPATH" PYTHONNOUSERSITE=1 \
    LD_LIBRARY_PATH="$B/py/lib:$B/libs" CUDA_HOME="$CUDA_HOME" JITFLOW_CACHE_DIR="$JITFLOW_CACHE_DIR" \
    "$PY" benchmarks/gpu.py
  rm -rf "$lib"
}

# Runs the bundle's Python on the rest of the command line (a probe script), on the GPU machine.
py() {
  unpack
  find_cublas
  "$PY" "$@"
}

case "$cmd" in
  pack) pack ;;
  py) shift 2 && py "$@" ;;
  run) run ;;
  smoke) smoke ;;
  *) die "usage: $0 pack|run|smoke [ARCHIVE] | py ARCHIVE SCRIPT [ARGS]" ;;
esac
