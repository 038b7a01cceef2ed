// DBCSR's .perf benchmark input: a reader of its values in order, and their translation into the
// parameters of the multiply solver (see plexus/perf_file.hpp and docs/user-guide.md).
#include "plexus/perf_file.hpp"

#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>

#include "plexus/error.hpp"
#include "plexus/input.hpp"

namespace plexus::perf {

namespace {

constexpr std::int64_t kMaxFileBytes = 1 << 20;
// The largest block size a plexus block can hold (Problem/BlockSizes refuses larger ones).
constexpr std::int64_t kMaxBlockSize = 46340;
constexpr std::int64_t kIntMax = std::numeric_limits<int>::max();

struct Token {
  std::string text;
  int line = 0;
};

// The values of the file: one per line that is neither blank nor a comment.
std::vector<Token> tokens_of(const std::string& text, const std::string& name) {
  std::vector<Token> out;
  std::istringstream in(text);
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    const std::string t = input::trim(line);
    if (t.empty() || t[0] == '#') continue;
    if (t.find_first_of(" \t") != std::string::npos)
      throw InputError(name, name + ", line " + std::to_string(number) + ": expected one value, got '" +
                                 input::excerpt(t) + "' (a .perf file holds one value a line)");
    out.push_back({t, number});
  }
  return out;
}

class Reader {
 public:
  Reader(std::vector<Token> tokens, std::string name) : tokens_(std::move(tokens)), name_(std::move(name)) {}

  bool at_end() const { return next_ >= tokens_.size(); }
  const Token& peek(const std::string& what) {
    if (at_end())
      throw InputError(name_, name_ + " ends" +
                                  (tokens_.empty() ? std::string() : " after line " + std::to_string(last_line())) +
                                  ": expected " + what);
    return tokens_[next_];
  }
  const Token& take(const std::string& what) {
    const Token& t = peek(what);
    ++next_;
    return t;
  }
  [[noreturn]] void fail(const Token& t, const std::string& what) const {
    throw InputError(name_, name_ + ", line " + std::to_string(t.line) + ": expected " + what + ", got '" +
                                input::excerpt(t.text) + "'");
  }

  Value<std::int64_t> integer(const std::string& what, std::int64_t min, std::int64_t max = kIntMax) {
    const Token& t = take(what);
    const std::string& s = t.text;
    std::size_t i = s[0] == '+' || s[0] == '-' ? 1 : 0;
    const bool digits =
        i < s.size() && s.size() - i <= 12 &&
        std::all_of(s.begin() + static_cast<long>(i), s.end(), [](unsigned char c) { return std::isdigit(c) != 0; });
    const std::int64_t v = digits ? std::strtoll(s.c_str(), nullptr, 10) : 0;
    if (!digits || v < min || v > max) fail(t, what);
    return {v, t.line};
  }

  Value<double> real(const std::string& what) {
    const Token& t = take(what);
    std::optional<double> v = fortran_real(t.text);
    if (!v) fail(t, what);
    return {*v, t.line};
  }

  Value<bool> logical(const std::string& what) {
    const Token& t = take(what);
    const auto v = fortran_logical(t.text);
    if (!v) fail(t, what);
    return {*v, t.line};
  }

  Value<char> letter(const std::string& what, const std::string& letters) {
    const Token& t = take(what);
    const char c = t.text.size() == 1 ? static_cast<char>(std::toupper(static_cast<unsigned char>(t.text[0]))) : 0;
    if (c == 0 || letters.find(c) == std::string::npos) fail(t, what);
    return {c, t.line};
  }

  // A real as Fortran's list-directed input reads it: [sign] digits [. digits] [exponent], the
  // exponent letter e, E, d or D ("0.2d0", "0.", "1E-10").
  static std::optional<double> fortran_real(const std::string& s) {
    std::string t = s;
    std::size_t i = t[0] == '+' || t[0] == '-' ? 1 : 0, mantissa = 0;
    while (i < t.size() && std::isdigit(static_cast<unsigned char>(t[i]))) ++i, ++mantissa;
    if (i < t.size() && t[i] == '.') {
      ++i;
      while (i < t.size() && std::isdigit(static_cast<unsigned char>(t[i]))) ++i, ++mantissa;
    }
    if (mantissa == 0) return std::nullopt;
    if (i < t.size()) {
      if (std::string("eEdD").find(t[i]) == std::string::npos) return std::nullopt;
      t[i] = 'e';
      ++i;
      if (i < t.size() && (t[i] == '+' || t[i] == '-')) ++i;
      const std::size_t start = i;
      while (i < t.size() && std::isdigit(static_cast<unsigned char>(t[i]))) ++i;
      if (i == start || i != t.size()) return std::nullopt;
    }
    errno = 0;
    const double v = std::strtod(t.c_str(), nullptr);
    if (!std::isfinite(v) || errno == ERANGE) return std::nullopt;
    return v;
  }

