"""Session 45: is a call timed right after torch.matmul slower (the artifact in notes/measurements.md, session 45)?
Per problem: rounds of [torch, X, X'] (X and X' the same call), of [X, X'] alone, event times (time_once, L2 flushed)
and each run's GPU kernel time from torch.profiler, for X's run after torch and after X'.
    python3 notes/after-torch-artifact-session45.py"""
import statistics, torch
import pycutlass_gemm as pg
from torch.profiler import profile, ProfilerActivity
from pycutlass_gemm import bench_timing as bt

settings = bt.Settings(budget_s=0.05, min_runs=15, max_runs=30, warmup_s=0.02, flush_mib=256)
flush = bt.flush_buffer(settings)
med = lambda v: 1e3 * statistics.median(v)  # noqa: E731
for m, n, k, dtype, precision, variant in ((4, 4, 16, torch.float32, "tf32", "sm80_tf32_rr_128x128x32_a1_s3"),
                                          (96, 50257, 264, torch.float32, "tf32", "sm80_tf32_rr_128x128x32_a1_s3"),
                                          (16, 16, 512, torch.float32, "tf32", "auto"),
                                          (256, 256, 256, torch.bfloat16, None, "auto")):
    a = torch.randn(m, k, device="cuda", dtype=dtype)
    b = torch.randn(k, n, device="cuda", dtype=dtype)
    o = torch.empty(m, n, device="cuda", dtype=dtype)
    tm = lambda: torch.matmul(a, b, out=o)  # noqa: E731
    x = lambda: pg.gemm(a, b, out=o, precision=precision, variant=variant)  # noqa: E731
    x2 = lambda: pg.gemm(a, b, out=o, precision=precision, variant=variant)  # noqa: E731
    with bt.torch_matmul_precision(precision == "tf32"):
        for f in (tm, x, x2):
            bt.warm_up(f, settings)
        t3 = bt.time_interleaved([tm, x, x2], flush, settings)
        t2 = bt.time_interleaved([x, x2], flush, settings)
        calls = {"x after torch": [], "x after x": []}
        for _ in range(20):
            tm(); torch.cuda.synchronize()
            calls["x after torch"].append(bt.time_call(x, flush))
            x2(); torch.cuda.synchronize()
            calls["x after x"].append(bt.time_call(x, flush))
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(10):
                flush.zero_(); tm(); flush.zero_(); x(); flush.zero_(); x2()
            torch.cuda.synchronize()
    ours = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA and ("cutlass" in e.name or "pycutlass" in e.name)
            and "cublas" not in e.name.lower() and "cutlass_80_" not in e.name and "nvjet" not in e.name]
    print(f"{m}x{n}x{k} {str(dtype)[6:]} {variant}: [torch, X, X'] {med(t3[0]):.1f} / {med(t3[1]):.1f} / {med(t3[2]):.1f} us; "
          f"[X, X'] {med(t2[0]):.1f} / {med(t2[1]):.1f}; call time after torch {med(calls['x after torch']):.1f}, "
          f"after X {med(calls['x after x']):.1f}; profiler, our kernels in [torch, X, X'] rounds: "
          + ", ".join(f"{e.device_time_total if hasattr(e, 'device_time_total') else e.cuda_time_total:.1f}" for e in ours[:8]))
