#include "model/safetensors.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <optional>
#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/file_io.hpp"
#include "core/json_util.hpp"

namespace hcwarm::model {

static_assert(std::endian::native == std::endian::little, "safetensors data is little-endian; so is every host we run on");

namespace {

// The spec caps the header at 100 MB; anything larger is a corrupt length.
constexpr uint64_t kMaxHeaderBytes = 100ull << 20;

struct DtypeName {
  SafetensorsDtype dtype;
  const char* name;
  size_t size;
};
constexpr DtypeName kDtypes[] = {
    {SafetensorsDtype::F64, "F64", 8}, {SafetensorsDtype::F32, "F32", 4}, {SafetensorsDtype::F16, "F16", 2},
    {SafetensorsDtype::BF16, "BF16", 2}, {SafetensorsDtype::I64, "I64", 8}, {SafetensorsDtype::I32, "I32", 4},
    {SafetensorsDtype::I16, "I16", 2}, {SafetensorsDtype::I8, "I8", 1}, {SafetensorsDtype::U8, "U8", 1},
    {SafetensorsDtype::BOOL, "BOOL", 1}};

std::optional<SafetensorsDtype> dtype_from_string(const std::string& s) {
  for (const auto& d : kDtypes) {
    if (s == d.name) return d.dtype;
  }
  return std::nullopt;
}

// numel * size, or nullopt on overflow.
std::optional<uint64_t> byte_size(const Shape& shape, size_t elem) {
  uint64_t n = elem;
  for (int64_t d : shape) {
    if (d < 0 || __builtin_mul_overflow(n, static_cast<uint64_t>(d), &n)) return std::nullopt;
  }
  return n;
}

}  // namespace

const char* to_string(SafetensorsDtype d) {
  for (const auto& e : kDtypes) {
    if (e.dtype == d) return e.name;
  }
  return "?";
}

size_t dtype_size(SafetensorsDtype d) {
  for (const auto& e : kDtypes) {
    if (e.dtype == d) return e.size;
  }
  return 0;
}

// A read-only mapping of the whole file (nothing for an empty file).
class SafetensorsFile::Mapping {
 public:
  explicit Mapping(const std::filesystem::path& path) {
    // O_NONBLOCK: a FIFO is refused below instead of waited on.
    const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd == -1) {
      const int err = errno;
      HCWARM_THROW(ErrorKind::InvalidArgument, "{}: cannot open safetensors file: {}", path.string(),
                   errno_string(err));
    }
    struct stat st {};
    if (::fstat(fd, &st) == -1) {
      const int err = errno;
      ::close(fd);
      HCWARM_THROW(ErrorKind::Io, "cannot stat {}: {}", path.string(), errno_string(err));
    }
    if (!S_ISREG(st.st_mode)) {
      ::close(fd);
      HCWARM_THROW(ErrorKind::InvalidArgument, "{}: safetensors file is {}, not a regular file", path.string(),
                   file_type_name(st.st_mode));
    }
    size_ = static_cast<size_t>(st.st_size);
    if (size_ > 0) {
      void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
      const int err = errno;
      ::close(fd);
      if (p == MAP_FAILED) HCWARM_THROW(ErrorKind::Io, "cannot map {}: {}", path.string(), errno_string(err));
      ptr_ = static_cast<const std::byte*>(p);
    } else {
      ::close(fd);
    }
  }
  ~Mapping() {
    if (ptr_ != nullptr) ::munmap(const_cast<std::byte*>(ptr_), size_);
  }
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  const std::byte* data() const { return ptr_; }
  size_t size() const { return size_; }

 private:
  const std::byte* ptr_ = nullptr;
  size_t size_ = 0;
};

SafetensorsFile::SafetensorsFile(std::filesystem::path path, std::unique_ptr<Mapping> mapping)
    : path_(std::move(path)), mapping_(std::move(mapping)) {}
