#include "plexus/comm_strategy.hpp"

#include <string>

#include "plexus/error.hpp"

namespace plexus {

CommStrategy::~CommStrategy() = default;

MultiplyReport CommStrategy::multiply(double alpha, const DistMatrix& a, const DistMatrix& b, double beta,
                                      DistMatrix& c, Kernel& kernel, const MultiplyOptions& options) {
  return plexus::multiply(*this, kernel, Trans::N, Trans::N, alpha, a, b, beta, c, options);
}

}  // namespace plexus
