// Counting an SM90 kernel's tiles of a problem and the waves of SMs they take: what the priority rules
// (cutlass_sm90_priority.cuh) weigh. Host code only.
#pragma once

#include <algorithm>
#include <cstdint>

#include "gemm_problem.h"

namespace pycutlass_gemm {

// Counting tiles, in tiles of the user's D.
namespace sm90_tiles {

// The SMs p is planned for (an H100's 132 where the caller gave none).
inline int64_t sm_count_of(const GemmProblem& p) { return p.sm_count > 0 ? p.sm_count : 132; }

// Output tiles of p in tiles of tile_m x tile_n of the user's D.
inline int64_t tiles_of(const GemmProblem& p, int64_t tile_m, int64_t tile_n) {
  return tile_count(p.m, p.n, p.batch, tile_m, tile_n);
}

// The share of the work the SMs' waves of tile_m x tile_n tiles do that is p's output: 1 for a perfect fit.
inline double wave_fill(const GemmProblem& p, int64_t tile_m, int64_t tile_n) {
  return tile_fill(p.m, p.n, p.batch, tile_m, tile_n, sm_count_of(p));
}

// The waves of SMs `tiles` tiles take, one tile an SM at a time.
inline int64_t waves_of(const GemmProblem& p, int64_t tiles) { return (tiles + sm_count_of(p) - 1) / sm_count_of(p); }

// Whether `tiles` tiles use fewer than `efficiency` of the slots of the waves of SMs they take.
inline bool poor_waves(const GemmProblem& p, int64_t tiles, double efficiency) {
  return tiles < efficiency * static_cast<double>(waves_of(p, tiles) * sm_count_of(p));
}

// Tiles of tile_m x tile_n (128 x 128 in clusters of 1x2 ...) that p launches: each side rounded up to
// whole clusters, whose CTAs past the edge idle (7 N tiles in clusters of 1x2 launch 8).
inline int64_t cluster_tiles_of(const GemmProblem& p, int64_t tile_m, int64_t tile_n, int64_t cluster_m,
                                int64_t cluster_n) {
  return tile_count(p.m, p.n, std::max<int64_t>(p.batch, 1), tile_m, tile_n, cluster_m, cluster_n);
}

// A persistent kernel of 128 x tile_n tiles, its time on p modelled as its waves of SMs times a tile's time,
// tile_n + kTileOverheadColumns (a tile's fixed cost -- prologue, epilogue, the A half each warpgroup reads --
// counted in columns). Fitted on session 41's H200 timings of 131 model shapes (bf16; notes/measurements.md):
// overheads of 48-64 picked the fill tiles' problems best.
inline constexpr int64_t kTileOverheadColumns = 64;
inline int64_t modelled_time(const GemmProblem& p, int64_t tile_n, int64_t cluster_m, int64_t cluster_n) {
  return waves_of(p, cluster_tiles_of(p, 128, tile_n, cluster_m, cluster_n)) * (tile_n + kTileOverheadColumns);
}

}  // namespace sm90_tiles

}  // namespace pycutlass_gemm
