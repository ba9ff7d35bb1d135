"""A real PyFlink job: ``key_by`` on the keys of some cases, counting the records each subtask of
the keyed operator receives.  Run by the Flink environment's interpreter (``make flink-env``), not
imported by skewbench or its tests (the project's environment cannot import pyflink)::

    .venv-flink/bin/python tests/integration/flink_keyby_job.py SPEC.json OUT_DIR

``SPEC.json``: ``{"cases": [{"name": ..., "key_format": "long" | "string", "parallelism": p,
"max_parallelism": P or 0, "keys": [...]}, ...]}``, keys as JSON integers (``long``: sent as
Java ``Long``) or strings (``string``: Java ``String``).  All cases run in one job (one start-up
of the local mini-cluster): per case, a source of its keys (parallelism 1), PyFlink's
``key_by(lambda k: k, key_type=Types.LONG() or Types.STRING())`` and a keyed process function
at parallelism ``p``, with max parallelism ``P`` when ``P > 0`` (otherwise Flink's default),
which counts its records.  When the job ends, every subtask of every case writes
``OUT_DIR/<case>-<subtask>.json``: ``{"case", "subtask", "parallelism", "max_parallelism",
"records"}``, the last three as Flink's runtime context reports them.  The keyed operators emit
nothing; each ends in a print sink only so that Flink keeps it in the job graph.  Exit status 0
once the job has finished.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from pyflink.common import Configuration, Types
from pyflink.datastream import KeyedProcessFunction, RuntimeContext, StreamExecutionEnvironment

KEY_TYPES = {"long": Types.LONG, "string": Types.STRING}


class CountPerSubtask(KeyedProcessFunction):
    """Counts the records of one subtask; writes the count when the subtask closes."""

    def __init__(self, case: str, out_dir: str):
        self.case, self.out_dir = case, out_dir
        self.records = 0
        self.context: dict[str, int] = {}

    def open(self, runtime_context: RuntimeContext):
        self.context = {"subtask": runtime_context.get_index_of_this_subtask(),
                        "parallelism": runtime_context.get_number_of_parallel_subtasks(),
                        "max_parallelism": runtime_context.get_max_number_of_parallel_subtasks()}

    def process_element(self, value, ctx: KeyedProcessFunction.Context):
        self.records += 1

    def close(self):
        out = Path(self.out_dir) / f"{self.case}-{self.context['subtask']}.json"
        tmp = out.with_suffix(".tmp")
        tmp.write_text(json.dumps({"case": self.case, **self.context, "records": self.records}))
        tmp.rename(out)


def main(spec_path: str, out_dir: str) -> None:
    spec = json.loads(Path(spec_path).read_text())
    config = Configuration()
    # the Python workers and the client run this interpreter (the Flink environment)
    config.set_string("python.executable", sys.executable)
    config.set_string("python.client.executable", sys.executable)
    env = StreamExecutionEnvironment.get_execution_environment(config)
    env.set_parallelism(max(c["parallelism"] for c in spec["cases"]))
    for case in spec["cases"]:
        key_type = KEY_TYPES[case["key_format"]]
        keys = [int(k) for k in case["keys"]] if case["key_format"] == "long" else [str(k) for k in case["keys"]]
        source = env.from_collection(keys, type_info=key_type()).set_parallelism(1)
        counted = source.key_by(lambda k: k, key_type=key_type()) \
            .process(CountPerSubtask(case["name"], out_dir), output_type=Types.STRING()) \
            .name(f"count-{case['name']}").set_parallelism(case["parallelism"])
        if case["max_parallelism"]:
            counted.set_max_parallelism(case["max_parallelism"])
        counted.print()
    t0 = time.monotonic()
    env.execute("skewbench-keyby-counts")
    print(f"job finished in {time.monotonic() - t0:.1f} s", file=sys.stderr)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: flink_keyby_job.py SPEC.json OUT_DIR")
    main(sys.argv[1], sys.argv[2])
