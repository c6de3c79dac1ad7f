#include <dlfcn.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "core/error.hpp"
#include "jit/cuda_targets.hpp"
#include "core/json_util.hpp"
#include "core/thread_pool.hpp"
#include "jit/compiler.hpp"
#include "jit/cubin_set.hpp"
#include "jit/fs_util.hpp"

namespace hcwarm::jit {
namespace fs = std::filesystem;

// NVRTC's C API, declared here so that hcwarm builds without the CUDA toolkit.
struct NvrtcCompiler::Api {
  using Program = struct _nvrtcProgram*;
  using Result = int;  // nvrtcResult; 0 = NVRTC_SUCCESS
  Result (*version)(int*, int*) = nullptr;
  Result (*create)(Program*, const char*, const char*, int, const char* const*, const char* const*) = nullptr;
  Result (*compile)(Program, int, const char* const*) = nullptr;
  Result (*log_size)(Program, size_t*) = nullptr;
  Result (*log)(Program, char*) = nullptr;
  Result (*cubin_size)(Program, size_t*) = nullptr;
  Result (*cubin)(Program, char*) = nullptr;
  Result (*destroy)(Program*) = nullptr;
  Result (*add_name)(Program, const char*) = nullptr;                  // nvrtcAddNameExpression
  Result (*lowered_name)(Program, const char*, const char**) = nullptr;  // nvrtcGetLoweredName
  const char* (*error_string)(Result) = nullptr;
  std::string path;
  int major = 0, minor = 0;
  uint64_t library_bytes = 0;  // size of the loaded libnvrtc: tells patch releases apart

  std::string err(Result r) const { return fmt::format("{} ({})", error_string ? error_string(r) : "?", r); }
};

namespace {

// The entry points of an opened library; the name of the first one missing, or "".
template <class F>
bool resolve(void* h, const char* name, F& fn, std::string& missing) {
  fn = reinterpret_cast<F>(::dlsym(h, name));
  if (fn == nullptr && missing.empty()) missing = name;
  return fn != nullptr;
}

bool older_than_minimum(int major, int minor) {
  return major < kNvrtcMinMajor || (major == kNvrtcMinMajor && minor < kNvrtcMinMinor);
}

// Opens one candidate: the NVRTC it holds (kept for the life of the process),
// or null with why not in `why`. Called with the memo's lock held.
std::unique_ptr<NvrtcCompiler::Api> open_candidate(const std::string& candidate, std::string& why) {
  ::dlerror();
  void* h = ::dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) {
    const char* e = ::dlerror();
    why = fmt::format("failed to load: {}", e ? e : "dlopen failed");
    return nullptr;
  }
  auto api = std::make_unique<NvrtcCompiler::Api>();
  api->path = candidate;
  std::string missing;
  resolve(h, "nvrtcVersion", api->version, missing);
  resolve(h, "nvrtcCreateProgram", api->create, missing);
  resolve(h, "nvrtcCompileProgram", api->compile, missing);
  resolve(h, "nvrtcGetProgramLogSize", api->log_size, missing);
  resolve(h, "nvrtcGetProgramLog", api->log, missing);
  resolve(h, "nvrtcGetCUBINSize", api->cubin_size, missing);
  resolve(h, "nvrtcGetCUBIN", api->cubin, missing);
  resolve(h, "nvrtcDestroyProgram", api->destroy, missing);
  resolve(h, "nvrtcAddNameExpression", api->add_name, missing);
  resolve(h, "nvrtcGetLoweredName", api->lowered_name, missing);
  resolve(h, "nvrtcGetErrorString", api->error_string, missing);
  if (!missing.empty()) {
    ::dlclose(h);
    why = fmt::format("failed to load: it has no symbol {} (not NVRTC?)", missing);
    return nullptr;
  }
  if (const auto r = api->version(&api->major, &api->minor); r != 0) {
    why = fmt::format("failed to load: nvrtcVersion failed: {}", api->err(r));
    ::dlclose(h);
    return nullptr;
  }
  if (older_than_minimum(api->major, api->minor)) {
    why = fmt::format("too old: NVRTC {}.{} (hcwarm needs {}.{} or newer)", api->major, api->minor, kNvrtcMinMajor,
                      kNvrtcMinMinor);
    ::dlclose(h);
    return nullptr;
  }
  // The file as opened (a path candidate), else where the loader found it. Not
  // dladdr's name alone: a library already loaded through another path keeps
  // that first path, which may be gone by now.
  Dl_info info{};
  struct stat st {};
  if (candidate.find('/') != std::string::npos && ::stat(candidate.c_str(), &st) == 0) {
    api->library_bytes = static_cast<uint64_t>(st.st_size);
  } else if (::dladdr(reinterpret_cast<void*>(api->version), &info) != 0 && info.dli_fname != nullptr &&
             ::stat(info.dli_fname, &st) == 0) {
    api->library_bytes = static_cast<uint64_t>(st.st_size);
  }
  return api;
}

// Runs the search: the first candidate that opens as a new enough NVRTC, with the
// ones before it and why each was skipped.
const NvrtcCompiler::Api* load_api(const NvrtcSearch& search, std::vector<NvrtcSkipped>& skipped) {
  static std::mutex mu;
  static std::map<std::string, std::unique_ptr<NvrtcCompiler::Api>> loaded;  // by candidate; never unloaded
  std::lock_guard lock(mu);
  skipped.clear();
  std::string absent_dir;  // the last directory found missing: its files are not listed one by one
  for (const std::string& c : search.candidates()) {
    if (auto it = loaded.find(c); it != loaded.end()) return it->second.get();
    const bool is_path = c.find('/') != std::string::npos;
    std::error_code ec;
    if (is_path && search.library.empty()) {
      const std::string dir = fs::path(c).parent_path().string();
      if (dir == absent_dir) continue;
      if (!fs::is_directory(dir, ec)) {
        absent_dir = dir;
        skipped.push_back({dir + "/", "not present"});
        continue;
      }
    }
    if (is_path && !fs::exists(c, ec)) {
      skipped.push_back({c, "not present"});
      continue;
    }
    std::string why;
    if (auto api = open_candidate(c, why)) {
      const auto* out = api.get();
      loaded.emplace(c, std::move(api));
      return out;
    }
    skipped.push_back({c, why});
  }
  std::string tried;
  bool too_old = false;
  for (const auto& s : skipped) {
    tried += fmt::format("\n  {}: {}", s.candidate, s.reason);
    too_old = too_old || s.reason.starts_with("too old");
  }
  if (!search.library.empty() && too_old) {
    HCWARM_THROW(ErrorKind::Unavailable,
                 "HCWARM_NVRTC_LIBRARY={} is an NVRTC older than {}.{}, which hcwarm cannot compile with:{}",
                 search.library, kNvrtcMinMajor, kNvrtcMinMinor, tried);
  }
  HCWARM_THROW(ErrorKind::Unavailable,
               "NVRTC is not available ({}.{} or newer is needed{}), so CUDA kernels cannot be compiled (set "
               "HCWARM_NVRTC_LIBRARY to libnvrtc.so's path, or install the CUDA toolkit or the "
               "nvidia-cuda-nvrtc-cu12 / nvidia-cuda-nvrtc wheel); tried:{}",
               kNvrtcMinMajor, kNvrtcMinMinor, too_old ? "; only an older one was found" : "", tried);
}

}  // namespace

