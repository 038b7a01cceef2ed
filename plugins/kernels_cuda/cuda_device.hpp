#pragma once
// The CUDA runtime's side of the `cuda` kernel (cuda_device.cpp): the only file besides the
// kernels that includes CUDA's headers.
#include <memory>
#include <string>

#include "device.hpp"

namespace plexus_cuda {

/// Why no CUDA device can be used ("no CUDA device (CUDA driver version is insufficient ...)"),
/// or "" when one can.
std::string cuda_unavailable();
/// CUDA devices visible to this process (0 when none or no driver).
int cuda_device_count();
/// Device `id` on the CUDA runtime; throws plexus::Error when it cannot be selected.
std::shared_ptr<Device> make_cuda_device(int id);

}  // namespace plexus_cuda
