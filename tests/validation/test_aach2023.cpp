// Validation against Aach et al. 2023 (JUWELS Booster, batch 64 per GPU, E_G relative to 4 GPUs), through the
// `ddlsim validate` command on the shipped scenarios and scenarios/measured/aach2023_juwels.csv.
//
// Held here: the stated E_G points within ±0.05 absolute, every Table 2 AllReduce share of the DALI series
// within ±0.08, the orderings the paper reports, and the 4-to-1024-GPU runtime ratio. Points the model does
// not reproduce are listed (and checked to still miss, so a fix shows up) in KnownMisses. ctest runs these
// tests as one entry (tests/CMakeLists.txt): they share the scenario runs.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "sim/io/csv.hpp"
#include "tests/support/cli.hpp"

using namespace ddlsim;

namespace {

struct Point {
  std::string series, strategy, quantity;
  int gpus;
  double measured, simulated, abs_error;
};

// Runs `ddlsim validate` on one scenario and returns its rows (keyed by series/strategy/gpus/quantity).
std::map<std::string, Point> validate(const std::string& scenario) {
  static std::map<std::string, std::map<std::string, Point>> cache;
  auto hit = cache.find(scenario);
  if (hit != cache.end()) return hit->second;
  auto o = ddlsim_test::run_ddlsim("validate '" + std::string(DDLSIM_SOURCE_DIR) + "/scenarios/aach2023/" +
                                   scenario + "' --measured '" + DDLSIM_SOURCE_DIR +
                                   "/scenarios/measured/aach2023_juwels.csv' --format csv");
  EXPECT_EQ(o.status, 0) << scenario << "\n" << o.out;
  const std::string& out = o.out;
  CsvTable t = parse_csv(out, scenario);
  std::map<std::string, Point> points;
  for (const auto& r : t.rows) {
    Point p{r[t.column("series")],
            r[t.column("strategy")],
            r[t.column("quantity")],
            std::stoi(r[t.column("gpus")]),
            std::stod(r[t.column("measured")]),
            std::stod(r[t.column("simulated")]),
            std::stod(r[t.column("abs_error")])};
    points[p.series + "/" + p.strategy + "/" + std::to_string(p.gpus) + "/" + p.quantity] = p;
  }
  return cache[scenario] = points;
}

const Point& at(const std::map<std::string, Point>& pts, const std::string& key) {
  static const Point missing{};
  auto it = pts.find(key);
  if (it == pts.end()) {
    ADD_FAILURE() << "no validation row " << key;
    return missing;
  }
  return it->second;
}

}  // namespace

TEST(Aach2023, ResNet50DaliCpuEfficiency) {
  // E_G = S_G / (G/4). Stated: above 0.85 up to 256 GPUs and 0.76 at 1024 (DDP and Horovod, DALI CPU).
  auto pts = validate("resnet50-dali-cpu.yaml");
  for (const char* fw : {"ddp", "horovod"}) {
    std::string s = std::string("resnet50-") + fw + "-dali-cpu/" + fw;
    EXPECT_NEAR(at(pts, s + "/1024/efficiency").simulated, 0.76, 0.05) << fw;
    EXPECT_LE(at(pts, s + "/256/efficiency_min").abs_error, 0.05) << fw;  // bound E_G >= 0.85
    EXPECT_LE(at(pts, s + "/1024/efficiency_min").abs_error, 0.05) << fw;
  }
}

TEST(Aach2023, ResNet50DaliGpuEfficiencyAndCpuBeatsGpuAt1024) {
  auto gpu = validate("resnet50-dali-gpu.yaml");
  auto cpu = validate("resnet50-dali-cpu.yaml");
  for (const char* fw : {"ddp", "horovod"}) {
    std::string s = std::string("resnet50-") + fw + "-dali-gpu/" + fw + "/1024/efficiency";
    EXPECT_NEAR(at(gpu, s).simulated, 0.68, 0.05) << fw;
    // The paper: CPU pre-processing scales better at 1024 GPUs (0.76 vs 0.68).
    EXPECT_GT(at(cpu, std::string("resnet50-") + fw + "-dali-cpu/" + fw + "/1024/efficiency").simulated,
              at(gpu, s).simulated)
        << fw;
  }
}

