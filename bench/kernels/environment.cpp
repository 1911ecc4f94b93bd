#include "environment.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace ddlsim::kernels {
namespace {

std::string library_first_line() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int length = 0;
  MPI_Get_library_version(text, &length);
  std::string line(text, static_cast<std::size_t>(std::max(length, 0)));
  line = line.substr(0, line.find_first_of("\r\n"));
  line.erase(std::find(line.begin(), line.end(), '\0'), line.end());
  while (!line.empty() && (line.back() == ' ' || line.back() == '\t')) line.pop_back();
  return line;
}

std::vector<std::string> gather_hosts(MPI_Comm comm, int rank, int ranks) {
  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int length = 0;
  MPI_Get_processor_name(name, &length);
  std::vector<char> all(rank == 0 ? static_cast<std::size_t>(ranks) * MPI_MAX_PROCESSOR_NAME : 0);
  MPI_Gather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all.data(), MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 0, comm);
  std::vector<std::string> hosts;
  for (int r = 0; rank == 0 && r < ranks; ++r) {
    const char* begin = all.data() + static_cast<std::size_t>(r) * MPI_MAX_PROCESSOR_NAME;
    std::string host(begin, std::find(begin, begin + MPI_MAX_PROCESSOR_NAME, '\0'));
    if (std::find(hosts.begin(), hosts.end(), host) == hosts.end()) hosts.push_back(std::move(host));
  }
  return hosts;
}

}  // namespace

RunEnvironment describe_environment(MPI_Comm comm) {
  RunEnvironment environment;
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &environment.ranks);
  environment.mpi_library = library_first_line();
  int version = 0;
  int subversion = 0;
  MPI_Get_version(&version, &subversion);
  environment.mpi_version = fmt::format("{}.{}", version, subversion);
  environment.hosts = gather_hosts(comm, rank, environment.ranks);

  MPI_Comm node_comm = MPI_COMM_NULL;
  MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node_comm);
  int node_size = 0;
  int node_rank = 0;
  MPI_Comm_size(node_comm, &node_size);
  MPI_Comm_rank(node_comm, &node_rank);
  MPI_Comm_free(&node_comm);
  int smallest_node = 0;
  const int leader = node_rank == 0 ? 1 : 0;
  MPI_Allreduce(&node_size, &environment.ranks_per_node, 1, MPI_INT, MPI_MAX, comm);
  MPI_Allreduce(&node_size, &smallest_node, 1, MPI_INT, MPI_MIN, comm);
  MPI_Allreduce(&leader, &environment.nodes, 1, MPI_INT, MPI_SUM, comm);
  environment.uneven_nodes = smallest_node != environment.ranks_per_node;
  return environment;
}

}  // namespace ddlsim::kernels
