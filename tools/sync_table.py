"""Generate cgtool's sync table on a CUDA machine: run PyTorch's OpInfo samples (op_db) and a list of
Python-level torch APIs under torch.cuda.set_sync_debug_mode("error"), name the outermost aten op that
synchronized, and infer under which arguments it does (cgtool/trace/sync_conditions.py's language).

    PYTHONPATH=. python3 tools/sync_table.py --out $OUT        # writes $OUT/sync_table-<major.minor>.json
                                                               # and $OUT/sync_table-run.md (summary)

Needs CUDA. What sync debug mode catches: c10::cuda::warn_or_error_on_sync(), called by stream_synchronize
and memcpy_and_sync (c10/cuda/CUDAFunctions.h): every device-to-host copy and stream/device wait that goes
through c10's helpers. A sync by other means (a raw cudaMemcpy in a library) is not seen; torch calls the
mode a prototype.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any, Callable, Iterator

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

from cgtool.trace.op_roles import call_name
from cgtool.trace.sync_conditions import Features, describe, features
from cgtool.trace.sync_table import TABLE_SCHEMA, infer_conditions

SYNC_MESSAGE = "called a synchronizing CUDA operation"
DTYPES = (torch.float32, torch.int64, torch.bool)


def _is_sync_error(exc: BaseException) -> bool:
    return SYNC_MESSAGE in str(exc)


class SyncWatch(TorchDispatchMode):
    """Records, per aten op call, its argument features and whether it synchronized (sync debug mode "error"
    raises inside it; the op is then rerun with the mode off so the sample goes on)."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[str, Features, bool]] = []
        self.syncs = 0

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        kwargs = kwargs or {}
        feats = features(func, args, kwargs, lambda t: t.is_cuda)
        name = str(func)
        try:
            out = func(*args, **kwargs)
        except RuntimeError as exc:
            if not _is_sync_error(exc):
                raise
            self.calls.append((name, feats, True))
            self.syncs += 1
            torch.cuda.set_sync_debug_mode(0)
            try:
                out = func(*args, **kwargs)
            finally:
                torch.cuda.set_sync_debug_mode("error")
            return out
        self.calls.append((name, feats, False))
        return out


class CallWatch(TorchFunctionMode):
    """Records the outermost Python-level torch calls (named as cgtool's tracer names them), their argument
    features, and whether an aten op inside synced (the CPU analysis skips CPU-only reads inside calls that
    run clean on CUDA, e.g. one_hot's input check)."""

    def __init__(self, syncs: SyncWatch) -> None:
        super().__init__()
        self.sync_watch = syncs
        self.calls: list[tuple[str, Features, bool]] = []
        self.outside: list[tuple[str, Features, bool | None]] = []  # per call: synced outside any aten op (None:
        # it synced inside one, so it tells nothing about Python-level syncs)

    def __torch_function__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        kwargs = kwargs or {}
        name = call_name(func)
        if name == "Tensor.<property>":
            return func(*args, **kwargs)
        feats = features(None, args, kwargs, lambda t: t.is_cuda)
        before = self.sync_watch.syncs
        try:
            out = func(*args, **kwargs)
        except RuntimeError as exc:
            if _is_sync_error(exc):  # SyncWatch reruns an aten op that synced: this one was outside any aten op
                self.calls.append((name, feats, True))
                self.outside.append((name, feats, True))
            raise
        inside = self.sync_watch.syncs > before
        self.calls.append((name, feats, inside))
        self.outside.append((name, feats, None if inside else False))
        return out


Watched = tuple[list[tuple[str, Features, bool]], list[tuple[str, Features, bool]], "str | None",
                list[tuple[str, Features, "bool | None"]]]


def run_watched(call: Callable[[], Any], device: str = "cuda") -> Watched:
    """Run `call` on CUDA under sync debug mode "error": the aten calls seen, the Python-level calls seen, and
    "python" when a sync happened outside any aten op (or the error text when the call failed otherwise), and per
    Python-level call whether it synced outside any aten op."""
    watch = SyncWatch()
    calls = CallWatch(watch)
    problem = None
    cuda = device == "cuda"  # "cpu": the plumbing only (a CPU smoke test), nothing can sync
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.set_sync_debug_mode("error")
    try:
        with calls, watch:
            call()
    except RuntimeError as exc:
        problem = "python" if _is_sync_error(exc) else f"error: {type(exc).__name__}"
    except Exception as exc:  # noqa: BLE001 - a sample that fails on its own is counted, not fatal
        problem = f"error: {type(exc).__name__}"
    finally:
        if cuda:
            torch.cuda.set_sync_debug_mode(0)
    return watch.calls, calls.calls, problem, calls.outside


