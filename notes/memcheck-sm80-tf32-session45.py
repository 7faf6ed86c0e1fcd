"""Session 45: the tf32 SM80 kernels under compute-sanitizer memcheck, each on ragged, unaligned and split problems
(every layout; a 1-element offset makes the operands unaligned for the alignment-1 kernels).
    compute-sanitizer --tool memcheck python3 notes/memcheck-sm80-tf32-session45.py"""
import torch
import pycutlass_gemm as pg

names = [k["name"] for k in pg.kernels() if k["name"].startswith("sm80_tf32")]
ran = 0
for name in names:
    la, lb = name.split("_")[2]
    for m, n, k in ((4, 16, 1024), (130, 67, 777), (15, 255, 4095), (1000, 300, 77)):
        a = torch.randn(m * k + 1, device="cuda")[1:].view(m, k) if la == "r" else torch.randn(m * k + 1, device="cuda")[1:].view(k, m).T
        b = torch.randn(k * n + 1, device="cuda")[1:].view(k, n) if lb == "r" else torch.randn(k * n + 1, device="cuda")[1:].view(n, k).T
        if "_a4_" in name:
            a, b = a.contiguous() if la == "r" else a.T.contiguous().T, b.contiguous() if lb == "r" else b.T.contiguous().T
        out = torch.full((m, n), float("nan"), device="cuda")
        if pg.can_run(name, a, b, out=out, precision="tf32"):
            continue
        pg.gemm(a, b, out=out, precision="tf32", variant=name)
        ref = a.double() @ b.double()
        err = ((out.double() - ref).norm() / ref.norm()).item()
        assert err < 2e-3, (name, m, n, k, err)
        ran += 1
torch.cuda.synchronize()
print(f"memcheck: {ran} runs of {len(names)} tf32 SM80 kernels")
