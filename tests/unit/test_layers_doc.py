"""docs/extending.md's layer list is the import-linter contract of pyproject.toml, word for word."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def documented_layers(text: str) -> list[str]:
    """The layers the page lists, top to bottom (the backquoted names joined by arrows)."""
    m = re.search(r"top to bottom \([^)]*\):\s*((?:`[^`]+`\s*→\s*)+`[^`]+`)", text)
    assert m, "docs/extending.md lists no layers ('top to bottom (...): `a` → `b` ...')"
    return [" ".join(x.split()) for x in re.findall(r"`([^`]+)`", m.group(1))]


def test_the_documented_layers_are_the_contracts():
    contract = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"][0]
    assert contract["type"] == "layers"
    assert documented_layers((REPO / "docs" / "extending.md").read_text()) == contract["layers"]


def test_a_layer_missing_from_the_page_is_caught():
    text = (REPO / "docs" / "extending.md").read_text().replace(" → `present`", "")
    assert documented_layers(text) != tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"][
        "contracts"][0]["layers"]
