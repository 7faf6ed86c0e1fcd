// How an SM90 CUTLASS kernel ranks itself for a problem (GemmKernel::priority): the rules and the
// measurements behind them. Auto dispatch (registry.cpp) tries the kernels that can run a problem in
// decreasing priority wherever no measured table decides. Host code only; CutlassSm90Gemm
// (cutlass_sm90_gemm.cuh) asks Sm90Priority<itself>::of with its registered priority. One class past 400 lines:
// its rules rank kernels against each other, so they read together; most lines are the measurements behind them.
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "cute/tensor.hpp"
#include "gemm_problem.h"
#include "sm90_collectives.cuh"
#include "sm90_tile_counts.h"

namespace pycutlass_gemm {

// Gemm: a CutlassSm90Gemm, read for its choices (element, tile, cluster, schedules, flags).
template <class Gemm>
class Sm90Priority {
  using Element = typename Gemm::Element;
  using MainloopSchedule = typename Gemm::MainloopSchedule;
  static constexpr int kTileM = Gemm::kTileM, kTileN = Gemm::kTileN;
  static constexpr int kClusterM = Gemm::kClusterM, kClusterN = Gemm::kClusterN;
  static constexpr bool kTransposed = Gemm::kTransposed, kStreamK = Gemm::kStreamK, kSplitK = Gemm::kSplitK,
                        kBias = Gemm::kBias, kAnyOutput = Gemm::kAnyOutput, kUnalignedInputs = Gemm::kUnalignedInputs;
  // A persistent kernel of D itself (not D^T), whole K a tile, A and B loaded and D stored by TMA, no bias row:
  // the kernels the tile-shape rules below (few tiles, one-wave pairs, fill tiles) compare with one another.
  static constexpr bool kPlainPersistent =
      !kTransposed && !kStreamK && !kSplitK && !kBias && !kAnyOutput && !kUnalignedInputs;

  // wave_fill of the kernel's own tiles, in the user's D.
  static double own_wave_fill(const GemmProblem& p) {
    return sm90_tiles::wave_fill(p, Gemm::kTileOfDM, Gemm::kTileOfDN);
  }
  // Whether the kernel's tiles fill at least half the SMs and their waves compute at least `fill` of
  // the output (the wave-fill rules: 128x192 tiles of D and of D^T, 192x192 tiles).
  static bool fills_waves(const GemmProblem& p, double fill) {
    return 2 * Gemm::tiles_of(p) >= sm90_tiles::sm_count_of(p) && own_wave_fill(p) >= fill;
  }
  // Whether the CTAs the kernel launches (its tiles of D rounded up to whole clusters) fill `fill` .. 1 of one wave
  // of SMs (session 53's two-tile-row rules for the 64-row pair and the 80-wide fill tile).
  static bool own_ctas_fill_one_wave(const GemmProblem& p, double fill) {
    const int64_t ctas = sm90_tiles::cluster_tiles_of(p, Gemm::kTileOfDM, Gemm::kTileOfDN, Gemm::kClusterOfDM,
                                                      Gemm::kClusterOfDN);
    const int64_t sms = sm90_tiles::sm_count_of(p);
    return ctas <= sms && static_cast<double>(ctas) >= fill * static_cast<double>(sms);
  }

