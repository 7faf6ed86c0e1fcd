"""``python -m pycutlass_gemm bench``: pycutlass_gemm against torch.matmul, the command.

Sections (see docs/bench.md), all in one default run: "workloads", the kernel table of the
project's three workloads in five precisions; "shapes", the same table for the shapes users bring
(or --shapes); "accuracy", the error of each fp32 precision (ieee, tf32, tf32x3, torch's fp32 and
tf32) against float64; "host", the per-call cost of the Python API; "call time", each table
problem timed from before the Python call; "model", training steps of an MLP and a transformer
encoder layer.
Each table row is checked against float64 before it is timed (bench_rows), with the method of
bench_timing; bench_report prints and writes the results.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from typing import Sequence

import torch

# The package itself, looked up at call time (``_api.plan``) so tests can swap its functions.
import pycutlass_gemm as _api

from .bench_accuracy import accuracy_steps, format_accuracy, run_accuracy
from .bench_cases import (LAYOUTS, SHAPE_FORMAT, SHAPES_SECTION, SWEEP_DEFAULT_VARIANTS, SWEEP_SIZES, TORCH,
                          WORKLOADS, WORKLOADS_SECTION, BASELINES, Precision, Workload, build_cases,
                          parse_precisions, parse_variants, select_shapes, select_workloads)
from .bench_host import format_call_time, format_host, host_steps, run_call_time, run_host
from .bench_model import format_model, model_steps, run_model
from .bench_plot import _pyplot, plot_bars, plot_sweep
from .bench_report import (Columns, Progress, format_auto_summary, format_header, format_row, write_csv,
                           write_json)
from .bench_rows import run_cases
from .bench_timing import FULL, QUICK, flush_buffer, measure_peaks

ACCURACY_SECTION, HOST_SECTION, CALL_TIME_SECTION, MODEL_SECTION = "accuracy", "host", "call-time", "model"
SECTIONS = (WORKLOADS_SECTION, SHAPES_SECTION, ACCURACY_SECTION, HOST_SECTION, CALL_TIME_SECTION, MODEL_SECTION)
HEADINGS = {WORKLOADS_SECTION: "workloads (problems.md)", SHAPES_SECTION: "shapes users bring",
            ACCURACY_SECTION: "accuracy (fp32 inputs)", HOST_SECTION: "host", CALL_TIME_SECTION: "call time",
            MODEL_SECTION: "model"}


def add_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser.description = ("Time pycutlass_gemm against torch.matmul: the project's workloads (transposed A, "
                          "transposed B, large K) and the shapes users bring, each result checked against float64; "
                          "the host's cost per call; whole training steps.")
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = ("examples:\n"
                     "  python -m pycutlass_gemm bench --quick\n"
                     "  python -m pycutlass_gemm bench --section host,model\n"
                     "  python -m pycutlass_gemm bench --shapes 1000x3000x777:rr:bf16,32x1024x64x1024:rc:fp16\n"
                     "  python -m pycutlass_gemm bench --workload transposed-a --dtype tf32,bfloat16 --csv out.csv\n"
                     "  python -m pycutlass_gemm bench --m 4096 --n 4096 --k 4096 --layout cr --variant auto,naive\n"
                     "  python -m pycutlass_gemm bench --sweep --dtype bfloat16 --plot sweep.png")
    sel = parser.add_argument_group("what to run")
    sel.add_argument("--quick", action="store_true", help="every section smaller, fewer runs (a few minutes)")
    sel.add_argument("--section", metavar="LIST", default="all",
                     help=f"comma-separated {', '.join(SECTIONS)}; default all, or only the table of the "
                          "problems asked for with --shapes, --workload, --m/--n/--k/--layout or --sweep")
    sel.add_argument("--workload", metavar="NAMES", help=f"comma-separated subset of {', '.join(WORKLOADS)}")
    sel.add_argument("--shapes", metavar="LIST",
                     help=f"comma-separated problems {SHAPE_FORMAT}, e.g. 1000x3000x777:rr:bf16 "
                          "(layouts r/c of A then B, dtype fp32, tf32, bf16 or fp16; B: a batch count)")
    sel.add_argument("--m", type=_positive_int, help="a custom problem instead of the workloads (others default to 4096)")
    sel.add_argument("--n", type=_positive_int)
    sel.add_argument("--k", type=_positive_int)
    sel.add_argument("--layout", choices=LAYOUTS,
                     help="custom problem / sweep layout of A then B: r = row-major, c = a column-major view "
                          "(the transpose of a row-major tensor, as A.T); default rr")
    sel.add_argument("--dtype", metavar="LIST", default="all",
                     help="comma-separated float32, tf32 (fp32 storage, precision='tf32'), tf32x3 (precision="
                          "'tf32x3'), bfloat16, float16; default all")
    sel.add_argument("--variant", metavar="LIST", default="all",
                     help=f"comma-separated {', '.join(BASELINES)} or kernel names; default all applicable "
                          "(torch.matmul is always run as the reference)")
    sel.add_argument("--sweep", action="store_true",
                     help=f"square sizes {SWEEP_SIZES[0]}..{SWEEP_SIZES[-1]} (variants auto, fallback, torch "
                          "unless --variant), plotted to --plot or sweep.png")
    out = parser.add_argument_group("output")
    out.add_argument("--csv", metavar="FILE", help="write every table row as CSV")
    out.add_argument("--json", metavar="FILE", help="write every row of every section, the peaks and the device as JSON")
    out.add_argument("--plot", metavar="FILE.png", help="bar chart of TFLOP/s (needs matplotlib)")
    out.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    return parser


def _positive_int(text: str) -> int:
    value = int(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive, got {value}")
    return value


def select_sections(args: argparse.Namespace) -> list[str]:
    """--section as given; else only the table of problems asked for by name; else every section."""
    if args.section and args.section != "all":
        chosen = [s.strip() for s in args.section.split(",") if s.strip()]
        for s in chosen:
            if s not in SECTIONS:
                raise ValueError(f"unknown --section {s!r}; choose from {', '.join(SECTIONS)} (comma-separated)")
        return [s for s in SECTIONS if s in chosen]
    if args.shapes:
        return [SHAPES_SECTION]
    if args.sweep or args.workload or any(v is not None for v in (args.m, args.n, args.k, args.layout)):
        return [WORKLOADS_SECTION]
    return list(SECTIONS)


def check_combinations(args: argparse.Namespace) -> None:
    if args.sweep and (args.m or args.n or args.k or args.workload):
        raise ValueError("--sweep picks its own sizes: drop --m/--n/--k/--workload")
    if args.shapes and (args.sweep or args.workload or any(v is not None for v in (args.m, args.n, args.k, args.layout))):
        raise ValueError("--shapes lists its own problems: drop --m/--n/--k/--layout/--workload/--sweep")
    if args.shapes and args.dtype != "all":
        raise ValueError("--shapes names each problem's dtype (1000x3000x777:rr:bf16): drop --dtype")


def _device_meta() -> dict:
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    return {"device": props.name, "sm": props.major * 10 + props.minor, "sms": props.multi_processor_count,
            "torch": torch.__version__, "cuda": torch.version.cuda,
            "pycutlass_gemm": getattr(_api, "__version__", "?")}


def report_without_gpu(problems: Sequence[tuple[Workload, Precision]], sections: Sequence[str]) -> int:
    """No CUDA device: say so, show what auto would run on an H100 (sm_90), exit 2."""
    print("pycutlass_gemm bench: no CUDA device (torch.cuda.is_available() is False; torch "
          f"{torch.__version__}, CUDA {torch.version.cuda or 'not built in'}). Nothing was timed.", file=sys.stderr)
    if problems:
        print("What variant='auto' would run on sm_90 (plan() on meta tensors):")
        width = max(len(w.label) for w, _ in problems)
    for w, p in problems:
        a, b = w.meta_inputs(p)
        try:
            plan = _api.plan(a, b, precision=p.gemm_precision, arch=90)
            line = f"{plan['kernel'] or '(none)'}  -- {plan['reason']}"
        except Exception as e:  # noqa: BLE001 -- e.g. the compiled core is missing
            line = f"cannot plan: {type(e).__name__}: {e}"
        print(f"  {w.label:<{width}}  {p.name:<4}  {line}")
    others = [s for s in sections if s not in (WORKLOADS_SECTION, SHAPES_SECTION)]
    if others:
        print(f"Sections {', '.join(others)} need a GPU.")
    return 2


def _table_problems(workloads, precisions, shapes, sections) -> list[tuple[Workload, Precision]]:
    """The table's problems in the sections chosen (all of them when no table section is)."""
    tables = [s for s in (WORKLOADS_SECTION, SHAPES_SECTION) if s in sections] or [WORKLOADS_SECTION, SHAPES_SECTION]
    return ([(w, p) for w in workloads for p in precisions] if WORKLOADS_SECTION in tables else []) + (
        list(shapes) if SHAPES_SECTION in tables else [])


