"""The job-graph nesting check (``instances._too_deep``, one numpy pass over the bytes before any
parsing) against a reference computed from the parsed document: brackets inside strings, escaped
quotes and backslashes do not count, and the path named is the first container over the limit."""

from __future__ import annotations

import json
import random

import pytest

from skewbench.allocation import instances as I


def reference(obj, limit: int, depth: int = 0, steps: tuple = ()):
    """The steps (``[i]``, ``.key``) to the first container, in document order, deeper than
    ``limit``, or None."""
    if isinstance(obj, (list, dict)):
        depth += 1
        if depth > limit:
            return steps
        items = [(f"[{i}]", v) for i, v in enumerate(obj)] if isinstance(obj, list) else \
            [(f".{k}", v) for k, v in obj.items()]
        for step, v in items:
            found = reference(v, limit, depth, steps + (step,))
            if found is not None:
                return found
    return None


def shown(steps: tuple) -> str:
    """The path as ``_too_deep`` words it: more than six steps keep the first three and last two."""
    if len(steps) > 6:
        return "".join(steps[:3]).lstrip(".") + "..." + "".join(steps[-2:]).lstrip(".")
    return "".join(steps).lstrip(".")


TRICKY_STRINGS = ["[[[[", "]]]]", '"', '\\', '\\"[', '{"a": [', "}}]]", "\\\\[", "x"]


def random_doc(rng: random.Random, depth: int):
    if depth == 0 or rng.random() < 0.2:
        return rng.choice([1, 2.5, None, True, rng.choice(TRICKY_STRINGS)])
    if rng.random() < 0.5:
        return [random_doc(rng, depth - 1) for _ in range(rng.randint(0, 3))]
    return {rng.choice(TRICKY_STRINGS) + str(i): random_doc(rng, depth - 1) for i in range(rng.randint(0, 3))}


def test_the_nesting_check_agrees_with_the_parsed_document():
    rng = random.Random(25)
    checked = over = 0
    for _ in range(400):
        doc = random_doc(rng, rng.randint(1, 9))
        text = json.dumps(doc).encode()
        for limit in (1, 2, 3, 5, 8):
            want = reference(doc, limit)
            got = I._too_deep(text, limit)
            assert got == (None if want is None else shown(want)), (text, limit)
            checked += 1
            over += want is not None
    assert over > 200 and checked - over > 200  # both verdicts are exercised


def test_the_limit_itself_passes_and_one_more_level_is_named():
    ok = "[" * I.MAX_DEPTH + "]" * I.MAX_DEPTH
    assert I._too_deep(ok.encode(), I.MAX_DEPTH) is None
    deep = {"instances": [{"groups": [], "meta": {"a": "[[[[" * 100, "b": [[[[[[[[[[[[1]]]]]]]]]]]]}}]}
    assert I._too_deep(json.dumps(deep).encode(), 8) == "instances[0].meta...[0][0]"


def test_a_job_graph_over_the_nesting_limit_is_refused_before_parsing(tmp_path):
    p = tmp_path / "g.json"
    p.write_text('{"name": "x", "meta": ' + "[" * 65 + "]" * 65 + "}")
    with pytest.raises(I.SkewbenchError, match=r"g\.json: meta\[0\]\[0\]\.\.\.\[0\]\[0\]: nested more than 64 levels "
                                               r"deep; at most 64$"):
        I.load_job_graphs(p)
