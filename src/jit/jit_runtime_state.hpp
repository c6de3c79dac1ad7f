#pragma once
// JitRuntime's private records (a compiler per target, a spec resolved to its
// key, a key's in-flight slot), shared by the jit_runtime*.cpp files.
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/stopwatch.hpp"
#include "jit/jit_runtime.hpp"

namespace hcwarm::jit {

using Clock = std::chrono::steady_clock;

inline int hardware_threads() { return std::max(1, static_cast<int>(std::thread::hardware_concurrency())); }

struct JitRuntime::CompilerSlot {
  std::shared_ptr<Compiler> compiler;
  std::exception_ptr error;  // creating the compiler failed (e.g. no NVRTC)
  std::string ns;
  std::mutex mu;
  bool prepared = false;
};

struct JitRuntime::Resolved {
  std::shared_ptr<CompilerSlot> cs;
  std::string key;
  std::vector<EmbeddedFile> headers;
};

struct JitRuntime::Slot {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  bool retry = false;       // finished without a module (bytes landed, or a background failure): ask again
  bool background = false;  // queued for or run by the background worker (under slots_mu_)
  ArtifactSource source = ArtifactSource::Memory;
  std::shared_ptr<const LoadedModule> module;
  std::exception_ptr error;
  std::shared_ptr<PendingModule> ticket = std::make_shared<PendingModule>();  // for tiered askers
};

}  // namespace hcwarm::jit
