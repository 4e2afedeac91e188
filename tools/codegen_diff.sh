#!/usr/bin/env bash
# Did a change move the machine code of the benchmarks' loops? Minutes of compiling instead of noisy benchmark runs.
#
#   tools/codegen_diff.sh [BASE [NEW]]
#
# BASE: a commit (default HEAD). NEW: a commit, or a directory holding a tad source tree; default
# the working tree (uncommitted edits included). Builds benchmark/codegen/workloads.cpp (one
# function per benchmark workload calling tad::grad_into as the benchmark does) with each
# compiler at BASE (a detached worktree /tmp/cg-base-<sha>, kept for the next run) and at NEW, with
# the benchmarks' flags (-O3 -DNDEBUG -march=native -std=c++20, benchmark/CMakeLists.txt and the
# Release build type), and compares per workload the loops of everything the workload function
# reaches (benchmark/codegen/loops.py: instruction ranges closed by a backward jump; addresses,
# jump/call targets and symbol names normalized). Prints per compiler and workload "same",
# "prologue changed only" or "loops changed" with a unified diff (first DIFF_LINES lines).
# If a tree has no workloads.cpp (a commit before it existed), the working tree's is copied in.
#
# Environment:
#   EXTRA_FLAGS       added to NEW's compile line (e.g. -DTAD_UNROLL=1)
#   BASE_EXTRA_FLAGS  added to BASE's compile line
#   COMPILERS         default "g++ clang++"
#   DIFF_LINES        lines of diff shown per changed workload (default 40)
#   CODEGEN_CACHE=0   rebuild a commit's binaries instead of reusing /tmp/cg-base-<sha>/.codegen-cache
#
# Exit status: 0 when every loop is the same for every compiler, 1 when some loop changed,
# 2 on an error (a build failed, a bad argument). Not a ctest (doc/benchmarks.md "Codegen diff").
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
base_rev=${1:-HEAD}
new_arg=${2:-}
compilers=${COMPILERS:-g++ clang++}
flags=(-O3 -DNDEBUG -march=native -std=c++20 -Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wsign-conversion)
src_rel=benchmark/codegen/workloads.cpp

die() { echo "codegen_diff: $*" >&2; exit 2; }

# worktree_of <commit>: prints the path of a detached worktree at that commit, creating it.
worktree_of() {
  local sha dir
  sha=$(git -C "$root" rev-parse --verify --quiet "$1^{commit}") || die "not a commit: $1"
  dir=/tmp/cg-base-${sha:0:12}
  if [[ -d $dir ]] && [[ $(git -C "$dir" rev-parse HEAD 2>/dev/null) == "$sha" ]]; then
    echo "$dir"
    return
  fi
  git -C "$root" worktree prune
  [[ -e $dir ]] && die "$dir exists and is not a worktree at $sha; remove it"
  git -C "$root" worktree add --detach --quiet "$dir" "$sha" >&2 || die "git worktree add $dir failed"
  echo "$dir"
}

# tree_of <commit|dir|"">: the source tree to build.
tree_of() {
  if [[ -z $1 ]]; then
    echo "$root"
  elif [[ -d $1 ]]; then
    (cd "$1" && pwd)
  else
    worktree_of "$1"
  fi
}

base_tree=$(tree_of "$base_rev")
new_tree=$(tree_of "$new_arg")
trees=("$base_tree")
[[ $new_tree == "$base_tree" ]] || trees+=("$new_tree")
for t in "${trees[@]}"; do
  # A copy made by an earlier run is refreshed (the working tree's may have changed since).
  [[ -f $t/benchmark/codegen/.copied-by-codegen-diff ]] && rm -f "$t/$src_rel"
  if [[ ! -f $t/$src_rel ]]; then
    echo "codegen_diff: $t has no $src_rel: using the working tree's"
    mkdir -p "$t/benchmark/codegen"
    cp "$root/$src_rel" "$t/$src_rel"
    touch "$t/benchmark/codegen/.copied-by-codegen-diff"
  fi
done
echo "codegen_diff: BASE $base_rev ($base_tree${BASE_EXTRA_FLAGS:+, +$BASE_EXTRA_FLAGS})" \
  "vs NEW ${new_arg:-working tree} ($new_tree${EXTRA_FLAGS:+, +$EXTRA_FLAGS})"

