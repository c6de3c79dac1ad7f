#include <gtest/gtest.h>

#include "common/test_util.hpp"
#include "core/npy.hpp"

namespace hcwarm {
namespace {

using test::TempDir;
using test::write_file;

// A .npy file with an arbitrary header dict and payload.
std::string npy_bytes(const std::string& dict, const std::string& payload) {
  std::string header = dict;
  while ((10 + header.size() + 1) % 64 != 0) header.push_back(' ');
  header.push_back('\n');
  std::string out("\x93NUMPY\x01\x00", 8);
  out.push_back(static_cast<char>(header.size() & 0xff));
  out.push_back(static_cast<char>(header.size() >> 8));
  return out + header + payload;
}

void expect_invalid(const std::filesystem::path& p, const std::string& needle) {
  try {
    read_npy_f32(p);
    FAIL() << "accepted " << p;
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
    EXPECT_NE(e.message().find(needle), std::string::npos) << e.message();
    EXPECT_NE(e.message().find(p.filename().string()), std::string::npos) << e.message();
  }
}

TEST(Npy, RoundTripsEveryRank) {
  TempDir dir;
  for (const Shape& shape : {Shape{}, Shape{5}, Shape{2, 3}, Shape{2, 0, 4}, Shape{3, 4, 5}}) {
    HostTensor<float> t(shape);
    for (int64_t i = 0; i < t.numel(); ++i) t[i] = 0.5f * static_cast<float>(i) - 3.0f;
    write_npy_f32(dir / "t.npy", t);
    const auto back = read_npy_f32(dir / "t.npy");
    EXPECT_EQ(back.shape(), shape);
    EXPECT_EQ(back.vec(), t.vec());
  }
}

TEST(Npy, HeaderIsSixtyFourByteAligned) {
  const std::string b = encode_npy_f32(HostTensor<float>({7, 3}));
  EXPECT_EQ((b.size() - 7 * 3 * 4) % 64, 0u);
}

TEST(Npy, RejectsBadFiles) {
  TempDir dir;
  const std::string four_floats(16, '\0');
  expect_invalid(dir / "missing.npy", "cannot open");
  write_file(dir / "text.npy", "hello, this is not numpy");
  expect_invalid(dir / "text.npy", "not a .npy file");
  write_file(dir / "f8.npy", npy_bytes("{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }", four_floats));
  expect_invalid(dir / "f8.npy", "not float32");
  write_file(dir / "i4.npy", npy_bytes("{'descr': '<i4', 'fortran_order': False, 'shape': (4,), }", four_floats));
  expect_invalid(dir / "i4.npy", "not float32");
  write_file(dir / "be.npy", npy_bytes("{'descr': '>f4', 'fortran_order': False, 'shape': (4,), }", four_floats));
  expect_invalid(dir / "be.npy", "big-endian");
  write_file(dir / "fo.npy", npy_bytes("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", four_floats));
  expect_invalid(dir / "fo.npy", "Fortran");
  write_file(dir / "short.npy", npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (5,), }", four_floats));
  expect_invalid(dir / "short.npy", "truncated");
  write_file(dir / "long.npy", npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", four_floats));
  expect_invalid(dir / "long.npy", "trailing");
  std::string cut = encode_npy_f32(HostTensor<float>({4}));
  write_file(dir / "cuthdr.npy", cut.substr(0, 30));
  expect_invalid(dir / "cuthdr.npy", "truncated");
}

TEST(Npy, RejectsShapesThatOverflowOrAreNotPlainDecimals) {
  TempDir dir;
  auto header_only = [&](const std::string& name, const std::string& shape) {
    write_file(dir / name, npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': " + shape + ", }", ""));
    return dir / name;
  };
  // Each dim is in range, but the product wraps int64 (and uint64: 2^40 * 2^40 * 2^40 = 2^120).
  expect_invalid(header_only("wrap.npy", "(1099511627776, 1099511627776, 1099511627776)"), "too many elements");
  expect_invalid(header_only("wrap2.npy", "(4294967296, 4294967296)"), "too many elements");
  expect_invalid(header_only("huge.npy", "(99999999999999999999999,)"), "bad .npy shape");
  for (const char* shape : {"(-1, 4)", "(2.5,)", "(0x10,)", "(1e3,)", "(+4,)", "(,)", "(4,,)", "[4]"}) {
    SCOPED_TRACE(shape);
    expect_invalid(header_only("bad.npy", shape), "shape");
  }
}

TEST(Npy, RejectsHeadersOverSixtyFourKiB) {
  TempDir dir;
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }";
  header.append(100 * 1024 - header.size() - 1, ' ');
  header.push_back('\n');
  std::string v2("\x93NUMPY\x02\x00", 8);
  for (int i = 0; i < 4; ++i) v2.push_back(static_cast<char>((header.size() >> (8 * i)) & 0xff));
  write_file(dir / "big.npy", v2 + header + std::string(4, '\0'));
  expect_invalid(dir / "big.npy", "byte limit");
}

TEST(Npy, DecodesBytesInMemoryNamingTheSource) {
  HostTensor<float> t({2, 3});
  for (int64_t i = 0; i < t.numel(); ++i) t[i] = static_cast<float>(i) - 2.5f;
  const auto back = decode_npy_f32(encode_npy_f32(t), "mem.npy");
  EXPECT_EQ(back.shape(), t.shape());
  EXPECT_EQ(back.vec(), t.vec());
  try {
    decode_npy_f32("not numpy", "upload #3");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
    EXPECT_NE(e.message().find("upload #3: not a .npy file"), std::string::npos) << e.message();
  }
}

TEST(Npy, RejectsNulAndControlBytesInTheHeader) {
  const std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }";
  const std::string payload(4, '\0');
  EXPECT_NO_THROW(decode_npy_f32(npy_bytes(dict, payload), "ok.npy"));
  for (const char c : {'\0', '\x01', '\x1b', '\x7f'}) {
    std::string bytes = npy_bytes(dict, payload);
    const size_t pad = bytes.find("}") + 2;  // a padding space inside the header
    bytes[pad] = c;
    try {
      decode_npy_f32(bytes, "ctl.npy");
      FAIL() << "accepted a header with byte " << static_cast<int>(c);
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
      EXPECT_NE(e.message().find(fmt::format("ctl.npy: .npy header holds control byte 0x{:02x} at offset {}",
                                             static_cast<unsigned char>(c), pad)),
                std::string::npos)
          << e.message();
    }
  }
}

TEST(Npy, ErrorMessagesQuoteAtMost200CharactersOfTheHeader) {
  const std::string long_descr = "'" + std::string(20000, 'x') + "'";
  std::string bytes = npy_bytes("{'descr': " + long_descr + ", 'fortran_order': False, 'shape': (1,), }", "");
  bytes[6] = '\x02';  // format 2.0: a four-byte header length
  const std::string header = bytes.substr(10);
  bytes = bytes.substr(0, 8);
  for (int i = 0; i < 4; ++i) bytes.push_back(static_cast<char>((header.size() >> (8 * i)) & 0xff));
  bytes += header;
  try {
    decode_npy_f32(bytes, "long.npy");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("long.npy: dtype 'xxx"), std::string::npos) << e.message().substr(0, 300);
    EXPECT_LT(e.message().size(), 400u) << e.message().substr(0, 300);
  }
}

}  // namespace
}  // namespace hcwarm
