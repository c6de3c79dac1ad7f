#pragma once
// The names of an enum's values, written once as a table, with the two lookups
// every enum needs: value -> name (to_string) and name -> value (parse). A bad
// name is an InvalidArgument quoting the text (bounded, escaped) and listing
// the allowed names.
#include <cstddef>
#include <string>
#include <string_view>

namespace hcwarm {

template <class E>
struct EnumName {
  E value;
  const char* name;
};

// The name of v in table; "?" for a value the table lacks.
template <class E, size_t N>
constexpr const char* enum_name(const EnumName<E> (&table)[N], E v) {
  for (const auto& e : table) {
    if (e.value == v) return e.name;
  }
  return "?";
}

// "reference, cpu, cuda": the table's names in order.
template <class E, size_t N>
std::string enum_names(const EnumName<E> (&table)[N]) {
  std::string s;
  for (const auto& e : table) {
    if (!s.empty()) s += ", ";
    s += e.name;
  }
  return s;
}

// Throws ErrorKind::InvalidArgument: "<what> "<text>" is not one of <allowed>".
[[noreturn]] void throw_unknown_name(std::string_view what, std::string_view text, const std::string& allowed);

// The value named `text`; what ("backend") names the kind in the error.
template <class E, size_t N>
E parse_enum(const EnumName<E> (&table)[N], std::string_view text, std::string_view what) {
  for (const auto& e : table) {
    if (text == e.name) return e.value;
  }
  throw_unknown_name(what, text, enum_names(table));
}

}  // namespace hcwarm
