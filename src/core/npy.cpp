#include "core/npy.hpp"

#include <cstring>
#include <fstream>
#include <regex>
#include <sstream>

#include "core/error.hpp"

namespace hcwarm {
namespace {

constexpr char kMagic[] = "\x93NUMPY";

std::string read_all(const std::filesystem::path& path) {
  std::ifstream f(path, std::ios::binary);
  HCWARM_CHECK_ARG(f.good(), "{}: cannot open (missing or unreadable)", path.string());
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Finds 'key': <value> in the header dict; returns the raw value text.
std::string dict_value(const std::string& header, const std::string& key, const std::filesystem::path& path) {
  const std::regex re("['\"]" + key + "['\"]\\s*:\\s*(\\([^)]*\\)|'[^']*'|\"[^\"]*\"|True|False)");
  std::smatch m;
  HCWARM_CHECK_ARG(std::regex_search(header, m, re), "{}: .npy header has no '{}' entry: {}", path.string(), key,
                   header);
  return m[1].str();
}

}  // namespace

HostTensor<float> read_npy_f32(const std::filesystem::path& path) {
  const std::string bytes = read_all(path);
  const std::string name = path.string();
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
  HCWARM_CHECK_ARG(bytes.size() >= offset + header_len, "{}: truncated .npy header", name);
  const std::string header = bytes.substr(offset, header_len);

  std::string descr = dict_value(header, "descr", path);
  descr = descr.substr(1, descr.size() - 2);
  HCWARM_CHECK_ARG(descr != ">f4", "{}: big-endian float32 ('>f4') is not supported; save it little-endian", name);
  HCWARM_CHECK_ARG(descr == "<f4", "{}: dtype '{}' is not float32 ('<f4')", name, descr);
  HCWARM_CHECK_ARG(dict_value(header, "fortran_order", path) == "False",
                   "{}: Fortran-order arrays are not supported; save with np.ascontiguousarray", name);

  const std::string shape_text = dict_value(header, "shape", path);
  Shape shape;
  const std::regex num("\\d+");
  for (auto it = std::sregex_iterator(shape_text.begin(), shape_text.end(), num); it != std::sregex_iterator(); ++it) {
    shape.push_back(std::stoll(it->str()));
  }
  const size_t numel = static_cast<size_t>(shape_numel(shape));
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
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  HCWARM_CHECK_ARG(f.good(), "{}: cannot open for writing", path.string());
  const std::string bytes = encode_npy_f32(t);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  f.flush();
  if (!f.good()) HCWARM_THROW(ErrorKind::Io, "{}: write failed", path.string());
}

}  // namespace hcwarm
