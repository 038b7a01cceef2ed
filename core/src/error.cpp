#include "plexus/error.hpp"

namespace plexus {

Error::Error(std::string where, const std::string& what) : std::runtime_error(what), where_(std::move(where)) {}
Error::~Error() = default;
InputError::~InputError() = default;
UnavailableError::~UnavailableError() = default;

}  // namespace plexus
