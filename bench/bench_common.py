"""What the bench scripts (scaling_bench.py, density_bench.py) share: the jobs' Open MPI settings,
errors and progress lines, the checks of the command line and of the output file, the plexus
program's plugin listing and version, and writing the JSON without replacing a file by accident.

A script names itself once (`configure("scaling_bench", "scaling")`): errors then read
"scaling_bench: error: ..." and progress lines "[scaling] ...", both on stderr.
"""
import datetime
import json
import os
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile

# As scripts/env.sh: root, more ranks than cores, no single-copy mechanism (containers forbid the
# one Open MPI picks). Waiting ranks yield where a job has more ranks than cores: Open MPI turns
# mpi_yield_when_idle on by itself there, and the benchmarks run one job at a time.
OMPI_ENV = {
    "OMPI_ALLOW_RUN_AS_ROOT": "1",
    "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
    "OMPI_MCA_rmaps_base_oversubscribe": "1",
    "OMPI_MCA_btl_vader_single_copy_mechanism": "none",
}

_names = {"program": "bench", "tag": "bench"}


def configure(program, tag):
    _names["program"], _names["tag"] = program, tag


class UsageError(Exception):
    pass


def fail(msg, code=2):
    sys.stderr.write("%s: error: %s\n" % (_names["program"], msg))
    sys.exit(code)


def log(msg):
    sys.stderr.write("[%s] %s\n" % (_names["tag"], msg))
    sys.stderr.flush()


def int_list(text, what):
    """A comma-separated list of distinct whole numbers >= 1 (UsageError otherwise)."""
    try:
        vals = [int(x) for x in text.split(",") if x.strip() != ""]
    except ValueError:
        raise UsageError("%s '%s' is not a comma-separated list of whole numbers" % (what, text))
    if not vals or any(v < 1 for v in vals):
        raise UsageError("%s '%s': give one or more numbers >= 1" % (what, text))
    if len(set(vals)) != len(vals):
        raise UsageError("%s '%s' names a value twice" % (what, text))
    return vals


def name_list(text, what, singular):
    """A comma-separated list of distinct names (UsageError where it is empty or names one twice)."""
    names = [x.strip() for x in text.split(",") if x.strip()]
    if not names:
        raise UsageError("%s is empty" % what)
    if len(set(names)) != len(names):
        raise UsageError("%s names a %s twice" % (what, singular))
    return names


def add_output_options(parser, default_json, check_help):
    """--json, --force, --mpiexec and --check, the same in every driver."""
    parser.add_argument("--json", default=None, metavar="FILE",
                        help="where the JSON goes (default: %s); an existing file is refused unless --force"
                             % default_json)
    parser.add_argument("--force", action="store_true", help="replace an existing --json file")
    parser.add_argument("--mpiexec", default="mpiexec", metavar="CMD",
                        help="the MPI launcher, with any options of its own (default: %(default)s)")
    parser.add_argument("--check", action="store_true", help=check_help)


def job_environment(threads=1):
    """The jobs' environment: this one, OMPI_ENV where not set already, OMP_NUM_THREADS=threads."""
    env = dict(os.environ)
    for k, v in OMPI_ENV.items():
        env.setdefault(k, v)
    env["OMP_NUM_THREADS"] = str(threads)
    return env


def launcher(text):
    """--mpiexec's words with the program's full path (exit 2 where it is not found)."""
    words = shlex.split(text)
    path = shutil.which(words[0]) if words else None
    if path is None:
        fail("MPI launcher '%s' not found (install Open MPI, or give --mpiexec PATH)" % text)
    words[0] = path
    return words


def plexus_program(build, what="--build"):
    """<build>/bin/plexus, or exit 2 saying what is missing."""
    d = os.path.abspath(build)
    if not os.path.isdir(d):
        fail("%s: build directory '%s' does not exist" % (what, d))
    p = os.path.join(d, "bin", "plexus")
    if not (os.path.isfile(p) and os.access(p, os.X_OK)):
        fail("%s: no plexus program at '%s' (cmake --build %s --target plexus)" % (what, p, build))
    return p


def plugin_listing(plexus, env):
    """`plexus plugins --json -`: the components, the search path and the build's metadata."""
    p = subprocess.run([plexus, "plugins", "--json", "-"], env=env, capture_output=True, text=True)
    if p.returncode != 0:
        sys.stderr.write(p.stdout[-3000:] + p.stderr[-3000:])
        fail("`%s plugins --json -` failed (exit %d)" % (plexus, p.returncode), 1)
    try:
        return json.loads(p.stdout)
    except ValueError as e:
        fail("`%s plugins --json -` did not print JSON: %s" % (plexus, e), 1)


