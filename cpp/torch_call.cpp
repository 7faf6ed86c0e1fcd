#include "torch_call.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>

namespace pycutlass_gemm {
namespace {

// Never destroyed: launches may race interpreter shutdown, and torch outlives nothing of ours.
struct TorchObjects {
  py::handle tensor_type, f32, f16, bf16, f64, u8, raw_stream;
  py::handle shape, stride, dtype, is_cuda, is_meta, get_device, data_ptr, new_empty, new_empty_strided,
      device;  // attribute names
};
TorchObjects* torch_objects = nullptr;

const TorchObjects& torch_() {
  if (torch_objects == nullptr) throw std::runtime_error("pycutlass_gemm._C: bind_torch() was not called");
  return *torch_objects;
}

py::handle keep(py::handle h) { return h.inc_ref(); }
py::handle interned(const char* name) { return py::str(name).release(); }

// A tensor as far as the checks need it.
struct Tensor {
  py::handle obj;
  int dim = 0;
  int64_t size[4] = {0, 0, 0, 0}, stride[4] = {0, 0, 0, 0};
  py::handle dtype;
  bool cuda = false, meta = false;
  int index = -1;
  uintptr_t ptr = 0;

  int64_t numel() const {
    int64_t n = 1;
    for (int i = 0; i < dim; ++i) n *= size[i];
    return n;
  }
};

uintptr_t data_ptr(py::handle t) { return t.attr(torch_().data_ptr)().cast<uintptr_t>(); }

std::string shape_str(const int64_t* s, int dim) {
  std::string out = "(";
  for (int i = 0; i < dim; ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + (dim == 1 ? ",)" : ")");
}
std::string shape_str(const Tensor& t) { return shape_str(t.size, t.dim); }
std::string shape_str(const std::vector<int64_t>& s) { return shape_str(s.data(), static_cast<int>(s.size())); }
std::string str(py::handle h) { return py::str(h).cast<std::string>(); }
std::string device_str(const Tensor& t) { return str(t.obj.attr(torch_().device)); }

// Reads `obj` (named `what` in messages) if it is a tensor of one of `min_dim`..`max_dim` dims.
Tensor read_tensor(py::handle obj, const char* what, int min_dim, int max_dim, bool read_ptr, const char* dims_text) {
  const TorchObjects& t = torch_();
  const int is_tensor = PyObject_IsInstance(obj.ptr(), t.tensor_type.ptr());
  if (is_tensor < 0) throw py::error_already_set();
  if (!is_tensor)
    throw py::type_error(std::string(what) + " must be a torch.Tensor, got " + Py_TYPE(obj.ptr())->tp_name);
  Tensor out;
  out.obj = obj;
  py::tuple shape = py::reinterpret_steal<py::tuple>(PySequence_Tuple(obj.attr(t.shape).ptr()));
  if (!shape) throw py::error_already_set();
  const auto dim = static_cast<int>(shape.size());
  int64_t sizes[16];
  for (int i = 0; i < std::min(dim, 16); ++i) sizes[i] = shape[i].cast<int64_t>();
  if (dim < min_dim || dim > max_dim)
    throw py::value_error(std::string(what) + " must be " + dims_text + ", got " + std::to_string(dim) +
                          "-D with shape " + shape_str(sizes, std::min(dim, 16)));
  out.dim = dim;
  py::tuple strides = obj.attr(t.stride)();
  for (int i = 0; i < dim; ++i) {
    out.size[i] = sizes[i];
    out.stride[i] = strides[i].cast<int64_t>();
  }
  out.dtype = obj.attr(t.dtype);  // a borrowed reference: torch's dtype objects are immortal singletons
  out.cuda = obj.attr(t.is_cuda).cast<bool>();
  if (out.cuda) out.index = obj.attr(t.get_device)().cast<int>();
  else out.meta = obj.attr(t.is_meta).cast<bool>();
  if (read_ptr && !out.meta) out.ptr = data_ptr(obj);
  return out;
}

// `t` as .mT would view it: its last two dimensions swapped.
Tensor transposed(Tensor t) {
  std::swap(t.size[t.dim - 2], t.size[t.dim - 1]);
  std::swap(t.stride[t.dim - 2], t.stride[t.dim - 1]);
  return t;
}
MatrixRef transposed(MatrixRef r) {
  std::swap(r.rows, r.cols);
  std::swap(r.row_stride, r.col_stride);
  return r;
}

bool same_device(const Tensor& x, const Tensor& y) {
  if (x.cuda || y.cuda) return x.cuda == y.cuda && x.index == y.index;
  if (x.meta || y.meta) return x.meta == y.meta;
  return device_str(x) == device_str(y);
}

int dtype_code(py::handle dtype, DType* out) {
  const TorchObjects& t = torch_();
  if (dtype.is(t.f32)) return *out = DType::F32, 1;
  if (dtype.is(t.f16)) return *out = DType::F16, 1;
  if (dtype.is(t.bf16)) return *out = DType::BF16, 1;
  if (dtype.is(t.f64)) return *out = DType::F64, 1;
  return 0;
}

// The tensor's matrix (matrix_of); `size` / `stride` / `dim` where it is read broadcast.
MatrixRef matrix(const Tensor& t, int64_t batch, const int64_t* size, const int64_t* stride, int dim) {
  return matrix_of(reinterpret_cast<const void*>(t.ptr), batch, size, stride, dim);
}
MatrixRef matrix(const Tensor& t, int64_t batch) { return matrix(t, batch, t.size, t.stride, t.dim); }

// [first, last) bytes a view can touch; empty views touch none.
std::pair<uintptr_t, uintptr_t> byte_span(const Tensor& t, int elem) {
  int64_t last = 0;
  for (int i = 0; i < t.dim; ++i) last += (t.size[i] - 1) * t.stride[i];
  return {t.ptr, t.ptr + static_cast<uintptr_t>((last + 1) * elem)};
}

bool overlaps(const Tensor& x, const Tensor& y, int elem) {
  if (x.ptr == 0 || y.ptr == 0 || x.numel() == 0 || y.numel() == 0 || !same_device(x, y))
    return false;  // without pointers (meta, fake) nothing can be said
  const auto [x0, x1] = byte_span(x, elem);
  const auto [y0, y1] = byte_span(y, elem);
  return x0 < y1 && y0 < x1;
}

void check_out(const Tensor& out, const Tensor& a, const Tensor& b, const std::vector<int64_t>& shape, int elem) {
  const bool shape_ok = out.dim == static_cast<int>(shape.size()) && std::equal(shape.begin(), shape.end(), out.size);
  if (!shape_ok) throw py::value_error("out must have shape " + shape_str(shape) + ", got " + shape_str(out));
  if (!out.dtype.is(a.dtype)) throw py::type_error("out must have dtype " + str(a.dtype) + ", got " + str(out.dtype));
  if (!same_device(out, a)) throw py::value_error("out must be on " + device_str(a) + ", got " + device_str(out));
  const int64_t m = shape[shape.size() - 2], n = shape.back();
  const int d = out.dim;
  if (MatrixRef{nullptr, m, n, out.stride[d - 2], out.stride[d - 1], 0}.layout() == Layout::Strided) {
    std::string strides = shape_str(out.stride, d);
    throw py::value_error("out must be row- or column-major without overlapping elements, got strides " + strides);
  }
  if (d == 3 && out.size[0] > 1 && m * n > 0) {
    const int64_t matrix_span = (m - 1) * out.stride[1] + (n - 1) * out.stride[2] + 1;
    if (out.stride[0] < matrix_span)
      throw py::value_error("out's batches overlap in memory (strides " + shape_str(out.stride, d) + ")");
  }
  if (overlaps(out, a, elem)) throw py::value_error("out overlaps a in memory; the result would overwrite its own input");
  if (overlaps(out, b, elem)) throw py::value_error("out overlaps b in memory; the result would overwrite its own input");
}

// c broadcast (as strides, no copy) to the output's shape, written into `size`/`stride`.
void check_c(const Tensor& c, const Tensor& a, const Tensor* out, const std::vector<int64_t>& shape, int elem,
             int64_t* size, int64_t* stride) {
  if (!c.dtype.is(a.dtype)) throw py::type_error("c must have dtype " + str(a.dtype) + ", got " + str(c.dtype));
  if (!same_device(c, a)) throw py::value_error("c must be on " + device_str(a) + ", got " + device_str(c));
  const int dim = static_cast<int>(shape.size());
  bool ok = c.dim <= dim;
  for (int i = 0; ok && i < dim; ++i) {
    const int ci = c.dim - dim + i;  // the dimension of c aligned with output dimension i
    size[i] = shape[i];
    if (ci < 0) {
      stride[i] = 0;
    } else if (c.size[ci] == shape[i]) {
      stride[i] = c.stride[ci];
    } else if (c.size[ci] == 1) {
      stride[i] = 0;
    } else {
      ok = false;
    }
  }
  if (!ok)
    throw py::value_error("c of shape " + shape_str(c) + " does not broadcast to the output shape " + shape_str(shape));
  // D may be C itself (in place, as addmm_), but not a different view of its memory.
  if (out != nullptr && overlaps(*out, c, elem) &&
      !(out->ptr == c.ptr && std::equal(stride, stride + dim, out->stride)))
    throw py::value_error("out overlaps c in memory without being c itself");
}

}  // namespace

void bind_torch(py::handle tensor_type, py::handle float32, py::handle float16, py::handle bfloat16,
                py::handle float64, py::handle uint8, py::handle current_raw_stream) {
  if (torch_objects != nullptr) return;
  torch_objects = new TorchObjects{keep(tensor_type), keep(float32), keep(float16), keep(bfloat16), keep(float64),
                                   keep(uint8), keep(current_raw_stream),
                                   interned("shape"), interned("stride"), interned("dtype"), interned("is_cuda"),
                                   interned("is_meta"), interned("get_device"), interned("data_ptr"),
                                   interned("new_empty"), interned("new_empty_strided"), interned("device")};
}

namespace {

// What the driver says of one CUDA device, read once per device (a call reads it on every launch).
struct DeviceInfo {
  int sm = 0, sm_count = 0;  // {0, 0}: no such device, or no driver
  char name[256] = {};
};

const DeviceInfo* device_info(int index) {
  constexpr int kMaxDevices = 64;
  static std::once_flag once[kMaxDevices];
  static DeviceInfo infos[kMaxDevices];
  if (index < 0 || index >= kMaxDevices) return nullptr;
  std::call_once(once[index], [index] {
    cudaDeviceProp props;
    if (cudaGetDeviceProperties(&props, index) == cudaSuccess) {
      infos[index].sm = props.major * 10 + props.minor;
      infos[index].sm_count = props.multiProcessorCount;
      std::snprintf(infos[index].name, sizeof infos[index].name, "%s", props.name);
    } else {
      cudaGetLastError();  // no device or no driver: clear the error, report none
    }
  });
  return &infos[index];
}

}  // namespace

std::pair<int, int> device_props(int index) {
  const DeviceInfo* info = device_info(index);
  return info ? std::pair{info->sm, info->sm_count} : std::pair{0, 0};
}

const char* device_name(int index) {
  const DeviceInfo* info = device_info(index);
  return info && info->name[0] ? info->name : nullptr;
}

uintptr_t current_stream(int device) { return torch_().raw_stream(device).cast<uintptr_t>(); }

namespace {

py::object new_workspace(py::handle a, size_t bytes) {
  return a.attr(torch_().new_empty)(py::make_tuple(bytes), py::arg("dtype") = torch_().u8);
}

struct Workspace {
  py::object tensor;
  size_t bytes = 0;
};

}  // namespace

std::pair<py::object, void*> workspace_for(py::handle a, int device, uintptr_t stream, size_t bytes) {
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(reinterpret_cast<cudaStream_t>(stream), &capture) != cudaSuccess) {
    cudaGetLastError();
    capture = cudaStreamCaptureStatusActive;  // unknown: take the safe way
  }
  static const bool reuse = [] {
    const char* env = std::getenv("PYCUTLASS_GEMM_WORKSPACE_CACHE");
    return env == nullptr || std::string(env) != "0";
  }();
  if (capture != cudaStreamCaptureStatusNone || !reuse) {
    py::object fresh = new_workspace(a, bytes);
    return {fresh, reinterpret_cast<void*>(data_ptr(fresh))};
  }
  // Guarded by the GIL (every caller holds it); never destroyed, like the torch objects.
  static auto* cache = new std::map<std::pair<int, uintptr_t>, Workspace>();
  Workspace& slot = (*cache)[{device, stream}];
  if (slot.bytes < bytes) {
    // Allocated before the slot changes: torch releases the GIL while it allocates, and another
    // thread may then read the slot (the old, smaller tensor stays whole until it is replaced).
    const size_t grown = std::max(bytes, 2 * slot.bytes);
    py::object fresh = new_workspace(a, grown);
    if (slot.bytes < grown) slot = Workspace{std::move(fresh), grown};  // else another thread grew it meanwhile
  }
  return {slot.tensor, reinterpret_cast<void*>(data_ptr(slot.tensor))};
}

TorchCall read_call(py::handle a_obj, py::handle b_obj, py::handle c_obj, py::handle out_obj, double alpha,
                    double beta, Precision precision, bool deterministic, Mode mode, int arch, ReadAs as) {
  const bool read_ptr = mode != Mode::Trace;
  Tensor a = read_tensor(a_obj, "a", 2, 3, read_ptr, "2-D or 3-D");
  Tensor b = read_tensor(b_obj, "b", 2, 3, read_ptr, "2-D or 3-D");
  if (as.transpose_a) a = transposed(a);
  if (as.transpose_b) b = transposed(b);
  if (!a.dtype.is(b.dtype))
    throw py::type_error("a and b must have the same dtype, got " + str(a.dtype) + " and " + str(b.dtype));
  TorchCall call;
  GemmProblem& p = call.problem;
  if (!dtype_code(a.dtype, &p.dtype))
    throw py::type_error("unsupported dtype " + str(a.dtype) + "; supported: float32, float16, bfloat16, float64");
  if (a.size[a.dim - 1] != b.size[b.dim - 2])
    throw py::value_error("inner dimensions disagree: a is " + shape_str(a) + ", b is " + shape_str(b));
  if (!same_device(a, b))
    throw py::value_error("a and b must be on the same device, got " + device_str(a) + " and " + device_str(b));

  // Batch: the largest leading size of the 3-D operands; each must be 1 or that.
  int64_t batch = 1;
  const bool batched = a.dim == 3 || b.dim == 3;
  if (batched) {
    batch = std::max(a.dim == 3 ? a.size[0] : 0, b.dim == 3 ? b.size[0] : 0);
    for (const Tensor* t : {&a, &b})
      if (t->dim == 3 && t->size[0] != 1 && t->size[0] != batch)
        throw py::value_error("batch sizes disagree: a is " + shape_str(a) + ", b is " + shape_str(b));
  }
  p.m = a.size[a.dim - 2], p.n = b.size[b.dim - 1], p.k = a.size[a.dim - 1], p.batch = batch;
  call.out_shape = batched ? std::vector<int64_t>{batch, p.m, p.n} : std::vector<int64_t>{p.m, p.n};
  p.a = matrix(a, batch);
  p.b = matrix(b, batch);
  if (as.column_major_out) {
    // Kernels write D row-major: a column-major D is computed as its row-major transpose,
    // D^T = B^T A^T, into the memory new_output allocates column-major.
    if (!c_obj.is_none() || !out_obj.is_none()) throw std::invalid_argument("ReadAs::column_major_out takes no c or out");
    call.column_major_out = true;
    std::swap(p.m, p.n);
    const MatrixRef a_ref = p.a;
    p.a = transposed(p.b);
    p.b = transposed(a_ref);
  }
  p.precision = p.dtype == DType::F32 ? precision : Precision::Ieee;
  p.alpha = alpha;
  // Without c and out, nothing holds a C to scale: beta is ignored (D is new memory). With out and
  // no c, C is out's own contents (D = alpha * A @ B + beta * D).
  p.beta = c_obj.is_none() && out_obj.is_none() ? 0.0 : beta;
  p.deterministic = deterministic;
  call.device = a.cuda ? a.index : -1;
  if (a.cuda) {
    std::tie(p.sm, p.sm_count) = device_props(a.index);
    p.device_name = device_name(a.index);
  } else if (arch > 0) {
    p.sm = arch, p.sm_count = 132;  // the GPU the package is built for: H100 SXM / H200
  } else {
    int current = 0;
    const bool has_device = cudaGetDevice(&current) == cudaSuccess;
    std::tie(p.sm, p.sm_count) = has_device ? device_props(current) : std::pair{0, 0};
    if (has_device && p.sm != 0) p.device_name = device_name(current);
    cudaGetLastError();
    if (p.sm == 0) p.sm = 90, p.sm_count = 132;
  }

  const int elem = dtype_size(p.dtype);
  Tensor out;
  const bool has_out = !out_obj.is_none();
  if (has_out) {
    out = read_tensor(out_obj, "out", 2, 3, read_ptr, "2-D or 3-D");
    check_out(out, a, b, call.out_shape, elem);
    p.d = matrix(out, batch);
  } else {  // what new_output allocates: row-major, 256-byte aligned by torch's allocator
    p.d = MatrixRef{nullptr, p.m, p.n, p.n, 1, batch > 1 ? p.m * p.n : 0};
  }
  if (!c_obj.is_none()) {
    const Tensor c = read_tensor(c_obj, "c", 0, 3, read_ptr, "at most 3-D");
    int64_t size[3], stride[3];
    check_c(c, a, has_out ? &out : nullptr, call.out_shape, elem, size, stride);
    p.c = matrix(c, batch, size, stride, static_cast<int>(call.out_shape.size()));
  } else {
    p.c = p.d;
  }
  const bool on_gpu = mode == Mode::Run ? a.cuda : (a.cuda || a.meta);
  if (mode != Mode::Plan && !on_gpu)
    throw py::value_error("pycutlass_gemm needs CUDA tensors; a and b are on " + device_str(a));
  return call;
}

py::object new_output(TorchCall& call, py::handle a, bool has_c) {
  GemmProblem& p = call.problem;
  const size_t dim = call.out_shape.size();
  py::tuple shape(dim);
  for (size_t i = 0; i < dim; ++i) shape[i] = call.out_shape[i];
  py::object out;
  if (call.column_major_out) {  // the memory of the row-major D^T the problem computes
    py::tuple strides(dim);
    if (dim == 3) strides[0] = p.m * p.n;
    strides[dim - 2] = 1, strides[dim - 1] = call.out_shape[dim - 2];
    out = a.attr(torch_().new_empty_strided)(shape, strides);
  } else {
    out = a.attr(torch_().new_empty)(shape);
  }
  p.d.ptr = reinterpret_cast<const void*>(data_ptr(out));
  if (!has_c) p.c = p.d;
  return out;
}

}  // namespace pycutlass_gemm
