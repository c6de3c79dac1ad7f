// hcwarm._core: the module's bindings. Context (context.hpp) converts between
// Python and one device's runtime::OpContext; the exception types below carry the
// library's ErrorKind; torch_bridge() hands the PyTorch operator library
// (torch_ops/) the same contexts.
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>

#include <cstdint>

#include "context.hpp"
#include "core/env_config.hpp"
#include "core/error.hpp"
#include "core/logging.hpp"
#include "torch_bridge.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace hcwarm::python {
namespace {

// Exception types, created once at import: the library's ErrorKind decides the Python type.
PyObject* g_error = nullptr;          // HcwarmError(RuntimeError)
PyObject* g_invalid = nullptr;        // InvalidArgumentError(HcwarmError, ValueError)
PyObject* g_not_warmed = nullptr;     // NotWarmedError(HcwarmError)
PyObject* g_compile = nullptr;        // CompileError(HcwarmError)
PyObject* g_unavailable = nullptr;    // UnavailableError(HcwarmError)
PyObject* g_timeout = nullptr;        // WaitTimeoutError(HcwarmError, TimeoutError)

PyObject* python_type(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::InvalidArgument: return g_invalid;
    case ErrorKind::NotWarmed: return g_not_warmed;
    case ErrorKind::Compile: return g_compile;
    case ErrorKind::Unavailable: return g_unavailable;
    case ErrorKind::Timeout: return g_timeout;
    default: return g_error;
  }
}

}  // namespace
}  // namespace hcwarm::python