def load_op_db() -> list[Any]:
    """PyTorch's OpInfo database. Its test utilities import `expecttest` (a test-only package) for a TestCase base
    class; where it is missing, unittest's TestCase stands in (the samples do not use it)."""
    import importlib.util

    if "expecttest" not in sys.modules and importlib.util.find_spec("expecttest") is None:
        import types
        import unittest

        stub = types.ModuleType("expecttest")
        stub.TestCase = unittest.TestCase  # type: ignore[attr-defined]
        sys.modules["expecttest"] = stub
    from torch.testing._internal.common_methods_invocations import op_db

    return op_db


def opinfo_samples(device: str = "cuda", dtypes: tuple[torch.dtype, ...] = DTYPES, limit_s: float = 150.0,
                   ops: list[str] | None = None, progress: dict[str, Any] | None = None
                   ) -> Iterator[tuple[str, Callable[[], Any], Any, Any]]:
    """(label, call, op, sample) for every OpInfo sample on `device`, for each dtype in `dtypes` the op supports
    (float32 first; the further dtypes stop once `limit_s` has passed); `ops`: only these OpInfo names.
    `progress` hears which dtypes ran ("dtypes") and whether the hard stop cut a pass short ("stopped")."""
    progress = progress if progress is not None else {}
    progress.update(dtypes=[], stopped=False)
    op_db = load_op_db()
    start = time.perf_counter()
    for k, dtype in enumerate(dtypes):
        if k and time.perf_counter() - start > limit_s:
            break
        progress["dtypes"].append(str(dtype))
        for op in op_db:
            if ops is not None and op.name not in ops:
                continue
            if time.perf_counter() - start > 1.5 * limit_s:  # a hard stop well inside the 6-minute budget
                progress["stopped"] = True
                return
            try:
                supported = op.supported_dtypes(device)
            except Exception:  # noqa: BLE001
                continue
            if dtype not in supported:
                if k or not supported:
                    continue
                dtype_here = sorted(supported, key=str)[0]  # an op without float32: its first dtype, once
            else:
                dtype_here = dtype
            try:
                samples = list(op.sample_inputs(device, dtype_here, requires_grad=False))
            except Exception:  # noqa: BLE001
                continue
            for i, s in enumerate(samples):
                label = f"{op.name}{'.' + op.variant_test_name if op.variant_test_name else ''}[{dtype_here}]#{i}"
                yield label, (lambda op=op, s=s: op(s.input, *s.args, **s.kwargs)), op, s


def api_cases(device: str) -> list[tuple[str, Callable[[], Any]]]:
    """Python-level torch APIs models use, with the argument variants that decide a sync."""
    d = device
    x = torch.randn(64, 64, device=d)
    spd = x @ x.T + 64 * torch.eye(64, device=d)
    v = torch.arange(10, device=d)
    i0 = torch.tensor(3, device=d)
    s0 = torch.tensor(-1e4, device=d)
    mask = torch.rand(64, 64, device=d) > 0.5
    lo, hi = x.min(), x.max()
    return [
        ("index with a 0-dim device tensor", lambda: x[i0]),
        ("index_put with a 0-dim device tensor", lambda: x.clone().__setitem__(i0, 0.0)),
        ("index with a Python int", lambda: x[3]),
        ("index with a slice", lambda: x[:, 1:3]),
        ("index with a Python list", lambda: x[:, [0, 3]]),
        ("index_put with a Python list", lambda: x.clone().__setitem__((slice(None), [0, 3]), 0.0)),
        ("index_put with a Python int", lambda: x.clone().__setitem__(3, 0.0)),
        ("unravel_index", lambda: torch.unravel_index(v, (2, 5))),
        ("masked_fill device scalar", lambda: x.masked_fill(mask, s0)),
        ("masked_fill Python number", lambda: x.masked_fill(mask, -1e4)),
        ("index_fill device scalar", lambda: x.index_fill(0, v, s0)),
        ("isin", lambda: torch.isin(v, torch.tensor([2, 3], device=d))),
        ("one_hot", lambda: torch.nn.functional.one_hot(v)),
        ("one_hot num_classes", lambda: torch.nn.functional.one_hot(v, num_classes=10)),
        ("linspace device bounds", lambda: torch.linspace(lo, hi, 16, device=d)),
        ("linspace Python bounds", lambda: torch.linspace(0.0, 1.0, 16, device=d)),
        ("logspace device bounds", lambda: torch.logspace(lo, hi, 16, device=d)),
        ("histc without range", lambda: torch.histc(x, bins=8)),
        ("histc with range", lambda: torch.histc(x, bins=8, min=-3, max=3)),
        ("bincount", lambda: torch.bincount(v)),
        ("repeat_interleave tensor", lambda: torch.repeat_interleave(v, v)),
        ("repeat_interleave output_size", lambda: torch.repeat_interleave(v, v, output_size=45)),
        ("nonzero_static", lambda: torch.nonzero_static(v, size=10)),
        ("linalg.solve", lambda: torch.linalg.solve(spd, x)),
        ("linalg.solve_ex", lambda: torch.linalg.solve_ex(spd, x)),
        ("linalg.cholesky", lambda: torch.linalg.cholesky(spd)),
        ("linalg.cholesky_ex", lambda: torch.linalg.cholesky_ex(spd)),
        ("linalg.inv_ex", lambda: torch.linalg.inv_ex(spd)),
        ("cholesky_solve", lambda: torch.cholesky_solve(x, torch.linalg.cholesky_ex(spd).L)),
        ("linalg.eigh", lambda: torch.linalg.eigh(spd)),
        ("linalg.svdvals", lambda: torch.linalg.svdvals(x)),
        ("normal tensor std", lambda: torch.normal(x, x.abs() + 0.1)),
        ("normal float std", lambda: torch.normal(x, 0.5)),
        ("multinomial", lambda: torch.multinomial(x.softmax(-1), 2)),
        ("masked.sum", lambda: torch.masked.sum(x, 0, mask=mask)),
        ("masked.mean", lambda: torch.masked.mean(x, 0, mask=mask)),
        ("masked.amax", lambda: torch.masked.amax(x, 0, mask=mask)),
        ("masked.softmax", lambda: torch.masked.softmax(x, 0, mask=mask)),
        ("masked.norm", lambda: torch.masked.norm(x, 2.0, 0, mask=mask)),
        ("clamp device bounds", lambda: x.clamp(lo, hi)),
        ("topk", lambda: x.topk(4)),
        ("where one argument", lambda: torch.where(mask)),
        ("tolist", lambda: v.tolist()),
    ]


