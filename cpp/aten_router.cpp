#include "aten_router.h"

#include <dlfcn.h>

#include <atomic>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <tuple>
#include <utility>

#include "gemm_problem.h"
#include "plan_cache.h"
#include "registry.h"
#include "torch_call.h"

namespace pycutlass_gemm::aten_router {
namespace {

// The stable ABI's types (torch/csrc/inductor/aoti_torch/c/shim.h), declared here: no torch header.
using AOTITorchError = int32_t;  // 0: success
using StableIValue = uint64_t;   // a tensor argument is its AtenTensorHandle, owned by the kernel
struct AtenTensorOpaque;
using AtenTensorHandle = AtenTensorOpaque*;
struct TorchLibraryOpaque;
using TorchLibraryHandle = TorchLibraryOpaque*;
using BoxedKernel = void (*)(StableIValue* stack, uint64_t num_args, uint64_t num_outputs);

struct Abi {
  // Stable C ABI (libtorch_cpu).
  AOTITorchError (*library_init_impl)(const char* ns, const char* key, const char* file, uint32_t line,
                                      TorchLibraryHandle* out);
  AOTITorchError (*library_impl)(TorchLibraryHandle, const char* name, BoxedKernel);
  AOTITorchError (*delete_library_object)(TorchLibraryHandle);
  AOTITorchError (*call_dispatcher)(const char* op, const char* overload, StableIValue* stack);
  AOTITorchError (*delete_tensor_object)(AtenTensorHandle);
  AOTITorchError (*get_data_ptr)(AtenTensorHandle, void**);
  AOTITorchError (*get_dim)(AtenTensorHandle, int64_t*);
  AOTITorchError (*get_sizes)(AtenTensorHandle, int64_t**);
  AOTITorchError (*get_strides)(AtenTensorHandle, int64_t**);
  AOTITorchError (*get_dtype)(AtenTensorHandle, int32_t*);
  AOTITorchError (*get_device_type)(AtenTensorHandle, int32_t*);
  AOTITorchError (*get_device_index)(AtenTensorHandle, int32_t*);
  AOTITorchError (*get_layout)(AtenTensorHandle, int32_t*) = nullptr;  // optional: without it, strided assumed
  AOTITorchError (*empty_strided)(int64_t ndim, const int64_t* sizes, const int64_t* strides, int32_t dtype,
                                  int32_t device_type, int32_t device_index, AtenTensorHandle* out);
  int32_t (*dtype_bfloat16)();
  int32_t (*dtype_float16)();
  int32_t (*dtype_float32)();
  int32_t (*dtype_uint8)();
  int32_t (*device_type_cuda)();
  int32_t (*layout_strided)() = nullptr;
  // Stable C ABI of libtorch_cuda: absent from a CPU-only torch, whose calls are all handed on.
  AOTITorchError (*current_cuda_stream)(int32_t device, void** stream) = nullptr;
  // The message of the exception an aoti_torch_* call turned into an error code (torch >= 2.12;
  // before, torch logs it).
  const char* (*exception_message)() = nullptr;
  // Plain C++ functions of libc10 / libtorch_cpu (not the stable ABI, but exported by every torch
  // 2.x, and taking only integers, so no torch build lays their arguments out differently):
  //  c10::impl::TorchDispatchModeTLS::any_modes_set -- a dispatch mode (FakeTensorMode while
  //  torch.compile traces, FlopCounterMode, ...) must see the call: hand it on;
  //  c10::impl::tls_{is,set}_dispatch_key_excluded -- handing on calls the operator again with this
  //  key excluded, what the Python kernels' redispatch below ADInplaceOrView does;
  //  at::globalContext / Context::deterministicAlgorithms -- torch.use_deterministic_algorithms
  //  (optional: without them every call plans as deterministic);
  //  Context::allowTF32CuBLAS -- torch's TF32 switch for matmul, which a float32 product follows
  //  when set_float32_precision has not decided (optional: without it float32 is not taken here).
  bool (*any_dispatch_modes)(bool skip_infra_modes) = nullptr;
  bool (*key_excluded)(uint16_t key) = nullptr;
  void (*set_key_excluded)(uint16_t key, bool excluded) = nullptr;
  void* (*global_context)() = nullptr;
  bool (*deterministic_algorithms)(const void* context) = nullptr;
  bool (*allow_tf32_cublas)(const void* context) = nullptr;

