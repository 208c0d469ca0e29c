import os
import shutil
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, settings

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "tests", "data")
collect_ignore = ["data"]  # fixtures, among them a user's test file that fails on purpose (tests/test_user_tests.py)

# Fuzzing (tests/fuzz/): CI runs a fixed, derandomized budget so the suite is repeatable and bounded
# (a few minutes on 2 cores); `HYPOTHESIS_PROFILE=long python -m pytest tests/fuzz` searches far more, randomly.
_FUZZ = {"deadline": None, "print_blob": True,
         "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much]}
settings.register_profile("ci", max_examples=150, derandomize=True, database=None, **_FUZZ)
settings.register_profile("long", max_examples=5000, **_FUZZ)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def _cuda_devices() -> int:
    try:
        import torch
    except ImportError:
        return 0
    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def pytest_collection_modifyitems(config, items):
    """`gpu` tests skip without a CUDA device, `multi_gpu` tests with fewer than 2 (torch is imported only
    when the collection holds such a test)."""
    marked = [item for item in items if "gpu" in item.keywords or "multi_gpu" in item.keywords]
    if not marked:
        return
    devices = _cuda_devices()
    for item in marked:
        if devices < 1:
            item.add_marker(pytest.mark.skip(reason="needs a CUDA device"))
        elif "multi_gpu" in item.keywords and devices < 2:
            item.add_marker(pytest.mark.skip(reason=f"needs 2 CUDA devices ({devices} here)"))


@pytest.fixture
def run_cli(tmp_path):
    """Run `python -m cgtool ...` in a subprocess (the real CLI, worker included)."""

    def run(*args, cwd=None, env=None, timeout=300):
        full_env = dict(os.environ, NO_COLOR="1", COLUMNS="200", **(env or {}))
        return subprocess.run([sys.executable, "-m", "cgtool", *map(str, args)], cwd=cwd or tmp_path,
                              capture_output=True, text=True, env=full_env, timeout=timeout)

    return run


@pytest.fixture
def has_dot():
    return shutil.which("dot") is not None


class FakeClock:
    """A clock that only moves when a test moves it (`clock.now += seconds`), for the bench stopping rule."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def tiny_disk(tmp_path):
    """A 64 KiB tmpfs (root only): an output disk that fills up. Skips where no tmpfs can be mounted."""
    mount = tmp_path / "disk"
    mount.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount)], capture_output=True)
    if r.returncode != 0:
        pytest.skip("cannot mount a tmpfs here (needs root)")
    yield mount
    subprocess.run(["umount", "-l", str(mount)], check=False)
