# Finds the CUTLASS C++ headers and exposes them as the INTERFACE target
# pycutlass_cutlass_headers.
#
# CUTLASS is header-only. By default it comes from the nvidia-cutlass wheel
# pinned in pyproject.toml's build requirements, which ships the headers under
# cutlass_library/source/. We locate that folder by path and never import the
# package's Python code (it needs cuda-python and a GPU-capable environment).
# To build against a source checkout instead: -DCUTLASS_DIR=/path/to/cutlass
# (the folder holding include/ and tools/util/include/).
set(CUTLASS_DIR "" CACHE PATH "CUTLASS source checkout; empty: the installed nvidia-cutlass wheel")

if(NOT CUTLASS_DIR)
  execute_process(
    COMMAND ${Python_EXECUTABLE} -c
      "import importlib.util, os; s = importlib.util.find_spec('cutlass_library'); print(os.path.join(list(s.submodule_search_locations)[0], 'source') if s else '')"
    OUTPUT_VARIABLE CUTLASS_DIR OUTPUT_STRIP_TRAILING_WHITESPACE)
endif()
if(NOT EXISTS "${CUTLASS_DIR}/include/cutlass/cutlass.h")
  message(FATAL_ERROR
    "CUTLASS headers not found (looked in '${CUTLASS_DIR}'). Install nvidia-cutlass==4.2.0.0 "
    "(a build requirement) or pass -DCUTLASS_DIR=/path/to/cutlass.")
endif()
message(STATUS "pycutlass_gemm: CUTLASS headers from ${CUTLASS_DIR}")

add_library(pycutlass_cutlass_headers INTERFACE)
target_include_directories(pycutlass_cutlass_headers SYSTEM INTERFACE
  ${CUTLASS_DIR}/include ${CUTLASS_DIR}/tools/util/include)
target_compile_options(pycutlass_cutlass_headers INTERFACE
  $<$<COMPILE_LANGUAGE:CUDA>:--expt-relaxed-constexpr>)
