// The second half of parallel split-K: the slices of K ran as separate thread blocks, each
// writing its partial product (fp32, fp64 for fp64 inputs; or rounded to D's type, the SM80
// kernels) into a workspace, and one pass adds them in the accumulator's type and applies the
// epilogue, D = alpha * sum + beta * C. Deterministic (a fixed order:
// split_k_reduce.cu), and no slice waits for another, where serial split-K (each slice adding into D
// after the previous one, a semaphore per tile) chains as many fix-ups as there are slices.
// Used by the fallback (fallback_gemm.cu), small_mn, the SM90 split-K kernels and the CUTLASS 2.x
// kernels (cutlass_2x_gemm.cuh).
#pragma once

#include "gemm_problem.h"

namespace pycutlass_gemm {

// What a partial sum is stored as: the accumulator (fp32; fp64 for fp64 inputs), or D's element
// type (a kernel whose only epilogue writes D's type: CUTLASS 2.x's 16-bit tensor-op kernels).
enum class PartialType { kAccumulator, kOutput };

// `partials`: `slices` x p.batch row-major p.m x p.n matrices of `type`, one after the other
// (slice s, batch b at partials + (s * p.batch + b) * p.m * p.n). Writes p.d, reading p.c only
// when p.beta != 0 (p.c may be p.d), on p.stream; throws naming a failed launch.
void sum_split_k_partials(const GemmProblem& p, int slices, const void* partials,
                          PartialType type = PartialType::kAccumulator);

}  // namespace pycutlass_gemm
