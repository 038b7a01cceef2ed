#pragma once
// Lines of an input text file, plain or gzip-compressed. Private to core: the Matrix Market and
// CP2K CSR readers share it.
#include <charconv>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "plexus/memory.hpp"

namespace plexus::detail {

/// Reads a file line by line. A file that starts with the gzip magic bytes 1f 8b, whatever its
/// name, is decompressed (several gzip members in a row, as `cat a.gz b.gz` makes, are read one
/// after the other); any other file is read as it is. Lines are what std::getline gives: without
/// the '\n', the last one also when no '\n' ends it, every other byte (NUL, '\r') kept.
///
/// A gzip file is read through zlib's inflate a buffer (64 KiB of text) at a time. Where its text
/// goes on beyond the first buffer and the file has at most `whole_limit` bytes (its text at most
/// four times that), the rest is decompressed whole by libdeflate, 2.5 times as fast (h2o-32's H:
/// 11.5 against 28.5 ms), so that a reader of a Matrix Market header alone decompresses no more
/// than before. A file libdeflate refuses (damaged, truncated, followed by bytes that are not
/// gzip) goes on through zlib, which gives the messages below.
class TextReader {
 public:
  static constexpr std::size_t kWholeGzipBytes = std::size_t{64} << 20;
  /// Opens `path` (checked first by input::check_input_file); `what` names the file in messages
  /// ("Matrix Market file"). Throws InputError naming the file when it cannot be opened.
  TextReader(const std::string& path, const std::string& what, std::size_t whole_limit = kWholeGzipBytes);
  ~TextReader();
  TextReader(const TextReader&) = delete;
  TextReader& operator=(const TextReader&) = delete;

  /// The next line into `line`; false at the end of the file. Corrupt or truncated gzip data
  /// throws InputError "<what> <path>, line <n>: ..." once the lines before the damage are read:
  /// n is the line the data broke off in.
  bool getline(std::string& line);
  /// The same as a view, valid until the next call: into the buffer where the line lies in it
  /// whole (no copy), else into a copy the reader keeps.
  bool getline(std::string_view& line);
  /// Back to the first line.
  void rewind();
  /// Whether the file is gzip-compressed.
  bool compressed() const { return compressed_; }
  /// Whether the rest of its text was decompressed whole (libdeflate), not a buffer at a time.
  bool whole() const { return whole_; }

 private:
  struct Gzip;
  // Refills the buffer with the next bytes of text; false at the end of the data.
  bool fill();
  bool fill_gzip();
  void start();
  bool decompress_whole(std::size_t given);

  std::string path_, what_;
  std::FILE* file_ = nullptr;
  std::unique_ptr<Gzip> gzip_;
  std::size_t whole_limit_;
  bool compressed_ = false, whole_ = false;  // whole_: buffer_ holds all of the text
  bool whole_tried_ = false;                 // decompress_whole was tried (once a file)
  std::size_t given_ = 0;                    // bytes of text inflate gave
  // Pooled and default-initialised (plexus/memory.hpp): a whole text of megabytes would otherwise be
  // cleared before libdeflate writes it, and fault in fresh 4 KB pages (11-14 us each on some
  // guests) where the pool gives pages already mapped, or huge pages from 4 MB on.
  memory::vector<char, memory::Category::Other> buffer_;
  std::size_t begin_ = 0, end_ = 0;
  std::int64_t lines_ = 0;  // lines given so far
  bool at_end_ = false;
  std::string pending_;  // an error met after text that is still to be given
  std::string spill_;    // getline(std::string_view&)'s line when it spans two buffers
};

/// White space as std::isspace has it in the "C" locale, which plexus never changes: ' ', '\t',
/// '\n', '\v', '\f', '\r'. Inline, where std::isspace is a call into the C library for every byte
/// of a file (9 % of reading a Matrix Market file).
constexpr bool is_space(char ch) { return ch == ' ' || (ch >= '\t' && ch <= '\r'); }

/// The readers' fast paths for a whole field of a line: true with the value when std::from_chars
/// reads all of it and it is finite. That value is strtod's (both round correctly), got in about a
/// quarter of the time; strtod had taken 15 % of reading a Matrix Market file. Anything else (a
/// leading '+', hexadecimal, a value out of range, not a number at all) gives false, and the
/// caller reads the field as before, with its messages.
inline bool parse_finite(std::string_view field, double& value) {
  const char* const end = field.data() + field.size();
  const auto [stop, ec] = std::from_chars(field.data(), end, value);
  return ec == std::errc() && stop == end && std::isfinite(value);
}
/// The same for a decimal integer (strtoll's value).
inline bool parse_integer(std::string_view field, std::int64_t& value) {
  const char* const end = field.data() + field.size();
  const auto [stop, ec] = std::from_chars(field.data(), end, value);
  return ec == std::errc() && stop == end;
}

/// The common entry line of the Matrix Market and CP2K CSR files, "row col value" (any white space
/// around and between), read in one pass: true with the indices as written (1-based; the caller
/// checks their range) and a finite value, where std::from_chars reads each field whole, up to the
/// white space after it. These are the values the readers' field-by-field way gives (the fields
/// split at white space, then parse_integer and parse_finite); any other line (blank, a comment,
/// a '+' or hexadecimal spelling, a field more or less) gives false and goes that way, which says
/// what is wrong. The split's loop over the characters and a copy of each line had been a third
/// of reading h2o-32's files.
inline bool parse_row_col_value(std::string_view line, std::int64_t& row, std::int64_t& col, double& value) {
  const char* p = line.data();
  const char* const end = p + line.size();
  const auto skip = [&] {
    while (p < end && is_space(*p)) ++p;
  };
  const auto ends_field = [&](const char* q) { return q == end || is_space(*q); };
  std::int64_t* const index[2] = {&row, &col};
  for (std::int64_t* x : index) {
    skip();
    const auto [q, ec] = std::from_chars(p, end, *x);
    if (ec != std::errc() || !ends_field(q)) return false;
    p = q;
  }
  skip();
  const auto [q, ec] = std::from_chars(p, end, value);
  if (ec != std::errc() || !ends_field(q) || !std::isfinite(value)) return false;
  p = q;
  skip();
  return p == end;
}

}  // namespace plexus::detail
