"""What cgtool remembers about this machine between runs, in the user's cache folder: the fastest CPU probe
ever seen (cgtool/bench/cpu_load.py), so that a run whose CPU was slowed from start to end can tell.

$XDG_CACHE_HOME/cgtool/machine.json (default ~/.cache/cgtool/), keyed by host, CPU model and Python (the
probe is a Python loop: its speed depends on the interpreter). Reading or writing never fails a run.
"""

from __future__ import annotations

import json
import os
import platform
import socket
import tempfile
from typing import Any


def cache_path() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "cgtool", "machine.json")


def machine_key() -> str:
    model = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as fh:
            model = next((line.split(":", 1)[1].strip() for line in fh if line.startswith("model name")), model)
    except OSError:
        pass
    return f"{socket.gethostname()}|{model}|{platform.python_implementation()} {platform.python_version()}"


def _load(path: str) -> dict[str, Any]:
    try:
        with open(path) as fh:
            data = json.load(fh)
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def best_probe_us(path: str | None = None) -> float | None:
    """The fastest probe this machine has shown before, or None."""
    entry = _load(path or cache_path()).get(machine_key())
    value = entry.get("best_probe_us") if isinstance(entry, dict) else None
    return float(value) if isinstance(value, (int, float)) and value > 0 else None


def remember_probe_us(floor_us: float, path: str | None = None) -> None:
    """Keep `floor_us` when it is faster than what the cache holds (atomic; errors ignored)."""
    path = path or cache_path()
    data = _load(path)
    key = machine_key()
    found = data.get(key)
    entry = found if isinstance(found, dict) else {}
    old = entry.get("best_probe_us")
    if isinstance(old, (int, float)) and 0 < old <= floor_us:
        return
    data[key] = {**entry, "best_probe_us": round(floor_us, 3)}
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".machine-")
        with os.fdopen(fd, "w") as fh:
            json.dump(data, fh, indent=1)
        os.replace(tmp, path)
    except OSError:
        pass
