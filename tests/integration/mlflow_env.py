"""A real ``mlflow server`` process on loopback for the browser tests (its own process group,
stopped by it)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path


class MlflowServer:
    """``mlflow server`` on ``127.0.0.1:port`` over the SQLite store ``db`` (its artifacts where the
    runs put them, new experiments' under ``artifact_root`` when given); ``url`` is its UI and its
    tracking URI."""

    def __init__(self, db: Path, port: int, log: Path, artifact_root: Path | None = None):
        self.db, self.port, self.log_path, self.proc = Path(db), port, Path(log), None
        self.artifact_root = artifact_root
        self.url = self.uri = f"http://127.0.0.1:{port}"

    def start(self, timeout: float = 180.0) -> "MlflowServer":
        cmd = [str(Path(sys.executable).parent / "mlflow"), "server", "--host", "127.0.0.1", "--port", str(self.port),
               "--backend-store-uri", f"sqlite:///{self.db}", "--workers", "1"]
        if self.artifact_root is not None:
            cmd += ["--default-artifact-root", Path(self.artifact_root).as_uri()]
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True,
                                     env={**os.environ, "MLFLOW_DISABLE_TELEMETRY": "true"})
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"{self.url}/health", timeout=2) as r:
                    if r.status == 200:
                        return self
            except OSError:
                time.sleep(0.5)
            if self.proc.poll() is not None:
                raise AssertionError(self.log_path.read_text()[-3000:])
        raise AssertionError(f"mlflow server not up in {timeout} s")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        if self.proc is not None:
            self.log.close()
