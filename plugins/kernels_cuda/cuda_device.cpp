// The Device of the `cuda` kernel on the CUDA runtime (device.hpp).
#include "cuda_device.hpp"

#include <cuda_runtime.h>

#include <string>

#include "plexus/error.hpp"
#include "session.hpp"
#include "smm_launch.hpp"

namespace plexus_cuda {

namespace {

[[noreturn]] void fail(cudaError_t e, const std::string& what, int device) {
  throw plexus::Error("kernel cuda", what + " on CUDA device " + std::to_string(device) +
                                         " failed: " + cudaGetErrorName(e) + ": " + cudaGetErrorString(e));
}

inline cudaStream_t raw(Stream s) { return reinterpret_cast<cudaStream_t>(s); }
inline cudaEvent_t raw(Event e) { return reinterpret_cast<cudaEvent_t>(e); }

class CudaDevice final : public Device {
 public:
  explicit CudaDevice(int id) : id_(id) {
    check(cudaSetDevice(id_), "selecting the device");
    cudaDeviceProp prop{};
    check(cudaGetDeviceProperties(&prop, id_), "reading the device's properties");
    name_ = prop.name;
  }

  std::string describe() const override { return "CUDA device " + std::to_string(id_) + " (" + name_ + ")"; }

  DeviceMemory memory() override {
    std::size_t free = 0, total = 0;
    check(cudaMemGetInfo(&free, &total), "reading free memory");
    return DeviceMemory{static_cast<std::int64_t>(free), static_cast<std::int64_t>(total)};
  }

  void make_current() override { check(cudaSetDevice(id_), "selecting the device"); }

  void* allocate(std::size_t bytes) override {
    void* p = nullptr;
    const cudaError_t e = cudaMalloc(&p, bytes);
    if (e == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();  // clear it: the message below says what happened
      std::size_t free = 0, total = 0;
      (void)cudaMemGetInfo(&free, &total);
      throw plexus::Error("kernel cuda", bytes_text(static_cast<std::int64_t>(bytes)) +
                                             " of device memory could not be allocated on " + describe() + " (" +
                                             bytes_text(static_cast<std::int64_t>(free)) + " free of " +
                                             bytes_text(static_cast<std::int64_t>(total)) + ")");
    }
    check(e, "allocating device memory");
    return p;
  }

  void* allocate_pinned(std::size_t bytes) override {
    void* p = nullptr;
    check(cudaMallocHost(&p, bytes), "allocating page-locked host memory");
    return p;
  }

  void release(void* p, bool pinned) noexcept override {
    if (p == nullptr) return;
    (void)cudaSetDevice(id_);
    (void)cudaDeviceSynchronize();  // cudaFree waits too; this says so for both kinds
    (void)(pinned ? cudaFreeHost(p) : cudaFree(p));
  }

  Stream create_stream() override {
    cudaStream_t s = nullptr;
    check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "creating a stream");
    return reinterpret_cast<Stream>(s);
  }
  void destroy(Stream s) noexcept override { (void)cudaStreamDestroy(raw(s)); }
  Event create_event() override {
    cudaEvent_t e = nullptr;
    check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "creating an event");
    return reinterpret_cast<Event>(e);
  }
  void destroy(Event e) noexcept override { (void)cudaEventDestroy(raw(e)); }

  void copy_to_device(void* dst, const void* src, std::size_t bytes, Stream s) override {
    check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, raw(s)), "copying to the device");
  }
  void copy_to_host(void* dst, const void* src, std::size_t bytes, Stream s) override {
    check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, raw(s)), "copying from the device");
  }
  void copy_on_device(void* dst, const void* src, std::size_t bytes, Stream s) override {
    check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, raw(s)), "copying on the device");
  }
  void zero(void* dst, std::size_t bytes, Stream s) override {
    check(cudaMemsetAsync(dst, 0, bytes, raw(s)), "zeroing device memory");
  }

  void record(Event e, Stream s) override { check(cudaEventRecord(raw(e), raw(s)), "recording an event"); }
  void wait(Stream s, Event e) override { check(cudaStreamWaitEvent(raw(s), raw(e), 0), "ordering streams"); }
  void synchronize(Event e) override { check(cudaEventSynchronize(raw(e)), "waiting for the device"); }
  void synchronize(Stream s) override { check(cudaStreamSynchronize(raw(s)), "waiting for the device"); }

  void launch_products(int shape, const DeviceEntry* stack, std::int64_t count, const double* a, const double* b,
                       double* c, Stream s) override {
    check(static_cast<cudaError_t>(plexus_cuda::launch_products(shape, stack, count, a, b, c, raw(s))),
          "launching small products");
  }
  void launch_norms(const NormTask* tasks, std::int64_t count, const double* data, double* out, Stream s) override {
    check(static_cast<cudaError_t>(plexus_cuda::launch_norms(tasks, count, data, out, raw(s))),
          "launching block norms");
  }

 private:
  void check(cudaError_t e, const std::string& what) const {
    if (e != cudaSuccess) fail(e, what, id_);
  }
  int id_;
  std::string name_;
};

}  // namespace

std::string cuda_unavailable() {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e == cudaErrorInsufficientDriver) {
    (void)cudaGetLastError();
    int runtime = 0;
    (void)cudaRuntimeGetVersion(&runtime);
    return "no CUDA device (no NVIDIA driver, or one older than CUDA " + std::to_string(runtime / 1000) + "." +
           std::to_string(runtime % 1000 / 10) + " needs)";
  }
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    return std::string("no CUDA device (") + cudaGetErrorString(e) + ")";
  }
  return count > 0 ? std::string() : std::string("no CUDA device");
}

int cuda_device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return count;
}

std::shared_ptr<Device> make_cuda_device(int id) { return std::make_shared<CudaDevice>(id); }

}  // namespace plexus_cuda
