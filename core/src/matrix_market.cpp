#include "plexus/matrix_market.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <new>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "local_blocks.hpp"
#include "plexus/error.hpp"
#include "plexus/input.hpp"
#include "plexus/mpi.hpp"
#include "plexus/output.hpp"
#include "root_scatter.hpp"
#include "text_reader.hpp"

namespace plexus {

namespace {

using input::lower;
using input::quoted_excerpt;

[[noreturn]] void fail(const std::string& path, std::int64_t line, const std::string& what) {
  throw InputError(path, "Matrix Market file " + path + ", line " + std::to_string(line) + ": " + what);
}

bool blank_or_comment(std::string_view s) {
  for (char ch : s) {
    if (ch == '%') return true;
    if (!detail::is_space(ch)) return false;
  }
  return true;
}

using detail::Entry;
using detail::TextReader;
constexpr const char* kWhat = "Matrix Market file";

// Reads the banner and size line; leaves `in` at the first entry. `line` counts lines read.
MatrixMarketHeader read_header(TextReader& in, const std::string& path, std::int64_t& line) {
  std::string text;
  line = 0;
  if (!in.getline(text)) fail(path, 1, "empty file (expected a '%%MatrixMarket' banner)");
  ++line;
  std::istringstream banner(text);
  std::string tag, object, format, field, symmetry;
  banner >> tag >> object >> format >> field >> symmetry;
  if (tag != "%%MatrixMarket")
    fail(path, line,
         "expected '%%MatrixMarket' banner, found " + quoted_excerpt(text) + "; is it a Matrix Market file?");
  MatrixMarketHeader h;
  h.format = lower(format);
  h.field = lower(field);
  h.symmetry = lower(symmetry);
  if (lower(object) != "matrix")
    fail(path, line, "object " + quoted_excerpt(object) + " is not supported (only 'matrix')");
  if (h.format != "coordinate" && h.format != "array")
    fail(path, line, "format " + quoted_excerpt(format) + " is not supported (coordinate or array)");
  if (h.field != "real" && h.field != "integer" && h.field != "double" && h.field != "pattern")
    fail(path, line, "field " + quoted_excerpt(field) + " is not supported (real, integer or pattern)");
  if (h.field == "pattern" && h.format == "array")
    fail(path, line, "an array file gives every value, so it cannot be 'pattern' (a pattern file is 'coordinate')");
  if (h.symmetry != "general" && h.symmetry != "symmetric")
    fail(path, line, "symmetry " + quoted_excerpt(symmetry) + " is not supported (general or symmetric)");
  while (in.getline(text)) {
    ++line;
    if (blank_or_comment(text)) continue;
    std::istringstream size(text);
    std::string extra;
    if (h.format == "coordinate") {
      if (!(size >> h.rows >> h.cols >> h.entries) || (size >> extra))
        fail(path, line, "expected 'rows cols entries', found " + quoted_excerpt(text));
    } else {
      if (!(size >> h.rows >> h.cols) || (size >> extra))
        fail(path, line, "expected 'rows cols', found " + quoted_excerpt(text));
    }
    if (h.rows <= 0 || h.cols <= 0 || h.entries < 0) fail(path, line, "dimensions must be positive");
    if (h.symmetry == "symmetric" && h.rows != h.cols) fail(path, line, "a symmetric matrix must be square");
    // The elements the matrix has (the lower triangle of a symmetric one), unless beyond int64.
    const auto all = input::checked_mul(h.rows, h.cols);
    std::optional<std::int64_t> elements = all;
    if (h.symmetry == "symmetric")
      elements =
          h.rows % 2 == 0 ? input::checked_mul(h.rows / 2, h.rows + 1) : input::checked_mul(h.rows, (h.rows + 1) / 2);
    const std::string shape = std::to_string(h.rows) + " x " + std::to_string(h.cols);
    if (h.format == "array") {
      if (!elements) fail(path, line, "an array of " + shape + " has more values than plexus can count (2^63)");
      h.entries = *elements;
    } else if (elements && h.entries > *elements) {
      fail(path, line,
           "announces " + std::to_string(h.entries) + " entries, more than the " + shape + " matrix has " +
               (h.symmetry == "symmetric" ? "in its lower triangle (" : "elements (") + std::to_string(*elements) +
               ")");
    }
    return h;
  }
  fail(path, line, "missing size line");
}

// The whitespace-separated fields of a line: at most kMaxFields are kept, `count` tells how many
// there are (up to kMaxFields + 1, which means "more").
struct Fields {
  static constexpr int kMaxFields = 3;
  std::string_view field[kMaxFields];
  int count = 0;
};

Fields split(std::string_view text) {
  Fields out;
  const char* p = text.data();
  const char* const end = p + text.size();
  while (out.count <= Fields::kMaxFields) {
    while (p < end && detail::is_space(*p)) ++p;
    if (p == end) break;
    const char* start = p;
    while (p < end && !detail::is_space(*p)) ++p;
    if (out.count < Fields::kMaxFields)
      out.field[out.count] = std::string_view(start, static_cast<std::size_t>(p - start));
    ++out.count;
  }
  return out;
}

// A field of a line (a std::string's text): strtod and strtoll stop at the whitespace after it,
// so the whole field was read when they end at its end.
double parse_number(std::string_view tok, const std::string& path, std::int64_t line) {
  if (double v = 0; detail::parse_finite(tok, v)) return v;
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(tok.data(), &end);
  if (end != tok.data() + tok.size()) fail(path, line, quoted_excerpt(tok) + " is not a number");
  if (!std::isfinite(v))
    fail(path, line,
         "value " + quoted_excerpt(tok) +
             (errno == ERANGE ? " is outside the range of double" : " is not a finite number") +
             "; Matrix Market values must be finite");
  return v;
}

std::int64_t parse_index(std::string_view tok, std::int64_t limit, const char* what, const std::string& path,
                         std::int64_t line) {
  if (std::int64_t v = 0; detail::parse_integer(tok, v) && v >= 1 && v <= limit) return v - 1;
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(tok.data(), &end, 10);
  if (end != tok.data() + tok.size())
    fail(path, line, std::string(what) + " index " + quoted_excerpt(tok) + " is not an integer");
  if (errno == ERANGE || v < 1 || v > limit)
    fail(path, line, std::string(what) + " index " + quoted_excerpt(tok) + " is outside 1.." + std::to_string(limit));
  return v - 1;
}

// The elements of a file, one after the other: a symmetric file's off-diagonal entries are given
// twice, as read and mirrored. Every malformed line throws InputError naming file and line.
class EntryReader {
 public:
  explicit EntryReader(const std::string& path) : path_(path), in_(path, kWhat) {
    h_ = read_header(in_, path_, line_);
    symmetric_ = h_.symmetry == "symmetric";
    pattern_ = h_.field == "pattern";
    coordinate_ = h_.format == "coordinate";
    coordinate_values_ = coordinate_ && !pattern_;
  }
  const MatrixMarketHeader& header() const { return h_; }

