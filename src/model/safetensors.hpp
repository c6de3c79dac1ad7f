#pragma once
// The safetensors file format: an 8-byte little-endian header length N, N
// bytes of JSON ({"name": {"dtype", "shape", "data_offsets": [begin, end]},
// optional "__metadata__": {string: string}}), then the raw tensor bytes, offsets
// relative to the end of the header. Reading maps the file and checks the
// whole header up front, so a bad file fails at open with its name and the reason.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/bf16.hpp"
#include "core/tensor.hpp"

namespace hcwarm::model {

enum class SafetensorsDtype { F64, F32, F16, BF16, I64, I32, I16, I8, U8, BOOL };
const char* to_string(SafetensorsDtype d);  // as in the header: "F32", "BF16", ...
size_t dtype_size(SafetensorsDtype d);

struct SafetensorsTensorInfo {
  std::string name;
  SafetensorsDtype dtype = SafetensorsDtype::F32;
  Shape shape;
  uint64_t begin = 0;  // byte offsets into the data section
  uint64_t end = 0;
};

// The checked header of a whole file's bytes: what SafetensorsFile::open reads up front.
struct SafetensorsHeader {
  std::map<std::string, SafetensorsTensorInfo> tensors;
  std::map<std::string, std::string> metadata;
  uint64_t data_offset = 0;  // start of the data section: 8 + the header length
};
// Parses bytes already in memory; `source` names them in errors. Throws as open() does.
SafetensorsHeader parse_safetensors_header(std::span<const std::byte> bytes, const std::string& source);

class SafetensorsFile {
 public:
  // Throws ErrorKind::InvalidArgument naming the file for a malformed file
  // (short, header length past the end, bad JSON, unknown dtype, offsets out of
  // range or not matching the shape, overlapping tensors), ErrorKind::Io when it cannot be read.
  static SafetensorsFile open(const std::filesystem::path& path);

  SafetensorsFile(SafetensorsFile&&) noexcept;
  SafetensorsFile& operator=(SafetensorsFile&&) noexcept;
  ~SafetensorsFile();

  const std::filesystem::path& path() const { return path_; }
  bool contains(const std::string& name) const { return tensors_.count(name) != 0; }
  std::vector<std::string> names() const;  // sorted
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

  // Missing tensor: ErrorKind::InvalidArgument naming the file and the tensor.
  const SafetensorsTensorInfo& info(const std::string& name) const;
  std::span<const std::byte> bytes(const std::string& name) const;

  // The tensor with the expected shape: a different shape is an error naming
  // the file, the tensor, and both shapes. f32 accepts F32 and BF16 (widened
  // exactly); bf16 accepts BF16 only, so no precision is lost silently.
  HostTensor<float> get_f32(const std::string& name, const Shape& expected) const;
  HostTensor<bf16> get_bf16(const std::string& name, const Shape& expected) const;

 private:
  class Mapping;
  SafetensorsFile(std::filesystem::path path, std::unique_ptr<Mapping> mapping);
  void parse_header();
  const SafetensorsTensorInfo& checked(const std::string& name, const Shape& expected) const;

  std::filesystem::path path_;
  std::unique_ptr<Mapping> mapping_;
  const std::byte* data_ = nullptr;  // start of the data section
  uint64_t data_size_ = 0;
  std::map<std::string, SafetensorsTensorInfo> tensors_;
  std::map<std::string, std::string> metadata_;
};

// Collects tensors, then writes one file (header padded to 8 bytes, tensors
// in the order added). Names must be unique.
class SafetensorsWriter {
 public:
  void add(const std::string& name, const HostTensor<float>& t);
  void add(const std::string& name, const HostTensor<bf16>& t);
  // Any dtype from raw little-endian bytes; size must match the shape.
  void add_raw(const std::string& name, SafetensorsDtype dtype, const Shape& shape, std::span<const std::byte> data);
  void set_metadata(const std::string& key, const std::string& value) { metadata_[key] = value; }

  // Writes to a temporary name beside `path` and renames it into place.
  void write(const std::filesystem::path& path) const;
  // The file's bytes (what write() stores).
  std::string serialize() const;

 private:
  struct Entry {
    std::string name;
    SafetensorsDtype dtype;
    Shape shape;
    std::vector<std::byte> data;
  };
  std::vector<Entry> entries_;
  std::map<std::string, std::string> metadata_;
};

}  // namespace hcwarm::model
