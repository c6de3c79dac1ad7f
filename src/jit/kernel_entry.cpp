#include "jit/kernel_entry.hpp"

#include <fmt/format.h>

#include "core/error.hpp"

namespace hcwarm::jit {

namespace {

// <source-name>: the identifier's length, then the identifier.
void append_source_name(std::string& out, std::string_view id) {
  HCWARM_CHECK_ARG(!id.empty(), "a kernel entry's scope or name is empty");
  out += std::to_string(id.size());
  out += id;
}

}  // namespace

KernelEntry kernel_entry(int part, std::initializer_list<std::string_view> scope, std::string_view name,
                         const std::vector<KernelTemplateArg>& args, std::string_view mangled_params) {
  HCWARM_CHECK_ARG(!mangled_params.empty(), "kernel entry {}: the mangled parameter list is empty (\"v\" for none)",
                   name);
  KernelEntry e;
  e.part = part;
  std::string args_text, args_mangled;
  for (const KernelTemplateArg& a : args) {
    if (!args_text.empty()) args_text += ", ";
    if (const bool* b = std::get_if<bool>(&a)) {
      args_text += *b ? "true" : "false";
      args_mangled += *b ? "Lb1E" : "Lb0E";
    } else {
      const int v = std::get<int>(a);
      args_text += std::to_string(v);
      // A negative literal is written with 'n' in place of the minus sign.
      args_mangled += v < 0 ? fmt::format("Lin{}E", -static_cast<long long>(v)) : fmt::format("Li{}E", v);
    }
  }
  for (std::string_view s : scope) {
    e.expression += s;
    e.expression += "::";
  }
  e.expression += name;
  e.expression += "<" + args_text + ">";
  // _Z <nested-name or unscoped name> I <args> E <return type v> <params>.
  e.symbol = "_Z";
  if (scope.size() > 0) e.symbol += 'N';
  for (std::string_view s : scope) append_source_name(e.symbol, s);
  append_source_name(e.symbol, name);
  e.symbol += "I" + args_mangled + "E";
  if (scope.size() > 0) e.symbol += 'E';
  e.symbol += 'v';
  e.symbol += mangled_params;
  return e;
}

}  // namespace hcwarm::jit