 public:
  // A persistent kernel gives each output tile to one SM, so when its tiles fill the waves of SMs
  // poorly -- fewer tiles than SMs (the large-K workload: 2 tiles of 128x256 for 132 SMs; a
  // weight gradient of 1024 x 1024: 32 tiles), or a last wave mostly empty -- it ranks below the
  // stream-K kernels (priority 90): their 128x128 tiles are twice as many, and where that is
  // still too few, stream-K splits K across the idle SMs.
  static constexpr int kPoorWavesPriority = 80;
  static constexpr double kPoorWaveEfficiency = 0.6;  // tiles / (waves x SMs) below this
  // Except tf32 over K <= kShortK: there a split of K costs more than idle SMs. Session 39, the H100 sweep
  // (tf32, aligned), where the rules ran stream-K 128x256 for the persistent kernel's poor waves: the
  // persistent 128x256 c2x1 ran 0.866x its time (1156 problems with K <= 512, slower by > 3% at 1), tf32
  // cr's 256x128 c1x2 0.909x (647); at K <= 1024, 0.891x but 143 problems slower by > 3%.
  static constexpr bool kTf32 = std::is_same_v<Element, float> && !kIsTf32x3Schedule<MainloopSchedule>;
  static constexpr int64_t kShortK = 512;
  // fp32 (tf32, tf32x3) over K shorter than one k tile (32) and fewer 128x256 tiles than SMs -- outer
  // products and their like, where the tensor cores multiply mostly padding and D is small -- ranks below
  // the SIMT kernels (50 +- 5: IEEE fp32, more accurate than asked). Session 40, the H100 sweep (K of 1, 4
  // and 16), where the rules ran these kernels: SIMT ran 0.614x their time over 1200 such problems (slower
  // by > 3% at 8); with more tiles it is behind (K 16 over 4096x4096 rc: 1.50x), where they keep their rank.
  static constexpr bool kFp32Operands = std::is_same_v<Element, float>;
  static constexpr int kTileK = cute::size<2>(typename Gemm::TileShape{});
  static constexpr int kShorterThanKTilePriority = 40;
  // 16-bit problems of K <= kShortKFewTiles whose 128x256 tiles fill the waves poorly (where the rules ran
  // stream-K 128x128) go to the narrowest persistent tiles, twice to four times as many CTAs with no K
  // split: first 128x64 (c1x1 where registered, else c1x2), then 128x128 c1x2, at kFewTilesPriority - 0, 1,
  // 2 (ahead of stream-K's 90, behind split-K's 95). Session 39, the H100 sweep (bf16 and fp16, aligned):
  // 0.835x stream-K's time over 2465 problems (faster at 1724, never slower by > 3%; rr 0.80x, cr 0.79x,
  // rc 0.81x; cc has none of these tiles); with K <= 4096, 0.843x but slower by > 3% at 10.
  static constexpr bool kFewTilesNarrow = sizeof(Element) == 2 && kPlainPersistent && kTileM == 128 &&
                                          (kTileN == 64 || (kTileN == 128 && kClusterM * kClusterN == 2));
  static constexpr int64_t kShortKFewTiles = 2048;
  static constexpr int kFewTilesPriority = 93;
  // tf32's 128x128 c1x2 (rc, cc) likewise for K <= kShortKFewTilesTf32, first there (kOneWavePairPriority:
  // for K <= kShortK the persistent 128x256 keeps its 100, and 128x192's kWaveFill takes 101). Session 40,
  // the H100 sweep, where the rules ran another kernel (persistent 128x256, stream-K, split-K): 0.799x its
  // time over 825 problems (slower by > 3% at 12); with K up to 2048, 0.832x but 103 slower.
  static constexpr bool kFewTilesNarrowTf32 = kTf32 && !kTransposed && !kStreamK && !kSplitK && kTileM == 128 &&
                                              kTileN == 128 && kClusterN == 2;
  static constexpr int64_t kShortKFewTilesTf32 = 1024;
  // K of at most max_k over 128x256 tiles that fill the waves poorly (the narrow-tile rules above).
  static bool short_k_few_tiles(const GemmProblem& p, int64_t max_k) {
    return p.k <= max_k && sm90_tiles::poor_waves(p, sm90_tiles::tiles_of(p, 128, 256), kPoorWaveEfficiency);
  }
  static constexpr int few_tiles_priority() {
    return kFewTilesPriority - (kTileN == 64 ? (kClusterN == 1 ? 0 : 1) : 2);
  }
  // A bias kernel is for bias rows; on other problems its plain twin (or anything else) goes first.
  static constexpr int kWithoutBiasPriority = 60;
  // A kernel that swaps A and B for its own sake (not tf32's K-major need: see kTransposed) with a
  // narrow N tile is for few rows of the user's M: first for m up to that width, last otherwise.
  static constexpr bool kSmallM = kTransposed && !std::is_same_v<Element, float> && kTileM == 128 && kTileN < 128;
  static constexpr int kSmallMPriority = 110, kNotSmallMPriority = 40;
  // A tile narrower than 128 (N 64: attention's head dimension, batches of narrow products) is for
  // problems no wider than it, where a wider tile's wgmmas would multiply padding: first there
  // (unless its tiles leave SMs idle, as for any persistent kernel), behind the others elsewhere.
  static constexpr bool kNarrowN = !kTransposed && kTileN < 128;
  static constexpr int kNarrowPriority = 105, kNotNarrowPriority = 60;
  // Tiles of 128 x (64 or 128) in clusters of 1x2 (A multicast to the two N tiles of a cluster: a
  // third to a quarter less traffic from L2 a k tile) are for problems of at least two N tiles whose
  // tiles fill one wave at least half, where a wider tile leaves SMs idle and stream-K's fix-ups cost:
  // 1024x1024x4096 bf16 128x64 c1x2 0.022 ms (c1x1 0.026, stream-K 128x128 0.030), 1024x2048x4096 cr
  // 128x128 c1x2 0.028 (128x64 c1x2 0.039, stream-K 0.035, 128x256 c2x1 0.045). First there, behind
  // the others elsewhere (for n <= the tile's N a cluster's second CTA has no tile; long K over fewer
  // tiles is split-K's: 256x256x524288).
  static constexpr bool kPairAlongM = kClusterM == 2 && kClusterN == 1;
  static constexpr bool kPairAlongN = kClusterM == 1 && kClusterN == 2;
  static constexpr bool kOneWavePair = kTileM == 128 && kTileN <= 128 && kPlainPersistent &&
                                      (kPairAlongN || (kPairAlongM && kTileN == 128 && sizeof(Element) == 2));
  static constexpr int kOneWavePairPriority = 102, kNotOneWavePairPriority = 55;
  // 16-bit 128x128 tiles come in clusters of 1x2 and of 2x1 (B multicast to two M tiles): of the two, the one
  // whose clusters launch fewer tiles (cluster_tiles_of: 7 N tiles of 128 launch 8 in clusters of 1x2) takes
  // the rules above, the other yields to it (kNotOneWavePairPriority); on a tie, 1x2. H200, session 41, where
  // the rules ran 1x2 and 2x1 launches fewer: 2048x896x8960 rr 0.80x its time, 2048x896x3000 cr 0.89x,
  // 1024x1600x1600 rr 0.95x; at equal launches within 4% (512x2560x3072 rc 1.00x, 512x3072x768 rr 1.04x).
  // Over two tile rows (two_tile_rows: 129-256 rows of x @ W.T and dx) a tie goes to 2x1, whose clusters hold both
  // tile rows and read each N tile of W once. H200, session 53, bf16, every kernel by name, the read past the edge
  // in (notes/measurements.md): at the 30 problems of 136-256 rows where auto ran 1x2 (N of 5120-8192), 2x1 ran
  // 0.87-0.98x its time (1.02x once: 152 x 8192 x 2048 rr) and was the fastest kernel at 29 (208 x 8192 x 8192 rr
  // 0.87x torch.matmul against 0.78x; 224 x 8192 x 8192 rc 1.10 against 0.98; 248 x 8192 x 2048 rr 0.99 / 0.88).
  static constexpr bool kPairOrientation = kOneWavePair && kTileN == 128 && sizeof(Element) == 2;  // tf32: 1x2 only
  static bool other_orientation_launches_fewer(const GemmProblem& p) {
    const int64_t along_n = sm90_tiles::cluster_tiles_of(p, 128, 128, 1, 2);
    const int64_t along_m = sm90_tiles::cluster_tiles_of(p, 128, 128, 2, 1);
    if (along_m == along_n && two_tile_rows(p)) return kPairAlongN;
    return kPairAlongM ? along_m >= along_n : along_m < along_n;
  }
  // The 128x64 tile in clusters of 1x4 (A multicast to four N tiles: half the L2 traffic for A of
  // 1x2) is for x @ W.T over 64-128 tokens (H100, session 26: 64 x 4096 x 4096 0.022 ms, 0.99x
  // cuBLAS, against 1x2's 0.027), where the measured table has it fastest; by rule it ranks behind
  // the others (with fewer than four N tiles a cluster's CTAs idle, and 256 tokens ran 0.72x).
  static constexpr bool kQuadCluster = kClusterN == 4;
  static constexpr int kQuadClusterPriority = 54;
  // Tiles of 128x192 are for problems whose 128x256 tiles leave much of their last wave idle and
  // 128x192 ones fill it: 3072^3 has 288 tiles of 128x256 for 132 SMs (three waves, the last 18%
  // full) and 384 of 128x192 (97%): 0.081 ms against 0.102 on the H100 (cuBLAS runs 192-wide tiles
  // there, 0.077). First where its tiles fill at least half the SMs and the SMs' waves of them
  // compute at least kWaveFillGain more of the output than those of 128x256 tiles (wave_fill),
  // behind the others elsewhere: per flop it is behind 128x256 (4096^3: 0.221 ms against 0.170, 704
  // tiles against 512), and fewer tiles are stream-K's or split-K's (256x256x524288: 4 tiles).
  static constexpr bool kWaveFill = kTileM == 128 && kTileN == 192 && !kTransposed && !kStreamK && !kSplitK &&
                                    !kBias && !kUnalignedInputs;
  static constexpr double kWaveFillGain = 1.15;
  static constexpr int kWaveFillPriority = 101, kNotWaveFillPriority = 50;
  // The same tile computing D^T = B^T A^T is a 192 x 128 tile of D (the user's M on its 192 side),
  // for problems whose M fills 192-row tiles where neither 128x256 nor 128x192 tiles fill the SMs'
  // waves: 3072x1024x4096 has 96 tiles of 128x256 for 132 SMs (the one wave 73% full), 144 of
  // 128x192 (two waves, 49%) and 128 of 192x128 (97%); cuBLAS runs 128x192 tiles of D^T there. First
  // (ahead of kWaveFill's 101) where its waves compute kWaveFillGain more of the output than both.
  static constexpr bool kWaveFillTransposed = kTileM == 128 && kTileN == 192 && kTransposed &&
                                              !std::is_same_v<Element, float> && !kStreamK && !kSplitK && !kBias;
  static constexpr int kWaveFillTransposedPriority = 103;
  // Over kTwoTileRowsMin + 1 .. kTallTileRows rows of x @ W.T and dx (one tile column of D^T holds them) with K >=
  // kOneTallRowMinK, where its tiles use at least kOneTallRowWaveUse of their waves' slots (N >= 10112 on 132 SMs), it
  // goes first ahead of the measured table (whose vote ran 128x256 and 128x192 tiles of D, two tile rows). H200,
  // session 53, bf16, every kernel by name: the fastest kernel at all 22 such problems (136-192 rows, N of 11008, 14336
  // and 28672, rc and rr), 0.84-1.09x torch.matmul against auto's 0.67-1.01x (144 x 28672 x 8192 rr 0.84 / 0.67; 176 x
  // 14336 x 4096 rr 1.02 / 0.82; 176 x 11008 x 4096 rc 0.96 / 0.80); with N = 8192 (64 tiles) it was behind.
  static constexpr int64_t kOneTallRowMinK = 4096;
  static constexpr double kOneTallRowWaveUse = 0.6;
  // Over kTwoTallRowsMin + 1 .. 384 rows of x @ W.T and dx (A row-major: rc, rr; one batch) the 128-row tiles of D
  // take three tile rows, the last 1-128 rows full, and these tiles two (192 rows each); there they go first, ahead
  // of the measured table (kAheadOfTablePriority: no table has points between 256 and 512 rows, and its vote ran
  // 128x128 stream-K or 128x256 tiles), where their tiles use at least kTwoTallRowsWaveUse of their waves' slots
  // (N = 6144: 96 tiles for 132 SMs; 8192: 128; 14336: 224 in two waves). H200, bf16, every kernel by name beside
  // torch.matmul (sessions 48-50, notes/measurements.md session 51): where this puts them first (57 timed rows of
  // 272-384 rows, N 6144-28672) 0.803x torch.matmul against auto's 0.686x then (272 x 8192 x 8192 rr 0.80 against
  // 0.43, 272 x 14336 x 4096 rc 0.72 against 0.44), never behind it by > 1%, the fastest kernel at 55; with fewer
  // or poorly waved tiles they were behind (N = 4096: 64 tiles, 0.61-0.74x against 0.73-0.99x; N = 11008: 172
  // tiles, 0.59 against the 192x192 three-warpgroup tile's 0.84; N = 5632: 88 tiles, 0.69 against 0.71). Run on
  // new rows (session 51: 264-376 rows over 8 layer shapes, rc and rr, auto with this against the table's pick):
  // where it fired (31 bf16, 30 fp16 problems) 0.770 / 0.766x against 0.644 / 0.638x, never behind by over 2%.
  static constexpr int64_t kTwoTallRowsMin = 256;
  static constexpr double kTwoTallRowsWaveUse = 0.7;
  static constexpr bool kRowMajorA = std::is_same_v<typename Gemm::UserLayoutA, cutlass::layout::RowMajor>;
  static constexpr bool kKMajorB = std::is_same_v<typename Gemm::UserLayoutB, cutlass::layout::ColumnMajor>;
  // x @ W.T and dx (A row-major; one batch) over two 128-row tile rows of D, kTwoTileRowsMin + 1 .. 256 rows: between
  // the measured tables' points at 128 and 256 rows, where their votes ran 128x64 c1x2 / c1x1 and 128x128 c1x2
  // (session 53's rules: the 2x1 orientation above, kWaveFillTransposed, kLongKRowCol, kFillTile, kSixtyFourRowPair).
  // Over kTallTileRows or fewer a 192-row tile of D^T holds them all (kSplitKFewRowsTransposed, kWaveFillTransposed).
  static constexpr int64_t kTwoTileRowsMin = 128, kTallTileRows = 192;
  static bool two_tile_rows(const GemmProblem& p) {
    return kRowMajorA && p.batch == 1 && p.m > kTwoTileRowsMin && p.m <= 2 * kTwoTileRowsMin;
  }
  static bool one_tall_tile_row(const GemmProblem& p) {
    return two_tile_rows(p) && p.m <= kTallTileRows && p.k >= kOneTallRowMinK &&
           !sm90_tiles::poor_waves(p, Gemm::tiles_of(p), kOneTallRowWaveUse);
  }
  static bool two_tall_tile_rows(const GemmProblem& p) {
    return kRowMajorA && p.batch == 1 && p.m > kTwoTallRowsMin && p.m <= 2 * kTileN &&
           !sm90_tiles::poor_waves(p, Gemm::tiles_of(p), kTwoTallRowsWaveUse);
  }
  // 128x64 tiles of D without a cluster are for dx (A and B row-major; one batch) over kOneRowMinRows + 1 .. 128
  // rows, one tile row, N from kOneRowMinN (as measured; smaller ones are the small tiles'), where its tiles take at
  // most one wave of SMs and either K is at most kOneRowMaxK or they fill it kOneRowFullWave and K is at most
  // kOneRowFullWaveMaxK: first there, ahead of the measured table (whose rr points are at 64 and 256 rows; between
  // them it voted for split-K 128x128 and stream-K 128x128). H200, bf16 / fp16 x torch.matmul, session 50 (128
  // rows): 128 x 4096 x 4096 0.92 / 0.95 against auto's split-K 128x128 0.85 / 0.86, 8192 x 8192 1.02 / 1.04 against
  // stream-K's 0.87 / 0.87, 8192 x 2048 and 4096 x 1024 auto's own pick; session 51 (104-128 rows, auto with this
  // against the table's pick): 4096 x 4096 1.02-1.09 / 1.00-1.11 times as fast, 8192 x 8192 0.98-1.14 / 1.02-1.16.
  // Longer K went to a split: with half a wave (4096 x 6144: 0.91 against split-K's 0.93; 104 x 4096 x 14336,
  // session 48: 0.84 against 1.05) and with a full one (session 51, 8192 x 28672: 0.87-0.98 of stream-K's speed);
  // over more than a wave 128x128 tiles in clusters of 1x2 (11008 x 4096: 0.95 against 1.12).
  // Session 56 (H200, bf16, notes/random-shapes-session47.py "one-row" and session 55's "pair-rows", every kernel by
  // name) took it from 97 rows down to 65 and its full wave's K from 8192 to 16384: at the 16 problems where that
  // changes auto's pick, 0.976x torch.matmul against 0.880x (the fastest kernel's 0.996x): 72-96 x 8192 x 4096-14336
  // 0.98-1.11 against split-K 128x128's 0.94-1.03, 72-96 x 4096 / 6144 x 1024 0.84-0.91 against the SM80 64x64
  // tile's 0.68-0.80, 112 / 128 x 8192 x 14336 1.06 / 0.97 against stream-K's 0.96 / 0.89.
  static constexpr bool kOneRowNarrow = sizeof(Element) == 2 && kPlainPersistent && kTileM == 128 && kTileN == 64 &&
                                        kClusterM * kClusterN == 1 && kRowMajorA &&
                                        std::is_same_v<typename Gemm::UserLayoutB, cutlass::layout::RowMajor>;
  static constexpr double kOneRowFullWave = 0.9;
  static constexpr int64_t kOneRowMinRows = 64, kOneRowMaxK = 4096, kOneRowFullWaveMaxK = 16384, kOneRowMinN = 4096;
  static bool one_tile_row(const GemmProblem& p) {  // kOneRowMinRows + 1 .. 128 rows, one batch
    return p.batch == 1 && p.m > kOneRowMinRows && p.m <= kTileM;
  }
  static bool one_tile_row_one_wave(const GemmProblem& p) {
    const int64_t tiles = Gemm::tiles_of(p), sms = sm90_tiles::sm_count_of(p);
    const bool full_wave = static_cast<double>(tiles) >= kOneRowFullWave * static_cast<double>(sms);
    return one_tile_row(p) && p.n >= kOneRowMinN && tiles <= sms &&
           p.k <= (full_wave ? kOneRowFullWaveMaxK : kOneRowMaxK);
  }
  // Its twin for x @ W.T (A row-major, B column-major), 128x64 tiles in clusters of 1x2, over kOneRowMinRows + 1 ..
  // 128 rows where its CTAs fill kOneRowFullWave .. 1 of a wave (N of 7552-8448 on 132 SMs; about 4096 the 64-row
  // pair leads, kSixtyFourRowPair): first there, ahead of the measured table, whose vote between its points ran
  // 128x64 c1x4 (N = 7680) and 128x128 c1x2 (N = 8192, K >= 4096). H200, session 56, bf16, every kernel by name
  // ("one-row": 72-128 rows, N of 7680 and 8192, K of 1024-14336; "pair-rows"): at the 29 problems where it changes
  // auto's pick, 1.012x torch.matmul against 0.811x, the fastest kernel at 27 (within 3% at the other two); 96 x 7680 x
  // 14336 1.07 against c1x4's 0.73, 112 x 8192 x 8192 1.02 against 128x128 c1x2's 0.90.
  static constexpr bool kOneRowWavePairRowCol = kOneWavePair && kPairAlongN && kTileN == 64 &&
                                                sizeof(Element) == 2 && kRowMajorA && kKMajorB;
  static bool one_tile_row_full_wave_pair(const GemmProblem& p) {
    return one_tile_row(p) && own_ctas_fill_one_wave(p, kOneRowFullWave);
  }
  // And dx over kOneRowMinRows + 1 .. 128 rows where 128x64 tiles take more than a wave: 128x128 tiles in clusters of
  // 1x2 where their CTAs fill kOneRowWidePairFill .. 1 of a wave (N of 9984-16896 on 132 SMs) with K <= kOneRowMaxK,
  // ahead of the measured table, whose vote ran stream-K 128x128 at N = 11008 and 16384. H200, bf16, every kernel by
  // name, K = 4096 (sessions 50-55: band-128, m64-128, model-shapes, pair-rows, tokens grids): the fastest kernel at
  // all 22 such problems; at the 13 where auto ran stream-K then, 1.066x torch.matmul against 1.011x (72-128 x 11008 x
  // 4096 0.96-1.12 against 0.90-1.06). At shorter K the table mostly runs them already (kFewTilesNarrow's reason).
  static constexpr bool kOneRowWidePairRowRow = kOneWavePair && kPairAlongN && kTileN == 128 && sizeof(Element) == 2 &&
                                                kRowMajorA && !kKMajorB;
  static constexpr double kOneRowWidePairFill = 0.6;
  static bool one_tile_row_wide_pair(const GemmProblem& p) {
    return one_tile_row(p) && p.k <= kOneRowMaxK && own_ctas_fill_one_wave(p, kOneRowWidePairFill);
  }
  // Split-K in parallel is for long K over few tiles (it runs only where K splits into at least
  // half as many equal slices as the SMs need: split_k_slices): at its registered priority (95,
  // ahead of stream-K; the 128x256 tile 96) where the tiles fill at most a quarter of the SMs
  // (1024x1024x16384 bf16, 32 tiles of 128x256: 0.065 ms against stream-K's 0.085),
  // behind everything else otherwise (its partial products cost slices x m x n x 4 bytes of
  // traffic, the most where m x n is large), and a tile wider than 128 also where its N (the
  // user's M when computing D^T) is at most 128 (half its columns padding: 128x128x262144 bf16 ran
  // 0.085 ms on 128x256 against 0.070 on 128x128).
  static constexpr int kNotLongKPriority = 45;
  // x @ W.T (A row-major, B column-major) split in parallel is for more than 8192-long K over at least
  // 256 rows: session 39's H100 sweep of the 128x256 tile where its tiles fill at most a quarter of the
  // SMs, against what auto ran before (128x64 c1x2 / c1x4 persistent, stream-K 128x128), time ratio: bf16
  // 0.81x for m >= 256 and k > 8192 (62 problems, faster at 60, never 1% slower), 1.11x over all of them
  // (1.2-1.6x at k <= 4096, 1.2-1.3x at m <= 32); fp16 0.73x (1.06x at worst).
  // (tf32's rc split-K keeps the plain rule: measured at 1024x2048x4096.)
  static constexpr bool kLongKRowCol = sizeof(Element) == 2 &&
                                       std::is_same_v<typename Gemm::UserLayoutA, cutlass::layout::RowMajor> &&
                                       std::is_same_v<typename Gemm::UserLayoutB, cutlass::layout::ColumnMajor>;
  // There it goes first (ahead of kOneWavePair's 128x64 c1x2, whose tiles fill one wave at 31 of those
  // problems: split-K ran 0.866x its time, bf16, 0.852x fp16, never slower).
  static constexpr int64_t kLongKRowColMinM = 256, kLongKRowColMinK = 8192;
  static constexpr int kLongKRowColPriority = 103;
  // And over kTallTileRows + 1 .. 256 rows (two_tile_rows past a 192-row tile of D^T) it goes first ahead of the
  // measured table (its vote ran 128x64 c1x2 there). H200, session 53, bf16, by name: 200 / 224 / 248 x 4096 x 14336
  // 0.92 / 1.06 / 0.96x torch.matmul against 128x64 c1x2's 0.78 / 0.90 / 0.81x, the fastest kernel at each.
  static bool long_k_two_tile_rows(const GemmProblem& p) {
    return two_tile_rows(p) && p.m > kTallTileRows && p.k > kLongKRowColMinK;
  }
  // Split-K of 128x192 tiles of D^T (192 x 128 tiles of D: the user's M on the 192 side) is for x @ W.T and dx
  // (rc, rr) over kFewRowsMin + 1 .. 192 rows, as many as one of its tile columns holds: there 128-row tiles of D
  // compute two tile rows (256, a quarter to nearly half padding) and the 192-row tiles of D^T without a split are
  // too few for the SMs (a 4096-row weight: 32), while K split into slices gives every SM a share of the weight
  // (it runs where K splits for at least half the SMs: split_k_slices). First there for K >= kFewRowsMinK in slices
  // of at least kFewRowsMinSlice, ahead of the fill tiles (106: 136-192 x 5120 x 5120 rc ran 128x80 c2x1 at 0.57-0.76x
  // torch.matmul, this tile at 0.86-0.93x), kWaveFillTransposed and kLongKRowCol (103); behind the others elsewhere.
  // H200, session 49 (notes/measurements.md), bf16 over 136-192 rows of 9 layer shapes, rc and rr, every kernel by
  // name: where this rule puts it first (55 problems) 0.940x torch.matmul against 0.832x for the fastest other
  // kernel (faster than it at all 55, by 1.04-1.24x); with shorter K or slices it was behind (K = 2048: 0.63-0.74x
  // against 0.70-0.97x; 1024 x 4096 rc, slices of 512: 0.78-0.82x against 0.83-0.88x).
  // Over kOneTileRowMin + 1 .. 128 rows (one 128-row tile row of D) it is first only where that tile row's
  // 128x64 tiles leave half the SMs idle (N <= 4224 on 132 SMs) and K >= kOneTileRowMinK (x @ W.T there runs the
  // 64-row pair since session 52: kSixtyFourRowPair). H200, session 50, 128
  // rows, bf16 / fp16 x torch.matmul: 128 x 4096 x 14336 rc 0.97 / 0.96 against auto's 128x64 c1x4 0.90 / 0.90,
  // 4096 x 11008 rc 0.97 / 0.96 against 0.96 / 0.94, 2048 x 8192 rc 0.90 / 0.87 against 0.76 / 0.71; behind
  // with K = 4096 (128 x 4096 x 4096 rc 0.85 against 1.01) or N = 8192 (128 x 8192 x 8192 rc 0.86 against 1.01).
  // Since session 56 for x @ W.T over kOneRowMinRows + 1 .. 128 rows there ahead of the measured table (its vote ran
  // 64x64 ping-pong tiles, c1x1 and c2x1): H200, bf16, by name ("one-row", "pair-rows"), at the 10 problems where
  // that changes auto's pick (72-128 x 2048 x 8192 / 14336), 0.948x torch.matmul against 0.811x (72 x 2048 x 14336
  // 0.97 against 0.71); the 64-row pair's one-wave rule (121) keeps N of about 4096.
  // Over 2 * kFewRowsMin + 1 .. 384 rows (two of its tile columns; 128-row tiles of D take three tile rows) it goes
  // first ahead of the measured table (kAheadOfTablePriority: the table's vote there ran 128x128 c1x2 and split-K
  // 128x256) for K >= kTwoColumnsMinK in slices of at least kFewRowsMinSlice; it splits at all only where its tiles
  // fill at most half the SMs (a weight of N <= 4224 on 132). H200, session 49 (band-wide, every kernel by name,
  // bf16, rc): 272-384 x 4096 x 14336 0.77-1.02x torch.matmul against the fastest other kernel's 0.67-0.94x (1.06-
  // 1.15x as fast), 4096 x 11008 0.80-0.96 against 0.75-0.93 (1.03-1.13x), 2048 x 8192 0.80-0.88 against 0.77-0.88
  // (0.99-1.04x). Session 51, 264-376 rows (off those), rc and rr, N = 4096 (K 11008, 14336) and 2048 (K 8192), 24
  // problems: bf16 0.821x torch.matmul against the table's picks' 0.742x (fp16 0.819 against 0.738), the fastest
  // kernel at 19 (all kernels by name, bf16), never behind another by more than 7% (296 x 4096 x 11008 rr).
  static constexpr bool kSplitKFewRowsTransposed = kSplitK && kTransposed && kTileN == 192;
  static constexpr int64_t kFewRowsMin = 128, kFewRowsMinK = 4096, kFewRowsMinSlice = 1024;
  static constexpr int64_t kOneTileRowMin = 96, kOneTileRowMinK = 8192, kTwoColumnsMinK = 8192;
  static constexpr int kSplitKFewRowsTransposedPriority = 107;
  static bool splits_in_long_slices(const GemmProblem& p) {
    const int64_t slices = Gemm::split_k_slices(p);
    return slices > 0 && p.k / slices >= kFewRowsMinSlice;
  }
  static bool one_tile_row_long_slices(const GemmProblem& p) {  // 128x64 tiles of D leave half the SMs idle
    return p.k >= kOneTileRowMinK && 2 * sm90_tiles::tiles_of(p, 128, 64) <= sm90_tiles::sm_count_of(p) &&
           splits_in_long_slices(p);
  }
  static bool few_rows_long_slices(const GemmProblem& p) {
    if (p.m > kOneTileRowMin && p.m <= kFewRowsMin) return one_tile_row_long_slices(p);
    return p.m > kFewRowsMin && p.m <= kTileN && p.k >= kFewRowsMinK && splits_in_long_slices(p);
  }
  static bool row_col_one_tile_row_long_slices(const GemmProblem& p) {  // session 56's
    return kKMajorB && p.m > kOneRowMinRows && p.m <= kFewRowsMin && one_tile_row_long_slices(p);
  }
  static bool two_tile_columns_long_slices(const GemmProblem& p) {
    return p.m > 2 * kFewRowsMin && p.m <= 2 * kTileN && p.k >= kTwoColumnsMinK && splits_in_long_slices(p);
  }
  // The any-alignment mainloops (staged: 76, 79 with D by TMA; ahead of the SM80 kernels' 70-75)
  // do not split K, and the SM80 kernels do (serially) where their tiles cannot fill the SMs. H100 sweep of the
  // unaligned classes, staged 128x128 against SM80 (median speed ratio): 0.42-0.91x for K >= 4096
  // over at most a quarter of the SMs' worth of tiles, 0.75x for K = 65535 over fewer tiles than
  // SMs, and 0.3x for K < 32 (a 64-deep k tile of padding) over many tiles: behind SM80 there.
  static constexpr int kUnalignedYieldPriority = 68;
  // The staged mainloop's 128x256 tile (half the shared-memory traffic a flop of the 128x128
  // tile's) is for problems whose tiles fill at least half the SMs; with fewer, the 128x128 tile's
  // twice as many keep more SMs busy (H100, 2048x1001x2048 bf16: 0.078 ms against 0.048).
  static constexpr bool kWideStaged = kUnalignedInputs && kTileN > 128;
  static constexpr int kWideStagedBonus = 1, kWideStagedPenalty = 10;
  // The 192-wide staged tile is 13% behind the 256-wide one per flop; it is for problems whose
  // tiles of it fill one wave of SMs at least 90% (1000x3000x777: 128 tiles for 132 SMs, where
  // 128x256 has 96: 0.031 ms against 0.033), first there and behind every staged kernel elsewhere.
  static constexpr bool k192Staged = kUnalignedInputs && kTileN == 192;
  static constexpr double k192StagedMinFill = 0.9;
  static constexpr int k192StagedBonus = 2;
  // The 64-wide staged tile is for problems whose tiles of it fit one wave, where the 128-wide
  // tile's half as many leave SMs idle (777^3: 91 tiles against 49; 0.024 ms against 0.028);
  // first there, behind every staged kernel where it takes more than one wave.
  static constexpr bool kNarrowStaged = kUnalignedInputs && kTileN == 64;
  static constexpr int kNarrowStagedBonus = 2;
  // Tuning candidates that rank at kCandidatePriority everywhere, so that auto never picks them unless a measurement
  // says where: the N-split 192-row tile (KernelTmaWarpSpecializedCooperativeSplitN; behind 128x192 wherever
  // measured, 3072^3 bf16: 0.088 ms against 0.082), and stream-K on 128x192 tiles of D^T (the registered split of
  // D^T with the fixup in the kernel: 0.82x its speed over 136-208 rows, H100, session 58).
  static constexpr bool kSplitN = std::is_same_v<MainloopSchedule, KernelTmaWarpSpecializedCooperativeSplitN>;
  static constexpr bool kStreamKTransposed192 = kStreamK && kTransposed && kTileN == 192;
  static constexpr int kCandidatePriority = 50;
  // 64-row tiles of D (one consumer warpgroup a tile, ping-pong) are for x @ W.T over 512-1000 tokens with N
  // of 768-1024, where 128-row tiles make too few CTAs (512x768: 48 of 128x64); elsewhere they are far
  // behind (512x4096x4096 bf16: 0.65x cuBLAS against 128x128 c1x2's 0.90x). The measured table says where
  // they lead; by rule they rank last.
  static constexpr bool kSixtyFourRows = kTileM == 64 && !kTransposed;
  static constexpr int kSixtyFourRowsPriority = 30;
  // 64-row tiles of D^T (64 rows of W by the tokens; tuning candidates, scripts/tuning_kernels.py: the decode tiles
  // of 16 and 32 tokens, behind small_mn there, and session 53's 96- and 128-token ones, not yet timed) rank last too,
  // not as kSmallM.
  static constexpr bool kSixtyFourRowsTransposed = kTileM == 64 && kTransposed;
  // Except 64x64 tiles in clusters of 2x1 (B multicast to the cluster's two 64-row tiles; cuBLAS's tile at 128 x 4096
  // x 4096 rc on the H200): 2 x ceil(N / 64) CTAs where 128-row tiles launch half as many. First (kAheadOfTablePriority:
  // registered after the H100 table, they run where a rule puts them first, at its points and between them) for
  //  - dx (A and B row-major) over kPairMinRows .. 64 rows with K >= kPairMinK where its CTAs fill at least
  //    kPairFullWave of a wave: every other rr kernel's tiles have 128 rows, half of them padding there. H200,
  //    session 52, bf16, x torch.matmul against the table's pick, 64 rows: 4096 x 4096 1.00-1.03 / 0.76-0.79, 4096 x
  //    6144 1.07-1.11 / 0.83-0.86, 8192 x 8192 0.99-1.00 / 0.77-0.79, 11008 x 4096 1.00-1.04 / 0.78-0.84, 8192 x 2048
  //    0.97-0.98 / 0.77-0.79, 4096 x 1024 0.90-0.91 / 0.78; 56 rows 0.97-1.19 / 0.77-0.94.
  //    Over 33-48 rows its first tile's box straddles M: until the rows past the edge were read from memory (session
  //    53, Sm90L2HintedMainloop::Arguments) it trailed over more than two waves of its CTAs (40 x 14336 x 4096: 0.70
  //    against 128x128 c1x2's 0.85) and ran only from 49 rows there; since, by name, 40 /
  //    48 x 11008 x 4096 1.02 / 1.01 against auto's 0.83 / 0.74, 40 x 14336 x 4096 0.95 / 0.88, 48 x 14336 x 4096 0.96
  //    against 128x128 c1x2's 1.04, 40 x 4096 x 4096 1.12 (16.8 us; 18.6 before). Over 96 rows behind where N > 4096
  //    (96 x 14336 x 4096: 0.73 against 1.04); over 16-32 rows the SM80 64x64 tile leads (its own rule).
  //  - (session 52 to 55) x @ W.T (A row-major, B column-major) over 97-128 rows with K >= 8192 where its CTAs take
  //    one wave (N <= 4224 on 132 SMs), ahead of kSplitKFewRowsTransposed there: 128 x 4096 x 14336 1.03-1.07 against
  //    split-K 128x192 of D^T's 1.00 and the table's 128x64 c1x4's 0.91, 128 x 4096 x 11008 1.04-1.06 / 0.98 / 0.97,
  //    128 x 2048 x 8192 0.90 / 0.90 / 0.78; 112 rows 0.83-1.03 against the table's 0.81-0.94. Over 65-96 rows the
  //    second tile is mostly padding (72 x 4096 x 14336: 0.74 against the table's 64x64 c1x2's 0.82; 96 rows
  //    0.86-0.97 against 0.89-0.91), and behind with K = 4096 (96 x 4096 x 4096: 1.00 against 128x64 c1x4's 1.06).
  //    Dropped in session 56: where its CTAs fill less than kPairFullWave of the wave (N = 2048) the split of D^T was
  //    ahead (one-row and pair-rows grids: 112 / 128 x 2048 x 14336 1.00 / 0.96 against 0.82 / 0.84;
  //    kSplitKFewRowsTransposed), and where they fill it the case below takes them.
  //  - since session 55, x @ W.T over 65-128 rows and dx over kPairDxClusterRowMinRows .. 128 (one cluster row: its
  //    B tiles multicast to the two 64-row tiles and loaded evict-first, Sm90L2HintedMainloop) where its CTAs fill
  //    kPairFullWave .. 1 of a wave (N of 3776-4224 on 132 SMs) with K >= kPairClusterRowMinK, at
  //    kPairClusterRowPriority: ahead of the 128-row tiles without a cluster for dx (kOneRowNarrow,
  //    kAheadOfTablePriority). H200, session 55 (notes/random-shapes-session47.py pair-rows:
  //    72-128 rows, every kernel by name in one run), where it goes first (35 problems): 1.115x torch.matmul against
  //    1.000x for the fastest other kernel; 72-128 x 4096 x 4096 rc 0.84-1.24 against 128x64 c1x4's 0.89-1.07, rr
  //    80-128 x 4096 x 6144 1.14-1.27 against split-K 128x64 c1x2's 1.01-1.11, x 4096 x 14336 1.11-1.17 against
  //    1.06-1.09; behind at 3 (80 x 4096 x 4096 rc 0.84 against 0.95, 88 x 4096 x 14336 rc 0.85 against 0.92, 112 x
  //    2048 x 8192 rc 0.89 against split 128x192 of D^T's 0.93). dx over 72 rows with K >= 6144 ran 0.72-0.83
  //    against split-K 128x128's 0.96-1.02 (hence 80), x @ W.T with K = 8192 over half a wave 0.80-0.91 against
  //    0.83-0.98 over 72-96 rows (so the long-K rule keeps its 97 rows). Behind over two waves (14336 x 4096 rr
  //    0.93-0.97 against 1.06-1.09, 6144 x 4096 rc 0.93-0.97 against 1.01-1.09), over a quarter wave (1024 x 4096 rc
  //    0.77-0.90 against 0.85-0.92); mixed with K = 1024 (4096 x 1024 rr 0.87-0.95 against 0.84-0.89: not taken).
  //  - x @ W.T and dx over two tile rows (two_tile_rows: 129-256 rows; four 64-row tiles) where its CTAs fill
  //    kPairFullWave .. 1 of a wave (N of 1864-2112 on 132 SMs), at kPairTwoTileRowsPriority: behind the split 128x192
  //    tiles of D^T where they run (129-192 rows, K >= 4096: 136 x 2048 x 8192 rc 0.98 against 0.70), ahead of the
  //    rest. H200, session 53, bf16, by name: 2048 x 2048 rr over 136-256 rows 0.84-1.02x torch.matmul against auto's
  //    128x64 c1x1 0.76-0.86x, rc 0.89-0.97 against 64x64 c1x1 / c1x2's 0.81-0.93 (2-4% behind at 136 and 176 rows),
  //    224 / 248 / 256 x 2048 x 8192 rc 1.06 / 0.85 / 0.89 against 0.93 / 0.78 / 0.79.
  static constexpr bool kSixtyFourRowPair = kSixtyFourRows && kClusterM == 2 && kClusterN == 1 && kRowMajorA;
  static constexpr int kPairTwoTileRowsPriority = 106, kPairClusterRowPriority = kAheadOfTablePriority + 1;
  static constexpr int64_t kPairMinRows = 33, kPairMinK = 1024, kPairClusterRowMinK = 2048,
                           kPairDxClusterRowMinRows = 80;
  static constexpr double kPairFullWave = 0.9;
  static bool sixty_four_row_pair_first(const GemmProblem& p) {  // dx over one tile row (CTAs may exceed a wave)
    const int64_t ctas = sm90_tiles::cluster_tiles_of(p, kTileM, kTileN, kClusterM, kClusterN);
    return !kKMajorB && p.batch == 1 && p.m >= kPairMinRows && p.m <= kTileM && p.k >= kPairMinK &&
           static_cast<double>(ctas) >= kPairFullWave * static_cast<double>(sm90_tiles::sm_count_of(p));
  }
  static bool sixty_four_row_pair_cluster_row(const GemmProblem& p) {
    return p.batch == 1 && p.m >= (kKMajorB ? kTileM + 1 : kPairDxClusterRowMinRows) && p.m <= kClusterM * kTileM &&
           p.k >= kPairClusterRowMinK && own_ctas_fill_one_wave(p, kPairFullWave);
  }
  static bool sixty_four_row_pair_two_tile_rows(const GemmProblem& p) {
    return two_tile_rows(p) && own_ctas_fill_one_wave(p, kPairFullWave);
  }
  // 192x192 tiles of three consumer warpgroups along M (KernelTmaWarpSpecializedCooperative3WG,
  // sm90_three_warpgroup_kernel.cuh) are for problems whose tiles of it fill half the SMs and whose
  // waves of them compute kWaveFillGain more of the output than 128x256 tiles and at least as much as
  // 128x192 tiles of D or of D^T (3072^3: 256 tiles, two waves 97% full, as 384 of 128x192: 0.080 ms
  // against 0.082; 3072x1536x4096 cr: 128 tiles, one wave, 0.053 against 0.069): first there (ahead
  // of kWaveFillTransposed's 103), behind the others elsewhere (per flop it is behind 128x256:
  // 4096^3 0.217 ms against 0.176; 6144^3 0.567 against 0.563).
  static constexpr bool kThreeWarpgroups = Gemm::kThreeWarpgroups;
  static constexpr int kThreeWarpgroupsPriority = 104;
  // 16-bit 128x256 tiles with the stream-K scheduler are for long K (at least kWideStreamKMinK) over 128x256
  // tiles that take more than one wave of SMs and leave the last under half full: there CUTLASS's stream-K
  // heuristic spreads the last wave's work over all SMs (elsewhere it runs the tiles data-parallel, 1-4%
  // behind the persistent kernel: 4096^3, 512 tiles, the last wave 88% full), and each split's fix-up is
  // small beside its share of K. H100, ms against the persistent 128x256: 4096x2560x28672 rr (320 tiles:
  // 2.4 waves) 0.724 / 0.815, 512x8960x18944 rc (140) 0.233 / 0.371, 8960x896x6000 cr (280) 0.175 / 0.188.
  // Session 39's sweep of it (bf16 rr / rc / cr): where the last wave is under half full and the persistent
  // 128x256 was auto's choice, 0.971x its time at K >= 4096 (251 problems, faster at 200, at most 3% slower),
  // 1.05x over all K (0.99x at K >= 2048, 1.2-1.3x at K <= 1024). First there (ahead of the persistent
  // 128x256's 100) unless 128x192 tiles fill the waves kWaveFillGain better (kWaveFill's problems:
  // 128x192 ran 0.87x its time there), behind stream-K 128x128 (90) elsewhere.
  static constexpr bool kWideStreamK = kStreamK && kTileM == 128 && kTileN == 256 && !kTransposed &&
                                       sizeof(Element) == 2 && !kBias && !kAnyOutput && !kUnalignedInputs;
  static constexpr int kWideStreamKPriority = 101, kNotWideStreamKPriority = 89;
  static constexpr int64_t kWideStreamKMinK = 4096;
  static bool splits_last_wave(const GemmProblem& p, int64_t tiles) {
    const int64_t sms = sm90_tiles::sm_count_of(p), last = tiles % sms;
    return tiles > sms && last > 0 && 2 * last < sms;
  }
  static bool splits_last_wave(const GemmProblem& p) { return splits_last_wave(p, Gemm::tiles_of(p)); }
  // tf32 cr's stream-K 256x128 tile (its persistent tile, one CTA a cluster) against stream-K 128x256 (both
  // registered at 90; the first registered won the tie): session 40, the H100 sweep, where the rules ran
  // either: 256x128 for m >= 256 and 128x256 below picks at 1.021x the fastest (within 3% at 80.5%), against
  // 1.067x (75.6% with 256x128 everywhere: few rows leave its tile half empty). So 91 from 256 rows, 89 below.
  // And like 16-bit's 128x256 stream-K, it goes first (101) where its tiles take more than one wave of SMs
  // and at most three and leave the last under half full, over K >= 1024: there the persistent 256x128 c1x2
  // ran 1.20x its time (104 problems, never faster by > 3%; at more waves stream-K was 1.03-1.12x slower).
  static constexpr bool kTallStreamK = kStreamK && kTf32 && Gemm::kTileOfDM == 256 && Gemm::kTileOfDN == 128;
  static constexpr int kTallStreamKMinM = 256, kTallStreamKMaxWaves = 3;
  static constexpr int64_t kTallStreamKMinK = 1024;
  static int tall_stream_k_priority(const GemmProblem& p, int registered) {
    const int64_t tiles = Gemm::tiles_of(p), sms = sm90_tiles::sm_count_of(p);
    if (p.k >= kTallStreamKMinK && tiles <= kTallStreamKMaxWaves * sms && splits_last_wave(p))
      return kWideStreamKPriority;
    return p.m >= kTallStreamKMinM ? registered + 1 : registered - 1;
  }