  int32_t bf16 = -1, f16 = -1, f32 = -1, u8 = -1, cuda = -1, strided = -1;
  uint16_t ad_inplace_or_view = 0;  // DispatchKey::ADInplaceOrView's value in this torch build
};

Abi abi;
std::mutex registration_mutex;
TorchLibraryHandle library = nullptr;  // the registration; deleting it restores torch's kernels
bool kept = false;                     // the package's own autograd uses the kernels: registered for good
std::atomic<bool> take_all{false};       // enable(): every product of a routed dtype
std::atomic<bool> takes_float32{false};  // enable() routes float32 too
// >= 0: this thread's products are the package's (pycutlass_gemm.matmul's forward, and its backward
// node between the hooks gemm.py sets), float32 ones at this Precision; -1: only take_all decides.
thread_local int take_here = -1;
std::atomic<int> float32_precision{-1};   // set_float32_precision's Precision; -1: torch's switch decides
std::atomic<uint64_t> launched{0}, handed_on{0};

// One tensor argument: the handle it owns and what the kernels read of it.
struct Operand {
  AtenTensorHandle handle = nullptr;
  int64_t dim = 0;
  int64_t* size = nullptr;
  int64_t* stride = nullptr;
  int32_t dtype = -1, device_type = -1, device_index = -1, layout = -1;

  explicit Operand(StableIValue v) : handle(reinterpret_cast<AtenTensorHandle>(v)) {
    abi.get_dtype(handle, &dtype);
    abi.get_device_type(handle, &device_type);
    abi.get_device_index(handle, &device_index);
    abi.get_dim(handle, &dim);
    if (abi.get_layout != nullptr) abi.get_layout(handle, &layout);
  }
  Operand(const Operand&) = delete;
  ~Operand() {
    if (handle != nullptr) abi.delete_tensor_object(handle);
  }
  // Sizes and strides of a strided tensor (a sparse one has no strides: handed on unread).
  bool read_shape() {
    return layout == abi.strided && abi.get_sizes(handle, &size) == 0 && abi.get_strides(handle, &stride) == 0;
  }
  StableIValue release() { return reinterpret_cast<StableIValue>(std::exchange(handle, nullptr)); }
};

// A tensor the kernel allocated, freed unless handed to torch as the result.
struct NewTensor {
  AtenTensorHandle handle = nullptr;
  void* ptr = nullptr;

