"""Session 53: the kernels cuBLAS (torch.matmul) runs over 129-256 rows, by torch.profiler (one call after a flush).
    python3 notes/cublas-kernels-session53.py"""
import torch
from torch.profiler import profile, ProfilerActivity

SHAPES = [(m, n, k, lay) for m in (136, 176, 208, 240) for n, k, lay in
          ((4096, 4096, "rc"), (4096, 4096, "rr"), (4096, 14336, "rc"), (14336, 4096, "rr"), (8192, 8192, "rc"),
           (8192, 8192, "rr"), (8192, 2048, "rr"), (4096, 1024, "rr"))] + [(128, 4096, 4096, "rc"), (256, 4096, 4096, "rr")]
flush = torch.empty(1 << 28, device="cuda")
for m, n, k, lay in SHAPES:
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(k, n, device="cuda", dtype=torch.bfloat16) if lay[1] == "r" else \
        torch.randn(n, k, device="cuda", dtype=torch.bfloat16).t()
    for _ in range(3):
        torch.matmul(a, b)
    flush.zero_()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(5):
            flush.zero_()
            torch.matmul(a, b)
        torch.cuda.synchronize()
    kernels = {}
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA and "fill" not in e.name.lower() and "elementwise" not in e.name:
            kernels.setdefault(e.name, []).append(getattr(e, "device_time_total", 0) or e.cuda_time_total)
    print(f"{m}x{n}x{k}:{lay} " + " | ".join(f"{name[:60]} {sorted(t)[len(t)//2]:.1f} us x{len(t)}" for name, t in kernels.items()), flush=True)