  /// The next element into `e`; false after the last one, once the file's end is checked.
  bool next(Entry& e) {
    if (mirror_) {
      mirror_ = false;
      e = Entry{last_.col, last_.row, last_.value, last_.line};
      return true;
    }
    while (in_.getline(text_)) {
      ++line_;
      const bool plain = coordinate_values_ && plain_entry(text_, e);
      if (!plain && blank_or_comment(text_)) continue;
      if (seen_ == h_.entries) fail(path_, line_, "more entries than the " + std::to_string(h_.entries) + " announced");
      if (!plain && coordinate_) {
        const Fields f = split(text_);
        const int want = pattern_ ? 2 : 3;
        if (f.count != want)
          fail(path_, line_,
               std::string(pattern_ ? "expected 'row col' (a pattern file gives no values)"
                                    : "expected 'row col value'") +
                   ", found " + quoted_excerpt(text_));
        e.row = parse_index(f.field[0], h_.rows, "row", path_, line_);
        e.col = parse_index(f.field[1], h_.cols, "column", path_, line_);
        e.value = pattern_ ? 1.0 : parse_number(f.field[2], path_, line_);
      } else if (!plain) {  // array format: one value a line
        const Fields f = split(text_);
        if (f.count != 1) fail(path_, line_, "expected one value, found " + quoted_excerpt(text_));
        e.value = parse_number(f.field[0], path_, line_);
        e.row = arr_r_;
        e.col = arr_c_;
        if (++arr_r_ == h_.rows) {
          ++arr_c_;
          arr_r_ = symmetric_ ? arr_c_ : 0;
        }
      }
      if (coordinate_ && symmetric_ && e.row < e.col)
        fail(path_, line_, "a symmetric file must give the lower triangle only (row >= column)");
      e.line = line_;
      ++seen_;
      if (symmetric_ && e.row != e.col) {
        mirror_ = true;
        last_ = e;
      }
      return true;
    }
    if (seen_ != h_.entries)
      fail(path_, line_, "file ends after " + std::to_string(seen_) + " of " + std::to_string(h_.entries) + " entries");
    return false;
  }