out=$(mktemp -d /tmp/cg-out.XXXXXX)
trap 'rm -rf "$out"' EXIT

# The workloads: every tad_cg_<W> defined in either tree's workloads.cpp. Each is compiled alone
# (-DTAD_CG_ONLY -DTAD_CG_ONLY_<W>): g++'s inlining budgets are per translation unit, so with all
# of them in one TU a change to one workload's code moved the loops of others.
mapfile -t work < <(cat "$base_tree/$src_rel" "$new_tree/$src_rel" | grep -o 'tad_cg_[A-Za-z0-9_]*(' |
                    sed 's/^tad_cg_//; s/($//' | sort -u)
((${#work[@]} > 0)) || die "no tad_cg_<workload> function in $src_rel"

# compile_one <W> <source> <dir> <compiler> <flags...>: <dir>/<W>.x, the workload W alone.
# shellcheck disable=SC2317  # called through xargs
compile_one() {
  local w=$1 src=$2 dir=$3 cxx=$4
  shift 4
  if ! "$cxx" "$@" -DTAD_CG_ONLY "-DTAD_CG_ONLY_$w" -c "$src" -o "$dir/$w.o" 2>"$dir/$w.log" ||
     ! "$cxx" "$dir/$w.o" -o "$dir/$w.x" -nostartfiles -Wl,-e,0 2>>"$dir/$w.log"; then
    cat "$dir/$w.log" >&2
    exit 255  # xargs stops
  fi
}
export -f compile_one

# build_dir <tree> <compiler> <extra flags> <dir>: one binary <dir>/<W>.x per workload
# (compiled, then linked without startup files or main: it is only disassembled), 2 at a time.
# For a commit's worktree the binaries are cached under the worktree, keyed by compiler
# version, flags and the source.
build_dir() {
  local tree=$1 cxx=$2 extra=$3 dir=$4 key cache=""
  if [[ $tree == /tmp/cg-base-* && ${CODEGEN_CACHE:-1} != 0 ]]; then
    key=$({ "$cxx" --version | head -1; echo "${flags[*]} $extra"; cat "$tree/$src_rel"; } | sha256sum | cut -c1-16)
    cache=$tree/.codegen-cache/$key
    if [[ -f $cache/done ]]; then
      cp -r "$cache" "$dir"
      return 0
    fi
  fi
  mkdir -p "$dir"
  # shellcheck disable=SC2086,SC2016  # extra: several flags; $@ is expanded by the inner bash
  printf '%s\n' "${work[@]}" | xargs -P "${JOBS:-2}" -I{} bash -c 'compile_one "$@"' _ {} "$tree/$src_rel" "$dir" \
    "$cxx" "${flags[@]}" -I "$tree/include" $extra || return 1
  cat "$dir"/*.log >&2
  if [[ -n $cache ]]; then
    rm -rf "$cache" && mkdir -p "$(dirname "$cache")" && cp -r "$dir" "$cache" && touch "$cache/done"
  fi
}

start=$(date +%s)
for cxx in $compilers; do
  command -v "$cxx" >/dev/null || die "compiler not found: $cxx"
  tag=${cxx//[^A-Za-z0-9]/_}
  build_dir "$base_tree" "$cxx" "${BASE_EXTRA_FLAGS:-}" "$out/base.$tag" || die "the BASE build with $cxx failed"
  build_dir "$new_tree" "$cxx" "${EXTRA_FLAGS:-}" "$out/new.$tag" || die "the NEW build with $cxx failed"
done
echo "codegen_diff: ${#work[@]} workloads (${work[*]}), built in $(( $(date +%s) - start )) s"

status=0
for cxx in $compilers; do
  tag=${cxx//[^A-Za-z0-9]/_}
  rc=0
  python3 "$root/benchmark/codegen/loops.py" "$out/base.$tag" "$out/new.$tag" --label "$cxx" \
    --diff-lines "${DIFF_LINES:-40}" || rc=$?
  ((rc <= 1)) || die "loops.py failed for $cxx"
  ((rc == 0)) || status=1
done
if ((status == 0)); then
  echo "codegen_diff: every loop is the same"
else
  echo "codegen_diff: some loops changed (benchmark/processes.py and the 3 % rule apply)"
fi
exit "$status"
