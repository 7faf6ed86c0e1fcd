#!/usr/bin/env bash
# One device call (planned in session 54, which had no GPU lent): cuBLAS's tiles over 129-256 rows of x @ W.T and dx
# (notes/measurements.md, session 53: two tiles of ceil(M / 2) rows by 64 of N in clusters of 2x1) as tuning
# candidates of ours -- 64x96 and 64x128 tiles of D^T, ping-pong, clusters of 2x1 (scripts/tuning_kernels.py) -- built
# beside the bf16 rr / rc SM90 kernels they compete with, checked against float64 (the GPU suite's cases), then timed
# by name over the two-rows, band and wide grids (notes/random-shapes-session47.py) against auto and torch.matmul.
#   run(command="PREBUILT=.scratch/wheel54 bash notes/transposed-64-row-tiles.sh", carry=[".whl", ".scratch/wheel54"])
# (~60 s tests + ~200 s grids; a build when the wheel is not there or does not import: ~150-250 s on 16 cores). A wheel
# it builds lands in $OUT/wheel.
set -o pipefail
export PYTHONUNBUFFERED=1
cd "$(dirname "$0")/.."
start=$(date +%s)
candidates='sm90_bf16_r[rc]_64x(96|128)x64_c2x1_pingpong_persistent_swapab'
# The registered bf16 rr / rc TMA kernels (no staged, any-output or bias ones: aligned layer shapes only), by name,
# so that PYCUTLASS_GEMM_TUNING=ON adds the four candidates and none of the other tuning kernels.
registered=$(python3 scripts/generate_kernels.py --list --filter '^sm90_bf16_r[rc]_(?!.*(anyout|coopstaged|bias))' | paste -sd'|')
export SKBUILD_CMAKE_DEFINE="PYCUTLASS_GEMM_KERNELS=^($registered)\$|$candidates;PYCUTLASS_GEMM_TUNING=ON"
# PREBUILT=dir: a wheel of this kernel set built elsewhere (session 54 built one on its CPU machine, cp312); built
# here if it does not import (another Python, an older C library).
ls "${PREBUILT:-/nonexistent}"/pycutlass_gemm-*.whl >/dev/null 2>&1 || PREBUILT=
if [ -n "$PREBUILT" ] && PREBUILT=$PREBUILT SKIP_TESTS=1 bash scripts/gpu_check.sh && (cd /tmp && python3 -c "import pycutlass_gemm._C"); then
  echo "the prebuilt wheel: $(ls "$PREBUILT")"
else
  PREBUILT= SKIP_TESTS=1 bash scripts/gpu_check.sh || exit 1
fi
(cd /tmp && python3 -c "import pycutlass_gemm as pg; print(len(pg.kernels()), 'kernels')")
(cd tests && timeout 240 python3 -m pytest -q -p no:cacheprovider -x test_cutlass_kernels_gpu.py test_rows_past_the_edge_gpu.py \
  -k "64x96x64 or 64x128x64_c2x1" 2>&1 | tail -n 5)
echo "build+tests $(( $(date +%s) - start )) s"
cd notes
export KERNELS="$candidates|128x192x64_c2x1_coop_(splitk|persistent)_swapab|128x(80|128)x64_c2x1_coop_persistent|64x64x64_c2x1|128x256x64_c2x1_coop_splitk|128x64x64_c1x[124]_coop_persistent"
for grid in two-rows band wide; do
  timeout 150 python3 random-shapes-session47.py $OUT/$grid-transposed-64.jsonl 0 0 0 54 $grid 2>&1 | tail -n 2
done
echo "total $(( $(date +%s) - start )) s"