  // Fill tiles: 16-bit 128x160 tiles (and 128x80 with B K-major) in clusters of 2x1 (B, the weight of x @ W.T,
  // multicast to two M tiles), as cuBLAS tiles x @ W.T over 512-2048 tokens (nvjet 80x128 at 512x2560x3072,
  // 168x128 at 512x5120x3072, in its column-major terms): their N fills one or two waves where 128, 192 and 256
  // columns leave SMs idle (512x5120: 128 tiles of 128x160, 108 of 128x192, 80 of 128x256). First where their
  // modelled time (sm90_tiles::modelled_time) is kFillTileGain below that of every other 128-row persistent
  // tile -- 64 (no cluster), 128 (clusters of 1x2 or 2x1), 192 and 256 (2x1) -- and below the other fill
  // width's (80 only with B K-major: MN-major, it was never ahead), with N wider than the tile and tiles for half
  // the SMs (batches of N = 64 or 128 are the narrow tiles'), and not where the wide stream-K tile splits the
  // last wave over long K (kWideStreamK); behind the others elsewhere. H200, session 41, over the 131
  // model shapes (bf16 rr / rc / cr) against what the rules ran before: first at 19, faster at all 19 (0.83x the
  // time at 512x2560x3072 rc, 0.88x at 512x5120x14336 rc, 0.83x at 4864x1600x2048 cr), 0.983x over all 131.
  // A gain of 1.05 put them first at 21, also faster at all; 1.1 leaves less to the model on the H100, whose
  // table did not time them (registry.cpp).
  static constexpr bool kFillTile = sizeof(Element) == 2 && kPlainPersistent && kTileM == 128 && kPairAlongM &&
                                    (kTileN == 160 || (kKMajorB && kTileN == 80));
  static constexpr double kFillTileGain = 1.1;
  static constexpr int kFillTilePriority = 106, kNotFillTilePriority = 50;
  // The 80-wide tile also goes first for x @ W.T over kTallTileRows + 1 .. 256 rows (two_tile_rows past a 192-row tile
  // of D^T) with K <= kTwoRowsFillMaxK (as measured; over 8192 kLongKRowCol's split leads) where its CTAs fill
  // kTwoRowsFillWave .. 1 of a wave (N of 3928-5280 on 132 SMs), where the model above gave 4096 to 128x64 tiles.
  // H200, session 53, bf16, by name: 200 / 208 / 224 / 248 / 256 x 4096 x 4096 0.83 / 0.87 / 0.99 / 1.01 / 1.00x
  // torch.matmul against 128x64 c1x2's 0.79 / 0.77 / 0.93 / 0.91 / 0.94x, the fastest kernel at each; N = 5120 (128
  // CTAs) runs it by the model already.
  static constexpr double kTwoRowsFillWave = 0.75;
  static constexpr int64_t kTwoRowsFillMaxK = 4096;
  static bool fill_tile_two_tile_rows(const GemmProblem& p) {
    return kKMajorB && kTileN == 80 && two_tile_rows(p) && p.m > kTallTileRows && p.k <= kTwoRowsFillMaxK &&
           own_ctas_fill_one_wave(p, kTwoRowsFillWave);
  }
  static bool fill_tile_first(const GemmProblem& p) {
    using sm90_tiles::modelled_time;
    if (fill_tile_two_tile_rows(p)) return true;
    if (p.n <= kTileN ||
        2 * sm90_tiles::cluster_tiles_of(p, 128, kTileN, kClusterM, kClusterN) < sm90_tiles::sm_count_of(p))
      return false;
    if (p.k >= kWideStreamKMinK && splits_last_wave(p, sm90_tiles::tiles_of(p, 128, 256))) return false;
    const int64_t mine = modelled_time(p, kTileN, kClusterM, kClusterN);
    const int64_t others = std::min({modelled_time(p, 64, 1, 1), modelled_time(p, 128, 1, 2),
                                     modelled_time(p, 128, 2, 1), modelled_time(p, 192, 2, 1),
                                     modelled_time(p, 256, 2, 1)});
    if (kFillTileGain * static_cast<double>(mine) > static_cast<double>(others)) return false;
    if constexpr (kKMajorB) {  // the other fill width; a tie goes to the wider
      const int64_t theirs = modelled_time(p, kTileN == 80 ? 160 : 80, kClusterM, kClusterN);
      if (theirs < mine || (theirs == mine && kTileN == 80)) return false;
    }
    return true;
  }

