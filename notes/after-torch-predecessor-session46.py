"""Session 46: what makes a kernel of ours run longer right after torch.matmul (session 45's artifact)? For each
problem, X's GPU kernel time (torch.profiler) when the kernel before it (after the L2 flush, which runs before every
X) is X itself, another CUTLASS kernel of ours (Y), torch.matmul of the same problem, or torch.matmul of another
problem; and the code size (bytes of SASS) of the kernels, from cuobjdump of the installed extension.
    python3 notes/after-torch-predecessor-session46.py"""
import glob, os, statistics, subprocess, torch
import pycutlass_gemm as pg
from torch.profiler import profile, ProfilerActivity
from kernel_times import kernel_us_after_last_fill  # notes/ (the script's directory)

flush = torch.empty(256 * 2**18, device="cuda", dtype=torch.int32)
for m, n, k, dtype, precision, x_name, y_name in (
        (96, 50257, 264, torch.float32, "tf32", "sm80_tf32_rr_128x128x32_a1_s3", "sm80_tf32_rr_128x256x32_a1_s3"),
        (16, 16, 512, torch.float32, "tf32", "sm80_tf32_rr_64x64x16_w32x32_a4_s6", "sm80_tf32_rr_128x128x32_a1_s3"),
        (256, 256, 256, torch.bfloat16, None, "auto", "sm80_bf16_rr_128x128x32_a1_s2"),
        (64, 256, 1024, torch.bfloat16, None, "auto", "sm80_bf16_rr_64x64x32_w32x32_a8_s6")):
    a = torch.randn(m, k, device="cuda", dtype=dtype)
    b = torch.randn(k, n, device="cuda", dtype=dtype)
    o = torch.empty(m, n, device="cuda", dtype=dtype)
    a2, b2 = torch.randn(512, 512, device="cuda", dtype=dtype), torch.randn(512, 512, device="cuda", dtype=dtype)
    torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"
    x_name = pg.plan(a, b, precision=precision)["kernel"] if x_name == "auto" else x_name
    if pg.can_run(y_name, a, b, out=o, precision=precision) != "":
        y_name = None
    x = lambda: pg.gemm(a, b, out=o, precision=precision, variant=x_name)  # noqa: E731
    befores = {"X": x, "torch same problem": lambda: torch.matmul(a, b, out=o),
               "torch 512^3": lambda: torch.matmul(a2, b2), "nothing": lambda: None}
    if y_name:
        befores[f"Y={y_name}"] = lambda: pg.gemm(a, b, out=o, precision=precision, variant=y_name)
    for f in befores.values():
        for _ in range(3):
            f(); x()
    torch.cuda.synchronize()
    times = {}
    for label, before in befores.items():
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(20):
                flush.zero_(); before(); flush.zero_(); torch.cuda.synchronize()
                x(); torch.cuda.synchronize()
        times[label] = statistics.median(kernel_us_after_last_fill(prof, 2))
    print(f"{m}x{n}x{k} {str(dtype)[6:]} X={x_name}: X's kernel time (us) after " +
          ", ".join(f"{lbl} {t:.1f}" for lbl, t in times.items()), flush=True)
so = glob.glob(os.path.join(os.path.dirname(pg.__file__), "*.so"))
for path in so:
    try:
        out = subprocess.run(["cuobjdump", "-res-usage", path], capture_output=True, text=True, timeout=60).stdout
        print(path, "functions:", out.count("Function "))
        sass = subprocess.run(["cuobjdump", "-sass", path], capture_output=True, text=True, timeout=120).stdout
        sizes, cur, count = {}, None, 0
        for line in sass.splitlines():
            if line.strip().startswith("Function :"):
                if cur:
                    sizes[cur] = count
                cur, count = line.split(":", 1)[1].strip(), 0
            elif line.strip().startswith("/*") and "*/" in line:
                count += 1
        if cur:
            sizes[cur] = count
        big = sorted(sizes.items(), key=lambda kv: -kv[1])
        print("SASS instructions (16 B each): largest", [(n[:90], c) for n, c in big[:6]])
        for pat in ("64x64", "GemmUniversal", "KernelTmaWarpSpecialized"):
            sel = [c for n, c in sizes.items() if pat in n]
            if sel:
                print(f"  kernels matching {pat}: {len(sel)}, median {statistics.median(sel)} instructions, max {max(sel)}")
    except Exception as e:  # noqa: BLE001
        print("cuobjdump failed:", e)
