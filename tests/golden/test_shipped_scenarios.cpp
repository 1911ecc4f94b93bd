// Every shipped scenario runs from the command line (as the README says) and gives the CSV and JSON kept in
// tests/golden/scenarios/; describe prints what a user needs to check a cluster.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "sim/config/scenario.hpp"
#include "sim/train/training.hpp"
#include "tests/support/cli.hpp"

namespace {

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

}  // namespace

// The node counts (and steps) a scenario runs at here: as shipped, except where the shipped list takes
// seconds (the Aach et al. scenarios and the Horovod guide's 128 GPUs run in full in the validation tests;
// the Alps jobs' colocated PS job runs smaller).
std::string small_counts(const std::string& dir, const std::string& stem) {
  if (dir == "scenarios/aach2023") return " --set 'cluster.nodes=[1, 2]'";
  if (stem == "juwels-ps-vs-allreduce") return " --set 'cluster.nodes=[1, 4]'";
  if (stem == "horovod-guide-128gpu") return " --set 'cluster.nodes=[1, 2, 8]'";
  // (its 32 nodes run in tests/validation/test_v100_clusters.cpp)
  if (stem == "byteps-bert-v100") return " --set 'cluster.nodes=[1, 4]'";
  if (stem == "alps-ddp-beside-ps" || stem == "juwels-ddp-beside-ps")
    return " --set jobs.0.workload.steps=4 --set jobs.1.nodes=8 --set jobs.1.strategy.servers=8";
  return "";
}

TEST(ShippedScenarios, CsvAndJsonEqualTheGoldenFiles) {
  // Every shipped scenario's CSV and JSON output equals, byte for byte, the file kept in
  // tests/golden/scenarios/ (run from the source tree, as ctest does). Golden files change only on purpose:
  // DDLSIM_UPDATE_GOLDEN=1 rewrites them, and the diff shows what moved.
  namespace fs = std::filesystem;
  const bool update = std::getenv("DDLSIM_UPDATE_GOLDEN") != nullptr;
  struct Run {
    std::string stem, file, format;
  };
  std::vector<Run> runs;
  std::vector<std::string> args;
  for (const char* dir : {"scenarios", "scenarios/aach2023", "scenarios/jobs"}) {
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(dir))
      if (e.path().extension() == ".yaml") files.push_back(e.path());
    std::sort(files.begin(), files.end());
    for (const fs::path& file : files)
      for (const char* format : {"csv", "json"}) {
        runs.push_back({file.stem().string(), file.string(), format});
        args.push_back("run '" + file.string() + "' --format " + format +
                       small_counts(dir, runs.back().stem));
      }
  }
  const std::vector<ddlsim_test::CliOutcome> outcomes = ddlsim_test::run_ddlsim_each(args);
  for (size_t i = 0; i < runs.size(); ++i) {
    const Run& r = runs[i];
    SCOPED_TRACE(r.file + " " + r.format);
    const auto& [status, out] = outcomes[i];
    EXPECT_EQ(status, 0) << out;
    EXPECT_GE(count(out, "\n"), 2u) << out;  // header + at least one result
    fs::path golden = fs::path("tests/golden/scenarios") / (r.stem + "." + r.format);
    if (update) {
      std::ofstream(golden, std::ios::binary) << out;
    } else {
      std::ifstream in(golden, std::ios::binary);
      ASSERT_TRUE(in) << "missing " << golden << " (DDLSIM_UPDATE_GOLDEN=1 writes it)";
      std::stringstream want;
      want << in.rdbuf();
      EXPECT_EQ(out, want.str()) << golden;
    }
  }
  EXPECT_GE(runs.size() / 2, 16u);  // scenarios, each in both formats
}

TEST(ShippedScenarios, DescribePrintsLinksCommModelAndRoutes) {
  // `ddlsim describe` on a scenario that layers a comm key on its topology: JUWELS Booster's links by class,
  // the comm model with the scenario's 20 GB/s intra-node flow bound next to the topology's inter-node alpha
  // (none: the route's latency is all of a message's, juwels-booster.yaml) and the 0.98 of their line rate
  // its fabric links carry, its 600 GB/s GPU reduction, and a route between two GPUs of one node.
  auto [status, out] = ddlsim_test::run_ddlsim(
      "describe '" + std::string(DDLSIM_SOURCE_DIR) + "/scenarios/aach2023/resnet152-dali-cpu.yaml'",
      ddlsim_test::Capture::Both);
  ASSERT_EQ(status, 0) << out;
  for (const char* want :
       {"cluster juwels-booster: 1 node x 4", "nvlink", "comm intra any size", "flow bound 20 GB/s",
        "comm inter any size     alpha 0 s", "fabric links carry 0.98 of their line rate",
        "reduce any size     gpu 600 GB/s", "route 1 hops: n0.gpu0 > n0.gpu1"})
    EXPECT_NE(out.find(want), std::string::npos) << want << "\n" << out;
}

