"""Session 46: does the small 16-bit tile (sm80 64x64x32 a8) gain from splitting K at all on few tiles? Split-K adds a
second kernel (the slices' sum, ~1.4 us, notes/profile-small-16bit-session46.py). A batch of 2 is never split: so
2 x (M x N x K) runs unsplit, its GPU time (torch.profiler, sum of the call's kernels, median of 15; L2 flushed)
against 1 x (M x N x K) split by the rule, and torch.matmul on each.
    python3 notes/split-small-16bit-session46.py [KERNEL]
Session 47 ran it for the small tf32 tile too (KERNEL sm80_tf32_rr_64x64x16_w32x32_a4_s6: fp32 operands, tf32 on both
sides), which then split only from K = 256."""
import statistics, sys, torch
import pycutlass_gemm as pg
from torch.profiler import profile, ProfilerActivity
from kernel_times import kernel_us_after_last_fill  # notes/ (the script's directory)

name = sys.argv[1] if len(sys.argv) > 1 else "sm80_bf16_rr_64x64x32_w32x32_a8_s6"
tf32 = "_tf32_" in name
dtype, precision = (torch.float32, "tf32") if tf32 else (torch.bfloat16, None)
torch.backends.cuda.matmul.allow_tf32 = tf32  # torch.matmul in the package's precision
flush = torch.empty(256 * 2**18, device="cuda", dtype=torch.int32)


def gpu_us(fn):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(15):
            flush.zero_(); torch.cuda.synchronize(); fn(); torch.cuda.synchronize()
    return statistics.median(kernel_us_after_last_fill(prof, 1))


for m, n in ((64, 64), (64, 256), (16, 512)):
    for k in (64, 128, 256, 512, 1024, 2048, 4096):
        row = []
        for batch in (1, 2):
            a = torch.randn(batch, m, k, device="cuda", dtype=dtype)
            b = torch.randn(batch, k, n, device="cuda", dtype=dtype)
            o = torch.empty(batch, m, n, device="cuda", dtype=dtype)
            if batch == 1:
                a, b, o = a[0], b[0], o[0]
            ours = gpu_us(lambda: pg.gemm(a, b, out=o, variant=name, precision=precision))
            theirs = gpu_us(lambda: torch.matmul(a, b, out=o))
            row.append(f"batch {batch}: ours {ours:5.2f} torch {theirs:5.2f}")
        print(f"{m}x{n}x{k}: " + "; ".join(row), flush=True)
