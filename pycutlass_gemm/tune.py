"""``pycutlass-gemm tune``: measure kernel choices on this GPU.

``tune --sweep`` times every kernel that can run each problem of the sweep (tune_sweep), writes the
raw measurements (one JSON object per problem) and the heuristics table built from them: the table
the package ships for the GPU it was measured on (copy it into pycutlass_gemm/tables/).
``tune --shapes`` fills the autotune cache for a list of problems ahead of time.
"""

from __future__ import annotations

import argparse
import re
import sys

import torch

from . import autotuning, heuristics, tune_sweep
from . import launch as _launch
from .bench_cases import SHAPE_FORMAT, parse_shapes


def add_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser.description = __doc__.split("\n\n")[1]
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--sweep", action="store_true", help="time every candidate kernel on the sweep's problems")
    what.add_argument("--shapes", metavar="LIST",
                      help=f"tune these problems into the autotune cache: comma-separated {SHAPE_FORMAT}, "
                           "e.g. 1000x3000x777:rr:bf16")
    parser.add_argument("--measurements", metavar="FILE.jsonl", default="sweep.jsonl",
                        help="--sweep: where the raw measurements go; a problem already there is measured again "
                             "only if a kernel that can run it was not measured there (one built since)")
    parser.add_argument("--table-dir", metavar="DIR", default=".",
                        help="--sweep: where the table goes (named for the device), once every problem is measured")
    parser.add_argument("--limit-s", type=float, metavar="SECONDS",
                        help="--sweep: stop after this long; run again to go on")
    parser.add_argument("--quick", action="store_true", help="--sweep: a few problems only")
    parser.add_argument("--classes", metavar="REGEX",
                        help="--sweep: only the problems whose table class matches (re.search), e.g. ' unaligned$' "
                             "to measure a kernel for 16-bit operands TMA cannot load on the classes it is for "
                             "(it can run aligned problems too: without this, they would all be measured again)")
    parser.add_argument("--keep-unbuilt", action="store_true",
                        help="--sweep: a problem measured again keeps the times of kernels this build lacks, so a "
                             "build of only the kernels to measure (their records deleted first) updates the table")
    parser.add_argument("--kernels", metavar="REGEX",
                        help="--sweep: time only the kernels whose names match (re.search), where one of them was "
                             "not measured; the others keep their times (kernels added to a whole build)")
    parser.add_argument("--force", action="store_true", help="--shapes: tune again what the cache already holds")
    return parser


def run(args: argparse.Namespace) -> int:
    try:
        shapes = parse_shapes(args.shapes) if args.shapes else []
    except ValueError as e:
        print(f"pycutlass_gemm tune: {e}", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("pycutlass_gemm tune: no CUDA device; nothing to measure", file=sys.stderr)
        return 2
    if args.sweep:
        problems = tune_sweep.sweep_problems(args.quick)
        if args.classes:
            problems = [(w, p) for w, p in problems
                        if re.search(args.classes, heuristics.problem_class(*w.meta_inputs(p), p.gemm_precision))]
        left = tune_sweep.run_sweep(problems, args.measurements, limit_s=args.limit_s, keep_unbuilt=args.keep_unbuilt,
                                     only=args.kernels)
        if left:
            return 3
        records = list(tune_sweep.load_measurements(args.measurements).values())
        props = torch.cuda.get_device_properties(torch.cuda.current_device())
        from . import __version__
        table = heuristics.build_table(records, device=props.name, sm=props.major * 10 + props.minor,
                                       sm_count=props.multi_processor_count, version=__version__,
                                       sweep={"problems": len(records), "seconds": round(sum(r["seconds"] for r in records))},
                                       **heuristics.sweep_meta())
        path = heuristics.write_table(table, args.table_dir)
        print(f"table: {path} ({sum(len(v) for v in table['classes'].values())} points in {len(table['classes'])} classes)")
        return 0
    for w, p in shapes:
        a, b = w.make_inputs(p)
        before = _launch.plan(a, b, precision=p.gemm_precision)["kernel"]
        choice = autotuning.tune_call(a, b, precision=p.gemm_precision, force=args.force)
        ms = choice["ms"]
        best = ms[choice["kernel"]]
        note = f"untuned choice {before}: {ms[before] / best:.3f}x the time" if before in ms and before != choice["kernel"] else "same as untuned"
        print(f"{w.label} {p.name}: {choice['kernel']} {best:.4f} ms ({note}; tuned in {choice['seconds']:.2f} s)")
    print(f"cache: {autotuning.cache_for(torch.device('cuda', torch.cuda.current_device())).path}")
    return 0
