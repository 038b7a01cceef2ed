#pragma once
// Lines of an input text file, plain or gzip-compressed. Private to core: the Matrix Market and
// CP2K CSR readers share it.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace plexus::detail {

/// Reads a file line by line. A file that starts with the gzip magic bytes 1f 8b, whatever its
/// name, is decompressed through zlib's inflate (several gzip members in a row, as `cat a.gz b.gz`
/// makes, are read one after the other); any other file is read as it is. Lines are what
/// std::getline gives: without the '\n', the last one also when no '\n' ends it, every other byte
/// (NUL, '\r') kept.
class TextReader {
 public:
  /// Opens `path` (checked first by input::check_input_file); `what` names the file in messages
  /// ("Matrix Market file"). Throws InputError naming the file when it cannot be opened.
  TextReader(const std::string& path, const std::string& what);
  ~TextReader();
  TextReader(const TextReader&) = delete;
  TextReader& operator=(const TextReader&) = delete;

  /// The next line into `line`; false at the end of the file. Corrupt or truncated gzip data
  /// throws InputError "<what> <path>, line <n>: ..." once the lines before the damage are read:
  /// n is the line the data broke off in.
  bool getline(std::string& line);
  /// Back to the first line.
  void rewind();
  /// Whether the file is gzip-compressed.
  bool compressed() const { return gzip_ != nullptr; }

 private:
  struct Gzip;
  // Refills the buffer with the next bytes of text; false at the end of the data.
  bool fill();
  bool fill_gzip();
  void start();

  std::string path_, what_;
  std::FILE* file_ = nullptr;
  std::unique_ptr<Gzip> gzip_;
  std::vector<char> buffer_;
  std::size_t begin_ = 0, end_ = 0;
  std::int64_t lines_ = 0;  // lines given so far
  bool at_end_ = false;
  std::string pending_;  // an error met after text that is still to be given
};

}  // namespace plexus::detail
