#include "core/enum_names.hpp"

#include "core/error.hpp"
#include "core/json_util.hpp"

namespace hcwarm {

void throw_unknown_name(std::string_view what, std::string_view text, const std::string& allowed) {
  HCWARM_THROW(ErrorKind::InvalidArgument, "{} {} is not one of {}", what, quoted_excerpt(text), allowed);
}

}  // namespace hcwarm
