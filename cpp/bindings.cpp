// pybind11 wrapper: torch tensors in as Python objects (read in torch_call.cpp, no libtorch),
// one C++ call per launch. Outputs and workspaces come from torch's allocator through the
// tensors' own new_empty, so they are stream-ordered and legal under CUDA graph capture.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cuda_runtime.h>

#include <atomic>
#include <optional>
#include <stdexcept>

#include "aten_router.h"
#include "heuristics.h"
#include "plan_cache.h"
#include "registry.h"
#include "torch_call.h"

namespace py = pybind11;
using namespace pycutlass_gemm;

namespace {

py::dict kernel_dict(const KernelInfo& i) {
  py::dict d;
  d["name"] = i.name;
  d["family"] = i.family;
  d["dtype"] = dtype_name(i.dtype);
  d["math"] = precision_name(i.math);
  d["layout_a"] = layout_name(i.a_layout);
  d["layout_b"] = layout_name(i.b_layout);
  d["sm_min"] = i.sm_min;
  d["sm_max"] = i.sm_max;
  d["tile"] = i.tile;
  d["alignment"] = i.alignment;
  d["output_alignment"] = i.output_alignment > 0 ? i.output_alignment : i.alignment;
  d["priority"] = i.priority;
  d["bias_row"] = i.takes_bias_row;
  return d;
}

Precision precision_of(int code) {
  return code == 1 ? Precision::Tf32 : code == 2 ? Precision::Tf32x3 : Precision::Ieee;
}

// The plan for a call; ValueError naming the problem where no kernel (or not the named one) can
// run it (an unknown name: std::invalid_argument, which pybind11 raises as ValueError too).
std::shared_ptr<const CachedPlan> plan_or_raise(const GemmProblem& p, const std::string& variant) {
  std::shared_ptr<const CachedPlan> plan = cached_plan(p, variant);
  if (plan->kernel == nullptr) throw py::value_error("pycutlass_gemm: " + plan->error);
  return plan;
}

void warn_once_if_not_hopper(const GemmProblem& p, const GemmKernel& k) {
  static std::atomic<bool> warned{false};
  if (p.sm == 90 || k.info().family != "fallback" || warned.exchange(true)) return;
  const std::string msg = "pycutlass_gemm: this GPU is sm_" + std::to_string(p.sm) +
                          ", the CUTLASS kernels are built for sm_90 (H100/H200); every call runs the fallback kernel";
  if (PyErr_WarnEx(PyExc_RuntimeWarning, msg.c_str(), 2) < 0) throw py::error_already_set();
}

// pycutlass_gemm.autotune's tuner: called as tuner(a, b, c, out, alpha, beta, precision,
// deterministic, key) on the first call of a class that is not tuned yet; it times the candidates
// and records the winner with set_tuned(key, name). None: no tuner (autotuning off).
py::object& autotuner() {
  static auto* f = new py::object();  // never destroyed: may outlive the interpreter's teardown
  return *f;
}
thread_local bool tuning = false;  // the tuner's own launches name their kernel; never tune inside it

bool capturing(uintptr_t stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(reinterpret_cast<cudaStream_t>(stream), &status) != cudaSuccess) {
    cudaGetLastError();
    return true;  // unknown: do not launch extra work
  }
  return status != cudaStreamCaptureStatusNone;
}

// Autotuning: the first call of an untuned class (not under CUDA graph capture, where timing
// cannot run) asks the tuner, then plans again; the tuned choice is cached like any plan.
std::shared_ptr<const CachedPlan> tuned_plan(std::shared_ptr<const CachedPlan> plan, GemmProblem& p, int device,
                                             py::handle a, py::handle b, py::handle c, py::handle out, double alpha,
                                             double beta, int precision, bool deterministic, const std::string& variant) {
  if (plan->untuned_key.empty() || autotuner().is_none() || tuning) return plan;
  if (capturing(current_stream(device))) return plan;
  tuning = true;
  try {
    autotuner()(a, b, c, out, alpha, beta, precision, deterministic, plan->untuned_key);
  } catch (...) {
    tuning = false;
    throw;
  }
  tuning = false;
  return plan_or_raise(p, variant);
}