TEST(Aach2023, DaliGpuEfficiencyFallsWithTheGpuCount) {
  // Fig. 4b: E_G of both frameworks falls steadily from 4 to 1024 GPUs. DALI's GPU work shares the GPU with
  // training kernels sample by sample; when a whole batch's preprocessing was one task, a step's backward
  // could wait behind it or not depending on timing, and Horovod's E_G rose above 1 at 64-256 GPUs.
  auto o = ddlsim_test::run_ddlsim("run '" + std::string(DDLSIM_SOURCE_DIR) +
                                   "/scenarios/aach2023/resnet50-dali-gpu.yaml' --format csv");
  ASSERT_EQ(o.status, 0) << o.out;
  CsvTable t = parse_csv(o.out, "run");
  std::map<std::string, double> last;
  for (const auto& r : t.rows) {
    const std::string& fw = r[t.column("strategy")];
    double e = std::stod(r[t.column("efficiency")]);
    EXPECT_LE(e, 1.0 + 1e-9) << fw << " " << r[t.column("gpus")];
    if (last.count(fw)) {
      EXPECT_LE(e, last[fw] + 0.005) << fw << " " << r[t.column("gpus")];
    }
    last[fw] = e;
  }
  EXPECT_EQ(last.size(), 2u);
}

TEST(Aach2023, ResNet101DaliCpuAbove080At1024) {
  auto pts = validate("resnet101-dali-cpu.yaml");
  EXPECT_LE(at(pts, "resnet101-ddp-dali-cpu/ddp/1024/efficiency_min").abs_error, 0.05);
}

TEST(Aach2023, NativeLoaderDdp) {
  // DDP with the native loader: E_G 0.44 at 256 GPUs (a ceiling in the text: "below 0.44") and below 0.24 at
  // 512.
  auto pts = validate("resnet50-native.yaml");
  EXPECT_NEAR(at(pts, "resnet50-ddp-native/ddp/256/efficiency_max").simulated, 0.44, 0.05);
  EXPECT_LE(at(pts, "resnet50-ddp-native/ddp/512/efficiency_max").abs_error, 0.05);
  for (const char* fw : {"horovod", "deepspeed"})
    EXPECT_LE(at(pts, std::string("resnet50-") + fw + "-native/" + fw + "/512/efficiency_max").abs_error,
              0.05)
        << fw;
  // Table 2(a), DDP native: once the shared file system is the bottleneck, batches arrive unevenly (loader
  // filesystem_cv) and the ranks that have their data wait inside the allreduce for the slowest one: 0.77 at
  // 256 and 0.83 at 512 GPUs, held within ±0.08.
  for (int g : {256, 512})
    EXPECT_LE(at(pts, "resnet50-ddp-native/ddp/" + std::to_string(g) + "/share_allreduce").abs_error, 0.08)
        << g;
}

TEST(Aach2023, DaliScalesBetterThanNative) {
  // Fig. 4 vs Fig. 5: at 256 GPUs DDP keeps E_G > 0.85 with DALI and falls to ~0.44 with the native loader.
  auto dali = validate("resnet50-dali-cpu.yaml");
  auto native = validate("resnet50-native.yaml");
  EXPECT_GT(at(dali, "resnet50-ddp-dali-cpu/ddp/256/efficiency_min").simulated,
            at(native, "resnet50-ddp-native/ddp/256/efficiency_max").simulated + 0.3);
}

TEST(Aach2023, LargerModelScalesBetter) {
  // Fig. 6: ResNet-152 reaches the highest E_G at 1024 GPUs, ResNet-50 the lowest.
  auto r50 = validate("resnet50-dali-cpu.yaml");
  auto r101 = validate("resnet101-dali-cpu.yaml");
  auto r152 = validate("resnet152-dali-cpu.yaml");
  double e50 = at(r50, "resnet50-ddp-dali-cpu/ddp/1024/efficiency").simulated;
  double e101 = at(r101, "resnet101-ddp-dali-cpu/ddp/1024/efficiency_min").simulated;
  double e152 = at(r152, "resnet152-ddp-dali-cpu/ddp/1024/efficiency").simulated;
  EXPECT_LT(e50, e101);
  EXPECT_LE(e101, e152 + 0.01);
}

