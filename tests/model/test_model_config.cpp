#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "common/test_util.hpp"
#include "model/model_config.hpp"
#include "model/server_args.hpp"

namespace hcwarm::model {
namespace {

const char* kValid = R"({
  "architectures": ["DeepseekV4ForCausalLM"], "hidden_size": 7168, "hc_mult": 4,
  "hc_sinkhorn_iters": 20, "hc_eps": 1e-6, "rms_norm_eps": 1e-6, "num_hidden_layers": 61,
  "num_nextn_predict_layers": 1, "sliding_window": 128, "compress_ratios": [0, 4, 128]
})";

void expect_field_error(const std::string& text, const std::string& field) {
  try {
    parse_model_config(text, "my/config.json");
    FAIL() << "accepted: " << text;
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
    EXPECT_NE(e.message().find("my/config.json"), std::string::npos) << e.message();
    EXPECT_NE(e.message().find(field), std::string::npos) << e.message();
  }
}

// kValid with one field replaced by a JSON value.
std::string with(const std::string& field, const std::string& value) {
  auto j = nlohmann::json::parse(kValid);
  j[field] = nlohmann::json::parse(value);
  return j.dump();
}

TEST(ModelConfig, PresetsCarryTheReferenceValues) {
  const auto flash = *preset("dsv4-flash");
  EXPECT_EQ(flash.hidden_size, 4096);
  EXPECT_EQ(flash.num_hidden_layers, 43);
  EXPECT_EQ(flash.hc_hidden_size(), 16384);
  const auto pro = *preset("dsv4-pro");
  EXPECT_EQ(pro.hidden_size, 7168);
  EXPECT_EQ(pro.num_hidden_layers, 61);
  EXPECT_EQ(pro.hc_hidden_size(), 28672);
  for (const auto& c : {flash, pro}) {
    EXPECT_EQ(c.hc_mult, 4);
    EXPECT_EQ(c.hc_sinkhorn_iters, 20);
    EXPECT_DOUBLE_EQ(c.hc_eps, 1e-6);
    EXPECT_DOUBLE_EQ(c.rms_norm_eps, 1e-6);
    EXPECT_EQ(c.num_nextn_predict_layers, 1);
    EXPECT_TRUE(c.is_hybrid_swa());
    EXPECT_EQ(*c.sliding_window, 128);
  }
  EXPECT_FALSE(preset("dsv4-huge").has_value());
}

TEST(ModelConfig, ParsesAValidFile) {
  const auto c = parse_model_config(kValid, "x.json");
  EXPECT_EQ(c.architecture, Architecture::DeepseekV4ForCausalLM);
  EXPECT_EQ(c.hidden_size, 7168);
  EXPECT_EQ(c.compress_ratios, (std::vector<int>{0, 4, 128}));
  EXPECT_TRUE(c.is_hybrid_swa());
  const auto nextn = parse_model_config(
      R"({"architectures": ["DeepseekV4ForCausalLMNextN"], "hidden_size": 64, "hc_mult": 2, "num_hidden_layers": 1})",
      "n.json");
  EXPECT_EQ(nextn.architecture, Architecture::DeepseekV4ForCausalLMNextN);
  EXPECT_FALSE(nextn.is_hybrid_swa());  // no sliding_window
  EXPECT_EQ(nextn.hc_sinkhorn_iters, 20);
}

TEST(ModelConfig, DefaultedFieldsAreRecordedInParseOrder) {
  EXPECT_TRUE(parse_model_config(kValid, "x.json").defaulted_fields.empty());  // every field given
  EXPECT_TRUE(preset("dsv4-pro")->defaulted_fields.empty());
  const auto bare = parse_model_config(
      R"({"architectures": ["DeepseekV4ForCausalLM"], "hidden_size": 64, "hc_mult": 4, "num_hidden_layers": 1})",
      "bare.json");
  EXPECT_EQ(bare.defaulted_fields,
            (std::vector<std::string>{"hc_sinkhorn_iters=20", "hc_eps=1e-06", "rms_norm_eps=1e-06",
                                      "num_nextn_predict_layers=0", "sliding_window=none"}));
  EXPECT_EQ(defaulted_fields_note(bare),
            "defaults used for fields the config left out: hc_sinkhorn_iters=20, hc_eps=1e-06, rms_norm_eps=1e-06, "
            "num_nextn_predict_layers=0, sliding_window=none");
  EXPECT_EQ(defaulted_fields_note(*preset("dsv4-flash")), "");
  // A field given as null is absent; one given, even as 0, is not a default.
  auto j = nlohmann::json::parse(kValid);
  j["hc_eps"] = nullptr;
  j["sliding_window"] = 0;
  j.erase("num_nextn_predict_layers");
  EXPECT_EQ(parse_model_config(j.dump(), "x.json").defaulted_fields,
            (std::vector<std::string>{"hc_eps=1e-06", "num_nextn_predict_layers=0"}));
}

