#pragma once
// Several output files of one command that appear together or not at all. Each
// is written into a fresh private directory inside the output directory first;
// publish() then renames them into place one by one, and when a rename fails
// (a directory in the way, a full disk) undoes the ones before it: files it
// replaced come back, files it added go. Nothing is left staged either way.
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace hcwarm {

class OutputSet {
 public:
  // dir must exist; the staging directory is made in it (same file system: renames).
  explicit OutputSet(std::filesystem::path dir);
  ~OutputSet();  // removes the staging directory and whatever is still in it
  OutputSet(const OutputSet&) = delete;
  OutputSet& operator=(const OutputSet&) = delete;

  // Writes dir/name's future content (name: a plain file name). Throws Io.
  void add(const std::string& name, std::string_view bytes);
  // All of them into dir, or none (ErrorKind::Io naming the file that failed).
  void publish();

 private:
  std::filesystem::path dir_, staging_;
  std::vector<std::string> names_;
};

}  // namespace hcwarm