SafetensorsFile::SafetensorsFile(SafetensorsFile&&) noexcept = default;
SafetensorsFile& SafetensorsFile::operator=(SafetensorsFile&&) noexcept = default;
SafetensorsFile::~SafetensorsFile() = default;

SafetensorsFile SafetensorsFile::open(const std::filesystem::path& path) {
  SafetensorsFile f(path, std::make_unique<Mapping>(path));
  f.parse_header();
  return f;
}

SafetensorsHeader parse_safetensors_header(std::span<const std::byte> bytes, const std::string& file) {
  SafetensorsHeader out;
  const size_t size = bytes.size();
  HCWARM_CHECK_ARG(size >= 8, "{}: not a safetensors file: {} bytes, shorter than the 8-byte header length", file,
                   size);
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  HCWARM_CHECK_ARG(n <= size - 8 && n <= kMaxHeaderBytes,
                   "{}: header length {} runs past the end of the file ({} bytes) or the 100 MB limit", file, n,
                   size);
  const char* hdr = reinterpret_cast<const char*>(bytes.data() + 8);
  out.data_offset = 8 + n;
  const uint64_t data_size = size - 8 - n;

  // The JSON parser takes a NUL for the end of its input: what follows one would go unread.
  if (const void* nul = std::memchr(hdr, 0, n)) {
    HCWARM_THROW(ErrorKind::InvalidArgument, "{}: header holds a NUL byte at byte {} of its {}", file,
                 static_cast<const char*>(nul) - hdr, n);
  }
  if (const auto at = json_too_deep_at(std::string_view(hdr, n))) {
    HCWARM_THROW(ErrorKind::InvalidArgument, "{}: header JSON is nested deeper than {} levels (at byte {})", file,
                 kMaxJsonDepth, *at);
  }
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(hdr, hdr + n);
  } catch (const nlohmann::json::parse_error& e) {
    HCWARM_THROW(ErrorKind::InvalidArgument, "{}: header is not valid JSON (byte {} of {})", file, e.byte, n);
  } catch (const nlohmann::json::exception& e) {  // out_of_range: a number too large
    HCWARM_THROW(ErrorKind::InvalidArgument, "{}: header is not valid JSON: {}", file, json_error_text(e));
  }
  HCWARM_CHECK_ARG(j.is_object(), "{}: header must be a JSON object, got {}", file, j.type_name());

  for (const auto& [name, v] : j.items()) {
    if (name == "__metadata__") {
      HCWARM_CHECK_ARG(v.is_object(), "{}: __metadata__ must be an object", file);
      for (const auto& [k, s] : v.items()) {
        HCWARM_CHECK_ARG(s.is_string(), "{}: __metadata__ value of '{}' must be a string", file, excerpt(k));
        out.metadata[k] = s.get<std::string>();
      }
      continue;
    }
    HCWARM_CHECK_ARG(v.is_object(), "{}: tensor '{}': entry must be an object", file, excerpt(name));
    SafetensorsTensorInfo info;
    info.name = name;
    const std::string shown = excerpt(name);  // names come from the file: quote a bounded part

    auto dt = v.find("dtype");
    HCWARM_CHECK_ARG(dt != v.end() && dt->is_string(), "{}: tensor '{}': missing string \"dtype\"", file, shown);
    const auto dtype = dtype_from_string(dt->get<std::string>());
    HCWARM_CHECK_ARG(dtype.has_value(), "{}: tensor '{}': unknown dtype '{}'", file, shown, excerpt(dt->get<std::string>()));
    info.dtype = *dtype;

    auto sh = v.find("shape");
    HCWARM_CHECK_ARG(sh != v.end() && sh->is_array(), "{}: tensor '{}': missing array \"shape\"", file, shown);
    for (const auto& d : *sh) {
      HCWARM_CHECK_ARG(d.is_number_unsigned(), "{}: tensor '{}': shape entry {} is not a non-negative integer", file,
                       shown, json_excerpt(d));
      info.shape.push_back(d.get<int64_t>());
    }

    auto off = v.find("data_offsets");
    HCWARM_CHECK_ARG(off != v.end() && off->is_array() && off->size() == 2 && (*off)[0].is_number_unsigned() &&
                         (*off)[1].is_number_unsigned(),
                     "{}: tensor '{}': \"data_offsets\" must be [begin, end]", file, shown);
    info.begin = (*off)[0].get<uint64_t>();
    info.end = (*off)[1].get<uint64_t>();
    HCWARM_CHECK_ARG(info.begin <= info.end, "{}: tensor '{}': data_offsets [{}, {}] run backwards", file, shown,
                     info.begin, info.end);
    const auto need = byte_size(info.shape, dtype_size(info.dtype));
    HCWARM_CHECK_ARG(need && *need == info.end - info.begin,
                     "{}: tensor '{}': data_offsets [{}, {}] hold {} bytes, shape {} of {} needs {}", file, shown,
                     info.begin, info.end, info.end - info.begin, shape_string(info.shape), to_string(info.dtype),
                     need ? fmt::format("{}", *need) : std::string("more than 2^64"));
    HCWARM_CHECK_ARG(info.end <= data_size,
                     "{}: truncated: tensor '{}' ends at byte {} of the data section, which holds only {} bytes",
                     file, shown, info.end, data_size);
    out.tensors.emplace(name, std::move(info));
  }

  // The tensors tile the data section exactly, as the format's reference reader
  // demands: no shared bytes, no gap, no byte after the last. A header length
  // that is off (one byte short included) shifts the section and fails here.
  std::vector<const SafetensorsTensorInfo*> by_offset;
  for (const auto& [name, info] : out.tensors) {
    if (info.end > info.begin) by_offset.push_back(&info);
  }
  std::sort(by_offset.begin(), by_offset.end(), [](auto* a, auto* b) { return a->begin < b->begin; });
  uint64_t covered = 0;
  for (size_t i = 0; i < by_offset.size(); ++i) {
    HCWARM_CHECK_ARG(by_offset[i]->begin >= covered, "{}: tensors '{}' and '{}' overlap", file,
                     excerpt(by_offset[i - 1]->name), excerpt(by_offset[i]->name));
    HCWARM_CHECK_ARG(by_offset[i]->begin == covered,
                     "{}: bytes [{}, {}) of the data section belong to no tensor (before '{}')", file, covered,
                     by_offset[i]->begin, excerpt(by_offset[i]->name));
    covered = by_offset[i]->end;
  }
  HCWARM_CHECK_ARG(covered == data_size,
                   "{}: header length {} does not match the file: its tensors end at byte {} of the data section, "
                   "which holds {} bytes",
                   file, n, covered, data_size);
  return out;
}

