"""Shared fixtures. Kernels run under Triton's interpreter on the CPU: set before triton loads."""

import os
import pathlib

os.environ.setdefault("TRITON_INTERPRET", "1")

import pytest  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLE_TASKS = ROOT / "examples" / "tasks"
EXAMPLE_SOLUTIONS = ROOT / "examples" / "solutions"
FIXTURES = ROOT / "tests" / "fixtures"


@pytest.fixture
def root() -> pathlib.Path:
    return ROOT
