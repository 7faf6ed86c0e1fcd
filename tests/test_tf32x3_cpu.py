"""tf32x3's arithmetic, emulated on the CPU: each fp32 input x split into big = tf32(x) (rounded to
nearest, ties away, as cvt.rna.tf32.f32 does) and small = tf32(x - big), and the three products
small(A) big(B) + big(A) small(B) + big(A) big(B) accumulated in fp32 (each product of two tf32
values is exact in fp32, as on the tensor cores). Held, like the kernels on the GPU, to 1.5x the
error of a plain fp32 product on the same inputs, for the input kinds of tracker issue 9: what the
split keeps and what it drops (small(A) small(B)) must not cost accuracy."""

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


@pytest.mark.parametrize("inputs, m, n, k", [("rand", 64, 64, 4096), ("randn", 64, 64, 4096),
                                             ("binades", 64, 64, 4096), ("rand", 8, 8, 131072),
                                             ("randn", 64, 64, 256)])
def test_three_tf32_products_are_as_accurate_as_fp32(inputs, m, n, k):
    a, b = make_operands(inputs, m, n, k, "cr", device="cpu", seed=1)
    ref = a.double() @ b.double()
    a_big, a_small = split(a)
    b_big, b_small = split(b)
    tf32x3 = a_small @ b_big + a_big @ b_small + a_big @ b_big
    tf32 = a_big @ b_big
    fp32 = a @ b
    err, err_fp32, err_tf32 = rel(tf32x3, ref), rel(fp32, ref), rel(tf32, ref)
    print(f"{inputs} {m}x{n}x{k}: tf32x3 {err:.2e}, fp32 {err_fp32:.2e}, tf32 {err_tf32:.2e}")
    assert err <= 1.5 * err_fp32
    assert err_tf32 > 4 * err  # the split is what buys the accuracy: one tf32 product is far off
