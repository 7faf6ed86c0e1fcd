"""Session 45: where the time of small tf32 / bf16 problems goes (H200): each (problem, kernel) run 20 times with L2
flushed between runs under torch.profiler; prints every GPU kernel and memset of a run (mean us) and the event time
of a run (median us, as the benchmark times it).
    python3 notes/small-problem-profile-session45.py"""
import statistics, torch
import pycutlass_gemm as pg
from torch.profiler import profile, ProfilerActivity
from pycutlass_gemm import bench_timing as bt

CASES = [  # m, n, k, layouts, dtype, precision, variants (auto, torch and these)
    (4, 4, 16, "rr", torch.float32, "tf32", ["sm80_tf32_rr_128x128x32_a1_s3"]),
    (4, 4, 64, "rr", torch.float32, "tf32", ["sm80_tf32_rr_128x128x32_a1_s3"]),
    (4, 16, 1024, "rr", torch.float32, "tf32", ["sm80_tf32_rr_128x128x32_a1_s3"]),
    (16, 16, 512, "rr", torch.float32, "tf32", ["sm80_tf32_rr_128x128x32_a1_s3"]),
    (64, 64, 65536, "rr", torch.float32, "tf32", ["sm80_tf32_rr_128x128x32_a1_s3"]),
    (4, 16, 1024, "rr", torch.bfloat16, None, ["sm80_bf16_rr_128x128x32_a1_s2"]),
    (64, 256, 2048, "rr", torch.bfloat16, None, ["sm80_bf16_rr_128x128x32_a1_s2"]),
]
flush = torch.empty(256 * 2**18, device="cuda", dtype=torch.int32)


def make(rows, cols, layout, dtype):
    x = torch.randn(rows, cols, device="cuda", dtype=dtype) if layout == "r" else \
        torch.randn(cols, rows, device="cuda", dtype=dtype).T
    return x


for m, n, k, lay, dtype, precision, names in CASES:
    a, b = make(m, k, lay[0], dtype), make(k, n, lay[1], dtype)
    out = torch.empty(m, n, device="cuda", dtype=dtype)
    auto = pg.plan(a, b, precision=precision)["kernel"]
    variants = [("torch", lambda: torch.matmul(a, b, out=out))] + [
        (v, lambda v=v: pg.gemm(a, b, out=out, precision=precision, variant=v)) for v in [auto] + names]
    for label, fn in variants:
        with bt.torch_matmul_precision(precision == "tf32"):
            for _ in range(5):
                fn()
            torch.cuda.synchronize()
            times = [bt.time_once(fn, flush) for _ in range(20)]
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                for _ in range(20):
                    flush.zero_()
                    fn()
                torch.cuda.synchronize()
        kernels = {}
        for e in prof.events():
            if e.device_type == torch.autograd.DeviceType.CUDA and "zero" not in e.name.lower() \
                    and "fill" not in e.name.lower():
                kernels.setdefault(e.name[:90], []).append(e.device_time_total if hasattr(e, "device_time_total") else e.cuda_time_total)
        print(f"{m}x{n}x{k} {lay} {str(dtype)[6:]} {precision or ''} {label}: event {1e3 * statistics.median(times):.1f} us")
        for name, ts in kernels.items():
            print(f"    {len(ts) / 20:.1f} x {statistics.mean(ts):7.1f} us  {name}")
