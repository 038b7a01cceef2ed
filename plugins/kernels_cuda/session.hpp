#pragma once
// The `cuda` kernel's local backend on any Device (device.hpp): C resident in device memory from
// begin() to finish(), each tick's panels staged once (double-buffered, so a tick's copies
// overlap the previous tick's products), stacks sorted by shape and sent in batches, products on
// several streams, block norms on the device. No CUDA header here: the tests run it on an
// emulated device.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "device.hpp"
#include "plexus/kernel.hpp"
#include "plexus/parameters.hpp"

namespace plexus_cuda {

struct Options {
  int threads = 0;             ///< stack-building threads (0: omp_get_max_threads())
  int streams = 4;             ///< compute streams
  std::int64_t batch = 30000;  ///< stack entries per transfer and launch
};

/// Declares Threads, Streams and BatchSize in a kernel's valid parameter list.
void declare_options(plexus::ParameterList& valid);
/// Reads them from a validated sublist.
Options read_options(const plexus::ParameterList& p);

/// The shape id of a product (smm.hpp): a specialised kernel's, or kGenericShape.
int shape_of(int m, int n, int k);

/// This rank's index among the ranks of its node, from the launcher's environment (Open MPI,
/// MPICH, MVAPICH, Slurm, PALS, Flux); 0 when none is set.
int node_local_rank();
/// The device a rank uses: `spec` "auto" (node-local rank modulo the device count, as DBCSR
/// does) or a device number below `count`. Throws InputError at `where` otherwise.
int choose_device(const std::string& spec, int count, int local_rank, const std::string& where);

/// "1.50 GiB" (binary units).
std::string bytes_text(std::int64_t bytes);

class ResourcePool;

/// The local backend over a device. It keeps what a session held on the device (streams,
/// events, C's area, page-locked and device buffers) for the next session, and frees it when it
/// is destroyed.
class DeviceKernel final : public plexus::Kernel {
 public:
  DeviceKernel(std::string name, std::shared_ptr<Device> device, Options options);
  ~DeviceKernel() override;
  std::string name() const override { return name_; }
  int threads() const override { return threads_; }
  plexus::MemorySpace memory_space() const override { return plexus::MemorySpace::Device; }
  std::unique_ptr<plexus::KernelSession> begin(plexus::MatrixData c, int slots) override;

 private:
  std::string name_;
  std::shared_ptr<Device> device_;
  Options options_;
  std::shared_ptr<ResourcePool> pool_;
  int threads_ = 1;
};

}  // namespace plexus_cuda