  // A logical as Fortran reads it: T or F, optionally after a '.', e.g. T, .false., TRUE.
  static std::optional<bool> fortran_logical(const std::string& s) {
    const std::string l = input::lower(s);
    for (const char* t : {"t", ".t.", "true", ".true."})
      if (l == t) return true;
    for (const char* f : {"f", ".f.", "false", ".false."})
      if (l == f) return false;
    return std::nullopt;
  }

 private:
  int last_line() const { return tokens_.back().line; }
  std::vector<Token> tokens_;
  std::string name_;
  std::size_t next_ = 0;
};

[[noreturn]] void refuse(const std::string& name, int line, const std::string& what) {
  throw InputError(name, name + ", line " + std::to_string(line) + ": " + what);
}

std::string number(double v) { return fmt::format("{:g}", v); }

std::string note(int line, const std::string& field, const std::string& value, const std::string& what) {
  return fmt::format("line {:3d}  ", line) + field + " = " + value + " -> " + what;
}

// The blocks of one dimension as a Problem block-size pattern: each size repeated as often as its
// multiplicity, the pairs cycled (DBCSR cycles them and cuts the last block to fit the dimension).
// Only the part of the pattern the dimension reaches is written out.
std::string pattern_of(const std::vector<BlockPair>& pairs, std::int64_t dimension) {
  std::string out;
  std::int64_t covered = 0;
  for (const auto& p : pairs) {
    for (std::int64_t i = 0; i < p.multiplicity.value && covered < dimension; ++i) {
      if (!out.empty()) out += ',';
      out += std::to_string(p.size.value);
      covered += p.size.value;
    }
    if (covered >= dimension) break;
  }
  return out;
}

}  // namespace

PerfFile parse_perf(const std::string& text, const std::string& name) {
  PerfFile f;
  f.name = name;
  Reader r(tokens_of(text, name), name);
  f.npcols = r.integer("npcols, the process columns of the grid (a whole number >= 0; 0: chosen by MPI)", 0);
  // The MPI-RMA line is optional (older files have none): a logical here is that flag.
  if (!r.at_end() && Reader::fortran_logical(r.peek("").text)) {
    f.has_rma = true;
    f.use_rma = r.logical("the MPI-RMA flag (T or F)");
  }
  {
    const Token& t = r.take("the operation (dbcsr_multiply)");
    if (input::lower(t.text) != "dbcsr_multiply")
      r.fail(t, f.has_rma ? "the operation dbcsr_multiply (the only one of DBCSR's performance driver)"
                          : "the MPI-RMA flag (T or F) or the operation dbcsr_multiply");
    f.operation = {t.text, t.line};
  }
  const char* dims[] = {"M (rows of C)", "N (columns of C)", "K (the inner dimension)"};
  for (int i = 0; i < 3; ++i)
    f.sizes[i] = r.integer(std::string("matrix size ") + dims[i] + ", a whole number >= 1", 1);
  const char* mats[] = {"A", "B", "C"};
  for (int i = 0; i < 3; ++i) {
    f.sparsities[i] = r.real(std::string("the sparsity of ") + mats[i] + " (fraction of zero blocks, 0 to 1)");
    if (!(f.sparsities[i].value >= 0 && f.sparsities[i].value <= 1))
      refuse(name, f.sparsities[i].line,
             std::string("the sparsity of ") + mats[i] + " is the fraction of zero blocks, from 0 to 1; got " +
                 number(f.sparsities[i].value));
  }
  for (int i = 0; i < 2; ++i)
    f.transposes[i] = r.letter(std::string("the transpose of ") + mats[i] + " (N, T or C)", "NTC");
  for (int i = 0; i < 3; ++i)
    f.symmetries[i] = r.letter(std::string("the symmetry of ") + mats[i] +
                                   " (N none, S symmetric, A antisymmetric, H hermitian, K antihermitian)",
                               "NSAHK");
  f.data_type = r.integer("the data type (1, 3, 5 or 7; 3: real double precision)", 0);
  f.alpha[0] = r.real("the real part of alpha");
  f.alpha[1] = r.real("the imaginary part of alpha");
  f.beta[0] = r.real("the real part of beta");
  f.beta[1] = r.real("the imaginary part of beta");
  const char* limits[] = {"the first row",   "the last row", "the first column",
                          "the last column", "the first k",  "the last k"};
  for (int i = 0; i < 6; ++i)
    f.limits[i] = r.integer(std::string("limit: ") + limits[i] + " (a whole number >= 0; 0: the full size)", 0);
  f.retain_sparsity = r.logical("retain sparsity (T or F)");
  f.repetitions = r.integer("the number of repetitions (a whole number >= 1)", 1);
  const char* blocks[] = {"m", "n", "k"};
  std::array<Value<std::int64_t>, 3> counts;
  for (int i = 0; i < 3; ++i)
    counts[i] = r.integer(
        std::string("the number of (multiplicity, size) pairs of the ") + blocks[i] + " blocks (a whole number >= 1)",
        1, 1000000);
  for (int d = 0; d < 3; ++d)
    for (std::int64_t p = 0; p < counts[d].value; ++p) {
      const std::string pair = std::string("pair ") + std::to_string(p + 1) + " of " + std::to_string(counts[d].value) +
                               " of the " + blocks[d] + " blocks";
      BlockPair bp;
      bp.multiplicity = r.integer("the multiplicity of " + pair + " (a whole number >= 1)", 1);
      bp.size =
          r.integer("the block size of " + pair + " (a whole number from 1 to " + std::to_string(kMaxBlockSize) + ")",
                    1, kMaxBlockSize);
      f.blocks[d].push_back(bp);
    }
  f.checksum_check = r.logical("the checksum check (T or F)");
  f.checksum_threshold = r.real("the checksum threshold");
  if (f.checksum_check.value && !(f.checksum_threshold.value > 0))
    refuse(name, f.checksum_threshold.line,
           "the checksum threshold must be positive when the checksum is checked, got " +
               number(f.checksum_threshold.value));
  f.checksum_reference = r.real("the checksum reference");
  f.checksum_reference_pos = r.real("the positional checksum reference");
  if (!r.at_end()) {
    const Token& t = r.take("");
    throw InputError(name, name + ", line " + std::to_string(t.line) +
                               ": expected the end of the file after the checksum line, got '" +
                               input::excerpt(t.text) + "'");
  }
  return f;
}