def collect(limit_s: float = 150.0, device: str = "cuda", ops: list[str] | None = None,
            on_sample: Callable[[str, Any, Any], None] | None = None,
            dtypes: tuple[torch.dtype, ...] = DTYPES) -> dict[str, Any]:
    """Run everything; return per aten overload and per Python-level call its observations, per sample whether
    it synced ("truth"), and the counts. `on_sample(label, op, sample)` sees each OpInfo sample before it runs."""
    torch.manual_seed(0)
    obs: dict[str, list[tuple[Features, bool]]] = {}
    call_obs: dict[str, list[tuple[Features, bool]]] = {}
    outside_obs: dict[str, list[tuple[Features, bool]]] = {}  # per call: synced outside any aten op, or ran clean
    synced_by: dict[str, set[str]] = {}  # op -> labels of samples/APIs where it synced (a few)
    python_level: list[str] = []
    ops_run: set[str] = set()
    samples = errors = 0

    truth: dict[str, bool | None] = {}  # per sample: synced on CUDA (None: it failed on its own)

    def record(label: str, calls: list[tuple[str, Features, bool]], py_calls: list[tuple[str, Features, bool]],
               problem: str | None, outside: list[tuple[str, Features, bool | None]]) -> None:
        nonlocal errors
        for name, feats, synced in outside:
            if synced is not None:
                outside_obs.setdefault(name, []).append((feats, synced))
            if synced and len(synced_by.setdefault("python:" + name, set())) < 5:
                synced_by["python:" + name].add(label.split("[", 1)[0])
        truth[label] = None if problem and problem != "python" else (problem == "python" or any(s for _, _, s in calls))
        for name, feats, synced in py_calls:
            call_obs.setdefault(name, []).append((feats, synced))
        for name, feats, synced in calls:
            obs.setdefault(name, []).append((feats, synced))
            if synced and len(synced_by.setdefault(name, set())) < 5:
                synced_by[name].add(label)
        if problem == "python":
            python_level.append(label)
        elif problem:
            errors += 1

    progress: dict[str, Any] = {}
    for label, call, op, sample in opinfo_samples(device, dtypes, limit_s=limit_s, ops=ops, progress=progress):
        if on_sample is not None:
            on_sample(label, op, sample)
        ops_run.add(op.name)
        samples += 1
        record(label, *run_watched(call, device))
    for label, call in api_cases(device):
        samples += 1
        record("api: " + label, *run_watched(call, device))
    return {"obs": obs, "call_obs": call_obs, "outside_obs": outside_obs, "synced_by": synced_by, "truth": truth, "progress": progress, "python_level": python_level, "ops_run": len(ops_run),
            "samples": samples, "errors": errors}


