#!/usr/bin/env bash
# Installs what the openai package's real-server tests need: llama.cpp's
# OpenAI-compatible server (llama-cpp-python[server], built from source on the
# CPU) and the gguf writer used to generate a tiny random-weight model.
# Idempotent: does nothing when the packages already import. The built wheel is
# kept in pip's cache, so a second install on the same machine does not rebuild.
set -euo pipefail

PY="${PYTHON:-python3}"
LLAMA_CPP_PYTHON_VERSION="${LLAMA_CPP_PYTHON_VERSION:-0.3.36}"
GGUF_VERSION="${GGUF_VERSION:-0.19.0}"

if "$PY" - <<'PY' 2>/dev/null
import gguf, numpy, llama_cpp, llama_cpp.server, fastapi, uvicorn, sse_starlette, pydantic_settings, starlette_context
PY
then
  exit 0
fi

# A portable CPU build: no GPU backends, no native-only instructions, no tests
# or examples; parallelism bounded so a small CI machine stays usable. -O1,
# not the release build's -O3: the tests serve a tiny random-weight model, and
# the build (the longest install of the suite) takes less CPU time.
export CMAKE_ARGS="${CMAKE_ARGS:--DGGML_NATIVE=OFF -DGGML_CUDA=OFF -DGGML_METAL=OFF -DGGML_VULKAN=OFF -DGGML_OPENMP=OFF -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DCMAKE_C_FLAGS_RELEASE=-O1 -DCMAKE_CXX_FLAGS_RELEASE=-O1}"
export CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-2}"

"$PY" -m pip install --quiet --disable-pip-version-check \
  "gguf==${GGUF_VERSION}" numpy \
  "llama-cpp-python[server]==${LLAMA_CPP_PYTHON_VERSION}"
