"""The analysis overhead bar on the GPU (deep_1000, cgtool's own GPU tracing): a traced iteration costs less than
3× an eager one more, and the fixed costs (tracer start + checks) stay under 2 s."""

import json
import os
import subprocess
import sys

import pytest
from conftest import ROOT

pytestmark = pytest.mark.gpu


def test_analysis_overhead_on_deep_1000(measured):
    r = subprocess.run([sys.executable, os.path.join(ROOT, "tests", "gpu", "overhead.py")], capture_output=True,
                       text=True, cwd=ROOT, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    d = json.loads(r.stdout.strip().splitlines()[-1])
    measured(f"eager {d['eager_ms']:.1f} ms, traced {d['traced_ms']:.1f} ms: +{d['added_x']:.2f}x "
             f"({d['us_per_op_added']:.0f} us/op over {d['ops_per_iter']:.0f} ops); tracer start "
             f"{d['tracer_start_s']:.2f} s + checks {d['checks_s']:.2f} s",
             added_x=round(d["added_x"], 3), fixed_s=round(d["tracer_start_s"] + d["checks_s"], 3),
             tracer_error=d["tracer_error"])
    assert d["added_x"] < 3.0
    assert d["tracer_start_s"] + d["checks_s"] < 2.0
