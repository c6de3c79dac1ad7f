#pragma once
// CUDA-graph capture for the GPU tests: a stream of the test's own, a captured
// call replayed, and a call that must refuse inside capture without breaking it.
#include <gtest/gtest.h>

#include <exception>
#include <string>

#include "backends/cuda/cuda_device.hpp"
#include "core/error.hpp"

namespace hcwarm::test {

// A non-blocking stream, destroyed with the object; get() is null when the driver refused one.
class TestStream {
 public:
  explicit TestStream(cuda::CudaDevice& dev) : dev_(dev) {
    const cuda::ScopedContext scoped(dev_);
    if (dev_.driver().cuStreamCreate(&stream_, cuda::CU_STREAM_NON_BLOCKING) != cuda::CUDA_SUCCESS) stream_ = nullptr;
  }
  ~TestStream() {
    if (stream_ == nullptr) return;
    const cuda::ScopedContext scoped(dev_);
    dev_.driver().cuStreamDestroy(stream_);
  }
  TestStream(const TestStream&) = delete;
  TestStream& operator=(const TestStream&) = delete;
  cuda::CUstream get() const { return stream_; }

 private:
  cuda::CudaDevice& dev_;
  cuda::CUstream stream_ = nullptr;
};

// Captures `body` on `stream` (thread-local mode), replays the graph `replays`
// times and waits for it. Whatever `body` throws ends the capture first and
// comes back as the failure, so a test never leaves a stream capturing.
template <class Body>
::testing::AssertionResult capture_and_replay(cuda::CudaDevice& dev, cuda::CUstream stream, Body&& body,
                                              int replays = 1) {
  const auto& d = dev.driver();
  const cuda::ScopedContext scoped(dev);
  if (d.cuStreamBeginCapture(stream, cuda::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL) != cuda::CUDA_SUCCESS)
    return ::testing::AssertionFailure() << "cuStreamBeginCapture failed";
  std::string thrown;
  try {
    body();
  } catch (const std::exception& e) {
    thrown = e.what();
  }
  cuda::CUgraph graph = nullptr;
  const bool ended = d.cuStreamEndCapture(stream, &graph) == cuda::CUDA_SUCCESS && graph != nullptr;
  if (!thrown.empty()) {
    if (graph != nullptr) d.cuGraphDestroy(graph);
    return ::testing::AssertionFailure() << "the captured call threw: " << thrown;
  }
  if (!ended) return ::testing::AssertionFailure() << "the captured call broke the capture";
  cuda::CUgraphExec exec = nullptr;
  ::testing::AssertionResult result = ::testing::AssertionSuccess();
  if (d.cuGraphInstantiate(&exec, graph, 0) != cuda::CUDA_SUCCESS) {
    result = ::testing::AssertionFailure() << "cuGraphInstantiate failed";
  } else {
    for (int i = 0; i < replays && result; ++i) {
      if (d.cuGraphLaunch(exec, stream) != cuda::CUDA_SUCCESS)
        result = ::testing::AssertionFailure() << "cuGraphLaunch failed on replay " << i;
    }
    if (d.cuStreamSynchronize(stream) != cuda::CUDA_SUCCESS && result)
      result = ::testing::AssertionFailure() << "the replay failed on the stream";
    d.cuGraphExecDestroy(exec);
  }
  d.cuGraphDestroy(graph);
  return result;
}

// Runs `body` inside a capture on `stream`: it must throw NotWarmed with
// `needle` in its message, and the capture must still end cleanly.
template <class Body>
void expect_refused_in_capture(cuda::CudaDevice& dev, cuda::CUstream stream, Body&& body, const std::string& needle) {
  const auto& d = dev.driver();
  const cuda::ScopedContext scoped(dev);
  ASSERT_EQ(d.cuStreamBeginCapture(stream, cuda::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL), cuda::CUDA_SUCCESS);
  try {
    body();
    ADD_FAILURE() << "the call ran inside capture; expected NotWarmed naming '" << needle << "'";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::NotWarmed) << e.what();
    EXPECT_NE(e.message().find(needle), std::string::npos) << e.message();
  }
  cuda::CUgraph graph = nullptr;
  EXPECT_EQ(d.cuStreamEndCapture(stream, &graph), cuda::CUDA_SUCCESS) << "the refusal broke the capture";
  if (graph != nullptr) d.cuGraphDestroy(graph);
}

}  // namespace hcwarm::test
