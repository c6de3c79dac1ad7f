// OwnedWorkspace, the scratch an op keeps for calls that bring none: it grows to
// the largest size asked, never shrinks, and waits for the device before it
// frees a buffer (on growth and at its end), since queued kernels may use it.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "core/device.hpp"

namespace hcwarm::test {
namespace {

// A host device that counts synchronize() calls and the frees that follow them.
class CountingDevice final : public Device {
 public:
  DeviceKind kind() const override { return DeviceKind::Cpu; }
  std::string name() const override { return "counting"; }
  void copy_from_host(void*, const void*, size_t) override {}
  void copy_to_host(void*, const void*, size_t) override {}
  void fill_zero(void*, size_t) override {}
  void synchronize() override { ++syncs; }
  int syncs = 0;
  int frees = 0;
  int frees_after_a_sync = 0;

 protected:
  void* do_allocate(size_t bytes) override { return std::malloc(bytes); }
  void do_deallocate(void* ptr) noexcept override {
    ++frees;
    frees_after_a_sync += syncs >= frees;
    std::free(ptr);
  }
};

TEST(OwnedWorkspace, GrowsToTheLargestSizeAndSynchronizesBeforeEveryFree) {
  CountingDevice dev;
  {
    OwnedWorkspace ws(dev, 1024);
    EXPECT_EQ(ws.get(), nullptr);
    ws.ensure(16);
    EXPECT_EQ(ws.bytes(), 1024u) << "the minimum size";
    EXPECT_EQ(dev.syncs, 0) << "nothing to free yet";
    void* first = ws.get();
    ws.ensure(512);
    EXPECT_EQ(ws.get(), first) << "a smaller request keeps the buffer";
    ws.ensure(4096);
    EXPECT_EQ(ws.bytes(), 4096u);
    EXPECT_EQ(dev.syncs, 1);
    EXPECT_EQ(dev.frees, 1);
    EXPECT_EQ(dev.memory_stats().current_bytes, 4096u);
  }
  EXPECT_EQ(dev.syncs, 2) << "the end waits for queued work too";
  EXPECT_EQ(dev.frees, 2);
  EXPECT_EQ(dev.frees_after_a_sync, 2);
  EXPECT_EQ(dev.memory_stats().current_bytes, 0u);
}

TEST(OwnedWorkspace, AnEmptyWorkspaceNeitherSynchronizesNorFrees) {
  CountingDevice dev;
  { OwnedWorkspace ws(dev); }
  EXPECT_EQ(dev.syncs, 0);
  EXPECT_EQ(dev.frees, 0);
}

}  // namespace
}  // namespace hcwarm::test
