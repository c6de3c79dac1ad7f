#pragma once
// Reading the user's input files and writing the commands' output files, the
// same careful way everywhere: an input must be a regular file of bounded size
// (a FIFO, device or directory is refused by name, never waited on), and an
// output appears whole or not at all (an O_EXCL temporary, renamed into place).
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace hcwarm {

// The bytes of the regular file `path`; `what` names it in errors ("model config").
// Missing, unreadable, not a regular file, or larger than max_bytes: InvalidArgument
// "<path>: <what> ...". Symlinks to regular files are followed (inputs often are links).
std::string read_input_file(const std::filesystem::path& path, std::string_view what,
                            uint64_t max_bytes = uint64_t{1} << 32);

// "a directory", "a FIFO", "a character device", ... for a st_mode that is not a regular file.
const char* file_type_name(unsigned st_mode);

// True when something (a file, a directory, or even a dangling symlink) is at `path`:
// an optional input that is present but broken must be read (and fail), not skipped.
bool input_present(const std::filesystem::path& path);

// Writes `bytes` to a fresh temporary file next to `path` (created with O_EXCL,
// a random name, mode 0644), then renames it over `path`.
// A symlink at `path` is replaced, never written through. On failure the temporary
// is removed and `path` is untouched; throws Io naming `path`.
void write_output_file(const std::filesystem::path& path, std::string_view bytes);
// (Several outputs that must land together: core/output_set.hpp.)

}  // namespace hcwarm
