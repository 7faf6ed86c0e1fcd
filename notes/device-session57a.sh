#!/usr/bin/env bash
# The next device session's first call (planned in sessions 56 and 57, ~450 s): the full build, the split-K reduction
# experiment (notes/split-reduce-session56.py), the TMA L2-promotion experiment (notes/tma-l2-promotion-session57.py),
# the GPU suite, then `bench --shapes` on issue 10's list. Its wheel ($OUT/wheel) comes back for the second call
# (notes/device-session57b.sh, PREBUILT). With a cp312 wheel built here (~21 min on 2 cores) the build is skipped:
#   run(command="PREBUILT=.scratch/wheel58 bash notes/device-session57a.sh", carry=[".whl", ".scratch/wheel58"])
export PYTHONUNBUFFERED=1
R=$PWD
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1 | grep -o "H[0-9][0-9]*" | head -n 1 | tr H h)  # h100 or h200, in the result names
OUT=$OUT SKIP_TESTS=1 bash scripts/gpu_check.sh || exit 1
cd /tmp
echo "== split-reduce at $SECONDS s"; timeout 90 python3 $R/notes/split-reduce-session56.py $OUT/split-reduce-$GPU-session57.jsonl > $OUT/split-reduce.log 2>&1; tail -n 8 $OUT/split-reduce.log
echo "== l2 promotion at $SECONDS s"; timeout 170 python3 $R/notes/tma-l2-promotion-session57.py $OUT/tma-l2-promotion-$GPU-session57.jsonl > $OUT/l2.log 2>&1; cat $OUT/l2.log | cut -c1-230
echo "== suite at $SECONDS s"; (cd $R/tests && timeout 160 python3 -m pytest -q -p no:cacheprovider -rfs > $OUT/suite.log 2>&1); grep -E "passed|failed|FAILED|Error" $OUT/suite.log | tail -n 15
# The bench's shapes list (issue 10's rows and session 56's rule shapes) with what time is left.
cd /tmp
shapes=16x4096x4096:rc:bf16,128x4096x4096:rc:bf16,128x4096x4096:rr:bf16,176x4096x4096:rr:bf16,200x4096x4096:rc:bf16
shapes=$shapes,256x4096x4096:rc:bf16,256x256x131072:rr:bf16,256x256x524288:rr:bf16,1000x3000x777:rr:bf16
shapes=$shapes,2048x1001x2048:rr:bf16,4096x4096x4096:rc:bf16,96x7680x14336:rc:bf16,112x8192x8192:rc:bf16
shapes=$shapes,96x8192x8192:rr:bf16,72x2048x14336:rc:bf16,176x4096x4096:rc:bf16
echo "== bench at $SECONDS s"
timeout $(( 590 - SECONDS )) pycutlass-gemm bench --shapes $shapes --variant torch,auto --no-progress \
  --json $OUT/bench-shapes-$GPU-session57.json > /tmp/bench.log 2>&1; tail -n 40 /tmp/bench.log