TEST(Aach2023, Table2AllreduceShare) {
  // Table 2: share of run time in which NCCL AllReduce kernels run (overlapped or not). The simulator's
  // quantity is the same, averaged over workers: from each bucket's launch (waiting for late ranks included)
  // to its end. Every point but one held within ±0.08 (largest misses: ResNet-50 0.050 at 512 GPUs,
  // ResNet-101 0.073 at 4, ResNet-152 0.059 at 1024); ResNet-101 at 1024 GPUs is in KnownMisses. Between
  // nodes NCCL's choice of ring or tree (inter_node: auto) makes the latency grow as the tree's depth at
  // scale, which gives the table's steady rise up to 1024 GPUs.
  auto check = [](const std::string& model, std::initializer_list<int> gpus) {
    auto pts = validate(model + "-dali-cpu.yaml");
    for (int g : gpus)
      EXPECT_LE(at(pts, model + "-ddp-dali/ddp/" + std::to_string(g) + "/share_allreduce").abs_error, 0.08)
          << model << " " << g;
    // The share grows with the GPU count (4 -> 1024), as in the table.
    EXPECT_LT(at(pts, model + "-ddp-dali/ddp/4/share_allreduce").simulated,
              at(pts, model + "-ddp-dali/ddp/1024/share_allreduce").simulated)
        << model;
  };
  check("resnet50", {4, 8, 16, 32, 64, 128, 256, 512, 1024});
  check("resnet101", {4, 8, 16, 32, 64, 128, 256, 512});
  check("resnet152", {4, 8, 16, 32, 64, 128, 256, 512, 1024});
}

TEST(Aach2023, ResNet152EfficiencyAndRuntime) {
  // Fig. 6: E_G = 0.81 at 1024 GPUs; text: ≈17 h on 4 GPUs to ≈300 s on 1024, T4 / T1024 = 61200 / 300 = 204.
  auto pts = validate("resnet152-dali-cpu.yaml");
  EXPECT_NEAR(at(pts, "resnet152-ddp-dali-cpu/ddp/1024/efficiency").simulated, 0.81, 0.05);
  double t4 = at(pts, "resnet152-ddp-dali-cpu/ddp/4/time_to_train_s").simulated;
  double t1024 = at(pts, "resnet152-ddp-dali-cpu/ddp/1024/time_to_train_s").simulated;
  EXPECT_NEAR(t4 / t1024, 204.0, 204.0 * 0.15);
  EXPECT_NEAR(t4, 61200, 61200 * 0.15);
}

TEST(Aach2023, RuntimeRatio4To1024ResNet50) {
  // Abstract: "more than 12 h on 4 GPUs to less than 200 s on 1024 GPUs" -> T4 / T1024 = 43200 / 200 = 216.
  // (The introduction's ≈13 h gives 234, which the stated E_G = 0.76 contradicts: 0.76 · 256 = 194.6.)
  auto pts = validate("resnet50-dali-cpu.yaml");
  double t4 = at(pts, "resnet50-dali-overall/ddp/4/time_to_train_s").simulated;
  double t1024 = at(pts, "resnet50-dali-overall/ddp/1024/time_to_train_s").simulated;
  EXPECT_NEAR(t4 / t1024, 216.0, 216.0 * 0.15);
  EXPECT_NEAR(t4, 46800, 46800 * 0.15);  // ≈13 h on 4 GPUs
}

