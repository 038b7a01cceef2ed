// plexus-cuda-bench: the `cuda` kernel on plexus-bench's problem classes (H2O-like blocks of 23,
// S-E-like blocks of 6, dense blocks of 32) and on H2O-like atomic blocks (13, 5, 5), one rank. In one run it measures
//   - the whole multiply (cannon strategy) on the cuda kernel and on the cpu kernel (all cores),
//   - the cuda kernel's batched products alone on the same stacks, device-resident,
//   - cuBLAS on the same stacks: cublasDgemmBatched per shape, in waves that never add to one C
//     block twice (batched GEMM does not accumulate concurrently), checked against the kernel,
//   - cuBLAS DGEMM on a large dense matrix,
// and writes the figures as JSON (docs/cuda.md). It never asserts on speed. Without a CUDA
// device it says so and exits with 77 (a skip for ctest).
//
//   plexus-cuda-bench [--quick] [--scale S] [--repeat R] [--classes h2o,se,dense,h2o-atomic] [--dgemm-n N]
//                     [--json FILE]
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <mpi.h>
#include <omp.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "bench_util.hpp"
#include "cuda_device.hpp"
#include "plexus/comm_strategy.hpp"
#include "plexus/distribution.hpp"
#include "plexus/error.hpp"
#include "plexus/generator.hpp"
#include "plexus/kernel.hpp"
#include "plexus/matrix.hpp"
#include "plexus/parameters.hpp"
#include "plexus/registry.hpp"
#include "session.hpp"
#include "smm.hpp"
#include "smm_launch.hpp"

namespace {

using plexus_cuda::DeviceEntry;
using json = plexus::bench::json;

void cuda_check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw plexus::Error("plexus-cuda-bench", std::string(what) + ": " + cudaGetErrorString(e));
}
void cublas_check(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw plexus::Error("plexus-cuda-bench", std::string(what) + ": cuBLAS status " + std::to_string(static_cast<int>(s)));
}

/// Device memory released at scope exit.
template <class T>
class DeviceArray {
 public:
  explicit DeviceArray(std::size_t n) : n_(n) {
    cuda_check(cudaMalloc(reinterpret_cast<void**>(&p_), std::max<std::size_t>(n, 1) * sizeof(T)), "cudaMalloc");
  }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  ~DeviceArray() { (void)cudaFree(p_); }
  T* get() const { return p_; }
  void upload(const T* host, std::size_t n) {
    cuda_check(cudaMemcpy(p_, host, n * sizeof(T), cudaMemcpyHostToDevice), "upload");
  }
  std::vector<T> download() const {
    std::vector<T> out(n_);
    cuda_check(cudaMemcpy(out.data(), p_, n_ * sizeof(T), cudaMemcpyDeviceToHost), "download");
    return out;
  }
  void zero() { cuda_check(cudaMemset(p_, 0, n_ * sizeof(T)), "cudaMemset"); }

 private:
  T* p_ = nullptr;
  std::size_t n_;
};

/// Milliseconds of the work `f` enqueues on `stream`: best of `repeat` after one warm-up; every
/// counted run's milliseconds go to `all_ms`.
template <class F>
double best_ms(cudaStream_t stream, int repeat, std::vector<double>& all_ms, F&& f) {
  cudaEvent_t start, stop;
  cuda_check(cudaEventCreate(&start), "cudaEventCreate");
  cuda_check(cudaEventCreate(&stop), "cudaEventCreate");
  double best = INFINITY;
  for (int r = 0; r <= repeat; ++r) {
    cuda_check(cudaEventRecord(start, stream), "cudaEventRecord");
    f();
    cuda_check(cudaEventRecord(stop, stream), "cudaEventRecord");
    cuda_check(cudaEventSynchronize(stop), "cudaEventSynchronize");
    float ms = 0;
    cuda_check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
    if (r == 0) continue;
    all_ms.push_back(ms);
    best = std::min(best, static_cast<double>(ms));
  }
  (void)cudaEventDestroy(start);
  (void)cudaEventDestroy(stop);
  return best;
}

struct ProblemClass {
  std::string name, description;
  int block = 0;  ///< the block size; 0: the blocks cycle through `pattern`
  double occupancy = 0;
  bool symmetric = false;
  int nblocks = 0, quick_nblocks = 0;
  int bandwidth = -1, quick_bandwidth = -1;
  std::vector<int> pattern = {};
};