 private:
  std::string path_;
  TextReader in_;
  MatrixMarketHeader h_;
  std::int64_t line_ = 0, seen_ = 0;
  std::int64_t arr_r_ = 0, arr_c_ = 0;  // array format position (column-major; lower triangle if symmetric)
  bool symmetric_ = false, pattern_ = false, mirror_ = false;
  bool coordinate_ = false, coordinate_values_ = false;  // coordinate_values_: lines "row col value"
  Entry last_{};
  std::string_view text_;  // the line, as TextReader gives it (valid until the next)

  // The common line, "row col value", read in one pass (detail::parse_row_col_value) into e's row,
  // column and value, where its indices are in range: false for any other line.
  bool plain_entry(std::string_view s, Entry& e) const {
    std::int64_t r = 0, c = 0;
    double v = 0;
    if (!detail::parse_row_col_value(s, r, c, v) || r < 1 || r > h_.rows || c < 1 || c > h_.cols) return false;
    e.row = r - 1;
    e.col = c - 1;
    e.value = v;
    return true;
  }
};

// The row and column (0-based) of the coordinate entry on line `target`, and the first line
// before it that gives the same entry. Only called for a file already read without error.
std::pair<std::int64_t, std::int64_t> first_and_entry(const std::string& path, std::int64_t target,
                                                      std::int64_t& first) {
  std::pair<std::int64_t, std::int64_t> entry{-1, -1};
  first = 0;
  for (int pass = 0; pass < 2; ++pass) {
    EntryReader in(path);
    Entry e{};
    while (in.next(e)) {
      if (e.row < e.col && in.header().symmetry == "symmetric") continue;  // a mirror
      if (pass == 0 && e.line == target) {
        entry = {e.row, e.col};
        break;
      }
      if (pass == 1 && std::pair{e.row, e.col} == entry) {
        first = e.line;
        return entry;
      }
    }
  }
  return entry;
}

}  // namespace

MatrixMarketHeader read_matrix_market_header(const std::string& path) {
  TextReader in(path, kWhat);
  std::int64_t line = 0;
  return read_header(in, path, line);
}

MatrixMarketHeader read_matrix_market_header(const std::string& path, MPI_Comm comm) {
  MatrixMarketHeader h;
  detail::Outcome outcome;
  if (mpi::rank(comm) == 0) outcome = detail::attempt([&] { h = read_matrix_market_header(path); });
  detail::share(outcome, comm);
  std::int64_t sizes[3] = {h.rows, h.cols, h.entries};
  mpi::check(MPI_Bcast(sizes, 3, MPI_INT64_T, 0, comm), "MPI_Bcast");
  std::string words = h.format + ' ' + h.field + ' ' + h.symmetry;
  int len = static_cast<int>(words.size());
  mpi::check(MPI_Bcast(&len, 1, MPI_INT, 0, comm), "MPI_Bcast");
  words.resize(static_cast<std::size_t>(len));
  mpi::check(MPI_Bcast(words.data(), len, MPI_CHAR, 0, comm), "MPI_Bcast");
  std::istringstream in(words);
  in >> h.format >> h.field >> h.symmetry;
  h.rows = sizes[0];
  h.cols = sizes[1];
  h.entries = sizes[2];
  return h;
}

DistMatrix read_matrix_market(const std::string& path, const std::string& name,
                              std::shared_ptr<const Distribution> dist, const BlockLayout& layout,
                              std::size_t chunk_entries) {
  std::vector<DistMatrix> m = read_matrix_market_files({path}, {name}, std::move(dist), layout, chunk_entries);
  return std::move(m.front());
}

std::vector<DistMatrix> read_matrix_market_files(const std::vector<std::string>& paths,
                                                 const std::vector<std::string>& names,
                                                 std::shared_ptr<const Distribution> dist, const BlockLayout& layout,
                                                 std::size_t chunk_entries) {
  if (names.size() != paths.size())
    throw Error("read_matrix_market_files", "one name per file: " + std::to_string(paths.size()) + " files, " +
                                                std::to_string(names.size()) + " names");
  std::vector<MatrixFile> files;
  for (std::size_t f = 0; f < paths.size(); ++f) files.push_back({paths[f], names[f], dist, layout});
  return read_matrix_market_files(files, chunk_entries);
}

std::vector<DistMatrix> read_matrix_market_files(const std::vector<MatrixFile>& files, std::size_t chunk_entries) {
  std::vector<detail::MatrixShape> shapes;
  for (const MatrixFile& f : files) shapes.push_back({f.name, f.dist, f.layout});
  // File f's reading rank opens it, checks its dimensions and reads it; the others receive their entries.
  auto read = [&](std::size_t f, detail::RootScatter& scatter) {
    const std::string& path = files[f].path;
    const BlockLayout& layout = files[f].layout;
    EntryReader reader(path);
    const MatrixMarketHeader& h = reader.header();
    if (h.rows != layout.rows.total() || h.cols != layout.cols.total())
      throw InputError(path, "Matrix Market file " + path + " is " + std::to_string(h.rows) + "x" +
                                 std::to_string(h.cols) + " but the block sizes cover " +
                                 std::to_string(layout.rows.total()) + "x" + std::to_string(layout.cols.total()));
    Entry e{};
    while (reader.next(e)) scatter.put(e);
  };
  // The rank holding an entry sees it given twice; the file's reading rank finds the line that gave it first.
  auto duplicate = [&](std::size_t f, std::int64_t line) {
    const std::string& path = files[f].path;
    std::int64_t first = 0;
    const auto [r, c] = first_and_entry(path, line, first);
    const bool symmetric = read_matrix_market_header(path).symmetry == "symmetric";
    fail(path, line,
         "entry (" + std::to_string(r + 1) + ", " + std::to_string(c + 1) + ") is given twice, at lines " +
             std::to_string(first) + " and " + std::to_string(line) +
             "; the Matrix Market format does not define repeated entries, and plexus does not add them up" +
             (symmetric ? " (a symmetric file gives each entry of the lower triangle once)" : ""));
  };
  return detail::read_matrices(shapes, chunk_entries, read, duplicate);
}

void write_matrix_market(const DistMatrix& m, const std::string& path) {
  const DistMatrix::Gathered g = m.gather_blocks(0);
  MPI_Comm comm = m.grid().comm();
  std::string error;
  if (m.grid().rank() == 0) {
    try {
      output::Writer w(path, path);
      std::FILE* f = w.file();
      const auto& layout = m.layout();
      std::fprintf(f, "%%%%MatrixMarket matrix coordinate real general\n%% written by plexus: matrix %s\n",
                   m.name().c_str());
      std::fprintf(f, "%lld %lld %zu\n", static_cast<long long>(m.nrows()), static_cast<long long>(m.ncols()),
                   g.values.size());
      std::int64_t off = 0;
      for (std::size_t q = 0; q < g.index.size(); q += 2) {
        const int i = static_cast<int>(g.index[q]), j = static_cast<int>(g.index[q + 1]);
        const int mi = layout.rows.size(i), nj = layout.cols.size(j);
        for (int c = 0; c < nj; ++c)
          for (int r = 0; r < mi; ++r)
            std::fprintf(f, "%lld %lld %.17g\n", static_cast<long long>(layout.rows.offset(i) + r + 1),
                         static_cast<long long>(layout.cols.offset(j) + c + 1),
                         g.values[static_cast<std::size_t>(off + r + std::int64_t{c} * mi)]);
        off += std::int64_t{mi} * nj;
      }
      w.commit();
    } catch (const Error& e) {
      error = e.what();
    }
  }
  // Every rank learns whether rank 0 succeeded, so all throw together or none does.
  int len = static_cast<int>(error.size());
  mpi::check(MPI_Bcast(&len, 1, MPI_INT, 0, comm), "MPI_Bcast");
  if (len > 0) {
    error.resize(static_cast<std::size_t>(len));
    mpi::check(MPI_Bcast(error.data(), len, MPI_CHAR, 0, comm), "MPI_Bcast");
    throw InputError(path, error);
  }
}

}  // namespace plexus
