"""The sync table: which aten ops synchronize the host with a CUDA device, under which arguments. Generated
on a GPU by tools/sync_table.py (one JSON file per torch version, cgtool/trace/data/sync_table-<major.minor>.json);
read here, the nearest torch version's table when the running one has none. Also the inference that turns
observations (arguments, synced or not) into conditions (cgtool/trace/sync_conditions.py's language).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from typing import Any

from cgtool.trace.sync_conditions import Features, atoms, holds, matching_clause

# Copies sync when they go from the device to the host: a direction the table's conditions cannot express (a
# sample copying to the host syncs, the same op casting on the device does not). The analysis judges copies
# by their source and target (op_roles.COPY_ATEN, `move` in an op's detail), not by the table.
COPY_ATEN = frozenset({"aten._to_copy", "aten.copy_", "aten.copy", "aten.to"})

TABLE_SCHEMA = 1
DATA_DIR = os.path.join(os.path.dirname(__file__), "data")
_NAME = re.compile(r"^sync_table-(\d+)\.(\d+)\.json$")


@dataclass
class SyncTable:
    """ops: overload name ("aten.masked_fill.Tensor") -> list of clauses under which it syncs. calls: Python-level
    torch calls (the outermost one a TorchFunctionMode sees, "torch.nn.functional.one_hot") -> clauses under which
    a sync happened inside them on CUDA, for the calls whose arguments explain it; clean_calls: calls seen on CUDA
    that never synced. A CPU run that sees a sync-looking op inside a call that is clean on CUDA with these
    arguments (one_hot checks its input on the host on CPU only) does not report it."""

    torch_version: str  # the version the table was generated with ("2.11.0+cu130")
    ops: dict[str, list[list[str]]] = field(default_factory=dict)
    note: str | None = None  # set when the table is not the running torch's: says which one is used
    calls: dict[str, list[list[str]]] = field(default_factory=dict)
    clean_calls: frozenset[str] = frozenset()
    python_level: dict[str, list[list[str]]] = field(default_factory=dict)  # syncs outside any aten op, by call
    partial_calls: frozenset[str] = frozenset()  # calls with a few syncs their clauses do not explain

    @property
    def label(self) -> str:
        """How findings name the table: its torch version, and the note when it is another version's."""
        return self.torch_version + (f" ({self.note})" if self.note else "")

    def python_level_sync(self, name: str, feats: Features) -> list[str] | None:
        """The clause under which Python-level call `name` synchronizes outside any aten op on CUDA (a Python
        conversion of a device scalar, a copy of Python data to the device inside torch's Python code, as
        `unravel_index` or indexing with a 0-dim tensor), or None."""
        return matching_clause(self.python_level.get(name, []), feats)

    def call_is_clean(self, name: str, feats: Features) -> bool:
        """On CUDA, `name` with these arguments runs no sync (as far as the generator saw). For a call with syncs its
        clauses do not explain (`partial_calls`), only where every clause is contradicted by an argument given:
        `one_hot(t, num_classes=16)` is clean, `one_hot(t)` (num_classes left to its default, -1) is not."""
        if name in self.clean_calls:
            return True
        conditions = self.calls.get(name)
        if conditions is None or matching_clause(conditions, feats) is not None:
            return False
        if name not in self.partial_calls:
            return True
        return all(any(a.partition(":")[0] in feats and not holds(a, feats) for a in c) for c in conditions)

    @classmethod
    def from_json(cls, d: dict[str, Any], note: str | None = None) -> SyncTable:
        if d.get("schema") != TABLE_SCHEMA:
            raise ValueError(f"sync table schema {d.get('schema')!r} is not {TABLE_SCHEMA}")
        # a call counts where its clauses explain at least three quarters of its syncs (one_hot: 1 of 4 samples
        # that synced had the arguments of one that ran clean); otherwise its clean samples prove nothing
        calls = {k: [list(c) for c in v["when"]] for k, v in d.get("calls", {}).items()
                 if 4 * v.get("unexplained", 0) <= v.get("synced", 0)}
        python_level = {k: [list(c) for c in v["when"]] for k, v in d.get("python_level", {}).items()}
        partial = frozenset(k for k, v in d.get("calls", {}).items() if k in calls and v.get("unexplained"))
        ops = {k: [list(c) for c in v["when"]] for k, v in d["ops"].items() if k.rsplit(".", 1)[0] not in COPY_ATEN}
        return cls(d["torch_version"], ops, note, calls,
                   frozenset(d.get("clean_calls", ())), python_level, partial)


def _version(text: str) -> tuple[int, int]:
    m = re.match(r"(\d+)\.(\d+)", text)
    return (int(m.group(1)), int(m.group(2))) if m else (0, 0)


