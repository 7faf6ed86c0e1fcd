"""tf32x3's arithmetic, emulated on the CPU: each fp32 input x split into big = tf32(x) (rounded to
nearest, ties away, as cvt.rna.tf32.f32 does) and small = tf32(x - big), and the three products
small(A) big(B) + big(A) small(B) + big(A) big(B) accumulated in fp32 k tile by k tile, as the kernels
promote their sums (each product of two tf32 values is exact in fp32, as on the tensor cores). Held,
like the kernels on the GPU, to 1.5x the error of a plain fp32 product on the same inputs (an FMA
chain along K, as an SGEMM thread sums), for the input kinds of tracker issue 9: what the split keeps
and what it drops (small(A) small(B)) must not cost accuracy."""

import pytest
import torch

from pycutlass_gemm.bench_accuracy import make_operands


def round_tf32(x: torch.Tensor) -> torch.Tensor:
    """fp32 -> tf32 (10 mantissa bits), to nearest, ties away from zero; still stored as fp32."""
    bits = x.contiguous().view(torch.int32)
    return ((bits + 0x1000) & ~0x1FFF).view(torch.float32).reshape(x.shape)


def split(x: torch.Tensor):
    big = round_tf32(x)
    return big, round_tf32(x - big)


def rel(out, ref):
    return float(torch.linalg.vector_norm(out.double() - ref) / torch.linalg.vector_norm(ref))


def test_round_tf32_keeps_ten_mantissa_bits_to_nearest():
    one_ulp = 2.0 ** -10  # tf32's unit in the last place at 1.0
    x = torch.tensor([1.0, 1.0 + one_ulp * 0.49, 1.0 + one_ulp * 0.5, 1.0 + one_ulp * 0.51, -(1.0 + one_ulp * 0.5)])
    assert round_tf32(x).tolist() == [1.0, 1.0, 1.0 + one_ulp, 1.0 + one_ulp, -(1.0 + one_ulp)]
    y = torch.randn(1000)
    big, small = split(y)
    assert torch.equal(round_tf32(big), big) and torch.equal(round_tf32(small), small)
    assert ((y - big).abs() <= big.abs() * 2.0 ** -11).all()        # big within half a tf32 ulp
    assert ((y - big - small).abs() <= y.abs() * 2.0 ** -21).all()  # big + small within ~2^-21


def fp32_sum_of_k_tiles(*products: tuple[torch.Tensor, torch.Tensor], k_tile: int = 32) -> torch.Tensor:
    """The sum of the products a @ b as the kernels sum it: per k tile, every product's terms summed
    (here exactly, in float64, then rounded to fp32), added to an fp32 running sum. Not torch's CPU
    matmul: its order of summation is the BLAS's own (a sequential sum over K = 131072 measured
    5e-6, burying what the split does)."""
    a0, b0 = products[0]
    out = torch.zeros(a0.shape[0], b0.shape[1])
    for k0 in range(0, a0.shape[1], k_tile):
        tile = sum(a[:, k0:k0 + k_tile].double() @ b[k0:k0 + k_tile].double() for a, b in products)
        out += tile.float()
    return out


def fp32_fma_chain(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """a @ b as an SGEMM thread sums it: one fused multiply-add (one rounding) per k, in order."""
    out = torch.zeros(a.shape[0], b.shape[1], dtype=torch.float64)
    for k in range(a.shape[1]):
        out = (out + a[:, k:k + 1].double() * b[k:k + 1].double()).float().double()
    return out.float()


@pytest.mark.parametrize("inputs, m, n, k", [("rand", 64, 64, 4096), ("randn", 64, 64, 4096),
                                             ("binades", 64, 64, 4096), ("rand", 8, 8, 131072),
                                             ("randn", 64, 64, 256)])
def test_three_tf32_products_are_as_accurate_as_fp32(inputs, m, n, k):
    a, b = make_operands(inputs, m, n, k, "cr", device="cpu", seed=1)
    ref = a.double() @ b.double()
    a_big, a_small = split(a)
    b_big, b_small = split(b)
    tf32x3 = fp32_sum_of_k_tiles((a_small, b_big), (a_big, b_small), (a_big, b_big))
    tf32, fp32 = fp32_sum_of_k_tiles((a_big, b_big)), fp32_fma_chain(a, b)
    err, err_fp32, err_tf32 = rel(tf32x3, ref), rel(fp32, ref), rel(tf32, ref)
    print(f"{inputs} {m}x{n}x{k}: tf32x3 {err:.2e}, fp32 {err_fp32:.2e}, tf32 {err_tf32:.2e}")
    assert err <= 1.5 * err_fp32
    if k <= 4096:  # the split is what buys the accuracy: one tf32 product is far off (at long K the
        assert err_tf32 > 4 * err  # fp32 running sum's own rounding dominates every precision)


def truncate_tf32(x: torch.Tensor) -> torch.Tensor:
    """fp32 -> tf32 by dropping the 13 low mantissa bits: what tf32 wgmma reads of an fp32 word."""
    return (x.contiguous().view(torch.int32) & ~0x1FFF).view(torch.float32).reshape(x.shape)


@pytest.mark.parametrize("inputs, m, n, k", [("rand", 64, 64, 4096), ("randn", 64, 64, 4096),
                                             ("binades", 64, 64, 4096), ("rand", 64, 64, 16384)])
def test_one_truncated_operand_is_as_accurate_as_rounding_both(inputs, m, n, k):
    """The kernels with a K-major operand read its big part truncated where TMA left it (no write
    back), and those that split A in registers truncate A's where B's is rounded; the other operand
    is split rounded: its small parts have zero mean, so the small(A) small(B) term
    left out stays unbiased (emulated here: 1.5-3.0e-7 against 1.5-3.0e-7 rounding both, 1.6-3.2e-7
    truncating both)."""
    a, b = make_operands(inputs, m, n, k, "cr", device="cpu", seed=1)
    ref = a.double() @ b.double()
    a_big, a_small = split(a)
    b_big, b_small = split(b)
    b_truncated = truncate_tf32(b)
    b_rest = round_tf32(b - b_truncated)  # exact difference, then rounded as the kernel stores it
    assert (b_truncated.abs() <= b.abs()).all() and ((b - b_truncated).abs() <= b.abs() * 2.0 ** -10).all()
    rounded = fp32_sum_of_k_tiles((a_small, b_big), (a_big, b_small), (a_big, b_big))
    one_truncated = fp32_sum_of_k_tiles((a_small, b_truncated), (a_big, b_rest), (a_big, b_truncated))
    err, err_rounded, err_fp32 = rel(one_truncated, ref), rel(rounded, ref), rel(fp32_fma_chain(a, b), ref)
    print(f"{inputs} {m}x{n}x{k}: one truncated {err:.2e}, both rounded {err_rounded:.2e}, fp32 {err_fp32:.2e}")
    assert err <= 1.5 * err_fp32
    assert err <= 1.15 * err_rounded
