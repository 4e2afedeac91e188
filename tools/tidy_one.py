#!/usr/bin/env python3
"""clang-tidy on one file of a compile_commands.json, skipped when an identical input was clean.

Usage (tools/tidy.sh runs it per file):
  tools/tidy_one.py CLANG_TIDY BUILD_DIR FILE

With TAD_CACHE_DIR in the environment (tools/common.sh: tad_cache_setup), a clean run leaves a
stamp under a key of what decides its result: clang-tidy's version, the .clang-tidy files of the
source tree, the file's compile command and its preprocessed text (the compiler's -E: every
header it reads), with the source and build folders replaced by names, so that a fresh clone in
another folder finds it. A file whose key has a stamp is not checked again (preprocessing takes
~1 s, clang-tidy ~20-60 s). Runs with findings leave no stamp. Python 3 standard library only.
"""

import hashlib
import json
import os
import shlex
import subprocess
import sys


def main():
    tidy, build_dir, path = sys.argv[1:4]
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    build_dir = os.path.abspath(build_dir)
    path = os.path.abspath(path)
    cache = os.environ.get("TAD_CACHE_DIR", "")
    stamp = None
    if cache:
        with open(os.path.join(build_dir, "compile_commands.json")) as f:
            entry = next((e for e in json.load(f) if os.path.abspath(os.path.join(e["directory"], e["file"])) == path),
                         None)
        if entry is not None:
            args = shlex.split(entry["command"]) if "command" in entry else list(entry["arguments"])
            pre, skip = [], False
            for a in args:
                if skip:
                    skip = False
                elif a == "-o":
                    skip = True
                elif a not in ("-c", "ccache"):
                    pre.append(a)
            run = subprocess.run(pre + ["-E"], cwd=entry["directory"], capture_output=True)
            if run.returncode == 0:
                h = hashlib.sha256()
                h.update(subprocess.run([tidy, "--version"], capture_output=True).stdout)
                for dirpath, dirs, files in os.walk(root):
                    dirs[:] = [d for d in dirs if d not in ("build", ".git")]
                    if ".clang-tidy" in files:
                        with open(os.path.join(dirpath, ".clang-tidy"), "rb") as f:
                            h.update(os.path.relpath(dirpath, root).encode() + f.read())
                text = entry["command"].encode() if "command" in entry else " ".join(args).encode()
                for blob in (text, run.stdout):
                    h.update(blob.replace(build_dir.encode(), b"@BINARY_DIR@").replace(root.encode(), b"@SOURCE_DIR@"))
                stamp = os.path.join(cache, "tidy", h.hexdigest())
                if os.path.exists(stamp):
                    print(f"clang-tidy: {os.path.relpath(path, root)}: clean (an identical input was, {stamp})")
                    return 0
    rc = subprocess.run([tidy, "-p", build_dir, "--quiet", path]).returncode
    if rc == 0 and stamp:
        os.makedirs(os.path.dirname(stamp), exist_ok=True)
        with open(stamp, "w") as f:
            f.write(os.path.relpath(path, root) + "\n")
    return rc


if __name__ == "__main__":
    sys.exit(main())
