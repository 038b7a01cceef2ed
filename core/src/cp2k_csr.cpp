#include "plexus/cp2k_csr.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <new>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "local_blocks.hpp"
#include "plexus/distribution.hpp"
#include "plexus/error.hpp"
#include "plexus/input.hpp"
#include "plexus/memory.hpp"
#include "plexus/mpi.hpp"
#include "root_scatter.hpp"
#include "text_reader.hpp"

namespace plexus {

// The entries of one file, in the order of its lines (32 bytes each).
struct Cp2kCsrEntries {
  memory::vector<detail::Entry, memory::Category::Other> entries;
};

namespace {

using input::quoted_excerpt;

constexpr const char* kWhat = "CP2K CSR file";

[[noreturn]] void fail(const std::string& path, std::int64_t line, const std::string& what) {
  throw InputError(path, std::string(kWhat) + " " + path + ", line " + std::to_string(line) + ": " + what);
}

// The white-space separated fields of `text` (at most four are looked at).
int split(const std::string& text, std::string fields[4]) {
  int count = 0;
  std::size_t i = 0;
  const std::size_t n = text.size();
  while (count < 4) {
    while (i < n && detail::is_space(text[i])) ++i;
    if (i == n) break;
    const std::size_t start = i;
    while (i < n && !detail::is_space(text[i])) ++i;
    fields[count++].assign(text, start, i - start);  // in the room the field had on the line before
  }
  return count;
}

std::int64_t parse_index(const std::string& tok, const char* what, const std::string& path, std::int64_t line) {
  if (std::int64_t v = 0; detail::parse_integer(tok, v) && v >= 1) return v - 1;
  const char* s = tok.c_str();
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(s, &end, 10);
  if (end == s || *end != '\0')
    fail(path, line, std::string(what) + " index " + quoted_excerpt(tok) + " is not an integer");
  if (errno == ERANGE)
    fail(path, line, std::string(what) + " index " + quoted_excerpt(tok) + " is outside the range of int64");
  if (v < 1)
    fail(path, line, std::string(what) + " index " + quoted_excerpt(tok) + " is below 1 (CP2K CSR indices start at 1)");
  return v - 1;
}

double parse_value(const std::string& tok, const std::string& path, std::int64_t line) {
  if (double v = 0; detail::parse_finite(tok, v)) return v;
  const char* s = tok.c_str();
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(s, &end);
  if (end == s || *end != '\0') fail(path, line, "value " + quoted_excerpt(tok) + " is not a number");
  if (!std::isfinite(v))
    fail(path, line,
         "value " + quoted_excerpt(tok) +
             (errno == ERANGE ? " is outside the range of double" : " is not a finite number") +
             "; matrix values must be finite");
  return v;
}

// Calls entry(row, col, value, line) (0-based indices) for every entry line of the file.
template <class F>
void scan(detail::TextReader& in, const std::string& path, F&& entry) {
  std::string text, fields[4];
  std::string_view view;
  std::int64_t line = 0;
  while (in.getline(view)) {
    ++line;
    // The common line in one pass; any other goes field by field, with the messages.
    std::int64_t row = 0, col = 0;
    if (double v = 0; detail::parse_row_col_value(view, row, col, v) && row >= 1 && col >= 1) {
      entry(row - 1, col - 1, v, line);
      continue;
    }
    text.assign(view);
    const int count = split(text, fields);
    if (count == 0) continue;
    if (count != 3) fail(path, line, "expected 'row col value', found " + quoted_excerpt(text));
    const std::int64_t r = parse_index(fields[0], "row", path, line);
    const std::int64_t c = parse_index(fields[1], "column", path, line);
    entry(r, c, parse_value(fields[2], path, line), line);
  }
}

// The header of one file; its entries kept while they take at most `keep_bytes`.
Cp2kCsrHeader scan_header(const std::string& path, std::size_t keep_bytes) {
  detail::TextReader in(path, kWhat);
  Cp2kCsrHeader h;
  bool lower = false, upper = false;
  const std::size_t keep_max = keep_bytes / sizeof(detail::Entry);
  auto kept = keep_max > 0 ? std::make_shared<Cp2kCsrEntries>() : nullptr;
  scan(in, path, [&](std::int64_t r, std::int64_t c, double v, std::int64_t line) {
    h.dimension = std::max({h.dimension, r + 1, c + 1});
    lower = lower || r > c;
    upper = upper || r < c;
    ++h.entries;
    if (!kept) return;
    if (kept->entries.size() == keep_max) {  // beyond the room: the file is read again
      kept.reset();
      return;
    }
    try {
      kept->entries.push_back({r, c, v, line});
    } catch (const std::bad_alloc&) {  // no memory for them: the file is read again
      kept.reset();
    }
  });
  if (h.entries == 0) fail(path, 1, "no entries (expected lines 'row col value')");
  h.mirrored = !(lower && upper);
  if (kept) kept->entries.shrink_to_fit();
  h.kept = std::move(kept);
  return h;
}

}  // namespace

Cp2kCsrHeader read_cp2k_csr_header(const std::string& path) { return scan_header(path, kCp2kKeepBytes); }

Cp2kCsrHeader read_cp2k_csr_header(const std::string& path, MPI_Comm comm, std::size_t keep_bytes) {
  return read_cp2k_csr_headers({path}, comm, keep_bytes).front();  // scanned by rank 0
}

std::vector<Cp2kCsrHeader> read_cp2k_csr_headers(const std::vector<std::string>& paths, MPI_Comm comm,
                                                 std::size_t keep_bytes) {
  const int ranks = mpi::size(comm), rank = mpi::rank(comm);
  std::vector<Cp2kCsrHeader> headers(paths.size());
  std::vector<detail::Outcome> outcomes(paths.size());
  {
    // This rank's files: the last scanned here, each other one by a thread of its own (no MPI call
    // in them), joined below whatever happens.
    struct Scans {
      std::vector<std::thread> threads;
      Scans() = default;
      Scans(const Scans&) = delete;
      Scans& operator=(const Scans&) = delete;
      ~Scans() {
        for (std::thread& t : threads) t.join();
      }
    } scans;
    std::vector<std::size_t> mine;
    for (std::size_t f = 0; f < paths.size(); ++f)
      if (detail::reading_rank(f, ranks) == rank) mine.push_back(f);
    for (std::size_t q = 0; q < mine.size(); ++q) {
      const std::size_t f = mine[q];
      auto scan_file = [&, f] {
        outcomes[f] = detail::attempt([&] { headers[f] = scan_header(paths[f], keep_bytes); });
      };
      if (q + 1 == mine.size()) {
        scan_file();
        continue;
      }
      try {
        scans.threads.emplace_back(scan_file);
      } catch (const std::exception&) {  // no thread: scanned here
        scan_file();
      }
    }
  }
  for (std::size_t f = 0; f < paths.size(); ++f) {
    const int root = detail::reading_rank(f, ranks);
    detail::share(outcomes[f], comm, root);
    Cp2kCsrHeader& h = headers[f];
    std::int64_t fields[3] = {h.dimension, h.entries, h.mirrored ? 1 : 0};
    mpi::check(MPI_Bcast(fields, 3, MPI_INT64_T, root, comm), "MPI_Bcast");
    h.dimension = fields[0];
    h.entries = fields[1];
    h.mirrored = fields[2] != 0;
  }
  return headers;
}

DistMatrix read_cp2k_csr(const std::string& path, const std::string& name, std::shared_ptr<const Distribution> dist,
                         const BlockLayout& layout, const Cp2kCsrHeader& header, std::size_t chunk_entries) {
  std::vector<DistMatrix> m = read_cp2k_csr_files({path}, {name}, std::move(dist), layout, {header}, chunk_entries);
  return std::move(m.front());
}

std::vector<DistMatrix> read_cp2k_csr_files(const std::vector<std::string>& paths,
                                            const std::vector<std::string>& names,
                                            std::shared_ptr<const Distribution> dist, const BlockLayout& layout,
                                            const std::vector<Cp2kCsrHeader>& headers, std::size_t chunk_entries) {
  if (names.size() != paths.size() || headers.size() != paths.size())
    throw Error("read_cp2k_csr_files", "one name and one header per file: " + std::to_string(paths.size()) +
                                           " files, " + std::to_string(names.size()) + " names, " +
                                           std::to_string(headers.size()) + " headers");
  for (std::size_t f = 0; f < paths.size(); ++f) {
    const Cp2kCsrHeader& header = headers[f];
    if (header.dimension != layout.rows.total() || header.dimension != layout.cols.total())
      throw InputError(paths[f], std::string(kWhat) + " " + paths[f] + " is " + std::to_string(header.dimension) + "x" +
                                     std::to_string(header.dimension) + " but the block sizes cover " +
                                     std::to_string(layout.rows.total()) + "x" + std::to_string(layout.cols.total()));
  }
  // File f's reading rank reads it; the others receive their entries.
  auto read = [&](std::size_t f, detail::RootScatter& scatter) {
    const std::string& path = paths[f];
    const Cp2kCsrHeader& header = headers[f];
    if (header.kept) {  // the scan's entries, checked then: the file is not read again
      for (const detail::Entry& e : header.kept->entries) {
        scatter.put(e);
        if (header.mirrored && e.row != e.col) scatter.put({e.col, e.row, e.value, e.line});
      }
      return;
    }
    detail::TextReader in(path, kWhat);
    scan(in, path, [&](std::int64_t r, std::int64_t c, double v, std::int64_t line) {
      if (r >= header.dimension || c >= header.dimension)
        fail(path, line,
             "entry (" + std::to_string(r + 1) + ", " + std::to_string(c + 1) + ") is outside the dimension " +
                 std::to_string(header.dimension) + " (the file changed while it was read?)");
      scatter.put({r, c, v, line});
      if (header.mirrored && r != c) scatter.put({c, r, v, line});
    });
  };
  // The file's reading rank finds the entry of the line given twice and the first line giving it.
  auto duplicate = [&](std::size_t f, std::int64_t duplicate_line) {
    const std::string& path = paths[f];
    std::pair<std::int64_t, std::int64_t> entry{-1, -1};
    std::int64_t first = 0;
    detail::TextReader in(path, kWhat);
    scan(in, path, [&](std::int64_t r, std::int64_t c, double, std::int64_t line) {
      if (line == duplicate_line) entry = {r, c};
    });
    in.rewind();
    scan(in, path, [&](std::int64_t r, std::int64_t c, double, std::int64_t line) {
      if (first == 0 && std::pair{r, c} == entry) first = line;
    });
    fail(path, duplicate_line,
         "entry (" + std::to_string(entry.first + 1) + ", " + std::to_string(entry.second + 1) +
             ") is given twice, at lines " + std::to_string(first) + " and " + std::to_string(duplicate_line) +
             "; plexus does not add repeated entries up");
  };
  std::vector<detail::MatrixShape> shapes;
  for (const std::string& name : names) shapes.push_back({name, dist, layout});
  return detail::read_matrices(shapes, chunk_entries, read, duplicate);
}

}  // namespace plexus
