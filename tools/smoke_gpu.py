"""Early GPU smoke test of the capture pipeline without the CLI (run on the GPU machine)."""
import json
import sys
import tempfile
import time

sys.path.insert(0, ".")
from cgtool.model.job import Job
from cgtool.model.phase_log import PhaseLog
from cgtool.pipeline.capture_job import capture_job

for path in sys.argv[1:]:
    with tempfile.TemporaryDirectory() as wd:
        t0 = time.perf_counter()
        job = Job("capture", path, "step", {"warmup": 3, "capture_mode": "global", "checks": False}, work_dir=wd)
        r = capture_job(job, PhaseLog())
        d = r.to_json()
        g = d.get("graph") or {}
        print(path, d["status"], "errors:", d["errors"], "counts:", json.dumps(g.get("counts", {}))[:400])
        print("  replay:", json.dumps(d["replay"])[:300])
        print("  timings:", d["timings"], "settings:", d["settings"])
        if r.graph is not None:
            print("  first kernels:", [(n.name, n.launch) for n in r.graph.kernels[:3]])
        import os
        import re
        dd = os.path.join(wd, "graph.driver.dot")
        if os.path.exists(dd):
            txt = open(dd).read()
            ids = set(re.findall(r'"(graph_\d+_node_\d+)"\s*\[', txt))
            print("  driver dot nodes:", len(ids), "ours:", len(r.graph.nodes) if r.graph else None, "bytes", len(txt))
        print("  wall %.1fs" % (time.perf_counter() - t0))
