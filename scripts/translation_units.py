"""How the build compiles the generated kernels (scripts/generate_kernels.py): in translation units of
a few kernel files each, each file still one instantiation.

A unit compiles the kernels of a few files, so the CuTe and CUTLASS types those kernels share are
instantiated once and the headers parsed once. On the 2-core development machine bf16 and f16
128x256 persistent in all four layouts (8 kernels) compiled in 80 s as one unit (4.1 GB) against 44 s
for each alone (3.3 GB); four bf16 rr tiles (128x256, 128x192, 128x128, 128x64) in 76 s (5.2 GB). The
full build on the H100 machine's 16 cores: 181 s and 2053 unit-s in 27 units, against 345-401 s and
6600-7000 unit-s one kernel a unit (session 37). A unit holds at most UNIT_SIZE kernels of one group
(unit_group()), sorted so that the same tile and cluster sit together: more would leave a 16-core
build waiting on its last units, and a unit's memory grows with its kernels.
"""

UNIT_SIZE = 6


def unit_group(kernel):
    """Kernels compile together only within one group: one family, one operand width, one mainloop and
    the same griddepcontrol and extended-wgmma macros (Kernel.source() defines them before the first include,
    so a unit's first file would define them for all: stream-K kernels, built without the first, and tiles of
    80, 160 or 176 columns, built with the second, have units of their own)."""
    width = "16bit" if kernel.dtype in ("bf16", "f16") else kernel.dtype
    if kernel.family != "sm90":
        return f"{kernel.family}_{width}"
    mainloop = "coop" if kernel.dtype == "tf32x3" else kernel.schedule  # tf32x3: one mainloop, three forms
    return (f"sm90_{width}_{mainloop}" + ("_streamk" if kernel.scheduler == "streamk" else "") +
            ("_extmma" if kernel.extended_wgmma_n else ""))


def compile_cost(kernel):
    """What a kernel adds to its unit's compile time, relative to a 16-bit SM90 one (H100 machine, 16 jobs:
    units of 5-6 16-bit SM90 kernels took 67-107 s, of tf32 ones 98-119 s, of SM80 or SIMT ones 24-33 s).
    The build starts the costliest units first, so that none is left running alone at the end."""
    return 0.4 if kernel.family != "sm90" else 1.4 if kernel.dtype == "tf32" else 1.0


def translation_units(kernels):
    """[(unit name, kernels)], the costliest first (the build starts them first)."""
    groups = {}
    for k in kernels:
        groups.setdefault(unit_group(k), []).append(k)
    units = []
    for group, members in groups.items():
        members.sort(key=lambda k: (k.tile, k.cluster, k.scheduler, k.name))
        n = -(-len(members) // UNIT_SIZE)  # near-equal units, not UNIT_SIZE and a remainder
        units += [(f"{group}_{i}", members[i * len(members) // n:(i + 1) * len(members) // n]) for i in range(n)]
    return sorted(units, key=lambda u: (-sum(map(compile_cost, u[1])), u[0]))
