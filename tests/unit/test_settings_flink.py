"""``SKEWBENCH_FLINK_PYTHON`` and :func:`skewbench.settings.flink_environment`: the Flink
environment is found without starting it, or refused in one line naming ``make flink-env``.

The environments here are directory trees laid out as a virtual environment is (an interpreter
file, ``lib/python3.11/site-packages/pyflink``); the real one (``make flink-env``) is used by
``tests/integration/test_flink_engine.py``."""

from __future__ import annotations

from pathlib import Path

import pytest

from skewbench.errors import SkewbenchError
from skewbench.settings import FLINK_VENV, Settings, flink_environment

INSTALL = r"install it with `make flink-env`$"


def venv(root: Path, *, pyflink: bool = True, jar: bool = True, python: bool = True) -> Path:
    """A virtual environment's layout under ``root``; returns its interpreter's path."""
    (root / "bin").mkdir(parents=True)
    if python:
        (root / "bin" / "python").write_text("#!/bin/sh\n")
    pkg = root / "lib" / "python3.11" / "site-packages" / "pyflink"
    if pyflink:
        (pkg / "lib").mkdir(parents=True)
        (pkg / "__init__.py").write_text("")
        if jar:
            (pkg / "lib" / "flink-dist-2.3.0.jar").write_bytes(b"PK")
            (pkg / "lib" / "flink-python-2.3.0.jar").write_bytes(b"PK")
    return root / "bin" / "python"


def test_the_default_is_the_projects_flink_venv_when_it_exists(tmp_path, monkeypatch):
    monkeypatch.delenv("SKEWBENCH_FLINK_PYTHON", raising=False)
    monkeypatch.setenv("SKEWBENCH_PROJECT", str(tmp_path))
    assert Settings().flink_python is None
    with pytest.raises(SkewbenchError, match=rf"^the Flink environment is not installed \(no {tmp_path}/"
                                             rf"\.venv-flink/bin/python, SKEWBENCH_FLINK_PYTHON unset\): {INSTALL}"):
        flink_environment()
    python = venv(tmp_path / FLINK_VENV)
    assert Settings().flink_python == python
    env = flink_environment()
    assert env.python == python and env.pyflink == tmp_path / FLINK_VENV / "lib/python3.11/site-packages/pyflink"
    assert [j.name for j in env.jars] == ["flink-dist-2.3.0.jar", "flink-python-2.3.0.jar"]


def test_the_variable_wins(tmp_path, monkeypatch):
    monkeypatch.setenv("SKEWBENCH_PROJECT", str(tmp_path))
    venv(tmp_path / FLINK_VENV)
    other = venv(tmp_path / "elsewhere")
    monkeypatch.setenv("SKEWBENCH_FLINK_PYTHON", str(other))
    assert flink_environment().python == other
    monkeypatch.setenv("SKEWBENCH_FLINK_PYTHON", str(tmp_path / "nowhere" / "python"))
    with pytest.raises(SkewbenchError, match=rf"^the Flink environment's interpreter {tmp_path}/nowhere/python does "
                                             rf"not exist \(SKEWBENCH_FLINK_PYTHON\): {INSTALL}"):
        flink_environment()


@pytest.mark.parametrize("broken", ["no pyflink", "no jar"])
def test_an_interpreter_without_pyflink_is_refused(tmp_path, monkeypatch, broken):
    python = venv(tmp_path / "env", pyflink=broken != "no pyflink", jar=broken != "no jar")
    monkeypatch.setenv("SKEWBENCH_FLINK_PYTHON", str(python))
    with pytest.raises(SkewbenchError, match=rf"^{python} cannot import pyflink \(no pyflink with its lib/flink-dist "
                                             rf"jar under {tmp_path}/env/lib\*/python3\*/site-packages\): {INSTALL}"):
        flink_environment()


def test_the_message_is_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv("SKEWBENCH_FLINK_PYTHON", str(tmp_path / "x" / "python"))
    with pytest.raises(SkewbenchError, match="make flink-env") as info:
        flink_environment()
    assert "\n" not in str(info.value)
