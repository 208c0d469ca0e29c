"""The state and helpers of OpRecorder (cgtool/trace/op_recorder.py) that its two mixins, CallRecorder and
AtenDetail, use: declared once here so the type checker knows them; OpRecorder sets and defines them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from cgtool.model.trace import OpRecord
from cgtool.trace.frame_table import FrameTable
from cgtool.trace.sync_table import SyncTable
from cgtool.trace.unseen_origin import UnseenOrigin


class RecorderState:
    """Annotations only: no value is set here (see OpRecorder.__init__ for what each holds)."""

    virtual_cuda: bool
    frame_table: FrameTable
    ops: list[OpRecord] | None
    phase: str
    mute: int
    call_host: bool | None
    host_devices: dict[int, torch.device]
    backward_frames: tuple[int, int]
    call_names: dict[Any, str]
    call_kinds: dict[Any, tuple[str, int]]
    sync_table: SyncTable | None
    sync_key: str
    origin: str | None
    sized_by_call: dict[str, Any] | None
    unseen: UnseenOrigin | None

    if TYPE_CHECKING:
        def where(self, depth: int) -> tuple[int, int]: ...
        def host_info(self, t: torch.Tensor) -> tuple[str, bool] | None: ...
        def is_host(self, t: torch.Tensor) -> bool: ...
        def tag(self, value: Any, pinned: bool, origin: str | None = None) -> None: ...
        def untag(self, value: Any) -> None: ...
        def side(self, device: Any) -> str | None: ...
        def generator_detail(self, gen: Any) -> dict[str, Any]: ...
