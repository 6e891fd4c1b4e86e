#!/usr/bin/env bash
# One run on a CUDA machine without network (a lent H200): install what it lacks from the kit,
# build pycuda (timed), run the CUDA tests, the OpenCL tests if NVIDIA's OpenCL driver is there,
# and bench/cuda_peers.py. Everything it writes goes to $OUT (default /tmp/hlotune_cuda_out):
#   run.log (all output), pytest_cuda.log, opencl.log, cuda.{md,csv,env.json}, and the pycuda
#   wheel it built (carry it back as KIT/pycuda-*.whl and the next run installs it in seconds).
#
# Usage (from the repository root):  KIT=.devkit bench/cuda_device.sh [SECTIONS] [TRIALS]
#   KIT: a folder holding ../shared/cuda-kit's files (and optionally a prebuilt pycuda wheel);
#   SECTIONS: bench/cuda_peers.py's --only (default: every section); TRIALS: matmul tuning trials.
# Every step has a time limit and the script goes on after a failed step; its exit status is
# the number of failed steps.
set -u
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
OUT="${OUT:-/tmp/hlotune_cuda_out}"
KIT="${KIT:-$ROOT/.devkit}"
SECTIONS="${1:-matmul_f32,matmul_bf16,corpus,conv,layer}"
TRIALS="${2:-64}"
DEADLINE_S="${DEADLINE_S:-3000}"     # the whole run ends within this many seconds (steps get what is left)
SITE=/tmp/hlotune_site
mkdir -p "$OUT" "$SITE"
exec > >(tee -a "$OUT/run.log") 2>&1
FAILED=0
T0=$(date +%s)
step() { echo; echo "=== [$(( $(date +%s) - T0 ))s] $*"; }
run() {  # run LIMIT_S CMD...: a step with a time limit (cut to what the deadline leaves); counts failures
  local limit=$1; shift
  local left=$(( DEADLINE_S - ($(date +%s) - T0) ))
  [ "$left" -lt "$limit" ] && limit=$left
  [ "$limit" -le 5 ] && { echo "!!! no time left for: $*"; FAILED=$((FAILED + 1)); return 124; }
  timeout "$limit" "$@"; local rc=$?
  [ $rc -ne 0 ] && { echo "!!! step failed (exit $rc): $*"; FAILED=$((FAILED + 1)); }
  return $rc
}
PY="${PY:-python3}"
# hlotune is installed into $SITE and imported from there: Python runs from another folder, so
# the checkout's own hlotune/ (the API alone; its dsl/, runtime/, ... install under it) never
# shadows it; the checkout comes after $SITE on the path for bench/ and tests/.
RUN=/tmp/hlotune_run
mkdir -p "$RUN"
export PYTHONUNBUFFERED=1 HLOTUNE_CACHE=/tmp/hlotune_cache PYTHONPATH="$SITE:$ROOT"
export HLOTUNE_COMMIT="$(cat "$KIT/commit" 2>/dev/null || echo unknown)" HLOTUNE_TREE="$(cat "$KIT/tree" 2>/dev/null || echo unknown)"

step "machine"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv || true
nvcc --version | tail -2; $PY --version; uname -r; nproc
$PY -m pip list 2>/dev/null | grep -i -E "^(cupy|jax|jaxlib|torch|numpy|scipy|pandas|pytest|hypothesis|ml.dtypes|setuptools) " || true

step "install the kit's wheels and hlotune (no network)"
run 120 $PY -m pip install -q --no-index --no-deps --no-compile --target "$SITE" "$KIT"/pytools-*.whl "$KIT"/platformdirs-*.whl \
  "$KIT"/mako-*.whl "$KIT"/siphash24-*.whl "$KIT"/scikit_optimize-*.whl "$KIT"/pyaml-*.whl "$KIT"/pyopencl-*.whl
run 180 $PY -m pip install -q --no-index --no-deps --no-build-isolation --no-compile --target "$SITE" . || true

