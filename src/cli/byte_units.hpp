#pragma once
// Byte counts in words and back: "1.5 GiB" out, "512M" / "4G" / "1048576" in.
#include <cstdint>
#include <string>

namespace hcwarm::cli {

std::string human_bytes(uint64_t b);
// "1048576", "512M", "4G", "1.5GiB", "100k": binary multiples. A bad size is an
// InvalidArgument naming `option` and the text.
uint64_t parse_size(const std::string& s, const std::string& option = "--max-size");

}  // namespace hcwarm::cli
