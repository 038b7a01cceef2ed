#include "text_reader.hpp"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
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

TextReader::TextReader(const std::string& path, const std::string& what) : path_(path), what_(what) {
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

bool TextReader::fill() {
  if (!pending_.empty())
    throw InputError(path_, what_ + " " + path_ + ", line " + std::to_string(lines_ + 1) + ": " + pending_);
  if (at_end_) return false;
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

void TextReader::rewind() {
  std::rewind(file_);
  begin_ = end_ = 0;
  lines_ = 0;
  at_end_ = false;
  pending_.clear();
  start();
}

}  // namespace plexus::detail
