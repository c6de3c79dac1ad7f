// The kernel key: what changes it and what does not.
#include <gtest/gtest.h>
#include <unistd.h>

#include "common/test_util.hpp"
#include "jit/header_deps.hpp"
#include "jit/sha256.hpp"
#include "jit_test_util.hpp"

namespace hcwarm::jit::test {
namespace {

TEST(JitSha256, KnownVectors) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_TRUE(is_sha256_hex(sha256_hex("x")));
  EXPECT_FALSE(is_sha256_hex("ABC"));
  // Length-prefixed fields: ("ab","c") and ("a","bc") differ.
  EXPECT_NE(Sha256().field("t", "ab").field("t", "c").hex(), Sha256().field("t", "a").field("t", "bc").hex());
}

TEST(JitHeaderDeps, FollowsIncludesRecursivelyAndRelatively) {
  const EmbeddedFile hs[] = {
      {"cuda/a.cuh", "#include \"b.cuh\"\n#include <cuda_bf16.h>\n"},
      {"cuda/b.cuh", "  #  include \"common/c.hpp\"\n"},
      {"common/c.hpp", "// leaf\n"},
      {"cuda/unused.cuh", "x"},
  };
  const auto got = included_headers("#include \"cuda/a.cuh\"\n", hs);
  std::vector<std::string> paths;
  for (const auto& h : got) paths.emplace_back(h.path);
  EXPECT_EQ(paths, (std::vector<std::string>{"common/c.hpp", "cuda/a.cuh", "cuda/b.cuh"}));
  // A computed include cannot be followed: every header counts.
  EXPECT_EQ(included_headers("#define H \"cuda/a.cuh\"\n#include H\n", hs).size(), 4u);
  EXPECT_TRUE(included_headers("int x;\n", hs).empty());
}

class JitKey : public ::testing::Test {
 protected:
  std::string key(const KernelSpec& s, JitOptions o = options(std::nullopt)) { return JitRuntime(std::move(o)).key(s); }
};

TEST_F(JitKey, IsSha256HexAndStable) {
  const auto k = key(host_spec(1));
  EXPECT_TRUE(is_sha256_hex(k));
  EXPECT_EQ(k, key(host_spec(1)));
}

TEST_F(JitKey, ChangesWithSourceFamilyParamsAndParts) {
  const auto base = key(host_spec(1));
  EXPECT_NE(base, key(host_spec(2)));               // source and params
  EXPECT_NE(base, key(host_spec(1, "answer2")));    // family
  auto s = host_spec(1);
  s.source += "// comment\n";
  EXPECT_NE(base, key(s));                          // source only
  s = host_spec(1);
  s.params.emplace_back("extra", "1");
  EXPECT_NE(base, key(s));                          // params only
  s = host_spec(1);
  s.parts = 2;
  EXPECT_NE(base, key(s));                          // parts only: the artifact's form differs
}

TEST_F(JitKey, ChangesWithAnIncludedHeaderOnly) {
  const auto base = key(host_spec(1));
  auto o = options(std::nullopt);
  o.headers = test_headers_changed_base();          // detail/base.hpp, included through answer.hpp
  EXPECT_NE(base, key(host_spec(1), o));
  // A header nobody includes does not count.
  const EmbeddedFile more[] = {test_headers()[0], test_headers()[1], {"unused.hpp", "changed"}};
  o.headers = more;
  EXPECT_EQ(base, key(host_spec(1), o));
}

TEST_F(JitKey, ChangesWithFlagsAndArch) {
  const auto base = key(host_spec(1));
  auto o = options(std::nullopt);
  o.host_flags = {"-DEXTRA=1"};
  EXPECT_NE(base, key(host_spec(1), o));
  auto s = host_spec(1);
  s.arch = "x86-64-v2";
  auto s3 = host_spec(1);
  s3.arch = "x86-64-v3";
  EXPECT_NE(key(s), key(s3));
  if (nvrtc_available()) {
    EXPECT_NE(key(cuda_spec(1, "sm_90a")), key(cuda_spec(1, "sm_100a")));
    auto oc = options(std::nullopt);
    oc.nvrtc_flags = {"--use_fast_math"};
    EXPECT_NE(key(cuda_spec(1)), key(cuda_spec(1), oc));
  }
}

TEST_F(JitKey, ChangesWithTheCompilerVersion) {
  // A compiler that reports another version (a wrapper around the real one, as
  // after a toolchain upgrade that keeps the name), and a different compiler.
  hcwarm::test::TempDir dir("hcwarm-jit-key");
  const auto wrapper = dir / "c++";
  hcwarm::test::write_file(wrapper,
                           "#!/bin/sh\n"
                           "if [ \"$1\" = \"--version\" ]; then echo 'c++ (Fake 99) 99.1.0'; exit 0; fi\n"
                           "exec c++ \"$@\"\n");
  std::filesystem::permissions(wrapper, std::filesystem::perms::owner_all);
  const auto base = key(host_spec(1));
  auto o = options(std::nullopt);
  o.host_cxx = wrapper.string();
  const auto wrapped = key(host_spec(1), o);
  EXPECT_NE(base, wrapped);
  // The wrapper is a working compiler: compiling through it works.
  JitRuntime rt(o);
  EXPECT_EQ(call_answer(*rt.get(host_spec(1))), 101);
  // The same compiler under another name or path keeps the key (no install path in it).
  o.host_cxx = "g++";
  if (JitRuntime(options(std::nullopt)).compiler_for(host_spec(1)).identity().find("clang") == std::string::npos) {
    EXPECT_EQ(base, key(host_spec(1), o));
  }
  o.host_cxx = "clang++";
  std::string clang_key;
  try {
    clang_key = key(host_spec(1), o);
  } catch (const Error&) {
  }
  if (!clang_key.empty()) {
    EXPECT_NE(base, clang_key);
  }
}

TEST_F(JitKey, DoesNotDependOnWhereThingsLive) {
  // Cache dir, working directory, and the headers' storage address do not enter the key.
  hcwarm::test::TempDir a("hcwarm-jit-a"), b("hcwarm-jit-b");
  const auto k1 = key(host_spec(1), options(a.path()));
  const auto old = std::filesystem::current_path();
  std::filesystem::current_path(b.path());
  std::vector<std::string> texts;
  for (const auto& h : test_headers()) texts.emplace_back(h.content);
  std::vector<EmbeddedFile> copy;
  for (size_t i = 0; i < texts.size(); ++i) copy.push_back({test_headers()[i].path, texts[i]});
  auto o = options(b.path() / "elsewhere");
  o.headers = copy;
  const auto k2 = key(host_spec(1), o);
  std::filesystem::current_path(old);
  EXPECT_EQ(k1, k2);
  // And the compiled artifact is identical wherever the cache lives (no path baked in).
  JitRuntime ra(options(a.path())), rb(options(b.path()));
  ra.get(host_spec(1));
  rb.get(host_spec(1));
  const auto& c = ra.compiler_for(host_spec(1));
  const auto ea = DiskCache(a.path()).list(), eb = DiskCache(b.path()).list();
  ASSERT_EQ(ea.size(), 1u);
  ASSERT_EQ(eb.size(), 1u);
  EXPECT_EQ(ea[0].key, eb[0].key);
  EXPECT_EQ(hcwarm::test::read_file(ea[0].dir / c.artifact_name()), hcwarm::test::read_file(eb[0].dir / c.artifact_name()));
}

TEST(KernelSpec, ParamLooksUpByName) {
  KernelSpec s;
  s.params = {{"num_splits", "16"}, {"one_pass", "1"}};
  EXPECT_EQ(s.param("num_splits"), "16");
  EXPECT_EQ(s.param("one_pass"), "1");
  EXPECT_EQ(s.param("missing"), "");
}

}  // namespace
}  // namespace hcwarm::jit::test