def build_table(result: dict[str, Any], seconds: float) -> dict[str, Any]:
    ops = {}
    for name, observations in sorted(result["obs"].items()):
        clauses, unexplained = infer_conditions(observations)
        if clauses or unexplained:
            ops[name] = {"when": clauses, "seen": len(observations),
                         "synced": sum(1 for _, s in observations if s), "unexplained": unexplained,
                         "examples": sorted(result["synced_by"].get(name, ()))}
    calls = {}
    for name, observations in sorted(result["call_obs"].items()):
        clauses, unexplained = infer_conditions(observations)
        if clauses or unexplained:
            calls[name] = {"when": clauses, "seen": len(observations),
                           "synced": sum(1 for _, s in observations if s), "unexplained": unexplained}
    clean_calls = sorted(n for n in result["call_obs"] if n not in calls)
    clean_ops = sorted(n for n in result["obs"] if n not in ops)  # seen, never synced
    python_level = {}
    for name, observations in sorted(result.get("outside_obs", {}).items()):
        clauses, unexplained = infer_conditions(observations, sizes=False)
        if clauses:
            python_level[name] = {"when": clauses, "seen": len(observations), "unexplained": unexplained,
                                  "synced": sum(1 for _, s in observations if s),
                                  "examples": sorted(result["synced_by"].get("python:" + name, ()))}
    return {"schema": TABLE_SCHEMA, "torch_version": torch.__version__, "calls": calls, "clean_calls": clean_calls, "clean_ops": clean_ops,
            "dtypes": result["progress"].get("dtypes", []), "cut_short": result["progress"].get("stopped", False), "cuda": torch.version.cuda,
            "device": torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu (plumbing only)", "generated_by": "tools/sync_table.py",
            "opinfo_ops": result["ops_run"], "samples": result["samples"], "sample_errors": result["errors"],
            "aten_overloads_seen": len(result["obs"]), "seconds": round(seconds, 1),
            "python_level_syncs": result["python_level"], "python_level": python_level, "ops": ops}


def summary(table: dict[str, Any], path: str) -> str:
    lines = [f"# sync table, torch {table['torch_version']} on {table['device']}", "",
             f"OpInfo ops {table['opinfo_ops']}, samples {table['samples']} (failed on their own: "
             f"{table['sample_errors']}), aten overloads seen {table['aten_overloads_seen']}, "
             f"syncing overloads {len(table['ops'])}, time {table['seconds']} s, table {os.path.getsize(path)} bytes; "
             f"dtypes {', '.join(table['dtypes'])}{' (the last pass cut short by the time limit)' if table['cut_short'] else ''}",
             "",
             "| aten op | synced / seen | when | unexplained |", "|---|---|---|---|"]
    for name, e in table["ops"].items():
        when = "; or ".join(describe(c) for c in e["when"]) or "-"
        lines.append(f"| `{name}` | {e['synced']} / {e['seen']} | {when} | {e['unexplained']} |")
    lines += ["", f"Python-level calls seen {len(table['calls']) + len(table['clean_calls'])}, with a sync inside "
              f"{len(table['calls'])}:", "", "| call | synced / seen | when | unexplained |", "|---|---|---|---|"]
    for name, e in table["calls"].items():
        when = "; or ".join(describe(c) for c in e["when"]) or "-"
        lines.append(f"| `{name}` | {e['synced']} / {e['seen']} | {when} | {e['unexplained']} |")
    if table.get("python_level"):
        lines += ["", "Python-level syncs (outside any aten op), by call:", "", "| call | synced / seen | when |",
                  "|---|---|---|"]
        for name, e in table["python_level"].items():
            lines.append(f"| `{name}` | {e['synced']} / {e['seen']} | {'; or '.join(describe(c) for c in e['when'])} |")
    if table["python_level_syncs"]:
        families: dict[str, int] = {}
        for label in table["python_level_syncs"]:
            family = label.split("[", 1)[0]
            families[family] = families.get(family, 0) + 1
        lines += ["", f"Samples that synced outside any aten op: {len(table['python_level_syncs'])} ("
                  + ", ".join(f"{k} {v}" for k, v in families.items()) + ")"]
    return "\n".join(lines) + "\n"


def _resolve(opinfo_name: str) -> Any:
    """The torch callable an OpInfo name stands for ("unravel_index", "__getitem__", "masked.sum"), or None."""
    for root in (torch, torch.Tensor):
        obj = root
        for part in opinfo_name.split("."):
            obj = getattr(obj, part, None)
            if obj is None:
                break
        if obj is not None:
            return obj
    return None


