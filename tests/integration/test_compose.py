"""docker/compose.yaml without Docker: it validates against the Compose specification's schema
(check-jsonschema's vendored copy), every service of skewbench's image runs a command that the
locked packages install (and Airflow's, MLflow's and Spark's own parsers accept its arguments),
Flink has a JobManager and two TaskManagers that Docker restarts, nothing is published beyond
127.0.0.1, and no secret is written in the repository."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
COMPOSE = REPO / "docker" / "compose.yaml"
DOCKERFILE = REPO / "docker" / "Dockerfile"
BIN = Path(sys.executable).parent
VAR = re.compile(r"\$\{(\w+)(?::?[-?][^}]*)?\}")


def check_compose(path: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / "check-jsonschema"), "--builtin-schema", "vendor.compose-spec", str(path)],
                          capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load(COMPOSE.read_text())


def ours(compose: dict) -> dict[str, dict]:
    """The services that run skewbench's image."""
    return {name: s for name, s in compose["services"].items() if s.get("image", "") == "${SKEWBENCH_IMAGE:-skewbench:latest}"}


def expand(text: str) -> str:
    """``${VAR}``, ``${VAR:-default}``, ``${VAR:?message}`` replaced by a stand-in value."""
    return VAR.sub(lambda m: f"x{m.group(1).lower()}", text)


def test_the_compose_file_validates_against_the_compose_specification(tmp_path):
    p = check_compose(COMPOSE)
    assert p.returncode == 0, p.stdout + p.stderr
    # the validator does check: a port given as a mapping is refused
    broken = yaml.safe_load(COMPOSE.read_text())
    broken["services"]["mlflow"]["ports"] = {"web": 5000}
    bad = tmp_path / "compose.yaml"
    bad.write_text(yaml.safe_dump(broken))
    p = check_compose(bad)
    assert p.returncode == 1 and "ports" in p.stdout, p.stdout + p.stderr


def test_the_stack_has_every_service_the_deployment_needs(compose):
    services = compose["services"]
    commands = {name: " ".join(s.get("entrypoint", []) + s.get("command", [])) for name, s in services.items()}
    for sub in ("api-server", "scheduler", "dag-processor", "triggerer", "db migrate"):
        assert any(c.startswith(f"airflow {sub}") for c in commands.values()), sub
    assert sum("deploy.worker.Worker" in c for c in commands.values()) == 2
    assert sum("deploy.master.Master" in c for c in commands.values()) == 1
    mlflow = next(c for c in commands.values() if c.startswith("mlflow server"))
    assert "postgresql+psycopg2://" in mlflow and "--artifacts-destination /mlflow-artifacts" in mlflow
    assert "mlflow-artifacts:/mlflow-artifacts" in services["mlflow"]["volumes"]
    sql = services["airflow-scheduler"]["environment"]["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"]
    assert sql.startswith("postgresql+psycopg2://")
    assert {s["image"] for s in services.values() if "postgres" in s["image"]} == {"${POSTGRES_IMAGE:-postgres:17-bookworm}"}
    # the live mode's Flink: a JobManager and two TaskManagers, the scheduler pointed at the first
    assert [n for n, c in commands.items() if c.endswith("pyflink/bin/jobmanager.sh start-foreground")
            or "/jobmanager.sh start-foreground " in c] == ["flink-jobmanager"]
    assert services["airflow-scheduler"]["environment"]["SKEWBENCH_FLINK_ADDRESS"].endswith("flink-jobmanager:8081}")


