// Loading a decoder layer's mHC and norm parameters from safetensors by their
// upstream names, and the errors for a missing or mis-shaped tensor.
#include <gtest/gtest.h>

#include "common/test_util.hpp"
#include "model/layer_weights.hpp"
#include "model/safetensors.hpp"

namespace hcwarm::model {
namespace {

ModelConfig tiny() {
  return parse_model_config(R"({"architectures": ["DeepseekV4ForCausalLM"], "hidden_size": 32, "hc_mult": 4,
                                "num_hidden_layers": 2, "sliding_window": 128})",
                            "tiny.json");
}

// Every tensor of `layer` with distinct values; `skip` is left out, `bad_shape` gets one extra element.
void add_layer(SafetensorsWriter& w, int layer, const std::string& skip = {}, const std::string& bad_shape = {}) {
  const std::vector<std::pair<std::string, Shape>> f32 = {
      {"hc_attn_fn", {24, 128}}, {"hc_attn_scale", {3}}, {"hc_attn_base", {24}},
      {"hc_ffn_fn", {24, 128}},  {"hc_ffn_scale", {3}},  {"hc_ffn_base", {24}}};
  for (auto [name, shape] : f32) {
    if (name == skip) continue;
    if (name == bad_shape) shape.back() += 1;
    HostTensor<float> t(shape);
    for (int64_t i = 0; i < t.numel(); ++i) t[i] = 0.001f * static_cast<float>(i + layer * 7);
    w.add(layer_tensor_name(layer, name), t);
  }
  for (const char* name : {"input_layernorm.weight", "post_attention_layernorm.weight"}) {
    if (name == skip) continue;
    HostTensor<bf16> t({name == bad_shape ? 33 : 32});
    for (int64_t i = 0; i < t.numel(); ++i) t[i] = bf16::from_float(1.0f + 0.01f * static_cast<float>(i));
    w.add(layer_tensor_name(layer, name), t);
  }
}

TEST(LayerWeights, LoadsUpstreamNames) {
  test::TempDir dir;
  SafetensorsWriter w;
  add_layer(w, 0);
  add_layer(w, 1);
  w.write(dir / "model.safetensors");
  CpuDevice dev;
  const auto file = SafetensorsFile::open(dir / "model.safetensors");
  const DecoderLayerWeights lw = DecoderLayerWeights::load(tiny(), 1, file, dev);
  EXPECT_FLOAT_EQ(lw.ffn.fn.as<float>()[5], 0.001f * (5 + 7));
  EXPECT_EQ(lw.attn.scale.bytes(), 3 * sizeof(float));
  EXPECT_EQ(lw.post_attention_layernorm.as<bf16>()[2], bf16::from_float(1.02f));
}

TEST(LayerWeights, MissingOrMisShapedTensorsAreNamed) {
  test::TempDir dir;
  CpuDevice dev;
  for (const auto& [skip, bad] : std::vector<std::pair<std::string, std::string>>{
           {"hc_ffn_base", ""}, {"input_layernorm.weight", ""}, {"", "hc_attn_fn"}, {"", "post_attention_layernorm.weight"}}) {
    SafetensorsWriter w;
    add_layer(w, 0, skip, bad);
    w.write(dir / "bad.safetensors");
    const auto file = SafetensorsFile::open(dir / "bad.safetensors");
    const std::string name = layer_tensor_name(0, skip.empty() ? bad : skip);
    try {
      DecoderLayerWeights::load(tiny(), 0, file, dev);
      FAIL() << "loaded without " << name;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
      EXPECT_NE(e.message().find(name), std::string::npos) << e.message();
      EXPECT_NE(e.message().find("bad.safetensors"), std::string::npos) << e.message();
    }
  }
}

}  // namespace
}  // namespace hcwarm::model