step "pycuda: build from the sdist against this machine's CUDA (timed)"
CUDA_ROOT="${CUDA_HOME:-$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")}"
[ -f "$CUDA_ROOT/include/cuda.h" ] || CUDA_ROOT=/usr/local/cuda
LIBCUDA="${LIBCUDA:-$(ldconfig -p 2>/dev/null | awk '/libcuda\.so\.1 /{print $NF; exit}')}"
[ -z "$LIBCUDA" ] && LIBCUDA="$(ls /usr/local/nvidia/lib64/libcuda.so.1 /usr/lib/x86_64-linux-gnu/libcuda.so.1 \
  /usr/lib64/libcuda.so.1 2>/dev/null | head -1)"
echo "CUDA_ROOT=$CUDA_ROOT libcuda=$LIBCUDA"
mkdir -p /tmp/cudadrv && ln -sf "$LIBCUDA" /tmp/cudadrv/libcuda.so
rm -rf /tmp/pycuda_src && mkdir -p /tmp/pycuda_src && tar xzf "$KIT"/pycuda-*.tar.gz -C /tmp/pycuda_src
B0=$(date +%s)
( cd /tmp/pycuda_src/pycuda-* && $PY configure.py --cuda-root="$CUDA_ROOT" --cudadrv-lib-dir=/tmp/cudadrv \
    --no-cuda-enable-curand > /tmp/pycuda_configure.log \
  && timeout 600 $PY setup.py build_ext -j "$(nproc)" > /tmp/pycuda_build.log 2>&1 \
  && $PY setup.py bdist_wheel -d "$OUT" >> /tmp/pycuda_build.log 2>&1 )
BUILD_RC=$?
BUILD_S=$(( $(date +%s) - B0 ))
export HL_PYCUDA_BUILD="built from the sdist in ${BUILD_S} s (setup.py build_ext -j $(nproc)), exit ${BUILD_RC}"
echo "$HL_PYCUDA_BUILD"; tail -3 /tmp/pycuda_build.log
WHEEL="$(ls "$OUT"/pycuda-*.whl 2>/dev/null | head -1)"
if [ $BUILD_RC -ne 0 ] || [ -z "$WHEEL" ]; then
  FAILED=$((FAILED + 1))
  WHEEL="$(ls "$KIT"/pycuda-*.whl 2>/dev/null | head -1)"
  export HL_PYCUDA_BUILD="$HL_PYCUDA_BUILD; installed the kit's prebuilt wheel $(basename "${WHEEL:-none}") instead"
  echo "$HL_PYCUDA_BUILD"
fi
run 60 $PY -m pip install -q --no-index --no-deps --no-compile --target "$SITE" "$WHEEL"
run 60 $PY -c "import pycuda.driver as d; d.init(); print('pycuda', d.get_version(), 'driver', d.get_driver_version(), d.Device(0).name())"
cd "$RUN"
run 60 $PY -m hlotune.cli devices

step "CUDA tests (the device's, and codegen checked with its own cuobjdump)"
XDIST=""; $PY -c "import xdist" 2>/dev/null && XDIST="-n 12"
run 300 $PY -m pytest -q -p no:cacheprovider -o addopts="" $XDIST -rfE "$ROOT"/tests/test_cuda_runtime.py \
  "$ROOT"/tests/test_cuda_codegen.py > "$OUT/pytest_cuda.log" 2>&1
tail -40 "$OUT/pytest_cuda.log"

step "benchmark: bench/cuda_peers.py --only $SECTIONS --trials $TRIALS"
run 1800 $PY -m bench.cuda_peers --only "$SECTIONS" --trials "$TRIALS" --results "$OUT"

step "OpenCL on this machine (NVIDIA's driver, if it is here)"
ls /etc/OpenCL/vendors 2>/dev/null; ldconfig -p 2>/dev/null | grep -i opencl | head -3
if [ "${OPENCL:-1}" = 1 ] && $PY -c "import pyopencl as cl; ps=cl.get_platforms(); print([p.name for p in ps]); assert any('NVIDIA' in p.name for p in ps)" ; then
  run 240 $PY -m pytest -q -p no:cacheprovider -o addopts="" $XDIST -rfE "$ROOT"/tests/test_opencl.py > "$OUT/opencl.log" 2>&1
  tail -15 "$OUT/opencl.log"
else
  echo "no NVIDIA OpenCL platform (or OPENCL=0): OpenCL not checked on this GPU" | tee "$OUT/opencl.log"
fi

step "done: $FAILED failed steps, $(( $(date +%s) - T0 )) s"
exit $FAILED
