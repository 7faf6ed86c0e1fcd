// CUTLASS's SM90 GEMM pieces the package builds its kernels from, without the other
// architectures' that CUTLASS's aggregate headers bring.
//
// Why: gemm/collective/collective_builder.hpp (and collective_mma.hpp under it) pulls in the
// SM70-SM120 builders and collective mainloops, kernel/gemm_universal.hpp every architecture's
// kernel, device/gemm_universal_adapter.h that and the 2.x device layer; each of the ~130
// translation units parsed them all. A 256x128 bf16 split-K unit on the 2-core CI machine: 44 s
// with them, 36 s with this header (nvcc --time; cudafe++ 8.9 -> 5.2 s, host gcc 7.4 -> 5.7, cicc
// 25.6 -> 23.4), SASS byte-identical. A kernel whose builder picks a collective or kernel not
// included here does not compile ("Could not find a mainloop specialization"): never a silent
// change. The epilogue keeps CUTLASS's aggregate builder header: its primary template lives there.
#pragma once

#include "cute/tensor.hpp"
#include "cutlass/cutlass.h"
#include "cutlass/device_kernel.h"
#include "cutlass/gemm/dispatch_policy.hpp"

// Mainloops: the builder's SM90 choices for 16- and 32-bit operands. TMA with both operands in
// shared memory (SS) or A from registers (RS: tf32 with an MN-major operand); cp.async, which the
// any-alignment mainloops (sm90_ldg_mainloop.cuh, sm90_staged_mainloop.cuh) build on.
#include "cutlass/gemm/collective/collective_mma_decl.hpp"
#include "cutlass/gemm/collective/sm90_mma_multistage_gmma_rs_warpspecialized.hpp"
#include "cutlass/gemm/collective/sm90_mma_multistage_gmma_ss_warpspecialized.hpp"
#include "cutlass/gemm/collective/sm90_mma_tma_gmma_rs_warpspecialized.hpp"
#include "cutlass/gemm/collective/sm90_mma_tma_gmma_ss_warpspecialized.hpp"
#include "cutlass/gemm/collective/collective_builder_decl.hpp"
#include "cutlass/gemm/collective/builders/sm90_gmma_builder.inl"

#include "cutlass/epilogue/collective/collective_builder.hpp"
#include "cutlass/epilogue/fusion/operations.hpp"

// Kernels: TMA warp-specialized cooperative and ping-pong; cp.async cooperative.
#include "cutlass/gemm/kernel/gemm_universal_decl.h"
#include "cutlass/gemm/kernel/sm90_gemm_tma_warpspecialized_cooperative.hpp"
#include "cutlass/gemm/kernel/sm90_gemm_tma_warpspecialized_pingpong.hpp"
#include "cutlass/gemm/kernel/sm90_gemm_warpspecialized_cooperative.hpp"
#include "cutlass/gemm/kernel/tile_scheduler.hpp"
