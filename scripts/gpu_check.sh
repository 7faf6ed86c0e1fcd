#!/usr/bin/env bash
# Build and test on a GPU machine without network access (e.g. the lent H100).
#
# Prepare once, on a machine with PyPI access, in the repository root:
#   mkdir -p .whl && python3 -m pip download --no-deps --only-binary=:all: -d .whl nvidia-cutlass==4.2.0.0
# then copy the repository (with .whl/) to the GPU machine and run
#   bash scripts/gpu_check.sh [pytest arguments]
# It installs the carried wheels into /tmp/site (headers only are needed: --no-deps), builds the
# extension with the machine's own torch, pybind11 and scikit-build-core (--no-build-isolation),
# and runs the whole test suite. SKBUILD_CMAKE_DEFINE="PYCUTLASS_GEMM_KERNELS=<regex>" builds a
# subset (";PYCUTLASS_GEMM_TUNING=ON" adds the tuning candidates, ";PYCUTLASS_GEMM_SMALL_MN=OFF"
# leaves out the small-M/N kernels). Set SKIP_TESTS=1 to only build, OUT to keep the build log and
# the built wheel there (carry that wheel back in PREBUILT=dir to install it instead of building).
set -euo pipefail
cd "$(dirname "$0")/.."
log=${OUT:-/tmp}/build.log
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
# The build directory (build/, pyproject.toml's build-dir) keeps CMake's cache between runs on one
# machine: name the kernel set every time, or a subset asked for before is built again.
export SKBUILD_CMAKE_DEFINE="PYCUTLASS_GEMM_KERNELS=.*;PYCUTLASS_GEMM_TUNING=OFF;PYCUTLASS_GEMM_SMALL_MN=ON${SKBUILD_CMAKE_DEFINE:+;$SKBUILD_CMAKE_DEFINE}"
wheels=${OUT:-/tmp}/wheel
start=$(date +%s)
if [ -n "${PREBUILT:-}" ]; then
  wheels=$PREBUILT; echo "gpu_check: installing the prebuilt $(ls "$wheels")"
elif ! python3 -m pip wheel --no-build-isolation --no-deps -v -w "$wheels" . >"$log" 2>&1; then
  tail -n 60 "$log"; echo "gpu_check: build failed (log: $log)"; exit 1
else
  echo "gpu_check: build took $(( $(date +%s) - start )) s on $(nproc) cores"
  grep -E "pycutlass_gemm:" "$log" || true
fi
python3 -m pip install -q --no-deps --no-index --force-reinstall "$wheels"/pycutlass_gemm-*.whl
[ -n "${SKIP_TESTS:-}" ] && exit 0
cd tests && python3 -m pytest -q -rs "$@"