void SafetensorsFile::parse_header() {
  SafetensorsHeader h = parse_safetensors_header({mapping_->data(), mapping_->size()}, path_.string());
  data_ = mapping_->data() + h.data_offset;
  data_size_ = mapping_->size() - h.data_offset;
  tensors_ = std::move(h.tensors);
  metadata_ = std::move(h.metadata);
}

std::vector<std::string> SafetensorsFile::names() const {
  std::vector<std::string> out;
  for (const auto& [name, info] : tensors_) out.push_back(name);
  return out;
}

const SafetensorsTensorInfo& SafetensorsFile::info(const std::string& name) const {
  auto it = tensors_.find(name);
  HCWARM_CHECK_ARG(it != tensors_.end(), "{}: no tensor '{}' (the file holds {} tensor{})", path_.string(), name,
                   tensors_.size(), tensors_.size() == 1 ? "" : "s");
  return it->second;
}

std::span<const std::byte> SafetensorsFile::bytes(const std::string& name) const {
  const auto& i = info(name);
  return {data_ + i.begin, static_cast<size_t>(i.end - i.begin)};
}

const SafetensorsTensorInfo& SafetensorsFile::checked(const std::string& name, const Shape& expected) const {
  const auto& i = info(name);
  HCWARM_CHECK_ARG(i.shape == expected, "{}: tensor '{}' has shape {}, expected {}", path_.string(), name,
                   shape_string(i.shape), shape_string(expected));
  return i;
}