NvrtcCompiler::NvrtcCompiler(std::string arch, std::string library, std::vector<std::string> extra_flags,
                             std::vector<fs::path> include_dirs, std::string cuda_home,
                             std::shared_ptr<ThreadBudget> budget)
    : NvrtcCompiler(std::move(arch), NvrtcSearch::standard(library, cuda_home, PythonEnv::process()),
                    std::move(extra_flags), std::move(include_dirs), std::move(budget)) {}

NvrtcCompiler::NvrtcCompiler(std::string arch, const NvrtcSearch& search, std::vector<std::string> extra_flags,
                             std::vector<fs::path> include_dirs, std::shared_ptr<ThreadBudget> budget)
    : arch_(std::move(arch)),
      extra_(std::move(extra_flags)),
      include_dirs_(std::move(include_dirs)),
      budget_(budget ? std::move(budget)
                     : std::make_shared<ThreadBudget>(
                           std::max(0, static_cast<int>(std::thread::hardware_concurrency()) - 1))) {
  HCWARM_CHECK_ARG(arch_.rfind("sm_", 0) == 0 && arch_.size() > 3,
                   "CUDA architecture {} must be a real one such as sm_90a (a cubin is built)",
                   quoted_excerpt(arch_));
  require_supported_cuda_arch(arch_, "NVRTC target");
  api_ = load_api(search, skipped_);
  // nvrtcVersion gives only major.minor; the library's size separates patch
  // releases without naming where it is installed.
  identity_ = fmt::format("nvrtc {}.{} ({} bytes)", api_->major, api_->minor, api_->library_bytes);
}

const std::string& NvrtcCompiler::library_path() const { return api_->path; }
int NvrtcCompiler::major_version() const { return api_->major; }
int NvrtcCompiler::minor_version() const { return api_->minor; }

std::vector<std::string> NvrtcCompiler::flags() const {
  std::vector<std::string> f{"--gpu-architecture=" + arch_, "-std=c++20"};
  // NVRTC 12.4+ (every one the search takes): leave out the texture, surface
  // and device-runtime declarations no kernel here uses; same cubin, ~5% less
  // compile time (the front end's share; 2-core dev machine, mhc_pre part:
  // 0.154 -> 0.145 s).
  if (!older_than_minimum(api_->major, api_->minor)) f.emplace_back("--minimal");
  f.insert(f.end(), extra_.begin(), extra_.end());
  return f;
}

