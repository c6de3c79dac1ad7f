#pragma once
// Timing helpers of `hcwarm bench op`: a timer for work queued on a device (CUDA
// events on the CudaDevice's stream, the host clock on the CPU), the device's
// copy bandwidth, its L2 size, and the per-call time of a sequence of calls
// captured into one CUDA graph and replayed, as serving engines run their
// decode steps.
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "backends/cuda/cuda_driver.hpp"
#include "core/device.hpp"

namespace hcwarm::cuda {
class CudaDevice;
}
namespace hcwarm::jit {
class JitRuntime;
}

namespace hcwarm::cli {

double median(std::vector<double> v);  // of a non-empty vector

// Times work queued back to back on a device: on a CudaDevice, CUDA events on
// its stream (what the GPU spent, launch gaps included); on a CPU device, the
// host clock around the calls (which run synchronously there).
class StreamTimer {
 public:
  explicit StreamTimer(Device& dev);
  ~StreamTimer();
  StreamTimer(const StreamTimer&) = delete;
  StreamTimer& operator=(const StreamTimer&) = delete;

  // Seconds for fn(0), ..., fn(iters - 1), timed as one span.
  double total(int iters, const std::function<void(int)>& fn);
  // The seconds of each of fn(0), ..., fn(reps - 1), still queued back to back
  // (one event between two calls, so the GPU never idles between them).
  std::vector<double> each(int reps, const std::function<void(int)>& fn);

 private:
  void ensure_events(size_t n);

  cuda::CudaDevice* cuda_;  // null on a CPU device
  std::vector<cuda::CUevent> events_;
};

// Copy bandwidth, bytes read + bytes written per second, of a copy of `bytes`
// between two buffers of `dev`: cuMemcpyDtoDAsync on the CudaDevice's stream
// (memcpy on the CPU); `warmups` untimed copies, then the median of `reps`.
double copy_bandwidth(Device& dev, size_t bytes, int warmups, int reps);

// The device's L2 size as the driver reports it (0 when it does not say).
size_t l2_cache_bytes(const cuda::CudaDevice& dev);

// Per-call microseconds under CUDA-graph replay: call(0), ..., call(calls - 1)
// captured into ONE graph on dev.stream() (thread-local capture mode),
// instantiated, replayed `warmups` times, then the median over `replays` timed
// replays of (replay seconds / calls). Each call must only queue work on the
// stream: no allocation, synchronization or synchronous copy while captured.
// Throws hcwarm::Error when the driver lacks graphs or a capture, instantiation
// or replay fails; the stream then is out of capture mode and the graph freed.
double graph_replay_us(cuda::CudaDevice& dev, int calls, const std::function<void(int)>& call, int warmups,
                       int replays);

// One op measured: eager, then (CUDA) under graph replay. The error strings
// hold what failed instead of a figure.
struct Measured {
  bool ok = false;                 // the eager measurement ran
  double us = 0;                   // eager: mean per call over >= min_seconds of back-to-back calls
  std::optional<double> graph_us;  // per call under CUDA-graph replay (median over the replays)
  double compile_s = -1;     // time inside the compiler (NVRTC / host compiler) on the first call, when it compiled
  double first_call_s = -1;  // the first call's whole JIT request: compile, cache publish, module load
  std::string error, graph_error;
};

// Eager timing of call(0), call(1), ...: one first call (it compiles, loads,
// sizes the op's workspace; its JIT cost read from rt when given), 3 warm-ups,
// then back-to-back calls, more each round until a round lasts min_seconds.
// An hcwarm::Error lands in Measured::error.
Measured measure_eager(Device& dev, const std::function<void(int)>& call, double min_seconds, jit::JitRuntime* rt);

// Adds m.graph_us: graph_replay_us of call(0), ..., call(calls - 1), 3 warm-up
// replays, or m.graph_error when it fails. Does nothing unless m.ok (the eager
// run left the kernels loaded and the workspace sized, so the calls only queue
// work, which is capturable) and replays > 0.
void measure_graph(Measured& m, cuda::CudaDevice& dev, const std::function<void(int)>& call, int calls, int replays);

}  // namespace hcwarm::cli