TEST(Aach2023, KnownMisses) {
  // Not reproduced (see the closing notes of the validation issue): the simulator gives Horovod and DeepSpeed
  // with the native loader the same file-system-bound E_G as DDP at 128 GPUs (0.79 vs 0.50 / 0.33:
  // loader-bound with a prefetch buffer, the framework's communication tail hides behind the next batch's
  // load; the paper gives nothing framework-specific about its loaders). With the native loader's
  // file-system spread, the ResNet-50 native AllReduce share at 128 GPUs is too high (≈0.8 vs 0.49: in the
  // simulator it jumps to its file-system-bound level as soon as the file system saturates). Checked to still
  // miss, so that a model change that fixes them is noticed and they move into the held tests above.
  auto native = validate("resnet50-native.yaml");
  EXPECT_GT(at(native, "resnet50-horovod-native/horovod/128/efficiency").abs_error, 0.05);
  EXPECT_GT(at(native, "resnet50-deepspeed-native/deepspeed/128/efficiency").abs_error, 0.05);
  EXPECT_GT(at(native, "resnet50-ddp-native/ddp/128/share_allreduce").abs_error, 0.08);
  // ResNet-101 with DALI at 1024 GPUs: the AllReduce share is 0.61 against 0.49. There the shared file
  // system nearly bounds a step (53 GB/s over 1024 GPUs), and ranks whose batch came late keep the others
  // waiting inside the allreduce. This point was held (0.54) only while the loaders began during the initial
  // weight broadcast: its 0.23 s of head start (almost two batches) carried the 12 measured steps, and 48
  // steps of the same model gave 0.64 (E_G 0.810 -> 0.781). The loaders now start after the broadcast, as a
  // training loop's data iterator does, so 12 steps give nearly what 48 do (0.61 and 0.66).
  auto r101 = validate("resnet101-dali-cpu.yaml");
  EXPECT_GT(at(r101, "resnet101-ddp-dali/ddp/1024/share_allreduce").abs_error, 0.08);
}

TEST(HorovodGuide, EightyEightPercentOn128Gpus) {
  // The guide's claim (Sergeev & Del Balso 2018): 88% scaling efficiency on 128 GPUs for Inception V3 and
  // ResNet-101 over 25 GbE, efficiency relative to one GPU (reference_gpus: 1, part of a node); held within
  // ±0.05 (Horovod alone: --max-error judges every row).
  for (const std::string extra :
       {"", " --set workload.model=resnet101 --set workload.compute.samples_per_s=130"}) {
    auto o = ddlsim_test::run_ddlsim(
        "validate '" + std::string(DDLSIM_SOURCE_DIR) + "/scenarios/horovod-guide-128gpu.yaml' --measured '" +
        DDLSIM_SOURCE_DIR + "/scenarios/measured/horovod_guide.csv' --format csv --max-error 0.05" +
        " --set strategies=[horovod]" + extra);
    EXPECT_EQ(o.status, 0) << extra << "\n" << o.out;
    CsvTable t = parse_csv(o.out, "validate output");
    ASSERT_EQ(t.rows.size(), 1u) << o.out;
    EXPECT_NEAR(std::stod(t.rows[0][t.column("simulated")]), 0.88, 0.05);
  }
}

TEST(HorovodGuide, TensorFlowParameterServersStillMiss) {
  // "Twice faster than the standard distributed TensorFlow": TF-PS at 0.88 / 2 = 0.44 on 128 GPUs. The
  // scenario's PS is the baseline's set-up (tf_cnn_benchmarks: towers averaged on the worker host, greedy
  // placement of whole variables, TF 1.3 serving every tensor a process sends from one thread at ~0.24 GB/s,
  // SyncReplicasOptimizer's barrier). The busiest server (10.5 MB of variables, the 8 MB logits layer among
  // them) sends them to 32 workers per step through that thread, so it simulates at 0.24: below Horovod, as
  // the guide says, but further below than measured. Checked to still miss, so a model change that closes the
  // gap is noticed and the point moves into the held test above.
  auto o = ddlsim_test::run_ddlsim("validate '" + std::string(DDLSIM_SOURCE_DIR) +
                                   "/scenarios/horovod-guide-128gpu.yaml' --measured '" + DDLSIM_SOURCE_DIR +
                                   "/scenarios/measured/horovod_guide.csv' --format csv");
  ASSERT_EQ(o.status, 0) << o.out;
  CsvTable t = parse_csv(o.out, "validate output");
  ASSERT_EQ(t.rows.size(), 2u) << o.out;
  double horovod = 0, ps = 0;
  for (const auto& row : t.rows)
    (row[t.column("strategy")] == "horovod" ? horovod : ps) = std::stod(row[t.column("simulated")]);
  EXPECT_GT(horovod, 0);
  EXPECT_LT(ps, horovod / 2);
  EXPECT_GT(std::abs(ps - 0.44), 0.05);
}

