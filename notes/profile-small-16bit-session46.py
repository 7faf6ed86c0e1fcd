"""Session 46: where the time of small aligned 16-bit problems goes, auto (the SM80 64x64x32 a8 tile, split-K with a
second kernel adding the slices) against torch.matmul: each kernel either launches, its GPU time (torch.profiler,
median over 20 runs, L2 flushed before each).
    python3 notes/profile-small-16bit-session46.py"""
import collections, statistics, torch
import pycutlass_gemm as pg
from torch.profiler import profile, ProfilerActivity

flush = torch.empty(256 * 2**18, device="cuda", dtype=torch.int32)
for m, n, k, lay, dtype in ((4, 16, 1024, "rr", torch.bfloat16), (64, 256, 256, "rr", torch.bfloat16),
                            (256, 256, 64, "cc", torch.float16), (48, 4096, 32, "rc", torch.bfloat16),
                            (1024, 48, 128, "cr", torch.float16), (128, 128, 512, "rr", torch.bfloat16)):
    a = torch.randn(m, k, device="cuda", dtype=dtype) if lay[0] == "r" else torch.randn(k, m, device="cuda", dtype=dtype).t()
    b = torch.randn(k, n, device="cuda", dtype=dtype) if lay[1] == "r" else torch.randn(n, k, device="cuda", dtype=dtype).t()
    o = torch.empty(m, n, device="cuda", dtype=dtype)
    plan = pg.plan(a, b)
    for label, fn in (("torch", lambda: torch.matmul(a, b, out=o)), ("auto", lambda: pg.gemm(a, b, out=o))):
        for _ in range(5):
            fn()
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(20):
                flush.zero_(); fn()
            torch.cuda.synchronize()
        times = collections.defaultdict(list)
        for e in prof.events():
            if e.device_type == torch.autograd.DeviceType.CUDA and "fill" not in e.name.lower():
                times[e.name[:70]].append(getattr(e, "device_time_total", 0) or e.cuda_time_total)
        parts = ", ".join(f"{nm} x{len(v)} {statistics.median(v):.2f} us" for nm, v in times.items())
        print(f"{m}x{n}x{k} {lay} {str(dtype)[6:]} {label}{' ' + plan['kernel'] if label == 'auto' else ''}: {parts}",
              flush=True)
