#pragma once
// Architecture builders: the layer tables of well-known networks, generated from their definitions so that
// parameter counts are exact and conv FLOPs follow the real output sizes. The strategies only need, per
// layer, how many gradient values become ready (params) and how long the layer computes (FLOPs).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ddlsim {

// One parameterised layer, or a small group of weight tensors whose gradients become ready together
// (a conv with its BatchNorm, a transformer attention block with its LayerNorm). Tables are in forward
// execution order; backward produces gradients in the reverse order.
struct LayerSpec {
  std::string name;    // module path of the reference implementation, e.g. "layer3.2.conv1"
  int64_t params = 0;  // trainable parameters (weights, biases, norm gamma/beta), exact; 0 for tied weights
  double forward_flops =
      0;  // per sample, forward; 2 FLOP per multiply-add of convs, linears, attention matmuls
};

// Throws std::invalid_argument("unknown architecture \"x\"") for names not in architecture_names().
std::vector<LayerSpec> build_architecture(std::string_view name);
std::vector<std::string> architecture_names();

int64_t total_params(const std::vector<LayerSpec>& layers);
double total_forward_flops(const std::vector<LayerSpec>& layers);

}  // namespace ddlsim
