// The framework-free core: one problem description and one kernel interface.
//
// Nothing here includes libtorch. Python reads pointers, shapes, strides and the
// stream off torch tensors and hands them over as plain integers, so the extension
// builds and imports on a machine with a CPU-only torch and no GPU.
#pragma once

#include <cstdint>
#include <string>

namespace pycutlass_gemm {

enum class DType { F32, F16, BF16, F64 };
enum class Layout { Row, Col, Strided };  // Strided: neither; only the fallback takes it
// How fp32 inputs may be multiplied: exactly (IEEE fp32 FMA), as tf32 (10-bit mantissas), or as
// tf32x3 (each input split into tf32 big + small parts, three tf32 products: about fp32 accuracy).
enum class Precision { Ieee, Tf32, Tf32x3 };

const char* dtype_name(DType d);
const char* layout_name(Layout l);
const char* precision_name(Precision p);
// Whether a kernel whose math is `math` may run a problem asking for `precision`: IEEE math always
// (exact fp32 is at least as accurate as whatever was asked); tf32 and tf32x3 only when asked for
// (tf32x3 costs three products where tf32 was allowed, and tf32 would lose what tf32x3 keeps).
bool math_allowed(Precision math, Precision precision);
int dtype_size(DType d);

// One matrix operand: rows x cols elements at `ptr`, element (i, j) at
// ptr + i * row_stride + j * col_stride (strides in elements), batch b at
// ptr + b * batch_stride (0 broadcasts one matrix over the batch).
struct MatrixRef {
  const void* ptr = nullptr;
  int64_t rows = 0, cols = 0;
  int64_t row_stride = 0, col_stride = 0;
  int64_t batch_stride = 0;

