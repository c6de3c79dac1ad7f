#pragma once
// Where NVRTC is looked for, and what each place held. NVRTC 12.4 or newer
// (12.x or 13.x) is opened with dlopen, never linked; the search, in order:
//   1. HCWARM_NVRTC_LIBRARY: that file only, nothing else is looked at;
//   2. the toolkits: $CUDA_HOME/lib64, then /usr/local/cuda/lib64;
//   3. NVIDIA's pip wheels, in each site-packages directory (see python_site_packages):
//      nvidia/cu13/lib (nvidia-cuda-nvrtc, CUDA 13), then nvidia/cuda_nvrtc/lib
//      (nvidia-cuda-nvrtc-cu12);
//   4. the loader's path: dlopen("libnvrtc.so.13"), "libnvrtc.so.12", "libnvrtc.so".
// In each directory libnvrtc.so.13, then libnvrtc.so.12, then libnvrtc.so. The
// first one that opens, resolves NVRTC's entry points and reports 12.4 or newer
// (nvrtcVersion) is taken; every one before it is kept with why it was skipped.
#include <filesystem>
#include <string>
#include <vector>

#include "core/env_config.hpp"

namespace hcwarm::jit {

// The oldest NVRTC hcwarm compiles with (--minimal, the kernels' C++20).
inline constexpr int kNvrtcMinMajor = 12, kNvrtcMinMinor = 4;

struct NvrtcSearch {
  std::string library;                             // HCWARM_NVRTC_LIBRARY: only this file
  std::vector<std::filesystem::path> toolkit_dirs;  // step 2
  std::vector<std::filesystem::path> site_packages;  // step 3
  bool loader = true;                              // step 4

  // The search of the order above: `library` alone when given, else
  // $cuda_home/lib64 (when cuda_home is set), /usr/local/cuda/lib64, the
  // site-packages of python_site_packages(python), and the loader's path.
  static NvrtcSearch standard(const std::string& library, const std::string& cuda_home, const PythonEnv& python);
  // Every file or name it would try, in order (for messages and the memo).
  std::vector<std::string> candidates() const;
};

// The site-packages directories NVIDIA's wheels may be in, existing ones only,
// each once, in this order:
//   - the running Python's: the site-packages (or dist-packages) directory
//     above a library already loaded in this process (hcwarm's own extension
//     module, torch's libraries, any wheel's), and <dir>/python3.N/site-packages
//     of a loaded <dir>/libpython3.N.so;
//   - each PYTHONPATH entry (one may be a site-packages directory itself);
//   - $VIRTUAL_ENV/lib/python3*/site-packages, then $CONDA_PREFIX/lib/python3*/site-packages.
// No Python is run: a process without Python loaded finds its environment
// through the variables an activated environment sets.
std::vector<std::filesystem::path> python_site_packages(const PythonEnv& python);

// One place looked at before the NVRTC that was taken, and why it was not.
struct NvrtcSkipped {
  std::string candidate;  // a path, or a bare name for the loader
  std::string reason;     // "not present", "failed to load: <dlerror>", "too old: NVRTC 12.2 ..."
};

}  // namespace hcwarm::jit
