#pragma once
// Every HCWARM_* environment variable, parsed once into a typed struct. Nothing
// else in hcwarm reads the environment; hot paths never do. README.md lists them.
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace hcwarm {

// Where a Python environment's site-packages may be, for NVIDIA's NVRTC pip
// wheels (jit/nvrtc_library.hpp): the variables Python and its environment
// managers set, as given.
struct PythonEnv {
  std::string virtual_env;    // VIRTUAL_ENV (an activated venv): $VIRTUAL_ENV/lib/python3*/site-packages
  std::string conda_prefix;   // CONDA_PREFIX (an activated conda env): the same under it
  std::vector<std::filesystem::path> python_path;  // PYTHONPATH's entries, empty ones left out

  // This process's, read from the environment on the first call (never throws):
  // for the NVRTC search of a runtime made without an EnvConfig at hand.
  static const PythonEnv& process();
};

struct EnvConfig {
  // HCWARM_CACHE_DIR: persistent kernel cache root (default ~/.cache/hcwarm, or
  // $XDG_CACHE_HOME/hcwarm). An empty value disables the disk cache.
  std::optional<std::filesystem::path> cache_dir;
  // HCWARM_CACHE_MAX_MB: size cap of the disk cache, least-recently-used entries pruned past it.
  uint64_t cache_max_bytes = 4ull << 30;
  // HCWARM_CACHE_TRUST: whose cache directories code is loaded from, as long as no
  // group/other can write them. owner (default): this user's. shared:NAME (a user
  // name or uid, resolved here): also NAME's, e.g. a read-only cache root ships.
  // shared: anyone's, i.e. whoever created the path first.
  bool cache_trust_shared = false;
  std::optional<uint32_t> cache_trust_owner_uid;  // shared:NAME
  std::string cache_trust_owner;                  // NAME as given, for messages
  // HCWARM_BUNDLE_TRUSTED_KEYS: PEM Ed25519 public-key files, separated by ':'.
  // When any is set, `cache import` takes only bundles signed by one of them
  // (as with --trusted-key). Read by the import, not here.
  std::vector<std::filesystem::path> bundle_trusted_keys;
  // HCWARM_STRICT_WARMUP=1: a compile after the runtime is ready is an error, not a warning.
  bool strict_warmup = false;
  // HCWARM_MHC_PREWARM=0: the model's mHC prewarm hook does nothing.
  bool mhc_prewarm = true;
  // HCWARM_MHC_ONE_PASS=0: hc_pre on CUDA takes the split policy's two kernels
  // in the buckets the one-pass kernel serves (hc_pre_kernel_splits), and
  // hc_head its cluster kernel at every T: the one-pass kernel's cooperative
  // launch waits for 128 free SMs (for engines that keep other kernels
  // resident meanwhile).
  bool mhc_one_pass = true;
  // HCWARM_MHC_EARLY_FN=1: hc_pre's partial kernel, which starts as the kernel before it on
  // the stream drains, loads its first fn chunk before it waits for that kernel (0.4-0.7 µs
  // more off a decode call on an H100), so fn must not be written by the kernel directly before the call.
  // By default it reads nothing before the wait: plain stream order for every input.
  bool mhc_early_fn = false;
  // HCWARM_MHC_ONE_WAVE=0: hc_pre at hidden 4096 from 129 to 512 tokens runs its split class's
  // pair instead of the one-wave pair (two thirds of the parts, a deeper partial and the
  // streaming finish in two blocks per token: 1.5-16% faster on an H100).
  bool mhc_one_wave = true;
  // HCWARM_CUDA_PORTABLE=1: the CUDA kernels in their portable forms on any GPU,
  // as below sm_90 (no one-pass kernel, no clusters, no programmatic dependent
  // launch): how those forms are tested and timed on a Hopper GPU.
  bool cuda_portable = false;
  // HCWARM_TORCH_CPP_OPS=0: torch.ops.hcwarm.* are the Python package's operators even
  // where its C++ operator library was built (python/src/torch_ops).
  bool torch_cpp_ops = true;
  // HCWARM_JIT=off: no kernel is ever compiled; a kernel missing from memory and
  // the disk cache is an error (deployments that run only ahead-of-time builds).
  bool jit_compile = true;
  // HCWARM_TIERED=0: a kernel missing from memory and disk compiles in the request
  // path. Default: the call runs the generic kernel while it compiles in the background.
  bool tiered = true;
  // HCWARM_LOCK_TIMEOUT_S: longest wait for a kernel's cache lock held by another
  // process (default 600); past it the call fails naming the key and the holder.
  int lock_timeout_s = 600;
  // HCWARM_COMPILE_TIMEOUT_S: longest run of the host compiler for one kernel
  // (default 600); past it the compiler is killed and the call fails naming it.
  int compile_timeout_s = 600;
  // HCWARM_GROUP_TIMEOUT_S: longest wait in each collective of a group's kernel
  // exchange (prewarm(group=...), `bench cold-start --hosts`); past it the rank
  // fails naming the wait. Unset: the process group's own timeout (the bench: 600).
  std::optional<int> group_timeout_s;
  // HCWARM_JOBS as given: the compile-thread budget (0 or unset: compile_jobs' default).
  int jobs = 0;
  // HCWARM_LOCAL_WORLD_SIZE, else torchrun's LOCAL_WORLD_SIZE, else 1: the processes
  // of this job on this host, which share its cores.
  int local_world_size = 1;
  // Compile threads this process runs at once (JIT builds and NVRTC parts together):
  // jobs when given, else hardware threads / local_world_size, at least 1.
  int compile_jobs = 1;
  // Compile threads all processes of the host that share a kernel cache run at
  // once (its lock-file slots, jit/host_compile_slots.hpp): the hardware threads,
  // or 0 (no host-wide slots) when HCWARM_JOBS fixes the count per process.
  int host_compile_slots = 0;
  // HCWARM_CXX: host compiler for the CPU backend's JIT (default c++).
  std::string host_cxx = "c++";
  // HCWARM_NUM_SMS: multiprocessor count to plan for when no GPU is present (default 132, an H200).
  std::optional<int> num_sms;
  // HCWARM_LOG_LEVEL: trace|debug|info|warn|error|off (default info).
  std::string log_level = "info";
  // HCWARM_CUDA_LIBRARY / HCWARM_NVRTC_LIBRARY: explicit paths for dlopen.
  std::string cuda_library;
  std::string nvrtc_library;
  // CUDA_HOME (the toolkit's own variable): NVRTC is also looked for in $CUDA_HOME/lib64.
  std::string cuda_home;
  // VIRTUAL_ENV, CONDA_PREFIX, PYTHONPATH: where NVRTC's pip wheels are also looked for.
  PythonEnv python;

  // The HCWARM_* (and CUDA_HOME) variables that were given, whatever their value:
  // for `hcwarm info`, which tells a default from a setting.
  std::vector<std::string> given;

  // Parses the process environment. Bad values throw ErrorKind::InvalidArgument naming the variable.
  static EnvConfig from_environment();
  // Parses an explicit map (tests); hardware_threads <= 0: this machine's.
  static EnvConfig from_map(const std::map<std::string, std::string>& vars, int hardware_threads = 0);
  // The budget rule behind compile_jobs.
  static int compile_budget(int jobs, int local_world_size, int hardware_threads);
};

// The default number of SMs when none is known: an H200's.
inline constexpr int kDefaultNumSms = 132;

}  // namespace hcwarm
