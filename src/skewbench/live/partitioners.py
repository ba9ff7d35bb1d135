"""The grouping strategies for a Flink user's own job (``make flink-partitioners``; docs/flink.md):
one jar with the Java routers (``java/partition/``, package ``skewbench.partition``) and their Flink
adapter (``java/flink/``, package ``skewbench.flink``: ``StrategyPartitioner``, a Flink
``Partitioner`` for ``partitionCustom``, and ``KeySplitting``, the merge step of the strategies
that split keys), compiled with ``javac`` against the Flink environment's jars (``make flink-env``).

The jar is built in ``<state>/flink/partitioners-<digest>/`` once per version of its sources and
copied to the stable path :func:`jar_path`, ``<state>/flink/skewbench-partitioners.jar``.  Its
classes need Flink's jars at run time (a Flink job has them) and nothing of skewbench's Python side.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

from skewbench.errors import SkewbenchError

SOURCES = Path(__file__).with_name("java") / "flink"
PACKAGE = "skewbench.flink"
JAR = "skewbench-partitioners.jar"


def sources() -> list[Path]:
    """The jar's sources: the routers' and the adapter's."""
    from skewbench.live.routers import sources as router_sources

    return [*router_sources(), *sorted(SOURCES.glob("*.java"))]


def jar_path(state: Path) -> Path:
    """Where :func:`partitioners_jar` puts the jar: ``<state>/flink/skewbench-partitioners.jar``."""
    return state / "flink" / JAR


def partitioners_jar(state: Path) -> Path:
    """The jar at :func:`jar_path`, compiled against the Flink environment's jars when its sources
    changed (:class:`SkewbenchError` naming ``make flink-env`` when that environment is missing)."""
    from skewbench.live.flink import classpath
    from skewbench.live.routers import build_jar, digest

    jars = classpath()
    srcs = sources()
    built = build_jar(srcs, state / "flink" / f"partitioners-{digest(srcs)}", JAR, classpath=jars, release="11",
                      what="the Flink partitioners and the routers", tool_what="the Flink partitioners compile")
    out = jar_path(state)
    if not out.exists() or out.read_bytes() != built.read_bytes():
        with tempfile.NamedTemporaryFile(dir=out.parent, prefix=".jar-", delete=False) as tmp:
            shutil.copy(built, tmp.name)  # its mode too (a temporary file is private)
        os.replace(tmp.name, out)
    return out


def main() -> int:
    """``python -m skewbench.live.partitioners``: build the jar under the state directory, print its path."""
    from skewbench.settings import flink_environment, settings

    try:
        jar = partitioners_jar(Path(settings().state))
        lib = flink_environment().pyflink / "lib"
    except SkewbenchError as exc:
        print(f"make flink-partitioners: {exc}", file=sys.stderr)
        return 2
    print(f"{jar}\n  {PACKAGE}.StrategyPartitioner, {PACKAGE}.KeySplitting and the routers (docs/flink.md); "
          f"compile and run a job with Flink's jars: -cp '{lib}/*:{jar}'")
    return 0


if __name__ == "__main__":
    sys.exit(main())
