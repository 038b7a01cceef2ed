#pragma once
// Shared by the fuzz targets: an in-memory file for parsers that read a path, and the rule that
// bad input ends in plexus::InputError and nothing else.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <typeinfo>

#include "plexus/error.hpp"

namespace plexus::fuzz {

/// A memfd whose path (/proc/self/fd/N) the file parsers open like any file. Each write replaces
/// the whole content.
class MemoryFile {
 public:
  MemoryFile() : fd_(::memfd_create("plexus-fuzz", 0)) {
    if (fd_ < 0) {
      std::perror("memfd_create");
      std::abort();
    }
    path_ = "/proc/self/fd/" + std::to_string(fd_);
  }
  MemoryFile(const MemoryFile&) = delete;
  MemoryFile& operator=(const MemoryFile&) = delete;
  ~MemoryFile() { ::close(fd_); }

  const std::string& write(const std::uint8_t* data, std::size_t size) {
    if (::ftruncate(fd_, 0) != 0) fail("ftruncate");
    std::size_t done = 0;
    while (done < size) {
      const ssize_t n = ::pwrite(fd_, data + done, size - done, static_cast<off_t>(done));
      if (n <= 0) fail("pwrite");
      done += static_cast<std::size_t>(n);
    }
    return path_;
  }

 private:
  [[noreturn]] static void fail(const char* what) {
    std::perror(what);
    std::abort();
  }
  int fd_;
  std::string path_;
};

/// Runs `parse`: plexus::InputError is the expected answer to bad input; any other exception is a
/// finding (a user's mistake reported as an internal error, or worse), and aborts so that the
/// fuzzer keeps the input. PLEXUS_FUZZ_VERBOSE set in the environment: every outcome is printed.
template <class F>
void expect_input_errors_only(F&& parse) {
  try {
    parse();
  } catch (const InputError& e) {
    if (std::getenv("PLEXUS_FUZZ_VERBOSE") != nullptr) std::fprintf(stderr, "fuzz: input error: %s\n", e.what());
    return;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz: unexpected exception (not plexus::InputError) %s: %s\n", typeid(e).name(), e.what());
    std::abort();
  } catch (...) {
    std::fprintf(stderr, "fuzz: unexpected exception of unknown type\n");
    std::abort();
  }
  if (std::getenv("PLEXUS_FUZZ_VERBOSE") != nullptr) std::fprintf(stderr, "fuzz: accepted\n");
}

}  // namespace plexus::fuzz
