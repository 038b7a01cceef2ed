#include "text_reader.hpp"

#include <libdeflate.h>
#include <sys/stat.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <new>

#include "plexus/error.hpp"
#include "plexus/input.hpp"

namespace plexus::detail {

namespace {
constexpr std::size_t kBufferBytes = 1 << 16;
constexpr unsigned char kMagic0 = 0x1f, kMagic1 = 0x8b;
// windowBits for inflateInit2: the largest window, and a gzip header and trailer (+16).
constexpr int kGzipWindowBits = 16 + MAX_WBITS;
}  // namespace

struct TextReader::Gzip {
  z_stream stream{};
  std::vector<unsigned char> input = std::vector<unsigned char>(kBufferBytes);
  bool in_member = true;  // inside a gzip member (its trailer not yet read)
  ~Gzip() { inflateEnd(&stream); }
};

TextReader::TextReader(const std::string& path, const std::string& what, std::size_t whole_limit)
    : path_(path), what_(what), whole_limit_(whole_limit) {
  input::check_input_file(path, what);
  errno = 0;
  file_ = std::fopen(path.c_str(), "rb");
  if (file_ == nullptr) throw InputError(path, "cannot open " + what + " '" + path + "': " + std::strerror(errno));
  buffer_.resize(kBufferBytes);
  try {
    start();
  } catch (...) {
    std::fclose(file_);
    throw;
  }
}

TextReader::~TextReader() { std::fclose(file_); }

// Looks at the first two bytes: the gzip magic starts inflate, anything else is read as it is.
void TextReader::start() {
  unsigned char magic[2] = {0, 0};
  const std::size_t got = std::fread(magic, 1, 2, file_);
  std::rewind(file_);
  if (got == 2 && magic[0] == kMagic0 && magic[1] == kMagic1) {
    compressed_ = true;
    if (whole_) return;  // rewound: the whole text is still in the buffer
    if (!gzip_) {
      gzip_ = std::make_unique<Gzip>();
      const int rc = inflateInit2(&gzip_->stream, kGzipWindowBits);
      if (rc != Z_OK) {
        gzip_.reset();
        if (rc == Z_MEM_ERROR) throw std::bad_alloc();
        throw Error(path_, "zlib's inflateInit2 failed (" + std::to_string(rc) + ")");
      }
    } else {
      inflateReset(&gzip_->stream);
    }
    gzip_->stream.avail_in = 0;
    gzip_->in_member = true;
  }
}

// The whole file into memory, and its text, member by member, into buffer_ through libdeflate,
// with the first `given` bytes of text (given through zlib already) skipped. False, with the file
// and buffer_ as they were, where the file is too large or libdeflate refuses it: the caller reads
// on through zlib, which says what is wrong and where.
bool TextReader::decompress_whole(std::size_t given) {
  struct stat st {};
  if (::fstat(::fileno(file_), &st) != 0 || st.st_size < 18 || static_cast<std::size_t>(st.st_size) > whole_limit_)
    return false;
  const auto size = static_cast<std::size_t>(st.st_size);
  const std::size_t text_limit = 4 * whole_limit_;
  memory::vector<unsigned char, memory::Category::Other> in(size);  // left unset: fread fills it
  const long position = std::ftell(file_);  // zlib's, where it goes on should libdeflate refuse
  if (position < 0 || std::fseek(file_, 0, SEEK_SET) != 0) return false;
  const bool read_all = std::fread(in.data(), 1, size, file_) == size;
  if (std::fseek(file_, position, SEEK_SET) != 0) throw InputError(path_, "cannot seek in " + what_ + " " + path_);
  if (!read_all) return false;
  // The last member's trailer gives its text's size (modulo 2^32): the whole text's for one member.
  const std::size_t last = std::size_t{in[size - 4]} | std::size_t{in[size - 3]} << 8 |
                           std::size_t{in[size - 2]} << 16 | std::size_t{in[size - 1]} << 24;
  if (last > text_limit) return false;  // too long to hold whole (one member: its size exactly)
  // At most deflate's largest ratio (1032 to 1) of the file: a damaged trailer asks for no more.
  memory::vector<char, memory::Category::Other> text(
      std::min({text_limit, std::max<std::size_t>(last, 1), 1032 * size}));
  const std::unique_ptr<libdeflate_decompressor, void (*)(libdeflate_decompressor*)> d(libdeflate_alloc_decompressor(),
                                                                                       libdeflate_free_decompressor);
  if (!d) throw std::bad_alloc();
  std::size_t at = 0, out = 0;
  while (at < size) {
    if (in[at] != kMagic0) return false;  // bytes after the gzip data that are not another member
    std::size_t used = 0, got = 0;
    const libdeflate_result rc = libdeflate_gzip_decompress_ex(d.get(), in.data() + at, size - at, text.data() + out,
                                                               text.size() - out, &used, &got);
    if (rc == LIBDEFLATE_INSUFFICIENT_SPACE) {  // another member, or a size beyond 4 GiB: more room
      if (text.size() >= text_limit) return false;
      text.resize(std::min(text_limit, 2 * text.size()));
      continue;
    }
    if (rc != LIBDEFLATE_SUCCESS) return false;
    at += used;
    out += got;
  }
  if (out < given) return false;  // not the text zlib gave
  text.resize(out);
  buffer_ = std::move(text);
  whole_ = true;
  begin_ = given;
  end_ = buffer_.size();
  return true;
}

bool TextReader::fill() {
  if (!pending_.empty())
    throw InputError(path_, what_ + " " + path_ + ", line " + std::to_string(lines_ + 1) + ": " + pending_);
  if (at_end_ || whole_) return false;  // a whole text was in the buffer whole
  // A gzip file whose text goes on beyond zlib's first buffer (which holds a Matrix Market header:
  // a reader that wants only that decompresses no more) is decompressed whole from here on.
  if (gzip_ && !whole_tried_ && given_ > 0) {
    whole_tried_ = true;
    if (decompress_whole(given_)) return begin_ < end_;
  }
  begin_ = end_ = 0;
  if (gzip_) return fill_gzip();
  end_ = std::fread(buffer_.data(), 1, buffer_.size(), file_);
  if (end_ == 0) {
    if (std::ferror(file_)) pending_ = std::string("reading failed: ") + std::strerror(errno);
    at_end_ = true;
    return fill();
  }
  return true;
}

bool TextReader::fill_gzip() {
  z_stream& z = gzip_->stream;
  z.next_out = reinterpret_cast<Bytef*>(buffer_.data());
  z.avail_out = static_cast<uInt>(buffer_.size());
  // Inflate until some text came out, or the data ends, or it is damaged.
  while (z.avail_out == buffer_.size() && pending_.empty() && !at_end_) {
    if (z.avail_in == 0) {
      const std::size_t got = std::fread(gzip_->input.data(), 1, gzip_->input.size(), file_);
      if (got == 0) {
        if (std::ferror(file_))
          pending_ = std::string("reading failed: ") + std::strerror(errno);
        else if (gzip_->in_member)
          pending_ = "the gzip data is truncated (the file ends inside the compressed stream)";
        else
          at_end_ = true;
        break;
      }
      z.next_in = gzip_->input.data();
      z.avail_in = static_cast<uInt>(got);
    }
    if (!gzip_->in_member) {
      // After a member: another one (its header is checked by inflate), or bytes that are not gzip.
      if (z.next_in[0] != kMagic0) {
        pending_ = "the file goes on after the end of its gzip data with bytes that are not gzip data";
        break;
      }
      inflateReset(&z);
      gzip_->in_member = true;
    }
    const int rc = inflate(&z, Z_NO_FLUSH);
    if (rc == Z_STREAM_END) {
      gzip_->in_member = false;
    } else if (rc == Z_MEM_ERROR) {
      throw std::bad_alloc();
    } else if (rc == Z_DATA_ERROR || rc == Z_NEED_DICT || rc == Z_STREAM_ERROR) {
      pending_ = std::string("the gzip data is corrupt (zlib: ") + (z.msg != nullptr ? z.msg : "inflate failed") + ")";
    }
    // Z_OK, and Z_BUF_ERROR (no progress until more input is read): go on.
  }
  end_ = buffer_.size() - z.avail_out;
  given_ += end_;
  if (end_ > 0) return true;
  return fill();  // nothing came out: the end, or the error
}

bool TextReader::getline(std::string& line) {
  line.clear();
  bool any = false;
  for (;;) {
    if (begin_ == end_ && !fill()) {
      if (any) ++lines_;
      return any;
    }
    any = true;
    const char* start = buffer_.data() + begin_;
    const char* stop = buffer_.data() + end_;
    const char* newline = std::find(start, stop, '\n');
    line.append(start, newline);
    begin_ = static_cast<std::size_t>(newline - buffer_.data());
    if (newline != stop) {
      ++begin_;
      ++lines_;
      return true;
    }
  }
}

bool TextReader::getline(std::string_view& line) {
  if (begin_ < end_) {
    const char* const start = buffer_.data() + begin_;
    if (const void* newline = std::memchr(start, '\n', end_ - begin_)) {
      const char* const stop = static_cast<const char*>(newline);
      line = std::string_view(start, static_cast<std::size_t>(stop - start));
      begin_ = static_cast<std::size_t>(stop - buffer_.data()) + 1;
      ++lines_;
      return true;
    }
  }
  if (!getline(spill_)) return false;
  line = spill_;
  return true;
}

void TextReader::rewind() {
  std::rewind(file_);
  begin_ = 0;
  end_ = whole_ ? buffer_.size() : 0;
  given_ = 0;
  lines_ = 0;
  at_end_ = false;
  pending_.clear();
  start();
}

}  // namespace plexus::detail
