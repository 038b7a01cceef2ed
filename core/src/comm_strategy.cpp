#include "plexus/comm_strategy.hpp"

#include <string>

#include "plexus/error.hpp"
#include "plexus/registry.hpp"

namespace plexus {

std::string operation_name(Operation op) {
  switch (op) {
    case OpMultiply: return "multiply";
    case OpCirculate: return "circulate";
    case OpAllreduceSum: return "allreduce_sum";
  }
  return "?";
}

CommStrategy::~CommStrategy() = default;

void CommStrategy::missing_operation(Operation op) const {
  std::string list;
  for (const auto& n : Registry::global().providers(op)) list += (list.empty() ? "" : ", ") + n;
  throw InputError("Communication/Strategy", "strategy '" + name() + "' does not provide the operation '" +
                                                 operation_name(op) + "'" +
                                                 (list.empty() ? std::string(" (no loaded strategy does)")
                                                               : "; strategies that do: " + list));
}

MultiplyReport CommStrategy::multiply(double alpha, const DistMatrix& a, const DistMatrix& b, double beta,
                                      DistMatrix& c, Kernel& kernel, const MultiplyOptions& options) {
  return plexus::multiply(*this, kernel, Trans::N, Trans::N, alpha, a, b, beta, c, options);
}

Panel CommStrategy::run(MultiplyTask&) { missing_operation(OpMultiply); }

}  // namespace plexus
