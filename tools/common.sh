# Shared by tools/test.sh and tools/demo.sh (source it; it is not a program).
#   tad_root                 absolute path of the repository
#   tad_require_packages     installs the missing Debian packages (as root) or prints the
#                            command to do it and exits 1
#   tad_stage <label> <cmd>  runs a command and prints how long it took

tad_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

tad_packages=(cmake ninja-build g++ clang clang-tidy libclang-rt-14-dev libboost-dev libboost-test-dev libxsimd-dev
              libeigen3-dev libbenchmark-dev)

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
