#pragma once
// An environment variable set (or unset) for a test's scope, and put back as it was when the
// scope ends, however it ends: an ASSERT that returns early leaves no setting to the next test.
#include <cstdlib>
#include <optional>
#include <string>

namespace plexus::test {

class ScopedEnv {
 public:
  // `value` nullptr: unset for the scope.
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* was = std::getenv(name)) was_ = std::string(was);
    set(value);
  }
  ScopedEnv(const char* name, const std::string& value) : ScopedEnv(name, value.c_str()) {}
  ~ScopedEnv() {
    if (was_)
      ::setenv(name_.c_str(), was_->c_str(), 1);
    else
      ::unsetenv(name_.c_str());
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

  // Another value within the same scope (nullptr: unset); the first one is still what comes back.
  void set(const char* value) const {
    if (value != nullptr)
      ::setenv(name_.c_str(), value, 1);
    else
      ::unsetenv(name_.c_str());
  }

 private:
  std::string name_;
  std::optional<std::string> was_;
};

}  // namespace plexus::test
