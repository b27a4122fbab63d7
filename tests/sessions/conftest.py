"""Fixtures for the session store tests: an initialised project and its store."""

from __future__ import annotations

from pathlib import Path

import pytest

import lore
from lore.project import Project
from lore.sessions import SessionStore


@pytest.fixture
def root(tmp_path) -> Path:
    """An initialised project folder."""
    path = tmp_path / "proj"
    lore.init(path).close()
    return path


@pytest.fixture
def store(root) -> SessionStore:
    return SessionStore(Project.find(root))
