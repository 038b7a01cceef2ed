#pragma once
// Output files, written where the user asked without clobbering what is not a regular file.
//
// - A regular file, or a path that does not exist yet, is written through a temporary file in the
//   same directory that is renamed into place: a reader never sees half a file, and a failed
//   write leaves the old file as it was.
// - A character device, FIFO or socket (/dev/null, /dev/stdout, a named pipe) is written
//   directly and stays what it is.
// - "-" is standard output.
// - A directory, a block device, or a path whose directory is missing or not writable is refused
//   with an InputError naming the parameter, by check(), which programs call before any work.
#include <cstdio>
#include <string>

namespace plexus::output {

enum class Kind { File, Stream, Stdout };

struct Target {
  std::string path;
  Kind kind = Kind::File;
};

/// What `path` is and whether it can be written; throws InputError(where, ...) if not. Local (no
/// MPI), nothing is created.
Target check(const std::string& path, const std::string& where);

/// One output being written: open, write to file(), then commit(). Without commit() (an error on
/// the way), the temporary file of a regular target is removed and the old file stays.
class Writer {
 public:
  Writer(const std::string& path, const std::string& where);  ///< check()s, then opens
  ~Writer();
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;
  std::FILE* file() { return file_; }
  /// Flushes and closes, renames a temporary into place; throws Error if any write failed.
  void commit();

 private:
  Target target_;
  std::string where_, tmp_;
  std::FILE* file_ = nullptr;
};

/// Writes `text` to `path` as above.
void write_text(const std::string& path, const std::string& text, const std::string& where);

}  // namespace plexus::output
