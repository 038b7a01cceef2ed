#pragma once
// The collectives components a suite runs through: every one the registry finds (core's 'mpi'
// among them), then the specs of PLEXUS_CONFORMANCE_EXTRA; PLEXUS_CONFORMANCE_ONLY replaces the
// list (conformance_specs.hpp). Shared by the collectives conformance suite and the solvers'
// suites that must hold on every component.
#include <string>
#include <vector>

#include "conformance_specs.hpp"
#include "plexus/collectives.hpp"
#include "plexus/comm_pool.hpp"
#include "plexus/parameters.hpp"
#include "plexus/registry.hpp"

namespace plexus::test {

inline std::vector<Spec> collectives_specs() {
  Registry::global().load_default();
  std::vector<Spec> out;
  for (const auto& name : Registry::global().names(ComponentKind::Collectives)) out.push_back(Spec{name, name, {}});
  return specs_under_test(out);
}

/// Runs f(component) for every component under test, bound to a pool of its own that is released
/// afterwards (collectively: every rank runs the same list). Call inside a GoogleTest test.
template <class F>
void for_each_collectives_component(F&& f) {
  for (const auto& spec : collectives_specs()) {
    SCOPED_TRACE("collectives " + spec.text);
    ParameterList p(spec.name);
    for (const auto& kv : spec.params) apply_override(p, kv);
    auto c = Registry::global().make_collectives(spec.name, p, "Communication/" + spec.name);
    CommPool pool;
    c->bind(pool);
    f(*c);
    pool.release();
  }
}

}  // namespace plexus::test
