// The built-in Host ModuleLoader: verified shared-object bytes -> sealed memfd ->
// dlopen(RTLD_NOW | RTLD_LOCAL) through /proc/self/fd/N.
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>

#include "core/error.hpp"
#include "jit/jit_runtime.hpp"

namespace hcwarm::jit {
namespace {

class HostModule final : public LoadedModule {
 public:
  HostModule(void* handle, int fd, std::string key) : handle_(handle), fd_(fd), key_(std::move(key)) {}
  ~HostModule() override {
    ::dlclose(handle_);
    // Closed only after dlclose: glibc matches an already-loaded object by its
    // name, so the fd number (and with it the path) must not be reused while loaded.
    if (fd_ >= 0) ::close(fd_);
  }
  void* function(std::string_view name) const override {
    const std::string n(name);
    ::dlerror();
    void* p = ::dlsym(handle_, n.c_str());
    if (p == nullptr) HCWARM_THROW(ErrorKind::Internal, "kernel module {} has no symbol {:?}", key_, n);
    return p;
  }
  const std::string& key() const override { return key_; }

 private:
  void* handle_;
  int fd_;
  std::string key_;
};

bool write_all(int fd, std::span<const std::byte> b) {
  size_t done = 0;
  while (done < b.size()) {
    const ssize_t n = ::write(fd, b.data() + done, b.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    done += static_cast<size_t>(n);
  }
  return true;
}

class HostLoader final : public ModuleLoader {
 public:
  std::shared_ptr<LoadedModule> load(const std::string& key, std::span<const std::byte> binary) override {
    const std::string name = "hcwarm-" + key.substr(0, 16);
    int fd = ::memfd_create(name.c_str(), MFD_CLOEXEC | MFD_ALLOW_SEALING);
    std::string path;
    if (fd >= 0) {
      if (!write_all(fd, binary)) {
        const int err = errno;
        ::close(fd);
        HCWARM_THROW(ErrorKind::System, "writing kernel {} to a memfd: {}", key, errno_string(err));
      }
      ::fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL);
      path = "/proc/self/fd/" + std::to_string(fd);
    } else {
      // No memfd: an unlinked-after-load private temp file.
      std::string tmpl = (std::filesystem::temp_directory_path() / (name + "-XXXXXX.so")).string();
      fd = ::mkostemps(tmpl.data(), 3, O_CLOEXEC);
      if (fd < 0) HCWARM_THROW(ErrorKind::System, "cannot create a temp file for kernel {}: {}", key, errno_string(errno));
      const bool ok = write_all(fd, binary) && ::fsync(fd) == 0;
      path = tmpl;
      if (!ok) {
        ::unlink(tmpl.c_str());
        ::close(fd);
        HCWARM_THROW(ErrorKind::System, "writing kernel {} to {} failed", key, tmpl);
      }
    }
    ::dlerror();
    void* h = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    const char* err = h ? nullptr : ::dlerror();
    if (path.rfind("/proc/", 0) != 0) ::unlink(path.c_str());
    if (h == nullptr) {
      ::close(fd);
      HCWARM_THROW(ErrorKind::System, "dlopen of kernel {} failed: {}", key, err ? err : "unknown error");
    }
    return std::make_shared<HostModule>(h, fd, key);
  }
};

}  // namespace

std::shared_ptr<ModuleLoader> make_host_module_loader() { return std::make_shared<HostLoader>(); }

}  // namespace hcwarm::jit
