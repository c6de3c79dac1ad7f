#include "cli/bench_timing.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "backends/cuda/cuda_device.hpp"
#include "core/error.hpp"
#include "core/stopwatch.hpp"
#include "jit/jit_runtime.hpp"

namespace hcwarm::cli {
namespace {

using Clock = std::chrono::steady_clock;

// A captured graph and its executable instance, freed on every exit path (an
// instance still replaying is freed by the driver when it completes).
struct OwnedGraph {
  explicit OwnedGraph(const cuda::CudaDriver& d) : drv(d) {}
  ~OwnedGraph() {
    if (exec != nullptr) drv.cuGraphExecDestroy(exec);
    if (graph != nullptr) drv.cuGraphDestroy(graph);
  }
  OwnedGraph(const OwnedGraph&) = delete;
  OwnedGraph& operator=(const OwnedGraph&) = delete;

  const cuda::CudaDriver& drv;
  cuda::CUgraph graph = nullptr;
  cuda::CUgraphExec exec = nullptr;
};

}  // namespace

double median(std::vector<double> v) {
  HCWARM_ASSERT(!v.empty(), "median of nothing");
  const auto mid = v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2);
  std::nth_element(v.begin(), mid, v.end());
  if (v.size() % 2 == 1) return *mid;
  return (*mid + *std::max_element(v.begin(), mid)) / 2;
}

StreamTimer::StreamTimer(Device& dev) : cuda_(dynamic_cast<cuda::CudaDevice*>(&dev)) { ensure_events(2); }

StreamTimer::~StreamTimer() {
  for (cuda::CUevent e : events_) cuda_->driver().cuEventDestroy(e);
}

void StreamTimer::ensure_events(size_t n) {
  if (cuda_ == nullptr) return;
  const auto& drv = cuda_->driver();
  cuda_->make_current();
  while (events_.size() < n) {
    cuda::CUevent e = nullptr;
    HCWARM_CHECK_CU(drv, drv.cuEventCreate(&e, cuda::CU_EVENT_DEFAULT));
    events_.push_back(e);
  }
}

double StreamTimer::total(int iters, const std::function<void(int)>& fn) {
  if (cuda_ == nullptr) {
    const auto t0 = Clock::now();
    for (int i = 0; i < iters; ++i) fn(i);
    return seconds_since(t0);
  }
  const auto& drv = cuda_->driver();
  HCWARM_CHECK_CU(drv, drv.cuEventRecord(events_[0], cuda_->stream()));
  for (int i = 0; i < iters; ++i) fn(i);
  HCWARM_CHECK_CU(drv, drv.cuEventRecord(events_[1], cuda_->stream()));
  HCWARM_CHECK_CU(drv, drv.cuEventSynchronize(events_[1]));
  float ms = 0;
  HCWARM_CHECK_CU(drv, drv.cuEventElapsedTime(&ms, events_[0], events_[1]));
  return ms * 1e-3;
}

std::vector<double> StreamTimer::each(int reps, const std::function<void(int)>& fn) {
  std::vector<double> out(static_cast<size_t>(std::max(reps, 0)));
  if (cuda_ == nullptr) {
    for (int i = 0; i < reps; ++i) {
      const auto t0 = Clock::now();
      fn(i);
      out[static_cast<size_t>(i)] = seconds_since(t0);
    }
    return out;
  }
  ensure_events(out.size() + 1);
  const auto& drv = cuda_->driver();
  HCWARM_CHECK_CU(drv, drv.cuEventRecord(events_[0], cuda_->stream()));
  for (int i = 0; i < reps; ++i) {
    fn(i);
    HCWARM_CHECK_CU(drv, drv.cuEventRecord(events_[static_cast<size_t>(i) + 1], cuda_->stream()));
  }
  HCWARM_CHECK_CU(drv, drv.cuEventSynchronize(events_[out.size()]));
  for (size_t i = 0; i < out.size(); ++i) {
    float ms = 0;
    HCWARM_CHECK_CU(drv, drv.cuEventElapsedTime(&ms, events_[i], events_[i + 1]));
    out[i] = ms * 1e-3;
  }
  return out;
}

double copy_bandwidth(Device& dev, size_t bytes, int warmups, int reps) {
  DeviceBuffer a(dev, bytes), b(dev, bytes);
  dev.fill_zero(a.get(), bytes);
  dev.fill_zero(b.get(), bytes);
  auto* cd = dynamic_cast<cuda::CudaDevice*>(&dev);
  // Alternate directions so that no copy reads what the previous one left in L2.
  auto copy = [&](int i) {
    void* dst = (i % 2) ? a.get() : b.get();
    const void* src = (i % 2) ? b.get() : a.get();
    if (cd == nullptr) {
      std::memcpy(dst, src, bytes);
      return;
    }
    HCWARM_CHECK_CU(cd->driver(), cd->driver().cuMemcpyDtoDAsync(reinterpret_cast<cuda::CUdeviceptr>(dst),
                                                                  reinterpret_cast<cuda::CUdeviceptr>(src), bytes,
                                                                  cd->stream()));
  };
  StreamTimer timer(dev);
  timer.total(warmups, copy);
  const double s = median(timer.each(reps, copy));
  dev.synchronize();
  return 2.0 * static_cast<double>(bytes) / s;
}

