// The local backend conformance suite's fixture and helpers, shared by its sources
// (test_kernel_conformance.cpp: raw stacks through a session; test_kernel_conformance_local.cpp:
// through core's LocalProduct). One suite, instantiated once for every backend under test.
#pragma once

#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "conformance_specs.hpp"
#include "core/local_product_testing.hpp"
#include "plexus/error.hpp"
#include "plexus/kernel.hpp"
#include "plexus/layout.hpp"
#include "plexus/local_multiply.hpp"
#include "plexus/memory.hpp"
#include "plexus/panel.hpp"
#include "plexus/parameters.hpp"
#include "plexus/registry.hpp"
#include "raw_stacks.hpp"

namespace plexus::test::kernel_conformance {

using plexus::test::dense_of;
using plexus::test::dense_stack;
using plexus::test::mark_first_products;
using plexus::test::random_stack;
using plexus::test::raw_view;
using plexus::test::RawProblem;
using plexus::test::rel_error;

using plexus::BlockLayout;
using plexus::BlockSizes;
using plexus::Kernel;
using plexus::KernelSession;
using plexus::MatrixData;
using plexus::Panel;
using plexus::PanelView;
using plexus::StackEntry;
using plexus::test::Spec;

inline constexpr double kTol = 1e-13;
inline const std::vector<int> kOddSizes = {1, 5, 13, 23, 32};

// The backends under test.
inline const std::vector<Spec>& backends() {
  static const std::vector<Spec> list = [] {
    plexus::Registry::global().load_default();
    std::vector<Spec> out;
    for (const auto* e : plexus::Registry::global().list(plexus::ComponentKind::Kernel))
      out.push_back(Spec{e->descriptor.name, e->descriptor.name, {}});
    auto specs = plexus::test::specs_under_test(out);
    std::string names;
    for (const auto& s : specs) names += (names.empty() ? "" : ", ") + s.text;
    std::printf("local backends under test: %s\n", names.c_str());
    return specs;
  }();
  return list;
}

inline std::unique_ptr<Kernel> make(const Spec& s) {
  plexus::ParameterList p(s.name);
  for (const auto& kv : s.params) plexus::apply_override(p, kv);
  return plexus::Registry::global().make_kernel(s.name, p, "Kernel/" + s.name);
}

inline std::vector<double> to_vector(const MatrixData& d) { return std::vector<double>(d.begin(), d.end()); }
inline MatrixData to_data(const std::vector<double>& v) { return MatrixData(v.begin(), v.end()); }

// ---- raw stacks through a session -------------------------------------------------------------

/// One session, one tick, the stack in slices of `slice` entries from slot 0.
inline std::vector<double> run_session(Kernel& k, const RawProblem& p, std::size_t slice = 4096) {
  auto s = k.begin(to_data(p.c), 1);
  s->stage(raw_view(p.a), raw_view(p.b));
  for (std::size_t i = 0; i < p.stack.size(); i += slice)
    s->process(p.stack.data() + i, static_cast<std::int64_t>(std::min(slice, p.stack.size() - i)), 0);
  s->unstage();
  return to_vector(s->finish());
}

class BackendConformance : public testing::TestWithParam<Spec> {
 protected:
  void SetUp() override {
    // A backend that cannot run on this machine (a GPU kernel without a GPU) is skipped, saying why.
    const auto* e = plexus::Registry::global().find(plexus::ComponentKind::Kernel, GetParam().name);
    if (e != nullptr && e->descriptor.unavailable) {
      const std::string why = e->descriptor.unavailable();
      if (!why.empty()) GTEST_SKIP() << GetParam().text << " cannot run here: " << why;
    }
    // So is a variant this machine cannot run (cpu:Backend=avx512 on a CPU without AVX-512F).
    try {
      make(GetParam());
    } catch (const plexus::UnavailableError& err) {
      GTEST_SKIP() << GetParam().text << " cannot run here: " << err.what();
    }
  }
  std::unique_ptr<Kernel> kernel() const { return make(GetParam()); }
};

}  // namespace plexus::test::kernel_conformance
