# Shared by tools/test.sh and tools/demo.sh (source it; it is not a program).
#   tad_root                 absolute path of the repository
#   tad_require_packages     installs the missing Debian packages (as root) or prints the
#                            command to do it and exits 1
#   tad_stage <label> <cmd>  runs a command and prints how long it took
#   tad_cache_setup          the compile caches, outside the clone (below)

tad_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

tad_packages=(cmake ninja-build g++ clang clang-tidy libclang-rt-14-dev libboost-dev libboost-test-dev libxsimd-dev
              libeigen3-dev libbenchmark-dev ccache valgrind)

tad_require_packages() {
  if ! command -v dpkg-query >/dev/null 2>&1; then
    echo "tad: dpkg-query not found (not Debian?); not checking for: ${tad_packages[*]}" >&2
    return 0
  fi
  local missing=() p status
  for p in "${tad_packages[@]}"; do
    status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
    [[ $status == "install ok installed" ]] || missing+=("$p")
  done
  ((${#missing[@]} == 0)) && return 0
  if ((EUID == 0)); then
    echo "tad: installing missing packages: ${missing[*]}"
    apt-get update
    DEBIAN_FRONTEND=noninteractive apt-get install -y "${missing[@]}"
  else
    echo "tad: missing Debian packages: ${missing[*]}" >&2
    echo "Install them with:" >&2
    echo "  sudo apt-get update && sudo apt-get install -y ${missing[*]}" >&2
    exit 1
  fi
}

tad_now() { date +%s.%N; }
tad_elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }

# tad_stage <label> <command...>: runs the command, prints its duration, returns its status.
tad_stage() {
  local label=$1 start rc=0
  shift
  echo "==> ${label}"
  start=$(tad_now)
  "$@" || rc=$?
  if ((rc == 0)); then
    echo "==> ${label}: ok in $(tad_elapsed "$start" "$(tad_now)") s"
  else
    echo "==> ${label}: FAILED (exit ${rc}) after $(tad_elapsed "$start" "$(tad_now)") s" >&2
  fi
  return "$rc"
}

# tad_cache_setup: where a second run of unchanged code finds its results (doc/testing.md,
# "Caches"): TAD_CACHE_DIR, by default ~/.cache/tad, outside the clone, so that a fresh clone
# in another folder hits. ccache (compiles; CCACHE_BASEDIR makes the clone's paths relative,
# CCACHE_NOHASHDIR leaves the working directory out, the sloppiness lets it use the tests'
# precompiled headers; depend mode and the inode cache, below) and, in the same folder, the
# results ccache does not keep: failing compiles of the compile-fail tests
# (cmake/tad_compile_bad.cmake) and clean clang-tidy runs (tools/tidy_one.py). TAD_CACHE=0
# turns them off. Sets tad_launcher to the cmake arguments.
tad_cache_setup() {
  tad_launcher=()
  [[ ${TAD_CACHE:-1} != 0 ]] || { unset TAD_CACHE_DIR; return 0; }
  export TAD_CACHE_DIR=${TAD_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tad}
  mkdir -p "$TAD_CACHE_DIR"
  if command -v ccache >/dev/null 2>&1; then
    export CCACHE_DIR=${CCACHE_DIR:-$TAD_CACHE_DIR/ccache}
    export CCACHE_BASEDIR=$tad_root CCACHE_NOHASHDIR=true
    export CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime
    # Depend mode: a miss reads the compiler's own -MD list instead of running the preprocessor
    # first (+0.5 s per TU instead of +1.9 s, test/eval/contract.cpp); the inode cache hashes the
    # tests' 184 MB precompiled header once per run, not once per TU (a hit: 0.04 s, not 1.1 s).
    export CCACHE_DEPEND=true CCACHE_INODECACHE=true
    # The sanitizer ignorelist by content, not by path: ccache's BASEDIR does not rewrite the path
    # inside -fsanitize-ignorelist=, so the clone's absolute path made every clang-san compile
    # miss in another clone.
    export CCACHE_IGNOREOPTIONS='-fsanitize-ignorelist=*' CCACHE_EXTRAFILES=$tad_root/cmake/tad_ubsan_ignorelist.txt
    export CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-8G}
    tad_launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  fi
}
