"""What the kernel-selection tests share: meta operands, fake measured tables, and what the priority rules alone
(no table) choose."""

import torch

import pycutlass_gemm as pg
from pycutlass_gemm import heuristics
from conftest import matrix


def meta(rows, cols, layout="row", dtype=torch.bfloat16):
    return matrix(rows, cols, layout, dtype, device="meta")


def meta_operands(m, n, k, layouts, dtype=torch.bfloat16):
    """Meta A (m x k) and B (k x n) in the layouts named as "rc" (A row-major, B column-major)."""
    layout = {"r": "row", "c": "col"}
    return meta(m, k, layout[layouts[0]], dtype), meta(k, n, layout[layouts[1]], dtype)


def fake_table(points, cls="bfloat16 ieee row col aligned", device="NVIDIA Fake GPU", sm=90, sm_count=132):
    """points: (m, n, k, batch, fastest kernel) or (m, n, k, batch, [(kernel, time over the fastest's), ...])."""
    timed = [(m, n, k, batch, [(kernels, 1.0)] if isinstance(kernels, str) else kernels)
             for m, n, k, batch, kernels in points]
    names = sorted({name for *_, kernels in timed for name, _ in kernels})
    rows = [[m, n, k, batch, names.index(kernels[0][0])] +
            [x for name, ratio in kernels[1:] for x in (names.index(name), round(1000 * ratio))]
            for m, n, k, batch, kernels in timed]
    return {"format": heuristics.FORMAT, "device": device, "sm": sm, "sm_count": sm_count, "package_version": "test",
            "measured": "today", "source": f"test table for {device}", "kernels": names, "classes": {cls: rows}}


def rules_choice(a, b, precision="ieee"):
    heuristics.install([])
    try:
        return pg.plan(a, b, precision=precision, arch=90)["kernel"]
    finally:
        heuristics.install()