TEST(ShippedScenarios, DescribePrintsEachStrategysRunEstimate) {
  // The estimate a run is checked against, per strategy at the described node count: the default scenario's
  // ddp and horovod at 256 nodes over its 13 steps, and the same numbers MemoryModel gives in code.
  const std::string file = std::string(DDLSIM_SOURCE_DIR) + "/scenarios/aach2023/resnet50-dali-cpu.yaml";
  auto [status, out] =
      ddlsim_test::run_ddlsim("describe '" + file + "' --nodes 256", ddlsim_test::Capture::Both);
  ASSERT_EQ(status, 0) << out;
  using namespace ddlsim;
  Scenario sc = load_scenario(file, {});
  for (const Strategy& st : sc.strategies) {
    MemoryEstimate e = MemoryModel(sc, st).at(256);
    std::string want = fmt::format(
        "run of {} at 256 nodes: about {:.3g} tasks over 13 steps, up to {:.3g} flows "
        "at once, {:.3g} GB",
        st.label, e.tasks, e.flows, e.bytes / 1e9);
    EXPECT_NE(out.find(want), std::string::npos) << want << "\n" << out;
  }
}

// A parameter-server strategy is described in one line: the Horovod guide's TF-PS at 32 nodes has one server
// per node (servers: per-node), greedy placement of whole variables, SyncReplicasOptimizer's barrier, the
// towers summed in host memory and TensorFlow 1.3's gRPC.
TEST(ShippedScenarios, DescribeSaysWhatEachParameterServerStrategyDoes) {
  const std::string file = std::string(DDLSIM_SOURCE_DIR) + "/scenarios/horovod-guide-128gpu.yaml";
  auto [status, out] =
      ddlsim_test::run_ddlsim("describe '" + file + "' --nodes 32", ddlsim_test::Capture::Both);
  ASSERT_EQ(status, 0) << out;
  EXPECT_NE(
      out.find("tensorflow-ps: 32 servers colocated with workers, sharding greedy by variable, sync with a "
               "global barrier, local aggregation in host memory (cpu), transport tf13-grpc"),
      std::string::npos)
      << out;
}

TEST(ShippedScenarios, DescribePrintsNcclsChoicePerSize) {
  // JUWELS Booster runs NCCL's protocols: describe prints, per size, the tuner's protocol for a ring over all
  // GPUs and, across nodes, the algorithm and protocol a hierarchical allreduce with inter_node auto runs:
  // at 64 nodes NCCL's model takes the double tree with LL for 8 B.
  auto [status, out] = ddlsim_test::run_ddlsim(
      "describe '" + std::string(DDLSIM_SOURCE_DIR) + "/topologies/juwels-booster.yaml' --nodes 64",
      ddlsim_test::Capture::Both);
  ASSERT_EQ(status, 0) << out;
  EXPECT_NE(out.find("NCCL protocols (ring allreduce over 256 GPUs"), std::string::npos) << out;
  EXPECT_NE(out.find("hierarchical: double-tree LL\n"), std::string::npos) << out;
}

