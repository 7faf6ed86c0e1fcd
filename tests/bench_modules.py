"""What the bench tests share: the bench modules (loaded from the source tree under a stub package
when the compiled core is not built), a fake kernel registry, and small builders."""

import importlib
import importlib.util
import pathlib
import sys
import types



SRC = pathlib.Path(__file__).resolve().parents[1] / "pycutlass_gemm"


MODULES = ("bench_cases", "bench_timing", "bench_report", "bench_plot", "bench_rows", "bench_host", "bench_model",
           "bench_accuracy", "bench", "__main__")


def _load_cli():
    """{module name: module} of the bench modules and __main__, and has_ext. The installed modules
    when they import; otherwise the source tree's, under a stub package when the compiled core is
    not built (tests then fake the API)."""
    try:
        import pycutlass_gemm  # noqa: F401
        return {name: importlib.import_module(f"pycutlass_gemm.{name}") for name in MODULES}, True
    except ImportError:
        pass
    names = ["pycutlass_gemm"] + [f"pycutlass_gemm.{name}" for name in MODULES]
    saved = {name: sys.modules.get(name) for name in names}
    try:
        import pycutlass_gemm  # noqa: F401 -- installed without the bench modules (an older build)
        has_ext = True
    except ImportError:
        stub = types.ModuleType("pycutlass_gemm")
        stub.__path__ = [str(SRC)]
        sys.modules["pycutlass_gemm"] = stub
        has_ext = False
    try:
        for name in names[1:]:
            sys.modules.pop(name, None)  # the source tree's own, each importing the others from it
        loaded = {}
        for name in MODULES:
            spec = importlib.util.spec_from_file_location(f"pycutlass_gemm.{name}", SRC / f"{name}.py")
            module = importlib.util.module_from_spec(spec)
            sys.modules[spec.name] = module
            spec.loader.exec_module(module)
            loaded[name] = module
        return loaded, has_ext
    finally:  # leave the rest of the session the package as it really imports
        for name, module in saved.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module


_modules, HAS_EXT = _load_cli()
cli, bench = _modules["__main__"], _modules["bench"]
cases, timing, report, plot, rows_mod, host, model, accuracy = (
    _modules[f"bench_{name}"] for name in ("cases", "timing", "report", "plot", "rows", "host", "model", "accuracy"))
_api = bench._api  # the package (or the stub) every bench module calls through

FAKE_KERNELS = [
    {"name": "naive", "family": "naive", "dtype": d, "math": "ieee", "layout_a": "any", "layout_b": "any",
     "sm_min": 80, "sm_max": 999, "tile": "", "alignment": 1, "priority": -1}
    for d in ("float32", "float16", "bfloat16")
] + [
    {"name": "fallback", "family": "fallback", "dtype": d, "math": "ieee", "layout_a": "any", "layout_b": "any",
     "sm_min": 80, "sm_max": 999, "tile": "", "alignment": 1, "priority": 0}
    for d in ("float32", "float16", "bfloat16")
] + [
    {"name": "sm90_bf16_tn", "family": "cutlass_sm90", "dtype": "bfloat16", "math": "ieee", "layout_a": "row",
     "layout_b": "col", "sm_min": 90, "sm_max": 90, "tile": "128x256x64", "alignment": 8, "priority": 10},
    {"name": "sm90_tf32_nn", "family": "cutlass_sm90", "dtype": "float32", "math": "tf32", "layout_a": "row",
     "layout_b": "row", "sm_min": 90, "sm_max": 90, "tile": "128x128x32", "alignment": 4, "priority": 10},
    {"name": "simt_f32_any", "family": "cutlass_simt", "dtype": "float32", "math": "ieee", "layout_a": "any",
     "layout_b": "any", "sm_min": 80, "sm_max": 999, "tile": "128x128x8", "alignment": 1, "priority": 5},
]


def parse(*argv):
    return cli.build_parser().parse_args(["bench", *argv])


def result(variant="auto", status="ok", **kw):
    base = dict(workload="transposed A", m=2048, n=4096, k=8192, layout="cr", precision="bf16",
                variant=variant, kernel=variant, status=status)
    if status == "ok":
        base.update(error=1e-3, tol=1e-2, ms=1.0, ms_min=0.9, runs=10, tflops=137.4, pct_peak=20.0,
                    gbps=100.0, pct_bw=3.0)
    base.update(kw)
    return cases.Result(**base)