// plexus-bench's classes (bench/plexus_bench.cpp), so the figures can be set side by side, and
// h2o-atomic: the H2O-like class with CP2K's atomic blocks (13, 5, 5 per water molecule, as in
// the shared data's matrices; ../shared/data/README.md), about as many flops as h2o, products of
// 8 shapes.
std::vector<ProblemClass> classes() {
  return {
      {"h2o", "H2O-DFT-LS-like: blocks 23, occupancy 10%, symmetric", 23, 0.10, true, 450, 24},
      {"se", "S-E-like: blocks 6, banded |i-j| <= 66 with half the band present", 6, 0.5, false, 6600, 200, 66, 4},
      {"dense", "dense: blocks 32, full", 32, 1.0, false, 80, 6},
      {"h2o-atomic", "H2O-like with atomic blocks 13, 5, 5 (O, H, H), occupancy 10%, symmetric", 0, 0.10, true, 1350,
       72, -1, -1, {13, 5, 5}},
  };
}

/// The local products of C = A * B on one rank, as core builds them: row by row of A, C blocks
/// numbered in order of first appearance.
struct Stacks {
  std::vector<DeviceEntry> entries;
  std::int64_t c_values = 0;
  double flops = 0;
};

Stacks build_stacks(const plexus::DistMatrix& a, const plexus::DistMatrix& b) {
  const plexus::PanelView av = a.local().view(), bv = b.local().view();
  const plexus::BlockLayout& la = a.layout();
  const plexus::BlockLayout& lb = b.layout();
  std::vector<int> b_row(static_cast<std::size_t>(lb.rows.count()), -1);
  for (int r = 0; r < bv.nrows; ++r) b_row[static_cast<std::size_t>(bv.row_ids[r])] = r;
  Stacks s;
  std::map<std::int64_t, std::int64_t> c_offset;  // column -> offset, per A row
  for (int r = 0; r < av.nrows; ++r) {
    c_offset.clear();
    const int m = la.rows.size(static_cast<int>(av.row_ids[r]));
    for (std::int64_t ab = av.row_ptr[r]; ab < av.row_ptr[r + 1]; ++ab) {
      const int kk = static_cast<int>(av.cols[ab]);
      const int br = b_row[static_cast<std::size_t>(kk)];
      if (br < 0) continue;
      const int k = la.cols.size(kk);
      for (std::int64_t bb = bv.row_ptr[br]; bb < bv.row_ptr[br + 1]; ++bb) {
        const int n = lb.cols.size(static_cast<int>(bv.cols[bb]));
        auto [it, fresh] = c_offset.emplace(bv.cols[bb], s.c_values);
        if (fresh) s.c_values += std::int64_t{m} * n;
        s.entries.push_back(DeviceEntry{m, n, k, av.offsets[ab], bv.offsets[bb], it->second});
        s.flops += 2.0 * m * n * k;
      }
    }
  }
  return s;
}

/// The stack sorted by shape (as the cuda kernel's session sends it): groups of (shape, first, count).
struct ShapeGroup {
  int shape;
  std::int64_t first, count;
};
std::vector<ShapeGroup> sort_by_shape(std::vector<DeviceEntry>& entries) {
  std::stable_sort(entries.begin(), entries.end(), [](const DeviceEntry& x, const DeviceEntry& y) {
    return plexus_cuda::shape_of(x.m, x.n, x.k) < plexus_cuda::shape_of(y.m, y.n, y.k);
  });
  std::vector<ShapeGroup> groups;
  for (std::int64_t i = 0; i < static_cast<std::int64_t>(entries.size()); ++i) {
    const int shape = plexus_cuda::shape_of(entries[i].m, entries[i].n, entries[i].k);
    if (groups.empty() || groups.back().shape != shape) groups.push_back({shape, i, 0});
    ++groups.back().count;
  }
  return groups;
}

