"""The overview's "What to pick" tables (skewbench.present.overview.pick_table, what_to_pick) on hand-made
picks: a row per dataset, a column per kind of operator and worker count (in numeric order), in each cell
the pick and its change against the engine default (Pick.change, change_text), "–" where a dataset has
no pick, the pick's sentence on hover; the rules said once above the table and every sentence kept,
folded below it."""

from __future__ import annotations

from html.parser import HTMLParser

import pytest

from skewbench.present.overview import pick_table, what_to_pick
from skewbench.present.picks import Pick, Rule, change_text

KEYED = Rule("imbalance", "min", ("workers",), baseline="flink", kind="keyed aggregation",
             text="lowest imbalance, per worker count; vs flink")
SHUFFLE = Rule("latency_mean", "min", ("workers",), baseline="sg", kind="stateless operator",
               text="lowest mean completion time, per worker count; vs sg")


def pick(dataset, n, strategy, value, base, rule=KEYED, ties=(), note=""):
    return Pick("grouping", dataset, {"workers": n}, rule, strategy, value, base, {}, ties, note)


class Page(HTMLParser):
    """What the HTML shows: each table row's cells (tag, attributes, text), the paragraphs' text, and
    each list item's text with whether it is inside a <details>."""

    def __init__(self, text: str):
        super().__init__()
        self.rows: list[list[tuple[str, dict, str]]] = []
        self.paragraphs: list[tuple[dict, str]] = []
        self.items: list[tuple[dict, str, bool]] = []
        self._open: list[tuple[str, dict, list[str]]] = []
        self._details = 0
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        if tag == "details":
            self._details += 1
        elif tag == "tr":
            self.rows.append([])
        elif tag == "br":
            for _, _, buf in self._open:
                buf.append(" / ")
        elif tag in ("td", "th", "p", "li"):
            self._open.append((tag, dict(attrs), []))

    def handle_endtag(self, tag):
        if tag == "details":
            self._details -= 1
        elif tag in ("td", "th", "p", "li"):
            name, attrs, buf = self._open.pop()
            assert name == tag, (name, tag)
            text = " ".join("".join(buf).split())
            if tag in ("td", "th"):
                self.rows[-1].append((tag, attrs, text))
            elif tag == "p":
                self.paragraphs.append((attrs, text))
            else:
                self.items.append((attrs, text, self._details > 0))

    def handle_data(self, data):
        for _, _, buf in self._open:
            buf.append(data)


def texts(row):
    return [text for _, _, text in row]


def test_a_row_per_dataset_a_column_per_worker_count_and_a_dash_where_no_pick():
    picks = [pick("zipf-0.8", 10, "pkg", 0.01, 0.25), pick("zipf-0.8", 5, "dc", 0.062, 0.1),
             pick("zipf-1.4", 5, "flink", 0.2, 0.2, ties=("kg",)),  # the engine default is the pick
             pick("drift", 5, None, None, 0.3), pick("drift", 10, "wc", 0.0, 0.4, ties=("dc",))]
    page = Page(pick_table(picks))
    head, cols, *body = page.rows
    assert texts(head) == ["dataset", "keyed aggregation / imbalance vs flink"]
    assert head[1][1]["colspan"] == "2" and head[1][1]["title"] == picks[0].rule_text()
    assert texts(cols) == ["n=5", "n=10"]  # numbers in order, not as text ("10" < "5")
    assert [texts(r) for r in body] == [
        ["zipf-0.8", "dc −38%", "pkg ÷25"],
        ["zipf-1.4", "flink default (= kg)", "–"],  # zipf-1.4 has no pick at n = 10
        ["drift", "no pick", "wc −100% (= dc)"],
    ]
    # each cell's sentence on hover: the pick's line without the rule (said above the table)
    titles = [attrs.get("title") for r in body for tag, attrs, _ in r if tag == "td"]
    assert titles == [picks[1].line(rule=False), picks[0].line(rule=False), picks[2].line(rule=False), None,
                      picks[3].line(rule=False), picks[4].line(rule=False)]
    assert [attrs["class"] for r in body for tag, attrs, _ in r if tag == "td"] == [
        "pick-cell", "pick-cell", "pick-cell", "pick-cell missing", "pick-cell none", "pick-cell"]


