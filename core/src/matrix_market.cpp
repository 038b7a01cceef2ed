#include "plexus/matrix_market.hpp"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "plexus/error.hpp"
#include "plexus/input.hpp"
#include "plexus/mpi.hpp"
#include "plexus/output.hpp"
#include "local_blocks.hpp"
#include "text_reader.hpp"

namespace plexus {

namespace {

using input::lower;

[[noreturn]] void fail(const std::string& path, std::int64_t line, const std::string& what) {
  throw InputError(path, "Matrix Market file " + path + ", line " + std::to_string(line) + ": " + what);
}

std::string quoted(const std::string& text) {
  std::string q = input::excerpt(text);
  q.insert(q.begin(), '\'');
  q.push_back('\'');
  return q;
}

bool blank_or_comment(const std::string& s) {
  for (char ch : s) {
    if (ch == '%') return true;
    if (!std::isspace(static_cast<unsigned char>(ch))) return false;
  }
  return true;
}

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
    fail(path, line, "expected '%%MatrixMarket' banner, found " + quoted(text) + "; is it a Matrix Market file?");
  MatrixMarketHeader h;
  h.format = lower(format);
  h.field = lower(field);
  h.symmetry = lower(symmetry);
  if (lower(object) != "matrix") fail(path, line, "object " + quoted(object) + " is not supported (only 'matrix')");
  if (h.format != "coordinate" && h.format != "array")
    fail(path, line, "format " + quoted(format) + " is not supported (coordinate or array)");
  if (h.field != "real" && h.field != "integer" && h.field != "double")
    fail(path, line, "field " + quoted(field) + " is not supported (real or integer)");
  if (h.symmetry != "general" && h.symmetry != "symmetric")
    fail(path, line, "symmetry " + quoted(symmetry) + " is not supported (general or symmetric)");
  while (in.getline(text)) {
    ++line;
    if (blank_or_comment(text)) continue;
    std::istringstream size(text);
    std::string extra;
    if (h.format == "coordinate") {
      if (!(size >> h.rows >> h.cols >> h.entries) || (size >> extra))
        fail(path, line, "expected 'rows cols entries', found " + quoted(text));
    } else {
      if (!(size >> h.rows >> h.cols) || (size >> extra))
        fail(path, line, "expected 'rows cols', found " + quoted(text));
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

double parse_number(const std::string& tok, const std::string& path, std::int64_t line) {
  const char* s = tok.c_str();
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(s, &end);
  if (end == s || *end != '\0') fail(path, line, quoted(tok) + " is not a number");
  if (!std::isfinite(v))
    fail(path, line,
         "value " + quoted(tok) + (errno == ERANGE ? " is outside the range of double" : " is not a finite number") +
             "; Matrix Market values must be finite");
  return v;
}

std::int64_t parse_index(const std::string& tok, std::int64_t limit, const char* what, const std::string& path,
                         std::int64_t line) {
  const char* s = tok.c_str();
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(s, &end, 10);
  if (end == s || *end != '\0') fail(path, line, std::string(what) + " index " + quoted(tok) + " is not an integer");
  if (errno == ERANGE || v < 1 || v > limit)
    fail(path, line, std::string(what) + " index " + quoted(tok) + " is outside 1.." + std::to_string(limit));
  return v - 1;
}

// The row and column (0-based) of the coordinate entry on line `target`, and the first line
// before it that gives the same entry. Only called for a file already read without error.
std::pair<std::int64_t, std::int64_t> first_and_entry(const std::string& path, std::int64_t target,
                                                      std::int64_t& first) {
  TextReader in(path, kWhat);
  std::int64_t line = 0;
  const MatrixMarketHeader h = read_header(in, path, line);
  std::pair<std::int64_t, std::int64_t> entry{-1, -1};
  for (int pass = 0; pass < 2; ++pass) {
    std::string text;
    while (in.getline(text)) {
      ++line;
      if (blank_or_comment(text)) continue;
      std::istringstream ls(text);
      std::string t1, t2;
      ls >> t1 >> t2;
      const std::pair<std::int64_t, std::int64_t> rc{parse_index(t1, h.rows, "row", path, line),
                                                     parse_index(t2, h.cols, "column", path, line)};
      if (pass == 0 && line == target) {
        entry = rc;
        break;
      }
      if (pass == 1 && rc == entry) {
        first = line;
        return entry;
      }
    }
    in.rewind();
    read_header(in, path, line);
  }
  first = 0;
  return entry;
}

}  // namespace

MatrixMarketHeader read_matrix_market_header(const std::string& path) {
  TextReader in(path, kWhat);
  std::int64_t line = 0;
  return read_header(in, path, line);
}

DistMatrix read_matrix_market(const std::string& path, const std::string& name, std::shared_ptr<const Distribution> dist,
                              const BlockLayout& layout) {
  TextReader in(path, kWhat);
  std::int64_t line = 0;
  const MatrixMarketHeader h = read_header(in, path, line);
  if (h.rows != layout.rows.total() || h.cols != layout.cols.total())
    throw InputError(path, "Matrix Market file " + path + " is " + std::to_string(h.rows) + "x" + std::to_string(h.cols) +
                               " but the block sizes cover " + std::to_string(layout.rows.total()) + "x" +
                               std::to_string(layout.cols.total()));
  DistMatrix m(name, dist, layout);
  detail::LocalBlocks blocks(m);
  auto store = [&](std::int64_t r, std::int64_t c, double v) { blocks.store(r, c, v, line); };
  const bool symmetric = h.symmetry == "symmetric";
  std::string text, extra;
  std::int64_t seen = 0;
  std::int64_t arr_r = 0, arr_c = 0;  // array format position (column-major; lower triangle if symmetric)
  while (in.getline(text)) {
    ++line;
    if (blank_or_comment(text)) continue;
    if (seen == h.entries) fail(path, line, "more entries than the " + std::to_string(h.entries) + " announced");
    std::istringstream ls(text);
    std::string t1, t2, t3;
    if (h.format == "coordinate") {
      if (!(ls >> t1 >> t2 >> t3) || (ls >> extra)) fail(path, line, "expected 'row col value', found " + quoted(text));
      const std::int64_t r = parse_index(t1, h.rows, "row", path, line);
      const std::int64_t c = parse_index(t2, h.cols, "column", path, line);
      const double v = parse_number(t3, path, line);
      if (symmetric && r < c) fail(path, line, "a symmetric file must give the lower triangle only (row >= column)");
      store(r, c, v);
      if (symmetric && r != c) store(c, r, v);
    } else {
      if (!(ls >> t1) || (ls >> extra)) fail(path, line, "expected one value, found " + quoted(text));
      const double v = parse_number(t1, path, line);
      store(arr_r, arr_c, v);
      if (symmetric && arr_r != arr_c) store(arr_c, arr_r, v);
      if (++arr_r == h.rows) {
        ++arr_c;
        arr_r = symmetric ? arr_c : 0;
      }
    }
    ++seen;
  }
  if (seen != h.entries)
    fail(path, line, "file ends after " + std::to_string(seen) + " of " + std::to_string(h.entries) + " entries");
  // The rank holding an entry sees it given twice; every rank reports the first such line.
  const std::int64_t first_duplicate = blocks.first_duplicate_line(dist->grid().comm());
  if (first_duplicate > 0) {
    std::int64_t first = 0;
    const auto [r, c] = first_and_entry(path, first_duplicate, first);
    fail(path, first_duplicate,
         "entry (" + std::to_string(r + 1) + ", " + std::to_string(c + 1) + ") is given twice, at lines " +
             std::to_string(first) + " and " + std::to_string(first_duplicate) +
             "; the Matrix Market format does not define repeated entries, and plexus does not add them up" +
             (symmetric ? " (a symmetric file gives each entry of the lower triangle once)" : ""));
  }
  blocks.move_into(m);
  return m;
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