TEST(HorovodReadme, TensorFlowParameterServersLoseWithTheWorkerCount) {
  // Horovod's README of 2017 measured the same TF-PS baseline on 4 nodes of 4 P100 over 25 GbE and on 16
  // nodes over 40 GbE (scenarios/measured/horovod_readme_*.csv), each against its own single-GPU rate; one PS
  // task per node, as in the scenario. With one sending thread per TF process, a server's pulls to its W
  // workers queue behind each other:
  // - VGG-16's 411 MB fc6 layer sits whole on one server, which sends W x 411 MB per step (and receives as
  //   much), so its step grows nearly as W: efficiency(16 GPUs) / efficiency(64 GPUs) = T64 / T16 lies
  //   between 3 and W64 / W16 = 4 (compute and the smaller layers add the same to both). Measured: 3.53. A
  //   stage per connection instead gives 1.5: the connections run in parallel.
  // - Every point within 0.2 of the measurement (the stage's rate comes from ~100 MB tensors, and the
  //   small-tensor models run up to 0.17 too slow; a stage per connection put them 0.29-0.65 too fast).
  struct Case {
    const char* csv;
    int nodes;
    const char* model;
    double samples_per_s;
  };
  const Case cases[] = {{"horovod_readme_25gbe.csv", 4, "inception_v3", 134.4},
                        {"horovod_readme_25gbe.csv", 4, "resnet101", 119.4},
                        {"horovod_readme_25gbe.csv", 4, "vgg16", 130.9},
                        {"horovod_readme_40gbe.csv", 16, "inception_v3", 148.8},
                        {"horovod_readme_40gbe.csv", 16, "resnet101", 136.0},
                        {"horovod_readme_40gbe.csv", 16, "vgg16", 149.6}};
  std::map<int, double> vgg;  // GPUs -> simulated efficiency
  for (const Case& c : cases) {
    std::string cmd = "validate '" + std::string(DDLSIM_SOURCE_DIR) +
                      "/scenarios/horovod-guide-128gpu.yaml' " + "--measured '" + DDLSIM_SOURCE_DIR +
                      "/scenarios/measured/" + c.csv + "' --format csv --set 'cluster.nodes=[" +
                      std::to_string(c.nodes) + "]'" + " --set workload.model=" + c.model +
                      " --set workload.compute.samples_per_s=" + std::to_string(c.samples_per_s);
    if (c.nodes == 16)  // the 40 GbE cluster: ethernet-25g's fat-tree at 40 Gb/s
      cmd +=
          " --set 'cluster.network={kind: fat-tree, levels: 2, hosts_per_leaf: 32, oversubscription: "
          "\"2:1\", link: {bandwidth: 40Gb/s, latency: 1us}}'";
    auto o = ddlsim_test::run_ddlsim(cmd);
    ASSERT_EQ(o.status, 0) << cmd << "\n" << o.out;
    CsvTable t = parse_csv(o.out, "validate output");
    int found = 0;
    for (const auto& row : t.rows) {
      if (row[t.column("strategy")] != "tensorflow-ps") continue;
      ++found;
      double sim = std::stod(row[t.column("simulated")]), measured = std::stod(row[t.column("measured")]);
      EXPECT_NEAR(sim, measured, 0.2) << c.model << " on " << c.nodes << " nodes";
      if (std::string(c.model) == "vgg16") vgg[4 * c.nodes] = sim;
    }
    EXPECT_EQ(found, 1) << cmd << "\n" << o.out;
  }
  ASSERT_EQ(vgg.size(), 2u);
  EXPECT_GT(vgg[16] / vgg[64], 3.0);
  EXPECT_LT(vgg[16] / vgg[64], 4.0);
}