def test_a_column_group_per_rule_and_the_datasets_in_the_order_of_their_picks():
    picks = [pick("b", 5, "osg", 2.0, 2.5, rule=SHUFFLE), pick("a", 5, "dc", 0.1, 0.3),
             pick("a", 5, "osg", 1.0, 2.0, rule=SHUFFLE), pick("b", 5, "pkg", 0.4, 0.3)]
    head, cols, *body = Page(pick_table(picks)).rows
    assert texts(head) == ["dataset", "stateless operator / latency mean (ms) vs sg",
                           "keyed aggregation / imbalance vs flink"]
    assert texts(cols) == ["n=5", "n=5"]
    # a pick worse than the engine default (the default misses the rule's constraint): marked so
    assert [texts(r) for r in body] == [["b", "osg −20%", "pkg +33%"], ["a", "osg ÷2.0", "dc ÷3.0"]]
    assert 'class="gain worse">+33%' in pick_table(picks) and 'class="gain better">−20%' in pick_table(picks)


def test_a_dataset_and_its_names_are_escaped_and_linked_to_its_section_when_asked():
    picks = [pick('x<"y">', 5, "dc", 0.1, 0.2)]
    plain, linked = pick_table(picks), pick_table(picks, link=True)
    assert "<a " not in plain and "&lt;&quot;y&quot;&gt;" in plain
    assert Page(linked).rows[-1][0][2] == 'x<"y">' and 'href="#grouping-' in linked


def test_the_rules_said_once_every_sentence_kept_below_the_table_and_no_list_at_top_level():
    picks = [pick(ds, n, "dc", 0.1, 0.2, note="only one strategy ran") for ds in ("a", "b", "c") for n in (5, 50)]
    picks += [pick(ds, 5, "osg", 1.0, 2.0, rule=SHUFFLE) for ds in ("a", "b")]
    block = what_to_pick("grouping", picks)
    page = Page(block)
    rules = [text for attrs, text in page.paragraphs if attrs.get("class") == "rule"]
    # above the table (once each) and again in the folded list, as before
    assert block.count(f"rule: {picks[0].rule_text()}") == 2 and block.count(f"rule: {picks[-1].rule_text()}") == 2
    assert rules[:2] == [f"rule: {picks[0].rule_text()}", f"rule: {picks[-1].rule_text()}"]
    assert block.index("<table") > block.index(picks[-1].rule_text())
    lines = [text for attrs, text, folded in page.items if attrs.get("class") == "pick-line"]
    assert sorted(lines) == sorted(p.line(rule=False) for p in picks)
    assert all(folded for _, _, folded in page.items)
    assert block.count("<table") == 1 and len(Page(block).rows) == 2 + 3


def test_no_picks_no_table():
    assert pick_table([]) == "" and what_to_pick("grouping", []) == ""


@pytest.mark.parametrize("value,base,shown", [
    (0.062, 0.1, "−38%"),
    (1.14, 1.0, "+14%"),
    (0.996, 1.0, "−0.4%"),
    (1.0, 1.0, "±0%"),
    (1.0004, 1.0, "±0%"),
    (0.51, 1.0, "−49%"),
    (0.5, 1.0, "÷2.0"),       # from a factor of 2 on: a factor
    (6.67e-4, 0.0195, "÷29"),
    (1e-4, 0.257, "÷2,570"),
    (2.1, 1.0, "×2.1"),
    (0.0, 0.2, "−100%"),
    (0.1, 0.0, "Δ +0.1"),     # a ratio means nothing: the difference
    (-0.2, -0.1, "Δ −0.1"),
    (None, 1.0, ""),
    (1.0, None, ""),
    (float("nan"), 1.0, ""),
])
def test_change_text(value, base, shown):
    assert change_text(value, base) == shown


def test_a_picks_change_is_against_the_engine_default_only():
    assert pick("a", 5, "dc", 0.062, 0.1).change() == "−38%"
    assert pick("a", 5, "flink", 0.1, 0.1).change() == ""  # the pick is the default
    assert pick("a", 5, None, None, 0.1).change() == ""
    assert pick("a", 5, "dc", 0.1, None).change() == ""  # the default did not run
    no_baseline = Rule("imbalance", "min", ("workers",))
    assert pick("a", 5, "dc", 0.1, None, rule=no_baseline).change() == ""