def python_level_from_labels(table: dict[str, Any]) -> dict[str, Any]:
    """For a table made before the generator kept Python-level syncs per call: the calls named by its
    `python_level_syncs` samples (an OpInfo sample that synced outside any aten op) whose own entry in `calls`
    explains the sync, with the clauses on argument kinds only (a size clause there came from an aten-level
    sync inside the same call, as a boolean mask in `__getitem__`)."""
    out: dict[str, Any] = {}
    inner: set[str] = set()  # OpInfo names that are no torch function: the sync is a torch call inside them
    for label in table.get("python_level_syncs", ()):
        if label.startswith("api: "):
            continue  # an API case is a lambda: its own torch.tensor(..., device=...) argument may be the sync
        family = label.split("[", 1)[0]
        func = _resolve(family)
        name = call_name(func) if func is not None else None
        entry = table["calls"].get(name) if name else None
        if entry is None:
            inner.add(family)
            continue
        if name not in out:
            out[name] = _relearn(name, family, table["python_level_syncs"], entry)
    out = {k: v for k, v in out.items() if v["when"]}
    # torch.masked.*, torch.signal.windows.*: plain Python functions whose inner torch.tensor(data, device=cuda)
    # copies Python data to the GPU (the outermost torch call a TorchFunctionMode sees inside them)
    factory = table["calls"].get("torch.tensor")
    if inner and factory and factory["when"] == [[]]:
        out["torch.tensor"] = {"when": [[]], "seen": factory["seen"], "synced": factory["synced"], "unexplained": 0,
                               "examples": sorted(inner)}
    return out


def _relearn(name: str, family: str, synced_labels: list[str], entry: dict[str, Any]) -> dict[str, Any]:
    """The Python-level conditions of call `name` from the OpInfo samples of `family`, made again on the CPU (their
    arguments have the same structure as on CUDA; every tensor counts as a device tensor), each synced or not as
    the table's run recorded (`python_level_syncs`), on argument kinds only. Without the samples: the call's own
    clauses, less those on sizes."""
    synced = set(synced_labels)
    obs: list[tuple[Features, bool]] = []
    try:
        for label, _, op, sample in opinfo_samples("cpu", dtypes=(torch.float32,), limit_s=600.0, ops=[family]):
            obs.append((features(None, (sample.input, *sample.args), dict(sample.kwargs), lambda t: True),
                        label in synced))
    except Exception:  # noqa: BLE001 - op_db unavailable: fall back on the call's clauses
        obs = []
    if obs and any(s for _, s in obs):
        when, unexplained = infer_conditions(obs, sizes=False)
        return {"when": when, "seen": len(obs), "synced": sum(1 for _, s in obs if s), "unexplained": unexplained,
                "examples": [family], "learned_from": "OpInfo samples made on the CPU, outcomes of the table's run"}
    when = [c for c in entry["when"] if not any(":numel" in a for a in c)]
    return {"when": when, "seen": entry["seen"], "synced": entry["synced"], "unexplained": 0, "examples": [family]}


def annotate(path: str) -> dict[str, Any]:
    """Add the `python_level` section to a table that lacks it (see python_level_from_labels); rewrites `path`."""
    with open(path) as f:
        table = json.load(f)
    if "python_level" not in table:
        table["python_level"] = python_level_from_labels(table)
        with open(path, "w") as f:
            json.dump(table, f, indent=1, sort_keys=True)
            f.write("\n")
    return table


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default=os.environ.get("OUT", "."), help="folder for the table and its summary")
    p.add_argument("--limit", type=float, default=150.0, help="seconds after which no further dtype is started (all samples stop at 1.5 times this)")
    p.add_argument("--annotate", metavar="TABLE", help="add the python_level section to TABLE (a table made "
                   "before the generator kept it; no CUDA needed) and exit")
    a = p.parse_args(argv)
    if a.annotate:
        table = annotate(a.annotate)
        print(json.dumps(table["python_level"], indent=1))
        return 0
    if not torch.cuda.is_available():
        print("tools/sync_table.py needs a CUDA device", file=sys.stderr)
        return 2
    start = time.perf_counter()
    table = build_table(collect(a.limit), time.perf_counter() - start)
    major, minor = torch.__version__.split(".")[:2]
    os.makedirs(a.out, exist_ok=True)
    path = os.path.join(a.out, f"sync_table-{major}.{minor}.json")
    with open(path, "w") as f:
        json.dump(table, f, indent=1, sort_keys=True)
    text = summary(table, path)
    with open(os.path.join(a.out, "sync_table-run.md"), "w") as f:
        f.write(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
