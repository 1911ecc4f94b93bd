// ddlsim: how fast will data-parallel training run on this cluster, with a parameter server or with
// allreduce?
#include <yaml-cpp/exceptions.h>
#include <csignal>
#include <cstdio>
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include "sim/cli/commands.hpp"
#include "sim/core/error.hpp"
#include "sim/core/interrupt.hpp"
#include "sim/core/output_file.hpp"
#include "sim/net/topology.hpp"

namespace {

constexpr const char* kUsage = R"(ddlsim - simulate data-parallel deep-learning training on GPU clusters

usage: ddlsim <command> [arguments] [--set dotted.key=value ...] [--format table|csv|json]

commands:
  run SCENARIO.yaml          simulate every strategy of the scenario at every node count it lists
  sweep SCENARIO.yaml --nodes 4,8,16
                             the same over a list of node counts (for batch scripts)
  describe SCENARIO.yaml|TOPOLOGY.yaml [--nodes N]
                             show the cluster a scenario or topology builds: devices, links, routes
  validate SCENARIO.yaml --measured FILE.csv [--max-error X]
                             simulated vs measured scaling, with errors
  calibrate FILES... [--out FILE.yaml] [--check]
                             fit alpha/beta/gamma from kernel JSON, nccl-tests or OSU output
  crossover SCENARIO.yaml [--nodes LIST] [--servers LIST]
                             PS vs ring: servers needed to match ring, GPU count where ring overtakes PS

Every command accepts --help. Exit status: 0 success, 1 runtime failure, 2 bad input or usage.
)";

int dispatch(const std::string& command, const std::vector<std::string>& args) {
  if (command == "run") return ddlsim::cli::run_command(args);
  if (command == "sweep") return ddlsim::cli::sweep_command(args);
  if (command == "describe") return ddlsim::cli::describe_command(args);
  if (command == "validate") return ddlsim::cli::validate_command(args);
  if (command == "calibrate") return ddlsim::cli::calibrate_command(args);
  if (command == "crossover") return ddlsim::cli::crossover_command(args);
  std::fprintf(stderr,
               "ddlsim: unknown command \"%s\" (run, sweep, describe, validate, calibrate, crossover)\n",
               command.c_str());
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
    std::fputs(kUsage, args.empty() ? stderr : stdout);
    return args.empty() ? 2 : 0;
  }
  std::string command = args[0];
  args.erase(args.begin());
  try {
    int status = dispatch(command, args);
    // Output that could not be written (a full disk, a closed pipe) is a failure, not a silent success.
    std::cout.flush();
    if (!std::cout || std::fflush(stdout) != 0 || std::ferror(stdout)) {
      std::fprintf(stderr, "ddlsim: cannot write the standard output\n");
      return 1;
    }
    return status;
  } catch (const ddlsim::InputError& e) {
    std::fprintf(stderr, "ddlsim: %s\n", e.what());
    return 2;
  } catch (const ddlsim::RoutingError& e) {
    std::fprintf(stderr, "ddlsim: cannot route: %s\n", e.what());
    return 2;
  } catch (const YAML::Exception& e) {
    std::fprintf(stderr, "ddlsim: YAML error: %s\n", e.what());
    return 2;
  } catch (const ddlsim::OutputError& e) {
    std::fprintf(stderr, "ddlsim: %s\n", e.what());
    return 1;
  } catch (const ddlsim::Interrupted&) {  // a command with nothing finished to print
    int sig = ddlsim::interrupt_signal();
    std::fprintf(stderr, "ddlsim: interrupted by %s\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
    return 128 + sig;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr,
                 "ddlsim: out of memory: the run needs more than this machine has; try fewer nodes\n");
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ddlsim: internal error: %s\n", e.what());
    return 1;
  }
}
