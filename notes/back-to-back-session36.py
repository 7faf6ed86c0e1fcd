"""Back-to-back products on one stream (no flush, no events between), us a call: python3 back-to-back-session36.py torch|ours MxNxK:ab ... (PYCUTLASS_GEMM_PDL=0 for plain launches; session 36)."""
import os, sys, torch, pycutlass_gemm as pg
mode = sys.argv[1]  # torch / ours
shapes = sys.argv[2:]
def op(r, c, l, dt): return torch.randn(r, c, device="cuda", dtype=dt) if l == "r" else torch.randn(c, r, device="cuda", dtype=dt).T
for spec in shapes:
    dims, lay = spec.split(":")
    m, n, k = map(int, dims.split("x"))
    sets = max(2, int(160e6 // ((m * k + k * n) * 2)) + 1)
    sets = min(sets, 16)
    ins = [(op(m, k, lay[0], torch.bfloat16), op(k, n, lay[1], torch.bfloat16)) for _ in range(sets)]
    outs = [torch.empty(m, n, device="cuda", dtype=torch.bfloat16) for _ in range(sets)]
    if mode == "torch":
        f = lambda i: torch.matmul(*ins[i], out=outs[i])
    else:
        f = lambda i: pg.gemm(*ins[i], out=outs[i])
    ref = [ (ins[i][0].double() @ ins[i][1].double()) for i in range(2)]
    for i in range(3 * sets): f(i % sets)
    torch.cuda.synchronize()
    errs = [float((outs[i].double() - ref[i]).norm() / ref[i].norm()) for i in range(2)]
    reps = 400
    best = []
    for rnd in range(5):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        for i in range(reps): f(i % sets)
        e.record(); torch.cuda.synchronize()
        best.append(s.elapsed_time(e) * 1e3 / reps)
    print(f"{mode:5s} pdl={os.environ.get('PYCUTLASS_GEMM_PDL','0')} {spec:22s} sets={sets:2d} us/call min {min(best):7.2f} med {sorted(best)[2]:7.2f} err {max(errs):.1e} kernel {pg.plan(*ins[0])['kernel'] if mode!='torch' else 'cuBLAS'}", flush=True)