/// cublasDgemmBatched launches over the stack: per (m, n, k) and per wave, where the w-th product
/// into a C block goes to wave w, so no launch adds to one C block twice.
struct BatchedLaunch {
  int m, n, k;
  std::int64_t first, count;  // into the pointer arrays
};
struct BatchedPlan {
  std::vector<const double*> a, b;
  std::vector<double*> c;
  std::vector<BatchedLaunch> launches;
};
BatchedPlan plan_batched(const std::vector<DeviceEntry>& entries, const double* a, const double* b, double* c) {
  std::map<std::array<int, 4>, std::vector<const DeviceEntry*>> groups;  // (m, n, k, wave)
  std::map<std::int64_t, int> wave_of_c;
  for (const DeviceEntry& e : entries) groups[{e.m, e.n, e.k, wave_of_c[e.c]++}].push_back(&e);
  BatchedPlan plan;
  for (const auto& [key, list] : groups) {
    plan.launches.push_back({key[0], key[1], key[2], static_cast<std::int64_t>(plan.a.size()),
                             static_cast<std::int64_t>(list.size())});
    for (const DeviceEntry* e : list) {
      plan.a.push_back(a + e->a);
      plan.b.push_back(b + e->b);
      plan.c.push_back(c + e->c);
    }
  }
  return plan;
}

struct MultiplyRun {
  double seconds = 0, kernel_seconds = 0, flops = 0;
  std::vector<double> times;  // every counted run's seconds, in order
};

MultiplyRun multiply_best(plexus::CommStrategy& strategy, plexus::Kernel& kernel, const plexus::DistMatrix& a,
                          const plexus::DistMatrix& b, int repeat) {
  MultiplyRun best;
  for (int r = 0; r <= repeat; ++r) {  // the first is the warm-up
    plexus::DistMatrix c("C", a.distribution_ptr(), plexus::BlockLayout{a.layout().rows, b.layout().cols});
    c.finalize();
    const plexus::MultiplyReport rep = strategy.multiply(1.0, a, b, 0.0, c, kernel, plexus::MultiplyOptions{});
    if (r == 0) continue;
    best.times.push_back(rep.seconds);
    if (best.seconds == 0 || rep.seconds < best.seconds) {
      best.seconds = rep.seconds;
      best.kernel_seconds = rep.kernel_seconds;
      best.flops = rep.flops;
    }
  }
  return best;
}

double gflops(double flops, double seconds) { return seconds > 0 ? flops / seconds / 1e9 : 0; }

struct Options {
  bool quick = false;
  double scale = 1.0;
  int repeat = 3;
  std::vector<std::string> classes{"h2o", "se", "dense", "h2o-atomic"};
  int dgemm_n = 8192;
  std::string json;
  std::vector<std::string> command;  // the command line, for the metadata
};

[[noreturn]] void usage(const std::string& msg, int code = 2) {
  (code == 0 ? std::cout : std::cerr)
      << (code == 0 ? "" : "plexus-cuda-bench: " + msg + "\n")
      << "usage: plexus-cuda-bench [--quick] [--scale S] [--repeat R] [--classes h2o,se,dense,h2o-atomic]\n"
      << "                         [--dgemm-n N] [--json FILE]\n"
      << "  the cuda kernel on plexus-bench's classes: whole multiply, kernel alone, cuBLAS batched on the\n"
      << "  same stacks, cuBLAS DGEMM n x n, and the cpu kernel on all cores; figures as JSON (stdout or FILE).\n"
      << "  --scale S   multiplies every class's block rows and columns (flops grow as S^3)\n"
      << "  --repeat R  timed runs after one warm-up; the best is reported (default 3)\n"
      << "  Exits with 77 when no CUDA device can be used.\n";
  std::exit(code);
}

/// The options; a bad value is a plexus::bench::UsageError (main says it with the usage).
Options parse(int argc, char** argv) {
  Options o;
  o.command = plexus::bench::command_line(argc, argv);
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage("missing value after " + arg);
      return argv[++i];
    };
    if (arg == "--quick") {
      o.quick = true;
    } else if (arg == "--scale") {
      o.scale = plexus::bench::to_positive(arg, value());
    } else if (arg == "--repeat") {
      o.repeat = static_cast<int>(plexus::bench::to_int(arg, value(), 1, 1000000));
    } else if (arg == "--dgemm-n") {
      o.dgemm_n = static_cast<int>(plexus::bench::to_int(arg, value(), 1, 100000));
    } else if (arg == "--json") {
      o.json = value();
    } else if (arg == "--classes") {
      o.classes.clear();
      std::stringstream ss(value());
      for (std::string c; std::getline(ss, c, ',');) {
        const auto all = classes();
        if (std::none_of(all.begin(), all.end(), [&](const ProblemClass& p) { return p.name == c; }))
          usage("unknown class '" + c + "' (h2o, se, dense, h2o-atomic)");
        o.classes.push_back(c);
      }
    } else if (arg == "--help" || arg == "-h") {
      usage("", 0);
    } else {
      usage("unknown argument " + arg);
    }
  }
  // Before the device is looked for or anything measured: a path it could not write would lose
  // the run at its end.
  plexus::bench::check_json_path_or_exit("plexus-cuda-bench", o.json);
  if (o.quick) {
    o.repeat = 1;
    o.dgemm_n = std::min(o.dgemm_n, 512);
  }
  return o;
}

