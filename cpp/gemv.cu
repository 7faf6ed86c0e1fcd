// Matrix-vector products: D = alpha * A @ B + beta * C with M or N of 1 (one token through a
// weight, a gradient's single column, a dot product), any dtype, stride and alignment. A tiled
// GEMM pads the vector's side to its tile and multiplies the padding: session 42's survey (H200)
// ran its 652 matrix-vector problems at 0.56x torch.matmul (fp32 on SIMT 128x128 tiles 0.36x,
// 65536 x 1 x 4096 1.45 ms against 0.27). Here W is streamed once, multiplying only what is there:
// a memory-bound product at the speed of its reads.
//
// The product seen as out[l] = sum_k W[l][k] x[k], l < L: for N = 1, W = A (L = M) and x = B's
// column; for M = 1, W = B^T (L = N) and x = A's row. Two ways to read W, by the stride that is
// smaller (coalesced loads, whatever the layout):
//  - along K (a row-major A, a column-major B): a group of lanes sums one row -- a warp, or fewer
//    lanes where K is short (65536 x 1 x 15 ran a warp a row of one word at 0.28x torch) -- reading
//    16-byte words of the row from its first 16-byte boundary on (a row of odd length is read in
//    words too) and x in words where its elements are aligned as the row's, then shuffles;
//  - along L (a column-major A, a row-major B): a lane sums R consecutive rows (one 8-byte word of
//    them where W's rows are contiguous and aligned), a block's lanes cover up to 32 R rows and its
//    threads split K into 8-256 interleaved phases added in shared memory: a short K over few rows
//    is that many chains of loads at once, not one (16 x 1 x 512 fp32 took 11.5 us against torch's
//    4.4). Blocks of 256 lanes across rows (one phase) ran 1 x 1024 x 64 bf16 at 17 us against 6.
// Where that leaves the SMs idle and the loads' chains long, K is split into slices whose sums go to
// an fp32 workspace (fp64 for fp64 inputs) and sum_split_k_partials adds them in slice order
// (deterministic) with the epilogue.
#include <algorithm>
#include <cstdint>
#include <stdexcept>

#include "registry.h"
#include "split_k_reduce.h"
#include "strided_gemm.cuh"

