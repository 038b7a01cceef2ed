#pragma once
// A fresh directory for a test under the system's temporary directory, removed afterwards. Its
// name holds a prefix and the process id, so that test programs run at once do not share one.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>

namespace plexus::test {

class ScratchDir {
 public:
  explicit ScratchDir(const std::string& prefix)
      : dir(std::filesystem::temp_directory_path() / (prefix + "-" + std::to_string(::getpid()))) {
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
  }
  ~ScratchDir() {
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  /// Writes `text` to the file `name` in the directory; its path.
  std::string write(const std::string& name, const std::string& text) const {
    const std::filesystem::path f = dir / name;
    std::ofstream(f) << text;
    return f.string();
  }

  const std::filesystem::path dir;
};

}  // namespace plexus::test
