#pragma once
// Helpers of the input-reader tests: temporary files, plain or gzip-compressed, and the shared
// data folder (PLEXUS_TEST_DATA_DIR, /work/shared/data beside the checkout by default).
#include <unistd.h>
#include <zlib.h>

#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <sys/stat.h>

namespace plexus::test {

inline std::string temp_path(const std::string& name) {
  return "/tmp/plexus_test_" + std::to_string(::getpid()) + "_" + name;
}

/// Writes `bytes` as they are to a temporary file; returns its path.
inline std::string write_plain(const std::string& name, const std::string& bytes) {
  const std::string path = temp_path(name);
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

/// Writes `text` gzip-compressed to a temporary file; returns its path.
inline std::string write_gz(const std::string& name, const std::string& text) {
  const std::string path = temp_path(name);
  gzFile f = gzopen(path.c_str(), "wb");
  if (f == nullptr) throw std::runtime_error("cannot write " + path);
  if (!text.empty() && gzwrite(f, text.data(), static_cast<unsigned>(text.size())) != static_cast<int>(text.size()))
    throw std::runtime_error("gzwrite failed on " + path);
  gzclose(f);
  return path;
}

inline std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

/// The decompressed contents of a gzip file (zlib's gzread, not plexus's reader).
inline std::string gunzip(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (f == nullptr) throw std::runtime_error("cannot open " + path);
  std::string out;
  char buf[1 << 16];
  int got = 0;
  while ((got = gzread(f, buf, sizeof(buf))) > 0) out.append(buf, static_cast<std::size_t>(got));
  gzclose(f);
  if (got < 0) throw std::runtime_error("gzread failed on " + path);
  return out;
}

/// A file of the shared data folder, or "" when it is not there.
inline std::string data_file(const std::string& relative) {
#ifdef PLEXUS_TEST_DATA_DIR
  const std::string path = std::string(PLEXUS_TEST_DATA_DIR) + "/" + relative;
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) return path;
#else
  (void)relative;
#endif
  return "";
}

}  // namespace plexus::test
