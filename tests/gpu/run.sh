#!/usr/bin/env bash
# The GPU suite, from the repository root on a GPU machine: pytest's own report (and summary line).
#   bash tests/gpu/run.sh                      # everything marked gpu (several device calls' worth: see README)
#   bash tests/gpu/run.sh tests/gpu/test_capture_gpu.py tests/gpu/test_lint_gpu.py    # a selection
#   bash tests/gpu/run.sh -k "faults or bench"
# With $OUT set: $OUT/gpu-pytest.log, $OUT/gpu-junit.xml, and the measured numbers in $OUT/gpu-results.txt.
# The graphviz Python wheel, where the image lacks it, comes from .whl/ (../shared/tools/device-wheels; carry .whl).
set -u
cd "$(dirname "$0")/../.."
if ls .whl/*.whl >/dev/null 2>&1; then
  # several runs of this script at once (one selection each) install once, in turn
  ( flock 9; [[ -e /tmp/site/.cgtool-installed ]] || { python3 -m pip install -q --no-index --no-deps --no-compile \
      --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && touch /tmp/site/.cgtool-installed; } ) 9>/tmp/cgtool-whl.lock \
    || exit 1
  export PYTHONPATH=/tmp/site:$PWD${PYTHONPATH:+:$PYTHONPATH}
else
  export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
fi
export NO_COLOR=1 PYTHONUNBUFFERED=1 CUDA_PYTHON_DISABLE_MAJOR_VERSION_WARNING=1
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1   # NVLink multicast off
args=("$@")
paths=0
for a in "${args[@]}"; do [[ "$a" == tests/* ]] && paths=1; done
[[ $paths == 1 ]] || args+=(tests/gpu)
python3 -c 'import torch; n = torch.cuda.get_device_name() if torch.cuda.is_available() else "no GPU"; print(f"torch {torch.__version__}, {torch.cuda.device_count()} x {n}")'
if [[ -n "${OUT:-}" ]]; then
  python3 -m pytest -m "gpu or multi_gpu" -p no:cacheprovider -rA --durations=15 --junitxml "$OUT/gpu-junit.xml" \
    "${args[@]}" 2>&1 | tee "$OUT/gpu-pytest.log"
  exit "${PIPESTATUS[0]}"
fi
exec python3 -m pytest -m "gpu or multi_gpu" -p no:cacheprovider -rA --durations=15 "${args[@]}"
