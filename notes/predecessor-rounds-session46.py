"""Session 46: torch.matmul's and auto's times depend on what ran before them (the session-45/46 artifact). Per problem,
event times (L2 flushed, median of 25 rounds) in four settings:
  pair:      rounds of [torch, auto] (each always after the other)
  crowd:     rounds of [torch, auto, three other kernels of ours by name on the same problem], shuffled
  code:      [torch, auto], each run preceded (after the flush) by three other GEMM kernels of ours on a small
             other problem (their code, not this problem's data)
  data:      [torch, auto], each run preceded (after the flush) by three other kernels of ours on this problem
    python3 notes/predecessor-rounds-session46.py [FLUSH_MIB [pair,crowd,...]]   (default 256 MiB, all four)"""
import random, statistics, sys, torch
import pycutlass_gemm as pg

flush_mib = int(sys.argv[1]) if len(sys.argv) > 1 else 256
settings = sys.argv[2].split(",") if len(sys.argv) > 2 else ["pair", "crowd", "code", "data"]
flush = torch.empty(flush_mib * 2**18, device="cuda", dtype=torch.int32)


def timed(fn, before=None):
    flush.zero_()
    if before:
        before()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record(); fn(); e.record(); e.synchronize()
    return 1e3 * s.elapsed_time(e)


def runs(name, a, b, o, precision):
    try:
        return pg.can_run(name, a, b, out=o, precision=precision) == ""
    except ValueError:  # a kernel of another dtype
        return False


def others_for(a, b, o, precision, exclude, count=3):
    names = [k["name"] for k in pg.kernels() if k["name"] not in exclude and k["family"] not in ("naive", "fallback")
             and runs(k["name"], a, b, o, precision)]
    random.Random(0).shuffle(names)
    return [lambda n=n: pg.gemm(a, b, out=o, precision=precision, variant=n) for n in names[:count]], names[:count]


small = {dt: [torch.randn(256, 256, device="cuda", dtype=dt) for _ in range(3)] for dt in (torch.bfloat16, torch.float16, torch.float32)}
for m, n, k, lay, dtype, precision in ((4, 16, 1024, "rr", torch.bfloat16, None), (64, 256, 256, "rr", torch.bfloat16, None),
                                       (256, 256, 256, "rr", torch.bfloat16, None), (16, 512, 4, "rr", torch.float16, None),
                                       (1024, 16384, 16, "cr", torch.bfloat16, None), (1023, 255, 255, "cc", torch.bfloat16, None),
                                       (2048, 2048, 2048, "rr", torch.bfloat16, None), (96, 50257, 264, "rr", torch.float32, "tf32")):
    a = torch.randn(m, k, device="cuda", dtype=dtype) if lay[0] == "r" else torch.randn(k, m, device="cuda", dtype=dtype).t()
    b = torch.randn(k, n, device="cuda", dtype=dtype) if lay[1] == "r" else torch.randn(n, k, device="cuda", dtype=dtype).t()
    o = torch.empty(m, n, device="cuda", dtype=dtype)
    torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"
    auto_name = pg.plan(a, b, precision=precision)["kernel"]
    tm = lambda: torch.matmul(a, b, out=o)  # noqa: E731
    au = lambda: pg.gemm(a, b, out=o, precision=precision)  # noqa: E731
    same, same_names = others_for(a, b, o, precision, {auto_name})
    s0, s1, s2 = small[dtype]
    so = torch.empty(256, 256, device="cuda", dtype=dtype)
    code, _ = others_for(s0, s1, so, precision, {auto_name})
    for f in [tm, au] + same + code:
        for _ in range(5):
            f()
    torch.cuda.synchronize()
    res = {}
    for label, fns, before in (("pair", [tm, au], None), ("crowd", [tm, au] + same, None),
                               ("code", [tm, au], lambda: [f() for f in code]),
                               ("data", [tm, au], lambda: [f() for f in same])):
        if label not in settings:
            continue
        t = [[] for _ in fns]
        rng, last = random.Random(1), None
        for _ in range(25):
            order = list(range(len(fns)))
            rng.shuffle(order)
            if order[0] == last:
                order.append(order.pop(0))
            for i in order:
                t[i].append(timed(fns[i], before))
            last = order[-1]
        res[label] = (statistics.median(t[0]), statistics.median(t[1]))
    print(f"{m}x{n}x{k} {lay} {str(dtype)[6:]} auto={auto_name}: torch / auto us, x torch: " +
          "; ".join(f"{lbl} {tt:.1f} / {ta:.1f} ({tt / ta:.2f}x)" for lbl, (tt, ta) in res.items()) +
          f"  [others: {', '.join(same_names)}]", flush=True)
