"""cgtool's pytest plugin (entry point `pytest11`: cgtool): the `cgtool_check` fixture, assert_capturable for a test
that takes it, e.g. `def test_step(cgtool_check): cgtool_check(step, setup=setup, inputs=inputs)`. Loaded by pytest
at start: it imports nothing heavy until a test calls the fixture."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest


@pytest.fixture
def cgtool_check() -> Callable[..., Any]:
    """assert_capturable (cgtool.testing): check a step function or script, fail the test with the findings."""
    from cgtool.testing import assert_capturable

    return assert_capturable
