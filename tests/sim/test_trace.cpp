#include "sim/trace.hpp"

#include <gtest/gtest.h>

#include "common/test_util.hpp"
#include "core/error.hpp"

namespace hcwarm::sim {
namespace {

using test::TempDir;
using test::write_file;

// The message of the InvalidArgument error `fn` throws (fails the test otherwise).
template <class Fn>
std::string invalid_argument_message(Fn&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument) << e.what();
    return e.message();
  }
  ADD_FAILURE() << "no error thrown";
  return {};
}

TEST(TraceTest, ParsesDatetime) {
  EXPECT_DOUBLE_EQ(*parse_datetime_seconds("1970-01-02 00:00:01.5"), 86401.5);
  EXPECT_DOUBLE_EQ(*parse_datetime_seconds("1970-01-01T01:00:00+01:00"), 0.0);
  EXPECT_DOUBLE_EQ(*parse_datetime_seconds("1970-01-01 00:00:00Z"), 0.0);
  const double a = *parse_datetime_seconds("2023-11-16 18:15:46.6805900");
  const double b = *parse_datetime_seconds("2023-11-16 18:15:47.1805900");
  EXPECT_NEAR(b - a, 0.5, 1e-6);
  EXPECT_FALSE(parse_datetime_seconds("2023-02-30 00:00:00"));
  EXPECT_FALSE(parse_datetime_seconds("2023-11-16"));
  EXPECT_FALSE(parse_datetime_seconds("12.5"));
  EXPECT_FALSE(parse_datetime_seconds("2023-11-16 25:00:00"));
  EXPECT_FALSE(parse_datetime_seconds("2023-11-16 18:15:46.x"));
}

TEST(TraceTest, AzureCsvWithDatetimes) {
  const std::string csv =
      "TIMESTAMP,ContextTokens,GeneratedTokens\r\n"
      "2023-11-16 18:15:46.6805900,4808,10\r\n"
      "2023-11-16 18:15:50.9951690,3180,8\r\n"
      "\r\n"
      "2023-11-16 18:15:51.1805900,110,27\r\n";
  const auto reqs = parse_azure_csv(csv, "azure.csv");
  ASSERT_EQ(reqs.size(), 3u);
  EXPECT_EQ(reqs[0].id, 0);
  EXPECT_DOUBLE_EQ(reqs[0].arrival_s, 0.0);
  EXPECT_EQ(reqs[0].prompt_tokens, 4808);
  EXPECT_EQ(reqs[0].output_tokens, 10);
  EXPECT_NEAR(reqs[1].arrival_s, 4.314579, 1e-5);
  EXPECT_NEAR(reqs[2].arrival_s, 4.5, 1e-5);
  EXPECT_EQ(reqs[2].prompt_tokens, 110);
  EXPECT_EQ(reqs[2].output_tokens, 27);
}

TEST(TraceTest, AzureCsvNumericSecondsOtherColumnOrderAndUnsorted) {
  const std::string csv =
      "ContextTokens,GeneratedTokens,TIMESTAMP,Extra\n"
      "100,5,12.5,x\n"
      "200,6,10.0,y\n"
      "300,0,11\n"  // wrong field count
      ;
  EXPECT_NE(invalid_argument_message([&] { parse_azure_csv(csv, "t.csv"); }).find("line 4: expected 4 fields, got 3"),
            std::string::npos);
  const auto reqs = parse_azure_csv("ContextTokens,GeneratedTokens,timestamp\n100,5,12.5\n200,6,10.0\n", "t.csv");
  ASSERT_EQ(reqs.size(), 2u);
  // Sorted by arrival, relative to the earliest; ids keep file order.
  EXPECT_EQ(reqs[0].id, 1);
  EXPECT_DOUBLE_EQ(reqs[0].arrival_s, 0.0);
  EXPECT_EQ(reqs[1].id, 0);
  EXPECT_DOUBLE_EQ(reqs[1].arrival_s, 2.5);
}

