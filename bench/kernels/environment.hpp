#pragma once
// Where the kernels ran: MPI library, hosts, ranks per node.

#include <string>
#include <vector>

#include <mpi.h>

namespace ddlsim::kernels {

struct RunEnvironment {
  std::string mpi_library;         // first line of MPI_Get_library_version
  std::string mpi_version;         // MPI_Get_version, e.g. "3.1"
  std::vector<std::string> hosts;  // processor name of each rank, deduplicated, in order of first rank
  int ranks = 0;
  int ranks_per_node = 0;  // size of the MPI_COMM_TYPE_SHARED communicator (the largest, if uneven)
  int nodes = 0;           // number of MPI_COMM_TYPE_SHARED communicators
  bool uneven_nodes = false;
};

// Collective over `comm`; the host list is complete on rank 0 only.
RunEnvironment describe_environment(MPI_Comm comm);

}  // namespace ddlsim::kernels