nlohmann::json run_class(const ProblemClass& pc, const Options& opt, plexus::CommStrategy& strategy,
                         plexus::Kernel& cuda, plexus::Kernel& cpu, cublasHandle_t handle, cudaStream_t stream) {
  const int nblk = std::max(1, static_cast<int>(std::lround((opt.quick ? pc.quick_nblocks : pc.nblocks) * opt.scale)));
  const int band_base = opt.quick ? pc.quick_bandwidth : pc.bandwidth;
  const int band = band_base < 0 ? -1 : static_cast<int>(std::lround(band_base * opt.scale));
  const auto grid = plexus::Grid::create(MPI_COMM_WORLD, 1, 1);
  const auto dist = plexus::Distribution::block_cyclic(grid, nblk, nblk);
  const plexus::BlockSizes sizes =
      pc.block > 0 ? plexus::BlockSizes::uniform(nblk, pc.block) : plexus::BlockSizes::cyclic(nblk, pc.pattern);
  const plexus::BlockLayout layout{sizes, sizes};
  const plexus::DistMatrix a =
      plexus::generate_random("A", dist, layout, plexus::GeneratorSpec{pc.occupancy, pc.symmetric, false, 17, band});
  const plexus::DistMatrix b =
      plexus::generate_random("B", dist, layout, plexus::GeneratorSpec{pc.occupancy, pc.symmetric, false, 29, band});

  // The whole multiply, interleaved kernel by kernel so that other load hits both alike.
  const MultiplyRun on_cuda = multiply_best(strategy, cuda, a, b, opt.repeat);
  const MultiplyRun on_cpu = multiply_best(strategy, cpu, a, b, opt.repeat);

  // The same products as stacks, device-resident.
  Stacks st = build_stacks(a, b);
  const std::vector<ShapeGroup> groups = sort_by_shape(st.entries);
  DeviceArray<double> da(static_cast<std::size_t>(a.local().data_size()));
  DeviceArray<double> db(static_cast<std::size_t>(b.local().data_size()));
  DeviceArray<double> dc(static_cast<std::size_t>(st.c_values));
  DeviceArray<DeviceEntry> dstack(st.entries.size());
  da.upload(a.local().data().data(), static_cast<std::size_t>(a.local().data_size()));
  db.upload(b.local().data().data(), static_cast<std::size_t>(b.local().data_size()));
  dstack.upload(st.entries.data(), st.entries.size());
  auto kernel_alone = [&] {
    for (const ShapeGroup& g : groups)
      cuda_check(static_cast<cudaError_t>(plexus_cuda::launch_products(g.shape, dstack.get() + g.first, g.count,
                                                                       da.get(), db.get(), dc.get(), stream)),
                 "launch_products");
  };
  BatchedPlan plan = plan_batched(st.entries, da.get(), db.get(), dc.get());
  DeviceArray<const double*> pa(plan.a.size());
  DeviceArray<const double*> pb(plan.b.size());
  DeviceArray<double*> pcs(plan.c.size());
  pa.upload(plan.a.data(), plan.a.size());
  pb.upload(plan.b.data(), plan.b.size());
  pcs.upload(plan.c.data(), plan.c.size());
  const double one = 1.0;
  auto batched = [&] {
    for (const BatchedLaunch& l : plan.launches)
      cublas_check(cublasDgemmBatched(handle, CUBLAS_OP_N, CUBLAS_OP_N, l.m, l.n, l.k, &one, pa.get() + l.first, l.m,
                                      pb.get() + l.first, l.k, &one, pcs.get() + l.first, l.m,
                                      static_cast<int>(l.count)),
                   "cublasDgemmBatched");
  };
  // Both give the same C (one pass each from zero), then the timings.
  dc.zero();
  kernel_alone();
  cuda_check(cudaStreamSynchronize(stream), "kernel");
  const std::vector<double> c_kernel = dc.download();
  dc.zero();
  batched();
  cuda_check(cudaStreamSynchronize(stream), "cuBLAS");
  const std::vector<double> c_cublas = dc.download();
  double diff = 0, norm = 0;
  for (std::size_t i = 0; i < c_kernel.size(); ++i) {
    diff += (c_kernel[i] - c_cublas[i]) * (c_kernel[i] - c_cublas[i]);
    norm += c_cublas[i] * c_cublas[i];
  }
  const double rel_diff = norm > 0 ? std::sqrt(diff / norm) : std::sqrt(diff);
  std::vector<double> kernel_all_ms, batched_all_ms;
  const double kernel_ms = best_ms(stream, opt.repeat, kernel_all_ms, kernel_alone);
  const double batched_ms = best_ms(stream, opt.repeat, batched_all_ms, batched);
  auto to_seconds = [](std::vector<double> ms) {
    for (double& x : ms) x /= 1e3;
    return ms;
  };

  nlohmann::json j;
  j["name"] = pc.name;
  j["description"] = pc.description;
  if (pc.block > 0)
    j["block_size"] = pc.block;
  else
    j["block_pattern"] = pc.pattern;
  j["nblocks"] = nblk;
  j["products"] = st.entries.size();
  j["flops"] = st.flops;
  j["shapes"] = groups.size();
  j["cublas_launches"] = plan.launches.size();
  j["multiply_cuda"] = {{"seconds", on_cuda.seconds},
                        {"gflops", gflops(on_cuda.flops, on_cuda.seconds)},
                        {"kernel_seconds", on_cuda.kernel_seconds},
                        {"seconds_per_repetition", on_cuda.times}};
  j["multiply_cpu"] = {{"seconds", on_cpu.seconds},
                       {"gflops", gflops(on_cpu.flops, on_cpu.seconds)},
                       {"threads", cpu.threads()},
                       {"seconds_per_repetition", on_cpu.times}};
  j["kernel_alone"] = {{"seconds", kernel_ms / 1e3},
                       {"gflops", gflops(st.flops, kernel_ms / 1e3)},
                       {"seconds_per_repetition", to_seconds(kernel_all_ms)}};
  j["cublas_batched"] = {{"seconds", batched_ms / 1e3},
                         {"gflops", gflops(st.flops, batched_ms / 1e3)},
                         {"seconds_per_repetition", to_seconds(batched_all_ms)}};
  j["ratios"] = {{"kernel_over_cublas_batched", batched_ms / kernel_ms},
                 {"multiply_over_kernel_alone", on_cuda.seconds / (kernel_ms / 1e3)},
                 {"cuda_over_cpu_multiply", on_cpu.seconds / on_cuda.seconds}};
  j["targets"] = {{"kernel_over_cublas_batched_at_least", 1.0}, {"multiply_over_kernel_alone_at_most", 1.5}};
  j["check"] = {{"kernel_vs_cublas_rel_diff", rel_diff}, {"passed", rel_diff <= 1e-12}};
  std::fprintf(stderr,
               "%-5s %lld products, %.3g GFLOP: multiply cuda %.2f GFLOP/s, cpu %.2f GFLOP/s; kernel alone %.2f, "
               "cuBLAS batched %.2f GFLOP/s; check %.1e\n",
               pc.name.c_str(), static_cast<long long>(st.entries.size()), st.flops / 1e9,
               gflops(on_cuda.flops, on_cuda.seconds), gflops(on_cpu.flops, on_cpu.seconds),
               gflops(st.flops, kernel_ms / 1e3), gflops(st.flops, batched_ms / 1e3), rel_diff);
  return j;
}

