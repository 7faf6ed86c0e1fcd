"""Session 46: torch.matmul runs slower after some kernels of ours than after others (notes/predecessor-rounds-
session46.py: 'crowd' against 'pair'). Per problem and predecessor P: [flush, P, flush, sync, target] 25 times;
the target's event time (us, median) and its GPU kernel time (torch.profiler, median of the per-run sums), for
target = torch.matmul and target = auto. A gap between the two is time before the kernel starts (e.g. an SM
reconfiguring its shared memory / L1 split), a longer kernel time is time inside it. Each predecessor's shared
memory from cuobjdump is not needed: the names say the tile.
    python3 notes/predecessor-kernels-session46.py"""
import random, statistics, torch
import pycutlass_gemm as pg
from torch.profiler import profile, ProfilerActivity
from kernel_times import kernel_us_after_last_fill  # notes/ (the script's directory)

flush = torch.empty(256 * 2**18, device="cuda", dtype=torch.int32)


def runs(name, a, b, o):
    try:
        return pg.can_run(name, a, b, out=o) == ""
    except ValueError:
        return False


for m, n, k, dtype in ((64, 256, 256, torch.bfloat16), (16, 512, 4, torch.float16), (1024, 16384, 16, torch.bfloat16)):
    a = torch.randn(m, k, device="cuda", dtype=dtype)
    b = torch.randn(k, n, device="cuda", dtype=dtype)
    o = torch.empty(m, n, device="cuda", dtype=dtype)
    auto_name = pg.plan(a, b)["kernel"]
    names = [x["name"] for x in pg.kernels() if x["family"] not in ("naive", "fallback") and x["name"] != auto_name
             and runs(x["name"], a, b, o)]
    random.Random(0).shuffle(names)
    preds = {"torch": lambda: torch.matmul(a, b, out=o), "auto " + auto_name: lambda: pg.gemm(a, b, out=o),
             "nothing": lambda: None}
    for nm in names[:6]:
        preds[nm] = lambda nm=nm: pg.gemm(a, b, out=o, variant=nm)
    targets = {"torch": lambda: torch.matmul(a, b, out=o), "auto": lambda: pg.gemm(a, b, out=o)}
    for f in list(preds.values()) + list(targets.values()):
        for _ in range(3):
            f()
    torch.cuda.synchronize()
    print(f"{m}x{n}x{k} {str(dtype)[6:]} rr", flush=True)
    for tname, target in targets.items():
        for pname, pred in preds.items():
            ev = []
            for _ in range(25):
                flush.zero_(); pred(); flush.zero_(); torch.cuda.synchronize()
                s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                s.record(); target(); e.record(); e.synchronize()
                ev.append(1e3 * s.elapsed_time(e))
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                for _ in range(15):
                    flush.zero_(); pred(); flush.zero_(); torch.cuda.synchronize()
                    torch.cuda.nvtx.range_push("t"); target(); torch.cuda.synchronize(); torch.cuda.nvtx.range_pop()
            per = kernel_us_after_last_fill(prof, 2)
            print(f"  {tname:5s} after {pname[:60]:60s} event {statistics.median(ev):6.1f} us, kernel {statistics.median(per):6.1f} us",
                  flush=True)
