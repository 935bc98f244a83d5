#!/usr/bin/env bash
# Installs what the Python reader's tests and the Go↔pyarrow cross-language
# test need: pyarrow, numpy, confluent-kafka, pytest, torch (from PyPI), and
# the reader package itself. Idempotent: installs only what is missing.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
py="${PYTHON:-python3}"
export PIP_ROOT_USER_ACTION=ignore

missing=()
for spec in pyarrow:pyarrow numpy:numpy confluent_kafka:confluent-kafka pytest:pytest torch:torch; do
  mod="${spec%%:*}" pkg="${spec##*:}"
  "$py" -c "import $mod" >/dev/null 2>&1 || missing+=("$pkg")
done
if ((${#missing[@]})); then
  "$py" -m pip install -q --disable-pip-version-check "${missing[@]}"
fi
# The reader itself, from this checkout (cheap; reinstalled to pick up changes).
(cd / && "$py" -m pip install -q --disable-pip-version-check --no-deps --force-reinstall "$here") >/dev/null
