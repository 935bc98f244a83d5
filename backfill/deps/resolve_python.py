# Resolves a Python project's dependencies with pip, inside a resolution
# job's sandbox (its only network is the dependency mirror): the packages
# its requirement files name and those its own metadata (setup.py,
# setup.cfg, pyproject.toml) declares, installed into the target directory
# without the project itself (the workspace holds the project; a copy on
# PYTHONPATH would shadow the sources a candidate edits).
#
#   python3 resolve_python.py TARGET [REQUIREMENTS_FILE...]
import json
import os
import subprocess
import sys

PIP = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--no-input"]


def run(args):
    print("+ " + " ".join(args), flush=True)
    return subprocess.call(args)


def main():
    target, reqs = sys.argv[1], sys.argv[2:]
    req_args = []
    for r in reqs:
        req_args += ["-r", r]
    project = any(os.path.exists(f) for f in ("setup.py", "setup.cfg", "pyproject.toml"))
    if not project:
        if not req_args:
            return 0
        return run(PIP + ["install", "--no-warn-script-location", "--target", target] + req_args)
    report = "/tmp/murphy-resolve/report.json"
    os.makedirs(os.path.dirname(report), exist_ok=True)
    code = run(PIP + ["install", "--dry-run", "--ignore-installed", "--report", report, "."] + req_args)
    if code != 0:
        return code
    with open(report) as f:
        rep = json.load(f)
    pins = []
    for item in rep.get("install", []):
        url = (item.get("download_info") or {}).get("url", "")
        if url.startswith("file:"):
            continue  # the project itself
        meta = item.get("metadata") or {}
        pins.append("%s==%s" % (meta["name"], meta["version"]))
    if not pins:
        return 0
    pinned = "/tmp/murphy-resolve/pins.txt"
    with open(pinned, "w") as f:
        f.write("\n".join(pins) + "\n")
    return run(PIP + ["install", "--no-warn-script-location", "--no-deps", "--target", target, "-r", pinned])


sys.exit(main())
