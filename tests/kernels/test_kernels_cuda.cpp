// Tests of what only the `cuda` kernel has: its shape table, its choice of device, its memory
// messages (on the emulated device), and the real plugin's behaviour on this machine: without a
// device it loads, says why it cannot run, and refuses to be made; with one, it multiplies.
// What every local backend must do is in the conformance suite (test_kernel_conformance.cpp),
// which runs the cuda kernel where a GPU is and the emulated device everywhere.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "plexus/error.hpp"
#include "plexus/kernel.hpp"
#include "plexus/memory.hpp"
#include "plexus/parameters.hpp"
#include "plexus/registry.hpp"
#include "raw_stacks.hpp"
#include "scoped_env.hpp"
#include "session.hpp"
#include "smm.hpp"

#ifndef PLEXUS_CUDA_EMULATED_PATH
#error "PLEXUS_CUDA_EMULATED_PATH must name the built test plugin"
#endif

namespace {

using plexus::ComponentKind;
using plexus::Registry;
using plexus::test::random_stack;
using plexus::test::raw_view;
using plexus::test::rel_error;
using plexus::test::ScopedEnv;

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

std::unique_ptr<plexus::Kernel> make(const std::string& name, const std::vector<std::string>& overrides = {}) {
  plexus::ParameterList p(name);
  for (const auto& o : overrides) plexus::apply_override(p, o);
  return Registry::global().make_kernel(name, p, "Kernel/" + name);
}

void load(const std::string& file) {
  if (Registry::global().find(ComponentKind::Kernel, file == PLEXUS_CUDA_EMULATED_PATH ? "cuda-emulated" : "cuda") ==
      nullptr)
    Registry::global().load_file(file);
}

TEST(CudaShapes, EverySpecialisedShapeHasItsId) {
  for (int s = 0; s < plexus_cuda::kSmmShapes; ++s)
    EXPECT_EQ(plexus_cuda::shape_of(plexus_cuda::smm_m(s), plexus_cuda::smm_n(s), plexus_cuda::smm_k(s)), s);
  EXPECT_EQ(plexus_cuda::shape_of(23, 23, 23), (3 * 5 + 3) * 5 + 3);
  EXPECT_EQ(plexus_cuda::shape_of(5, 13, 6), (0 * 5 + 2) * 5 + 1);
  for (auto [m, n, k] : {std::array{7, 5, 5}, std::array{64, 64, 64}, std::array{0, 5, 5}, std::array{100, 5, 5},
                         std::array{23, 23, -1}, std::array{23, 65, 23}})
    EXPECT_EQ(plexus_cuda::shape_of(m, n, k), plexus_cuda::kGenericShape) << m << "x" << n << "x" << k;
}

TEST(CudaShapes, TilesFitTheirThreadsAndSharedMemory) {
  // The launch geometry nvcc is given: at most 128 threads, whole groups, and shared memory within
  // the 48 KiB every CUDA device offers without opting in.
  std::vector<int> seen;
  for (int s = 0; s < plexus_cuda::kSmmShapes; ++s) {
    auto check = [&]<int M, int N, int K>() {
      using T = plexus_cuda::Tile<M, N, K>;
      EXPECT_LE(T::kThreads, 128);
      EXPECT_GE(T::kGroups, 1);
      EXPECT_EQ(T::kThreads % T::kGroupThreads, 0);
      EXPECT_LE(T::kShared * static_cast<int>(sizeof(double)), 48 * 1024);
      EXPECT_EQ((plexus_cuda::smm_blocks<M, N, K>(T::kGroups * 3 + 1)), 4);
      seen.push_back(M * 10000 + N * 100 + K);
    };
    EXPECT_TRUE(plexus_cuda::dispatch_shape(s, check));
  }
  EXPECT_EQ(seen.size(), std::size_t(plexus_cuda::kSmmShapes));
  EXPECT_FALSE(plexus_cuda::dispatch_shape(plexus_cuda::kGenericShape, [&]<int, int, int>() {}));
}

TEST(CudaDeviceChoice, AutoTakesTheNodeLocalRankModuloTheDevices) {
  EXPECT_EQ(plexus_cuda::choose_device("auto", 4, 5, "Kernel/cuda/Device"), 1);
  EXPECT_EQ(plexus_cuda::choose_device("auto", 1, 3, "Kernel/cuda/Device"), 0);
  EXPECT_EQ(plexus_cuda::choose_device("1", 2, 0, "Kernel/cuda/Device"), 1);
}

TEST(CudaDeviceChoice, BadChoicesSayWhatThereIs) {
  auto message = [](const std::string& spec, int count) {
    try {
      plexus_cuda::choose_device(spec, count, 0, "Kernel/cuda/Device");
    } catch (const plexus::InputError& e) {
      EXPECT_EQ(e.where(), "Kernel/cuda/Device");
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_TRUE(contains(message("2", 2), "this node has 2 CUDA devices (0 to 1)")) << message("2", 2);
  EXPECT_TRUE(contains(message("1", 1), "this node has 1 CUDA device (0)")) << message("1", 1);
  EXPECT_TRUE(contains(message("gpu0", 2), "'gpu0' is not a device")) << message("gpu0", 2);
  EXPECT_TRUE(contains(message("-1", 2), "is not a device")) << message("-1", 2);
  EXPECT_TRUE(contains(message("auto", 0), "no CUDA device")) << message("auto", 0);
}

TEST(CudaDeviceChoice, NodeLocalRankFromTheLauncher) {
  // Every launcher's variable unset for the test, and put back afterwards.
  const ScopedEnv ompi("OMPI_COMM_WORLD_LOCAL_RANK", nullptr), mpich("MPI_LOCALRANKID", nullptr),
      mvapich("MV2_COMM_WORLD_LOCAL_RANK", nullptr), slurm("SLURM_LOCALID", nullptr),
      pals("PALS_LOCAL_RANKID", nullptr), flux("FLUX_TASK_LOCAL_ID", nullptr);
  EXPECT_EQ(plexus_cuda::node_local_rank(), 0) << "no launcher variable: rank 0 of its node";
  slurm.set("2");
  EXPECT_EQ(plexus_cuda::node_local_rank(), 2);
  mpich.set("3");  // MPICH's, before Slurm's
  EXPECT_EQ(plexus_cuda::node_local_rank(), 3);
  ompi.set("x1");  // not a number: the next one counts
  EXPECT_EQ(plexus_cuda::node_local_rank(), 3);
  ompi.set("1");
  EXPECT_EQ(plexus_cuda::node_local_rank(), 1);
}

TEST(CudaMemory, BytesInBinaryUnits) {
  EXPECT_EQ(plexus_cuda::bytes_text(512), "512 B");
  EXPECT_EQ(plexus_cuda::bytes_text(1536), "1.50 KiB");
  EXPECT_EQ(plexus_cuda::bytes_text(std::int64_t{3} << 30), "3.00 GiB");
}

TEST(CudaMemory, CThatDoesNotFitSaysHowMuchWasNeededAndFree) {
  load(PLEXUS_CUDA_EMULATED_PATH);
  auto k = make("cuda-emulated", {"MemoryMB=1"});
  const std::int64_t before = plexus::memory::current_total(plexus::MemorySpace::Device);
  try {
    k->begin(plexus::MatrixData(200000, 1.0), 1);  // 1.53 MiB of C on a 1 MiB device
    ADD_FAILURE() << "C did not fit, and nothing said so";
  } catch (const plexus::Error& e) {
    const std::string m = e.what();
    EXPECT_TRUE(contains(m, "C's local blocks (200000 values) needs 1.53 MiB of device memory")) << m;
    EXPECT_TRUE(contains(m, "emulated device has 1.00 MiB free of 1.00 MiB")) << m;
  }
  EXPECT_EQ(plexus::memory::current_total(plexus::MemorySpace::Device), before) << "nothing held after the failure";
}

TEST(CudaMemory, PanelsThatDoNotFitSayWhich) {
  load(PLEXUS_CUDA_EMULATED_PATH);
  auto k = make("cuda-emulated", {"MemoryMB=1"});
  const std::vector<double> a(140000, 1.0), b(10, 1.0);  // A's panel: 1.07 MiB
  const plexus::PanelView va = raw_view(a), vb = raw_view(b);
  auto s = k->begin(plexus::MatrixData(4, 0.0), 1);
  try {
    s->stage(va, vb);
    ADD_FAILURE() << "A did not fit, and nothing said so";
  } catch (const plexus::Error& e) {
    EXPECT_TRUE(contains(e.what(), "the A panel of a tick needs 1.07 MiB of device memory")) << e.what();
  }
}

TEST(CudaEmulated, TicksBatchesAndStreamsGiveTheStackProduct) {
  // Three ticks, each with other panel values (the double-buffered staging reuses the first
  // tick's buffers in the third), the stack split between two slots, three streams; batches of 5
  // entries (buffers reused many times within a tick) or one batch per slot and tick. The
  // emulated device runs copies as late as CUDA may, so a missing wait before a buffer is reused
  // gives wrong figures here.
  load(PLEXUS_CUDA_EMULATED_PATH);
  for (const char* batch : {"BatchSize=5", "BatchSize=100000"}) {
    for (int seed : {1, 2}) {
      SCOPED_TRACE(std::string(batch) + ", seed " + std::to_string(seed));
      auto k = make("cuda-emulated", {batch, "Streams=3", "Seed=" + std::to_string(seed)});
      const auto p = random_stack(400, {5, 6, 13, 23, 32, 7}, 300 + seed);
      // Tick t multiplies (t + 1) A by B: C gets 1 + 2 + 3 = 6 times the stack's products, those
      // of 6 A (the cuda kernel adds atomically, so the two slots may share C blocks).
      plexus::test::RawProblem six = p;
      for (double& x : six.a) x *= 6.0;
      const std::vector<double> expect = plexus::test::dense_stack(six);
      auto s = k->begin(plexus::MatrixData(p.c.begin(), p.c.end()), 2);
      for (int tick = 0; tick < 3; ++tick) {
        std::vector<double> a = p.a;
        for (double& x : a) x *= tick + 1;
        const plexus::PanelView va = raw_view(a), vb = raw_view(p.b);
        s->stage(va, vb);
        const auto half = static_cast<std::int64_t>(p.stack.size() / 2);
        s->process(p.stack.data(), half, 0);
        s->process(p.stack.data() + half, static_cast<std::int64_t>(p.stack.size()) - half, 1);
        s->unstage();
        std::fill(a.begin(), a.end(), -7.0);  // the host panel is free after unstage()
      }
      const plexus::MatrixData c = s->finish();
      EXPECT_LE(rel_error(std::vector<double>(c.begin(), c.end()), expect), 1e-13);
    }
  }
}

/// One session of `p` on `k` with 2 slots (each C block in one slot: slots own disjoint C
/// blocks); C as finish() gives it.
std::vector<double> one_session(plexus::Kernel& k, const plexus::test::RawProblem& p) {
  std::array<std::vector<plexus::StackEntry>, 2> part;
  for (const auto& e : p.stack) part[static_cast<std::size_t>(e.c / 7 % 2)].push_back(e);
  auto s = k.begin(plexus::MatrixData(p.c.begin(), p.c.end()), 2);
  const plexus::PanelView va = raw_view(p.a), vb = raw_view(p.b);
  s->stage(va, vb);
  for (int slot = 0; slot < 2; ++slot)
    s->process(part[static_cast<std::size_t>(slot)].data(),
               static_cast<std::int64_t>(part[static_cast<std::size_t>(slot)].size()), slot);
  s->unstage();
  const plexus::MatrixData c = s->finish();
  return std::vector<double>(c.begin(), c.end());
}

TEST(CudaEmulated, EverySpecialisedShapeGivesItsProducts) {
  // Three products of every specialised shape (two adding into one C block), through the
  // emulated device's run of the very thread functions nvcc compiles: each C element is
  // computed by exactly one thread of its entry, whatever the shape's tiling.
  load(PLEXUS_CUDA_EMULATED_PATH);
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> val(-1.0, 1.0);
  plexus::test::RawProblem p;
  auto block = [&](std::vector<double>& v, int values) {
    const auto at = static_cast<std::int64_t>(v.size());
    for (int x = 0; x < values; ++x) v.push_back(val(rng));
    return at;
  };
  for (int s = 0; s < plexus_cuda::kSmmShapes; ++s) {
    const int m = plexus_cuda::smm_m(s), n = plexus_cuda::smm_n(s), k = plexus_cuda::smm_k(s);
    const std::int64_t shared_c = block(p.c, m * n);
    for (int e = 0; e < 3; ++e) {
      plexus::StackEntry entry{};
      entry.m = m;
      entry.n = n;
      entry.k = k;
      entry.a = block(p.a, m * k);
      entry.b = block(p.b, k * n);
      entry.c = e < 2 ? shared_c : block(p.c, m * n);
      p.stack.push_back(entry);
    }
  }
  auto k = make("cuda-emulated", {"Streams=2"});
  EXPECT_LE(rel_error(one_session(*k, p), plexus::test::dense_stack(p)), 1e-14);
}

TEST(CudaEmulated, LaterSessionsReuseTheFirstOnesDeviceMemory) {
  // Allocating and freeing device and page-locked memory costs more than a small multiply: the
  // kernel keeps what a session held for the next one. A second and a third session no larger
  // than the first allocate no device memory and no page-locked memory (counted as host memory
  // of category Other, which nothing else here allocates): neither peak moves. What is kept
  // stays counted, and the kernel's end gives it back.
  load(PLEXUS_CUDA_EMULATED_PATH);
  using plexus::MemorySpace;
  const std::int64_t before = plexus::memory::current_total(MemorySpace::Device);
  const auto big = random_stack(600, {5, 6, 13, 23, 7}, 61), small = random_stack(200, {5, 23}, 62);
  {
    auto k = make("cuda-emulated", {"BatchSize=50", "Streams=2"});
    EXPECT_LE(rel_error(one_session(*k, big), plexus::test::dense_stack(big)), 1e-13);
    const std::int64_t kept = plexus::memory::current_total(MemorySpace::Device) - before;
    EXPECT_GE(kept, static_cast<std::int64_t>(sizeof(double) * (big.a.size() + big.b.size() + big.c.size())))
        << "C's area and the panels are kept for the next session";
    const std::int64_t pinned = plexus::memory::current(plexus::memory::Category::Other);
    EXPECT_GT(pinned, 0) << "the page-locked buffers are counted";
    plexus::memory::reset_peak_total(MemorySpace::Device);
    plexus::memory::reset_peak(plexus::memory::Category::Other);
    EXPECT_LE(rel_error(one_session(*k, small), plexus::test::dense_stack(small)), 1e-13);
    EXPECT_LE(rel_error(one_session(*k, big), plexus::test::dense_stack(big)), 1e-13);
    EXPECT_EQ(plexus::memory::peak_total(MemorySpace::Device) - before, kept) << "a later session allocated";
    EXPECT_EQ(plexus::memory::peak(plexus::memory::Category::Other), pinned)
        << "a later session allocated page-locked memory";
  }
  EXPECT_EQ(plexus::memory::current_total(MemorySpace::Device), before) << "the kernel's end frees what it kept";
}

TEST(CudaEmulated, LargeCGoesBothWaysInChunks) {
  // C goes up and down in one copy below 2^18 values, in chunks of up to 2^20 values through two
  // page-locked buffers from there: one chunk, an exact multiple of the chunk and a partial last
  // chunk. Products land in the first, a middle and the last chunk. One kernel for all sizes,
  // so later sessions reuse (and grow) the buffers.
  load(PLEXUS_CUDA_EMULATED_PATH);
  auto k = make("cuda-emulated", {"Streams=2", "Threads=3"});
  int round = 0;
  for (const std::int64_t big :
       {(std::int64_t{1} << 18) - 1, std::int64_t{1} << 18, std::int64_t{1} << 21, (std::int64_t{5} << 19) + 12345}) {
    SCOPED_TRACE("C of " + std::to_string(big) + " values");
    auto p = random_stack(60, {5, 6}, 70 + round);
    const auto small = static_cast<std::int64_t>(p.c.size());
    std::mt19937_64 rng(90 + round++);
    std::uniform_real_distribution<double> val(-1.0, 1.0);
    std::vector<double> c(static_cast<std::size_t>(big));
    for (double& x : c) x = val(rng);
    // The stack's C blocks moved to three places in the big C: its start, across the middle and
    // its end.
    for (std::size_t i = 0; i < p.stack.size(); ++i) {
      const std::int64_t base = i % 3 == 0 ? 0 : i % 3 == 1 ? big / 2 - small / 2 : big - small;
      p.stack[i].c += base;
    }
    p.c = c;
    EXPECT_LE(rel_error(one_session(*k, p), plexus::test::dense_stack(p)), 1e-15);
  }
}

TEST(CudaEmulated, KeptBuffersGiveWayToALaterMultiply) {
  // What the kernel keeps must not make a multiply fail that fits on its own: on a 2 MiB device,
  // a first multiply with panels of 1.4 MiB (kept) and a second with a C of 1.2 MiB, then the
  // first again.
  load(PLEXUS_CUDA_EMULATED_PATH);
  auto k = make("cuda-emulated", {"MemoryMB=2", "BatchSize=100", "Streams=1"});
  auto wide = random_stack(50, {5, 6}, 81), tall = random_stack(50, {5, 6}, 82);
  wide.a.resize(90000, 0.5);  // values no entry reads: they only make the panels large
  wide.b.resize(90000, -0.5);
  tall.c.resize(150000, 0.25);
  for (int round = 0; round < 2; ++round) {
    SCOPED_TRACE("round " + std::to_string(round + 1));
    try {
      EXPECT_LE(rel_error(one_session(*k, wide), plexus::test::dense_stack(wide)), 1e-13);
      EXPECT_LE(rel_error(one_session(*k, tall), plexus::test::dense_stack(tall)), 1e-13);
    } catch (const plexus::Error& e) {
      ADD_FAILURE() << e.what();
    }
  }
}

TEST(CudaEmulated, BatchBuffersFollowTheStacksNotBatchSize) {
  // A batch's buffers hold the entries a flush sends, not BatchSize of them: with a million
  // entries a batch (40 MB a buffer) a small multiply fits on an 8 MiB device, and a session
  // whose second tick sends more entries than its first grows them on the way.
  load(PLEXUS_CUDA_EMULATED_PATH);
  auto k = make("cuda-emulated", {"MemoryMB=8", "BatchSize=1000000", "Streams=1"});
  const auto few = random_stack(300, {5, 6}, 91), more = random_stack(5000, {5, 6}, 92);
  EXPECT_LE(rel_error(one_session(*k, few), plexus::test::dense_stack(few)), 1e-14);
  // One session, two ticks on more's panels: its first 300 entries, then all 5,000 (past 4,096).
  const std::vector<plexus::StackEntry> first(more.stack.begin(), more.stack.begin() + 300);
  plexus::test::RawProblem both = more;
  both.stack.insert(both.stack.begin(), first.begin(), first.end());
  auto s = k->begin(plexus::MatrixData(more.c.begin(), more.c.end()), 1);
  const plexus::PanelView va = raw_view(more.a), vb = raw_view(more.b);
  for (const auto* stack : {&first, &more.stack}) {
    s->stage(va, vb);
    s->process(stack->data(), static_cast<std::int64_t>(stack->size()), 0);
    s->unstage();
  }
  const plexus::MatrixData c = s->finish();
  EXPECT_LE(rel_error(std::vector<double>(c.begin(), c.end()), plexus::test::dense_stack(both)), 1e-13);
}

TEST(CudaPlugin, LoadsAndSaysWhetherItCanRun) {
  if (!PLEXUS_HAVE_CUDA) GTEST_SKIP() << "this build has no cuda plugin (no nvcc at configure time)";
  load(PLEXUS_KERNELS_CUDA_PATH);
  const auto* e = Registry::global().find(ComponentKind::Kernel, "cuda");
  ASSERT_NE(e, nullptr);
  ASSERT_TRUE(static_cast<bool>(e->descriptor.unavailable));
  const std::string why = e->descriptor.unavailable();
  if (why.empty()) {
    // A GPU is here: the kernel is made on it and works on device memory.
    auto k = make("cuda");
    EXPECT_EQ(k->memory_space(), plexus::MemorySpace::Device);
    auto p = random_stack(500, {5, 23, 7}, 5);
    auto s = k->begin(plexus::MatrixData(p.c.begin(), p.c.end()), 1);
    const plexus::PanelView va = raw_view(p.a), vb = raw_view(p.b);
    s->stage(va, vb);
    s->process(p.stack.data(), static_cast<std::int64_t>(p.stack.size()), 0);
    s->unstage();
    const plexus::MatrixData c = s->finish();
    auto r = make("reference");
    auto rs = r->begin(plexus::MatrixData(p.c.begin(), p.c.end()), 1);
    rs->stage(va, vb);
    rs->process(p.stack.data(), static_cast<std::int64_t>(p.stack.size()), 0);
    rs->unstage();
    const plexus::MatrixData expect = rs->finish();
    EXPECT_LE(rel_error(std::vector<double>(c.begin(), c.end()), std::vector<double>(expect.begin(), expect.end())),
              1e-13);
    return;
  }
  // No device: the reason names the problem, and making the kernel refuses with it.
  EXPECT_TRUE(contains(why, "no CUDA device")) << why;
  try {
    make("cuda");
    ADD_FAILURE() << "the cuda kernel was made without a device";
  } catch (const plexus::UnavailableError& err) {
    EXPECT_EQ(err.where(), "Kernel/cuda");
    EXPECT_TRUE(contains(err.what(),
                         "kernel 'cuda' (plugin kernels_cuda) cannot be used on this machine: no CUDA "
                         "device"))
        << err.what();
  }
}

TEST(CudaPlugin, ParametersAreDocumented) {
  if (!PLEXUS_HAVE_CUDA) GTEST_SKIP() << "this build has no cuda plugin (no nvcc at configure time)";
  load(PLEXUS_KERNELS_CUDA_PATH);
  const auto* e = Registry::global().find(ComponentKind::Kernel, "cuda");
  ASSERT_NE(e, nullptr);
  auto valid = e->descriptor.valid_parameters();
  for (const char* name : {"Device", "Threads", "Streams", "BatchSize"}) {
    ASSERT_TRUE(valid->isParameter(name)) << name;
    EXPECT_FALSE(valid->getEntry(name).docString().empty()) << name;
  }
  EXPECT_EQ(valid->get<std::string>("Device"), "auto");
}

}  // namespace
