#include "core/output_set.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <optional>

#include "core/error.hpp"
#include "core/file_io.hpp"

namespace hcwarm {
namespace fs = std::filesystem;

namespace {

// What publishing one file changed, to undo it.
struct Published {
  fs::path final_path;
  std::optional<fs::path> previous;  // where the file it replaced is kept, if there was one
};

void undo(const std::vector<Published>& done) noexcept {
  for (auto it = done.rbegin(); it != done.rend(); ++it) {
    if (it->previous) {
      ::rename(it->previous->c_str(), it->final_path.c_str());  // atomic: the old file is back
    } else {
      ::unlink(it->final_path.c_str());
    }
  }
}

}  // namespace

OutputSet::OutputSet(fs::path dir) : dir_(std::move(dir)) {
  std::string tmpl = (dir_ / ".hcwarm-out.XXXXXX").string();
  if (::mkdtemp(tmpl.data()) == nullptr) {
    const int err = errno;
    HCWARM_THROW(ErrorKind::Io, "cannot write into {}: cannot create a staging directory: {}", dir_.string(),
                 errno_string(err));
  }
  staging_ = tmpl;
}

OutputSet::~OutputSet() {
  std::error_code ec;
  fs::remove_all(staging_, ec);
}

void OutputSet::add(const std::string& name, std::string_view bytes) {
  HCWARM_ASSERT(!name.empty() && name.find('/') == std::string::npos && name[0] != '.',
                "output name '{}' is not a plain file name", name);
  write_output_file(staging_ / name, bytes);
  names_.push_back(name);
}

void OutputSet::publish() {
  std::vector<Published> done;
  for (const std::string& name : names_) {
    Published p{dir_ / name, std::nullopt};
    struct stat st {};
    if (::lstat(p.final_path.c_str(), &st) == 0 && !S_ISDIR(st.st_mode)) {
      // Keep what it replaces: a hard link leaves the name in place until the rename
      // below swaps it; where links fail (another user's file), it is moved aside.
      const fs::path kept = staging_ / ("previous-" + name);
      if (::link(p.final_path.c_str(), kept.c_str()) != 0 && ::rename(p.final_path.c_str(), kept.c_str()) != 0) {
        const int err = errno;
        undo(done);
        HCWARM_THROW(ErrorKind::Io, "cannot write {}: cannot set its previous content aside: {}; no output was "
                     "changed", p.final_path.string(), errno_string(err));
      }
      p.previous = kept;
    }
    if (::rename((staging_ / name).c_str(), p.final_path.c_str()) != 0) {
      const int err = errno;
      if (p.previous) ::rename(p.previous->c_str(), p.final_path.c_str());  // moved aside: put back
      undo(done);
      HCWARM_THROW(ErrorKind::Io, "cannot write {}: {}; no output was changed", p.final_path.string(),
                   errno_string(err));
    }
    done.push_back(std::move(p));
  }
}

}  // namespace hcwarm