TEST(TfBenchmarksEc2K80, TensorFlowParameterServersOnTenGigabitEthernet) {
  // TensorFlow's own benchmarks of May 2017 (scenarios/measured/tf_benchmarks_ec2_k80.csv):
  // distributed_replicated parameter servers on 1-8 p2.8xlarge instances of 8 K80s over 10 GbE, one PS per
  // instance except at 8 instances (InceptionV3 6, ResNet-152 4). On slow K80s the model hides nearly all
  // communication behind compute (0.98-0.996 where 0.82-0.97 was measured), and ResNet-152 on 64 GPUs is
  // bound by its busiest PS's sending thread: every point within 0.25, the misses documented in the scenario.
  struct Model {
    const char* name;
    double samples_per_s;
    int batch;
    int servers_at_8;
  };
  const Model models[] = {
      {"inception_v3", 29.7, 64, 6}, {"resnet50", 52.4, 64, 8}, {"resnet152", 19.4, 32, 4}};
  const std::string scenario = std::string(DDLSIM_SOURCE_DIR) + "/scenarios/tf-benchmarks-ec2-k80.yaml";
  std::map<std::string, double> error;  // model/gpus -> |simulated - measured|
  for (const Model& m : models) {
    const std::string sets = fmt::format(
        " --set workload.model={} --set workload.compute.samples_per_s={}"
        " --set workload.batch_per_gpu={}",
        m.name, m.samples_per_s, m.batch);
    for (int servers : {0, m.servers_at_8}) {  // per node (1, 2 and 4 instances); the page's count at 8
      std::string cmd = "validate '" + scenario + "' --measured '" + DDLSIM_SOURCE_DIR +
                        "/scenarios/measured/tf_benchmarks_ec2_k80.csv' --format csv" + sets;
      if (servers > 0) cmd += " --set strategies.0.servers=" + std::to_string(servers);
      auto o = ddlsim_test::run_ddlsim(cmd);
      ASSERT_EQ(o.status, 0) << cmd << "\n" << o.out;
      CsvTable t = parse_csv(o.out, "validate output");
      for (const auto& row : t.rows) {
        int gpus = std::stoi(row[t.column("gpus")]);
        if ((servers > 0) != (gpus == 64)) continue;
        double sim = std::stod(row[t.column("simulated")]), measured = std::stod(row[t.column("measured")]);
        error[fmt::format("{}/{}", m.name, gpus)] = std::abs(sim - measured);
        EXPECT_NEAR(sim, measured, 0.25) << m.name << " on " << gpus << " GPUs";
      }
    }
  }
  EXPECT_EQ(error.size(), 12u);
  // Checked to still miss, so that a model change that explains these is noticed: ResNet-50 on 64 GPUs (0.99
  // simulated vs 0.82) and ResNet-152 on 64 (0.59 vs 0.79).
  EXPECT_GT(error["resnet50/64"], 0.1);
  EXPECT_GT(error["resnet152/64"], 0.1);
  // ResNet-152 on 64 GPUs: 4 PS hold 240 MB of variables, round robin; the busiest sends its share to each of
  // the 8 workers per step, one tensor at a time through its sending thread at 0.24 GB/s, so a step takes at
  // least its bytes / 0.24 GB/s (2.16 s; measured: 32 / 19.4 / 0.790 = 2.09 s a step).
  auto o =
      ddlsim_test::run_ddlsim("run '" + scenario + "' --format csv --set 'cluster.nodes=[8]'" +
                              " --set workload.model=resnet152 --set workload.compute.samples_per_s=19.4" +
                              " --set workload.batch_per_gpu=32 --set strategies.0.servers=4");
  ASSERT_EQ(o.status, 0) << o.out;
  CsvTable t = parse_csv(o.out, "run output");
  ASSERT_EQ(t.rows.size(), 1u);
  double bytes = std::stod(t.rows[0][t.column("ps.max_server_bytes_per_step")]);
  double step = std::stod(t.rows[0][t.column("step_time_s")]);
  EXPECT_NEAR(bytes / 0.24e9, 2.16, 0.01);
  EXPECT_GE(step, bytes / 0.24e9);
}