TEST(TraceTest, AzureCsvMalformedLinesNamedByNumber) {
  const std::string csv =
      "TIMESTAMP,ContextTokens,GeneratedTokens\n"   // 1
      "2023-11-16 18:15:46.68,4808,10\n"            // 2
      "2023-11-16 18:15:47.00,abc,10\n"             // 3
      "\n"                                          // 4 (blank: skipped, still counted)
      "2023-11-16 18:15:48.00,12\n"                 // 5
      "yesterday,12,-3\n"                           // 6
      "15.0,12,3\n"                                 // 7 seconds after datetimes
      "2023-11-16 18:15:49.00,0,3\n";               // 8 empty prompt
  const std::string msg = invalid_argument_message([&] { parse_azure_csv(csv, "bad.csv"); });
  EXPECT_NE(msg.find("bad.csv: 5 malformed lines"), std::string::npos) << msg;
  EXPECT_NE(msg.find("line 3: ContextTokens 'abc' is not an integer in [1, 4194304]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("line 5: expected 3 fields, got 2"), std::string::npos) << msg;
  EXPECT_NE(msg.find("line 6: TIMESTAMP 'yesterday'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("GeneratedTokens '-3'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("line 7: TIMESTAMP '15.0' is plain seconds but earlier rows are datetimes"), std::string::npos)
      << msg;
  EXPECT_NE(msg.find("line 8: ContextTokens '0'"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("line 2:"), std::string::npos) << msg;
}

TEST(TraceTest, ErrorListIsCapped) {
  std::string csv = "TIMESTAMP,ContextTokens,GeneratedTokens\n";
  for (int i = 0; i < 15; ++i) csv += "1.0,x,1\n";
  TraceReadOptions opts;
  opts.max_errors = 4;
  const std::string msg = invalid_argument_message([&] { parse_azure_csv(csv, "many.csv", opts); });
  EXPECT_NE(msg.find("15 malformed lines"), std::string::npos) << msg;
  EXPECT_NE(msg.find("line 5:"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("line 6:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("... and 11 more"), std::string::npos) << msg;
}

TEST(TraceTest, AzureCsvHeaderProblems) {
  EXPECT_NE(invalid_argument_message([] { parse_azure_csv("", "e.csv"); }).find("e.csv: empty trace"),
            std::string::npos);
  const std::string msg = invalid_argument_message([] { parse_azure_csv("TIMESTAMP,Tokens\n1,2\n", "h.csv"); });
  EXPECT_NE(msg.find("h.csv: line 1"), std::string::npos) << msg;
  EXPECT_NE(msg.find("contexttokens"), std::string::npos) << msg;
  EXPECT_NE(msg.find("generatedtokens"), std::string::npos) << msg;
  EXPECT_NE(invalid_argument_message([] { parse_azure_csv("TIMESTAMP,ContextTokens,GeneratedTokens\n", "o.csv"); })
                .find("no requests"),
            std::string::npos);
}

TEST(TraceTest, JsonlParsesAndSkipsBlankLines) {
  const std::string jsonl =
      "{\"arrival_s\": 0.5, \"prompt_tokens\": 100, \"output_tokens\": 20}\n"
      "\n"
      "   \n"
      "{\"arrival_s\": 0, \"prompt_tokens\": 7, \"output_tokens\": 0, \"note\": \"extra keys ok\"}\n"
      "{\"arrival_s\": 1.25, \"prompt_tokens\": 3.0, \"output_tokens\": 1}\n";
  const auto reqs = parse_jsonl(jsonl, "t.jsonl");
  ASSERT_EQ(reqs.size(), 3u);
  EXPECT_EQ(reqs[0].id, 1);
  EXPECT_EQ(reqs[0].prompt_tokens, 7);
  EXPECT_EQ(reqs[0].output_tokens, 0);
  EXPECT_EQ(reqs[1].id, 0);
  EXPECT_DOUBLE_EQ(reqs[1].arrival_s, 0.5);
  EXPECT_EQ(reqs[2].prompt_tokens, 3);
}

TEST(TraceTest, JsonlMalformedLinesNamedByNumber) {
  const std::string jsonl =
      "{\"arrival_s\": 0.5, \"prompt_tokens\": 100, \"output_tokens\": 20}\n"  // 1
      "{\"arrival_s\": 0.5, \"prompt_tokens\": 100,\n"                         // 2 truncated
      "[1, 2, 3]\n"                                                           // 3
      "\n"                                                                    // 4
      "{\"arrival_s\": 1, \"output_tokens\": 2}\n"                            // 5
      "{\"arrival_s\": -1, \"prompt_tokens\": 2.5, \"output_tokens\": \"9\"}\n";  // 6
  const std::string msg = invalid_argument_message([&] { parse_jsonl(jsonl, "bad.jsonl"); });
  EXPECT_NE(msg.find("bad.jsonl: 4 malformed lines"), std::string::npos) << msg;
  EXPECT_NE(msg.find("line 2: not valid JSON"), std::string::npos) << msg;
  EXPECT_NE(msg.find("line 3: expected a JSON object, got array"), std::string::npos) << msg;
  EXPECT_NE(msg.find("line 5: missing \"prompt_tokens\""), std::string::npos) << msg;
  EXPECT_NE(msg.find("line 6: \"arrival_s\" is -1"), std::string::npos) << msg;
  EXPECT_NE(msg.find("\"prompt_tokens\" is 2.5, not an integer in [1, 4194304]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("\"output_tokens\" is \"9\", not a number"), std::string::npos) << msg;
}

TEST(TraceTest, JsonlDeeplyNestedOrHugeLinesAreBoundedErrors) {
  const std::string jsonl = std::string(100000, '[') + std::string(100000, ']') + "\n" +  // 1
                            "{\"arrival_s\": \"" + std::string(100000, 'z') + "\", \"prompt_tokens\": 1, " +
                            "\"output_tokens\": 1}\n" +  // 2
                            "{\"arrival_s\": 1e99999}\n";  // 3: out of range
  const std::string msg = invalid_argument_message([&] { parse_jsonl(jsonl, "deep.jsonl"); });
  EXPECT_NE(msg.find("line 1: JSON nested deeper than 64 levels"), std::string::npos) << msg.substr(0, 300);
  EXPECT_NE(msg.find("line 2: \"arrival_s\" is \"zzz"), std::string::npos) << msg.substr(0, 300);
  EXPECT_NE(msg.find("line 3: not valid JSON"), std::string::npos) << msg.substr(0, 300);
  EXPECT_LT(msg.size(), 1000u) << msg.substr(0, 300);
}

TEST(TraceTest, ReadTraceDetectsFormat) {
  TempDir dir;
  write_file(dir / "a.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\n0,10,2\n1,20,3\n");
  write_file(dir / "b.jsonl", "{\"arrival_s\": 0, \"prompt_tokens\": 5, \"output_tokens\": 1}\n");
  write_file(dir / "c.txt", "\n{\"arrival_s\": 0, \"prompt_tokens\": 6, \"output_tokens\": 1}\n");
  write_file(dir / "d.log", "TIMESTAMP,ContextTokens,GeneratedTokens\n0,10,2\n");
  EXPECT_EQ(detect_trace_format(dir / "a.csv", ""), TraceFormat::AzureCsv);
  EXPECT_EQ(detect_trace_format(dir / "x.NDJSON", ""), TraceFormat::Jsonl);
  EXPECT_EQ(read_trace(dir / "a.csv").size(), 2u);
  EXPECT_EQ(read_trace(dir / "b.jsonl")[0].prompt_tokens, 5);
  EXPECT_EQ(read_trace(dir / "c.txt")[0].prompt_tokens, 6);
  EXPECT_EQ(read_trace(dir / "d.log")[0].prompt_tokens, 10);

  TraceReadOptions opts;
  opts.max_requests = 1;
  EXPECT_EQ(read_trace(dir / "a.csv", opts).size(), 1u);

  // An explicit format wins over the extension; errors name the path.
  opts = {};
  opts.format = TraceFormat::Jsonl;
  const std::string msg = invalid_argument_message([&] { read_trace(dir / "a.csv", opts); });
  EXPECT_NE(msg.find((dir / "a.csv").string()), std::string::npos) << msg;
  EXPECT_NE(msg.find("line 1: not valid JSON"), std::string::npos) << msg;

  EXPECT_NE(invalid_argument_message([&] { read_trace(dir / "missing.csv"); }).find("missing.csv"),
            std::string::npos);
}

TEST(TraceTest, LoadTraceSynthetic) {
  const auto demo = load_trace("synthetic");
  EXPECT_EQ(static_cast<int64_t>(demo.size()), builtin_demo_trace_config().num_requests);
  const auto small = load_trace("synthetic:n=10,seed=3,output_mean=5");
  ASSERT_EQ(small.size(), 10u);
  auto cfg = builtin_demo_trace_config();
  cfg.num_requests = 10;
  cfg.seed = 3;
  cfg.output_mean = 5;
  const auto direct = synthetic_trace(cfg);
  for (size_t i = 0; i < small.size(); ++i) EXPECT_EQ(small[i].output_tokens, direct[i].output_tokens);

  EXPECT_NE(invalid_argument_message([] { load_trace("synthetic:bogus=1"); }).find("unknown key 'bogus'"),
            std::string::npos);
  EXPECT_NE(invalid_argument_message([] { load_trace("synthetic:n"); }).find("not KEY=VALUE"), std::string::npos);
  EXPECT_NE(invalid_argument_message([] { load_trace("synthetic:n=ten"); }).find("not a number"), std::string::npos);
  EXPECT_NE(invalid_argument_message([] { load_trace("synthetic:n=0"); }).find("num_requests"), std::string::npos);
}

TEST(TraceTest, FixtureFilesUnderTestsData) {
  const std::filesystem::path dir = std::filesystem::path(HCWARM_SOURCE_DIR) / "tests/data/traces";
  const auto csv = read_trace(dir / "azure_sample.csv");
  const auto jsonl = read_trace(dir / "sample.jsonl");
  ASSERT_EQ(csv.size(), 40u);
  ASSERT_EQ(jsonl.size(), 40u);
  for (size_t i = 0; i < csv.size(); ++i) {
    EXPECT_EQ(csv[i].prompt_tokens, jsonl[i].prompt_tokens);
    EXPECT_EQ(csv[i].output_tokens, jsonl[i].output_tokens);
    EXPECT_NEAR(csv[i].arrival_s, jsonl[i].arrival_s, 1e-5);
  }
  const std::string c = invalid_argument_message([&] { read_trace(dir / "azure_malformed.csv"); });
  EXPECT_NE(c.find("2 malformed lines"), std::string::npos) << c;
  EXPECT_NE(c.find("line 4: ContextTokens '12x'"), std::string::npos) << c;
  EXPECT_NE(c.find("line 6: expected 3 fields, got 2"), std::string::npos) << c;
  const std::string j = invalid_argument_message([&] { read_trace(dir / "malformed.jsonl"); });
  EXPECT_NE(j.find("2 malformed lines"), std::string::npos) << j;
  EXPECT_NE(j.find("line 2: not valid JSON"), std::string::npos) << j;
  EXPECT_NE(j.find("line 4: missing \"prompt_tokens\""), std::string::npos) << j;
}

TEST(TraceTest, AzureCsvErrorsQuoteAtMost200CharactersOfAField) {
  const std::string row = std::string(5000, '9') + "," + std::string(5000, 'x') + "," + std::string(5000, '-') + "\n";
  std::string msg = invalid_argument_message(
      [&] { parse_azure_csv("TIMESTAMP,ContextTokens,GeneratedTokens\n" + row + row + row, "long.csv"); });
  EXPECT_NE(msg.find("long.csv: 3 malformed lines"), std::string::npos) << msg.substr(0, 300);
  EXPECT_NE(msg.find("line 2: TIMESTAMP '999"), std::string::npos) << msg.substr(0, 300);
  EXPECT_LT(msg.size(), 3000u) << msg.substr(0, 300);
  msg = invalid_argument_message([] { parse_azure_csv("TIMESTAMP," + std::string(20000, 'y') + "\n0,1,1\n", "h.csv"); });
  EXPECT_NE(msg.find("h.csv: line 1: header 'TIMESTAMP,yyy"), std::string::npos) << msg.substr(0, 300);
  EXPECT_LT(msg.size(), 600u) << msg.substr(0, 300);
}

TEST(TraceTest, AzureCsvTimestampsTooFarApartAreRefused) {
  // Each is a finite number of seconds, but their span is not: arrivals would be infinite.
  const std::string msg = invalid_argument_message(
      [] { parse_azure_csv("TIMESTAMP,ContextTokens,GeneratedTokens\n1e308,1,1\n-1e308,1,1\n", "far.csv"); });
  EXPECT_NE(msg.find("far.csv"), std::string::npos) << msg;
  EXPECT_NE(msg.find("TIMESTAMP"), std::string::npos) << msg;
}

}  // namespace
}  // namespace hcwarm::sim