TEST(ModelConfig, InvalidFilesNameFileAndField) {
  expect_field_error("{ not json", "not valid JSON");
  expect_field_error("[1, 2]", "JSON object");
  expect_field_error(R"({"hidden_size": 64, "hc_mult": 4, "num_hidden_layers": 2})", "architectures");
  expect_field_error(with("architectures", R"(["LlamaForCausalLM"])"), "unknown architecture");
  expect_field_error(with("architectures", R"("DeepseekV4ForCausalLM")"), "architectures");
  expect_field_error(with("hidden_size", "0"), "hidden_size");
  expect_field_error(with("hidden_size", "-8"), "hidden_size");
  expect_field_error(with("hidden_size", "\"7168\""), "hidden_size");
  expect_field_error(with("hidden_size", "71.5"), "hidden_size");
  expect_field_error(with("hc_mult", "0"), "hc_mult");
  expect_field_error(with("hc_sinkhorn_iters", "0"), "hc_sinkhorn_iters");
  expect_field_error(with("hc_eps", "\"small\""), "hc_eps");
  expect_field_error(with("rms_norm_eps", "0"), "rms_norm_eps");
  expect_field_error(with("num_hidden_layers", "0"), "num_hidden_layers");
  expect_field_error(with("sliding_window", "\"yes\""), "sliding_window");
  expect_field_error(with("compress_ratios", "[1, \"a\"]"), "compress_ratios");
  expect_field_error(R"({"architectures": ["DeepseekV4ForCausalLM"], "hc_mult": 4, "num_hidden_layers": 2})",
                     "hidden_size");
}

TEST(ModelConfig, ResolveTakesPresetsFilesAndDirectories) {
  test::TempDir dir;
  test::write_file(dir / "config.json", kValid);
  EXPECT_EQ(resolve_model("dsv4-pro").hidden_size, 7168);
  EXPECT_EQ(resolve_model((dir / "config.json").string()).hidden_size, 7168);
  EXPECT_EQ(resolve_model(dir.path().string()).hidden_size, 7168);
  EXPECT_THROW(resolve_model((dir / "nope.json").string()), Error);
}


TEST(ServerArgs, DpAttentionDividesOnceAndSaysSo) {
  test::LogCapture log;
  ServerArgsInput in;
  in.chunked_prefill_size = 16384;
  in.dp_size = 2;
  in.enable_dp_attention = true;
  const auto a = ServerArgs::process(in, std::nullopt);
  EXPECT_EQ(a.chunked_prefill_size, 8192);
  EXPECT_EQ(a.max_num_tokens(), 8192);
  EXPECT_EQ(log.count(spdlog::level::warn, "8192"), 1);
  // Without DP attention the size is the global one.
  in.enable_dp_attention = false;
  EXPECT_EQ(ServerArgs::process(in, std::nullopt).chunked_prefill_size, 16384);
}

TEST(ServerArgs, DefaultsFromDeviceMemory) {
  ServerArgsInput in;
  EXPECT_EQ(ServerArgs::process(in, std::nullopt).chunked_prefill_size, 8192);  // no device
  in.device_memory_gb = 141;
  EXPECT_EQ(ServerArgs::process(in, std::nullopt).chunked_prefill_size, 8192);
  in.device_memory_gb = 180;
  EXPECT_EQ(ServerArgs::process(in, std::nullopt).chunked_prefill_size, 16384);
  in.chunked_prefill_size = -1;
  const auto a = ServerArgs::process(in, std::nullopt);
  EXPECT_EQ(a.chunked_prefill_size, -1);
  EXPECT_EQ(a.max_num_tokens(), 8192);  // <= 0 means 8192 to warmup
}

