// pybind11 wrapper: plain values in, plain values out. Python fills a
// GemmProblem from torch tensors and allocates the workspace; nothing here
// knows about torch.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <stdexcept>

#include "registry.h"

namespace py = pybind11;
using namespace pycutlass_gemm;

namespace {

const GemmKernel& kernel_named(const std::string& name, DType dtype) {
  const GemmKernel* k = find_kernel(name, dtype);
  if (k == nullptr)
    throw py::value_error("no kernel named '" + name + "' for " + dtype_name(dtype) +
                          " inputs; pycutlass_gemm.kernels() lists them");
  return *k;
}

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
  d["priority"] = i.priority;
  return d;
}

}  // namespace

PYBIND11_MODULE(_C, m) {
  m.doc() = "pycutlass_gemm core: kernel registry, problem description and launches";

  py::enum_<DType>(m, "DType")
      .value("float32", DType::F32)
      .value("float16", DType::F16)
      .value("bfloat16", DType::BF16)
      .value("float64", DType::F64);
  py::enum_<Precision>(m, "Precision").value("ieee", Precision::Ieee).value("tf32", Precision::Tf32);

  py::class_<MatrixRef>(m, "MatrixRef")
      .def(py::init([](uintptr_t ptr, int64_t rows, int64_t cols, int64_t row_stride, int64_t col_stride,
                       int64_t batch_stride) {
             return MatrixRef{reinterpret_cast<const void*>(ptr), rows, cols, row_stride, col_stride, batch_stride};
           }),
           py::arg("ptr"), py::arg("rows"), py::arg("cols"), py::arg("row_stride"), py::arg("col_stride"),
           py::arg("batch_stride") = 0)
      .def_property_readonly("layout", [](const MatrixRef& r) { return layout_name(r.layout()); })
      .def_property_readonly("ld", [](const MatrixRef& r) { return r.ld(r.layout()); });

  py::class_<GemmProblem>(m, "GemmProblem")
      .def(py::init<>())
      .def_readwrite("m", &GemmProblem::m)
      .def_readwrite("n", &GemmProblem::n)
      .def_readwrite("k", &GemmProblem::k)
      .def_readwrite("batch", &GemmProblem::batch)
      .def_readwrite("a", &GemmProblem::a)
      .def_readwrite("b", &GemmProblem::b)
      .def_readwrite("c", &GemmProblem::c)
      .def_readwrite("d", &GemmProblem::d)
      .def_readwrite("dtype", &GemmProblem::dtype)
      .def_readwrite("precision", &GemmProblem::precision)
      .def_readwrite("alpha", &GemmProblem::alpha)
      .def_readwrite("beta", &GemmProblem::beta)
      .def_readwrite("deterministic", &GemmProblem::deterministic)
      .def_readwrite("sm", &GemmProblem::sm)
      .def_readwrite("sm_count", &GemmProblem::sm_count)
      .def_readwrite("stream", &GemmProblem::stream);

  m.def("kernels", [] {
    py::list out;
    for (const GemmKernel* k : all_kernels()) out.append(kernel_dict(k->info()));
    return out;
  }, "Every kernel built into this extension, as dicts.");

  m.def("layout", [](int64_t rows, int64_t cols, int64_t row_stride, int64_t col_stride) {
    return layout_name(MatrixRef{nullptr, rows, cols, row_stride, col_stride, 0}.layout());
  }, "'row', 'col' or 'any' (neither) for a matrix with these extents and strides.");

  m.def("plan", [](const GemmProblem& p) -> py::tuple {
    Plan plan_ = plan(p);
    if (plan_.kernel == nullptr) return py::make_tuple(py::none(), plan_.reason);
    return py::make_tuple(plan_.kernel->info().name, plan_.reason);
  }, "(kernel name or None, reason): what variant='auto' runs for this problem.");

  m.def("can_implement", [](const std::string& name, const GemmProblem& p) {
    return kernel_named(name, p.dtype).can_implement(p);
  }, "'' if the named kernel can run the problem, else the reason it cannot.");

  m.def("workspace_size", [](const std::string& name, const GemmProblem& p) {
    return kernel_named(name, p.dtype).workspace_size(p);
  });

  m.def("run", [](const std::string& name, const GemmProblem& p, uintptr_t workspace) {
    const GemmKernel& k = kernel_named(name, p.dtype);
    std::string why = k.can_implement(p);
    if (!why.empty()) throw py::value_error("kernel '" + name + "' cannot implement this problem: " + why);
    py::gil_scoped_release release;  // launches are asynchronous; let other threads run
    k.run(p, reinterpret_cast<void*>(workspace));
  }, py::arg("name"), py::arg("problem"), py::arg("workspace") = 0);
}
