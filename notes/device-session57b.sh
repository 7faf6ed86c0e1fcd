#!/usr/bin/env bash
# The second call (~400 s), with the first call's wheel: auto under session 56's rules on the one-row / pair-rows
# grids, then the stream-K 128x192 candidates.
#   run(command="PREBUILT=<wheel dir> bash notes/device-session57b.sh", carry=[".whl", "<wheel dir>"])
# Results in $OUT (4 files: the device returns at most 8), logs in /tmp (their tails are printed).
export PYTHONUNBUFFERED=1
R=$PWD
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1 | grep -o "H[0-9][0-9]*" | head -n 1 | tr H h)  # h100 or h200, in the result names
OUT=$OUT SKIP_TESTS=1 PREBUILT=$PREBUILT bash scripts/gpu_check.sh || exit 1
cd /tmp
echo "== auto grids at $SECONDS s"
timeout 60 python3 $R/notes/random-shapes-session47.py $OUT/one-row-auto-$GPU-session57.jsonl 0 0 0 56 one-row auto \
  > /tmp/one-row-auto.log 2>&1; tail -n 2 /tmp/one-row-auto.log
timeout 60 python3 $R/notes/random-shapes-session47.py $OUT/pair-rows-auto-$GPU-session57.jsonl 0 0 0 56 pair-rows auto \
  > /tmp/pair-rows-auto.log 2>&1; tail -n 2 /tmp/pair-rows-auto.log
# Stream-K on 128x192 tiles of D^T (tuning candidates, session 57) against the registered split and persistent 128x192
# of D^T, by name on the band grid (136-208 rows): a subset build with the candidates (~90-120 s on 16 cores).
cd $R
mkdir -p /tmp/sk192; echo "== streamk-192 build at $SECONDS s"
kernels='128x192x64_c(1x1_coop_streamk|2x1_coop_splitk|2x1_coop_persistent)_swapab'
PREBUILT= OUT=/tmp/sk192 SKIP_TESTS=1 SKBUILD_CMAKE_DEFINE="PYCUTLASS_GEMM_KERNELS=^sm90_bf16_r[rc]_$kernels\$;PYCUTLASS_GEMM_TUNING=ON" \
  bash scripts/gpu_check.sh || exit 1
cd /tmp
echo "== streamk-192 band at $SECONDS s"
KERNELS=$kernels timeout $(( 590 - SECONDS )) python3 $R/notes/random-shapes-session47.py \
  $OUT/band-streamk192-$GPU-session57.jsonl 0 0 0 57 band > /tmp/band-sk192.log 2>&1; tail -n 30 /tmp/band-sk192.log | cut -c1-250
