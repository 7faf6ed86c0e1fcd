#!/usr/bin/env bash
# Nsight Compute on the memory-bound products issue 10 still loses (notes/ncu-memory-bound.py), ours against cuBLAS:
# DRAM and L2 bytes and throughput, L2 -> SM bytes, SM active cycles, stalls; then the decode-time kernel's launch sweep.
# Planned in session 54 (no GPU lent).
#   run(command="PREBUILT=<wheel dir> bash notes/ncu-memory-bound.sh", carry=[".whl", <wheel dir>])   # ~2-3 min
# (after notes/transposed-64-row-tiles.sh, whose wheel holds the 64x96 candidate; any build runs the rest).
set -o pipefail
cd "$(dirname "$0")/.."
repo=$PWD
[ -n "${PREBUILT:-}" ] && { SKIP_TESTS=1 bash scripts/gpu_check.sh || exit 1; }
metrics=gpu__time_duration.sum,dram__bytes_read.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,\
lts__t_bytes.sum,lts__throughput.avg.pct_of_peak_sustained_elapsed,l1tex__m_xbar2l1tex_read_bytes.sum,\
sm__cycles_active.avg,sm__cycles_elapsed.avg,launch__grid_size,launch__cluster_dim_x,launch__cluster_dim_y,\
smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,\
smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio,\
smsp__average_warps_issue_stalled_membar_per_issue_active.ratio,\
smsp__average_warps_issue_stalled_sleeping_per_issue_active.ratio
cd /tmp && timeout 500 ncu --profile-from-start off --clock-control none --metrics "$metrics" \
  python3 "$repo/notes/ncu-memory-bound.py" 2>&1 | grep -vE "^==PROF== Profiling" | tee "${OUT:-/tmp}/ncu-memory-bound.txt" | \
  grep -E "x[0-9]+ r[rc]:|device_kernel|nvjet|sum_partials|gpu__time|dram__bytes|lts__t_bytes|xbar2l1tex|cycles_active" | cut -c1-160
# The decode-time kernel's launch shapes on this GPU (chosen on the H100 in session 24: warps for ~16 a multiprocessor;
# the H200's HBM is 1.4x as fast, so it may want more loads in flight): issue 10's 1.3x at M = 16 (1.14x in session 53)
(cd /tmp && timeout 120 python3 "$repo/scripts/small_mn_launch_sweep.py" --rounds 30 \
  --launch "default;1,2;1,4;1,8;2,4;2,8;4,4;4,8" 2>&1 | tee "${OUT:-/tmp}/small-mn-launch-h200.txt" | tail -n 95)