PerfFile read_perf_file(const std::string& path) {
  input::check_input_file(path, ".perf file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, "cannot open .perf file '" + path + "'");
  std::string text(static_cast<std::size_t>(kMaxFileBytes) + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<std::size_t>(in.gcount()));
  if (static_cast<std::int64_t>(text.size()) > kMaxFileBytes)
    throw InputError(path, "'" + path + "' is larger than 1 MiB; a .perf file holds a few dozen values");
  if (text.find('\0') != std::string::npos)
    throw InputError(path, "'" + path + "' holds binary data, not the text of a .perf file");
  return parse_perf(text, path);
}

PerfRun translate(const PerfFile& f, int ranks) {
  const std::string& name = f.name;
  PerfRun run;
  run.parameters = Teuchos::rcp(new ParameterList("plexus"));
  ParameterList& p = *run.parameters;
  p.set("Solver", std::string("multiply"));
  ParameterList& problem = p.sublist("Problem");
  ParameterList& mult = p.sublist("multiply");
  auto& notes = run.notes;
  problem.set("Generator", std::string("random"));

  // The grid.
  if (f.npcols.value == 0) {
    notes.push_back(note(f.npcols.line, "npcols", "0", "grid chosen by MPI_Dims_create"));
  } else {
    if (ranks % f.npcols.value != 0)
      refuse(name, f.npcols.line,
             "npcols = " + std::to_string(f.npcols.value) + " does not divide the job's " + std::to_string(ranks) +
                 " ranks (the grid is ranks/npcols x npcols)");
    const int cols = static_cast<int>(f.npcols.value);
    problem.set("GridRows", ranks / cols);
    problem.set("GridCols", cols);
    notes.push_back(
        note(f.npcols.line, "npcols", std::to_string(cols),
             "Problem/GridRows x GridCols = " + std::to_string(ranks / cols) + " x " + std::to_string(cols)));
  }
  run.default_strategy = f.has_rma && f.use_rma.value ? "rma25d" : "cannon";
  if (f.has_rma)
    notes.push_back(note(f.use_rma.line, "MPI-RMA", f.use_rma.value ? "T" : "F",
                         std::string("default strategy ") + run.default_strategy + " (without --strategies)"));
  notes.push_back(note(f.operation.line, "operation", f.operation.value, "Solver = multiply"));

  // Data type, scalars.
  const std::int64_t type = f.data_type.value;
  if (type == 1)
    refuse(name, f.data_type.line,
           "data type 1 (real single precision) is not supported: plexus multiplies real "
           "double precision (data type 3) only");
  if (type == 5 || type == 7)
    refuse(name, f.data_type.line,
           "data type " + std::to_string(type) + " (complex " + (type == 5 ? "single" : "double") +
               " precision) is not supported: plexus multiplies real double precision "
               "(data type 3) only");
  if (type != 3)
    refuse(name, f.data_type.line,
           "data type " + std::to_string(type) +
               " is not one of DBCSR's (1, 3, 5, 7); plexus takes 3, real double "
               "precision");
  notes.push_back(note(f.data_type.line, "data type", "3", "real double precision"));

  // Sizes and blocks: M rows of C (RowBlockSizes), N columns (ColBlockSizes), K inner (BlockSizes).
  const std::int64_t m = f.sizes[0].value, n = f.sizes[1].value, k = f.sizes[2].value;
  const char* size_names[] = {"M", "N", "K"};
  const char* dim_params[] = {"Rows", "Cols", "Inner"};
  for (int i = 0; i < 3; ++i) {
    if (f.sizes[i].value > kIntMax)
      refuse(name, f.sizes[i].line,
             std::string(size_names[i]) + " = " + std::to_string(f.sizes[i].value) + " is larger than plexus takes (" +
                 std::to_string(kIntMax) + ")");
    problem.set(dim_params[i], static_cast<int>(f.sizes[i].value));
    notes.push_back(note(f.sizes[i].line, size_names[i], std::to_string(f.sizes[i].value),
                         std::string("Problem/") + dim_params[i]));
  }
  const std::string pm = pattern_of(f.blocks[0], m), pn = pattern_of(f.blocks[1], n), pk = pattern_of(f.blocks[2], k);
  problem.set("RowBlockSizes", pm);
  problem.set("ColBlockSizes", pn);
  problem.set("BlockSizes", pk);
  const char* block_params[] = {"RowBlockSizes", "ColBlockSizes", "BlockSizes"};
  const std::string* patterns[] = {&pm, &pn, &pk};
  for (int d = 0; d < 3; ++d) {
    std::string pairs;
    for (const auto& bp : f.blocks[d]) {
      if (!pairs.empty()) pairs += ' ';
      pairs += std::to_string(bp.multiplicity.value) + "x" + std::to_string(bp.size.value);
    }
    const std::string shown = patterns[d]->size() > 40 ? patterns[d]->substr(0, 37) + "..." : *patterns[d];
    notes.push_back(note(f.blocks[d].front().multiplicity.line, std::string("the ") + "mnk"[d] + " blocks", pairs,
                         std::string("Problem/") + block_params[d] + " = " + shown));
  }

  // Sparsities: occupancy = 1 - sparsity (the diagonal blocks are always present in plexus).
  const char* mats[] = {"A", "B", "C"};
  for (int i = 0; i < 3; ++i) {
    const double occupancy = 1.0 - f.sparsities[i].value;
    if (!(occupancy > 0))
      refuse(name, f.sparsities[i].line,
             std::string("the sparsity of ") + mats[i] +
                 " is 1 (no blocks at all), but plexus's generator needs "
                 "an occupancy above 0: give a sparsity below 1");
    problem.set(std::string("Occupancy") + mats[i], occupancy);
    notes.push_back(note(f.sparsities[i].line, std::string("sparsity of ") + mats[i], number(f.sparsities[i].value),
                         std::string("Problem/Occupancy") + mats[i] + " = " + number(occupancy) +
                             " (its diagonal blocks always present)"));
  }
  problem.set("Occupancy", 1.0 - f.sparsities[0].value);

  // Transposes ('C', the conjugate transpose, is the transpose of real data).
  for (int i = 0; i < 2; ++i) {
    const char t = f.transposes[i].value;
    mult.set(std::string("Trans") + mats[i], std::string(t == 'N' ? "N" : "T"));
    notes.push_back(note(f.transposes[i].line, std::string("transpose of ") + mats[i], std::string(1, t),
                         std::string("multiply/Trans") + mats[i] + " = " + (t == 'N' ? "N" : "T") +
                             (t == 'C' ? " (the conjugate transpose of real data)" : "")));
  }

  // Symmetries: none, or symmetric A and B (square, one blocking).
  const char sa = f.symmetries[0].value, sb = f.symmetries[1].value, sc = f.symmetries[2].value;
  if (sa == 'N' && sb == 'N' && sc == 'N') {
    problem.set("Symmetric", false);
    notes.push_back(note(f.symmetries[0].line, "symmetries", "N N N", "Problem/Symmetric = false"));
  } else {
    // The first line plexus cannot follow.
    const int bad = sc != 'N' ? 2 : (sa != 'S' ? 0 : (sb != 'S' ? 1 : -1));
    if (bad >= 0)
      refuse(name, f.symmetries[bad].line,
             std::string("symmetry '") + f.symmetries[bad].value + "' of " + mats[bad] +
                 " is not supported: plexus generates matrices without symmetry (N N N) or symmetric A and B with "
                 "C without (S S N)");
    if (!(m == n && n == k && pm == pn && pn == pk))
      refuse(name, f.symmetries[0].line,
             "symmetric A and B (S S N) need M = N = K and the same m, n and k blocks (got " + std::to_string(m) +
                 " x " + std::to_string(n) + " x " + std::to_string(k) + ")");
    problem.set("Symmetric", true);
    notes.push_back(note(f.symmetries[0].line, "symmetries", "S S N", "Problem/Symmetric = true (A and B)"));
  }

  // alpha and beta: the real parts (DBCSR also ignores the imaginary parts of real data).
  mult.set("Alpha", f.alpha[0].value);
  mult.set("Beta", f.beta[0].value);
  for (int i = 0; i < 2; ++i) {
    const auto& v = i == 0 ? f.alpha : f.beta;
    const std::string label = i == 0 ? "alpha" : "beta", param = i == 0 ? "Alpha" : "Beta";
    notes.push_back(note(v[0].line, label, number(v[0].value) + ", " + number(v[1].value),
                         "multiply/" + param + " = " + number(v[0].value) +
                             (v[1].value != 0 ? " (the imaginary part is ignored for real data, as DBCSR does)" : "")));
  }

  // Limits: only the full matrices (0, or exactly the whole range).
  const std::int64_t full[] = {m, n, k};
  const char* limit_names[] = {"row", "column", "k"};
  for (int i = 0; i < 3; ++i) {
    const auto& first = f.limits[2 * i];
    const auto& last = f.limits[2 * i + 1];
    const bool whole = (first.value == 0 || first.value == 1) && (last.value == 0 || last.value == full[i]);
    if (!whole)
      refuse(name, (first.value == 0 || first.value == 1) ? last.line : first.line,
             std::string("the ") + limit_names[i] + " limits " + std::to_string(first.value) + " to " +
                 std::to_string(last.value) +
                 " are not supported: plexus multiplies the whole matrices; give 0 and "
                 "0 (the full size, 1 to " +
                 std::to_string(full[i]) + ")");
  }
  notes.push_back(note(f.limits[0].line, "limits", "full size", "the whole matrices"));

  mult.set("RetainSparsity", f.retain_sparsity.value);
  notes.push_back(note(f.retain_sparsity.line, "retain sparsity", f.retain_sparsity.value ? "T" : "F",
                       std::string("multiply/RetainSparsity = ") + (f.retain_sparsity.value ? "true" : "false")));
  if (f.repetitions.value > kIntMax) refuse(name, f.repetitions.line, "too many repetitions");
  mult.set("Repetitions", static_cast<int>(f.repetitions.value));
  mult.set("ResetC", true);
  notes.push_back(note(f.repetitions.line, "repetitions", std::to_string(f.repetitions.value),
                       "multiply/Repetitions, each from the generated C (multiply/ResetC = true)"));

  // The checksum references are those of DBCSR's own random matrices; plexus checks against the
  // dense product instead, where the matrices are small enough to gather.
  const bool small =
      m * n <= kDenseCheckMaxElements && m * k <= kDenseCheckMaxElements && k * n <= kDenseCheckMaxElements;
  const bool check = f.checksum_check.value && small;
  mult.set("Check", check);
  notes.push_back(note(f.checksum_check.line, "checksum check", f.checksum_check.value ? "T" : "F",
                       !f.checksum_check.value ? std::string("multiply/Check = false")
                       : check ? "multiply/Check = true: C is compared with the dense product (DBCSR's references " +
                                     number(f.checksum_reference.value) +
                                     " belong to its own random matrices and are not used)"
                               : "not checked: the matrices are too large for the dense check (at most " +
                                     std::to_string(kDenseCheckMaxElements) +
                                     " elements a matrix); DBCSR's references belong to "
                                     "its own random matrices"));
  // In the order of the file.
  std::stable_sort(notes.begin(), notes.end(), [](const std::string& a, const std::string& b) {
    return std::atoi(a.c_str() + 5) < std::atoi(b.c_str() + 5);
  });
  return run;
}

}  // namespace plexus::perf