HostTensor<float> SafetensorsFile::get_f32(const std::string& name, const Shape& expected) const {
  const auto& i = checked(name, expected);
  HostTensor<float> t(expected);
  const std::byte* src = data_ + i.begin;
  if (i.dtype == SafetensorsDtype::F32) {
    // An empty tensor's data() may be null, and memcpy of null is undefined even for 0 bytes.
    if (t.numel() > 0) std::memcpy(t.data(), src, static_cast<size_t>(t.numel()) * sizeof(float));
  } else if (i.dtype == SafetensorsDtype::BF16) {
    for (int64_t k = 0; k < t.numel(); ++k) {
      uint16_t bits = 0;
      std::memcpy(&bits, src + 2 * k, 2);
      t[k] = bf16::from_bits(bits).to_float();
    }
  } else {
    HCWARM_THROW(ErrorKind::InvalidArgument, "{}: tensor '{}' is {}, expected F32 or BF16", path_.string(), name,
                 to_string(i.dtype));
  }
  return t;
}

HostTensor<bf16> SafetensorsFile::get_bf16(const std::string& name, const Shape& expected) const {
  const auto& i = checked(name, expected);
  HCWARM_CHECK_ARG(i.dtype == SafetensorsDtype::BF16, "{}: tensor '{}' is {}, expected BF16", path_.string(), name,
                   to_string(i.dtype));
  HostTensor<bf16> t(expected);
  if (t.numel() > 0) std::memcpy(t.data(), data_ + i.begin, static_cast<size_t>(t.numel()) * sizeof(bf16));
  return t;
}

void SafetensorsWriter::add_raw(const std::string& name, SafetensorsDtype dtype, const Shape& shape,
                                std::span<const std::byte> data) {
  HCWARM_CHECK_ARG(!name.empty() && name != "__metadata__", "safetensors writer: invalid tensor name '{}'", name);
  for (const auto& e : entries_) {
    HCWARM_CHECK_ARG(e.name != name, "safetensors writer: tensor '{}' added twice", name);
  }
  const auto need = byte_size(shape, dtype_size(dtype));
  HCWARM_CHECK_ARG(need && *need == data.size(), "safetensors writer: tensor '{}' has {} bytes, shape {} of {} needs {}",
                   name, data.size(), shape_string(shape), to_string(dtype), need.value_or(0));
  entries_.push_back({name, dtype, shape, std::vector<std::byte>(data.begin(), data.end())});
}

void SafetensorsWriter::add(const std::string& name, const HostTensor<float>& t) {
  add_raw(name, SafetensorsDtype::F32, t.shape(), std::as_bytes(t.span()));
}

void SafetensorsWriter::add(const std::string& name, const HostTensor<bf16>& t) {
  add_raw(name, SafetensorsDtype::BF16, t.shape(), std::as_bytes(t.span()));
}

std::string SafetensorsWriter::serialize() const {
  nlohmann::json header = nlohmann::json::object();
  if (!metadata_.empty()) header["__metadata__"] = metadata_;
  uint64_t offset = 0;
  for (const auto& e : entries_) {
    header[e.name] = {{"dtype", to_string(e.dtype)}, {"shape", e.shape}, {"data_offsets", {offset, offset + e.data.size()}}};
    offset += e.data.size();
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // the data section starts 8-byte aligned
  const uint64_t n = text.size();
  std::string out(8, '\0');
  std::memcpy(out.data(), &n, 8);
  out += text;
  for (const auto& e : entries_) out.append(reinterpret_cast<const char*>(e.data.data()), e.data.size());
  return out;
}

void SafetensorsWriter::write(const std::filesystem::path& path) const {
  write_output_file(path, serialize());
}

}  // namespace hcwarm::model
