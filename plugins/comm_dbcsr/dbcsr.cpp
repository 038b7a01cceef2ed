// DBCSR's own multiply as a plexus multiply algorithm: the incumbent in the same table, on the
// same matrices, through the same driver (docs/dbcsr.md).
//
// Core's driver has already validated the operands, transposed them when asked and applied alpha
// (task.a() is alpha*op(A), task.b() is op(B)); it applies retain_sparsity and the final filter to
// the panel returned here. This algorithm converts op(A), op(B) and C into DBCSR matrices with the
// same block sizes and the same distribution (DBCSR's row and column maps are plexus's, over a
// Cartesian communicator with plexus's PR x PC grid and rank placement), calls DBCSR's
// multiply C = 1 * op(A) * op(B) + beta * C ('N', 'N', with DBCSR's own on-the-fly filtering
// and retain_sparsity), and converts its C back into this rank's panel. With filtering, block rows
// of A and C are scaled on the way in (and C's back on the way out) so that DBCSR's single
// threshold applies plexus's per-row one (row_scales below).
//
// A DBCSR session lives inside one call of run(): the library is initialised on the grid's
// ranks, every DBCSR object made, and all of it released again (communicators included) by
// explicit calls before run() returns. Nothing DBCSR holds outlives the multiply, so no
// destructor ever has to make a collective call; when an error unwinds the stack midway, what was
// made is left to the end of the process (the job ends). DBCSR's own errors end the job
// themselves (it prints the message and calls MPI_Abort).
//
// What is counted: the phases' times (report.extra), and DBCSR's effective flops (its flop
// count, averaged over ranks by DBCSR; 0 from Debian's 2.5). DBCSR's MPI traffic does not go through plexus's counting
// layer and is not counted: the report's bytes and messages are zero, which says "not counted",
// not "nothing moved".
#include <dbcsr.h>
#include <mpi.h>
#include <omp.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "plexus/error.hpp"
#include "plexus/mpi.hpp"
#include "plexus/multiply.hpp"
#include "plexus/plugin.hpp"
#include "plexus/progress.hpp"

namespace {

using plexus::DistMatrix;
using plexus::Error;
using plexus::Panel;
using plexus::PanelView;

/// OpenMP threads for DBCSR while it runs (the kernel's count, as the other algorithms use),
/// restored afterwards. Calls no MPI function: safe in a destructor.
class OmpThreads {
 public:
  explicit OmpThreads(int n) : saved_(omp_get_max_threads()) { omp_set_num_threads(std::max(1, n)); }
  ~OmpThreads() { omp_set_num_threads(saved_); }
  OmpThreads(const OmpThreads&) = delete;
  OmpThreads& operator=(const OmpThreads&) = delete;

