// OpenVDB support lives in a module of its own (libvoxtile_vdb.so, io/vdb.cpp), loaded with dlopen
// the first time a .vdb file is read, or written in a form io/vdb_direct.h does not write (empty
// grids, grids over more than 1024 nodes of 4096^3): linking libopenvdb into the executable made every process pay for
// its 61k symbol relocations at start-up (most of the 35-40 ms `voxtile --version` took on the H200 machine), whether
// it touched a .vdb file or not. The module resolves voxtile's own functions (errors, atomic files, hashing) from the
// executable, which exports them, so state such as the pending temporary files is shared.
#pragma once

#include <string>
#include <vector>

#include "io/vdb.h"

namespace voxtile {

constexpr int kVdbApiVersion = 3;

// The module's entry points (io/vdb.h and read_vdb_grids of io/grid_reader.h).
struct VdbApi {
  int version;
  void (*write_vdb_grids)(const std::vector<const SparseGrid*>&, const std::string&, const Metadata&, VdbWriter,
                          const VdbWriteOptions&);
  SparseGrid (*read_vdb)(const std::string&, const std::string&);
  std::vector<SparseGrid> (*read_vdb_grids)(const std::string&);
  std::string (*read_vdb_meta)(const std::string&, const std::string&);
  std::vector<std::string> (*describe_vdb)(const std::string&);
};

// There is no early load on a thread: measured on an H200, a dlopen of the module running beside
// CUDA's context creation delayed it by 100-170 ms (the dynamic loader's lock); loaded when first
// needed, after the GPU work, a whole run took 280-310 ms where the linked library took 374-439.
// Started after the context's creation, beside the mesh's loading and the CPU voxelizer (2 cores,
// the bunny at 512^3 to a .vdb of counts), it made the run slower still: 322-348 ms against
// 260-274, the load 12 -> 70-107 ms (TBB's start waits on the same lock).

}  // namespace voxtile

// The module's one exported symbol.
extern "C" const voxtile::VdbApi* voxtile_vdb_api();
