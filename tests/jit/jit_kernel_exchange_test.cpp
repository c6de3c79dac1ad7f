// The group's kernel exchange (jit/kernel_exchange.hpp) over an in-process
// all-gather: ranks on separate cache directories (hosts) compile each key
// once between them and all end with every key; a damaged entry is refused
// naming key and rank; a rank that fails to build fails every rank by name.
#include <gtest/gtest.h>

#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

#include "jit/kernel_exchange.hpp"
#include "jit_test_util.hpp"

namespace hcwarm::jit::test {
namespace {

// An all-gather among `world` threads; `tamper` may change a payload on its way.
class ThreadGroup {
 public:
  explicit ThreadGroup(int world) : world_(world), payloads_(static_cast<size_t>(world)) {}
  std::function<void(int rank, std::string& payload)> tamper;

  GatherBytes gather(int rank) {
    return [this, rank](const std::string& mine) {
      std::string sent = mine;
      if (tamper) tamper(rank, sent);
      std::unique_lock lock(mu_);
      payloads_[static_cast<size_t>(rank)] = std::move(sent);
      if (++arrived_ == world_) cv_.notify_all();
      cv_.wait(lock, [&] { return arrived_ == world_; });
      return payloads_;
    };
  }

 private:
  int world_;
  std::mutex mu_;
  std::condition_variable cv_;
  int arrived_ = 0;
  std::vector<std::string> payloads_;
};

struct RankResult {
  ExchangeReport report;
  std::string error;
  ErrorKind kind = ErrorKind::Internal;
};

// One exchange: rank r on cache `caches[r]`, all planning `specs`.
std::vector<RankResult> exchange(const std::vector<fs::path>& caches, const std::vector<KernelSpec>& specs,
                                 ThreadGroup& group) {
  const int world = static_cast<int>(caches.size());
  std::vector<RankResult> out(caches.size());
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      JitRuntime jit(options(caches[static_cast<size_t>(r)]));
      try {
        out[static_cast<size_t>(r)].report = exchange_kernels(jit, specs, r, world, group.gather(r));
      } catch (const Error& e) {
        out[static_cast<size_t>(r)].error = e.message();
        out[static_cast<size_t>(r)].kind = e.kind();
      }
    });
  }
  for (auto& t : threads) t.join();
  return out;
}

std::vector<KernelSpec> specs_1_to(int n) {
  std::vector<KernelSpec> s;
  for (int v = 1; v <= n; ++v) s.push_back(host_spec(v));
  s.push_back(host_spec(1));  // a duplicate counts once
  return s;
}

bool valid_in(const fs::path& cache, const KernelSpec& spec) {
  JitRuntime jit(options(cache));
  return DiskCache(cache).lookup(jit.cache_namespace(spec), jit.key(spec), {}).status == DiskCache::Lookup::Status::Ok;
}

class KernelExchange : public CacheFixture {
 protected:
  // Two hosts of two ranks: 0 and 1 share host0's directory, 2 and 3 host1's.
  std::vector<fs::path> two_hosts() const {
    return {dir_ / "host0", dir_ / "host0", dir_ / "host1", dir_ / "host1"};
  }
};

TEST_F(KernelExchange, TwoHostsCompileEachKeyOnceAllEndWithEveryKeyAndARestartCompilesNothing) {
  const auto specs = specs_1_to(6);
  ThreadGroup group(4);
  const auto out = exchange(two_hosts(), specs, group);
  int compiled = 0;
  for (int r = 0; r < 4; ++r) {
    const RankResult& x = out[static_cast<size_t>(r)];
    ASSERT_EQ(x.error, "") << "rank " << r;
    EXPECT_EQ(x.report.planned_keys, 6);
    EXPECT_EQ(x.report.shard_keys.size(), r < 2 ? 2u : 1u);  // keys r, r+4
    EXPECT_EQ(x.report.compiled, static_cast<int>(x.report.shard_keys.size()));
    EXPECT_EQ(x.report.shared, r < 2 ? 2 : 1) << "the host mate's shard was already there";
    EXPECT_TRUE(x.report.refused.empty());
    compiled += x.report.compiled;
  }
  EXPECT_EQ(compiled, 6);
  // The other host's keys published once per host, by whichever of its ranks came first:
  // host0 receives ranks 2 and 3's 2 keys, host1 ranks 0 and 1's 4.
  EXPECT_EQ(out[0].report.received + out[1].report.received, 2);
  EXPECT_EQ(out[0].report.received + out[0].report.already_present, 2);
  EXPECT_EQ(out[2].report.received + out[3].report.received, 4);
  for (const char* host : {"host0", "host1"}) {
    for (const KernelSpec& s : specs) EXPECT_TRUE(valid_in(dir_ / host, s)) << host << " " << s.describe();
  }

  ThreadGroup again(4);
  for (const RankResult& x : exchange(two_hosts(), specs, again)) {
    ASSERT_EQ(x.error, "");
    EXPECT_EQ(x.report.compiled, 0);
    EXPECT_EQ(x.report.received, 0);
    EXPECT_EQ(x.report.shard_present, static_cast<int>(x.report.shard_keys.size()));
  }
}

