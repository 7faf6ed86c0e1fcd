#!/usr/bin/env python3
"""Times the small-M/N kernel under launch settings against torch.matmul, on a GPU.

    python3 scripts/small_mn_launch_sweep.py [--shapes 16x4096x4096,...] [--launch "default;1,4;2,8"]
        [--rounds 50] [--dtype bf16]

Each shape (M x N x K, A row-major, B column-major: x @ W.T) runs under every setting of
PYCUTLASS_GEMM_SMALL_MN_LAUNCH ("groups,warps", or "default": the kernel's own choice;
cpp/small_mn_gemm.cu reads it at every call), in interleaved rounds with L2 flushed before each run
(pycutlass_gemm.bench_timing.time_once), and prints the median microseconds, x torch.matmul and
the error against float64 of each. Settings are separated by ';' (each has commas).
"""
import argparse
import os
import statistics

import torch

import pycutlass_gemm as pg
from pycutlass_gemm.bench_timing import FULL, flush_buffer, time_once

SHAPES = ("16x4096x4096,1x4096x4096,32x4096x4096,16x14336x4096,16x4096x14336,4096x16x4096,16x1024x8192,"
          "16x2048x8192,16x1024x16384,4x16x65536,16x256x65536")
LAUNCHES = "default;1,2;1,4;1,8;2,4;2,8;4,8"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shapes", default=SHAPES)
    parser.add_argument("--launch", default=LAUNCHES)
    parser.add_argument("--rounds", type=int, default=50)
    parser.add_argument("--dtype", default="bf16", choices=["bf16", "f16"])
    args = parser.parse_args()
    dtype = torch.bfloat16 if args.dtype == "bf16" else torch.float16
    name = f"small_mn_{args.dtype}_rc"
    flush = flush_buffer(FULL)
    launches = args.launch.split(";")
    print(f"{torch.cuda.get_device_name()}, {name}, median of {args.rounds} interleaved rounds, L2 flushed")
    print(f"{'shape':>16} {'launch':>9} {'us':>8} {'x torch':>8} {'error':>9}")
    for shape in args.shapes.split(","):
        m, n, k = map(int, shape.split("x"))
        a = torch.randn(m, k, device="cuda", dtype=dtype)
        b = torch.randn(n, k, device="cuda", dtype=dtype).T  # column-major K x N
        ref = a.double() @ b.double()
        runs = {"torch": lambda: torch.matmul(a, b)}
        for launch in launches:
            runs[launch] = (lambda launch=launch: pg.gemm(a, b, variant=name))
        errors = {}
        for label, fn in runs.items():
            set_launch(label)
            errors[label] = ((fn().double() - ref).norm() / ref.norm()).item()
            for _ in range(3):
                fn()
        times = {label: [] for label in runs}
        for _ in range(args.rounds):
            for label, fn in runs.items():
                set_launch(label)
                times[label].append(time_once(fn, flush) * 1e3)
        set_launch("default")
        torch_us = statistics.median(times["torch"])
        for label in runs:
            us = statistics.median(times[label])
            print(f"{shape:>16} {label:>9} {us:8.1f} {torch_us / us:7.2f}x {errors[label]:9.1e}")


def set_launch(label):
    if label in ("default", "torch"):
        os.environ.pop("PYCUTLASS_GEMM_SMALL_MN_LAUNCH", None)
    else:
        os.environ["PYCUTLASS_GEMM_SMALL_MN_LAUNCH"] = label


if __name__ == "__main__":
    main()
