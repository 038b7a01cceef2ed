# Sourced by the plexus scripts: Open MPI settings for running as root, oversubscribed, on a
# small machine (more ranks than cores), and inside containers. OMP_NUM_THREADS is left as it
# is: without it, plexus gives each rank cores / ranks threads (and warns when ranks x threads
# exceed the cores).
# mpi_yield_when_idle is left to Open MPI: it turns it on by itself in a job with more ranks than
# cores (mpiexec then sets OMPI_MCA_mpi_oversubscribe=1 in the ranks), and a job that fits its
# cores waits faster without it (se on 2 ranks of 2 cores: 4-6 % a multiply, docs/performance.md,
# "Waiting ranks yield only where they share a core"). Several jobs at once on the same cores, as
# CTest runs them, need it set (cmake/PlexusTesting.cmake's PLEXUS_MPI_ENV does).
export OMPI_ALLOW_RUN_AS_ROOT=1
export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none
PLEXUS_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PLEXUS_BUILD_DIR="${PLEXUS_BUILD_DIR:-$PLEXUS_ROOT/build}"
PLEXUS_JOBS="${PLEXUS_JOBS:-$(nproc)}"
export PLEXUS_ROOT PLEXUS_BUILD_DIR PLEXUS_JOBS
