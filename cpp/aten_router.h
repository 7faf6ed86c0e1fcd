// enable()'s kernels for aten::mm and aten::bmm, in C++.
//
// routing.py registers the package at torch's ADInplaceOrView dispatch key (below autograd, above
// the CUDA kernels) with Python kernels: every routed product then pays the dispatcher's call into
// Python and the package's Python (~20 us a call on the H100 host, as much as torch's whole mm),
// and a model's backward is made of aten::mm calls. The kernels here are registered at the same
// key through torch's stable C ABI -- the aoti_torch_* C functions libtorch exports for extensions
// that must not be tied to one torch build -- found at run time with dlsym: _C still neither
// includes nor links libtorch, and on a torch without them enable() keeps its Python kernels.
//
// Scope: the functional aten::mm and aten::bmm, of bfloat16 and float16 and, where enable() routes
// it, float32 (precision: set_float32_precision's, else torch's TF32 switch). addmm / baddbmm take
// Scalar arguments, which the stable ABI's boxing does not convert, and out= forms resize their
// output: those keep the Python kernels (routing.py).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace pycutlass_gemm::aten_router {

// Looks the functions up in the torch libraries already loaded by `import torch` (their paths:
// libtorch_cpu, libc10, and libtorch_cuda where torch has CUDA); `ad_inplace_or_view_key` is
// torch._C.DispatchKey.ADInplaceOrView's value. "" when the C++ kernels can be registered, else
// why not. Once per process; later calls return the first answer.
std::string load(const std::vector<std::string>& library_paths, int ad_inplace_or_view_key);

// The kernels are registered while enable() routes (route_all) or, once the package's own
// autograd has used them (keep_registered), for the rest of the process; load() must have
// returned "". Registered but not routing, they hand every call on unless the calling thread
// asked for it (take_products_here): a cost of ~0.4 us a torch.mm, nothing else.
//
// route_all: enable() on or off; `float32`: float32 products too (can_take_float32() must hold).
void route_all(bool on, bool float32);
bool routes_all();
void keep_registered();
bool registered();
// This thread's products are the package's until called with -1: pycutlass_gemm.matmul's forward
// (torch's autograd records aten::mm, the package computes it) and, through hooks on the node
// recorded, its backward. `precision` (a Precision value) is what float32 products run as.
void take_products_here(int precision);
// Whether this torch exports the TF32 switch the float32 products follow.
bool can_take_float32();
// set_float32_precision's choice as a Precision value; -1: none (torch's switch decides).
void set_float32_precision(int precision);

// Products the C++ kernels ran on the package, and those they handed on to torch (other devices,
// dtypes, a dispatch mode active, problems only the fallback kernel could run).
struct Counts {
  uint64_t launched = 0, handed_on = 0;
};
Counts counts();

}  // namespace pycutlass_gemm::aten_router
