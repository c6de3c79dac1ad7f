// Where NVRTC is found (jit/nvrtc_library.hpp) and what each place held, and
// every CUDA kernel family compiling under both NVRTC majors hcwarm takes:
// the toolkit's 13.x and 12.9 from NVIDIA's pip wheel (nvidia-cuda-nvrtc-cu12,
// which scripts/setup.sh installs into .venv/). No GPU is needed.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "common/test_util.hpp"
#include "core/embedded_kernels.hpp"
#include "core/env_config.hpp"
#include "core/error.hpp"
#include "jit/compiler.hpp"
#include "jit/cubin_set.hpp"
#include "jit/cuda_targets.hpp"
#include "jit/nvrtc_library.hpp"
#include "model/model_config.hpp"
#include "runtime/kernel_plan.hpp"

namespace hcwarm::jit {
namespace {
namespace fs = std::filesystem;
using hcwarm::test::TempDir;
using hcwarm::test::wheel_nvrtc12;

constexpr const char* kToolkitNvrtc = "/usr/local/cuda/lib64/libnvrtc.so.13";

// A shared library with NVRTC's entry points whose nvrtcVersion says 12.2.
std::vector<std::byte> fake_old_nvrtc(const fs::path& work) {
  const HostCompiler cxx("c++");
  const std::string src =
      "extern \"C\" {\n"
      "int nvrtcVersion(int* major, int* minor) { *major = 12; *minor = 2; return 0; }\n"
      "int nvrtcCreateProgram() { return 1; }\n"
      "int nvrtcCompileProgram() { return 1; }\n"
      "int nvrtcGetProgramLogSize() { return 1; }\n"
      "int nvrtcGetProgramLog() { return 1; }\n"
      "int nvrtcGetCUBINSize() { return 1; }\n"
      "int nvrtcGetCUBIN() { return 1; }\n"
      "int nvrtcDestroyProgram() { return 1; }\n"
      "int nvrtcAddNameExpression() { return 1; }\n"
      "int nvrtcGetLoweredName() { return 1; }\n"
      "const char* nvrtcGetErrorString(int) { return \"fake\"; }\n"
      "}\n";
  return cxx.compile({src, 1, {}}, {}, work).binary;
}

void write_bytes(const fs::path& p, const std::vector<std::byte>& bytes) {
  fs::create_directories(p.parent_path());
  hcwarm::test::write_file(p, std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
}

std::string skipped_text(const NvrtcCompiler& c) {
  std::string s;
  for (const auto& k : c.skipped()) s += k.candidate + ": " + k.reason + "\n";
  return s;
}

TEST(NvrtcSearch, StandardOrderIsExplicitToolkitsWheelsThenLoader) {
  const PythonEnv none;
  const auto explicit_only = NvrtcSearch::standard("/opt/nvrtc/libnvrtc.so.12", "/cuda", none);
  EXPECT_EQ(explicit_only.candidates(), std::vector<std::string>{"/opt/nvrtc/libnvrtc.so.12"});

  NvrtcSearch s = NvrtcSearch::standard("", "/cuda", none);
  s.site_packages = {"/sp"};
  const std::vector<std::string> want{
      "/cuda/lib64/libnvrtc.so.13",
      "/cuda/lib64/libnvrtc.so.12",
      "/cuda/lib64/libnvrtc.so",
      "/usr/local/cuda/lib64/libnvrtc.so.13",
      "/usr/local/cuda/lib64/libnvrtc.so.12",
      "/usr/local/cuda/lib64/libnvrtc.so",
      "/sp/nvidia/cu13/lib/libnvrtc.so.13",
      "/sp/nvidia/cu13/lib/libnvrtc.so.12",
      "/sp/nvidia/cu13/lib/libnvrtc.so",
      "/sp/nvidia/cuda_nvrtc/lib/libnvrtc.so.13",
      "/sp/nvidia/cuda_nvrtc/lib/libnvrtc.so.12",
      "/sp/nvidia/cuda_nvrtc/lib/libnvrtc.so",
      "libnvrtc.so.13",
      "libnvrtc.so.12",
      "libnvrtc.so",
  };
  EXPECT_EQ(s.candidates(), want);
  // Without CUDA_HOME the toolkit step is /usr/local/cuda/lib64 alone.
  EXPECT_EQ(NvrtcSearch::standard("", "", none).toolkit_dirs, std::vector<fs::path>{"/usr/local/cuda/lib64"});
  EXPECT_EQ(NvrtcSearch::standard("", "/usr/local/cuda/", none).toolkit_dirs,
            std::vector<fs::path>{"/usr/local/cuda/lib64"});
}

TEST(NvrtcSearch, SitePackagesFromPythonPathThenVirtualEnvThenConda) {
  TempDir dir;
  const fs::path venv_sp = dir.path() / "venv" / "lib" / "python3.12" / "site-packages";
  const fs::path conda_sp = dir.path() / "conda" / "lib" / "python3.11" / "site-packages";
  const fs::path pp = dir.path() / "pp";
  for (const auto& d : {venv_sp, conda_sp, pp}) fs::create_directories(d);
  PythonEnv py;
  py.virtual_env = (dir.path() / "venv").string();
  py.conda_prefix = (dir.path() / "conda").string();
  py.python_path = {dir.path() / "missing", pp, venv_sp};  // a missing entry is left out, a repeated one listed once
  const auto got = python_site_packages(py);
  auto at = [&](const fs::path& p) { return std::find(got.begin(), got.end(), p) - got.begin(); };
  ASSERT_LT(at(pp), static_cast<ptrdiff_t>(got.size()));
  EXPECT_LT(at(pp), at(venv_sp));
  EXPECT_LT(at(venv_sp), at(conda_sp));
  ASSERT_LT(at(conda_sp), static_cast<ptrdiff_t>(got.size()));
  EXPECT_EQ(std::count(got.begin(), got.end(), venv_sp), 1);
  EXPECT_EQ(std::find(got.begin(), got.end(), dir.path() / "missing"), got.end());

  // EnvConfig reads the same variables.
  const EnvConfig env = EnvConfig::from_map({{"VIRTUAL_ENV", "/v"}, {"CONDA_PREFIX", "/c"}, {"PYTHONPATH", "/a::/b"}});
  EXPECT_EQ(env.python.virtual_env, "/v");
  EXPECT_EQ(env.python.conda_prefix, "/c");
  EXPECT_EQ(env.python.python_path, (std::vector<fs::path>{"/a", "/b"}));
}

// Each place before the one taken is listed with why it was skipped: not
// present, failed to load (with dlerror's words), too old (its nvrtcVersion).
// The one taken is a real NVRTC where it is installed (a library stays loaded
// for the process, so it is never planted in a temporary directory).
TEST(NvrtcSearch, TakesTheFirstNewEnoughAndSaysWhyEachBeforeWasSkipped) {
  const std::string wheel = wheel_nvrtc12();
  std::error_code ec;
  if (wheel.empty() && !fs::exists(kToolkitNvrtc, ec)) {
    GTEST_SKIP() << "no NVRTC here (neither " << kToolkitNvrtc << " nor the .venv's wheel)";
  }
  TempDir dir;
  const fs::path fake = dir.path() / "fake" / "lib64", empty_sp = dir.path() / "sp";
  hcwarm::test::write_file(fake / "libnvrtc.so.13", "not a library");
  fs::create_directories(dir.path() / "work");
  write_bytes(fake / "libnvrtc.so.12", fake_old_nvrtc(dir.path() / "work"));
  fs::create_directories(empty_sp);

  NvrtcSearch s;
  s.toolkit_dirs = {dir.path() / "toolkit" / "lib64", fake};
  s.site_packages = {empty_sp};
  // The wheel's site-packages, else the toolkit after the fakes.
  const fs::path real_sp = wheel.empty() ? fs::path() : fs::path(wheel).parent_path().parent_path().parent_path().parent_path();
  if (wheel.empty()) {
    s.toolkit_dirs.emplace_back(fs::path(kToolkitNvrtc).parent_path());
  } else {
    s.site_packages.push_back(real_sp);
  }
  s.loader = false;
  const NvrtcCompiler c("sm_90a", s);
  EXPECT_EQ(c.library_path(), wheel.empty() ? std::string(kToolkitNvrtc) : wheel);
  EXPECT_GE(c.major_version(), 12);
  const auto& k = c.skipped();
  const std::string all = skipped_text(c);
  ASSERT_GE(k.size(), 4u) << all;
  EXPECT_EQ(k[0].candidate, (dir.path() / "toolkit" / "lib64").string() + "/");
  EXPECT_EQ(k[0].reason, "not present");
  EXPECT_EQ(k[1].candidate, (fake / "libnvrtc.so.13").string());
  EXPECT_TRUE(k[1].reason.starts_with("failed to load: ")) << all;
  EXPECT_NE(k[1].reason.find("libnvrtc.so.13"), std::string::npos) << all;  // dlerror's words name the file
  EXPECT_EQ(k[2].candidate, (fake / "libnvrtc.so.12").string());
  EXPECT_EQ(k[2].reason, "too old: NVRTC 12.2 (hcwarm needs 12.4 or newer)");
  EXPECT_EQ(k[3].candidate, (fake / "libnvrtc.so").string());
  EXPECT_EQ(k[3].reason, "not present");
  if (!wheel.empty()) {
    ASSERT_GE(k.size(), 6u) << all;
    EXPECT_EQ(k[4].candidate, (empty_sp / "nvidia" / "cu13" / "lib").string() + "/");
    EXPECT_EQ(k[5].candidate, (empty_sp / "nvidia" / "cuda_nvrtc" / "lib").string() + "/");
    for (size_t i = 6; i < k.size(); ++i) {
      EXPECT_TRUE(k[i].candidate.starts_with(real_sp.string())) << all;
      EXPECT_EQ(k[i].reason, "not present") << all;
    }
  }

  // Only the old one: refused by name and version.
  s.toolkit_dirs = {fake};
  s.site_packages.clear();
  try {
    NvrtcCompiler("sm_90a", s);
    FAIL() << "an NVRTC 12.2 was taken";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Unavailable);
    EXPECT_NE(e.message().find("; only an older one was found"), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("too old: NVRTC 12.2"), std::string::npos) << e.message();
  }
  // HCWARM_NVRTC_LIBRARY naming it: the same refusal, naming the variable.
  try {
    NvrtcCompiler("sm_90a", NvrtcSearch::standard((fake / "libnvrtc.so.12").string(), "", {}));
    FAIL() << "an NVRTC 12.2 was taken";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Unavailable);
    EXPECT_NE(e.message().find("HCWARM_NVRTC_LIBRARY="), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("older than 12.4"), std::string::npos) << e.message();
  }
}

// Every kernel family the runner and `cache build` plan for CUDA, each planned
// spec of it (DeepSeek V4 Flash on an H200: every split class, the one-pass
// form, the embedding and boundary inputs), for `arch` as `cache build --arch`
// plans it (below sm_90: the portable forms).
std::map<std::string, std::vector<KernelSpec>> cuda_families(const std::string& arch) {
  runtime::KernelPlanInput in;
  in.model = model::resolve_model("dsv4-flash");
  in.env = EnvConfig::from_map({});
  in.backend = mhc::Backend::Cuda;
  in.cuda = mhc::cuda_kernel_options(arch, /*one_pass=*/true, /*force_portable=*/false);
  std::map<std::string, std::vector<KernelSpec>> out;
  const auto names = runtime::make_kernel_registry(in).families();
  for (const auto& name : names) {
    runtime::KernelRegistry r = runtime::make_kernel_registry(in);
    for (const auto& other : names) {
      if (other != name) r.remove(other);
    }
    out[name] = r.planned(/*include_mhc=*/true);
  }
  return out;
}

// The SM a CUDA ELF image holds SASS for: e_flags bits 8-15 from ELF ABI
// version 8 (CUDA 12.8 and newer), bits 0-7 before.
int cubin_sm(std::span<const std::byte> image) {
  if (image.size() < 64) return -1;
  const auto byte = [&](size_t i) { return static_cast<uint32_t>(image[i]); };
  const uint32_t flags = byte(48) | byte(49) << 8 | byte(50) << 16 | byte(51) << 24;  // ELF64 e_flags, little-endian
  return static_cast<int>(byte(8) >= 8 ? (flags >> 8) & 0xff : flags & 0xff);
}

// Compiles every family with the NVRTC at `library`; a family that fails is
// reported with its first error line, so that one run names all of them. Each
// image must be SASS for `arch` itself (no PTX left for the driver to compile).
void expect_every_family_compiles(const std::string& library, int major, const std::string& arch = "sm_90a") {
  const NvrtcCompiler nvrtc(arch, NvrtcSearch::standard(library, "", {}));
  ASSERT_EQ(nvrtc.major_version(), major) << library;
  const auto families = cuda_families(arch);
  const auto cc = parse_cuda_arch(arch);
  ASSERT_TRUE(cc.has_value()) << arch;
  const int sm = cc->first * 10 + cc->second;
  ASSERT_EQ(families.size(), 6u) << "a family was added or removed: this list is every CUDA family";
  TempDir work;
  int compiled = 0;
  for (const auto& [family, specs] : families) {
    ASSERT_FALSE(specs.empty()) << family << " plans nothing for CUDA here: it would not be compiled";
    for (const KernelSpec& spec : specs) {
      SCOPED_TRACE(spec.describe() + " with " + nvrtc.identity());
      const fs::path dir = work.path() / std::to_string(compiled++);
      fs::create_directories(dir);
      try {
        const auto out = nvrtc.compile(spec.kernel_source(), kernels::embedded_files(), dir);
        const auto set = unpack_cubin_set(out.binary);
        const auto images = set.value_or(std::vector<std::span<const std::byte>>{out.binary});
        ASSERT_FALSE(images.empty());
        for (const auto image : images) {
          EXPECT_EQ(std::string(reinterpret_cast<const char*>(image.data()), 4), "\x7f" "ELF");
          EXPECT_EQ(cubin_sm(image), sm) << "SASS for another target";
        }
      } catch (const Error& e) {
        ADD_FAILURE() << family << " does not compile: " << e.message() << "\n" << e.log().substr(0, 2000);
      }
    }
  }
}

TEST(NvrtcMajors, EveryCudaFamilyCompilesUnderTheToolkitsNvrtc13) {
  std::error_code ec;
  if (!fs::exists(kToolkitNvrtc, ec)) GTEST_SKIP() << "no CUDA 13 toolkit NVRTC at " << kToolkitNvrtc;
  expect_every_family_compiles(kToolkitNvrtc, 13);
}

TEST(NvrtcMajors, EveryCudaFamilyCompilesUnderNvrtc129FromTheWheel) {
  const std::string lib = wheel_nvrtc12();
  if (lib.empty()) {
    GTEST_SKIP() << "NVRTC 12.x wheel not installed: no " HCWARM_SOURCE_DIR
                    "/.venv/lib/python*/site-packages/nvidia/cuda_nvrtc/lib/libnvrtc.so.12 (scripts/setup.sh "
                    "installs nvidia-cuda-nvrtc-cu12==12.9.*)";
  }
  expect_every_family_compiles(lib, 12);
}

// Blackwell: what the matrix (jit/cuda_targets.hpp) says compiles does, for the
// plan of that target (sm_120: no one-pass kernel). Not run on such a GPU.
TEST(NvrtcMajors, EveryCudaFamilyCompilesForDatacenterAndWorkstationBlackwellUnderNvrtc13) {
  std::error_code ec;
  if (!fs::exists(kToolkitNvrtc, ec)) GTEST_SKIP() << "no CUDA 13 toolkit NVRTC at " << kToolkitNvrtc;
  expect_every_family_compiles(kToolkitNvrtc, 13, "sm_100a");
  expect_every_family_compiles(kToolkitNvrtc, 13, "sm_103a");
  expect_every_family_compiles(kToolkitNvrtc, 13, "sm_120");
}

TEST(NvrtcMajors, EveryCudaFamilyCompilesForBlackwellUnderNvrtc129) {
  const std::string lib = wheel_nvrtc12();
  if (lib.empty()) GTEST_SKIP() << "NVRTC 12.x wheel not installed (scripts/setup.sh installs it)";
  expect_every_family_compiles(lib, 12, "sm_100a");
  expect_every_family_compiles(lib, 12, "sm_103a");
  expect_every_family_compiles(lib, 12, "sm_120");
}

// The portable floor: every family in its portable forms (no one-pass kernel,
// the cluster-free head) for sm_80, which sm_86 and sm_89 run too. Not run on
// such a GPU: the same forms run on an H200 under HCWARM_CUDA_PORTABLE=1.
TEST(NvrtcMajors, EveryCudaFamilyCompilesInItsPortableFormsForTheSm80Floor) {
  std::error_code ec;
  if (fs::exists(kToolkitNvrtc, ec)) expect_every_family_compiles(kToolkitNvrtc, 13, "sm_80");
  const std::string lib = wheel_nvrtc12();
  if (!lib.empty()) expect_every_family_compiles(lib, 12, "sm_80");
  if (!fs::exists(kToolkitNvrtc, ec) && lib.empty()) GTEST_SKIP() << "neither NVRTC 13 nor 12.9 here";
}

}  // namespace
}  // namespace hcwarm::jit
