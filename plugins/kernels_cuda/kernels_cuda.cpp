// The `cuda` kernel plugin: local products on an NVIDIA GPU. C stays in device memory for the
// whole multiply, each tick's panels are copied once (double-buffered against the previous
// tick's products), stacks go to the device in batches sorted by block shape, and the products
// run in batched small-GEMM kernels specialised at compile time for the common block sizes
// (smm.hpp) on several streams; block norms for on-the-fly filtering are computed on the device.
// Streams, events and buffers are kept by the kernel from one multiply to the next.
// Ranks of a node share its GPUs by node-local rank (Device=auto).
//
// Without a usable device the plugin still loads: `plexus plugins` shows why, and making the
// kernel fails with that reason.
#include <memory>
#include <string>
#include <utility>

#include "cuda_device.hpp"
#include "plexus/error.hpp"
#include "plexus/kernel.hpp"
#include "plexus/parameters.hpp"
#include "plexus/plugin.hpp"
#include "session.hpp"

namespace plexus_kernels_cuda {

plexus::ParameterListPtr valid_parameters() {
  auto valid = Teuchos::rcp(new plexus::ParameterList("cuda"));
  plexus::declare_string(*valid, "Device", "auto",
                         "the CUDA device of this rank: 'auto' (the rank's index on its node modulo the node's "
                         "device count, from the launcher's environment) or a device number");
  plexus_cuda::declare_options(*valid);
  return valid;
}

std::unique_ptr<plexus::Kernel> make_kernel(const plexus::ParameterList& p) {
  const std::string why = plexus_cuda::cuda_unavailable();
  if (!why.empty()) throw plexus::InputError("Kernel/cuda", "the cuda kernel cannot run here: " + why);
  const int id = plexus_cuda::choose_device(p.get<std::string>("Device"), plexus_cuda::cuda_device_count(),
                                            plexus_cuda::node_local_rank(), "Kernel/cuda/Device");
  return std::make_unique<plexus_cuda::DeviceKernel>("cuda", plexus_cuda::make_cuda_device(id),
                                                     plexus_cuda::read_options(p));
}

const plexus::PluginDescriptor& describe() {
  static const plexus::PluginDescriptor descriptor = [] {
    plexus::PluginDescriptor d;
    d.name = "kernels_cuda";
    d.version = "0.1.0";
    plexus::ComponentDescriptor k;
    k.kind = plexus::ComponentKind::Kernel;
    k.name = "cuda";
    k.summary =
        "NVIDIA GPU: C resident on the device, panels staged once per tick, batched small-GEMM kernels "
        "specialised for block sizes 5, 6, 13, 23, 32 and their mixes (generic kernel otherwise), several streams, "
        "buffers kept between multiplies";
    k.valid_parameters = valid_parameters;
    k.make_kernel = make_kernel;
    k.unavailable = plexus_cuda::cuda_unavailable;
    d.components.push_back(std::move(k));
    return d;
  }();
  return descriptor;
}

}  // namespace plexus_kernels_cuda

PLEXUS_PLUGIN(plexus_kernels_cuda::describe)
