"""Session 47: does the small tf32 tile (sm80 64x64x16 a4, still split by the old rule) gain from splitting K on few
tiles? Split-K adds a second kernel (the slices' sum, ~1.4 us, notes/profile-small-16bit-session46.py). A batch of 2 is never split: so
2 x (M x N x K) runs unsplit, its GPU time (torch.profiler, sum of the call's kernels, median of 15; L2 flushed)
against 1 x (M x N x K) split by the rule, and torch.matmul on each.
    python3 notes/split-small-tf32-session47.py"""
import statistics, torch
import pycutlass_gemm as pg
from torch.profiler import profile, ProfilerActivity
from kernel_times import kernel_us_after_last_fill  # notes/ (the script's directory)

torch.backends.cuda.matmul.allow_tf32 = True  # torch.matmul in tf32, as the package
flush = torch.empty(256 * 2**18, device="cuda", dtype=torch.int32)


def gpu_us(fn):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(15):
            flush.zero_(); torch.cuda.synchronize(); fn(); torch.cuda.synchronize()
    return statistics.median(kernel_us_after_last_fill(prof, 1))


name = "sm80_tf32_rr_64x64x16_w32x32_a4_s6"
for m, n in ((64, 64), (64, 256), (16, 512)):
    for k in (64, 128, 256, 512, 1024, 2048, 4096):
        row = []
        for batch in (1, 2):
            a = torch.randn(batch, m, k, device="cuda", dtype=torch.float32)
            b = torch.randn(batch, k, n, device="cuda", dtype=torch.float32)
            o = torch.empty(batch, m, n, device="cuda", dtype=torch.float32)
            if batch == 1:
                a, b, o = a[0], b[0], o[0]
            ours = gpu_us(lambda: pg.gemm(a, b, out=o, variant=name, precision="tf32"))
            theirs = gpu_us(lambda: torch.matmul(a, b, out=o))
            row.append(f"batch {batch}: ours {ours:5.2f} torch {theirs:5.2f}")
        print(f"{m}x{n}x{k}: " + "; ".join(row), flush=True)