def run(args: argparse.Namespace) -> int:
    """The bench command. Exit status: 0 all rows passed, 1 some FAIL, 2 nothing could run."""
    try:
        check_combinations(args)
        sections = select_sections(args)
        precisions = parse_precisions(args.dtype)
        workloads = select_workloads(args)
        shapes = select_shapes(args, precisions)
        variants = parse_variants(args.variant)
        if args.sweep and variants is None:
            variants = list(SWEEP_DEFAULT_VARIANTS)
    except ValueError as e:
        print(f"pycutlass_gemm bench: {e}", file=sys.stderr)
        return 2
    plot_path = args.plot or ("sweep.png" if args.sweep else None)
    if args.plot:
        try:
            _pyplot()
        except ImportError:  # fail before minutes of measuring, not after
            print("pycutlass_gemm bench: --plot needs matplotlib (pip install matplotlib)", file=sys.stderr)
            return 2

    if args.shapes and WORKLOADS_SECTION not in sections:
        workloads = []  # --shapes replaces the workloads, in call time too, unless --section names them
    table_workloads = workloads if WORKLOADS_SECTION in sections else []
    table_shapes = shapes if SHAPES_SECTION in sections else []
    if not torch.cuda.is_available():
        return report_without_gpu([(w, p) for w in table_workloads for p in precisions] + table_shapes, sections)

    kernels = _api.kernels()
    try:
        cases = build_cases(table_workloads, precisions, variants, kernels, shapes=table_shapes) \
            if table_workloads or table_shapes else []
    except ValueError as e:
        print(f"pycutlass_gemm bench: {e}", file=sys.stderr)
        return 2
    settings = QUICK if args.quick else FULL
    meta = _device_meta()
    print(f"{meta['device']} (sm_{meta['sm']}, {meta['sms']} SMs), torch {meta['torch']}, CUDA {meta['cuda']}, "
          f"pycutlass_gemm {meta['pycutlass_gemm']}; sections: {', '.join(sections)}")

    call_time_problems = _table_problems(workloads, precisions, shapes, sections) \
        if CALL_TIME_SECTION in sections else []
    table_precisions = list(dict.fromkeys(c.precision for c in cases))
    groups = len({(c.section, c.workload, c.precision) for c in cases})  # each: its checks, then one timing step
    steps = (len(table_precisions) + 1 if cases else 0) + len(cases) + groups + len(call_time_problems)
    steps += (accuracy_steps(args.quick) if ACCURACY_SECTION in sections else 0)
    steps += (host_steps(args.quick) if HOST_SECTION in sections else 0) + (
        model_steps(args.quick) if MODEL_SECTION in sections else 0)
    progress = Progress(steps, enabled=not args.no_progress)
    results, extra, peaks = [], {}, {}
    try:
        if cases:
            cols = Columns.for_cases(cases, kernels)
            peaks = measure_peaks(table_precisions, flush_buffer(settings), settings, progress)
            progress.write("measured peaks: " + ", ".join(f"{p.name} {peaks[p.name]:.0f} TFLOP/s" for p in table_precisions)
                           + f" (torch.matmul {settings.peak_size}^3); copy {peaks['copy_gbps']:.0f} GB/s")
            shown = []

            def emit(rows):
                if rows and rows[0].section not in shown:  # a heading and the header as each table starts
                    shown.append(rows[0].section)
                    progress.write(f"\n== {HEADINGS[rows[0].section]}")
                    progress.write(format_header(cols))
                for r in rows:
                    progress.write(format_row(r, cols))
            results = run_cases(cases, peaks, settings, progress, emit=emit)
            summary = format_auto_summary(results)
            if summary:
                progress.write("\n" + summary)
        if ACCURACY_SECTION in sections:
            extra["accuracy"] = run_accuracy(args.quick, progress)
            _write_section(progress, ACCURACY_SECTION, format_accuracy(extra["accuracy"]))
        if HOST_SECTION in sections:
            extra["host"] = run_host(args.quick, progress)
            _write_section(progress, HOST_SECTION, format_host(extra["host"]))
        if call_time_problems:
            failed = {(r.workload, r.precision) for r in results if r.variant in ("auto", TORCH) and r.status == "FAIL"}
            extra["call_time"] = run_call_time([(w, p) for w, p in call_time_problems if (w.name, p.name) not in failed],
                                               settings, progress)
            _write_section(progress, CALL_TIME_SECTION, format_call_time(extra["call_time"]))
        if MODEL_SECTION in sections:
            extra["model"] = run_model(args.quick, settings, progress)
            _write_section(progress, MODEL_SECTION, format_model(extra["model"], args.quick))
    finally:
        progress.close()

    meta.update(peaks=peaks, settings=dataclasses.asdict(settings), sections=sections,
                args={k: v for k, v in vars(args).items() if not callable(v)})
    if args.csv:
        write_csv(args.csv, results)
    if args.json:
        write_json(args.json, results, meta, extra)
    if plot_path and results:
        title = f"{meta['device']}, torch {meta['torch']}"
        try:
            (plot_sweep if args.sweep else plot_bars)(results, plot_path, title)
            print(f"plot written to {plot_path}")
        except ImportError:
            print("pycutlass_gemm bench: no plot: matplotlib is not installed (pip install matplotlib)",
                  file=sys.stderr)
    rows = results + [r for section_rows in extra.values() for r in section_rows]
    failed = sum(r.status == "FAIL" for r in rows)
    skipped = sum(r.status == "SKIP" for r in rows)
    print(f"{len(rows) - failed - skipped} ok, {failed} FAIL, {skipped} SKIP")
    return 1 if failed else 0


def _write_section(progress: Progress, section: str, lines: Sequence[str]) -> None:
    progress.write(f"\n== {HEADINGS[section]}")
    for line in lines:
        progress.write(line)
