#include "core/npy.hpp"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>

#include "core/error.hpp"
#include "core/file_io.hpp"

namespace hcwarm {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
// numel * sizeof(float) stays far below SIZE_MAX; larger arrays are not hcwarm inputs.
constexpr uint64_t kMaxElements = uint64_t{1} << 40;
// NumPy writes headers of a few hundred bytes; a huge one is garbage or an attack.
constexpr size_t kMaxHeaderBytes = 64 * 1024;

std::string read_all(const std::filesystem::path& path) {
  return read_input_file(path, ".npy file", kMaxHeaderBytes + 16 + kMaxElements * sizeof(float));
}

// Finds 'key': <value> in the header dict; returns the raw value text: a
// parenthesized tuple, a quoted string, True or False. A linear scan, no regex.
std::string dict_value(const std::string& header, const std::string& key, const std::string& name) {
  auto missing = [&] {
    HCWARM_THROW(ErrorKind::InvalidArgument, "{}: .npy header has no '{}' entry: {}", name, key,
                 header.substr(0, 200));
  };
  for (const char q : {'\'', '"'}) {
    const std::string quoted = std::string(1, q) + key + q;
    for (size_t at = header.find(quoted); at != std::string::npos; at = header.find(quoted, at + 1)) {
      size_t i = at + quoted.size();
      while (i < header.size() && header[i] == ' ') ++i;
      if (i >= header.size() || header[i] != ':') continue;
      ++i;
      while (i < header.size() && header[i] == ' ') ++i;
      if (i >= header.size()) missing();
      const char c = header[i];
      size_t end = std::string::npos;
      if (c == '(') end = header.find(')', i);
      if (c == '\'' || c == '"') end = header.find(c, i + 1);
      if (end != std::string::npos) return header.substr(i, end - i + 1);
      for (const char* word : {"True", "False"}) {
        if (header.compare(i, std::strlen(word), word) == 0) return word;
      }
      missing();
    }
  }
  missing();
  return {};
}

// "(3, 4, 5)", "(7,)" or "()": non-negative decimal integers only, with the
// element count checked for overflow.
Shape parse_shape(const std::string& text, const std::string& name) {
  auto bad = [&] { HCWARM_THROW(ErrorKind::InvalidArgument, "{}: bad .npy shape {}", name, text.substr(0, 200)); };
  if (text.size() < 2 || text.front() != '(' || text.back() != ')') bad();
  Shape shape;
  size_t i = 1;
  const size_t end = text.size() - 1;
  uint64_t numel = 1;
  while (true) {
    while (i < end && text[i] == ' ') ++i;
    if (i == end) break;
    if (!std::isdigit(static_cast<unsigned char>(text[i]))) bad();
    uint64_t v = 0;
    while (i < end && std::isdigit(static_cast<unsigned char>(text[i]))) {
      v = v * 10 + static_cast<uint64_t>(text[i] - '0');
      if (v > kMaxElements) bad();
      ++i;
    }
    // Divide before multiplying: the product of two in-range dims can wrap.
    if (v != 0 && numel > kMaxElements / v) {
      HCWARM_THROW(ErrorKind::InvalidArgument, "{}: .npy shape {} has too many elements", name, text.substr(0, 200));
    }
    numel *= v;
    shape.push_back(static_cast<int64_t>(v));
    while (i < end && text[i] == ' ') ++i;
    if (i == end) break;
    if (text[i] != ',') bad();
    ++i;
  }
  return shape;
}

}  // namespace

HostTensor<float> read_npy_f32(const std::filesystem::path& path) { return decode_npy_f32(read_all(path), path.string()); }