NB_MODULE(_core, m) {
  using namespace hcwarm::python;
  using hcwarm::python::Context;
  m.doc() = "hcwarm's C++ op context; use the hcwarm package, not this module.";
  m.attr("__version__") = HCWARM_VERSION;
  // Logs to stderr at HCWARM_LOG_LEVEL, as the CLI does.
  hcwarm::init_logging(hcwarm::EnvConfig::from_environment());
  // Contexts live for the process (one per device, held by the Python package).
  nb::set_leak_warnings(false);

  g_error = PyErr_NewExceptionWithDoc("hcwarm.HcwarmError", "An error raised by hcwarm.", PyExc_RuntimeError, nullptr);
  nb::object bases = nb::make_tuple(nb::handle(g_error), nb::handle(PyExc_ValueError));
  g_invalid = PyErr_NewExceptionWithDoc("hcwarm.InvalidArgumentError", "A bad argument, shape, value or file.",
                                        bases.ptr(), nullptr);
  g_not_warmed = PyErr_NewExceptionWithDoc(
      "hcwarm.NotWarmedError",
      "A kernel the call needs is not loaded and may not be built or loaded now (CUDA-graph capture, HCWARM_JIT=off).",
      g_error, nullptr);
  g_compile = PyErr_NewExceptionWithDoc("hcwarm.CompileError", "A kernel failed to compile.", g_error, nullptr);
  g_unavailable = PyErr_NewExceptionWithDoc("hcwarm.UnavailableError",
                                            "A backend or feature this machine does not have.", g_error, nullptr);
  nb::object timeout_bases = nb::make_tuple(nb::handle(g_error), nb::handle(PyExc_TimeoutError));
  g_timeout = PyErr_NewExceptionWithDoc(
      "hcwarm.WaitTimeoutError",
      "Waited past HCWARM_LOCK_TIMEOUT_S for another process's kernel lock or host compile slots, past "
      "HCWARM_COMPILE_TIMEOUT_S for the host compiler, or past HCWARM_GROUP_TIMEOUT_S for a group's kernel exchange.",
      timeout_bases.ptr(), nullptr);
  m.attr("HcwarmError") = nb::handle(g_error);
  m.attr("WaitTimeoutError") = nb::handle(g_timeout);
  m.attr("InvalidArgumentError") = nb::handle(g_invalid);
  m.attr("NotWarmedError") = nb::handle(g_not_warmed);
  m.attr("CompileError") = nb::handle(g_compile);
  m.attr("UnavailableError") = nb::handle(g_unavailable);
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const hcwarm::Error& e) {
      std::string text = e.message();
      if (!e.log().empty()) text += "\n" + e.log();
      PyErr_SetString(python_type(e.kind()), text.c_str());
    }
  });

  m.def("cuda_device_present", [] { return hcwarm::cuda::cuda_device_present(hcwarm::EnvConfig::from_environment().cuda_library); });
  m.def("default_backend",
        [] { return std::string(hcwarm::mhc::to_string(hcwarm::mhc::default_backend(hcwarm::EnvConfig::from_environment().cuda_library))); });
  m.def("model_config", [](const std::string& preset_or_path, std::optional<std::string> json_text) {
    return config_dict(resolve_config(preset_or_path, json_text));
  }, "preset_or_path"_a, "json_text"_a = nb::none());
  m.def("num_splits", &hcwarm::mhc::num_splits, "num_tokens"_a, "k"_a, "num_sms"_a);
  m.def("split_buckets", &bucket_list, "max_num_tokens"_a, "hc_hidden_size"_a, "num_sms"_a);
  m.def("representatives", &hcwarm::mhc::representatives, "max_num_tokens"_a, "hc_hidden_size"_a, "num_sms"_a);
  m.def("default_num_sms", &default_num_sms, "cuda_ordinal"_a = nb::none());
  m.def("set_log_level", [](const std::string& level) { hcwarm::logger().set_level(spdlog::level::from_str(level)); },
        "level"_a);

  // The address of the table the PyTorch operator library binds to (torch_bridge.hpp).
  m.def("torch_bridge", [] { return reinterpret_cast<uintptr_t>(&torch_bridge()); });
  m.def("group_timeout_s", []() -> std::optional<int> { return hcwarm::EnvConfig::from_environment().group_timeout_s; });
  m.def("torch_cpp_ops_enabled", [] { return hcwarm::EnvConfig::from_environment().torch_cpp_ops; });

  nb::class_<Context>(m, "Context")
      .def(nb::init<const std::string&, int, std::optional<int>, std::optional<std::string>, const std::string&,
                    std::optional<bool>, std::optional<bool>, int, bool>(),
           "backend"_a = "auto", "device"_a = 0, "num_sms"_a = nb::none(), "cache_dir"_a = nb::none(),
           "variant"_a = "specialized", "strict_warmup"_a = nb::none(), "jit"_a = nb::none(), "jobs"_a = 0,
           "progress"_a = false)
      .def("hc_pre", &Context::hc_pre, nb::call_guard<nb::gil_scoped_release>())
      .def("hc_pre_workspace_bytes", &Context::hc_pre_workspace_bytes)
      .def("hc_pre_loaded", &Context::hc_pre_loaded)
      .def("hc_post", &Context::hc_post, nb::call_guard<nb::gil_scoped_release>())
      .def("hc_post_pre", &Context::hc_post_pre, nb::call_guard<nb::gil_scoped_release>())
      .def("hc_head", &Context::hc_head, nb::call_guard<nb::gil_scoped_release>())
      .def("hc_head_workspace_bytes", &Context::hc_head_workspace_bytes)
      .def("check_coverage", &Context::check_coverage, "fused_norm"_a = true)
      .def("prewarm", &Context::prewarm)
      .def("planned_keys", &Context::planned_keys)
      .def("plan", &Context::plan)
      .def("prewarm_exchange", &Context::prewarm_exchange)
      .def("event_count", &Context::event_count)
      .def("compiled_keys_since", &Context::compiled_keys_since)
      .def("stats", &Context::stats)
      .def("compiles_after_ready", &Context::compiles_after_ready)
      .def("background_compiles_after_ready", &Context::background_compiles_after_ready)
      .def("mark_ready", &Context::mark_ready)
      .def_prop_ro("ready", &Context::ready)
      .def_prop_ro("backend", &Context::backend)
      .def_prop_ro("device", &Context::device)
      .def_prop_ro("num_sms", &Context::num_sms)
      .def_prop_ro("arch", &Context::arch)
      .def_prop_ro("device_name", &Context::device_name)
      .def_prop_ro("cache_dir", &Context::cache_dir);
}