 private:
  int saved_;
};

std::vector<int> sizes_of(const plexus::BlockSizes& b) { return b.sizes(); }

/// A DBCSR distribution with x's row and column maps over the Cartesian communicator.
dbcsr_distribution make_distribution(const DistMatrix& x, MPI_Comm cart) {
  std::vector<int> rows = x.distribution().row_dist(), cols = x.distribution().col_dist();
  dbcsr_distribution d = nullptr;
  c_dbcsr_distribution_new(&d, cart, rows.data(), static_cast<int>(rows.size()), cols.data(),
                           static_cast<int>(cols.size()));
  return d;
}

/// An empty DBCSR matrix (no symmetry, double) with x's block sizes on distribution d.
dbcsr_matrix make_matrix(const DistMatrix& x, dbcsr_distribution d, const char* name) {
  const std::vector<int> rows = sizes_of(x.layout().rows), cols = sizes_of(x.layout().cols);
  dbcsr_matrix m = nullptr;
  c_dbcsr_create_new(&m, name, d, dbcsr_type_no_symmetry, rows.data(), static_cast<int>(rows.size()), cols.data(),
                     static_cast<int>(cols.size()), nullptr, &dbcsr_type_real_8, nullptr, nullptr, nullptr, nullptr);
  return m;
}

/// Puts this rank's blocks of x into m (both column-major, same block sizes), block row i scaled
/// by row_scale[i] (empty: 1), and finalizes m. zeros: put blocks of zeros instead of x's values
/// (C's pattern for retain_sparsity when beta is 0, so that nothing of the old C, not even a NaN,
/// reaches the result).
void put_local(const DistMatrix& x, dbcsr_matrix m, const std::vector<double>& row_scale, bool zeros = false) {
  const PanelView v = x.local().view();
  const auto& layout = x.layout();
  std::vector<double> zero(zeros ? static_cast<std::size_t>(layout.rows.max_size()) * layout.cols.max_size() : 0, 0.0);
  for (int r = 0; r < v.nrows; ++r) {
    const int i = static_cast<int>(v.row_ids[r]);
    const double* scale = row_scale.empty() ? nullptr : &row_scale[static_cast<std::size_t>(i)];
    for (std::int64_t b = v.row_ptr[r]; b < v.row_ptr[r + 1]; ++b) {
      const int j = static_cast<int>(v.cols[b]);
      c_dbcsr_put_block2d_d(m, i, j, zeros ? zero.data() : v.data + v.offsets[b], layout.rows.size(i),
                            layout.cols.size(j), nullptr, scale);
    }
  }
  c_dbcsr_finalize(m);
}

/// This rank's blocks of DBCSR's C as a plexus panel over C's local rows, sorted by (row, col),
/// block row i divided by row_scale[i] (empty: 1).
Panel take_local(dbcsr_matrix m, const DistMatrix& c, const std::vector<double>& row_scale) {
  struct Block {
    int row, col;
    const double* values;
    bool transposed;
  };
  std::vector<Block> blocks;
  dbcsr_iterator it = nullptr;
  const bool read_only = true;
  c_dbcsr_iterator_start(&it, m, nullptr, nullptr, nullptr, nullptr, &read_only);
  std::int64_t values = 0;
  while (c_dbcsr_iterator_blocks_left(it)) {
    int i = 0, j = 0, nr = 0, nc = 0;
    double* data = nullptr;
    bool tr = false;
    c_dbcsr_iterator_next_2d_block_d(it, &i, &j, &data, &tr, nullptr, &nr, &nc, nullptr, nullptr);
    if (nr != c.layout().rows.size(i) || nc != c.layout().cols.size(j))
      throw Error("dbcsr", "DBCSR's C block (" + std::to_string(i) + ", " + std::to_string(j) + ") is " +
                               std::to_string(nr) + "x" + std::to_string(nc) + ", plexus's C block is " +
                               std::to_string(c.layout().rows.size(i)) + "x" + std::to_string(c.layout().cols.size(j)));
    blocks.push_back({i, j, data, tr});
    values += std::int64_t{nr} * nc;
  }
  std::sort(blocks.begin(), blocks.end(),
            [](const Block& x, const Block& y) { return x.row != y.row ? x.row < y.row : x.col < y.col; });
  Panel out(c.distribution().local_rows());
  out.reserve(static_cast<std::int64_t>(blocks.size()), values);
  for (const Block& b : blocks) {
    const int r = out.row_index(b.row);
    if (r < 0)
      throw Error("dbcsr", "DBCSR's C has block (" + std::to_string(b.row) + ", " + std::to_string(b.col) +
                               ") on a rank that does not own its row in plexus's distribution");
    const int nr = c.layout().rows.size(b.row), nc = c.layout().cols.size(b.col);
    double* dst = out.append_block(r, b.col, nr * nc);
    const double f = row_scale.empty() ? 1.0 : 1.0 / row_scale[static_cast<std::size_t>(b.row)];
    if (!b.transposed) {
      for (std::int64_t q = 0; q < std::int64_t{nr} * nc; ++q) dst[q] = f * b.values[q];
    } else {  // stored as its nc x nr transpose
      for (int q = 0; q < nc; ++q)
        for (int p = 0; p < nr; ++p) dst[p + std::int64_t{q} * nr] = f * b.values[q + std::int64_t{p} * nc];
    }
  }
  c_dbcsr_iterator_stop(&it);
  return out;
}

/// plexus's on-the-fly filtering rule (the driver's thresholds) skips A(i,k)*B(k,j) when
/// |A(i,k)| |B(k,j)| < eps / n_i, n_i the blocks in row i of A; DBCSR 2.5 skips it when
/// |A(i,k)| |B(k,j)| < eps (one threshold for every row). Scaling block row i of A (and of C) by
/// n_i turns DBCSR's rule into plexus's: |n_i A(i,k)| |B(k,j)| < eps. DBCSR's final filter then
/// drops the blocks with |C(i,j)| < eps / n_i, fewer than the driver's final filter (|C(i,j)| <
/// eps), which runs after this algorithm and drops the rest. The scale of row i: n_i, recovered
/// exactly from the driver's threshold eps / max(1, n_i). Empty without filtering.
std::vector<double> row_scales(const plexus::MultiplyTask& task) {
  const double eps = task.options().filter_eps;
  std::vector<double> s;
  if (eps <= 0) return s;
  s.reserve(task.thresholds().size());
  for (const double t : task.thresholds()) s.push_back(static_cast<double>(std::llround(eps / t)));
  return s;
}

class Dbcsr final : public plexus::CommStrategy {
 public:
  std::string name() const override { return "dbcsr"; }

