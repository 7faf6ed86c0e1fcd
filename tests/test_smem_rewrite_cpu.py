"""The shared-memory rewrite of the tf32 mainloops (cpp/sm90_tf32_smem_rewrite_mainloop.cuh: MN-major
tiles transposed, tf32x3's split), checked on the host against CuTe's own layouts: addresses (and
each stage's as an offset from stage 0's), 16-byte vectors, coverage of the stage, no bank
conflicts, the split's rounding to tf32, and the registers-A tf32x3 mainloop's conflict-free loads
of A (tests/smem_rewrite_check.cu says what exactly). Needs nvcc and the CUTLASS headers (the
nvidia-cutlass wheel of the test extra); the GPU suite runs the kernels themselves."""

import importlib.util
import os
import pathlib
import shutil
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent


def _nvcc():
    return shutil.which("nvcc") or next((p for p in ["/usr/local/cuda/bin/nvcc"] if os.path.exists(p)), None)


def _cutlass_include():
    spec = importlib.util.find_spec("cutlass_library")
    if spec is None:
        return None
    include = pathlib.Path(list(spec.submodule_search_locations)[0]) / "source" / "include"
    return include if (include / "cute" / "tensor.hpp").exists() else None


def test_transpose_addresses_vectors_coverage_and_banks(tmp_path):
    nvcc, include = _nvcc(), _cutlass_include()
    if nvcc is None or include is None:
        pytest.skip("needs nvcc and the nvidia-cutlass headers (pip install '.[test]')")
    exe = tmp_path / "smem_rewrite_check"
    subprocess.run([nvcc, "-std=c++17", "--expt-relaxed-constexpr", f"-I{include}", f"-I{ROOT / 'cpp'}",
                    "-o", str(exe), str(ROOT / "tests" / "smem_rewrite_check.cu")], check=True)
    result = subprocess.run([str(exe)], capture_output=True, text=True)
    print(result.stdout)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count(": ok") == 7
