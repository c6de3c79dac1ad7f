// `hcwarm cache export | import | check` on the tiny model's CPU kernels: a
// configuration's keys or every entry into one file, verified and published
// into another cache; check names every planned key a cache lacks.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "cli/cli_fixtures.hpp"

namespace hcwarm {
namespace {
namespace fs = std::filesystem;
using test::cat;
using test::read_file;
using test::run_cli;
using test::TempDir;


size_t count(const std::string& s, const std::string& needle) {
  size_t n = 0;
  for (size_t at = s.find(needle); at != std::string::npos; at = s.find(needle, at + 1)) ++n;
  return n;
}

// One `cache build` of the tiny model for the whole suite (its few host compiles).
class CliCacheBundle : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir("hcwarm-cli-bundle");
    const auto r = run_cli(cat({"cache", "build", "--json"}, test::tiny_model_args(*dir_)));
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    keys_ = nlohmann::json::parse(r.out)["keys"].get<size_t>();
    ASSERT_GE(keys_, 3u);  // at least one kernel per split bucket: 3 at 8 SMs and 320 tokens
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  static fs::path built() { return *dir_ / "cache"; }
  // The tiny model's options without --cache-dir.
  static std::vector<std::string> model() { return test::tiny_model_args(*dir_, false); }

  TempDir tmp_{"hcwarm-cli-bundle-case"};
  static TempDir* dir_;
  static size_t keys_;  // the keys the tiny model plans
};
TempDir* CliCacheBundle::dir_ = nullptr;
size_t CliCacheBundle::keys_ = 0;

TEST_F(CliCacheBundle, CheckExportImportCheck) {
  const fs::path other = tmp_ / "other", bundle = tmp_ / "tiny.hcwb";
  // The built cache has every planned key.
  const auto ok = run_cli(cat({"cache", "check", "--cache-dir", built().string()}, model()));
  EXPECT_EQ(ok.exit_code, 0) << ok.out << ok.err;
  EXPECT_NE(ok.out.find(fmt::format("{} keys planned, {} present and valid", keys_, keys_)), std::string::npos) << ok.out;

  // An empty cache misses all of them, each named with its kernel and key.
  fs::create_directories(other);
  const auto miss = run_cli(cat({"cache", "check", "--cache-dir", other.string()}, model()));
  EXPECT_EQ(miss.exit_code, 1) << miss.out << miss.err;
  EXPECT_EQ(count(miss.out, "MISSING mhc_pre["), keys_) << miss.out;
  const auto mj = run_cli(cat({"cache", "check", "--cache-dir", other.string(), "--json"}, model()));
  EXPECT_EQ(mj.exit_code, 1);
  const auto j = nlohmann::json::parse(mj.out);
  EXPECT_EQ(j["schema_version"], 1);
  EXPECT_EQ(j["ok"], false);
  EXPECT_EQ(j["keys"], keys_);
  ASSERT_EQ(j["problems"].size(), keys_);
  for (const auto& p : j["problems"]) {
    EXPECT_EQ(p["status"], "missing");
    EXPECT_EQ(p["key"].get<std::string>().size(), 64u);
    EXPECT_EQ(p["family"], "mhc_pre");
  }

  const auto ex = run_cli(cat({"cache", "export", "--cache-dir", built().string(), "--out", bundle.string(), "--json"},
                              model()));
  ASSERT_EQ(ex.exit_code, 0) << ex.out << ex.err;
  const auto ej = nlohmann::json::parse(ex.out);
  EXPECT_EQ(ej["schema_version"], 1);
  EXPECT_EQ(ej["entries"], keys_);
  EXPECT_EQ(ej["planned_keys"], keys_);
  EXPECT_EQ(ej["bytes"].get<uint64_t>(), fs::file_size(bundle));

  const auto im = run_cli({"cache", "import", bundle.string(), "--cache-dir", other.string()});
  EXPECT_EQ(im.exit_code, 0) << im.out << im.err;
  EXPECT_NE(im.out.find(fmt::format("imported {} of {} entries", keys_, keys_)), std::string::npos) << im.out;
  EXPECT_EQ(run_cli(cat({"cache", "check", "--cache-dir", other.string()}, model())).exit_code, 0);
  EXPECT_EQ(run_cli({"cache", "verify", "--cache-dir", other.string()}).exit_code, 0);

  // Again: kept as they are.
  const auto again = run_cli({"cache", "import", bundle.string(), "--cache-dir", other.string(), "--json"});
  EXPECT_EQ(again.exit_code, 0) << again.err;
  const auto aj = nlohmann::json::parse(again.out);
  EXPECT_EQ(aj["schema_version"], 1);
  EXPECT_EQ(aj["imported"], 0);
  EXPECT_EQ(aj["already_present"], keys_);

  // A server with HCWARM_JIT=off starts from the imported cache alone.
  const auto warm = run_cli(cat({"warm", "--json", "--cache-dir", other.string()}, model()), {"HCWARM_JIT=off"});
  ASSERT_EQ(warm.exit_code, 0) << warm.out << warm.err;
  const auto wj = nlohmann::json::parse(warm.out);
  EXPECT_EQ(wj["compiled"], 0);
  EXPECT_EQ(wj["loaded_from_disk"], keys_);
}

TEST_F(CliCacheBundle, ExportAllTakesEveryValidEntryAndNamesTheBadOnes) {
  const fs::path copy = tmp_ / "copy", bundle = tmp_ / "all.hcwb", dst = tmp_ / "dst";
  fs::copy(built(), copy, fs::copy_options::recursive);
  // A fourth configuration's kernel in the same cache, then one entry damaged.
  auto more = model();
  more[3] = "16";  // --num-sms 16: a split count (3) that 8 SMs never plan
  ASSERT_EQ(run_cli(cat({"cache", "build", "--cache-dir", copy.string()}, more)).exit_code, 0);
  const auto ls = nlohmann::json::parse(run_cli({"cache", "ls", "--json", "--cache-dir", copy.string()}).out);
  const size_t n = ls["entries"].size();
  ASSERT_GT(n, keys_);
  const fs::path damaged = fs::path(ls["entries"][0]["dir"].get<std::string>());
  for (const auto& f : fs::directory_iterator(damaged)) {
    if (f.path().filename() != "manifest.json") test::write_file(f.path(), "damaged");
  }
  const auto ex = run_cli({"cache", "export", "--all", "--cache-dir", copy.string(), "--out", bundle.string()});
  ASSERT_EQ(ex.exit_code, 0) << ex.out << ex.err;
  EXPECT_NE(ex.out.find("exported " + std::to_string(n - 1) + " entries"), std::string::npos) << ex.out;
  EXPECT_NE(ex.out.find("skipped"), std::string::npos) << ex.out;
  EXPECT_NE(ex.out.find(damaged.filename().string()), std::string::npos) << ex.out;
  const auto im = run_cli({"cache", "import", bundle.string(), "--cache-dir", dst.string(), "--json"});
  ASSERT_EQ(im.exit_code, 0) << im.err;
  EXPECT_EQ(nlohmann::json::parse(im.out)["imported"], n - 1);
}

TEST_F(CliCacheBundle, ABrokenBundleIsRefusedAndTheCacheIsUnchanged) {
  const fs::path bundle = tmp_ / "tiny.hcwb", dst = tmp_ / "dst";
  ASSERT_EQ(run_cli({"cache", "export", "--all", "--cache-dir", built().string(), "--out", bundle.string()}).exit_code,
            0);
  const std::string good = read_file(bundle);
  // dst holds all but one of the entries: it must stay exactly as it is.
  ASSERT_EQ(run_cli({"cache", "import", bundle.string(), "--cache-dir", dst.string()}).exit_code, 0);
  const auto ls = nlohmann::json::parse(run_cli({"cache", "ls", "--json", "--cache-dir", dst.string()}).out);
  ASSERT_EQ(ls["entries"].size(), keys_);
  fs::remove_all(ls["entries"][0]["dir"].get<std::string>());
  const auto before = test::tree_snapshot(dst);
  struct Case {
    std::string name, bytes, needle;
  };
  std::string altered = good;
  altered[good.size() / 2] ^= 0x01;
  const std::vector<Case> cases{{"truncated", good.substr(0, good.size() * 2 / 3), "truncated"},
                                {"altered", altered, "checksum mismatch"},
                                {"empty", "", "not an hcwarm kernel bundle"},
                                {"not a bundle", "{\"entries\": []}\n", "not an hcwarm kernel bundle"}};
  for (const auto& c : cases) {
    test::write_file(tmp_ / "bad.hcwb", c.bytes);
    const auto r = run_cli({"cache", "import", (tmp_ / "bad.hcwb").string(), "--cache-dir", dst.string()});
    EXPECT_EQ(r.exit_code, 2) << c.name << ": " << r.out << r.err;
    EXPECT_NE(r.err.find(c.needle), std::string::npos) << c.name << ": " << r.err;
    EXPECT_NE(r.err.find("bad.hcwb"), std::string::npos) << c.name << ": " << r.err;
    EXPECT_EQ(test::tree_snapshot(dst), before) << c.name;
  }
  // A directory is not a bundle; nor is a missing file.
  EXPECT_EQ(run_cli({"cache", "import", tmp_.path().string(), "--cache-dir", dst.string()}).exit_code, 2);
  EXPECT_EQ(run_cli({"cache", "import", (tmp_ / "absent").string(), "--cache-dir", dst.string()}).exit_code, 2);
  // A directory that is not a cache gets nothing.
  test::write_file(tmp_ / "home" / "notes.txt", "mine");
  const auto home = run_cli({"cache", "import", bundle.string(), "--cache-dir", (tmp_ / "home").string()});
  EXPECT_EQ(home.exit_code, 2) << home.out << home.err;
  EXPECT_NE(home.err.find("not an hcwarm cache directory"), std::string::npos) << home.err;
  EXPECT_EQ(test::tree_snapshot(tmp_ / "home").size(), 1u);
  EXPECT_EQ(test::tree_snapshot(dst), before);
}

TEST_F(CliCacheBundle, ExportOfAConfigurationNeedsEveryPlannedKey) {
  const fs::path bundle = tmp_ / "tiny.hcwb", partial = tmp_ / "partial";
  fs::copy(built(), partial, fs::copy_options::recursive);
  const auto ls = nlohmann::json::parse(run_cli({"cache", "ls", "--json", "--cache-dir", partial.string()}).out);
  ASSERT_EQ(ls["entries"].size(), keys_);
  fs::remove_all(ls["entries"][1]["dir"].get<std::string>());
  const std::string gone = ls["entries"][1]["key"];

  const auto ex = run_cli(cat({"cache", "export", "--cache-dir", partial.string(), "--out", bundle.string()}, model()));
  EXPECT_EQ(ex.exit_code, 1) << ex.out << ex.err;
  EXPECT_NE(ex.err.find(fmt::format("1 of the {} planned keys", keys_)), std::string::npos) << ex.err;
  EXPECT_NE(ex.err.find(gone), std::string::npos) << ex.err;
  EXPECT_FALSE(fs::exists(bundle));

  // check says the same, and names a damaged entry as BAD.
  const fs::path other = fs::path(ls["entries"][0]["dir"].get<std::string>());
  for (const auto& f : fs::directory_iterator(other)) {
    if (f.path().filename() != "manifest.json") test::write_file(f.path(), "x");
  }
  const auto ck = run_cli(cat({"cache", "check", "--cache-dir", partial.string()}, model()));
  EXPECT_EQ(ck.exit_code, 1) << ck.out << ck.err;
  EXPECT_EQ(count(ck.out, "MISSING "), 1u) << ck.out;
  EXPECT_EQ(count(ck.out, "BAD "), 1u) << ck.out;
  EXPECT_NE(ck.out.find(gone), std::string::npos) << ck.out;
}

TEST_F(CliCacheBundle, CheckCountsOnlyWhatTheRuntimeWouldLoad) {
  const fs::path copy = tmp_ / "copy";
  fs::copy(built(), copy, fs::copy_options::recursive);
  // A cache root others can write: the runtime refuses all of it, and so does check.
  fs::permissions(copy, fs::perms::group_write | fs::perms::others_write, fs::perm_options::add);
  const auto r = run_cli(cat({"cache", "check", "--cache-dir", copy.string()}, model()));
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_EQ(count(r.out, "BAD mhc_pre["), keys_) << r.out;
  EXPECT_NE(r.out.find("writable by group or others"), std::string::npos) << r.out;
}

TEST_F(CliCacheBundle, OptionsSayWhatToExport) {
  const std::string out = (tmp_ / "x.hcwb").string();
  const auto none = run_cli({"cache", "export", "--cache-dir", built().string(), "--out", out});
  EXPECT_EQ(none.exit_code, 2) << none.err;
  EXPECT_NE(none.err.find("--all"), std::string::npos) << none.err;
  const auto both = run_cli({"cache", "export", "--all", "--model", "dsv4-pro", "--cache-dir", built().string(),
                             "--out", out});
  EXPECT_EQ(both.exit_code, 2) << both.err;
  EXPECT_NE(both.err.find("--all takes every entry, so --model means nothing"), std::string::npos) << both.err;
  EXPECT_EQ(run_cli({"cache", "export", "--all", "--cache-dir", built().string()}).exit_code, 2);  // no --out
  EXPECT_EQ(run_cli(cat({"cache", "check", "--cache-dir", (tmp_ / "absent").string()}, model())).exit_code, 2);
  EXPECT_FALSE(fs::exists(out));
}

}  // namespace
}  // namespace hcwarm
