#pragma once
// What every harness shares: a parser's documented error (an hcwarm::Error of
// its kind) is the expected answer to bad input; anything else is a finding,
// reported on stderr and turned into an abort so libFuzzer and the replay see a crash.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>

#include "core/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace hcwarm::fuzz {

// Error messages quote bounded excerpts of the input, never all of it.
inline constexpr size_t kMaxMessageBytes = 16 * 1024;

inline std::string_view as_text(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

[[noreturn]] inline void finding(const char* what, std::string_view detail) {
  std::fprintf(stderr, "hcwarm fuzz finding: %s: %.*s\n", what, static_cast<int>(std::min<size_t>(detail.size(), 2000)),
               detail.data());
  std::abort();
}

// A contract the parser documents for what it returns.
#define HCWARM_FUZZ_CHECK(cond) \
  do {                          \
    if (!(cond)) ::hcwarm::fuzz::finding("broken contract", #cond); \
  } while (0)

// Runs fn(); an Error of kind `expected` with a bounded message is swallowed.
template <class Fn>
void expect_only(ErrorKind expected, Fn&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    if (e.kind() != expected) finding(to_string(e.kind()), e.what());
    if (e.message().size() > kMaxMessageBytes) finding("error message quotes too much input", e.message());
  } catch (const std::exception& e) {
    finding("unexpected exception", e.what());
  } catch (...) {
    finding("unexpected exception", "not a std::exception");
  }
}

}  // namespace hcwarm::fuzz