  // The kernel's priority for p; `registered`: the one it was registered with (KernelInfo).
  static int of(const GemmProblem& p, int registered) {
    using sm90_tiles::sm_count_of, sm90_tiles::wave_fill;
    if constexpr (kUnalignedInputs) {
      const int64_t sms = sm_count_of(p), tiles = Gemm::tiles_of(p);
      if (p.k < 32 || (p.k >= 4096 && tiles * 4 <= sms) || (p.k >= 32768 && tiles < sms))
        return kUnalignedYieldPriority;
      if constexpr (kNarrowStaged)
        return tiles <= sms ? registered + kNarrowStagedBonus : registered - kWideStagedPenalty;
      if constexpr (k192Staged)
        return tiles <= sms && tiles >= k192StagedMinFill * static_cast<double>(sms) ? registered + k192StagedBonus
                                                                                    : registered - kWideStagedPenalty;
      if constexpr (kWideStaged)
        return tiles * 2 >= sms ? registered + kWideStagedBonus : registered - kWideStagedPenalty;
      return registered;
    }
    if constexpr (kFp32Operands)
      if (p.k < kTileK && sm90_tiles::tiles_of(p, 128, 256) < sm90_tiles::sm_count_of(p))
        return kShorterThanKTilePriority;
    if constexpr (kSplitN || kStreamKTransposed192) return kCandidatePriority;
    if constexpr (kSixtyFourRowPair) {
      if (sixty_four_row_pair_cluster_row(p)) return kPairClusterRowPriority;
      if (sixty_four_row_pair_first(p)) return kAheadOfTablePriority;
      if (sixty_four_row_pair_two_tile_rows(p)) return kPairTwoTileRowsPriority;
    }
    if constexpr (kSixtyFourRows || kSixtyFourRowsTransposed) return kSixtyFourRowsPriority;
    if constexpr (kThreeWarpgroups)
      return fills_waves(p, kWaveFillGain * wave_fill(p, 128, 256)) &&
                     own_wave_fill(p) >= std::max(wave_fill(p, 128, 192), wave_fill(p, 192, 128))
                 ? kThreeWarpgroupsPriority
                 : kNotWaveFillPriority;
    if constexpr (kSplitKFewRowsTransposed) {
      if (two_tile_columns_long_slices(p) || row_col_one_tile_row_long_slices(p)) return kAheadOfTablePriority;
      return few_rows_long_slices(p) ? kSplitKFewRowsTransposedPriority : kNotLongKPriority;
    }
    if constexpr (kSplitK && !kSmallM) {
      const bool long_k = Gemm::tiles_of(p) * 4 <= p.sm_count && (kTileN <= 128 || (kTransposed ? p.m : p.n) > 128);
      if constexpr (kLongKRowCol) {
        if (long_k && long_k_two_tile_rows(p)) return kAheadOfTablePriority;
        return long_k && p.m >= kLongKRowColMinM && p.k > kLongKRowColMinK ? kLongKRowColPriority : kNotLongKPriority;
      }
      return long_k ? registered : kNotLongKPriority;
    }
    if constexpr (kSmallM) return p.m <= kTileN ? kSmallMPriority : kNotSmallMPriority;
    if (kBias && !has_bias_row(p)) return kWithoutBiasPriority;
    if constexpr (kWaveFill)
      return fills_waves(p, kWaveFillGain * wave_fill(p, 128, 256)) ? kWaveFillPriority : kNotWaveFillPriority;
    if constexpr (kWaveFillTransposed) {
      if (one_tall_tile_row(p) || two_tall_tile_rows(p)) return kAheadOfTablePriority;
      return fills_waves(p, kWaveFillGain * std::max(wave_fill(p, 128, 256), wave_fill(p, 128, 192)))
                 ? kWaveFillTransposedPriority
                 : kNotWaveFillPriority;
    }
    if constexpr (kWideStreamK)
      return p.k >= kWideStreamKMinK && splits_last_wave(p) &&
                     wave_fill(p, 128, 192) < kWaveFillGain * wave_fill(p, 128, 256)
                 ? kWideStreamKPriority
                 : kNotWideStreamKPriority;
    if constexpr (kTallStreamK) return tall_stream_k_priority(p, registered);
    if constexpr (kFillTile) return fill_tile_first(p) ? kFillTilePriority : kNotFillTilePriority;
    if constexpr (kQuadCluster) return kQuadClusterPriority;
    if constexpr (kOneWavePair) {
      if constexpr (kOneRowWavePairRowCol)
        if (one_tile_row_full_wave_pair(p)) return kAheadOfTablePriority;
      if constexpr (kOneRowWidePairRowRow)
        if (one_tile_row_wide_pair(p)) return kAheadOfTablePriority;
      if constexpr (kPairOrientation)
        if (other_orientation_launches_fewer(p)) return kNotOneWavePairPriority;
      const int64_t tiles = Gemm::tiles_of(p), sms = sm_count_of(p);
      if ((kPairAlongM ? p.m > kTileM : p.n > kTileN) && tiles <= sms && 2 * tiles >= sms) return kOneWavePairPriority;
      if constexpr (kFewTilesNarrowTf32)
        if (short_k_few_tiles(p, kShortKFewTilesTf32)) return kOneWavePairPriority;
      return kFewTilesNarrow && short_k_few_tiles(p, kShortKFewTiles) ? few_tiles_priority() : kNotOneWavePairPriority;
    }
    if constexpr (kOneRowNarrow)
      if (one_tile_row_one_wave(p)) return kAheadOfTablePriority;
    if (kNarrowN && p.n > kTileN)
      return kFewTilesNarrow && short_k_few_tiles(p, kShortKFewTiles) ? few_tiles_priority() : kNotNarrowPriority;
    const int base = kNarrowN ? kNarrowPriority : registered;
    if (kStreamK || p.sm_count <= 0 || (kTf32 && p.k <= kShortK)) return base;
    const bool poor = sm90_tiles::poor_waves(p, Gemm::tiles_of(p), kPoorWaveEfficiency);
    return poor ? std::min(base, kPoorWavesPriority) : base;
  }
};

}  // namespace pycutlass_gemm
