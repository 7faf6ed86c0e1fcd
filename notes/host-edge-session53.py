"""Session 53: host time per call (us) of pg.gemm on small ragged problems (the read past the edge queries the driver) against
torch.matmul: many calls back to back on a tiny problem, so the host is the bound."""
import os, sys, time, torch
import pycutlass_gemm as pg
res = []
for m, n, k, lay in ((200, 256, 256, "rr"), (200, 4096, 4096, "rc"), (40, 4096, 1024, "rr"), (256, 256, 256, "rr")):
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(k, n, device="cuda", dtype=torch.bfloat16) if lay[1] == "r" else torch.randn(n, k, device="cuda", dtype=torch.bfloat16).t()
    out = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
    for name, fn in (("torch", lambda: torch.matmul(a, b, out=out)), ("gemm", lambda: pg.gemm(a, b, out=out))):
        for _ in range(200): fn()
        torch.cuda.synchronize()
        best = 1e9
        for _ in range(5):
            t = time.perf_counter()
            for _ in range(1000): fn()
            torch.cuda.synchronize()
            best = min(best, (time.perf_counter() - t) * 1e3)
        res.append(f"{m}x{n}x{k} {lay} {name} {best:.2f} us/call")
print(os.environ.get("PYCUTLASS_GEMM_READ_PAST_EDGE", "1"), "; ".join(res), flush=True)