size_t l2_cache_bytes(const cuda::CudaDevice& dev) {
  const auto& drv = dev.driver();
  cuda::CUdevice d = 0;
  HCWARM_CHECK_CU(drv, drv.cuDeviceGet(&d, dev.ordinal()));
  int bytes = 0;
  HCWARM_CHECK_CU(drv, drv.cuDeviceGetAttribute(&bytes, cuda::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, d));
  return static_cast<size_t>(std::max(bytes, 0));
}

double graph_replay_us(cuda::CudaDevice& dev, int calls, const std::function<void(int)>& call, int warmups,
                       int replays) {
  HCWARM_CHECK_ARG(calls >= 1 && replays >= 1, "graph replay needs calls >= 1 and replays >= 1, got {} and {}", calls,
                   replays);
  const auto& drv = dev.driver();
  if (drv.cuStreamIsCapturing == nullptr || drv.cuStreamBeginCapture == nullptr || drv.cuStreamEndCapture == nullptr ||
      drv.cuGraphInstantiate == nullptr || drv.cuGraphLaunch == nullptr || drv.cuGraphExecDestroy == nullptr ||
      drv.cuGraphDestroy == nullptr) {
    HCWARM_THROW(ErrorKind::Cuda, "the CUDA driver {} has no stream capture or graph entry points", drv.path);
  }
  const cuda::CUstream stream = dev.stream();
  dev.make_current();
  int status = cuda::CU_STREAM_CAPTURE_STATUS_NONE;
  HCWARM_CHECK_CU(drv, drv.cuStreamIsCapturing(stream, &status));
  HCWARM_CHECK_ARG(status == cuda::CU_STREAM_CAPTURE_STATUS_NONE, "the device stream is already being captured");

  OwnedGraph g(drv);
  // Thread-local: only this thread's capture-unsafe calls invalidate the capture,
  // not those of other threads (the JIT's compile pool, say).
  HCWARM_CHECK_CU(drv, drv.cuStreamBeginCapture(stream, cuda::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
  int i = 0;
  try {
    for (; i < calls; ++i) call(i);
  } catch (const Error& e) {
    // Leave capture mode so the stream works again; the partial graph is dropped.
    drv.cuStreamEndCapture(stream, &g.graph);
    HCWARM_THROW(e.kind(), "stream capture, call {} of {}: {}", i + 1, calls, e.message());
  } catch (...) {
    drv.cuStreamEndCapture(stream, &g.graph);
    throw;
  }
  HCWARM_CHECK_CU(drv, drv.cuStreamEndCapture(stream, &g.graph));
  HCWARM_CHECK_CU(drv, drv.cuGraphInstantiate(&g.exec, g.graph, 0));

  auto replay = [&](int) { HCWARM_CHECK_CU(drv, drv.cuGraphLaunch(g.exec, stream)); };
  StreamTimer timer(dev);
  timer.total(warmups, replay);  // the first launch uploads the graph to the device
  const double s = median(timer.each(replays, replay));
  return s / calls * 1e6;
}

Measured measure_eager(Device& dev, const std::function<void(int)>& call, double min_seconds, jit::JitRuntime* rt) {
  Measured m;
  try {
    const size_t events_before = rt != nullptr ? rt->events().size() : 0;
    const double compiler_before = rt != nullptr ? rt->stats().compile_seconds : 0.0;
    call(0);
    dev.synchronize();
    if (rt != nullptr) {
      const auto ev = rt->events();
      for (size_t i = events_before; i < ev.size(); ++i) {
        if (ev[i].source == jit::ArtifactSource::Compiled) m.first_call_s = std::max(m.first_call_s, ev[i].seconds);
      }
      if (m.first_call_s >= 0) m.compile_s = rt->stats().compile_seconds - compiler_before;
    }
    StreamTimer timer(dev);
    timer.total(3, call);  // warm up
    // Grow the iteration count until a run lasts min_seconds.
    int iters = 5;
    double s = timer.total(iters, call);
    while (s < min_seconds && iters < (1 << 20)) {
      iters = static_cast<int>(std::min<double>(iters * 8.0, iters * std::max(2.0, 1.2 * min_seconds / std::max(s, 1e-9))));
      s = timer.total(iters, call);
    }
    m.us = s / iters * 1e6;
    m.ok = true;
  } catch (const Error& e) {
    m.error = e.message();
  }
  return m;
}

void measure_graph(Measured& m, cuda::CudaDevice& dev, const std::function<void(int)>& call, int calls, int replays) {
  if (!m.ok || replays <= 0) return;
  try {
    m.graph_us = graph_replay_us(dev, calls, call, 3, replays);
  } catch (const Error& e) {
    m.graph_error = e.message();
  }
}

}  // namespace hcwarm::cli
