#include "sim/train/model_zoo.hpp"

#include <array>
#include <cassert>
#include <initializer_list>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>

namespace ddlsim {
namespace {

// FLOP counting: 2 per multiply-add of convolutions, linear layers and attention matmuls. Norms, activations,
// pooling, softmax and residual adds are left out, as in the published multiply-add counts we check against.

using Layers = std::vector<LayerSpec>;

// Activation shape of one sample.
struct Shape {
  int64_t channels = 0;
  int64_t height = 0;
  int64_t width = 0;
};

struct Conv {
  int64_t out_channels = 0;
  int64_t kernel_h = 1;
  int64_t kernel_w = 1;
  int64_t stride = 1;
  int64_t pad_h = 0;
  int64_t pad_w = 0;
};

Conv conv(int64_t out_channels, int64_t kernel, int64_t stride = 1, int64_t pad = 0) {
  return {out_channels, kernel, kernel, stride, pad, pad};
}

// Inception's factorised 1xn / nx1 convolutions are padded to keep the spatial size.
Conv conv_same(int64_t out_channels, int64_t kernel_h, int64_t kernel_w) {
  return {out_channels, kernel_h, kernel_w, 1, kernel_h / 2, kernel_w / 2};
}

// What shares the conv's entry: its own bias, or the BatchNorm that follows it (gamma and beta; a conv
// followed by BN has no bias in torchvision).
enum class Affine { kBias, kBatchNorm };

// Floor division, as PyTorch (ceil_mode=False) and Keras "valid" padding.
int64_t out_size(int64_t in, int64_t kernel, int64_t stride, int64_t pad) {
  return (in + 2 * pad - kernel) / stride + 1;
}

double flops_of_macs(int64_t macs) {
  return 2.0 * static_cast<double>(macs);
}

Shape add_conv(Layers& layers, std::string name, Shape in, const Conv& c, Affine affine) {
  const Shape out{c.out_channels, out_size(in.height, c.kernel_h, c.stride, c.pad_h),
                  out_size(in.width, c.kernel_w, c.stride, c.pad_w)};
  const int64_t weights = c.kernel_h * c.kernel_w * in.channels * c.out_channels;
  const int64_t affine_params = affine == Affine::kBias ? c.out_channels : 2 * c.out_channels;
  layers.push_back(
      {std::move(name), weights + affine_params, flops_of_macs(weights * out.height * out.width)});
  return out;
}

void add_linear(Layers& layers, std::string name, int64_t in, int64_t out) {
  layers.push_back({std::move(name), in * out + out, flops_of_macs(in * out)});
}

Shape pool(Shape in, int64_t kernel, int64_t stride, int64_t pad = 0) {
  return {in.channels, out_size(in.height, kernel, stride, pad), out_size(in.width, kernel, stride, pad)};
}

int64_t flat_size(Shape s) {
  return s.channels * s.height * s.width;
}

// --- ResNet --------------------------------------------------------------------------------------------

// torchvision ResNet with Bottleneck blocks at 224x224, 1000 classes (He et al. 2016; torchvision puts the
// stride on the 3x3 conv, "v1.5"). Each entry is a conv with its BatchNorm. The projection shortcut of a
// stage's first block ("downsample") runs after conv3 in Bottleneck.forward, so it comes after conv3 here.
Layers resnet(const std::array<int, 4>& blocks_per_stage) {
  constexpr int64_t kExpansion = 4;
  Layers layers;
  Shape x{3, 224, 224};
  x = add_conv(layers, "conv1", x, conv(64, 7, 2, 3), Affine::kBatchNorm);
  x = pool(x, 3, 2, 1);
  for (int stage = 0; stage < 4; ++stage) {
    const int64_t width = int64_t{64} << stage;
    for (int block = 0; block < blocks_per_stage[stage]; ++block) {
      const std::string prefix = fmt::format("layer{}.{}.", stage + 1, block);
      const int64_t stride = (stage > 0 && block == 0) ? 2 : 1;
      Shape y = add_conv(layers, prefix + "conv1", x, conv(width, 1), Affine::kBatchNorm);
      y = add_conv(layers, prefix + "conv2", y, conv(width, 3, stride, 1), Affine::kBatchNorm);
      y = add_conv(layers, prefix + "conv3", y, conv(width * kExpansion, 1), Affine::kBatchNorm);
      // The first block of every stage changes the channel count (layer1: 64 -> 256), so it always projects.
      if (block == 0) {
        add_conv(layers, prefix + "downsample", x, conv(width * kExpansion, 1, stride), Affine::kBatchNorm);
      }
      x = y;
    }
  }
  add_linear(layers, "fc", x.channels, 1000);
  return layers;
}

Layers resnet50() {
  return resnet({3, 4, 6, 3});
}
Layers resnet101() {
  return resnet({3, 4, 23, 3});
}
Layers resnet152() {
  return resnet({3, 8, 36, 3});
}

// --- VGG -----------------------------------------------------------------------------------------------

// torchvision VGG-16 (Simonyan & Zisserman 2015, configuration "D", no BatchNorm) at 224x224: five stages of
// 3x3 convs, each closed by a 2x2 max-pool. Names are the module indices of torchvision's `features` and
// `classifier` Sequentials, where every conv, ReLU and pool takes one index.
Layers vgg16() {
  struct Stage {
    int64_t channels;
    int convs;
  };
  constexpr std::array<Stage, 5> kStages = {{{64, 2}, {128, 2}, {256, 3}, {512, 3}, {512, 3}}};
  Layers layers;
  Shape x{3, 224, 224};
  int index = 0;
  for (const Stage& stage : kStages) {
    for (int i = 0; i < stage.convs; ++i) {
      x = add_conv(layers, fmt::format("features.{}", index), x, conv(stage.channels, 3, 1, 1),
                   Affine::kBias);
      index += 2;  // conv, ReLU
    }
    x = pool(x, 2, 2);
    index += 1;
  }
  // AdaptiveAvgPool2d((7, 7)) is the identity at 224x224 input.
  add_linear(layers, "classifier.0", flat_size(x), 4096);
  add_linear(layers, "classifier.3", 4096, 4096);
  add_linear(layers, "classifier.6", 4096, 1000);
  return layers;
}

// --- Inception v3 --------------------------------------------------------------------------------------

// torchvision BasicConv2d: conv without bias, then BatchNorm.
Shape basic_conv(Layers& layers, std::string_view prefix, std::string_view name, Shape in, const Conv& c) {
  return add_conv(layers, fmt::format("{}{}", prefix, name), in, c, Affine::kBatchNorm);
}

Shape concat(std::initializer_list<Shape> branches) {
  Shape out = *branches.begin();
  out.channels = 0;
  for (const Shape& b : branches) {
    assert(b.height == out.height && b.width == out.width);
    out.channels += b.channels;
  }
  return out;
}

// The Inception blocks list their convs in the order of torchvision's _forward.
Shape inception_a(Layers& l, std::string_view p, Shape x, int64_t pool_features) {
  const Shape b1 = basic_conv(l, p, "branch1x1", x, conv(64, 1));
  Shape b5 = basic_conv(l, p, "branch5x5_1", x, conv(48, 1));
  b5 = basic_conv(l, p, "branch5x5_2", b5, conv(64, 5, 1, 2));
  Shape b3 = basic_conv(l, p, "branch3x3dbl_1", x, conv(64, 1));
  b3 = basic_conv(l, p, "branch3x3dbl_2", b3, conv(96, 3, 1, 1));
  b3 = basic_conv(l, p, "branch3x3dbl_3", b3, conv(96, 3, 1, 1));
  const Shape bp = basic_conv(l, p, "branch_pool", pool(x, 3, 1, 1), conv(pool_features, 1));
  return concat({b1, b5, b3, bp});
}

Shape inception_b(Layers& l, std::string_view p, Shape x) {
  const Shape b3 = basic_conv(l, p, "branch3x3", x, conv(384, 3, 2));
  Shape bd = basic_conv(l, p, "branch3x3dbl_1", x, conv(64, 1));
  bd = basic_conv(l, p, "branch3x3dbl_2", bd, conv(96, 3, 1, 1));
  bd = basic_conv(l, p, "branch3x3dbl_3", bd, conv(96, 3, 2));
  return concat({b3, bd, pool(x, 3, 2)});
}

Shape inception_c(Layers& l, std::string_view p, Shape x, int64_t channels_7x7) {
  const int64_t c7 = channels_7x7;
  const Shape b1 = basic_conv(l, p, "branch1x1", x, conv(192, 1));
  Shape b7 = basic_conv(l, p, "branch7x7_1", x, conv(c7, 1));
  b7 = basic_conv(l, p, "branch7x7_2", b7, conv_same(c7, 1, 7));
  b7 = basic_conv(l, p, "branch7x7_3", b7, conv_same(192, 7, 1));
  Shape bd = basic_conv(l, p, "branch7x7dbl_1", x, conv(c7, 1));
  bd = basic_conv(l, p, "branch7x7dbl_2", bd, conv_same(c7, 7, 1));
  bd = basic_conv(l, p, "branch7x7dbl_3", bd, conv_same(c7, 1, 7));
  bd = basic_conv(l, p, "branch7x7dbl_4", bd, conv_same(c7, 7, 1));
  bd = basic_conv(l, p, "branch7x7dbl_5", bd, conv_same(192, 1, 7));
  const Shape bp = basic_conv(l, p, "branch_pool", pool(x, 3, 1, 1), conv(192, 1));
  return concat({b1, b7, bd, bp});
}

Shape inception_d(Layers& l, std::string_view p, Shape x) {
  Shape b3 = basic_conv(l, p, "branch3x3_1", x, conv(192, 1));
  b3 = basic_conv(l, p, "branch3x3_2", b3, conv(320, 3, 2));
  Shape b7 = basic_conv(l, p, "branch7x7x3_1", x, conv(192, 1));
  b7 = basic_conv(l, p, "branch7x7x3_2", b7, conv_same(192, 1, 7));
  b7 = basic_conv(l, p, "branch7x7x3_3", b7, conv_same(192, 7, 1));
  b7 = basic_conv(l, p, "branch7x7x3_4", b7, conv(192, 3, 2));
  return concat({b3, b7, pool(x, 3, 2)});
}

Shape inception_e(Layers& l, std::string_view p, Shape x) {
  const Shape b1 = basic_conv(l, p, "branch1x1", x, conv(320, 1));
  const Shape b3 = basic_conv(l, p, "branch3x3_1", x, conv(384, 1));
  const Shape b3a = basic_conv(l, p, "branch3x3_2a", b3, conv_same(384, 1, 3));
  const Shape b3b = basic_conv(l, p, "branch3x3_2b", b3, conv_same(384, 3, 1));
  Shape bd = basic_conv(l, p, "branch3x3dbl_1", x, conv(448, 1));
  bd = basic_conv(l, p, "branch3x3dbl_2", bd, conv(384, 3, 1, 1));
  const Shape bda = basic_conv(l, p, "branch3x3dbl_3a", bd, conv_same(384, 1, 3));
  const Shape bdb = basic_conv(l, p, "branch3x3dbl_3b", bd, conv_same(384, 3, 1));
  const Shape bp = basic_conv(l, p, "branch_pool", pool(x, 3, 1, 1), conv(192, 1));
  return concat({b1, b3a, b3b, bda, bdb, bp});
}

// Auxiliary classifier on Mixed_6e's output. torchvision runs it in training mode only; we model training.
void inception_aux(Layers& l, Shape x) {
  Shape y = pool(x, 5, 3);  // avg_pool2d(kernel 5, stride 3): 17x17 -> 5x5
  y = basic_conv(l, "AuxLogits.", "conv0", y, conv(128, 1));
  y = basic_conv(l, "AuxLogits.", "conv1", y, conv(768, 5));
  add_linear(l, "AuxLogits.fc", y.channels, 1000);
}

// torchvision inception_v3 (Szegedy et al. 2016) at 299x299 with its default aux_logits=True: 27,161,264
// parameters, of which the AuxLogits head holds 3,326,696 (23,834,568 without it).
Layers inception_v3() {
  Layers l;
  Shape x{3, 299, 299};
  x = basic_conv(l, "", "Conv2d_1a_3x3", x, conv(32, 3, 2));
  x = basic_conv(l, "", "Conv2d_2a_3x3", x, conv(32, 3));
  x = basic_conv(l, "", "Conv2d_2b_3x3", x, conv(64, 3, 1, 1));
  x = pool(x, 3, 2);
  x = basic_conv(l, "", "Conv2d_3b_1x1", x, conv(80, 1));
  x = basic_conv(l, "", "Conv2d_4a_3x3", x, conv(192, 3));
  x = pool(x, 3, 2);
  x = inception_a(l, "Mixed_5b.", x, 32);
  for (std::string_view name : {"Mixed_5c.", "Mixed_5d."}) x = inception_a(l, name, x, 64);
  x = inception_b(l, "Mixed_6a.", x);
  const std::array<std::pair<std::string_view, int64_t>, 4> kMixed6 = {
      {{"Mixed_6b.", 128}, {"Mixed_6c.", 160}, {"Mixed_6d.", 160}, {"Mixed_6e.", 192}}};
  for (const auto& [name, channels_7x7] : kMixed6) x = inception_c(l, name, x, channels_7x7);
  inception_aux(l, x);
  x = inception_d(l, "Mixed_7a.", x);
  for (std::string_view name : {"Mixed_7b.", "Mixed_7c."}) x = inception_e(l, name, x);
  add_linear(l, "fc", x.channels, 1000);  // after global average pooling and dropout
  return l;
}

// --- Transformers --------------------------------------------------------------------------------------

// Per sequence of s tokens, hidden size d: the Q, K, V and output projections (4·s·d² multiply-adds) and the
// score and context matmuls (2·s²·d). Causal masking is not subtracted: dense kernels compute the full
// matrix.
double attention_flops(int64_t s, int64_t d) {
  return flops_of_macs(4 * s * d * d + 2 * s * s * d);
}

double mlp_flops(int64_t s, int64_t d, int64_t ffn) {
  return flops_of_macs(2 * s * d * ffn);
}

// BERT-large uncased (Devlin et al. 2019), HuggingFace BertModel with pooler, no pre-training heads.
// L = 24, d = 1024, ffn = 4d, V = 30522, P = 512 positions, T = 2 token types:
//   embeddings  (V + P + T)·d + 2d (LayerNorm)                              =  31,782,912
//   per layer   attention 4(d² + d) + 2d (Q, K, V, O, LayerNorm)            =   4,200,448
//               mlp 2·d·ffn + ffn + d + 2d (intermediate, output, LayerNorm) =   8,395,776
//   pooler      d² + d                                                       =   1,049,600
//   total       31,782,912 + 24 · 12,596,224 + 1,049,600                    = 335,141,888
// BERT is post-LN: each LayerNorm closes its sub-block and shares that sub-block's entry.
Layers bert_large() {
  constexpr int64_t kLayers = 24, d = 1024, ffn = 4 * d, kVocab = 30522, kPositions = 512, kTypes = 2;
  constexpr int64_t s = 512;  // FLOPs are per sequence at the maximum length
  Layers l;
  l.push_back({"embeddings", (kVocab + kPositions + kTypes) * d + 2 * d, 0.0});  // lookups: no multiply-adds
  for (int64_t i = 0; i < kLayers; ++i) {
    l.push_back(
        {fmt::format("encoder.layer.{}.attention", i), 4 * (d * d + d) + 2 * d, attention_flops(s, d)});
    l.push_back(
        {fmt::format("encoder.layer.{}.mlp", i), 2 * d * ffn + ffn + d + 2 * d, mlp_flops(s, d, ffn)});
  }
  l.push_back({"pooler", d * d + d, flops_of_macs(d * d)});  // dense on the [CLS] token only
  return l;
}

// GPT-2 XL (Radford et al. 2019), HuggingFace GPT2LMHeadModel: L = 48, d = 1600, ffn = 4d, V = 50257,
// P = 1024 positions, pre-LN, LM head tied to the token embedding:
//   wte V·d = 80,411,200            wpe P·d = 1,638,400
//   per layer   attn ln_1 2d + c_attn 3d² + 3d + c_proj d² + d    = 10,249,600
//               mlp  ln_2 2d + c_fc 4d² + 4d + c_proj 4d² + d     = 20,491,200
//   ln_f 2d = 3,200
//   total 80,411,200 + 1,638,400 + 48 · 30,740,800 + 3,200 = 1,557,611,200
// The LM head reuses wte, so it has no parameters of its own; since wte comes first, its gradient is complete
// only at the end of backward, as in PyTorch where both uses accumulate into one tensor.
Layers gpt2_xl() {
  constexpr int64_t kLayers = 48, d = 1600, ffn = 4 * d, kVocab = 50257, kPositions = 1024;
  constexpr int64_t s = 1024;  // FLOPs are per sequence at the full context
  Layers l;
  l.push_back({"wte", kVocab * d, 0.0});
  l.push_back({"wpe", kPositions * d, 0.0});
  for (int64_t i = 0; i < kLayers; ++i) {
    l.push_back({fmt::format("h.{}.attn", i), 2 * d + 3 * d * d + 3 * d + d * d + d, attention_flops(s, d)});
    l.push_back({fmt::format("h.{}.mlp", i), 2 * d + d * ffn + ffn + ffn * d + d, mlp_flops(s, d, ffn)});
  }
  l.push_back({"ln_f", 2 * d, 0.0});
  l.push_back({"lm_head", 0, flops_of_macs(s * d * kVocab)});
  return l;
}

// --- MNIST ---------------------------------------------------------------------------------------------

// The Keras convnet the Horovod guide trains (shared/seeds/horovod-guide.txt, "Application: MNIST dataset
// training", built by get_model(), whose layers the guide does not list). Layers from Horovod's
// examples/tensorflow2/tensorflow2_keras_mnist.py (the classic keras/examples/mnist_cnn.py; today's keras.io
// mnist_convnet is a smaller, different model):
// Conv2D(32, 3x3, relu) -> Conv2D(64, 3x3, relu) -> MaxPool 2x2 -> Dropout -> Flatten -> Dense(128, relu)
// -> Dropout -> Dense(10, softmax) on 28x28x1, 1,199,882 parameters. Names are Keras' defaults.
Layers mnist_cnn() {
  Layers l;
  Shape x{1, 28, 28};
  x = add_conv(l, "conv2d", x, conv(32, 3), Affine::kBias);
  x = add_conv(l, "conv2d_1", x, conv(64, 3), Affine::kBias);
  x = pool(x, 2, 2);
  add_linear(l, "dense", flat_size(x), 128);
  add_linear(l, "dense_1", 128, 10);
  return l;
}

struct Builder {
  std::string_view name;
  Layers (*build)();
};

constexpr std::array<Builder, 8> kBuilders = {{
    {"resnet50", resnet50},
    {"resnet101", resnet101},
    {"resnet152", resnet152},
    {"vgg16", vgg16},
    {"inception_v3", inception_v3},
    {"bert_large", bert_large},
    {"gpt2_xl", gpt2_xl},
    {"mnist_cnn", mnist_cnn},
}};

}  // namespace

std::vector<LayerSpec> build_architecture(std::string_view name) {
  for (const Builder& b : kBuilders) {
    if (b.name == name) return b.build();
  }
  throw std::invalid_argument(fmt::format("unknown architecture \"{}\"", name));
}

std::vector<std::string> architecture_names() {
  std::vector<std::string> names;
  for (const Builder& b : kBuilders) names.emplace_back(b.name);
  return names;
}

int64_t total_params(const std::vector<LayerSpec>& layers) {
  int64_t total = 0;
  for (const LayerSpec& l : layers) total += l.params;
  return total;
}

double total_forward_flops(const std::vector<LayerSpec>& layers) {
  double total = 0;
  for (const LayerSpec& l : layers) total += l.forward_flops;
  return total;
}

}  // namespace ddlsim
