#!/usr/bin/env bash
# Installs what the Python reader's tests and the Go↔pyarrow cross-language
# test need: pyarrow, numpy, confluent-kafka, pytest, torch (from PyPI, or
# TORCH_INDEX_URL), peft and safetensors, and the reader package itself. Idempotent: installs only
# what is missing.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
py="${PYTHON:-python3}"
export PIP_ROOT_USER_ACTION=ignore

missing=()
for spec in pyarrow:pyarrow numpy:numpy confluent_kafka:confluent-kafka pytest:pytest; do
  mod="${spec%%:*}" pkg="${spec##*:}"
  "$py" -c "import $mod" >/dev/null 2>&1 || missing+=("$pkg")
done
if ((${#missing[@]})); then
  "$py" -m pip install -q --disable-pip-version-check "${missing[@]}"
fi
# torch (the GRPO examples and the closed-loop test train on the CPU). From
# PyPI by default: on Linux that is the CUDA build (a ~0.5 GiB wheel plus the
# CUDA runtime packages, several GiB); where PyTorch's CPU index is reachable,
# TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu installs the much
# smaller CPU-only build instead.
if ! "$py" -c "import torch" >/dev/null 2>&1; then
  "$py" -m pip install -q --disable-pip-version-check ${TORCH_INDEX_URL:+--index-url "$TORCH_INDEX_URL"} torch
fi
# peft and safetensors: the example trainer saves its versions as PEFT LoRA
# adapters (adapter_config.json + adapter_model.safetensors), what vLLM loads.
for spec in peft:peft safetensors:safetensors; do
  mod="${spec%%:*}" pkg="${spec##*:}"
  "$py" -c "import $mod" >/dev/null 2>&1 || "$py" -m pip install -q --disable-pip-version-check "$pkg"
done
# The reader itself, from this checkout (cheap; reinstalled to pick up changes).
(cd / && "$py" -m pip install -q --disable-pip-version-check --no-deps --force-reinstall "$here") >/dev/null
