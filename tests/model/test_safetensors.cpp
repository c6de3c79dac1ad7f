#include "model/safetensors.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <span>

#include "common/test_util.hpp"
#include "core/error.hpp"

namespace hcwarm::model {
namespace {

using test::TempDir;

// The InvalidArgument message of opening `bytes` as a file named `name`.
std::string open_error(const TempDir& dir, const std::string& name, const std::string& bytes) {
  const auto path = dir / name;
  test::write_file(path, bytes);
  try {
    SafetensorsFile::open(path);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument) << e.what();
    EXPECT_NE(e.message().find(path.string()), std::string::npos) << e.message();
    return e.message();
  }
  ADD_FAILURE() << "opened a bad file: " << name;
  return {};
}

// A file from a raw header text and data bytes.
std::string raw_file(const std::string& header, size_t data_bytes) {
  const uint64_t n = header.size();
  std::string out(8, '\0');
  std::memcpy(out.data(), &n, 8);
  return out + header + std::string(data_bytes, '\x01');
}

HostTensor<float> iota_f32(Shape shape) {
  HostTensor<float> t(std::move(shape));
  for (int64_t i = 0; i < t.numel(); ++i) t[i] = 0.5f * static_cast<float>(i) - 3.0f;
  return t;
}

TEST(SafetensorsTest, RoundTrip) {
  TempDir dir;
  HostTensor<bf16> b({2, 3});
  for (int64_t i = 0; i < b.numel(); ++i) b[i] = bf16::from_float(1.25f * static_cast<float>(i));
  SafetensorsWriter w;
  w.add("layers.0.hc_attn_fn", iota_f32({24, 16}));
  w.add("layers.0.norm.weight", b);
  w.add("layers.0.hc_attn_scale", iota_f32({3}));
  w.set_metadata("format", "pt");
  w.write(dir / "m.safetensors");

  const std::string bytes = test::read_file(dir / "m.safetensors");
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  EXPECT_EQ(n % 8, 0u);  // data section aligned

  const auto f = SafetensorsFile::open(dir / "m.safetensors");
  EXPECT_EQ(f.names(), (std::vector<std::string>{"layers.0.hc_attn_fn", "layers.0.hc_attn_scale",
                                                 "layers.0.norm.weight"}));
  EXPECT_EQ(f.metadata().at("format"), "pt");
  EXPECT_TRUE(f.contains("layers.0.hc_attn_fn"));
  EXPECT_FALSE(f.contains("nope"));
  EXPECT_EQ(f.info("layers.0.norm.weight").dtype, SafetensorsDtype::BF16);
  EXPECT_EQ(f.get_f32("layers.0.hc_attn_fn", {24, 16}).vec(), iota_f32({24, 16}).vec());
  EXPECT_EQ(f.get_f32("layers.0.hc_attn_scale", {3}).vec(), iota_f32({3}).vec());
  EXPECT_EQ(f.get_bf16("layers.0.norm.weight", {2, 3}).vec(), b.vec());
  // BF16 widens exactly to f32.
  const auto widened = f.get_f32("layers.0.norm.weight", {2, 3});
  for (int64_t i = 0; i < b.numel(); ++i) EXPECT_EQ(widened[i], b[i].to_float());
  EXPECT_EQ(f.bytes("layers.0.hc_attn_scale").size(), 12u);
}

TEST(SafetensorsTest, MissingAndMisShapedTensors) {
  TempDir dir;
  SafetensorsWriter w;
  w.add("hc_ffn_base", iota_f32({24}));
  w.write(dir / "w.safetensors");
  const auto f = SafetensorsFile::open(dir / "w.safetensors");
  const std::string file = (dir / "w.safetensors").string();
  try {
    f.get_f32("hc_ffn_fn", {24, 16});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
    EXPECT_NE(e.message().find(file), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("no tensor 'hc_ffn_fn'"), std::string::npos) << e.message();
  }
  try {
    f.get_f32("hc_ffn_base", {4, 6});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(e.message().find(file), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("'hc_ffn_base' has shape (24,), expected (4, 6)"), std::string::npos) << e.message();
  }
  try {
    f.get_bf16("hc_ffn_base", {24});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("is F32, expected BF16"), std::string::npos) << e.message();
  }
}

