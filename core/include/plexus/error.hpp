#pragma once
// Errors in plexus are exceptions that carry what went wrong and where.
#include <stdexcept>
#include <string>

namespace plexus {

/// Base of every error plexus throws. `where` names the component, parameter path, file:line, ...
class Error : public std::runtime_error {
 public:
  Error(std::string where, const std::string& what);
  ~Error() override;  // key function: keeps typeinfo unique in libplexus_core
  const std::string& where() const noexcept { return where_; }

 private:
  std::string where_;
};

/// Bad input from the user (parameters, files, command line). Identical on every rank.
class InputError : public Error {
 public:
  using Error::Error;
  ~InputError() override;
};

/// A component was selected that cannot run on this machine (ComponentDescriptor::unavailable:
/// e.g. a GPU kernel without a GPU). Test suites skip such components with the message.
class UnavailableError : public InputError {
 public:
  using InputError::InputError;
  ~UnavailableError() override;
};

}  // namespace plexus

/// Throws plexus::Error with the source location when the condition is false.
#define PLEXUS_CHECK(cond, msg)                                                               \
  do {                                                                                        \
    if (!(cond))                                                                              \
      throw ::plexus::Error(std::string(__FILE__) + ":" + std::to_string(__LINE__), (msg));   \
  } while (0)
