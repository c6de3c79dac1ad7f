// HeadTailBuffer / clip_middle: any amount of text in, at most head + tail bytes
// of it kept, with the number dropped between them said in a line.
#include <gtest/gtest.h>

#include "core/bounded_text.hpp"

namespace hcwarm {
namespace {

TEST(BoundedText, ShortTextIsKeptWhole) {
  HeadTailBuffer b(4, 4);
  b.append("abc");
  b.append("defgh");
  EXPECT_EQ(b.str(), "abcdefgh");
  EXPECT_EQ(b.dropped(), 0u);
  EXPECT_EQ(clip_middle("0123456789", 5, 5), "0123456789");
}

TEST(BoundedText, LongTextKeepsBothEndsAndCountsTheMiddle) {
  HeadTailBuffer b(3, 4);
  for (int i = 0; i < 1000; ++i) b.append("0123456789");
  EXPECT_EQ(b.total(), 10000u);
  EXPECT_EQ(b.dropped(), 10000u - 7);
  EXPECT_EQ(b.str(), "012\n[... 9993 bytes dropped ...]\n6789");
  EXPECT_EQ(clip_middle(std::string(100, 'x') + "END", 2, 3), "xx\n[... 98 bytes dropped ...]\nEND");
}

TEST(BoundedText, MemoryStaysBoundedForEndlessInput) {
  HeadTailBuffer b(16, 16);
  const std::string chunk(7, 'y');
  for (int i = 0; i < 100000; ++i) b.append(chunk);
  b.append(std::string(100, 'z'));
  EXPECT_LE(b.str().size(), 16u + 16u + 40u);
  EXPECT_EQ(b.str().substr(b.str().size() - 16), std::string(16, 'z'));
}

TEST(BoundedText, CutsNeverSplitAUtf8Sequence) {
  // "é" is two bytes: a head of 3 bytes would end inside the second one.
  const std::string s = "\xc3\xa9\xc3\xa9" + std::string(50, '-') + "\xc3\xa9\xc3\xa9";
  const std::string c = clip_middle(s, 3, 3);
  EXPECT_EQ(c.substr(0, 3), "\xc3\xa9\n");
  EXPECT_EQ(c.substr(c.size() - 3), "\n\xc3\xa9");
}

}  // namespace
}  // namespace hcwarm
