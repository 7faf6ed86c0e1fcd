// Session 48: does a TMA box that straddles a tensor's edge cost more than one wholly inside it? (128x64 c1x2 ran
// 192 x 4096 x 14336 rc bf16 in 87.6 us and 256 rows in 60.2 on the same 2 x 64 tiles: measurements.md, session 48.)
// Each of `ctas` CTAs streams the same column of boxes (64 K-columns x box_m rows of bf16, 128-byte swizzle, as the
// SM90 mainloops load A) at rows [row0, row0 + box_m) of a rows x 14336 tensor through a 6-stage ring of TMA loads,
// no math: the time of a load-bound mainloop, for boxes inside (rows >= row0 + box_m), straddling and wholly outside.
//   nvcc -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a notes/tma-box-edge-session48.cu -lcuda -o /tmp/tma_edge
//   /tmp/tma_edge            # prints rows, row0, box_m, us per launch, and the valid bytes' rate
//   /tmp/tma_edge ROWS BOX_M CTAS    # that case alone (for ncu)
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

namespace {

constexpr int kBoxK = 64, kStages = 6, kK = 14336, kThreads = 128;

__device__ uint32_t smem_addr(const void* p) { return static_cast<uint32_t>(__cvta_generic_to_shared(p)); }

__device__ void wait_parity(uint64_t* bar, uint32_t parity) {
  asm volatile(
      "{\n .reg .pred p;\n WAIT_%=:\n mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n @!p bra WAIT_%=;\n}\n" ::"r"(
          smem_addr(bar)),
      "r"(parity)
      : "memory");
}

__global__ void __launch_bounds__(kThreads) stream_boxes(const __grid_constant__ CUtensorMap map, int row0, int box_m,
                                                         int* sink) {
  extern __shared__ uint8_t raw[];
  uint8_t* smem = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(raw) + 1023) & ~uintptr_t(1023));
  __shared__ uint64_t bars[kStages];
  const uint32_t box_bytes = kBoxK * box_m * 2;
  if (threadIdx.x == 0) {
    for (int s = 0; s < kStages; ++s)
      asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smem_addr(&bars[s])));
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  if (threadIdx.x != 0) return;
  const int tiles = kK / kBoxK;
  for (int i = 0; i < tiles; ++i) {
    const int s = i % kStages;
    if (i >= kStages) wait_parity(&bars[s], (i / kStages - 1) & 1);  // the stage's previous load landed
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_addr(&bars[s])), "r"(box_bytes)
                 : "memory");
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];" ::"r"(
            smem_addr(smem + s * box_bytes)),
        "l"(&map), "r"(i * kBoxK), "r"(row0), "r"(smem_addr(&bars[s]))
        : "memory");
  }
  for (int i = tiles > kStages ? tiles - kStages : 0; i < tiles; ++i) wait_parity(&bars[i % kStages], (i / kStages) & 1);
  sink[blockIdx.x] = smem[threadIdx.x];
}

float time_us(int rows, int row0, int box_m, int ctas, void* data, int* sink) {
  CUtensorMap map;
  const cuuint64_t dims[2] = {kK, static_cast<cuuint64_t>(rows)};
  const cuuint64_t strides[1] = {kK * 2};
  const cuuint32_t box[2] = {kBoxK, static_cast<cuuint32_t>(box_m)}, elem[2] = {1, 1};
  if (cuTensorMapEncodeTiled(&map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, data, dims, strides, box, elem,
                             CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                             CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) != CUDA_SUCCESS) {
    std::printf("encode failed\n");
    return -1;
  }
  const int smem = kStages * kBoxK * box_m * 2 + 1024;
  cudaFuncSetAttribute(stream_boxes, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  for (int i = 0; i < 3; ++i) stream_boxes<<<ctas, kThreads, smem>>>(map, row0, box_m, sink);
  constexpr int kRuns = 20;
  cudaEventRecord(start);
  for (int i = 0; i < kRuns; ++i) stream_boxes<<<ctas, kThreads, smem>>>(map, row0, box_m, sink);
  cudaEventRecord(stop);
  cudaEventSynchronize(stop);
  float ms = 0;
  cudaEventElapsedTime(&ms, start, stop);
  if (cudaGetLastError() != cudaSuccess) std::printf("launch failed\n");
  return ms * 1000 / kRuns;
}

}  // namespace

int main(int argc, char** argv) {
  int* sink;
  cudaMalloc(&sink, 1024 * sizeof(int));
  std::printf("rows row0 box_m ctas us valid_GB/s\n");
  const bool one = argc == 4;
  for (int ctas : {128, 132}) {
    for (int box_m : {128, 64}) {
      // the box at rows [128, 128 + box_m): inside (256), straddling (160..224 for 128-row boxes), wholly outside (128)
      for (int rows : {256, 224, 192, 160, 128}) {
        if (one && (rows != std::atoi(argv[1]) || box_m != std::atoi(argv[2]) || ctas != std::atoi(argv[3]))) continue;
        void* data;
        cudaMalloc(&data, static_cast<size_t>(rows) * kK * 2);
        cudaMemset(data, 0, static_cast<size_t>(rows) * kK * 2);
        const int row0 = 128;
        const float us = time_us(rows, row0, box_m, ctas, data, sink);
        const double valid = std::max(0, std::min(rows - row0, box_m));
        std::printf("%d %d %d %d %.1f %.0f\n", rows, row0, box_m, ctas, us,
                    ctas * valid * kK * 2 / (us * 1e-6) / 1e9);
        cudaFree(data);
      }
    }
  }
  return 0;
}