HostTensor<float> decode_npy_f32(std::string_view bytes, const std::string& name) {
  HCWARM_CHECK_ARG(bytes.size() >= 10 && std::memcmp(bytes.data(), kMagic, 6) == 0,
                   "{}: not a .npy file (bad magic)", name);
  const int major = static_cast<unsigned char>(bytes[6]);
  size_t header_len = 0;
  size_t offset = 0;
  if (major == 1) {
    header_len = static_cast<unsigned char>(bytes[8]) | (static_cast<size_t>(static_cast<unsigned char>(bytes[9])) << 8);
    offset = 10;
  } else if (major == 2 || major == 3) {
    HCWARM_CHECK_ARG(bytes.size() >= 12, "{}: truncated .npy header", name);
    for (int i = 0; i < 4; ++i) header_len |= static_cast<size_t>(static_cast<unsigned char>(bytes[8 + i])) << (8 * i);
    offset = 12;
  } else {
    HCWARM_THROW(ErrorKind::InvalidArgument, "{}: unsupported .npy format version {}", name, major);
  }
  HCWARM_CHECK_ARG(header_len <= kMaxHeaderBytes, "{}: .npy header of {} bytes is over the {} byte limit", name,
                   header_len, kMaxHeaderBytes);
  HCWARM_CHECK_ARG(bytes.size() >= offset + header_len, "{}: truncated .npy header", name);
  const std::string header(bytes.substr(offset, header_len));
  // A Python literal and its padding: NumPy's reader rejects a NUL or control byte,
  // and one would end the text early for anything reading it as a C string.
  const auto bad = std::find_if(header.begin(), header.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return (u < 0x20 && c != '\n' && c != '\r' && c != '\t') || u == 0x7f;
  });
  HCWARM_CHECK_ARG(bad == header.end(), "{}: .npy header holds control byte 0x{:02x} at offset {}", name,
                   static_cast<unsigned char>(*bad), offset + static_cast<size_t>(bad - header.begin()));

  std::string descr = dict_value(header, "descr", name);
  descr = descr.substr(1, descr.size() - 2);
  HCWARM_CHECK_ARG(descr != ">f4", "{}: big-endian float32 ('>f4') is not supported; save it little-endian", name);
  HCWARM_CHECK_ARG(descr == "<f4", "{}: dtype '{}' is not float32 ('<f4')", name, descr.substr(0, 200));
  HCWARM_CHECK_ARG(dict_value(header, "fortran_order", name) == "False",
                   "{}: Fortran-order arrays are not supported; save with np.ascontiguousarray", name);

  const std::string shape_text = dict_value(header, "shape", name);
  Shape shape = parse_shape(shape_text, name);
  const size_t numel = static_cast<size_t>(shape_numel(shape));  // <= kMaxElements (parse_shape)
  HCWARM_ASSERT(numel <= kMaxElements && numel <= SIZE_MAX / sizeof(float), "{}: unchecked element count", name);
  const size_t data_off = offset + header_len;
  const size_t have = bytes.size() - data_off;
  HCWARM_CHECK_ARG(have >= numel * sizeof(float), "{}: truncated: shape {} needs {} data bytes, file has {}", name,
                   shape_string(shape), numel * sizeof(float), have);
  HCWARM_CHECK_ARG(have == numel * sizeof(float), "{}: {} trailing bytes after the data of shape {}", name,
                   have - numel * sizeof(float), shape_string(shape));
  std::vector<float> data(numel);
  if (numel > 0) std::memcpy(data.data(), bytes.data() + data_off, numel * sizeof(float));
  return HostTensor<float>(std::move(shape), std::move(data));
}

std::string encode_npy_f32(const HostTensor<float>& t) {
  std::string shape;
  for (int64_t d : t.shape()) shape += std::to_string(d) + ", ";
  if (t.rank() > 1) shape.resize(shape.size() - 2);  // "(2, 3)"; rank 1 keeps "(5,"
  if (t.rank() == 1) shape.pop_back();
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + shape + "), }";
  // Pad with spaces so that magic + 2 + 2 + header + '\n' is a multiple of 64.
  const size_t unpadded = 10 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header.push_back('\n');
  std::string out(kMagic, 6);
  out.push_back('\x01');
  out.push_back('\x00');
  out.push_back(static_cast<char>(header.size() & 0xff));
  out.push_back(static_cast<char>(header.size() >> 8));
  out += header;
  out.append(reinterpret_cast<const char*>(t.data()), static_cast<size_t>(t.numel()) * sizeof(float));
  return out;
}

void write_npy_f32(const std::filesystem::path& path, const HostTensor<float>& t) {
  write_output_file(path, encode_npy_f32(t));
}

}  // namespace hcwarm
