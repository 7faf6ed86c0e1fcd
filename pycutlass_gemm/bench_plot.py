"""The benchmark's charts (matplotlib, imported only when a plot is asked for): TFLOP/s per
workload and precision as bars coloured by role, and TFLOP/s against size for --sweep."""

from __future__ import annotations

from typing import Sequence

from .bench_cases import TORCH, TORCH_COPY, Result


def _pyplot():
    import matplotlib  # lazily: only --plot and --sweep need it

    matplotlib.use("Agg")  # files only, also on machines without a display
    import matplotlib.pyplot as plt

    return plt


def _variant_colors(variants: Sequence[str]) -> dict[str, object]:
    plt = _pyplot()
    others = [v for v in variants if v != TORCH]
    cmap = plt.get_cmap("tab20" if len(others) > 10 else "tab10")
    colors = {v: cmap(i % cmap.N) for i, v in enumerate(others)}
    colors[TORCH] = "black"  # the bar everything is compared with
    return colors


# Bars by role, so the chart reads the same whatever the registry holds: every registered kernel
# that can run a row shares one colour (the table names them), auto is annotated with its x torch.
BAR_ROLES = {TORCH: ("torch.matmul", "black"), TORCH_COPY: ("torch.matmul after .contiguous()", "0.6"),
             "auto": ("pycutlass_gemm auto", "tab:blue"), "kernel": ("other registered kernels", "lightsteelblue"),
             "fallback": ("fallback", "tab:orange"), "naive": ("naive", "tab:green")}


def plot_bars(results: Sequence[Result], path: str, title: str = "") -> None:
    """TFLOP/s per workload (one panel each) x precision (groups) x variant (bars, coloured by
    role, see BAR_ROLES); auto's bar carries its speed-up over torch.matmul; FAIL rows are marked
    where their bar would be."""
    plt = _pyplot()
    rows = [r for r in results if r.status != "SKIP"]
    workloads = list(dict.fromkeys(r.workload for r in rows))
    role = lambda r: r.variant if r.variant in BAR_ROLES else "kernel"  # noqa: E731
    roles = [k for k in BAR_ROLES if any(role(r) == k for r in rows)]
    most = max(sum(1 for r in rows if (r.workload, r.precision) == (w, p)) for w, p in
               {(r.workload, r.precision) for r in rows})
    fig, axes = plt.subplots(len(workloads), 1, figsize=(max(8, 0.35 * most * 4 + 3), 3.4 * len(workloads)),
                             squeeze=False)
    for ax, w in zip(axes[:, 0], workloads):
        in_w = [r for r in rows if r.workload == w]
        precisions = list(dict.fromkeys(r.precision for r in in_w))
        for gi, p in enumerate(precisions):
            group = sorted((r for r in in_w if r.precision == p), key=lambda r: roles.index(role(r)))
            width = 0.8 / len(group)
            for bi, r in enumerate(group):
                x = gi - 0.4 + width * (bi + 0.5)
                if r.status != "ok":
                    ax.text(x, 0, "FAIL", rotation=90, ha="center", va="bottom", fontsize=7, color="red")
                    continue
                ax.bar(x, r.tflops, width, color=BAR_ROLES[role(r)][1], edgecolor="black", linewidth=0.3)
                if r.variant == "auto" and r.x_torch:
                    ax.text(x, r.tflops, f"{r.x_torch:.2f}x", ha="center", va="bottom", fontsize=7)
        ax.set_xticks(range(len(precisions)), precisions)
        ax.set_ylabel("TFLOP/s")
        ax.set_title(w, fontsize=10)
        ax.grid(axis="y", alpha=0.3)
    handles = [plt.Rectangle((0, 0), 1, 1, color=BAR_ROLES[k][1]) for k in roles]
    fig.legend(handles, [BAR_ROLES[k][0] for k in roles], loc="upper center", ncol=len(roles), fontsize=8,
               bbox_to_anchor=(0.5, 1.0))
    fig.suptitle(title + "  (label on auto: x torch.matmul, same run)", y=1.04, fontsize=10)
    fig.tight_layout(rect=(0, 0, 1, 0.97))
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)


def plot_sweep(results: Sequence[Result], path: str, title: str = "") -> None:
    """TFLOP/s against size (m = n = k), one panel per precision, one line per variant."""
    plt = _pyplot()
    rows = [r for r in results if r.status == "ok"]
    precisions = list(dict.fromkeys(r.precision for r in results))
    variants = list(dict.fromkeys(r.variant for r in results))
    colors = _variant_colors(variants)
    fig, axes = plt.subplots(1, len(precisions), figsize=(5 * len(precisions), 4), squeeze=False)
    for ax, p in zip(axes[0], precisions):
        for v in variants:
            points = sorted((r.m, r.tflops) for r in rows if r.precision == p and r.variant == v)
            if points:
                ax.plot(*zip(*points), marker="o", color=colors[v], label="torch.matmul" if v == TORCH else v,
                        linewidth=2.5 if v == TORCH else 1.2, linestyle="--" if v == TORCH else "-")
        ax.set_xscale("log", base=2)
        sizes = sorted({r.m for r in results})
        ax.set_xticks(sizes, [str(x) for x in sizes], rotation=45, fontsize=8)
        ax.minorticks_off()
        ax.set_ylim(bottom=0)
        ax.set_xlabel("m = n = k")
        ax.set_ylabel("TFLOP/s")
        ax.set_title(p)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)
