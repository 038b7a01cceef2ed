#pragma once
// What a plugin offers: its descriptor, the components' descriptors and the plugin ABI version.
// The registry and the program need only this; a plugin includes plugin.hpp, which adds the
// export macro PLEXUS_PLUGIN (and Boost.DLL, which this header leaves out of every other file).
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "plexus/collectives.hpp"
#include "plexus/comm_strategy.hpp"
#include "plexus/kernel.hpp"
#include "plexus/parameters.hpp"
#include "plexus/solver.hpp"

namespace plexus {

/// Bumped whenever an SDK type that crosses the plugin boundary changes. 20: SolverContext::steps,
/// SolverResult::step_totals (StepTotals), LogScope's StepDetail; 19: LocalProduct's lookup
/// in ProductPlans (a member more: strategies construct products), plans_not_kept in
/// LocalMultiplyStats and MultiplyReport; 18: Distribution's
/// empty_local_view (a member more), LocalProduct's plan key compared in place; 17: Figures, in place of
/// std::map, for MultiplyReport::extra and OperationReport's predicted and extra; 16: Context's log
/// (LogScope, totals, OperationReport::count) and HostKernel::dense_min_size(DenseBlocks), which
/// came in under 15; 15: StackEntry::first,
/// Kernel::first_product_writes, ExchangeRoute (exchange_blocks, exchange_values); 14: ProductPlans
/// (LocalProduct, MultiplyTask, MultiplyReport, Context); 13: LocalProduct's
/// expected_values and set_progress, Traffic::test; 12:
/// ComponentDescriptor::unavailable, KernelSession::norms; 11: RoleCounts::local_bytes_*,
/// MultiplyTask::beta(); 10: SolverResult::series; 9: Grid::pool(); 8: SolverResult::history,
/// MultiplyAlgorithm::square_and_cube; 7: OperationRecorder names its progress::Operation; 6: grids
/// with layers; 5: local backends own C (Kernel::begin); 4: no operation flags; 3: collectives
/// components; 2: the multiply driver.
inline constexpr int kAbiVersion = 20;

enum class ComponentKind { Comm, Kernel, Distribution, Solver, Collectives };
const char* kind_name(ComponentKind k);

/// One component a plugin offers. Exactly the factory of its kind is set.
struct ComponentDescriptor {
  ComponentKind kind = ComponentKind::Comm;
  std::string name;
  std::string summary;
  /// The valid parameters of the component's sublist, with documentation, defaults and validators.
  std::function<ParameterListPtr()> valid_parameters;
  /// Why the component cannot be used on this machine (e.g. "no CUDA device"), or "" when it
  /// can; unset: always usable. `plexus plugins` shows the reason, and the registry refuses to
  /// make the component with it (UnavailableError), before its factory runs.
  std::function<std::string()> unavailable;
  /// Factories; each receives the validated, default-filled sublist.
  std::function<std::unique_ptr<CommStrategy>(const ParameterList&)> make_comm;
  std::function<std::unique_ptr<Kernel>(const ParameterList&)> make_kernel;
  std::function<std::unique_ptr<Solver>(const ParameterList&)> make_solver;
  std::function<std::unique_ptr<Collectives>(const ParameterList&)> make_collectives;
};

struct PluginDescriptor {
  std::string name;
  std::string version;
  std::vector<ComponentDescriptor> components;
};

}  // namespace plexus
