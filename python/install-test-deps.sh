#!/usr/bin/env bash
# Installs what the Python reader's tests and the Go↔pyarrow cross-language
# test need: pyarrow, numpy, confluent-kafka, pytest, torch (from PyPI, or
# TORCH_INDEX_URL), peft and safetensors, and the reader package itself. Idempotent: installs only
# what is missing.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
py="${PYTHON:-python3}"
export PIP_ROOT_USER_ACTION=ignore

# torch (the GRPO examples and the closed-loop test train on the CPU). From
# PyPI by default: on Linux that is the CUDA build (a ~0.5 GiB wheel plus the
# CUDA runtime packages, several GiB); where PyTorch's CPU index is reachable,
# TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu installs the much
# smaller CPU-only build instead. peft and safetensors
# (below, after torch, which peft needs): the example
# trainer saves its versions as PEFT LoRA adapters (adapter_config.json +
# adapter_model.safetensors), what vLLM loads.
if ! "$py" -c "import importlib.util, sys; sys.exit(importlib.util.find_spec('torch') is None)"; then
  "$py" -m pip install -q --disable-pip-version-check ${TORCH_INDEX_URL:+--index-url "$TORCH_INDEX_URL"} torch
fi
# Which modules are missing, found without importing them (importing torch
# alone takes seconds).
read -r -a missing < <("$py" - <<'PY'
import importlib.util
pkgs = {"pyarrow": "pyarrow", "numpy": "numpy", "confluent_kafka": "confluent-kafka", "pytest": "pytest",
        "peft": "peft", "safetensors": "safetensors"}
print(" ".join(p for m, p in pkgs.items() if importlib.util.find_spec(m) is None))
PY
)
if ((${#missing[@]})); then
  "$py" -m pip install -q --disable-pip-version-check "${missing[@]}"
fi
# The reader itself, from this checkout (cheap; reinstalled to pick up
# changes; built with the setuptools already installed).
(cd / && "$py" -m pip install -q --disable-pip-version-check --no-deps --no-build-isolation --force-reinstall "$here") >/dev/null
