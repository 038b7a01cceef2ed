#include "plexus/output.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "plexus/error.hpp"

namespace plexus::output {

namespace {

std::string directory_of(const std::string& path) {
  const auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string system_error(const std::string& what) { return what + ": " + std::strerror(errno); }

}  // namespace

Target check(const std::string& path, const std::string& where) {
  if (path.empty()) throw InputError(where, "the output path is empty");
  if (path == "-") return {path, Kind::Stdout};
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) throw InputError(where, "cannot write '" + path + "': it is a directory");
    if (S_ISBLK(st.st_mode)) throw InputError(where, "cannot write '" + path + "': it is a block device");
    if (::access(path.c_str(), W_OK) != 0) throw InputError(where, system_error("cannot write '" + path + "'"));
    if (!S_ISREG(st.st_mode)) return {path, Kind::Stream};  // a character device, FIFO or socket
  } else if (errno != ENOENT) {
    throw InputError(where, system_error("cannot write '" + path + "'"));
  }
  // A regular file or a new one: the temporary file and the rename need a writable directory.
  const std::string dir = directory_of(path);
  struct stat dst {};
  if (::stat(dir.c_str(), &dst) != 0)
    throw InputError(where, system_error("cannot write '" + path + "': directory '" + dir + "'"));
  if (!S_ISDIR(dst.st_mode))
    throw InputError(where, "cannot write '" + path + "': '" + dir + "' is not a directory");
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    throw InputError(where, system_error("cannot write '" + path + "': directory '" + dir + "'"));
  return {path, Kind::File};
}

Writer::Writer(const std::string& path, const std::string& where) : target_(check(path, where)), where_(where) {
  switch (target_.kind) {
    case Kind::Stdout:
      file_ = stdout;
      return;
    case Kind::Stream:
      file_ = std::fopen(path.c_str(), "w");
      if (file_ == nullptr) throw InputError(where, system_error("cannot open '" + path + "'"));
      return;
    case Kind::File:
      tmp_ = path + ".tmp." + std::to_string(::getpid());
      file_ = std::fopen(tmp_.c_str(), "w");
      if (file_ == nullptr) throw InputError(where, system_error("cannot create '" + tmp_ + "'"));
      return;
  }
}

Writer::~Writer() {
  if (file_ == nullptr || file_ == stdout) return;
  std::fclose(file_);
  if (!tmp_.empty()) std::remove(tmp_.c_str());  // not committed: the old file stays
}

void Writer::commit() {
  if (file_ == nullptr) throw Error(where_, "output '" + target_.path + "' committed twice");
  std::FILE* f = file_;
  file_ = nullptr;
  const bool ok = std::ferror(f) == 0;
  if (f == stdout) {
    if (std::fflush(stdout) != 0 || !ok) throw Error(where_, system_error("writing to standard output failed"));
    return;
  }
  const int closed = std::fclose(f);
  if (closed != 0 || !ok) {
    const std::string msg = system_error("writing '" + (tmp_.empty() ? target_.path : tmp_) + "' failed");
    if (!tmp_.empty()) std::remove(tmp_.c_str());
    throw Error(where_, msg);
  }
  if (!tmp_.empty() && std::rename(tmp_.c_str(), target_.path.c_str()) != 0) {
    const std::string msg = system_error("cannot rename '" + tmp_ + "' to '" + target_.path + "'");
    std::remove(tmp_.c_str());
    throw Error(where_, msg);
  }
}

void write_text(const std::string& path, const std::string& text, const std::string& where) {
  Writer w(path, where);
  if (!text.empty()) std::fwrite(text.data(), 1, text.size(), w.file());
  w.commit();
}

}  // namespace plexus::output