def available_strategies(listing):
    """The comm components: name -> (available, why not), and name -> the plugin file."""
    out = {}
    files = {}
    for comp in listing.get("components", []):
        if comp.get("kind") == "comm":
            out[comp.get("name")] = (bool(comp.get("available")), comp.get("unavailable_reason"))
            files[comp.get("name")] = comp.get("file")
    return out, files


def check_strategies(strategies, comms):
    """Exit 2 unless every strategy (a name, or name:options) is one of `comms` and can run here."""
    for s in strategies:
        name = s.split(":")[0]
        if name not in comms:
            fail("unknown strategy '%s' (this plexus has: %s)" % (name, ", ".join(sorted(comms))))
        if not comms[name][0]:
            fail("strategy '%s' cannot run here: %s" % (name, comms[name][1]))


def check_baseline_strategies(strategies, base_comms, base_plexus):
    """Exit 2 unless the baseline has every strategy, available: it runs the same commands."""
    for s in strategies:
        name = s.split(":")[0]
        if not base_comms.get(name, (False, None))[0]:
            fail("strategy '%s' cannot run with the baseline %s: %s (give --strategies without it)"
                 % (name, base_plexus, base_comms[name][1] if name in base_comms else
                    "it has no such strategy (it has: %s)" % ", ".join(sorted(base_comms))))


def program_version(plexus, env):
    """`plexus --version` (version, git commit, build configuration), or None where it fails."""
    try:
        p = subprocess.run([plexus, "--version"], env=env, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return p.stdout.strip() if p.returncode == 0 and p.stdout.strip() else None


def os_costs(plexus, env):
    """What the operating system charges here, from `plexus-bench --os-costs` beside `plexus` (a
    system call, a switch between two processes on one core, a fresh 4 KB page, in us; fresh memory
    on huge pages, GB/s): (the figures, None), or (None, why not). About 0.3 s, before any job."""
    bench = os.path.join(os.path.dirname(plexus), "plexus-bench")
    if not (os.path.isfile(bench) and os.access(bench, os.X_OK)):
        return None, "no plexus-bench beside %s" % plexus
    try:
        p = subprocess.run([bench, "--os-costs"], env=env, capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, "`%s --os-costs` failed: %s" % (bench, e)
    if p.returncode != 0:
        return None, "`%s --os-costs` failed (exit %d): %s" % (bench, p.returncode, p.stderr.strip()[-300:])
    try:
        costs = json.loads(p.stdout)["os_costs"]
    except (ValueError, KeyError, TypeError) as e:
        return None, "`%s --os-costs` printed no figures: %s" % (bench, e)
    return costs, None


def os_costs_line(costs, why_not):
    """The report's line for os_costs()' result."""
    if costs is None:
        return "operating system's costs: not measured (%s)" % why_not

    def us(k):
        v = costs.get(k)
        return "-" if v is None else "%.2f us" % v
    gbs = costs.get("fresh_huge_gb_per_s")
    return ("operating system: a system call %s, a switch between two processes on one core %s, a fresh "
            "4 KB page %s, fresh memory on huge pages %s (plexus-bench --os-costs)"
            % (us("syscall_us"), us("process_switch_us"), us("fresh_page_us"),
               "-" if gbs is None else "%.1f GB/s" % gbs))


def first_line(text):
    return text.splitlines()[0] if text else "version unknown"


def loadavg():
    try:
        return list(os.getloadavg())
    except OSError:
        return None


def default_json_path(kind):
    """bench/results/<kind>/<kind>-<host>-<UTC date and time>.json in the repository."""
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    stamp = datetime.datetime.utcnow().strftime("%Y%m%d-%H%M%S")
    return os.path.join(repo, "bench", "results", kind, "%s-%s-%s.json" % (kind, socket.gethostname(), stamp))


def check_output_path(path, force, created_default):
    """Before any job: the JSON's directory exists (made, for the default path) and is writable,
    and the file is not there unless --force."""
    d = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        fail("--json %s is a directory" % path)
    if not os.path.isdir(d):
        if created_default:
            os.makedirs(d, exist_ok=True)
        else:
            fail("--json %s: directory '%s' does not exist" % (path, d))
    if not os.access(d, os.W_OK):
        fail("--json %s: directory '%s' is not writable" % (path, d))
    if os.path.exists(path) and not force:
        fail("--json %s exists; give --force to replace it, or another name" % path)


def write_json(path, doc, force):
    """The whole file at once (a temporary file renamed into place), never over a file that
    appeared meanwhile unless --force."""
    d = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".%s-" % _names["tag"], suffix=".json", dir=d)
    with os.fdopen(fd, "w") as f:
        json.dump(doc, f, indent=1, sort_keys=False)
        f.write("\n")
    if force:
        os.replace(tmp, path)
    else:
        try:
            os.link(tmp, path)  # fails if the file appeared meanwhile: never replaced without --force
        finally:
            os.unlink(tmp)
