#include "sim/train/model_zoo.hpp"

#include <set>
#include <stdexcept>
#include <string>

#include <gtest/gtest.h>

namespace ddlsim {
namespace {

const LayerSpec& find_layer(const std::vector<LayerSpec>& layers, const std::string& name) {
  for (const LayerSpec& l : layers) {
    if (l.name == name) return l;
  }
  throw std::out_of_range("no layer " + name);
}

// Published parameter counts: torchvision model docs (num_params of the IMAGENET1K_V1 weights), HuggingFace
// bert-large-uncased (BertModel) and gpt2-xl; the formulas for BERT and GPT-2 are in model_zoo.cpp.
TEST(ModelZoo, ExactParameterCounts) {
  EXPECT_EQ(total_params(build_architecture("resnet50")), 25'557'032);
  EXPECT_EQ(total_params(build_architecture("resnet101")), 44'549'160);
  EXPECT_EQ(total_params(build_architecture("resnet152")), 60'192'808);
  EXPECT_EQ(total_params(build_architecture("vgg16")), 138'357'544);
  EXPECT_EQ(total_params(build_architecture("inception_v3")), 27'161'264);  // aux_logits=True (default)
  EXPECT_EQ(total_params(build_architecture("bert_large")), 335'141'888);
  EXPECT_EQ(total_params(build_architecture("gpt2_xl")), 1'557'611'200);
  EXPECT_EQ(total_params(build_architecture("mnist_cnn")), 1'199'882);
}

// Inception v3 without its auxiliary head: 27,161,264 - 3,326,696 = 23,834,568 (torchvision,
// aux_logits=False).
TEST(ModelZoo, InceptionAuxHeadHoldsTheDifference) {
  int64_t aux = 0;
  for (const LayerSpec& l : build_architecture("inception_v3")) {
    if (l.name.starts_with("AuxLogits.")) aux += l.params;
  }
  EXPECT_EQ(aux, 3'326'696);
  EXPECT_EQ(total_params(build_architecture("inception_v3")) - aux, 23'834'568);
}

void expect_gmacs_near(std::string_view name, double reference_gmacs, double relative_band) {
  const double gmacs = total_forward_flops(build_architecture(name)) / 2e9;
  EXPECT_NEAR(gmacs, reference_gmacs, relative_band * reference_gmacs) << name;
}

// Reference multiply-adds per 224x224 image (299x299 for Inception): the "GFLOPS" column of the torchvision
// model docs (ResNet50/101/152_Weights, VGG16_Weights, Inception_V3_Weights; counted as multiply-adds, convs
// and linears): 4.09, 7.80, 11.51, 15.47, 5.71. Band ±2%: those are rounded, and we add Inception's
// auxiliary head (≈ 5.7 M multiply-adds), which torchvision's eval-mode count leaves out.
TEST(ModelZoo, CnnFlopsMatchPublishedMultiplyAdds) {
  expect_gmacs_near("resnet50", 4.09, 0.02);
  expect_gmacs_near("resnet101", 7.80, 0.02);
  expect_gmacs_near("resnet152", 11.51, 0.02);
  expect_gmacs_near("vgg16", 15.47, 0.02);
  expect_gmacs_near("inception_v3", 5.71, 0.02);
}

// Transformer forward FLOPs per sequence, after Narayanan et al. 2021 ("Efficient large-scale language model
// training on GPU clusters using Megatron-LM", SC'21). Their training count without recomputation is
// 72·B·s·l·h²·(1 + s/(6h)) + 6·B·s·h·V with backward = 2x forward, so per sequence, forward only:
//   24·s·l·h²·(1 + s/(6h)) for the transformer layers, plus 2·s·h·V for a logit layer.
// BERT-large (s = 512, l = 24, h = 1024, no logit layer in BertModel): 334.98 GFLOP; the pooler adds 2 MFLOP.
// GPT-2 XL (s = 1024, l = 48, h = 1600, V = 50257): 3342.1 + 164.7 = 3506.7 GFLOP. Band ±1%.
TEST(ModelZoo, TransformerFlopsMatchMegatronFormula) {
  auto layers_term = [](double s, double l, double h) { return 24 * s * l * h * h * (1 + s / (6 * h)); };
  const double bert = layers_term(512, 24, 1024);
  const double gpt2 = layers_term(1024, 48, 1600) + 2.0 * 1024 * 1600 * 50257;
  EXPECT_NEAR(total_forward_flops(build_architecture("bert_large")), bert, 0.01 * bert);
  EXPECT_NEAR(total_forward_flops(build_architecture("gpt2_xl")), gpt2, 0.01 * gpt2);
}

// MNIST convnet, multiply-adds per 28x28 image (output pixels x kernel volume, then dense in x out):
//   26·26·32·9 + 24·24·64·(9·32) + 9216·128 + 128·10 = 194,688 + 10,616,832 + 1,179,648 + 1,280 = 11,992,448
TEST(ModelZoo, MnistFlopsExact) {
  EXPECT_DOUBLE_EQ(total_forward_flops(build_architecture("mnist_cnn")), 2.0 * 11'992'448);
}

// Spot checks that conv FLOPs follow the real output sizes (torchvision ResNet-50).
TEST(ModelZoo, ResNetLayersUseOutputSpatialSize) {
  const auto layers = build_architecture("resnet50");
  // conv1: 7x7, 3 -> 64, stride 2: 112x112 outputs; weights 7·7·3·64 = 9408, BN 2·64.
  EXPECT_EQ(find_layer(layers, "conv1").params, 9408 + 128);
  EXPECT_DOUBLE_EQ(find_layer(layers, "conv1").forward_flops, 2.0 * 112 * 112 * 64 * 147);
  // layer3.0.conv2 carries the stage's stride: 3x3, 256 -> 256, 28x28 -> 14x14.
  EXPECT_DOUBLE_EQ(find_layer(layers, "layer3.0.conv2").forward_flops, 2.0 * 14 * 14 * 256 * 256 * 9);
  EXPECT_EQ(find_layer(layers, "layer3.0.downsample").params, 512 * 1024 + 2 * 1024);
  EXPECT_EQ(layers.front().name, "conv1");
  EXPECT_EQ(layers.back().name, "fc");
  EXPECT_EQ(layers.back().params, 2048 * 1000 + 1000);
}

// The tied LM head has no parameters of its own but does the vocabulary projection, last in forward.
TEST(ModelZoo, Gpt2TiedHead) {
  const auto layers = build_architecture("gpt2_xl");
  EXPECT_EQ(layers.front().name, "wte");
  EXPECT_EQ(layers.front().params, 50257 * 1600);
  EXPECT_EQ(layers.back().name, "lm_head");
  EXPECT_EQ(layers.back().params, 0);
  EXPECT_DOUBLE_EQ(layers.back().forward_flops, 2.0 * 1024 * 1600 * 50257);
}

TEST(ModelZoo, EveryLayerIsWellFormed) {
  for (const std::string& name : architecture_names()) {
    const auto layers = build_architecture(name);
    EXPECT_FALSE(layers.empty()) << name;
    std::set<std::string> seen;
    for (const LayerSpec& l : layers) {
      EXPECT_GE(l.params, 0) << name << " " << l.name;
      EXPECT_GE(l.forward_flops, 0) << name << " " << l.name;
      EXPECT_TRUE(seen.insert(l.name).second) << name << ": duplicate layer " << l.name;
    }
  }
}

// Gradients must become ready at a realistic granularity (ResNet-50 has 161 parameter tensors).
TEST(ModelZoo, Granularity) {
  EXPECT_EQ(build_architecture("resnet50").size(), 54u);  // 53 convs with their BN, plus fc
  EXPECT_EQ(build_architecture("resnet152").size(), 156u);
  EXPECT_EQ(build_architecture("bert_large").size(), 50u);  // embeddings, 24 x (attention, mlp), pooler
  EXPECT_EQ(build_architecture("gpt2_xl").size(), 100u);    // wte, wpe, 48 x (attn, mlp), ln_f, lm_head
}

TEST(ModelZoo, NamesListEveryBuilder) {
  const auto names = architecture_names();
  const std::set<std::string> expected = {"resnet50",     "resnet101",  "resnet152", "vgg16",
                                          "inception_v3", "bert_large", "gpt2_xl",   "mnist_cnn"};
  EXPECT_EQ(std::set<std::string>(names.begin(), names.end()), expected);
  EXPECT_EQ(names.size(), expected.size());
}

TEST(ModelZoo, UnknownNameThrows) {
  EXPECT_THROW(build_architecture("resnet51"), std::invalid_argument);
  try {
    build_architecture("alexnet");
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "unknown architecture \"alexnet\"");
  }
}

TEST(ModelZoo, TotalsOfEmptyTableAreZero) {
  EXPECT_EQ(total_params({}), 0);
  EXPECT_EQ(total_forward_flops({}), 0.0);
}

}  // namespace
}  // namespace ddlsim
