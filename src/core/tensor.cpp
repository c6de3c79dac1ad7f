#include "core/tensor.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace hcwarm {

std::string shape_string(const Shape& shape) {
  if (shape.size() == 1) return fmt::format("({},)", shape[0]);
  return fmt::format("({})", fmt::join(shape, ", "));
}

}  // namespace hcwarm