CompileOutput NvrtcCompiler::compile_program(const KernelSource& source, const std::vector<std::string>& opts,
                                             int part) const {
  std::vector<const char*> copts;
  for (const auto& o : opts) copts.push_back(o.c_str());

  Api::Program prog = nullptr;
  if (const auto r = api_->create(&prog, source.text.c_str(), "kernel.cu", 0, nullptr, nullptr); r != 0) {
    HCWARM_THROW(ErrorKind::Nvrtc, "nvrtcCreateProgram failed: {}", api_->err(r));
  }
  struct Destroy {
    const Api* api;
    Api::Program* p;
    ~Destroy() { api->destroy(p); }
  } destroy{api_, &prog};

  // The kernels are templates: NVRTC instantiates those named here.
  std::vector<const KernelEntry*> entries;
  for (const KernelEntry& e : source.entries) {
    if (part >= 0 && e.part != part) continue;
    if (const auto r = api_->add_name(prog, e.expression.c_str()); r != 0) {
      HCWARM_THROW(ErrorKind::Nvrtc, "nvrtcAddNameExpression({}) failed: {}", e.expression, api_->err(r));
    }
    entries.push_back(&e);
  }
  const auto rc = api_->compile(prog, static_cast<int>(copts.size()), copts.data());
  std::string log;
  size_t log_size = 0;
  if (api_->log_size(prog, &log_size) == 0 && log_size > 1) {
    log.resize(log_size);
    if (api_->log(prog, log.data()) == 0) {
      log.resize(log_size - 1);  // drop the terminating NUL
    } else {
      log.clear();
    }
  }
  if (rc != 0) HCWARM_THROW_LOG(ErrorKind::Compile, log, "NVRTC failed for {}: {}", arch_, api_->err(rc));
  // The launcher looks each kernel up by the entry's symbol: a wrong mangling fails here, not at load.
  for (const KernelEntry* e : entries) {
    const char* lowered = nullptr;
    if (const auto r = api_->lowered_name(prog, e->expression.c_str(), &lowered); r != 0 || lowered == nullptr) {
      HCWARM_THROW(ErrorKind::Nvrtc, "nvrtcGetLoweredName({}) failed: {}", e->expression, api_->err(r));
    }
    if (e->symbol != lowered) {
      HCWARM_THROW(ErrorKind::Internal, "kernel entry {}: its symbol {} is not NVRTC's lowered name {}", e->expression,
                   e->symbol, lowered);
    }
  }

  size_t size = 0;
  if (const auto r = api_->cubin_size(prog, &size); r != 0 || size == 0) {
    HCWARM_THROW(ErrorKind::Nvrtc, "nvrtcGetCUBINSize failed: {}", api_->err(r));
  }
  CompileOutput out;
  out.binary.resize(size);
  if (const auto r = api_->cubin(prog, reinterpret_cast<char*>(out.binary.data())); r != 0) {
    HCWARM_THROW(ErrorKind::Nvrtc, "nvrtcGetCUBIN failed: {}", api_->err(r));
  }
  out.log = std::move(log);
  return out;
}

CompileOutput NvrtcCompiler::compile(const KernelSource& source, std::span<const EmbeddedFile> headers,
                                     const fs::path& workdir) const {
  const int parts = source.parts;
  HCWARM_CHECK_ARG(parts >= 1 && parts <= kMaxSourceParts, "a CUDA source holds 1 to {} parts, not {}", kMaxSourceParts,
                   parts);
  for (const KernelEntry& e : source.entries) {
    HCWARM_CHECK_ARG(e.part >= 0 && e.part < parts, "kernel entry {} is in part {} of a source of {}", e.expression,
                     e.part, parts);
  }
  const fs::path inc = workdir / "include";
  write_headers(inc, headers);
  std::vector<std::string> opts = flags();
  opts.push_back("--include-path=" + inc.string());
  for (const auto& d : include_dirs_) opts.push_back("--include-path=" + d.string());
  // Parts run in parallel only when the budget has a thread for each part beyond
  // the caller's: in a batch (warmup, cache build) the threads already have a
  // key each, and one program per key costs less (each part repeats the front end).
  ThreadBudget::Lease extra = budget_->try_acquire(parts - 1);
  if (parts == 1 || extra.count() == 0) return compile_program(source, opts, -1);

  // One program per part (NVRTC programs are independent), the caller compiling one.
  std::vector<CompileOutput> outs(static_cast<size_t>(parts));
  std::vector<std::exception_ptr> errors(static_cast<size_t>(parts));
  ThreadPool pool(parts);
  pool.parallel_for(parts, 1, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      try {
        std::vector<std::string> o = opts;
        o.push_back(fmt::format("-DHCWARM_PART={}", i));
        outs[static_cast<size_t>(i)] = compile_program(source, o, static_cast<int>(i));
      } catch (...) {
        errors[static_cast<size_t>(i)] = std::current_exception();
      }
    }
  });
  for (const auto& e : errors) {
    if (e) std::rethrow_exception(e);  // the first failing part, with its log
  }
  CompileOutput out;
  std::vector<std::vector<std::byte>> cubins;
  for (int i = 0; i < parts; ++i) {
    auto& o = outs[static_cast<size_t>(i)];
    if (!o.log.empty()) out.log += fmt::format("part {}:\n{}\n", i, o.log);
    cubins.push_back(std::move(o.binary));
  }
  out.binary = pack_cubin_set(cubins);
  return out;
}

}  // namespace hcwarm::jit
