#!/usr/bin/env bash
# Every GPU check in one call, from the repo root on the GPU machine; prints a table at the end.
#   ../shared/tools/device-wheels   (here, once: puts the graphviz wheel in .whl/)
#   device run: bash tools/gpu_check.sh      (carry: .whl)
set -u
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/site:$PWD
else
  export PYTHONPATH=$PWD
fi
export PYTHONUNBUFFERED=1 CUDA_PYTHON_DISABLE_MAJOR_VERSION_WARNING=1
exec python3 tools/gpu_check.py "$@"