TEST(ServerArgs, NumSmsPrecedence) {
  ServerArgsInput in;
  EXPECT_EQ(ServerArgs::process(in, std::nullopt).num_sms, 132);
  EXPECT_EQ(ServerArgs::process(in, 148).num_sms, 148);
  in.device_num_sms = 78;
  EXPECT_EQ(ServerArgs::process(in, 148).num_sms, 78);
  in.num_sms = 16;
  EXPECT_EQ(ServerArgs::process(in, 148).num_sms, 16);
  in.num_sms = 0;
  EXPECT_THROW(ServerArgs::process(in, std::nullopt), Error);
  in.num_sms.reset();
  in.dp_size = 0;
  EXPECT_THROW(ServerArgs::process(in, std::nullopt), Error);
}

TEST(ModelConfig, DeeplyNestedJsonIsRefusedBeforeItCrashes) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  try {
    parse_model_config(deep, "deep/config.json");
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
    EXPECT_NE(e.message().find("deep/config.json: JSON nested deeper than 64 levels"), std::string::npos)
        << e.message().substr(0, 300);
  }
  // Brackets inside strings are not nesting; 64 levels are fine.
  EXPECT_NO_THROW(parse_model_config(with("name_note", "\"" + std::string(1000, '[') + "\""), "ok.json"));
  EXPECT_NO_THROW(parse_model_config(with("extra", std::string(63, '[') + std::string(63, ']')), "ok.json"));
  EXPECT_THROW(parse_model_config(with("extra", std::string(64, '[') + std::string(64, ']')), "x.json"), Error);

  // The CLI: exit 2 with the message, not a crash.
  test::TempDir dir;
  test::write_file(dir / "config.json", deep);
  const auto r = test::run_cli({"plan", "--model", (dir / "config.json").string()});
  EXPECT_EQ(r.exit_code, 2) << r.err.substr(0, 300);
  EXPECT_NE(r.err.find("nested deeper than 64 levels"), std::string::npos) << r.err.substr(0, 300);
}

TEST(ModelConfig, ErrorMessagesQuoteAtMost200CharactersOfInput) {
  for (const auto& [field, value] :
       std::vector<std::pair<std::string, std::string>>{{"hidden_size", "\"" + std::string(100000, 'x') + "\""},
                                                        {"compress_ratios", "[\"" + std::string(50000, '1') + "\"]"},
                                                        {"architectures", "[\"" + std::string(100000, 'A') + "\"]"}}) {
    try {
      parse_model_config(with(field, value), "my/config.json");
      FAIL() << field;
    } catch (const Error& e) {
      EXPECT_NE(e.message().find(field), std::string::npos) << e.message().substr(0, 300);
      EXPECT_LT(e.message().size(), 400u) << e.message().substr(0, 300);
    }
  }
  try {
    parse_model_config("{\"a\": \"" + std::string(100000, 'y') + "", "cut.json");  // unterminated string
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("cut.json: not valid JSON"), std::string::npos) << e.message().substr(0, 300);
    EXPECT_LT(e.message().size(), 400u) << e.message().substr(0, 300);
  }
  // A number out of range is nlohmann's out_of_range, not a parse_error: still InvalidArgument, bounded.
  try {
    parse_model_config("{\"hidden_size\": " + std::string(50000, '9') + "e99999}", "big.json");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
    EXPECT_LT(e.message().size(), 400u) << e.message().substr(0, 300);
  }
}

TEST(ModelConfig, CompressRatiosPastTheIntRangeAreRefused) {
  EXPECT_NO_THROW(parse_model_config(with("compress_ratios", "[4, 2147483647]"), "ok.json"));
  expect_field_error(with("compress_ratios", "[4, 2147483648]"), "compress_ratios");
  expect_field_error(with("compress_ratios", "[18446744073709551615]"), "compress_ratios");
}

TEST(ModelConfig, ResolveQuotesAtMost200CharactersOfTheModelArgument) {
  for (const std::string& arg : {std::string(1000, 'm') + "/config.json", "no\xc0such" + std::string(300, '\xe9')}) {
    try {
      resolve_model(arg);
      FAIL() << "accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
      EXPECT_NE(e.message().find("--model \"" + arg.substr(0, 2)), std::string::npos) << e.message().substr(0, 300);
      EXPECT_LT(e.message().size(), 400u) << e.message().substr(0, 300);
    }
  }
}

}  // namespace
}  // namespace hcwarm::model
