#include "jit/nvrtc_library.hpp"

#include <link.h>

#include <algorithm>
#include <cctype>
#include <set>
#include <system_error>

namespace hcwarm::jit {
namespace fs = std::filesystem;

namespace {

// The libraries loaded in this process, by the paths the loader opened them at.
std::vector<fs::path> loaded_objects() {
  std::vector<fs::path> out;
  ::dl_iterate_phdr(
      [](struct dl_phdr_info* info, size_t, void* data) {
        if (info->dlpi_name != nullptr && info->dlpi_name[0] == '/') {
          static_cast<std::vector<fs::path>*>(data)->emplace_back(info->dlpi_name);
        }
        return 0;
      },
      &out);
  return out;
}

// "libpython3.11.so.1.0" -> "python3.11"; "" for any other name.
std::string libpython_dir_name(const std::string& file) {
  if (!file.starts_with("libpython3.")) return {};
  const size_t so = file.find(".so");
  if (so == std::string::npos) return {};
  std::string v = file.substr(3, so - 3);  // "python3.11" (or "python3.11d")
  while (!v.empty() && !std::isdigit(static_cast<unsigned char>(v.back()))) v.pop_back();
  return v;
}

// <prefix>/lib/python3*/site-packages, newest name first.
std::vector<fs::path> prefix_site_packages(const std::string& prefix) {
  std::vector<fs::path> out;
  if (prefix.empty()) return out;
  std::error_code ec;
  fs::directory_iterator it(fs::path(prefix) / "lib", ec);
  if (ec) return out;
  std::vector<std::string> names;
  for (const auto& e : it) {
    const std::string n = e.path().filename().string();
    if (n.starts_with("python3")) names.push_back(n);
  }
  std::sort(names.rbegin(), names.rend());
  for (const auto& n : names) out.push_back(fs::path(prefix) / "lib" / n / "site-packages");
  return out;
}

}  // namespace

std::vector<fs::path> python_site_packages(const PythonEnv& python) {
  std::vector<fs::path> guesses;
  for (const fs::path& lib : loaded_objects()) {
    for (fs::path a = lib.parent_path(); a.has_relative_path(); a = a.parent_path()) {
      if (a.filename() == "site-packages" || a.filename() == "dist-packages") {
        guesses.push_back(a);
        break;
      }
    }
    if (const std::string py = libpython_dir_name(lib.filename().string()); !py.empty()) {
      guesses.push_back(lib.parent_path() / py / "site-packages");
    }
  }
  for (const fs::path& p : python.python_path) guesses.push_back(p);
  for (const std::string* prefix : {&python.virtual_env, &python.conda_prefix}) {
    for (auto& p : prefix_site_packages(*prefix)) guesses.push_back(std::move(p));
  }
  std::vector<fs::path> out;
  std::set<fs::path> seen;
  for (const fs::path& g : guesses) {
    std::error_code ec;
    if (!fs::is_directory(g, ec)) continue;
    const fs::path canon = fs::weakly_canonical(g, ec);
    if (seen.insert(ec ? g : canon).second) out.push_back(g);
  }
  return out;
}

NvrtcSearch NvrtcSearch::standard(const std::string& library, const std::string& cuda_home, const PythonEnv& python) {
  NvrtcSearch s;
  if (!library.empty()) {
    s.library = library;
    s.loader = false;
    return s;
  }
  if (!cuda_home.empty()) s.toolkit_dirs.push_back((fs::path(cuda_home) / "lib64").lexically_normal());
  if (s.toolkit_dirs.empty() || s.toolkit_dirs.front() != "/usr/local/cuda/lib64") {
    s.toolkit_dirs.emplace_back("/usr/local/cuda/lib64");
  }
  s.site_packages = python_site_packages(python);
  return s;
}

std::vector<std::string> NvrtcSearch::candidates() const {
  static const char* const kNames[] = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"};
  if (!library.empty()) return {library};
  std::vector<std::string> out;
  auto dir = [&](const fs::path& d) {
    for (const char* n : kNames) out.push_back((d / n).string());
  };
  for (const auto& d : toolkit_dirs) dir(d);
  for (const auto& sp : site_packages) {
    dir(sp / "nvidia" / "cu13" / "lib");
    dir(sp / "nvidia" / "cuda_nvrtc" / "lib");
  }
  if (loader) {
    for (const char* n : kNames) out.emplace_back(n);
  }
  // Each once, where it first comes.
  std::vector<std::string> unique;
  std::set<std::string> seen;
  for (auto& c : out) {
    if (seen.insert(c).second) unique.push_back(std::move(c));
  }
  return unique;
}

}  // namespace hcwarm::jit