def table_path(torch_version: str, data_dir: str = DATA_DIR) -> tuple[str | None, bool]:
    """(path of the table for `torch_version`, exact); the nearest version's when there is no exact one
    (ties go to the older table); (None, False) without any table."""
    want = _version(torch_version)
    found = []
    for name in os.listdir(data_dir) if os.path.isdir(data_dir) else ():
        m = _NAME.match(name)
        if m:
            found.append(((int(m.group(1)), int(m.group(2))), name))
    if not found:
        return None, False
    exact = [n for v, n in found if v == want]
    if exact:
        return os.path.join(data_dir, exact[0]), True

    def distance(item: tuple[tuple[int, int], str]) -> tuple[int, int, int]:
        (major, minor), _ = item
        return (abs(major - want[0]), abs(minor - want[1]), -minor if (major, minor) < want else minor)

    return os.path.join(data_dir, min(found, key=distance)[1]), False


_cache: dict[tuple[str, str], SyncTable | None] = {}


def load_table(torch_version: str, data_dir: str | None = None) -> SyncTable | None:
    """The table for `torch_version` (or the nearest one, with a note saying so); None without any table.
    `data_dir`: by default $CGTOOL_SYNC_TABLE_DIR when set (the GPU tests point it at a freshly generated
    table), else the tables shipped in cgtool/trace/data/."""
    data_dir = data_dir or os.environ.get("CGTOOL_SYNC_TABLE_DIR") or DATA_DIR
    key = (torch_version, data_dir)
    if key not in _cache:
        path, exact = table_path(torch_version, data_dir)
        if path is None:
            _cache[key] = None
        else:
            with open(path) as f:
                d = json.load(f)
            note = None if exact else (f"no sync table for torch {torch_version}: using the one generated with torch "
                                       f"{d.get('torch_version')} ({os.path.basename(path)})")
            _cache[key] = SyncTable.from_json(d, note)
    return _cache[key]


# ---- inference (the generator) ----------------------------------------------------------------------------
def _thresholds(observations: list[tuple[Features, bool]]) -> dict[str, list[int]]:
    """Per tensor argument, the sizes seen in syncing observations, as candidate thresholds."""
    out: dict[str, set[int]] = {}
    for feats, synced in observations:
        if synced:
            for name, (kind, numel, _) in feats.items():
                if kind.startswith(("device", "host")) and numel > 0:
                    out.setdefault(name, set()).add(numel)
    return {k: sorted(v) for k, v in out.items()}


def infer_conditions(observations: list[tuple[Features, bool]], sizes: bool = True) -> tuple[list[list[str]], int]:
    """Clauses under which an op synced: each explains syncing observations and holds for no clean one.
    Returns (clauses, unexplained): syncing observations no clause can separate from a clean one (same
    arguments, different outcome) are left out and counted, so the table never claims a sync on arguments
    the GPU ran clean. `sizes=False`: argument kinds only (a Python-level sync depends on what an argument
    is, a device scalar or a Python number, not on how large a tensor is)."""
    pos = [f for f, s in observations if s]
    neg = [f for f, s in observations if not s]
    if not pos:
        return [], 0
    if not neg:
        return [[]], 0
    thresholds = _thresholds(observations) if sizes else {}
    neg_atoms = [atoms(f, thresholds) for f in neg]
    clauses: list[list[str]] = []
    unexplained = 0
    for feats in pos:
        if any(all(holds(a, feats) for a in c) for c in clauses):
            continue
        mine = atoms(feats, thresholds)
        clause: list[str] = []
        alive = list(range(len(neg)))
        while alive:
            # the atom that rules out most remaining clean observations; argument kinds before shapes and sizes
            best = max(sorted(mine - set(clause)), key=lambda a: (sum(a not in neg_atoms[i] for i in alive),
                                                                   _preference(a)), default=None)
            if best is None or all(best in neg_atoms[i] for i in alive):
                clause = []
                break
            clause.append(best)
            alive = [i for i in alive if best in neg_atoms[i]]
        if clause:
            clauses.append(sorted(clause))
        else:
            unexplained += 1
    return _minimal(clauses), unexplained


def _preference(atom: str) -> int:
    feature = atom.partition(":")[2]
    return 0 if feature.startswith("numel") else 1 if feature in ("0d", "nd", "tensor") else 2


def _minimal(clauses: list[list[str]]) -> list[list[str]]:
    """Drop duplicate clauses and those implied by a shorter one."""
    out: list[list[str]] = []
    for c in sorted(clauses, key=len):
        if not any(set(o) <= set(c) for o in out):
            out.append(c)
    return out
