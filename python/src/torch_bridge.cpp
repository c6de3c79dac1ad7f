// _core's side of the table the PyTorch operator library calls (torch_bridge.hpp).
#include "torch_bridge.hpp"

#include <nanobind/nanobind.h>

#include <cstdio>
#include <exception>
#include <string>

#include "context.hpp"
#include "core/error.hpp"
#include "mhc/hc_post_pre.hpp"
#include "runtime/op_context.hpp"

namespace hcwarm::python {
namespace {

const char* python_type_name(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::InvalidArgument: return "InvalidArgumentError";
    case ErrorKind::NotWarmed: return "NotWarmedError";
    case ErrorKind::Compile: return "CompileError";
    case ErrorKind::Unavailable: return "UnavailableError";
    case ErrorKind::Timeout: return "WaitTimeoutError";
    default: return "HcwarmError";
  }
}

void fail(BridgeStatus& status, ErrorKind kind, const std::string& message) {
  status.ok = false;
  std::snprintf(status.type, sizeof status.type, "%s", python_type_name(kind));
  std::snprintf(status.message, sizeof status.message, "%s", message.c_str());
}

// Runs f, reporting what it throws in status (no exception leaves _core through the table).
template <class F>
auto guarded(BridgeStatus& status, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const Error& e) {
    fail(status, e.kind(), e.log().empty() ? e.message() : e.message() + "\n" + e.log());
  } catch (const std::exception& e) {
    fail(status, ErrorKind::Internal, e.what());
  }
  return decltype(f())();
}

runtime::OpContext* context(bool cuda, int index, BridgeStatus& status) {
  nb::gil_scoped_acquire gil;
  try {
    // The package's registry, so that a context made here has the settings prewarm() gave it.
    nb::object get = nb::module_::import_("hcwarm._context").attr("get_context");
    nb::object ctx = get(cuda ? nb::str(("cuda:" + std::to_string(index)).c_str()) : nb::str("cpu"));
    return &nb::cast<Context&>(ctx).op_context();
  } catch (const nb::python_error& e) {
    fail(status, ErrorKind::InvalidArgument, e.what());
  } catch (const Error& e) {
    fail(status, e.kind(), e.message());
  } catch (const std::exception& e) {
    fail(status, ErrorKind::Internal, e.what());
  }
  return nullptr;
}

size_t hc_pre_workspace(runtime::OpContext& ctx, mhc::MhcDims d, const mhc::MhcConstants& c, int64_t t,
                        BridgeStatus& status) {
  return guarded(status, [&] { return ctx.hc_pre(d, c).workspace_bytes(t); });
}

void hc_pre(runtime::OpContext& ctx, mhc::MhcDims d, const mhc::MhcConstants& c, const mhc::HcPreArgs& a,
            const LaunchContext& launch, BridgeStatus& status) {
  guarded(status, [&] { ctx.hc_pre(d, c).run(a, launch); });
}

void hc_post(runtime::OpContext& ctx, mhc::MhcDims d, int64_t t, const bf16* x, const bf16* residual,
             const float* post, const float* comb, bf16* out, const LaunchContext& launch, BridgeStatus& status) {
  guarded(status, [&] { ctx.hc_post(d).run(t, x, residual, post, comb, out, launch); });
}

void hc_post_pre(runtime::OpContext& ctx, mhc::MhcDims d, const mhc::MhcConstants& c, const mhc::HcPreArgs& a,
                 const LaunchContext& launch, BridgeStatus& status) {
  guarded(status, [&] { mhc::run_hc_post_pre(ctx.hc_pre(d, c), ctx.hc_post(d), a, launch); });
}

size_t hc_head_workspace(runtime::OpContext& ctx, mhc::MhcDims d, float hc_eps, float rms_eps, int64_t t,
                         BridgeStatus& status) {
  return guarded(status, [&] { return ctx.hc_head(d, hc_eps, rms_eps).workspace_bytes(t); });
}

void hc_head(runtime::OpContext& ctx, mhc::MhcDims d, float hc_eps, float rms_eps, const mhc::HcHeadArgs& a,
             const LaunchContext& launch, BridgeStatus& status) {
  guarded(status, [&] { ctx.hc_head(d, hc_eps, rms_eps).run(a, launch); });
}

}  // namespace

const TorchBridge& torch_bridge() {
  static const TorchBridge table = [] {
    TorchBridge t;
    t.version = HCWARM_VERSION;
    t.context = &context;
    t.hc_pre_workspace = &hc_pre_workspace;
    t.hc_pre = &hc_pre;
    t.hc_post = &hc_post;
    t.hc_post_pre = &hc_post_pre;
    t.hc_head_workspace = &hc_head_workspace;
    t.hc_head = &hc_head;
    return t;
  }();
  return table;
}

}  // namespace hcwarm::python
