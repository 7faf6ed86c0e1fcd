#!/usr/bin/env bash
# The next device session's first call (planned in sessions 56 and 57, ~450 s): the full build, the split-K reduction
# experiment (notes/split-reduce-session56.py), the TMA L2-promotion experiment (notes/tma-l2-promotion-session57.py),
# the GPU suite. Its wheel ($OUT/wheel) comes back for the second call (notes/device-session57b.sh, PREBUILT).
#   run(command="bash notes/device-session57a.sh", carry=[".whl"])
export PYTHONUNBUFFERED=1
R=$PWD
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1 | grep -o "H[0-9]*" | tr H h)  # h100 or h200, in the result names
OUT=$OUT SKIP_TESTS=1 bash scripts/gpu_check.sh || exit 1
cd /tmp
echo "== split-reduce at $SECONDS s"; timeout 90 python3 $R/notes/split-reduce-session56.py $OUT/split-reduce-$GPU-session57.jsonl > $OUT/split-reduce.log 2>&1; tail -n 8 $OUT/split-reduce.log
echo "== l2 promotion at $SECONDS s"; timeout 170 python3 $R/notes/tma-l2-promotion-session57.py $OUT/tma-l2-promotion-$GPU-session57.jsonl > $OUT/l2.log 2>&1; cat $OUT/l2.log | cut -c1-230
echo "== suite at $SECONDS s"; (cd $R/tests && timeout $(( 590 - SECONDS )) python3 -m pytest -q -p no:cacheprovider -rfs > $OUT/suite.log 2>&1); grep -E "passed|failed|FAILED|Error" $OUT/suite.log | tail -n 15
