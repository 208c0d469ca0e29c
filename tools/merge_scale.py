"""How the distributed merge scales with ranks: rank 0 of a real merged report.json copied N times, parsed and
merged (docs/distributed.md, "How the merge scales with ranks").

    PYTHONPATH=. python3 tools/merge_scale.py cgtool-out/STEP/report.json 2 8 64
"""

import json
import sys
import time

from cgtool.model.ranks import RankResult
from cgtool.model.job import Job
from cgtool.worker.launch import LaunchOutcome
from cgtool.worker.merge import merge

d = json.load(open(sys.argv[1]))
rk = d["ranks"][0]
per_rank = len(json.dumps(rk).encode())
events = len(json.dumps([{"collective": c} for c in rk["collectives"]]).encode())
report = len(json.dumps(rk["report"]).encode())
print(f"bytes per rank: {per_rank} (report {report}, collectives as events {events}, {len(rk['collectives'])} collectives)")
job = Job("capture", d["script"], "step", d["settings"], False, None)
for n in [int(x) for x in sys.argv[2:]]:
    texts = []
    for r in range(n):
        x = dict(rk); x["rank"] = r
        texts.append(json.dumps(x))
    t0 = time.perf_counter()
    ranks = [RankResult.from_json(json.loads(t)) for t in texts]
    t1 = time.perf_counter()
    out = merge(job, LaunchOutcome(ranks, []), d["settings"])
    t2 = time.perf_counter()
    print(f"{n:5d} ranks: parse {t1-t0:7.2f} s, merge {t2-t1:7.2f} s, total bytes {n*per_rank/1e6:8.1f} MB, findings {len(out.findings)}")