namespace pycutlass_gemm {
namespace {

constexpr int kWarps = 8;
constexpr int kThreads = 32 * kWarps;
constexpr int64_t kTargetWarpsPerSm = 32;  // loads in flight enough to stream HBM
constexpr int64_t kMinKAlongK = 512;       // a slice's K where a warp reads along K
constexpr int64_t kLoadsPerLane = 32;      // along L: a lane's loads of a slice before K is split across blocks
constexpr int64_t kSliceAlign = 64;        // slices start at multiples of 16 bytes' worth of any dtype
constexpr int kPriority = 111;             // see GemvKernel::priority

template <int kBytes> struct WordOf;
template <> struct WordOf<2> { using type = unsigned short; };
template <> struct WordOf<4> { using type = unsigned; };
template <> struct WordOf<8> { using type = uint2; };
template <> struct WordOf<16> { using type = uint4; };

// kCount elements of T read as one aligned word.
template <typename T, int kCount>
union Word {
  typename WordOf<kCount * sizeof(T)>::type v;
  T e[kCount];
};

// A load of one word from global memory that the compiler leaves where it is written (volatile asm, kept in order
// with the others): stream() issues a batch's loads before their sums, and plain loads of x were sunk next to their
// sums, each then waiting on L2 in turn (16 x 1 x 512 fp32 read along M 2.5x slower than with the loads together).
template <typename V> __device__ __forceinline__ V load_global(const void* p);
template <> __device__ __forceinline__ unsigned short load_global(const void* p) {
  unsigned short v;
  asm volatile("ld.global.u16 %0, [%1];" : "=h"(v) : "l"(p));
  return v;
}
template <> __device__ __forceinline__ unsigned load_global(const void* p) {
  unsigned v;
  asm volatile("ld.global.u32 %0, [%1];" : "=r"(v) : "l"(p));
  return v;
}
template <> __device__ __forceinline__ uint2 load_global(const void* p) {
  uint2 v;
  asm volatile("ld.global.v2.u32 {%0, %1}, [%2];" : "=r"(v.x), "=r"(v.y) : "l"(p));
  return v;
}
template <> __device__ __forceinline__ uint4 load_global(const void* p) {
  uint4 v;
  asm volatile("ld.global.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
  return v;
}

// kCount elements at p (aligned to their size together).
template <int kCount, typename T>
__device__ __forceinline__ Word<T, kCount> load_word(const T* p) {
  Word<T, kCount> u;
  u.v = load_global<typename WordOf<kCount * sizeof(T)>::type>(p);
  return u;
}

template <typename T>
struct GemvArgs {
  const T* __restrict__ w;  // W[l][k] at w + b * w_b + l * w_l + k * w_k
  const T* __restrict__ x;  // x[k] at x + b * x_b + k * x_k
  int64_t w_l, w_k, w_b, x_k, x_b;
  int64_t len, k, batch;
  int64_t slices, k_slice;  // K in `slices` slices of k_slice (the last one the rest)
  int64_t row_groups;       // along L: ceil(len / (lanes * R))
  int64_t items;            // along K: row groups of lanes with work, batch * len * slices
  int lanes;                // along K: lanes a row (power of 2, <= 32); along L: lanes across rows
  bool out_is_column;       // N = 1: out[l] is D(l, 0); M = 1: D(0, l)
  StridedMatrix<T> c, d;
  typename AccumulatorOf<T>::type alpha, beta;
  typename AccumulatorOf<T>::type* partials;  // slices > 1: slice s, batch b, row l at (s * batch + b) * len + l
};

template <typename T>
__device__ __forceinline__ void store_out(const GemvArgs<T>& g, int64_t s, int64_t b, int64_t l,
                                          typename AccumulatorOf<T>::type sum) {
  if (g.slices > 1)
    g.partials[(s * g.batch + b) * g.len + l] = sum;
  else if (g.out_is_column)
    store_epilogue(g.c, g.d, g.alpha, g.beta, b, l, 0, sum);
  else
    store_epilogue(g.c, g.d, g.alpha, g.beta, b, 0, l, sum);
}

// Calls add(load(k)) for k = k, k + step, ... below k1, the loads of kBatch steps issued before their sums, and
// returns the first k not taken. (A loop with a step known only at run time, unrolled by the compiler, checks its
// bound between steps: no load moves above the branch before it, so each waited on the one before -- 16-bit rows
// along M / N ran 2-5x slower than one load a step with a constant stride.)
template <int kBatch, typename Load, typename Add>
__device__ __forceinline__ int64_t stream(int64_t k, int64_t k1, int64_t step, Load load, Add add) {
  for (; k + (kBatch - 1) * step < k1; k += kBatch * step) {
    decltype(load(k)) v[kBatch];
#pragma unroll
    for (int i = 0; i < kBatch; ++i) v[i] = load(k + i * step);
#pragma unroll
    for (int i = 0; i < kBatch; ++i) add(v[i]);
  }
  for (; k < k1; k += step) add(load(k));
  return k;
}

template <typename T, int kCount>
struct Words {  // kCount elements of W and the x's they meet
  Word<T, kCount> w, x;
};

// Lanes `lane`, `lane` + lanes, ... of a row's group sum W[k] x[k] over k in [k0, k1), W read as kVec-element words
// (kVec > 1: W contiguous along K); the words start at w's first 16-byte boundary at or after k0.
template <typename T, int kVec>
__device__ __forceinline__ typename AccumulatorOf<T>::type row_sum(const T* w, const T* x, int64_t w_k, int64_t x_k,
                                                                   int64_t k0, int64_t k1, int lane, int lanes) {
  using Acc = typename AccumulatorOf<T>::type;
  Acc sum = 0;
  const auto add_pair = [&](Words<T, 1> v) { sum += to_acc<Acc>(v.w.e[0]) * to_acc<Acc>(v.x.e[0]); };
  const auto load_pair = [&](int64_t k) {
    Words<T, 1> v;
    v.w = load_word<1>(w + k * w_k), v.x = load_word<1>(x + k * x_k);
    return v;
  };
  if constexpr (kVec == 1) {
    stream<8>(k0 + lane, k1, lanes, load_pair, add_pair);
  } else {
    const int64_t head = min(k1 - k0, int64_t((16 - reinterpret_cast<uintptr_t>(w + k0) % 16) % 16 / sizeof(T)));
    stream<1>(k0 + lane, k0 + head, lanes, load_pair, add_pair);
    // Words wholly in range start below k1 - kVec + 1; the one lane whose next word straddles k1 reads it singly.
    const int64_t start = k0 + head + int64_t(lane) * kVec, end = k1 - kVec + 1, step = int64_t(lanes) * kVec;
    const auto add_words = [&](const Words<T, kVec>& v) {
#pragma unroll
      for (int e = 0; e < kVec; ++e) sum += to_acc<Acc>(v.w.e[e]) * to_acc<Acc>(v.x.e[e]);
    };
    int64_t k;
    if (x_k == 1 && reinterpret_cast<uintptr_t>(x + k0 + head) % 16 == 0) {  // x's words aligned as W's
      k = stream<4>(start, end, step, [&](int64_t k) {
        Words<T, kVec> v;
        v.w = load_word<kVec>(w + k), v.x = load_word<kVec>(x + k);
        return v;
      }, add_words);
    } else {
      k = stream<4>(start, end, step, [&](int64_t k) {
        Words<T, kVec> v;
        v.w = load_word<kVec>(w + k);
#pragma unroll
        for (int e = 0; e < kVec; ++e) v.x.e[e] = load_word<1>(x + (k + e) * x_k).e[0];
        return v;
      }, add_words);
    }
    stream<1>(k, min(k1, k + kVec), 1, load_pair, add_pair);
  }
  return sum;
}

// A group of g.lanes lanes (a warp, or a power-of-2 part of one) an item: one row, one slice of K.
template <typename T, int kVec>
__global__ void __launch_bounds__(kThreads) gemv_along_k_kernel(GemvArgs<T> g) {
  const int lanes = g.lanes;
  const int64_t thread = int64_t(blockIdx.x) * kThreads + threadIdx.x;
  const int64_t item = thread / lanes;
  const int lane = static_cast<int>(thread % lanes);
  if (item >= g.items) return;  // the whole group: groups never straddle a warp
  const unsigned group_mask =
      lanes == 32 ? 0xffffffffu : ((1u << lanes) - 1) << (threadIdx.x % 32 / lanes * lanes);
  const int64_t s = item % g.slices, row = item / g.slices, l = row % g.len, b = row / g.len;
  const int64_t k0 = s * g.k_slice, k1 = min(g.k, k0 + g.k_slice);
  auto sum = row_sum<T, kVec>(g.w + b * g.w_b + l * g.w_l, g.x + b * g.x_b, g.w_k, g.x_k, k0, k1, lane, lanes);
  for (int offset = lanes / 2; offset > 0; offset /= 2) sum += __shfl_xor_sync(group_mask, sum, offset);
  if (lane == 0) store_out(g, s, b, l, sum);
}

// A block an item: lanes x R rows, one slice of K; R > 1: W contiguous along L, each lane's rows one aligned word.
template <typename T, int R>
__global__ void __launch_bounds__(kThreads) gemv_along_l_kernel(GemvArgs<T> g) {
  using Acc = typename AccumulatorOf<T>::type;
  __shared__ Acc halves[kThreads / 2 * R];
  const int lanes = g.lanes, phases = kThreads / lanes, width = lanes * R;
  const int r = threadIdx.x % lanes, phase = threadIdx.x / lanes;
  const int64_t item = blockIdx.x;
  const int64_t s = item % g.slices, group = item / g.slices % g.row_groups, b = item / g.slices / g.row_groups;
  const int64_t l = (group * lanes + r) * R;
  const int64_t k0 = s * g.k_slice, k1 = min(g.k, k0 + g.k_slice);
  Acc sum[R] = {};
  if (l < g.len) {
    const T* w = g.w + b * g.w_b + l * g.w_l;
    const T* x = g.x + b * g.x_b;
    const auto load = [&](int64_t k) {
      Words<T, R> v;  // R rows' elements at k, and x[k] (once)
      v.w = load_word<R>(w + k * g.w_k);
      v.x.e[0] = load_word<1>(x + k * g.x_k).e[0];
      return v;
    };
    stream<8>(k0 + phase, k1, phases, load, [&](const Words<T, R>& v) {
#pragma unroll
      for (int e = 0; e < R; ++e) sum[e] += to_acc<Acc>(v.w.e[e]) * to_acc<Acc>(v.x.e[0]);
    });
  }
  // The phases' sums added pairwise in shared memory (a fixed order: deterministic), log2(phases) steps.
  for (int half = phases / 2; half > 0; half /= 2) {
    if (phase >= half && phase < 2 * half)
#pragma unroll
      for (int e = 0; e < R; ++e) halves[(phase - half) * width + r * R + e] = sum[e];
    __syncthreads();
    if (phase < half)
#pragma unroll
      for (int e = 0; e < R; ++e) sum[e] += halves[phase * width + r * R + e];
    __syncthreads();
  }
  if (phase == 0)
#pragma unroll
    for (int e = 0; e < R; ++e)
      if (l + e < g.len) store_out(g, s, b, l + e, sum[e]);
}

// Lanes for v words or rows: the power of 2 at least v, at most a warp.
int lanes_for(int64_t v) {
  int p = 1;
  while (p < v && p < 32) p *= 2;
  return p;
}

// How the product is read and split; the same for sizing the workspace and for running.
struct Shape {
  bool n_is_one;                 // W = A and x = B's column (out[l] is D(l, 0)); else W = B^T, x = A's row
  const MatrixRef *w, *x;
  int64_t w_l, w_k, x_k;         // strides, in elements, of W's rows, W along K and x along K
  bool along_k;                  // a lane group reads a row of W along K; else a lane reads R rows, a block 32 R
  int words_along_l;             // along L: R, rows a lane (one 8-byte word of them), else 1
  int lanes;                     // along K: lanes a row; along L: lanes across rows
  int64_t len, row_groups, slices, k_slice;
};

Shape shape_of(const GemmProblem& p) {
  Shape s{};
  s.n_is_one = p.n == 1;
  s.w = s.n_is_one ? &p.a : &p.b;
  s.x = s.n_is_one ? &p.b : &p.a;
  s.w_l = s.n_is_one ? p.a.row_stride : p.b.col_stride;
  s.w_k = s.n_is_one ? p.a.col_stride : p.b.row_stride;
  s.x_k = s.n_is_one ? p.b.row_stride : p.a.col_stride;
  s.len = s.n_is_one ? p.m : p.n;
  s.along_k = s.len == 1 || std::llabs(s.w_k) <= std::llabs(s.w_l);
  const int64_t sms = p.sm_count > 0 ? p.sm_count : 132;
  const int size = dtype_size(p.dtype);
  const auto split = [&](int64_t slices) {
    s.k_slice = (p.k + slices - 1) / slices;
    s.k_slice = (s.k_slice + kSliceAlign - 1) / kSliceAlign * kSliceAlign;
    s.slices = s.k_slice > 0 ? std::max<int64_t>(1, (p.k + s.k_slice - 1) / s.k_slice) : 1;  // no empty slice
  };
  if (s.along_k) {
    // A warp a row; K split across warps where they give the SMs fewer than half of kTargetWarpsPerSm each (a
    // split's reduction costs a few microseconds, as much as the loads half the warps would leave waiting).
    const int64_t warps = p.batch * s.len, target = sms * kTargetWarpsPerSm;
    split(2 * warps >= target ? 1 : std::min((target + warps - 1) / warps, std::max<int64_t>(1, p.k / kMinKAlongK)));
    // An unsplit short row: as many lanes as it has words (16 bytes where W is contiguous along K).
    const int64_t per_word = s.w_k == 1 ? 16 / size : 1;
    s.lanes = s.slices > 1 ? 32 : lanes_for((p.k + per_word - 1) / per_word);
    return s;
  }
  const auto aligned = [&](const void* ptr, int64_t elements, int r) {
    return reinterpret_cast<uintptr_t>(ptr) % (r * size) == 0 && elements % r == 0;
  };
  const int r = 8 / size;
  const bool words = r > 1 && s.w_l == 1 && s.len % r == 0 && aligned(s.w->ptr, s.w_k, r) &&
                     (p.batch == 1 || aligned(s.w->ptr, s.w->batch_stride, r));
  s.words_along_l = words ? r : 1;
  s.lanes = lanes_for((s.len + s.words_along_l - 1) / s.words_along_l);
  s.row_groups = (s.len + int64_t(s.lanes) * s.words_along_l - 1) / (int64_t(s.lanes) * s.words_along_l);
  // K split across blocks where their warps give the SMs fewer than half of kTargetWarpsPerSm each (as along K),
  // while a lane keeps at least kLoadsPerLane loads a slice. (Splitting only where the blocks were fewer than the
  // SMs left 16384 x 1 x 16384 fp32 with 16 warps an SM: 0.59x torch.)
  const int64_t blocks = p.batch * s.row_groups, target = sms * kTargetWarpsPerSm / kWarps;
  const int64_t per_lane = (p.k + kThreads / s.lanes - 1) / (kThreads / s.lanes);
  split(2 * blocks >= target || per_lane <= kLoadsPerLane
            ? 1
            : std::min((target + blocks - 1) / blocks, (per_lane + kLoadsPerLane - 1) / kLoadsPerLane));
  return s;
}

class GemvKernel final : public GemmKernel {
 public:
  explicit GemvKernel(DType dtype)
      : info_{"gemv", "gemv", dtype, Precision::Ieee, Layout::Strided, Layout::Strided, 80, 999,
              "along K a warp (fewer lanes for short rows) a row in 16-byte words; along M/N a lane R rows, K in "
              "phases a block; K split to fill the SMs", 1,
              kPriority} {}

  const KernelInfo& info() const override { return info_; }

  std::string can_implement(const GemmProblem& p) const override {
    std::string why = check_common(info_, p);
    if (!why.empty()) return why;
    if (p.m != 1 && p.n != 1)
      return "needs M or N of 1 (a matrix-vector product), problem is " + std::to_string(p.m) + " x " +
             std::to_string(p.n);
    return "";
  }

  // First wherever it runs (above every CUTLASS kernel's 110 at most), but for the 16-bit x @ W.T that small_mn
  // ranks itself first on: both rank 111 and small_mn is registered first, so the tie is its (registry.cpp).
  // H200, the 652 matrix-vector problems of session 42's survey, x torch.matmul (same run) over the 532 where auto
  // had run CUTLASS, SIMT, SM80 or fallback kernels: 0.572 those kernels; gemv 0.850 (session 43), 0.956 (session
  // 44: fewer lanes a short row, words from each row's first boundary, phases of K along M / N); over small_mn's
  // 120, small_mn 1.144 and gemv 1.123 (timed in different runs), so the tie stays small_mn's.
  int priority(const GemmProblem&) const override { return kPriority; }

  size_t workspace_size(const GemmProblem& p) const override {
    const Shape s = shape_of(p);
    if (s.slices == 1) return 0;
    return size_t(s.slices) * p.batch * s.len * (p.dtype == DType::F64 ? 8 : 4);
  }

  void run(const GemmProblem& p, void* workspace) const override {
    if (p.m == 0 || p.n == 0 || p.batch == 0) return;
    const Shape s = shape_of(p);
    if (s.slices > 1 && workspace == nullptr)
      throw std::runtime_error("gemv: split-K needs a workspace of workspace_size() bytes");
    const cudaStream_t stream = reinterpret_cast<cudaStream_t>(p.stream);
    dispatch_dtype(p.dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      using Acc = typename AccumulatorOf<T>::type;
      GemvArgs<T> g{};
      g.w = static_cast<const T*>(s.w->ptr);
      g.x = static_cast<const T*>(s.x->ptr);
      g.w_l = s.w_l, g.w_k = s.w_k, g.w_b = s.w->batch_stride;
      g.x_k = s.x_k, g.x_b = s.x->batch_stride;
      g.len = s.len, g.k = p.k, g.batch = p.batch;
      g.slices = s.slices, g.k_slice = s.k_slice, g.row_groups = s.row_groups, g.lanes = s.lanes;
      g.out_is_column = s.n_is_one;
      g.c = strided<T>(p.c), g.d = strided<T>(p.d);
      g.alpha = Acc(p.alpha), g.beta = Acc(p.beta);
      g.partials = static_cast<Acc*>(workspace);
      constexpr int kVec = 16 / sizeof(T), kRowsAWord = 8 / sizeof(T);
      if (s.along_k) {
        g.items = p.batch * s.len * s.slices;
        const unsigned blocks = static_cast<unsigned>((g.items * s.lanes + kThreads - 1) / kThreads);
        if (kVec > 1 && g.w_k == 1)
          gemv_along_k_kernel<T, kVec><<<blocks, kThreads, 0, stream>>>(g);
        else
          gemv_along_k_kernel<T, 1><<<blocks, kThreads, 0, stream>>>(g);
      } else {
        const unsigned blocks = static_cast<unsigned>(p.batch * s.row_groups * s.slices);
        if (s.words_along_l > 1)  // never for fp64, whose word is one element: both are <double, 1>
          gemv_along_l_kernel<T, kRowsAWord><<<blocks, kThreads, 0, stream>>>(g);
        else
          gemv_along_l_kernel<T, 1><<<blocks, kThreads, 0, stream>>>(g);
      }
      check_launch("gemv");
      if (s.slices > 1) sum_split_k_partials(p, static_cast<int>(s.slices), workspace);
    });
  }

 private:
  KernelInfo info_;
};

}  // namespace

void register_gemv_kernels(std::vector<const GemmKernel*>& out) {
  static const GemvKernel kernels[] = {GemvKernel(DType::F32), GemvKernel(DType::F16), GemvKernel(DType::BF16),
                                       GemvKernel(DType::F64)};
  for (const GemvKernel& k : kernels) out.push_back(&k);
}

}  // namespace pycutlass_gemm