  Panel run(plexus::MultiplyTask& task) override {
    const DistMatrix &A = task.a(), &B = task.b(), &C = task.c();
    const plexus::Grid& grid = C.grid();
    const double beta = task.beta();
    const plexus::MultiplyOptions& options = task.options();
    const OmpThreads threads(task.kernel().threads());
    double t = plexus::mpi::now();
    auto lap = [&t] {
      const double now = plexus::mpi::now(), s = now - t;
      t = now;
      plexus::progress::point("dbcsr");
      return s;
    };

    // The session: the library on the grid's ranks, and a Cartesian communicator with the grid's
    // shape and placement (rank = prow * PC + pcol, MPI_Cart_create's row-major order, no
    // reordering), which DBCSR reads its process grid from.
    MPI_Comm cart = MPI_COMM_NULL;
    const std::array<int, 2> dims{grid.nprows(), grid.npcols()}, periods{0, 0};
    plexus::mpi::check(MPI_Cart_create(grid.comm(), 2, dims.data(), periods.data(), 0, &cart), "MPI_Cart_create");
    std::array<int, 2> coords{-1, -1};
    plexus::mpi::check(MPI_Cart_coords(cart, plexus::mpi::rank(cart), 2, coords.data()), "MPI_Cart_coords");
    if (coords[0] != grid.myprow() || coords[1] != grid.mypcol())
      throw Error("dbcsr", "the Cartesian communicator places this rank at (" + std::to_string(coords[0]) + ", " +
                               std::to_string(coords[1]) + "), plexus's grid at (" + std::to_string(grid.myprow()) +
                               ", " + std::to_string(grid.mypcol()) + ")");
    int io_unit = 0;  // DBCSR prints nothing
    c_dbcsr_init_lib(cart, &io_unit);
    dbcsr_distribution da = make_distribution(A, cart), db = make_distribution(B, cart),
                       dc = make_distribution(C, cart);
    dbcsr_matrix ma = make_matrix(A, da, "plexus op(A)"), mb = make_matrix(B, db, "plexus op(B)"),
                 mc = make_matrix(C, dc, "plexus C");
    const double setup = lap();

    // Conversion in: blocks are copied as they are (same sizes, same owner, both column-major).
    // C's blocks go in when its values count (beta != 0) or its pattern does (retain_sparsity).
    // With filtering, block row i of A and C is scaled by n_i (see row_scales), and C's by 1/n_i
    // on the way back.
    const std::vector<double> scale = row_scales(task);
    put_local(A, ma, scale);
    put_local(B, mb, {});
    if (beta != 0.0 || options.retain_sparsity)
      put_local(C, mc, scale, /*zeros=*/beta == 0.0);
    else
      c_dbcsr_finalize(mc);
    const double convert_in = lap();

    // DBCSR's multiply, with its own on-the-fly filtering (filter_eps) and retain_sparsity.
    const bool retain = options.retain_sparsity;
    const double eps = options.filter_eps;
    long long flop = 0;
    c_dbcsr_multiply_d('N', 'N', 1.0, ma, mb, beta, mc, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, &retain,
                       eps > 0 ? &eps : nullptr, &flop);
    const double multiply = lap();

    Panel result = take_local(mc, C, scale);
    const double convert_out = lap();

    c_dbcsr_release(&ma);
    c_dbcsr_release(&mb);
    c_dbcsr_release(&mc);
    c_dbcsr_distribution_release(&da);
    c_dbcsr_distribution_release(&db);
    c_dbcsr_distribution_release(&dc);
    c_dbcsr_finalize_lib();
    plexus::mpi::check(MPI_Comm_free(&cart), "MPI_Comm_free");
    const double session = setup + lap();

    plexus::MultiplyReport& report = task.report();
    // DBCSR's flop count, which it returns averaged over the ranks (summed over ranks: the
    // product's). Debian's 2.5 returns 0 through the C API (docs/dbcsr.md): then not counted.
    report.flops = static_cast<double>(flop);
    report.extra["dbcsr_convert_in_seconds"] = convert_in;
    report.extra["dbcsr_multiply_seconds"] = multiply;
    report.extra["dbcsr_convert_out_seconds"] = convert_out;
    report.extra["dbcsr_session_seconds"] = session;
    report.extra["skipped_products_not_counted"] = 1;  // DBCSR filters on the fly without telling how often
    return result;
  }
};

plexus::ParameterListPtr dbcsr_parameters() { return Teuchos::rcp(new plexus::ParameterList("dbcsr")); }

const plexus::PluginDescriptor& describe() {
  static const plexus::PluginDescriptor d = [] {
    plexus::PluginDescriptor p;
    p.name = "comm_dbcsr";
    p.version = "1.0.0";
    plexus::ComponentDescriptor c;
    c.kind = plexus::ComponentKind::Comm;
    c.name = "dbcsr";
    c.summary =
        "DBCSR's own multiply (libdbcsr, its C API; Cannon with BLAS in Debian's build): operands converted to "
        "DBCSR matrices with the same blocks and distribution, C converted back. Figures: dbcsr_convert_in_seconds, "
        "dbcsr_multiply_seconds, dbcsr_convert_out_seconds, dbcsr_session_seconds (library init/finalize, "
        "distributions); flops are DBCSR's. DBCSR's MPI traffic is not counted. The kernel selection does not "
        "apply (DBCSR multiplies its blocks itself; it uses the kernel's thread count). No parameters.";
    c.valid_parameters = dbcsr_parameters;
    c.make_comm = [](const plexus::ParameterList&) { return std::make_unique<Dbcsr>(); };
    p.components.push_back(std::move(c));
    return p;
  }();
  return d;
}

}  // namespace

PLEXUS_PLUGIN(describe)