// alpha * (a @ b) + beta * c into `out` (allocated here when None), `a` and `b` read as `as`
// says. With `torch_takes_fallback`, a problem only the fallback kernel can run is not launched:
// None is returned and the caller (pycutlass_gemm.enable()'s routing) hands it to torch.
py::object gemm_as(py::handle a, py::handle b, py::handle c, py::handle out, double alpha, double beta,
                   const std::string& variant, int precision, bool deterministic, bool torch_takes_fallback,
                   ReadAs as) {
  TorchCall call = read_call(a, b, c, out, alpha, beta, precision_of(precision), deterministic, Mode::Run, 0, as);
  GemmProblem& p = call.problem;
  std::shared_ptr<const CachedPlan> plan;
  if (!is_empty(p) || variant != "auto") {
    plan = plan_or_raise(p, variant);  // pointers of D do not enter the plan: torch aligns to 256 bytes
    if (!plan->untuned_key.empty()) {  // the tuner times the problem as given: the views themselves
      py::object ta = as.transpose_a ? a.attr("mT") : py::reinterpret_borrow<py::object>(a);
      py::object tb = as.transpose_b ? b.attr("mT") : py::reinterpret_borrow<py::object>(b);
      plan = tuned_plan(std::move(plan), p, call.device, ta, tb, c, out, alpha, beta, precision, deterministic, variant);
    }
    if (torch_takes_fallback && plan->kernel->info().family == "fallback") return py::none();
  }
  py::object result = out.is_none() ? new_output(call, a, !c.is_none()) : py::reinterpret_borrow<py::object>(out);
  if (p.m == 0 || p.n == 0 || p.batch == 0) return result;
  if (p.k == 0) {  // no products: D = beta * C
    if (!c.is_none() && beta != 0.0) return result.attr("copy_")(c.attr("expand")(result.attr("shape"))).attr("mul_")(beta);
    return result.attr("zero_")();
  }
  warn_once_if_not_hopper(p, *plan->kernel);
  p.stream = current_stream(call.device);
  py::object workspace;
  void* workspace_ptr = nullptr;
  if (plan->workspace_bytes > 0) std::tie(workspace, workspace_ptr) = workspace_for(a, call.device, p.stream, plan->workspace_bytes);
  {
    // The launch is asynchronous: other Python threads may run meanwhile, but not beside a kernel with
    // a workspace. Such a kernel launches twice (K split: the slices' products, then their sum;
    // stream-K: its barriers cleared, then the kernel) on the workspace cached for this stream, and
    // another thread's launches falling between the two overwrote the partial sums (test_threads).
    std::optional<py::gil_scoped_release> release;
    if (workspace_ptr == nullptr) release.emplace();
    DeviceGuard guard(call.device);
    plan->kernel->run(p, workspace_ptr);
  }
  return result;
}

py::object gemm(py::handle a, py::handle b, py::handle c, py::handle out, double alpha, double beta,
                const std::string& variant, int precision, bool deterministic, bool torch_takes_fallback) {
  return gemm_as(a, b, c, out, alpha, beta, variant, precision, deterministic, torch_takes_fallback, {});
}

// The backward of out = alpha * a @ b for 2-D a and b, in one call and without transposed views:
// grad_a = alpha * grad @ b^T and grad_b = alpha * a^T @ grad (None where not needed), each
// column-major where its operand was (the caller says: the operand itself may not have been kept).
py::tuple mm_grads(py::handle grad, py::handle a, py::handle b, bool need_a, bool need_b, bool a_column_major,
                   bool b_column_major, double alpha, int precision, bool deterministic) {
  const py::none none;
  py::object grad_a = none, grad_b = none;
  if (need_a)
    grad_a = gemm_as(grad, b, none, none, alpha, 0.0, "auto", precision, deterministic, false,
                     ReadAs{false, true, a_column_major});
  if (need_b)
    grad_b = gemm_as(a, grad, none, none, alpha, 0.0, "auto", precision, deterministic, false,
                     ReadAs{true, false, b_column_major});
  return py::make_tuple(grad_a, grad_b);
}

}  // namespace

