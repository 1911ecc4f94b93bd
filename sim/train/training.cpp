#include "sim/train/training.hpp"

#include <stdexcept>

namespace ddlsim {
// TEMPORARY: being written now by the lead.
std::vector<TrainingResult> run_training(const Scenario&, const std::vector<int64_t>&, const TrainingOptions&) {
  throw std::runtime_error("training not yet available");
}
Report run_training_report(const Scenario&, const std::vector<int64_t>&, const TrainingOptions&, bool) {
  throw std::runtime_error("training not yet available");
}
}  // namespace ddlsim
