"""``skewbench advise --fail-over X [--baseline OLD_KEYS --margin M]``: advise as a check in a
user's CI (issue 43, point 4), run as the command line runs it."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from skewbench.advise import advise
from skewbench.advise.check import check, engine_rows
from skewbench.cli import main


@pytest.fixture(scope="module")
def keys(tmp_path_factory):
    """The post-mortem's key change: user ids (20,000 distinct) replaced by 40 country codes with
    a Zipf(1.2) share each."""
    root = tmp_path_factory.mktemp("check")
    rng = np.random.default_rng(43)
    users = root / "users.txt"
    users.write_text("\n".join(f"user-{i}" for i in rng.permutation(20_000)) + "\n")
    w = 1.0 / np.arange(1, 41) ** 1.2
    codes = rng.choice(40, size=20_000, p=w / w.sum())
    countries = root / "countries.txt"
    countries.write_text("\n".join(f"C{c:02d}" for c in codes) + "\n")
    return {"users": users, "countries": countries}


def run(*args):
    r = CliRunner().invoke(main, ["advise", *map(str, args)], catch_exceptions=False)
    return r.exit_code, r.stdout, r.stderr


def test_fail_over_names_every_engine_row_over_the_limit(keys):
    code, out, err = run(keys["countries"], "--workers", "8,32", "--fail-over", "1.5", "--json")
    assert code == 1
    data = json.loads(out)
    rows = engine_rows(data["rows"])
    over = sorted((k[0], k[1], k[2]) for k, r in rows.items() if r["busiest_over_mean"] > 1.5)
    assert over and data["check"]["passed"] is False
    assert sorted((f["partitioner"], f["setting"], f["workers"]) for f in data["check"]["failures"]) == over
    lines = [ln for ln in err.splitlines() if ln.startswith("check failed: ")]
    assert len(lines) == len(over)
    f = data["check"]["failures"][0]
    r = rows[f["partitioner"], f["setting"], f["workers"]]
    assert lines[0] == (f"check failed: {f['partitioner']}" + ("" if f["setting"] == "default" else
                                                                f" ({f['setting']} setting)")
                        + f" at p = {f['workers']}: busiest worker {r['busiest_over_mean']:.2f}x the mean, over 1.5; "
                        f"its hottest key {r['hottest_keys'][0]['key']!r} is "
                        f"{r['hottest_keys'][0]['share_of_worker']:.1%} of that worker")


def test_well_spread_keys_pass(keys):
    a = advise(str(keys["users"]), [8, 32], alternatives=[])
    worst = max(r["busiest_over_mean"] for r in engine_rows(a.rows).values())
    code, out, err = run(keys["users"], "--workers", "8,32", "--fail-over", f"{worst + 0.01:.2f}")
    assert code == 0 and "check passed: every engine default within" in err
    code, _, err = run(keys["users"], "--workers", "8,32", "--fail-over", f"{worst - 0.01:.2f}")
    assert code == 1 and err.count("check failed: ") >= 1


def test_a_key_change_is_caught_against_the_baseline(keys):
    code, out, err = run(keys["countries"], "--workers", "8,32", "--baseline", keys["users"], "--json")
    assert code == 1
    new = engine_rows(advise(str(keys["countries"]), [8, 32], alternatives=[]).rows)
    old = engine_rows(advise(str(keys["users"]), [8, 32], alternatives=[]).rows)
    worse = sorted(k for k in new if new[k]["busiest_over_mean"] > 1.1 * old[k]["busiest_over_mean"])
    got = json.loads(out)["check"]
    assert got["margin"] == 0.1 and sorted((f["partitioner"], f["setting"], f["workers"])
                                           for f in got["failures"]) == worse
    assert all(f["baseline"] == old[f["partitioner"], f["setting"], f["workers"]]["busiest_over_mean"]
               for f in got["failures"])
    assert "with the new keys against" in err
    # the same keys as their own baseline: nothing worse
    code, _, err = run(keys["users"], "--workers", "8,32", "--baseline", keys["users"], "--margin", "0")
    assert code == 0 and "none worse than the baseline by more than 0%" in err


def test_check_is_a_pure_function_of_the_rows():
    rows = [{"partitioner": "kafka", "kind": "engine", "workers": 4, "busiest_over_mean": 2.0, "setting": "default",
             "hottest_keys": [{"key": "k", "share_of_worker": 0.5}]},
            {"partitioner": "pkg", "kind": "alternative", "workers": 4, "busiest_over_mean": 9.0}]
    assert check(rows, 2.0)["passed"]  # at the limit passes; alternatives are not checked
    v = check(rows, 1.99)
    assert [f["reason"] for f in v["failures"]] == [
        "kafka at p = 4: busiest worker 2.00x the mean, over 1.99; its hottest key 'k' is 50.0% of that worker"]
    base = [dict(rows[0], busiest_over_mean=1.8)]
    assert check(rows, None, base, 0.12)["passed"] and not check(rows, None, base, 0.11)["passed"]


@pytest.mark.parametrize(("args", "message"), [
    (["--fail-over", "0.9"], r"^error: --fail-over is a busiest/mean ratio >= 1 \(1 is a perfect spread\), got 0.9$"),
    (["--fail-over", "lots"], r"^error: --fail-over takes a number, got 'lots'$"),
    (["--margin", "0.2"], r"^error: --margin needs --baseline$"),
    (["--baseline", "/nonexistent/keys.txt"], r"^error: .*/nonexistent/keys.txt"),
])
def test_bad_check_options_are_one_line_and_exit_2(keys, tmp_path, args, message):
    import re

    page = tmp_path / "p.html"
    code, out, err = run(keys["users"], "--workers", "8", *args, "--html", page)
    assert code == 2 and out == ""
    assert re.match(message, err.strip()), err
    assert not page.exists()