PYBIND11_MODULE(_C, m) {
  m.doc() = "pycutlass_gemm core: kernel registry, argument checks, plan cache and launches";

  m.def("bind_torch", &bind_torch, "Hands over the torch objects the checks use (called once at import).");

  m.def("kernels", [] {
    py::list out;
    for (const GemmKernel* k : all_kernels()) out.append(kernel_dict(k->info()));
    return out;
  }, "Every kernel built into this extension, as dicts.");

  m.def("layout", [](int64_t rows, int64_t cols, int64_t row_stride, int64_t col_stride) {
    return layout_name(MatrixRef{nullptr, rows, cols, row_stride, col_stride, 0}.layout());
  }, "'row', 'col' or 'any' (neither) for a matrix with these extents and strides.");

  m.def("gemm", &gemm, py::arg("a"), py::arg("b"), py::arg("c"), py::arg("out"), py::arg("alpha"), py::arg("beta"),
        py::arg("variant"), py::arg("precision"), py::arg("deterministic"), py::arg("torch_takes_fallback") = false,
        "Checks, plans (cached) and launches alpha * (a @ b) + beta * c; returns the output.");
  m.def("mm_grads", &mm_grads, py::arg("grad"), py::arg("a"), py::arg("b"), py::arg("need_a"), py::arg("need_b"),
        py::arg("a_column_major"), py::arg("b_column_major"), py::arg("alpha"), py::arg("precision"),
        py::arg("deterministic"),
        "(grad @ b.mT, a.mT @ grad) times alpha for 2-D a and b (None where not needed), each column-major "
        "where its operand was: the backward of a 2-D product in one call.");

  m.def("check", [](py::handle a, py::handle b, py::handle c, py::handle out, double alpha, double beta,
                    const std::string& variant, int precision) {
    TorchCall call = read_call(a, b, c, out, alpha, beta, precision_of(precision), true, Mode::Trace);
    if (variant != "auto") plan_or_raise(call.problem, variant);
    return call.out_shape;
  }, "The checks of gemm() on fake or meta tensors (what torch.compile traces): the output shape, or the error.");

  m.def("plan", [](py::handle a, py::handle b, py::handle c, py::handle out, double beta, int precision,
                   bool deterministic, int arch) -> py::tuple {
    TorchCall call = read_call(a, b, c, out, 1.0, beta, precision_of(precision), deterministic, Mode::Plan, arch);
    std::shared_ptr<const CachedPlan> plan = cached_plan(call.problem, "auto");
    if (plan->kernel == nullptr) return py::make_tuple(py::none(), plan->error);
    return py::make_tuple(plan->kernel->info().name, plan->reason);
  }, "(kernel name or None, reason): what variant='auto' runs for these operands.");

  m.def("can_implement", [](const std::string& name, py::handle a, py::handle b, py::handle c, py::handle out,
                            double beta, int precision, int arch) {
    TorchCall call = read_call(a, b, c, out, 1.0, beta, precision_of(precision), true, Mode::Plan, arch);
    return kernel_named(name, call.problem.dtype).can_implement(call.problem);
  }, "'' if the named kernel can run the problem, else the reason it cannot.");

  m.def("plan_key", [](py::handle a, py::handle b, py::handle c, py::handle out, double beta, int precision,
                       bool deterministic, const std::string& variant) {
    TorchCall call = read_call(a, b, c, out, 1.0, beta, precision_of(precision), deterministic, Mode::Plan);
    const PlanKey k = plan_key(call.problem, variant);
    return py::make_tuple(k.m, k.n, k.k, k.batch, k.a, k.b, k.c, k.d, k.sm, k.sm_count, k.dtype, k.precision,
                          k.deterministic, k.beta_nonzero, k.variant);
  }, "The plan cache's key for these operands (for tests).");
  m.def("plan_cache_size", &plan_cache_size);
  m.attr("SLOWEST_KEPT") = kSlowestKept;  // a measured point keeps the kernels within this of its fastest
  m.def("clear_plan_cache", &clear_plan_cache);

  m.def("set_measured_tables", [](const std::vector<py::dict>& tables) {
    std::vector<MeasuredTable> out;
    for (const py::dict& t : tables) {
      MeasuredTable table{t["source"].cast<std::string>(), t["device"].cast<std::string>(), t["sm"].cast<int>(),
                          t["sm_count"].cast<int>(), {}};
      table.kernels = t["kernels"].cast<std::vector<std::string>>();
      if (t.contains("registered")) table.registered = t["registered"].cast<std::vector<std::string>>();
      const auto n_kernels = static_cast<int64_t>(table.kernels.size());
      for (const auto& [cls, rows] : t["classes"].cast<py::dict>()) {
        std::vector<MeasuredPoint> points;
        for (const auto& row : rows.cast<std::vector<std::vector<int64_t>>>()) {
          // [m, n, k, batch, fastest, (kernel, its time over the fastest's in thousandths)...]
          bool ok = row.size() >= 5 && row.size() % 2 == 1;
          MeasuredPoint point;
          if (ok) {
            point = {row[0], row[1], row[2], row[3], {{static_cast<int>(row[4]), 1.0}}};
            ok = row[4] >= 0 && row[4] < n_kernels;
          }
          for (size_t i = 5; ok && i < row.size(); i += 2) {
            ok = row[i] >= 0 && row[i] < n_kernels && row[i + 1] >= 1000;
            point.kernels.push_back({static_cast<int>(row[i]), row[i + 1] / 1000.0});
          }
          if (!ok)
            throw py::value_error("a measured point must be [m, n, k, batch, fastest kernel index, "
                                  "kernel index, its time over the fastest's in thousandths, ...]");
          points.push_back(std::move(point));
        }
        table.classes.emplace_back(cls.cast<std::string>(), std::move(points));
      }
      out.push_back(std::move(table));
    }
    set_measured_tables(std::move(out));
  }, "Replaces the measured tables plan() reads: dicts of source, device, sm, sm_count, kernels (names), "
     "classes ({problem class: [[m, n, k, batch, fastest kernel index, kernel index, permille, ...], ...]}) and "
     "optionally registered (the kernels built when the table was swept).");
  m.def("problem_class", [](py::handle a, py::handle b, py::handle c, py::handle out, double beta, int precision) {
    TorchCall call = read_call(a, b, c, out, 1.0, beta, precision_of(precision), true, Mode::Plan);
    return problem_class(call.problem);
  }, "The measured table's class of these operands, e.g. 'bfloat16 ieee row col aligned'.");
  m.def("tune_key", [](py::handle a, py::handle b, py::handle c, py::handle out, double beta, int precision,
                       bool deterministic) {
    TorchCall call = read_call(a, b, c, out, 1.0, beta, precision_of(precision), deterministic, Mode::Plan);
    return tune_key(call.problem);
  }, "The autotuning class of these operands (what a tuned choice is remembered under).");
  m.def("set_autotune", &set_autotune_enabled);
  m.def("autotune_enabled", &autotune_enabled);
  m.def("set_autotuner", [](py::object f) { autotuner() = std::move(f); },
        "The function called on the first call of an untuned class (None: none).");
  m.def("set_tuned", &set_tuned, "Records the tuned kernel of a class (tune_key) and forgets cached plans.");
  m.def("tuned_kernel", &tuned_kernel);
  m.def("clear_tuned", &clear_tuned);
  m.def("aten_router_load", &aten_router::load, py::arg("library_paths"), py::arg("ad_inplace_or_view_key"),
        "Finds torch's stable C ABI for enable()'s C++ kernels of aten::mm / aten::bmm: '' or why not.");
  m.def("aten_router_route_all", &aten_router::route_all, py::arg("on"), py::arg("float32") = false,
        "enable()'s routing of aten::mm / aten::bmm by the C++ kernels on or off; float32: float32 products too.");
  m.def("aten_router_routes_all", &aten_router::routes_all);
  m.def("aten_router_keep", &aten_router::keep_registered,
        "Keeps the C++ kernels registered for good (the package's autograd records aten::mm through them).");
  m.def("aten_router_take_here", &aten_router::take_products_here, py::arg("precision"),
        "This thread's aten::mm / aten::bmm run on the package (float32 at this precision code) until -1.");
  m.def("aten_router_can_take_float32", &aten_router::can_take_float32);
  m.def("aten_router_set_float32_precision", &aten_router::set_float32_precision,
        "set_float32_precision's choice as _C's precision code (-1: torch's TF32 switch decides).");
  m.def("aten_router_registered", &aten_router::registered);
  m.def("aten_router_counts", [] {
    const aten_router::Counts c = aten_router::counts();
    return py::make_tuple(c.launched, c.handed_on);
  }, "(products the C++ kernels launched, products they handed on to torch) since import.");
  m.def("driver_version", [] {
    int v = 0;
    if (cudaDriverGetVersion(&v) != cudaSuccess) cudaGetLastError();
    return v;
  }, "The CUDA driver's version (e.g. 13000), 0 without a driver.");
}
