// The L2 promotion of the SM90 kernels' TMA descriptors, chosen per launch.
//
// A TMA descriptor's L2 promotion is the granularity at which L2 fills a miss from HBM: 128 bytes
// bring the line a box row asked for, 256 also the line beside it -- for an operand streamed along
// K, the same row's piece of the next k tile. CUTLASS 4.2 encodes every tiled descriptor with 128
// (cute/atom/copy_traits_sm90_tma.hpp, make_tma_copy_desc: a constant, no parameter); DeepGEMM
// encodes its with 256. Why it may matter: at 256 x 256 x 131072 bf16 our split-K kernel streams
// HBM at 62% of peak where cuBLAS's kernel of the same tiles, cluster and stages streams at 78%
// (ncu, H200, session 55), and decode-sized products are memory-bound too. Session 31 (H100, a patch
// of CuTe's encode, alternating processes) had 256 bytes 4-9% slower for most long-K split-K tiles
// and 3% faster for 256x128 c1x2's; here old and new run in the same shuffled rounds.
//
// How: included before any CuTe header (it refuses otherwise), this header turns CUTLASS's constant
// into a thread-local value that CutlassSm90Gemm::run sets around the encoding of one launch's
// descriptors (TmaL2PromotionScope). No copy of CUTLASS's code; the constant appears in host code
// only: make_tma_copy_desc and to_CUtensorMapL2promotion (the im2col descriptors', which no kernel
// here makes, so there too "128" now reads as the launch's choice).
#pragma once

#ifdef CUTE_HOST_DEVICE
#error "tma_l2_promotion.h must be included before any CuTe header (cute/config.hpp already was)"
#endif

#include <cuda.h>

namespace pycutlass_gemm {
namespace tma_l2 {
inline thread_local CUtensorMapL2promotion promotion = CU_TENSOR_MAP_L2_PROMOTION_L2_128B;  // CUTLASS's
}  // namespace tma_l2

// The promotion of the descriptors encoded while it lives (on this thread).
class TmaL2PromotionScope {
 public:
  explicit TmaL2PromotionScope(CUtensorMapL2promotion promotion) : saved_(tma_l2::promotion) {
    tma_l2::promotion = promotion;
  }
  ~TmaL2PromotionScope() { tma_l2::promotion = saved_; }
  TmaL2PromotionScope(const TmaL2PromotionScope&) = delete;
  TmaL2PromotionScope& operator=(const TmaL2PromotionScope&) = delete;

 private:
  CUtensorMapL2promotion saved_;
};

// Bytes to the driver's enum: 0 (none), 64, 128 or 256; anything else is CUTLASS's 128.
inline CUtensorMapL2promotion tma_l2_promotion_of(int bytes) {
  switch (bytes) {
    case 0: return CU_TENSOR_MAP_L2_PROMOTION_NONE;
    case 64: return CU_TENSOR_MAP_L2_PROMOTION_L2_64B;
    case 256: return CU_TENSOR_MAP_L2_PROMOTION_L2_256B;
    default: return CU_TENSOR_MAP_L2_PROMOTION_L2_128B;
  }
}

}  // namespace pycutlass_gemm

#define CU_TENSOR_MAP_L2_PROMOTION_L2_128B (::pycutlass_gemm::tma_l2::promotion)
