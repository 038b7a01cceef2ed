# Sourced by the plexus scripts: Open MPI settings for running as root, oversubscribed, on a
# small machine (more ranks than cores), and inside containers. OMP_NUM_THREADS is left as it
# is: without it, plexus gives each rank cores / ranks threads (and warns when ranks x threads
# exceed the cores).
export OMPI_ALLOW_RUN_AS_ROOT=1
export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_mpi_yield_when_idle=1
export OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none
PLEXUS_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PLEXUS_BUILD_DIR="${PLEXUS_BUILD_DIR:-$PLEXUS_ROOT/build}"
PLEXUS_JOBS="${PLEXUS_JOBS:-$(nproc)}"
export PLEXUS_ROOT PLEXUS_BUILD_DIR PLEXUS_JOBS