  // Whether the matrix can be read in layout `l`: Row if elements of a row are
  // adjacent and rows do not overlap, Col likewise for columns; a dimension of
  // extent 1 places no constraint (as in torch's is_contiguous), so a single row
  // or column is both. Every matrix can be read as Strided.
  bool is(Layout l) const;
  // The layout it is read in when one must be named: Row or Col where only one
  // fits, the one along the longer extent where both do, else Strided.
  Layout layout() const;
  // Leading dimension when read in layout `l` (is(l) must hold): the stride
  // between rows (Row) or columns (Col), never less than the row (column) length.
  int64_t ld(Layout l) const;
};

// D = alpha * (A @ B) + beta * C, for `batch` matrices.
// A is m x k, B is k x n, C and D are m x n. C is read only when beta != 0.
struct GemmProblem {
  int64_t m = 0, n = 0, k = 0, batch = 1;
  MatrixRef a, b, c, d;
  DType dtype = DType::F32;  // A, B, C and D share it; accumulation is fp32 (fp64 for F64)
  Precision precision = Precision::Ieee;
  double alpha = 1.0, beta = 0.0;
  // false lets a kernel that splits K add the partial sums in whatever order they finish (the
  // same rounding error, not bit-for-bit repeatable); Python sets it from
  // torch.are_deterministic_algorithms_enabled().
  bool deterministic = true;
  int sm = 0;        // compute capability of the device, e.g. 90 (0: no device)
  int sm_count = 0;  // multiprocessors on that device
  // The device's name as the driver reports it ("NVIDIA H100 80GB HBM3"): which measured table
  // applies. nullptr when planning for an architecture rather than a device.
  const char* device_name = nullptr;
  uintptr_t stream = 0;
};

// What a kernel is, for listing and for choosing.
struct KernelInfo {
  std::string name;
  std::string family;    // "naive", "fallback", "cutlass_sm90", "cutlass_simt"
  DType dtype;
  Precision math;        // Tf32 / Tf32x3 for tf32 tensor cores; Ieee for exact fp32 (and 16-bit inputs)
  Layout a_layout, b_layout;  // Strided means "any"
  int sm_min, sm_max;    // device compute capabilities it runs on
  std::string tile;      // e.g. "128x256x64 cluster 2x1x1 cooperative persistent"
  int alignment;         // elements: leading dimensions and pointers must be multiples (1: none)
  int priority;          // auto dispatch prefers larger among kernels that can implement a problem
  bool takes_bias_row = false;  // also takes C as a bias row (see has_bias_row), in its epilogue
  int output_alignment = 0;      // elements, for C and D when not `alignment` (0: the same)
  // The tile of D one CTA computes, in the user's M and N (0: not a tiled kernel), and whether the tiles
  // run in waves of the SMs (a persistent grid: the last wave's idle SMs cost time; not where K is
  // split to fill them). The measured table's vote weighs how they fill a problem (heuristics.cpp).
  int tile_m = 0, tile_n = 0;
  bool tiles_in_waves = false;
  // The CTAs of a thread-block cluster along D's tile rows and columns (1 x 1: no cluster): a cluster past
  // the edge of D launches its idle CTAs too, and clusters of four fill fewer SMs (cluster_slots).
  int cluster_m = 1, cluster_n = 1;
};

// A priority of at least this is a rule measured where a measured table's vote between its points picks worse:
// there plan() runs the rules' choice ahead of the table's (at the table's own points the table decides).
constexpr int kAheadOfTablePriority = 120;

class GemmKernel {
 public:
  virtual ~GemmKernel() = default;
  virtual const KernelInfo& info() const = 0;
  // Empty when the kernel can run `p`; otherwise the reason it cannot.
  virtual std::string can_implement(const GemmProblem& p) const = 0;
  // Auto dispatch tries kernels in decreasing priority for `p`: by default info().priority;
  // a kernel ranks itself lower on problems it can run but runs poorly. A preference, never
  // a refusal: can_implement says only what the kernel cannot do, so it stays callable by name.
  virtual int priority(const GemmProblem& p) const { return info().priority; }
  // Bytes of device scratch the caller must pass to run(), 16-byte aligned.
  virtual size_t workspace_size(const GemmProblem& p) const { return 0; }
  // Launches on p.stream; throws std::runtime_error naming a CUDA error.
  virtual void run(const GemmProblem& p, void* workspace) const = 0;
};

// The largest power of two, up to 16, that divides `bytes` (0 counts as 16): the alignment of an
// address, a leading dimension or a stride, as far as any kernel asks (16 bytes at most: TMA).
int alignment_bytes(int64_t bytes);

// No products to compute: m, n, k or batch is 0.
bool is_empty(const GemmProblem& p);

// Tiles of tile_m x tile_n (rows x columns of D) that cover an m x n output, batch times; in clusters of
// cluster_m x cluster_n tiles, each side rounded up to whole clusters (7 N tiles in clusters of 1x2 launch 8).
int64_t tile_count(int64_t m, int64_t n, int64_t batch, int64_t tile_m, int64_t tile_n, int64_t cluster_m = 1,
                   int64_t cluster_n = 1);
// The CTAs of clusters of `cluster_size` that run at once on `sms` SMs, a CTA an SM: every SM for clusters of
// one or two; a cluster stays within a GPC, and the H100's GPCs (uneven) hold 30 clusters of four, 120 CTAs of
// its 132 SMs (cudaOccupancyMaxActiveClusters, session 26), so a wave of them is 120 / 132 of the SMs.
int64_t cluster_slots(int64_t sms, int64_t cluster_size);
// The share of the work of those tiles that is output: not the padding of the last tile row and
// column (and of the clusters) nor, where the tiles run in waves of `sms` SMs (0: they do not), the
// last wave's idle SMs. 1 for a perfect fit; 0 for no output or no tile. Kernels rank themselves by it
// (cutlass_sm90_priority.cuh) and the measured table's vote weighs it between points (heuristics.cpp).
double tile_fill(int64_t m, int64_t n, int64_t batch, int64_t tile_m, int64_t tile_n, int64_t sms,
                 int64_t cluster_m = 1, int64_t cluster_n = 1);

// The last two of a tensor's `dim` dimensions (sizes and strides in elements) as a matrix at
// `ptr`. A leading dimension of `batch` > 1 entries is the batch; a batch of 1, or a 2-D operand
// under a batched product, broadcasts with batch stride 0.
MatrixRef matrix_of(const void* ptr, int64_t batch, const int64_t* size, const int64_t* stride, int dim);

// C is one row broadcast down the output (row stride 0, contiguous), added with beta 1:
// F.linear's and torch.addmm's bias. Kernels with takes_bias_row add it in their epilogue.
bool has_bias_row(const GemmProblem& p);

// Checks shared by every kernel's can_implement: a device of the kernel's
// architecture, the kernel's dtype, precision and layouts, its alignment.
std::string check_common(const KernelInfo& info, const GemmProblem& p);

// Throws std::runtime_error carrying the name of the kernel and the CUDA error,
// if the last launch failed.
void check_launch(const char* kernel_name);
// The same for the error a launch call returned (a cudaError_t; int here, where the CUDA runtime's
// header is not included), which is cleared first so that the context stays usable.
void check_launch(const char* kernel_name, int launch_error);

// Whether a kernel may be launched as a programmatic dependent of the kernel before it on the
// stream (PDL, sm_90): its blocks are scheduled as that kernel's last blocks exit, run their set-up,
// and wait (griddepcontrol.wait) for it to complete before they touch global memory. Used by the
// split-K pass after its product and by the SM90 CUTLASS kernels whose loading warps wait
// (CutlassSm90Gemm::kProgrammaticLaunch). PYCUTLASS_GEMM_PDL=0 launches them all plainly; read once.
bool programmatic_launch_allowed();

// How many bytes from `ptr` a kernel may read, where its operand spans the first `used` of them: up to the end of
// the mapping that holds ptr (the cudaMalloc allocation, or with CUDA's virtual memory API the mapped piece:
// cuPointerGetAttributes' MAPPING_BASE_ADDR and MAPPING_SIZE), or `used` where that is unknown (no driver, a
// null pointer, host memory) or shorter. The SM90 TMA kernels read the rows past an operand's last from there
// rather than have TMA fill them (CutlassSm90Gemm::tma_rows). PYCUTLASS_GEMM_READ_PAST_EDGE=0 keeps every operand
// to its own bytes (TMA fills the rows past the edge); read once.
int64_t readable_bytes(const void* ptr, int64_t used);

}  // namespace pycutlass_gemm
