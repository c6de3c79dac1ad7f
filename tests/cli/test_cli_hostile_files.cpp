// Files that are not what they claim: every CLI input that is a FIFO, a device,
// a directory or a dangling link exits 2 at once with one line naming it, and
// outputs never write through a planted symlink.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>

#include "cli/cli_fixtures.hpp"
#include "common/test_util.hpp"
#include "core/npy.hpp"

namespace hcwarm {
namespace {

namespace fs = std::filesystem;

void write_inputs(const fs::path& in) { test::write_hc_pre_inputs(in, 3, /*with_norm=*/false, 5); }

// Exit 2, quickly, with exactly one error line that names `needle` and `kind`.
void expect_refused(const std::vector<std::string>& args, const std::string& needle, const std::string& kind,
                    const std::string& what) {
  const auto t0 = std::chrono::steady_clock::now();
  const auto r = run_cli(args);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(30)) << what;
  EXPECT_EQ(r.exit_code, 2) << what << ": " << r.err;
  EXPECT_NE(r.err.find(needle), std::string::npos) << what << ": " << r.err;
  EXPECT_NE(r.err.find(kind), std::string::npos) << what << ": " << r.err;
  int error_lines = 0;
  for (size_t at = r.err.find("error:"); at != std::string::npos; at = r.err.find("error:", at + 1)) ++error_lines;
  EXPECT_EQ(error_lines, 1) << what << ": " << r.err;
}

enum class Kind { Fifo, DevZero, Directory, Dangling };
const char* name(Kind k) {
  switch (k) {
    case Kind::Fifo: return "a FIFO";
    case Kind::DevZero: return "a character device";
    case Kind::Directory: return "a directory";
    case Kind::Dangling: return "No such file";
  }
  return "";
}

void plant(const fs::path& p, Kind k) {
  fs::remove_all(p);
  switch (k) {
    case Kind::Fifo: ASSERT_EQ(::mkfifo(p.c_str(), 0600), 0); break;
    case Kind::DevZero: fs::create_symlink("/dev/zero", p); break;
    case Kind::Directory: fs::create_directories(p); break;
    case Kind::Dangling: fs::create_symlink(p.string() + ".gone", p); break;
  }
}

constexpr Kind kKinds[] = {Kind::Fifo, Kind::DevZero, Kind::Directory, Kind::Dangling};

TEST(CliHostileFiles, OpInputsAreRefusedByName) {
  TempDir dir;
  const auto model = small_model(dir);
  for (const char* file : {"residual.npy", "fn.npy", "norm_weight.npy"}) {
    for (const Kind k : kKinds) {
      if (std::string(file) == "norm_weight.npy" && k == Kind::Directory) continue;
      const auto in = dir / "in";
      fs::remove_all(in);
      write_inputs(in);
      plant(in / file, k);
      expect_refused({"op", "hc-pre", "--model", model, "--in", in.string(), "--out", (dir / "out").string(),
                      "--backend", "reference"},
                     (in / file).string(), name(k), std::string(file) + " as " + name(k));
      EXPECT_FALSE(fs::exists(dir / "out" / "y.npy"));
    }
  }
}

TEST(CliHostileFiles, ModelConfigTraceAndWeightsAreRefusedByName) {
  TempDir dir;
  for (const Kind k : kKinds) {
    const fs::path cfg = dir / "model" / "config.json";
    fs::create_directories(cfg.parent_path());
    plant(cfg, k);
    if (k == Kind::Directory) continue;  // --model DIR means DIR/config.json
    expect_refused({"plan", "--model", cfg.string()}, cfg.string(), name(k), std::string("config.json as ") + name(k));
  }
  const auto model = small_model(dir);
  for (const Kind k : kKinds) {
    plant(dir / "trace.jsonl", k);
    expect_refused({"replay", "--model", model, "--trace", (dir / "trace.jsonl").string(), "--layers", "1"},
                   (dir / "trace.jsonl").string(), name(k), std::string("trace as ") + name(k));
    plant(dir / "w.safetensors", k);
    expect_refused({"replay", "--model", model, "--trace", "synthetic:n=1", "--layers", "1", "--weights",
                    (dir / "w.safetensors").string()},
                   (dir / "w.safetensors").string(), name(k), std::string("weights as ") + name(k));
  }
}

TEST(CliHostileFiles, OutputsReplacePlantedSymlinks) {
  TempDir dir;
  const auto model = small_model(dir);
  write_inputs(dir / "in");
  fs::create_directories(dir / "out");
  test::write_file(dir / "victim", "precious");
  fs::create_symlink(dir / "victim", dir / "out" / "y.npy");
  fs::create_symlink(dir / "victim", dir / "report.json");
  const auto r = run_cli({"op", "hc-pre", "--model", model, "--in", (dir / "in").string(), "--out",
                          (dir / "out").string(), "--backend", "reference"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(fs::is_symlink(dir / "out" / "y.npy"));
  EXPECT_EQ(read_npy_f32(dir / "out" / "y.npy").shape(), Shape({3, 64}));
  const auto rep = run_cli({"replay", "--model", model, "--trace", "synthetic:n=2", "--layers", "1",
                            "--backend", "reference", "--report", (dir / "report.json").string()});
  ASSERT_EQ(rep.exit_code, 0) << rep.err;
  EXPECT_FALSE(fs::is_symlink(dir / "report.json"));
  EXPECT_EQ(test::read_file(dir / "victim"), "precious");
  for (const auto& e : fs::directory_iterator(dir / "out")) {
    EXPECT_EQ(e.path().filename().string().find(".tmp"), std::string::npos) << e.path();
  }
}

}  // namespace
}  // namespace hcwarm
