"""The kernel generator's translation units (scripts/generate_kernels.py, scripts/translation_units.py):
each kernel compiles in exactly one unit, a unit's kernels agree on what their files define before the
first include, and the build gets the units' list it compiles."""

import pathlib
import re
import sys

import pytest

SCRIPTS = pathlib.Path(__file__).resolve().parent.parent / "scripts"
sys.path.insert(0, str(SCRIPTS))
import generate_kernels as gen  # noqa: E402
import translation_units as tu  # noqa: E402


def prelude(kernel):
    """What a kernel's file has before its first #include (a macro the whole unit then sees)."""
    return kernel.source().split("#include")[0]


@pytest.mark.parametrize("tuning", [False, True], ids=["registered", "with tuning candidates"])
def test_every_kernel_in_one_unit_with_kernels_of_its_group(tuning):
    kernels = gen.all_kernels() + (gen.tuning_kernels() if tuning else [])
    units = tu.translation_units(list(kernels))
    placed = [k.name for _, members in units for k in members]
    assert sorted(placed) == sorted(k.name for k in kernels)  # each exactly once
    assert len({name for name, _ in units}) == len(units)
    for name, members in units:
        assert 1 <= len(members) <= tu.UNIT_SIZE, name
        assert len({tu.unit_group(k) for k in members}) == 1, name
        assert len({prelude(k) for k in members}) == 1, f"{name}: its files define different macros"
        assert len({k.family for k in members}) == 1, name


def test_the_build_compiles_the_units_costliest_first(tmp_path):
    assert gen.main(["--out", str(tmp_path)]) == 0
    listed = (tmp_path / "units.txt").read_text().split()
    units = tu.translation_units(gen.all_kernels())
    assert listed == [f"units/{name}.cu" for name, _ in units]
    costs = [sum(map(tu.compile_cost, members)) for _, members in units]
    assert costs == sorted(costs, reverse=True)
    for (name, members), path in zip(units, listed):
        included = re.findall(r'#include "\.\./(.+)"', (tmp_path / path).read_text())
        assert included == [k.filename for k in members]
        assert all((tmp_path / f).exists() for f in included)
    # A narrower filter drops the units and files it no longer selects.
    assert gen.main(["--out", str(tmp_path), "--filter", "^simt_"]) == 0
    assert all(p.name.startswith("simt_") for p in (tmp_path / "units").glob("*.cu"))
    assert all(p.name.startswith("simt_") for p in tmp_path.glob("*.cu"))


def test_tuning_candidates_generate_beside_the_registered_kernels(tmp_path):
    """The candidates build beside the package's own (PYCUTLASS_GEMM_TUNING=ON): none may repeat a
    registered kernel (the generator refuses names twice), e.g. one registered since it was a candidate."""
    registered = {k.name for k in gen.all_kernels()}
    assert not [k.name for k in gen.tuning_kernels() if k.name in registered]
    assert gen.main(["--out", str(tmp_path), "--tuning"]) == 0


def test_tiles_of_extended_wgmma_n_build_with_cutes_extended_shapes():
    """CuTe's atom selector offers wgmma N = 80 or 160 only under CUTE_SM90_EXTENDED_MMA_SHAPES_ENABLED; without it
    a 128x80 tile compiled to five N = 16 wgmmas a k step (session 41). The macro stays out of the other units."""
    macro = "#define CUTE_SM90_EXTENDED_MMA_SHAPES_ENABLED"
    by_name = {k.name: k for k in gen.all_kernels()}
    for name in ("sm90_bf16_rc_128x80x64_c2x1_coop_persistent", "sm90_f16_cr_128x160x64_c2x1_coop_persistent"):
        assert macro in prelude(by_name[name])
    for name in ("sm90_bf16_rc_128x256x64_c2x1_coop_persistent", "sm90_bf16_rr_128x192x64_c2x1_coop_persistent",
                 "sm90_f16_rc_128x128x64_c2x1_coop_persistent", "sm90_bf16_rc_128x32x128_c1x1_coop_streamk_swapab"):
        assert macro not in prelude(by_name[name])
