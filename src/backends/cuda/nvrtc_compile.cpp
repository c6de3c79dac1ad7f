#include "backends/cuda/nvrtc_compile.hpp"

#include <dlfcn.h>

#include <chrono>
#include <mutex>
#include <type_traits>

#include "core/embedded_kernels.hpp"
#include "core/error.hpp"

namespace hcwarm::cuda {
namespace {

using nvrtcProgram = struct _nvrtcProgram*;
struct Nvrtc {
  int (*create)(nvrtcProgram*, const char*, const char*, int, const char* const*, const char* const*) = nullptr;
  int (*compile)(nvrtcProgram, int, const char* const*) = nullptr;
  int (*log_size)(nvrtcProgram, size_t*) = nullptr;
  int (*log)(nvrtcProgram, char*) = nullptr;
  int (*cubin_size)(nvrtcProgram, size_t*) = nullptr;
  int (*cubin)(nvrtcProgram, char*) = nullptr;
  int (*destroy)(nvrtcProgram*) = nullptr;
  const char* (*error_string)(int) = nullptr;
};

const Nvrtc& nvrtc(const std::string& path) {
  static std::mutex mu;
  static Nvrtc lib;
  static bool tried = false;
  static std::string failure;
  std::lock_guard<std::mutex> lock(mu);
  if (!tried) {
    tried = true;
    std::vector<std::string> names;
    if (!path.empty()) names.push_back(path);
    names.insert(names.end(), {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so", "/usr/local/cuda/lib64/libnvrtc.so.13",
                               "/usr/local/cuda/lib64/libnvrtc.so"});
    void* h = nullptr;
    for (const auto& n : names) {
      if ((h = dlopen(n.c_str(), RTLD_NOW | RTLD_LOCAL)) != nullptr) break;
    }
    if (h == nullptr) {
      failure = "cannot open libnvrtc (set HCWARM_NVRTC_LIBRARY)";
    } else {
      auto get = [&](auto& fn, const char* name) {
        fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(h, name));
        if (fn == nullptr) failure = fmt::format("libnvrtc has no {}", name);
      };
      get(lib.create, "nvrtcCreateProgram");
      get(lib.compile, "nvrtcCompileProgram");
      get(lib.log_size, "nvrtcGetProgramLogSize");
      get(lib.log, "nvrtcGetProgramLog");
      get(lib.cubin_size, "nvrtcGetCUBINSize");
      get(lib.cubin, "nvrtcGetCUBIN");
      get(lib.destroy, "nvrtcDestroyProgram");
      get(lib.error_string, "nvrtcGetErrorString");
    }
  }
  if (!failure.empty()) HCWARM_THROW(ErrorKind::Unavailable, "{}", failure);
  return lib;
}

}  // namespace

bool nvrtc_available(const std::string& library_path) {
  try {
    nvrtc(library_path);
    return true;
  } catch (...) {
    return false;
  }
}

NvrtcResult nvrtc_compile(const std::string& source, const std::string& arch, const std::string& library_path,
                          const std::vector<std::string>& extra_options) {
  const Nvrtc& n = nvrtc(library_path);
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::string> header_names, header_texts;
  for (const auto& f : kernels::embedded_files()) {
    header_names.emplace_back(f.path);
    header_texts.emplace_back(f.content);
  }
  std::vector<const char*> hn, ht;
  for (size_t i = 0; i < header_names.size(); ++i) {
    hn.push_back(header_names[i].c_str());
    ht.push_back(header_texts[i].c_str());
  }
  nvrtcProgram prog = nullptr;
  int rc = n.create(&prog, source.c_str(), "hcwarm_kernel.cu", static_cast<int>(hn.size()), ht.data(), hn.data());
  if (rc != 0) HCWARM_THROW(ErrorKind::Nvrtc, "nvrtcCreateProgram: {}", n.error_string(rc));
  std::vector<std::string> opts{"--gpu-architecture=" + arch, "--std=c++17", "-default-device"};
  opts.insert(opts.end(), extra_options.begin(), extra_options.end());
  std::vector<const char*> o;
  for (auto& s : opts) o.push_back(s.c_str());
  rc = n.compile(prog, static_cast<int>(o.size()), o.data());
  NvrtcResult r;
  size_t log_size = 0;
  n.log_size(prog, &log_size);
  if (log_size > 1) {
    r.log.resize(log_size);
    n.log(prog, r.log.data());
    r.log.resize(log_size - 1);
  }
  if (rc != 0) {
    n.destroy(&prog);
    HCWARM_THROW_LOG(ErrorKind::Compile, r.log, "NVRTC compile for {} failed: {}", arch, n.error_string(rc));
  }
  size_t size = 0;
  n.cubin_size(prog, &size);
  r.cubin.resize(size);
  n.cubin(prog, reinterpret_cast<char*>(r.cubin.data()));
  n.destroy(&prog);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

}  // namespace hcwarm::cuda
