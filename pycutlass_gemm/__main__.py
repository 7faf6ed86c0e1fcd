"""Command line: ``python -m pycutlass_gemm bench ...`` (console script ``pycutlass-gemm``)."""

from __future__ import annotations

import argparse
import sys

from . import bench, tune


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="pycutlass-gemm",
                                     description="CUTLASS-backed GEMMs for PyTorch: tools.")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    bench.add_arguments(commands.add_parser(
        "bench", help="time the kernels against torch.matmul on the project's workloads"))
    tune.add_arguments(commands.add_parser(
        "tune", help="measure which kernel is fastest per problem on this GPU (the heuristics table, autotuning)"))
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the exit status (0 ok, 1 a benchmark row failed, 2 nothing could run, 3 a sweep stopped at its time limit)."""
    args = build_parser().parse_args(argv)
    if args.command == "bench":
        return bench.run(args)
    if args.command == "tune":
        return tune.run(args)
    raise AssertionError(f"unhandled command {args.command!r}")  # argparse only lets known ones through


if __name__ == "__main__":
    sys.exit(main())