TEST_F(KernelExchange, ADamagedEntryIsRefusedNamingKeyAndRankAndLeftForThisRankToCompile) {
  const auto specs = specs_1_to(4);
  ThreadGroup group(4);
  group.tamper = [](int rank, std::string& p) {
    if (rank != 1) return;
    // The first entry's last byte, just before its bundle's checksum line.
    const size_t at = p.find("sha256 ", p.find("hcwarm-kernel-bundle "));
    ASSERT_NE(at, std::string::npos);
    p[at - 1] ^= 1;
  };
  const auto out = exchange(two_hosts(), specs, group);
  const std::string damaged = JitRuntime(options(dir_ / "x")).key(specs[1]);  // rank 1's key
  for (int r : {2, 3}) {
    const auto& x = out[static_cast<size_t>(r)];
    ASSERT_EQ(x.error, "");
    ASSERT_EQ(x.report.refused.size(), 1u) << r;
    EXPECT_EQ(x.report.refused[0].rfind(damaged + " from rank 1: ", 0), 0u) << x.report.refused[0];
    EXPECT_NE(x.report.refused[0].find("checksum"), std::string::npos) << x.report.refused[0];
  }
  EXPECT_FALSE(valid_in(dir_ / "host1", specs[1]));  // nothing half-published
  EXPECT_TRUE(valid_in(dir_ / "host1", specs[0]));
  EXPECT_TRUE(out[0].report.refused.empty());  // rank 1's host mate reads the directory, not the payload
}

TEST_F(KernelExchange, AMalformedHeaderRefusesEveryKeyOfThatRankAndNothingElse) {
  const auto specs = specs_1_to(4);
  ThreadGroup group(2);
  group.tamper = [](int rank, std::string& p) {
    const size_t at = p.find("\"failed\":[]");
    ASSERT_NE(at, std::string::npos);
    if (rank == 1) p.replace(at, 11, "\"failed\":{}");  // the same length: only the type is wrong
  };
  const auto out = exchange({dir_ / "a", dir_ / "b"}, specs, group);
  ASSERT_EQ(out[0].error, "");
  ASSERT_EQ(out[0].report.refused.size(), 2u);  // rank 1's keys 1 and 3
  for (const std::string& why : out[0].report.refused) {
    EXPECT_NE(why.find(" from rank 1: its payload header is malformed"), std::string::npos) << why;
  }
  // Rank 1 reads the same (damaged) bytes of its own: its own header cannot be, so it stops.
  EXPECT_EQ(out[1].kind, ErrorKind::Internal);
  EXPECT_NE(out[1].error.find("own payload header is malformed"), std::string::npos) << out[1].error;
}

TEST_F(KernelExchange, ARankThatFailsToBuildFailsEveryRankNamingTheKeyAndTheRankAfterTheGather) {
  KernelSpec broken = host_spec(7);
  broken.source = "this is not C++\n";
  const std::vector<KernelSpec> specs{host_spec(1), broken};  // key 1: rank 1's
  ThreadGroup group(2);
  const auto out = exchange({dir_ / "a", dir_ / "b"}, specs, group);
  for (const RankResult& x : out) {
    EXPECT_EQ(x.kind, ErrorKind::Compile);
    EXPECT_EQ(x.error.rfind("kernel exchange: rank 1 failed to build ", 0), 0u) << x.error;
    EXPECT_NE(x.error.find("(key "), std::string::npos) << x.error;
  }
  EXPECT_TRUE(valid_in(dir_ / "b", specs[0]));  // what verified was published all the same
}

TEST_F(KernelExchange, RanksThatPlannedOtherKernelsAreRefusedNamingTheRank) {
  ThreadGroup group(2);
  std::vector<RankResult> out(2);
  std::thread t0([&] {
    JitRuntime jit(options(dir_ / "a"));
    try {
      exchange_kernels(jit, specs_1_to(2), 0, 2, group.gather(0));
    } catch (const Error& e) {
      out[0].error = e.message();
    }
  });
  std::thread t1([&] {
    JitRuntime jit(options(dir_ / "b"));
    try {
      exchange_kernels(jit, specs_1_to(3), 1, 2, group.gather(1));
    } catch (const Error& e) {
      out[1].error = e.message();
    }
  });
  t0.join();
  t1.join();
  EXPECT_NE(out[0].error.find("rank 1 planned other kernels than rank 0"), std::string::npos) << out[0].error;
  EXPECT_NE(out[1].error.find("rank 0 planned other kernels than rank 1"), std::string::npos) << out[1].error;
}

TEST_F(KernelExchange, BadArgumentsAreRefusedBeforeAnyBuild) {
  JitRuntime jit(options(cache()));
  const auto specs = specs_1_to(2);
  auto none = [](const std::string&) -> std::vector<std::string> { ADD_FAILURE() << "gathered"; return {}; };
  for (auto [rank, world] : {std::pair{2, 2}, std::pair{-1, 2}, std::pair{0, 0}}) {
    EXPECT_THROW(exchange_kernels(jit, specs, rank, world, none), Error) << rank << " of " << world;
  }
  auto short_gather = [](const std::string& mine) { return std::vector<std::string>{mine}; };
  try {
    exchange_kernels(jit, specs, 0, 2, short_gather);
    ADD_FAILURE() << "a gather of 1 payload for 2 ranks was accepted";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("returned 1 payloads for 2 ranks"), std::string::npos) << e.message();
  }
}

}  // namespace
}  // namespace hcwarm::jit::test