double dgemm_gflops(cublasHandle_t handle, cudaStream_t stream, int n, int repeat, std::vector<double>& seconds) {
  const std::size_t nn = static_cast<std::size_t>(n) * static_cast<std::size_t>(n);
  DeviceArray<double> a(nn), b(nn), c(nn);
  std::vector<double> host(nn);
  for (std::size_t i = 0; i < nn; ++i) host[i] = 1e-3 * static_cast<double>(i % 1013) - 0.5;
  a.upload(host.data(), nn);
  b.upload(host.data(), nn);
  c.zero();
  const double one = 1.0;
  std::vector<double> all_ms;
  const double ms = best_ms(stream, repeat, all_ms, [&] {
    cublas_check(cublasDgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, a.get(), n, b.get(), n, &one, c.get(), n),
                 "cublasDgemm");
  });
  for (double x : all_ms) seconds.push_back(x / 1e3);
  return gflops(2.0 * n * static_cast<double>(n) * n, ms / 1e3);
}

int run(const Options& opt) {
  const std::string why = plexus_cuda::cuda_unavailable();
  if (!why.empty()) {
    std::fprintf(stderr, "plexus-cuda-bench: %s: nothing to measure\n", why.c_str());
    return 77;
  }
  plexus::Registry::global().load_default();
  plexus::ParameterList cp("cannon"), kc("cuda"), kh("cpu");  // filled in with the defaults by the registry
  auto strategy = plexus::Registry::global().make_comm("cannon", cp, "Communication/cannon");
  auto cuda = plexus::Registry::global().make_kernel("cuda", kc, "Kernel/cuda");
  auto cpu = plexus::Registry::global().make_kernel("cpu", kh, "Kernel/cpu");
  cudaStream_t stream = nullptr;
  cuda_check(cudaStreamCreate(&stream), "cudaStreamCreate");
  cublasHandle_t handle = nullptr;
  cublas_check(cublasCreate(&handle), "cublasCreate");
  cublas_check(cublasSetStream(handle, stream), "cublasSetStream");
  int device = 0;
  cuda_check(cudaGetDevice(&device), "cudaGetDevice");
  cudaDeviceProp prop{};
  cuda_check(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");

  nlohmann::json out;
  out["benchmark"] = "plexus-cuda-bench";
  out["quick"] = opt.quick;
  out["scale"] = opt.scale;
  out["repeat"] = opt.repeat;
  out["device"] = prop.name;
  out["cpu_threads"] = cpu->threads();
  out["dgemm_n"] = opt.dgemm_n;
  std::vector<double> dgemm_seconds;
  out["cublas_dgemm_gflops"] = dgemm_gflops(handle, stream, opt.dgemm_n, opt.repeat, dgemm_seconds);
  out["cublas_dgemm_seconds_per_repetition"] = dgemm_seconds;
  std::fprintf(stderr, "%s: cuBLAS DGEMM n=%d %.1f GFLOP/s\n", prop.name, opt.dgemm_n,
               out["cublas_dgemm_gflops"].get<double>());
  out["classes"] = nlohmann::json::array();
  for (const std::string& name : opt.classes) {
    const auto all = classes();
    const auto it = std::find_if(all.begin(), all.end(), [&](const ProblemClass& c) { return c.name == name; });
    out["classes"].push_back(run_class(*it, opt, *strategy, *cuda, *cpu, handle, stream));
  }
  (void)cublasDestroy(handle);
  (void)cudaStreamDestroy(stream);
  int ranks = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  plexus::bench::RunInfo info;
  info.benchmark = "plexus-cuda-bench";
  info.command_line = opt.command;
  info.ranks = ranks;
  info.grid = "1x1";  // every class on a 1 x 1 grid
  info.threads_set = nullptr;  // the cpu kernel runs on its default threads (multiply_cpu.threads)
  info.options = {{"quick", opt.quick},     {"scale", opt.scale},     {"repeat", opt.repeat},
                  {"classes", opt.classes}, {"dgemm_n", opt.dgemm_n}, {"json", opt.json}};
  info.parameter_lists = {{"Communication/cannon", plexus::bench::parameters_json(cp)},
                          {"Kernel/cuda", plexus::bench::parameters_json(kc)},
                          {"Kernel/cpu", plexus::bench::parameters_json(kh)}};
  info.warm_up = 1;  // one uncounted run before every timed measurement
  info.rounds = opt.repeat;
  info.per_repetition_times.push_back("/cublas_dgemm_seconds_per_repetition");
  for (std::size_t i = 0; i < out["classes"].size(); ++i)
    for (const char* k : {"multiply_cuda", "multiply_cpu", "kernel_alone", "cublas_batched"})
      info.per_repetition_times.push_back(fmt::format("/classes/{}/{}/seconds_per_repetition", i, k));
  out["metadata"] = plexus::bench::run_metadata(info);
  const std::string text = out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  if (opt.json.empty())
    std::cout << text;
  else
    plexus::output::write_text(opt.json, text, "--json");  // through a temporary file renamed into place
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;  // before MPI: --help and bad arguments need no MPI
  try {
    opt = parse(argc, argv);
  } catch (const plexus::bench::UsageError& e) {
    usage(e.what());
  }
  MPI_Init(&argc, &argv);
  int code = 0;
  try {
    code = run(opt);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "plexus-cuda-bench: %s\n", e.what());
    code = 1;
  }
  MPI_Finalize();
  return code;
}