TEST(SafetensorsTest, BadHeaders) {
  TempDir dir;
  EXPECT_NE(open_error(dir, "short", "abc").find("shorter than the 8-byte header length"), std::string::npos);
  EXPECT_NE(open_error(dir, "empty", "").find("0 bytes"), std::string::npos);
  {
    std::string b = raw_file("{}", 0);
    const uint64_t n = 1000;
    std::memcpy(b.data(), &n, 8);
    EXPECT_NE(open_error(dir, "long", b).find("header length 1000 runs past the end"), std::string::npos);
  }
  EXPECT_NE(open_error(dir, "json", raw_file("{\"a\": [", 0)).find("header is not valid JSON"), std::string::npos);
  const std::string deep = "{\"t\": " + std::string(100000, '[') + std::string(100000, ']') + "}";
  EXPECT_NE(open_error(dir, "deep", raw_file(deep, 0)).find("nested deeper than 64 levels"), std::string::npos);
  const std::string long_name(100000, 'n');
  const std::string msg = open_error(dir, "longname", raw_file("{\"" + long_name + "\": {\"shape\": [1]}}", 0));
  EXPECT_NE(msg.find("missing string \"dtype\""), std::string::npos) << msg.substr(0, 300);
  EXPECT_LT(msg.size(), 600u);
  EXPECT_NE(open_error(dir, "array", raw_file("[1]", 0)).find("must be a JSON object"), std::string::npos);
  EXPECT_NE(open_error(dir, "dtype", raw_file(R"({"t": {"dtype": "F8", "shape": [1], "data_offsets": [0, 1]}})", 1))
                .find("tensor 't': unknown dtype 'F8'"),
            std::string::npos);
  EXPECT_NE(open_error(dir, "nodtype", raw_file(R"({"t": {"shape": [1], "data_offsets": [0, 4]}})", 4))
                .find("missing string \"dtype\""),
            std::string::npos);
  EXPECT_NE(open_error(dir, "shape", raw_file(R"({"t": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}})", 4))
                .find("shape entry -1"),
            std::string::npos);
  EXPECT_NE(open_error(dir, "offs", raw_file(R"({"t": {"dtype": "F32", "shape": [1], "data_offsets": [0]}})", 4))
                .find("\"data_offsets\" must be [begin, end]"),
            std::string::npos);
  EXPECT_NE(open_error(dir, "size", raw_file(R"({"t": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 20]}})", 20))
                .find("hold 20 bytes, shape (2, 3) of F32 needs 24"),
            std::string::npos);
  EXPECT_NE(open_error(dir, "back", raw_file(R"({"t": {"dtype": "U8", "shape": [0], "data_offsets": [4, 0]}})", 4))
                .find("run backwards"),
            std::string::npos);
  EXPECT_NE(open_error(dir, "overlap", raw_file(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                                                   "b": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}})",
                                                8))
                .find("overlap"),
            std::string::npos);
  EXPECT_NE(open_error(dir, "meta", raw_file(R"({"__metadata__": {"k": 1}})", 0)).find("__metadata__"),
            std::string::npos);
}

TEST(SafetensorsTest, TruncatedData) {
  TempDir dir;
  SafetensorsWriter w;
  w.add("a", iota_f32({4}));
  w.add("b", iota_f32({64, 8}));
  const std::string full = w.serialize();
  const std::string msg = open_error(dir, "cut.safetensors", full.substr(0, full.size() - 5));
  EXPECT_NE(msg.find("truncated: tensor 'b' ends at byte 2064"), std::string::npos) << msg;
  EXPECT_NE(msg.find("holds only 2059 bytes"), std::string::npos) << msg;
}

TEST(SafetensorsTest, AHeaderLengthThatDoesNotMatchTheFileIsRefused) {
  // The writer pads its header with spaces, so a length one byte short still parses
  // as JSON; the data section it implies is one byte off and must not be read.
  TempDir dir;
  std::string good;
  uint64_t n = 0;
  for (std::string name = "b"; name.size() < 8; name += "b") {  // a second name that leaves padding
    SafetensorsWriter w;
    w.add("a", iota_f32({4}));
    w.add(name, iota_f32({2, 3}));
    good = w.serialize();
    std::memcpy(&n, good.data(), 8);
    if (good[8 + n - 1] == ' ') break;
  }
  ASSERT_EQ(good[8 + n - 1], ' ') << "the writer's header ends in padding";
  ASSERT_NO_THROW(parse_safetensors_header(std::as_bytes(std::span(good.data(), good.size())), "good"));
  {
    // One byte long: the header takes in the data's first byte (a NUL here).
    std::string b = good;
    const uint64_t longer = n + 1;
    std::memcpy(b.data(), &longer, 8);
    EXPECT_NE(open_error(dir, "long-by-one", b).find("header holds a NUL byte"), std::string::npos);
  }
  {
    std::string b = good;
    const uint64_t shorter = n - 1;
    std::memcpy(b.data(), &shorter, 8);
    EXPECT_NE(open_error(dir, "short-by-one", b).find("header length " + std::to_string(shorter) + " does not match"),
              std::string::npos);
  }
  EXPECT_NE(open_error(dir, "trailing", good + "x").find("does not match the file"), std::string::npos);
  EXPECT_NE(open_error(dir, "gap", raw_file(R"({"t": {"dtype": "U8", "shape": [2], "data_offsets": [2, 4]}})", 4))
                .find("bytes [0, 2) of the data section belong to no tensor"),
            std::string::npos);
}

TEST(SafetensorsTest, MissingFileAndWriterMisuse) {
  TempDir dir;
  EXPECT_THROW(SafetensorsFile::open(dir / "none.safetensors"), Error);
  SafetensorsWriter w;
  w.add("a", iota_f32({2}));
  EXPECT_THROW(w.add("a", iota_f32({2})), Error);
  EXPECT_THROW(w.add("__metadata__", iota_f32({2})), Error);
  const std::byte three[3] = {};
  EXPECT_THROW(w.add_raw("c", SafetensorsDtype::F32, {1}, three), Error);
  EXPECT_THROW(w.write(dir / "no/such/dir/x.safetensors"), Error);
}

TEST(SafetensorsTest, EmptyTensorsAndOtherDtypes) {
  TempDir dir;
  SafetensorsWriter w;
  w.add("empty", HostTensor<float>({0, 5}));
  w.add("empty_bf16", HostTensor<bf16>({3, 0}));
  const int64_t ids[2] = {7, -1};
  w.add_raw("ids", SafetensorsDtype::I64, {2}, std::as_bytes(std::span(ids)));
  w.write(dir / "e.safetensors");
  const auto f = SafetensorsFile::open(dir / "e.safetensors");
  EXPECT_EQ(f.get_f32("empty", {0, 5}).numel(), 0);
  EXPECT_EQ(f.get_bf16("empty_bf16", {3, 0}).numel(), 0);
  EXPECT_EQ(f.info("ids").dtype, SafetensorsDtype::I64);
  EXPECT_EQ(f.bytes("ids").size(), 16u);
  EXPECT_THROW(f.get_f32("ids", {2}), Error);
}

}  // namespace
}  // namespace hcwarm::model
