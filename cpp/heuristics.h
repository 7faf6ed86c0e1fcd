// Kernel choice from measurements: the heuristics table shipped with the package (measured on one
// GPU model by `pycutlass-gemm tune --sweep`) and the winners of autotuning. plan() asks these
// before its priority rules; both only ever name a kernel, which must still pass can_implement().
//
// The table holds, per problem class (dtype, precision, layouts of A and B, whether every operand
// is 16-byte aligned, or only the output or only the inputs are not), points (m, n, k, batch)
// log-spaced over 1..65536, each with its fastest kernel and the others measured within
// kSlowestKept of it (their time over the fastest's). Distances are in octaves (the sum of |log2|
// ratios of m, n, k and batch). A measured problem takes its point's fastest kernel; another takes
// the kernel with the least time over the points of its class within kVoteOctaves of its nearest
// point (geomean of time / fastest, a kernel not kept at a point counted at kSlowestKept, each
// point's time carried to the problem by how the kernel's tiles fill it: kTileFillWeight); points
// with m or n between octaves (1.5 x 2^i) take part only for problems between octaves too. Where
// that kernel cannot run the problem (a beta it refuses), the next in that order does. A table
// applies to the GPU model it was measured on (by name), and to a model of the same compute capability and SM
// count (an H200 plans by the H100's table; when planning for an architecture without a device, likewise): the
// GPU's own tables are asked first, and the first table with the problem's class and a point within kMaxOctaves
// decides; where none has, the rules do.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "gemm_problem.h"

namespace pycutlass_gemm {

struct KernelTime {
  int kernel;    // index into MeasuredTable::kernels
  double ratio;  // its time over the fastest's at this point (1 for the fastest)
};

struct MeasuredPoint {
  int64_t m = 0, n = 0, k = 0, batch = 1;
  std::vector<KernelTime> kernels;  // the fastest first, then those within kSlowestKept of it
};

struct MeasuredTable {
  std::string source;  // what it is, for plan()'s reason: e.g. "H100 table (pycutlass_gemm 0.1.0)"
  std::string device;  // the GPU model's name as the driver reports it
  int sm = 0, sm_count = 0;
  std::vector<std::string> kernels;  // the names the points index
  // The kernels built when it was swept (empty: not recorded, as in tables before session 41); a kernel
  // registered since is one the sweep could not time (registered_before_table).
  std::vector<std::pair<std::string, std::vector<MeasuredPoint>>> classes;  // problem_class() -> points
  std::vector<std::string> registered;
};

// The class a problem's table entries are looked up in, e.g. "bfloat16 ieee row col aligned"
// ("unaligned": A or B and C or D are not 16-byte aligned; "unaligned-output": only C or D is;
// "unaligned-input": only A or B is).
std::string problem_class(const GemmProblem& p);

// Replaces the tables plan() reads (and forgets cached plans).
void set_measured_tables(std::vector<MeasuredTable> tables);

struct MeasuredChoice {
  const GemmKernel* kernel;  // nullptr: the table's kernel is not built here or cannot run p
  std::string reason;
  // The kernels built here that the table's sweep could not time (registered since; MeasuredTable::registered):
  // plan() judges them by the rules. nullptr: none, or the table does not record what was built.
  std::shared_ptr<const std::unordered_set<std::string>> registered_after;
  // The table measured no point at p: its kernel is the vote of the points near it, which a rule ranking a
  // kernel at kAheadOfTablePriority (gemm_problem.h) overrides.
  bool between_points = false;
};
// The choice of the first table that covers p's device and class with a point within kMaxOctaves, or nothing.
std::optional<MeasuredChoice> measured_choice(const GemmProblem& p);
constexpr double kMaxOctaves = 4.0;
// Between measured points the choice is the kernel with the least time over the points within this
// many octaves of the nearest one (measured_choice says why). Over the H100 sweep (32525 points,
// session 37), each point judged from the others (notes/table-vote-session37.py): 0.5 picks kernels
// at a geomean of 1.0205x the fastest, within 3% at 87.1% of the points (between octaves 1.0271x,
// 80.4%), where 1.0 picked 1.0216x, 85.8% (1.0312x, 77.2%); 0.25 and 0.75 within 0.1% of 0.5, and 0
// (the nearest points alone) 1.0265x: points farther away vote for how tiles fill other waves. Session 49, with
// the tiles' fill and clusters' padding (kTileFillWeight), notes/vote-reach-session49.py: 0.75 picks 1.0090x the
// fastest over the 16-bit aligned sweep points each judged from the others (within 3% at 92.0%, > 10% behind at
// 349) where 0.5 picked 1.0098x (91.3%, 388), the other classes 1.0204x against 1.0201x; and off the points, on
// 665 bf16 problems of sessions 47-49 with every kernel timed on an H200 (random shapes, model layers, token
// grids), 1.0726x against 1.0833x, better in each of the six sets (1.0 picked 1.0700x there but 1.0096x at the
// sweep's points). A problem just past a point (272 rows against the point at 256) is voted on by points past
// the next tile row too.
constexpr double kVoteOctaves = 0.75;
// How much of a kernel's tile fill (padding, the last wave's idle SMs) at the problem against at a
// point its vote carries: over the H100 sweep, judged as for kVoteOctaves, 0.3 picks kernels at a
// geomean of 1.0160x the fastest, within 3% at 90.9% of the points and 10% behind at 3.3% (0 gave
// 1.0205x, 87.1%, 4.9%; 0.2 and 0.4 within 0.1%; 1, the whole fill, 1.0232x: a tile's time is not
// its share of the SMs, since fewer tiles each get more memory bandwidth). On 71 model shapes off the
// sweep's points (H100, bf16, M of 512-8192 tokens, N and K 768-28672) auto ran at 0.898x torch.matmul
// geomean with it, 0.861x without and 0.844x with kVoteOctaves 1 (notes/measurements.md, session 37).
constexpr double kTileFillWeight = 0.3;
// A point keeps the kernels within this factor of its fastest (pycutlass_gemm/heuristics.py's
// SLOWEST_KEPT, read from here); between points a kernel not kept at one counts this much there.
// Over the H100 sweep (24006 problems, session 18, before fp16's between octaves), judged at each
// point from the others, choosing by least time over the surrounding points picks kernels at a
// geomean of 1.029x the fastest (within 3% at 87.0% of the points; 89.5% and 1.025x at the powers
// of two, 70.9% and 1.059x between octaves, where how tiles fill the waves changes fastest).
constexpr double kSlowestKept = 1.25;

// Autotuning. The key of a problem's tuning class: device, dtype, precision, layouts, the smallest
// alignment of any operand, m, n, k and batch each rounded up to a power of two, beta, determinism.
std::string tune_key(const GemmProblem& p);
bool autotune_enabled();
void set_autotune_enabled(bool on);  // forgets cached plans
// The tuned kernel's name for a key, if any; set_tuned records one (and forgets cached plans).
std::optional<std::string> tuned_kernel(const std::string& key);
void set_tuned(const std::string& key, const std::string& kernel);
void clear_tuned();

}  // namespace pycutlass_gemm