TEST(ShippedScenarios, DescribePrintsWhereNcclRunsNvls) {
  // One DGX H100, whose NVSwitches reduce: NCCL's tuner prefers the ring with LL while its latency (15 us)
  // beats NVLS's 25 us, and NVLS once NVLS's bandwidth repays it (2 MiB and up in describe's sizes).
  auto [status, out] = ddlsim_test::run_ddlsim(
      "describe '" + std::string(DDLSIM_SOURCE_DIR) + "/topologies/dgx-h100-ndr-fattree.yaml' --nodes 1",
      ddlsim_test::Capture::Both);
  ASSERT_EQ(status, 0) << out;
  auto line = [&](const std::string& size) {
    size_t at = out.find(" " + size + "  ");
    return at == std::string::npos ? std::string() : out.substr(at, out.find('\n', at) - at);
  };
  EXPECT_NE(line("256 KiB").find("NCCL runs ring LL"), std::string::npos) << out;
  EXPECT_NE(line("2 MiB").find("NCCL runs nvls NVLS"), std::string::npos) << out;
  EXPECT_NE(line("8 GiB").find("NCCL runs nvls NVLS"), std::string::npos) << out;
  // Two of them: NVLSTree's estimate beside the others, and the tuner's pick across nodes (the tree with LL
  // at 4 KiB, NVLSTree from 16 MiB; ClosedForm.NcclTunerPicksNvlsTreeAcrossNodesForLargeSizes).
  auto two = ddlsim_test::run_ddlsim(
      "describe '" + std::string(DDLSIM_SOURCE_DIR) + "/topologies/dgx-h100-ndr-fattree.yaml' --nodes 2",
      ddlsim_test::Capture::Both);
  ASSERT_EQ(two.status, 0) << two.out;
  out = two.out;
  EXPECT_NE(line("4 KiB").find("NVLS tree "), std::string::npos) << out;
  EXPECT_NE(line("4 KiB").find("hierarchical: double-tree LL"), std::string::npos) << out;
  EXPECT_NE(line("16 MiB").find("hierarchical: nvls-tree NVLS"), std::string::npos) << out;
}

TEST(ShippedScenarios, DescribeSaysWhatEachAllreduceStrategyRuns) {
  // DDP and Horovod without an algorithm run NCCL's choice where the cluster runs NCCL's protocols (Alps in
  // horovod-mnist), the ring elsewhere (the Horovod guide's 25 GbE cluster).
  auto describe = [](const std::string& scenario) {
    auto [status, out] = ddlsim_test::run_ddlsim(
        "describe '" + std::string(DDLSIM_SOURCE_DIR) + "/scenarios/" + scenario + "'",
        ddlsim_test::Capture::Both);
    EXPECT_EQ(status, 0) << out;
    return out;
  };
  std::string alps = describe("horovod-mnist.yaml");
  EXPECT_NE(
      alps.find(
          "  ddp allreduces with hierarchical, between nodes chosen per size (auto) (no algorithm given: "
          "NCCL's choice under its protocols)"),
      std::string::npos)
      << alps;
  EXPECT_NE(alps.find("  routing adaptive: "), std::string::npos) << alps;  // Slingshot routes adaptively
  std::string guide = describe("horovod-guide-128gpu.yaml");
  EXPECT_NE(guide.find("  horovod allreduces with ring\n"), std::string::npos) << guide;
  EXPECT_EQ(guide.find("routing adaptive"), std::string::npos) << guide;
}

TEST(ShippedScenarios, DescribeSaysTheIntraNodeClassIsUnusedWithoutNodes) {
  // A star of one-GPU hosts has no two GPUs in one node, so the intra-node comm class never applies.
  auto [status, out] = ddlsim_test::run_ddlsim(
      "describe '" + std::string(DDLSIM_SOURCE_DIR) + "/scenarios/star-ps-vs-ring.yaml' --nodes 2",
      ddlsim_test::Capture::Both);
  ASSERT_EQ(status, 0) << out;
  EXPECT_NE(out.find("comm intra   (unused"), std::string::npos) << out;
  EXPECT_EQ(out.find("comm intra any size"), std::string::npos) << out;
}

TEST(ShippedScenarios, LinksListsTheParameterServersLinkFirst) {
  // star-ps-vs-ring: p = 16 workers push n = 100 MB to one dedicated server and pull it back, so the server's
  // cable carries p·n = 1.6e9 bytes each way, more than any other link (a worker's carries n each way).
  auto [status, out] = ddlsim_test::run_ddlsim("run scenarios/star-ps-vs-ring.yaml --links 2 --format csv");
  ASSERT_EQ(status, 0) << out;
  EXPECT_NE(out.find("strategy,gpus,rank,link,bytes,busy_share,peak_flows\n"), std::string::npos) << out;
  EXPECT_NE(out.find("ps,16,1,server0 > switch,1600000000,"), std::string::npos) << out;
  EXPECT_NE(out.find("ps,16,2,switch > server0,1600000000,"), std::string::npos) << out;
}