  NewTensor(int64_t dim, const int64_t* size, const int64_t* stride, int32_t dtype, int32_t device) {
    if (abi.empty_strided(dim, size, stride, dtype, abi.cuda, device, &handle) != 0 ||
        abi.get_data_ptr(handle, &ptr) != 0)
      throw std::runtime_error("pycutlass_gemm.enable(): torch could not allocate a tensor on cuda:" +
                               std::to_string(device));
  }
  NewTensor(const NewTensor&) = delete;
  ~NewTensor() {
    if (handle != nullptr) abi.delete_tensor_object(handle);
  }
  StableIValue release() { return reinterpret_cast<StableIValue>(std::exchange(handle, nullptr)); }
};

std::string shape_text(const Operand& t) {
  std::string s;
  for (int64_t i = 0; i < t.dim; ++i) s += (i ? "x" : "") + std::to_string(t.size[i]);
  return s;
}

std::string dtype_text(int32_t dtype) {
  if (dtype == abi.f32) return "float";
  if (dtype == abi.f16) return "c10::Half";
  if (dtype == abi.bf16) return "c10::BFloat16";
  return "dtype " + std::to_string(dtype);
}

std::string device_text(const Operand& t) {
  if (t.device_type == abi.cuda) return "cuda:" + std::to_string(t.device_index);
  return t.device_type == 0 ? "cpu" : "device type " + std::to_string(t.device_type);  // 0: c10::DeviceType::CPU
}

// torch's own errors for operands it refuses (its words), raised here: handed on, an operator's
// exception comes back through the stable ABI as an error code (with its message only in torch
// >= 2.12, where hand_on re-raises it).
void check_like_torch(const Operand& a, const Operand& b, bool batched) {
  if (a.device_type != b.device_type || a.device_index != b.device_index)
    throw std::invalid_argument("Expected all tensors to be on the same device, but found at least two devices, " +
                                device_text(a) + " and " + device_text(b) + "!");
  if (batched) {
    if (a.dim != 3) throw std::invalid_argument("batch1 must be a 3D tensor");
    if (b.dim != 3) throw std::invalid_argument("batch2 must be a 3D tensor");
    if (b.size[0] != a.size[0] || b.size[1] != a.size[2])
      throw std::invalid_argument("Expected size for first two dimensions of batch2 tensor to be: [" +
                                  std::to_string(a.size[0]) + ", " + std::to_string(a.size[2]) + "] but got: [" +
                                  std::to_string(b.size[0]) + ", " + std::to_string(b.size[1]) + "].");
  } else {
    if (a.dim != 2) throw std::invalid_argument("self must be a matrix");
    if (b.dim != 2) throw std::invalid_argument("mat2 must be a matrix");
    if (a.size[1] != b.size[0])
      throw std::invalid_argument("mat1 and mat2 shapes cannot be multiplied (" + shape_text(a) + " and " +
                                  shape_text(b) + ")");
  }
  if (a.dtype != b.dtype)
    throw std::invalid_argument("expected mat1 and mat2 to have the same dtype, but got: " + dtype_text(a.dtype) +
                                " != " + dtype_text(b.dtype));
}

bool deterministic() {
  if (abi.global_context == nullptr || abi.deterministic_algorithms == nullptr) return true;
  return abi.deterministic_algorithms(abi.global_context());
}

// What a float32 product runs as: set_float32_precision's choice, else torch's TF32 switch, as
// launch.default_precision() decides for gemm (torch raises here, as its own mm would, when the
// legacy and the new TF32 settings disagree).
Precision float32_precision_now() {
  const int chosen = float32_precision.load();
  if (chosen >= 0) return static_cast<Precision>(chosen);
  return abi.allow_tf32_cublas(abi.global_context()) ? Precision::Tf32 : Precision::Ieee;
}

// The product on the package, or 0 where torch should compute it. Under enable() (here < 0) as
// routing.py's _gemm decides: CUDA tensors of a routed dtype, a problem some kernel other than
// the fallback runs. For the package's own calls (here >= 0: float32 at that Precision) any
// kernel, the fallback too, as gemm() would run. The operands passed check_like_torch: one
// device, one dtype.
StableIValue try_launch(const Operand& a, const Operand& b, bool batched, int here) {
  const bool routed_dtype =
      a.dtype == abi.bf16 || a.dtype == abi.f16 || (a.dtype == abi.f32 && (here >= 0 || takes_float32));
  if (abi.current_cuda_stream == nullptr || a.device_type != abi.cuda || !routed_dtype) return 0;
  void *a_ptr = nullptr, *b_ptr = nullptr;
  if (abi.get_data_ptr(a.handle, &a_ptr) != 0 || abi.get_data_ptr(b.handle, &b_ptr) != 0 || !a_ptr || !b_ptr)
    return 0;  // no storage (a tensor subclass) or empty: torch's
  const int device = a.device_index;
  const int64_t dim = batched ? 3 : 2;
  GemmProblem p;
  p.dtype = a.dtype == abi.bf16 ? DType::BF16 : a.dtype == abi.f16 ? DType::F16 : DType::F32;
  if (p.dtype == DType::F32) p.precision = here >= 0 ? static_cast<Precision>(here) : float32_precision_now();
  p.batch = batched ? a.size[0] : 1;
  p.m = a.size[dim - 2], p.n = b.size[dim - 1], p.k = a.size[dim - 1];
  if (is_empty(p)) return 0;
  p.a = matrix_of(a_ptr, p.batch, a.size, a.stride, static_cast<int>(dim));
  p.b = matrix_of(b_ptr, p.batch, b.size, b.stride, static_cast<int>(dim));
  p.d = MatrixRef{nullptr, p.m, p.n, p.n, 1, p.batch > 1 ? p.m * p.n : 0};  // row-major, like torch's
  p.c = p.d;
  p.deterministic = deterministic();
  std::tie(p.sm, p.sm_count) = device_props(device);
  p.device_name = device_name(device);
  // Autotuning needs Python (it times candidates on Python tensors): the plan as it stands runs.
  const std::shared_ptr<const CachedPlan> plan = cached_plan(p, "auto");
  if (plan->kernel == nullptr || (here < 0 && plan->kernel->info().family == "fallback")) return 0;

  const int64_t size[3] = {p.batch, p.m, p.n}, stride[3] = {p.m * p.n, p.n, 1};
  NewTensor out(dim, size + 3 - dim, stride + 3 - dim, a.dtype, device);
  p.d.ptr = out.ptr;
  p.c = p.d;
  void* stream = nullptr;
  if (abi.current_cuda_stream(device, &stream) != 0)
    throw std::runtime_error("pycutlass_gemm.enable(): torch's current stream of cuda:" + std::to_string(device) +
                             " could not be read");
  p.stream = reinterpret_cast<uintptr_t>(stream);
  // Workspace from torch's allocator, freed after the launch is enqueued: its reuse is stream-ordered.
  const int64_t bytes = static_cast<int64_t>(plan->workspace_bytes), one = 1;
  std::optional<NewTensor> workspace;
  if (bytes > 0) workspace.emplace(1, &bytes, &one, abi.u8, device);
  {
    DeviceGuard guard(device);
    plan->kernel->run(p, workspace ? workspace->ptr : nullptr);
  }
  return out.release();
}

// The call as torch would run it without the package: the operator called again with
// ADInplaceOrView excluded (below it: a dispatch mode, a subclass's __torch_dispatch__, the
// device's kernel). Takes the operands' handles; the result's is left in stack[0].
void hand_on(const char* op, StableIValue* stack, Operand& a, Operand& b) {
  ++handed_on;
  stack[0] = a.release();
  stack[1] = b.release();
  const bool was_excluded = abi.key_excluded(abi.ad_inplace_or_view);
  if (!was_excluded) abi.set_key_excluded(abi.ad_inplace_or_view, true);
  const AOTITorchError err = abi.call_dispatcher(op, "", stack);
  if (!was_excluded) abi.set_key_excluded(abi.ad_inplace_or_view, false);
  if (err != 0) {
    const char* message = abi.exception_message ? abi.exception_message() : nullptr;
    throw std::runtime_error(message ? std::string(message)
                                     : std::string(op) + " raised (torch logged its message above)");
  }
}

void route(StableIValue* stack, bool batched) {
  Operand a(stack[0]), b(stack[1]);
  const int here = take_here;
  // Shapes are read (and refused in torch's words) unless a dispatch mode may hold tensors
  // without concrete shapes (FakeTensorMode, symbolic shapes while torch.compile traces).
  const bool shaped = !abi.any_dispatch_modes(false) && a.read_shape() && b.read_shape();
  if (shaped) check_like_torch(a, b, batched);
  if (shaped && (here >= 0 || take_all.load(std::memory_order_relaxed))) {
    if (const StableIValue out = try_launch(a, b, batched, here)) {
      ++launched;
      stack[0] = out;
      return;
    }
  }
  hand_on(batched ? "aten::bmm" : "aten::mm", stack, a, b);
}

void mm_kernel(StableIValue* stack, uint64_t, uint64_t) { route(stack, false); }
void bmm_kernel(StableIValue* stack, uint64_t, uint64_t) { route(stack, true); }

template <class F>
bool find(void* library, const char* name, F& out) {
  out = reinterpret_cast<F>(dlsym(library, name));
  return out != nullptr;
}

}  // namespace

std::string load(const std::vector<std::string>& library_paths, int ad_inplace_or_view_key) {
  static std::once_flag once;
  static std::string answer;
  std::call_once(once, [&] {
    std::vector<void*> libraries;
    for (const std::string& path : library_paths)
      if (void* h = dlopen(path.c_str(), RTLD_NOLOAD | RTLD_LAZY)) libraries.push_back(h);
    auto look_up = [&](const char* name, auto& out) {
      for (void* h : libraries)
        if (find(h, name, out)) return true;
      return false;
    };
    std::string missing;
    auto need = [&](const char* name, auto& out) {
      if (!look_up(name, out)) missing += std::string(missing.empty() ? "" : ", ") + name;
    };
    need("aoti_torch_library_init_impl", abi.library_init_impl);
    need("aoti_torch_library_impl", abi.library_impl);
    need("aoti_torch_delete_library_object", abi.delete_library_object);
    need("aoti_torch_call_dispatcher", abi.call_dispatcher);
    need("aoti_torch_delete_tensor_object", abi.delete_tensor_object);
    need("aoti_torch_get_data_ptr", abi.get_data_ptr);
    need("aoti_torch_get_dim", abi.get_dim);
    need("aoti_torch_get_sizes", abi.get_sizes);
    need("aoti_torch_get_strides", abi.get_strides);
    need("aoti_torch_get_dtype", abi.get_dtype);
    need("aoti_torch_get_device_type", abi.get_device_type);
    need("aoti_torch_get_device_index", abi.get_device_index);
    if (look_up("aoti_torch_layout_strided", abi.layout_strided)) look_up("aoti_torch_get_layout", abi.get_layout);
    need("aoti_torch_empty_strided", abi.empty_strided);
    need("aoti_torch_dtype_bfloat16", abi.dtype_bfloat16);
    need("aoti_torch_dtype_float16", abi.dtype_float16);
    need("aoti_torch_dtype_float32", abi.dtype_float32);
    need("aoti_torch_dtype_uint8", abi.dtype_uint8);
    need("aoti_torch_device_type_cuda", abi.device_type_cuda);
    need("_ZN3c104impl20TorchDispatchModeTLS13any_modes_setEb", abi.any_dispatch_modes);
    need("_ZN3c104impl28tls_is_dispatch_key_excludedENS_11DispatchKeyE", abi.key_excluded);
    need("_ZN3c104impl29tls_set_dispatch_key_excludedENS_11DispatchKeyEb", abi.set_key_excluded);
    look_up("aoti_torch_get_current_cuda_stream", abi.current_cuda_stream);
    look_up("torch_exception_get_what_without_backtrace", abi.exception_message);
    look_up("_ZN2at13globalContextEv", abi.global_context);
    look_up("_ZNK2at7Context23deterministicAlgorithmsEv", abi.deterministic_algorithms);
    if (abi.global_context != nullptr) look_up("_ZNK2at7Context15allowTF32CuBLASEv", abi.allow_tf32_cublas);
    if (ad_inplace_or_view_key <= 0) missing += std::string(missing.empty() ? "" : ", ") + "DispatchKey.ADInplaceOrView";
    if (!missing.empty()) {
      answer = "torch does not export " + missing;
      return;
    }
    abi.bf16 = abi.dtype_bfloat16(), abi.f16 = abi.dtype_float16(), abi.f32 = abi.dtype_float32();
    abi.u8 = abi.dtype_uint8();
    abi.cuda = abi.device_type_cuda();
    // Without the layout getter every tensor reads as layout -1, which then counts as strided.
    if (abi.get_layout != nullptr) abi.strided = abi.layout_strided();
    abi.ad_inplace_or_view = static_cast<uint16_t>(ad_inplace_or_view_key);
  });
  return answer;
}

bool can_take_float32() { return abi.allow_tf32_cublas != nullptr; }

void set_float32_precision(int precision) { float32_precision = precision; }

namespace {

// Registered while enable() routes or for good once kept (registration_mutex held).
void update_registration() {
  const bool want = take_all || kept;
  if (want == (library != nullptr)) return;
  if (!want) {
    abi.delete_library_object(library);
    library = nullptr;
    return;
  }
  TorchLibraryHandle lib = nullptr;
  if (abi.library_init_impl("aten", "ADInplaceOrView", __FILE__, __LINE__, &lib) != 0 ||
      abi.library_impl(lib, "mm", &mm_kernel) != 0 || abi.library_impl(lib, "bmm", &bmm_kernel) != 0) {
    if (lib != nullptr) abi.delete_library_object(lib);
    throw std::runtime_error("pycutlass_gemm: torch refused the C++ kernels of aten::mm / aten::bmm");
  }
  library = lib;
}

}  // namespace

void route_all(bool on, bool float32) {
  std::lock_guard lock(registration_mutex);
  if (float32 && !can_take_float32())
    throw std::invalid_argument("pycutlass_gemm.enable(): this torch does not export its TF32 switch to C++");
  takes_float32 = float32;
  take_all = on;
  update_registration();
}

bool routes_all() { return take_all; }

void keep_registered() {
  std::lock_guard lock(registration_mutex);
  kept = true;
  update_registration();
}

void take_products_here(int precision) { take_here = precision; }

bool registered() {
  std::lock_guard lock(registration_mutex);
  return library != nullptr;
}

Counts counts() { return {launched.load(), handed_on.load()}; }

}  // namespace pycutlass_gemm::aten_router