def flink_options(service: dict) -> dict[str, str]:
    """A Flink service's ``-D key=value`` options, its entrypoint's and then its command's."""
    args = service["entrypoint"][2:] + service.get("command", [])
    assert args[::2] == ["-D"] * (len(args) // 2) and len(args) % 2 == 0, args
    return dict(kv.split("=", 1) for kv in args[1::2])


def test_two_taskmanagers_each_its_own_host_restarted_when_their_process_dies(compose):
    """Two TaskManager services (a job's channels between them cross the network), each with its
    own host name (the JobManager and the other TaskManager reach it by its service name), 4 slots
    each unless FLINK_SLOTS says otherwise (8 in all, as the live mode's default 8 workers need),
    the data volume the live mode's work directory and checkpoints are in; Docker restarts one whose
    process dies, and the JobManager notices a lost one within seconds (its heartbeat timeout)."""
    services = compose["services"]
    tms = sorted(n for n, s in services.items() if "/taskmanager.sh" in " ".join(s.get("entrypoint", [])))
    assert tms == ["flink-taskmanager-1", "flink-taskmanager-2"]
    jm = flink_options(services["flink-jobmanager"])
    assert jm["jobmanager.rpc.address"] == jm["rest.address"] == "flink-jobmanager"
    for name in tms:
        s, o = services[name], flink_options(services[name])
        assert o["taskmanager.host"] == name, (name, o)
        assert o["jobmanager.rpc.address"] == "flink-jobmanager"
        assert o["taskmanager.numberOfTaskSlots"] == "${FLINK_SLOTS:-4}"
        assert s["restart"] == "unless-stopped" and "data:/data" in s["volumes"], name
        assert s["depends_on"] == ["flink-jobmanager"]
        assert int(o["heartbeat.timeout"]) <= 10_000
    assert services["flink-jobmanager"]["restart"] == "unless-stopped"
    assert int(jm["heartbeat.timeout"]) <= 10_000 and "data:/data" in services["flink-jobmanager"]["volumes"]
    # the same options apart from the host name
    one, two = (flink_options(services[n]) for n in tms)
    assert {k: v for k, v in one.items() if k != "taskmanager.host"} == \
        {k: v for k, v in two.items() if k != "taskmanager.host"}


PARSE = """
import json, sys
argvs = json.loads(sys.argv[1])
if sys.argv[2] == "airflow":
    from airflow.cli.cli_parser import get_parser
    parser = get_parser()
    for argv in argvs:
        assert callable(parser.parse_args(argv).func), argv  # argparse exits 2 on an unknown command or flag
else:
    from mlflow.cli import cli
    for argv in argvs:
        cli.make_context("mlflow", argv)  # click raises on an unknown command or option
print("parsed", len(argvs))
"""


def test_every_service_command_is_installed_and_its_arguments_parse(compose, tmp_path):
    """What each service of our image runs exists in the locked environment (this venv is
    installed from the same requirements.lock as the image), and the tool's own parser takes
    its arguments (Airflow's and MLflow's in a child process with a scratch AIRFLOW_HOME)."""
    import pyspark

    spark = Path(pyspark.__file__).parent
    assert re.search(r"PATH=\S*site-packages/pyspark/bin:\S*\$PATH", DOCKERFILE.read_text())  # spark-class on the image's PATH
    jars = list((spark / "jars").glob("spark-core_*.jar"))
    assert len(jars) == 1
    classes = set(zipfile.ZipFile(jars[0]).namelist())
    by_tool: dict[str, list[list[str]]] = {}
    for name, s in ours(compose).items():
        argv = [expand(a) for a in s["entrypoint"] + s.get("command", [])]
        tool, args = argv[0], argv[1:]
        if tool == "spark-class":
            assert (spark / "bin" / "spark-class").exists()
            assert args[0].replace(".", "/") + ".class" in classes, (name, args[0])
            continue
        if tool.startswith(FLINK_ENV):
            check_flink_command(name, tool, args)
            continue
        assert (BIN / tool).exists(), f"{name}: {tool} is not installed by requirements.lock"
        by_tool.setdefault(tool, []).append(args)
    assert set(by_tool) == {"airflow", "mlflow", "skewbench"}
    for tool in ("airflow", "mlflow"):
        p = subprocess.run([sys.executable, "-c", PARSE, json.dumps(by_tool[tool]), tool], capture_output=True,
                           text=True, timeout=300, env={**os.environ, "AIRFLOW_HOME": str(tmp_path / "airflow")})
        assert p.returncode == 0 and f"parsed {len(by_tool[tool])}" in p.stdout, p.stdout + p.stderr
    # the PostgreSQL driver of both database URIs
    p = subprocess.run([sys.executable, "-c", "import psycopg2"], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr


FLINK_ENV = "/opt/venv-flink/"


def check_flink_command(name: str, tool: str, args: list[str]) -> None:
    """A Flink daemon of the Flink environment the Dockerfile builds from requirements-flink.lock:
    one of Flink's own scripts in PyFlink's distribution, in the foreground, with -D key=value
    options (and the script present in this machine's Flink environment when there is one)."""
    lock = (REPO / "requirements-flink.lock").read_text()
    assert re.search(r"^apache-flink==2\.3\.0 ", lock, re.M), "requirements-flink.lock pins apache-flink 2.3.0"
    assert "python3 -m venv /opt/venv-flink" in DOCKERFILE.read_text() and "requirements-flink.lock" in DOCKERFILE.read_text()
    script = tool.rsplit("/pyflink/bin/", 1)
    assert len(script) == 2 and script[1] in ("jobmanager.sh", "taskmanager.sh"), (name, tool)
    assert args[0] == "start-foreground" and len(args) % 2 == 1, (name, args)
    for flag, kv in zip(args[1::2], args[2::2]):
        assert flag == "-D" and re.fullmatch(r"[a-z][a-zA-Z.-]*[a-zA-Z]=\S+", kv), (name, flag, kv)
    local = REPO / ".venv-flink"
    for pyflink in local.glob("lib/python3*/site-packages/pyflink"):
        assert (pyflink / "bin" / script[1]).exists(), (name, script[1])


def test_published_ports_bind_to_loopback_only(compose):
    published = [(name, p) for name, s in compose["services"].items() for p in s.get("ports", [])]
    assert published, "the UIs are published"
    for name, p in published:
        assert isinstance(p, str) and p.startswith("127.0.0.1:"), (name, p)


def test_no_secret_is_written_in_the_repository(compose):
    """Passwords, keys and secrets come from the environment (docker/.env, ignored by git), and
    compose refuses to start without them."""
    env = {}
    for name, s in compose["services"].items():
        for k, v in (s.get("environment") or {}).items():
            env[f"{name}.{k}"] = str(v)
    secret = {k: v for k, v in env.items()
              if re.search(r"PASSWORD|SECRET|FERNET", k.split(".")[1]) and not k.endswith("_FILE")}
    assert len(secret) >= 4
    for k, v in secret.items():
        assert re.fullmatch(r"\$\{\w+:\?[^}]+\}", v), (k, v)
    for k, v in env.items():  # URIs with credentials take the password from the environment
        for m in re.finditer(r"://[^:/@\s]+:([^@\s]+)@", v):
            assert m.group(1).startswith("${"), (k, v)
    mlflow = " ".join(compose["services"]["mlflow"]["entrypoint"])
    assert "mlflow:${MLFLOW_DB_PASSWORD}@" in mlflow
    assert "docker/.env" in (REPO / ".gitignore").read_text().split()
    example = (REPO / "docker" / "env.example").read_text()
    assert all(v == "change-me" for k, v in re.findall(r"^(\w+)=(.*)$", example, re.M)
               if re.search(r"PASSWORD|SECRET|KEY", k))
