// One call's torch tensors, read and checked without libtorch: through the Python attributes
// every torch.Tensor has (shape, stride(), dtype, is_cuda, data_ptr()), in C++, so the per-call
// checks cost what the attribute reads cost and no pybind objects are built.
//
// The same checks serve three callers, so a traced call raises what the real one raises:
//  - Mode::Run:   a real call; CUDA tensors required, pointers read.
//  - Mode::Trace: the op's fake implementation (torch.compile, meta tensors): no pointers;
//                 CUDA or meta tensors.
//  - Mode::Plan:  plan() / can_run(): any device; tensors off the GPU are planned for `arch`.
#pragma once

#include <cuda_runtime.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <vector>

#include "gemm_problem.h"

namespace pycutlass_gemm {

namespace py = pybind11;

// The torch objects the checks compare against and call, handed over once at import.
void bind_torch(py::handle tensor_type, py::handle float32, py::handle float16, py::handle bfloat16,
                py::handle float64, py::handle uint8, py::handle current_raw_stream);

enum class Mode { Run, Trace, Plan };

// How the backward of a product reads its operands: one of them transposed (its last two
// dimensions swapped, as .mT views it, without making the view: grad @ B^T and A^T @ grad), and
// the output it allocates column-major (a gradient laid out like its operand, as torch's mm
// backward lays it out, so AccumulateGrad keeps it without a copy).
struct ReadAs {
  bool transpose_a = false, transpose_b = false;
  bool column_major_out = false;
};

struct TorchCall {
  GemmProblem problem;            // D not filled in when the call allocates it (out is None)
  std::vector<int64_t> out_shape;  // (m, n) or (batch, m, n)
  int device = -1;                 // CUDA device index of a and b (-1: not a CUDA tensor)
  bool column_major_out = false;   // the problem is D^T = B^T A^T: out_shape is D's, m and n are D^T's
};

// Checks the arguments and describes the problem; raises TypeError / ValueError naming what is
// wrong. `arch` (Plan mode, e.g. 90; 0: the device's own) plans tensors that are not on a GPU.
TorchCall read_call(py::handle a, py::handle b, py::handle c, py::handle out, double alpha, double beta,
                    Precision precision, bool deterministic, Mode mode, int arch = 0, ReadAs as = {});

// The output of a call given none: a new tensor from torch's allocator, through a's own new_empty
// (its dtype and device), row-major or as read_call's ReadAs asked; D (and C when the call has
// none) now point to it.
py::object new_output(TorchCall& call, py::handle a, bool has_c);

// (compute capability as 90, multiprocessor count) of CUDA device `index`, read once per device;
// {0, 0} where there is no such device or no driver.
std::pair<int, int> device_props(int index);

// The name of CUDA device `index` as the driver reports it, read once per device; nullptr where
// there is no such device. The pointer stays valid for the life of the process.
const char* device_name(int index);

// Runs on `device` and puts the thread's current device back afterwards (CUTLASS sets kernel
// attributes and launches on the current device).
class DeviceGuard {
 public:
  explicit DeviceGuard(int device) {
    if (cudaGetDevice(&previous_) != cudaSuccess) previous_ = -1;
    if (previous_ != device) cudaSetDevice(device);
  }
  ~DeviceGuard() {
    int now = -1;
    if (previous_ >= 0 && cudaGetDevice(&now) == cudaSuccess && now != previous_) cudaSetDevice(previous_);
  }

 private:
  int previous_ = -1;
};

// The current torch stream of `device`, as a cudaStream_t value.
uintptr_t current_stream(int device);

// At least `bytes` of device scratch on a's device for a launch on `stream`, from torch's
// allocator. Outside CUDA graph capture one buffer per (device, stream) is kept and reused (it
// grows as needed): launches on one stream are ordered, so they may share it, and a call saves an
// allocation through Python. During capture a fresh one is allocated (the graph's private pool),
// so a replay never shares memory with eager launches on another stream. Returns the tensor
// (keep it alive until the launch is enqueued) and its address.
std::pair<py::object, void*> workspace_for(py::handle a, int device, uintptr_t stream, size_t bytes);

}  // namespace pycutlass_gemm
