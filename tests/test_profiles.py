"""Typed sizes: every row is its experiment's frozen dataclass with values its annotations admit,
a row given as a dict has its ci row's keys, `long` is overrides of ci, and a size that is not
there is one clear error."""

import dataclasses
import json

import pytest

from repro.ground import sizes as ground_sizes
from repro.ground.runtime import ReproError
from repro.ground.sizes import as_row
from repro.harness import profiles


def test_committed_rows_agree_with_their_ci_rows():
    assert profiles.check_rows() == []


def _with_paper_row(exp: str, edit) -> dict:
    """The registry's table with `exp`'s paper row given as a plain dict, edited by `edit`."""
    table = {e: dict(rows) for e, rows in profiles.SIZES.items()}
    paper = as_row(table[exp]["paper"])
    edit(paper)
    table[exp]["paper"] = paper
    return table


def test_every_row_is_a_frozen_dataclass_of_its_ci_rows_class():
    for exp, per_profile in profiles.SIZES.items():
        ci = per_profile["ci"]
        assert dataclasses.is_dataclass(ci) and ci.__dataclass_params__.frozen, exp
        assert all(type(r) is type(ci) for r in per_profile.values()), exp
    with pytest.raises(dataclasses.FrozenInstanceError):
        profiles.SIZES["bb_6"]["ci"].n_seq = 1


def test_a_misspelt_paper_size_is_reported():
    table = _with_paper_row("bb_6", lambda r: r.__setitem__("n_seqs", r.pop("n_seq")))
    problems = profiles.check_rows(table)
    assert problems == ["bb_6[paper]: missing ['n_seq']; unknown ['n_seqs']"]


def test_a_misspelt_nested_size_is_reported():
    table = _with_paper_row("sinks", lambda r: r["train"].__setitem__("step", r["train"].pop("steps")))
    assert profiles.check_rows(table) == ["sinks[paper].train: missing ['steps']; unknown ['step']"]


def test_a_value_of_the_wrong_type_is_reported_where_it_is():
    """The row classes' annotations hold every profile: a string where an int belongs, a list
    where a tuple does, a float in a tuple of ints — in a row, a nested row and an override."""
    table = _with_paper_row("bb_6", lambda r: r.update(n_seq="2000", seeds=[0, 1]))
    assert profiles.check_rows(table) == [
        "bb_6[paper].n_seq: '2000' is not int",
        "bb_6[paper].seeds: [0, 1] is not tuple[int, ...]",
    ]
    table = _with_paper_row("sinks", lambda r: r["init"].update(seeds=(0, 1.5)))
    assert profiles.check_rows(table) == ["sinks[paper].init.seeds[1]: 1.5 is not int"]
    bad_override = {"long": {"sinks": {"train": {"steps": 16.5}}}}
    assert ground_sizes.check_rows(profiles.SIZES, bad_override) == ["sinks[long].train.steps: 16.5 is not int"]
    # a row of another experiment's class is named as such
    table = {e: dict(rows) for e, rows in profiles.SIZES.items()}
    table["bb_6"]["paper"] = profiles.SIZES["bb_4"]["paper"]
    assert profiles.check_rows(table) == ["bb_6[paper]: a BB4 row where the ci row is a BB6"]


def test_an_optional_part_is_typed_in_either_state():
    # sinks' deviation: None or a {size: float} dict; a string is neither
    over = {"long": {"sinks": {"deviation": "lr=3e-3"}}}
    assert ground_sizes.check_rows(profiles.SIZES, over) == [
        "sinks[long].deviation: 'lr=3e-3' is not dict[str, float] | None"
    ]


def test_an_optional_part_may_be_off_in_one_profile():
    # sinks' `deviation` is None at ci and a row under long: not a disagreement
    assert profiles.get_profile("ci").sizes("sinks")["deviation"] is None
    assert profiles.get_profile("long").sizes("sinks")["deviation"] == {"lr": 3e-3, "weight_decay": 0.5}


def test_long_is_ci_with_its_overrides():
    ci, long = profiles.get_profile("ci"), profiles.get_profile("long")
    for exp in profiles.SIZES:
        if exp not in profiles.OVERRIDES["long"]:
            assert long.sizes(exp) == ci.sizes(exp)
    s, c = long.sizes("sinks"), ci.sizes("sinks")
    assert s["train"]["steps"] == 1600 and s["train"]["batch_size"] == 64 and s["train"]["warmup_steps"] == 100
    assert {k: v for k, v in s["train"].items() if k not in ("steps", "batch_size", "warmup_steps")} == {
        k: v for k, v in c["train"].items() if k not in ("steps", "batch_size", "warmup_steps")
    }
    assert s["model"] == c["model"] and s["eval"] == c["eval"]


def test_a_misspelt_override_is_an_error(monkeypatch):
    monkeypatch.setitem(profiles.OVERRIDES, "long", {"sinks": {"train": {"stepz": 10}}})
    with pytest.raises(ReproError, match="override 'stepz' is not a size of the ci row"):
        profiles.get_profile("long")


def test_a_missing_size_names_the_experiment_and_what_it_has():
    s = profiles.get_profile("ci").sizes("causal_shift")
    with pytest.raises(ReproError, match=r"experiment 'causal_shift'.*no size 'seed'.*seeds"):
        s["seed"]
    with pytest.raises(ReproError, match=r"causal_shift'\.train has no size 'step'"):
        s["train"]["step"]
    assert s.get("seed") is None  # .get stays a dict's: the caller chose a default


def test_sizes_are_plain_dicts_to_json_and_unpacking():
    s = profiles.get_profile("ci").sizes("bb_6")
    assert isinstance(s, dict) and json.loads(json.dumps(s)) == json.loads(json.dumps(dict(s)))
    assert dict(**s) == s


def test_unknown_profile_and_experiment_are_one_clear_error():
    with pytest.raises(ReproError, match="unknown profile 'huge'"):
        profiles.get_profile("huge")
    with pytest.raises(ReproError, match="no sizes for experiment 'bb_99'"):
        profiles.get_profile("ci").sizes("bb_99")


def test_lineage_sizes_are_checked_against_their_config():
    from repro.seedprint.lineage import LineageConfig

    for name in profiles.PROFILES:
        LineageConfig.from_sizes(profiles.get_profile(name).sizes("seedprint")["lineage"])
    with pytest.raises(ReproError, match=r"\['stepz'\] are not fields of LineageConfig"):
        LineageConfig.from_sizes({"stepz": 3})


def test_each_topic_owns_its_rows():
    """The registry only collects: every row lives in its topic's repro/<topic>/sizes.py (one topic
    per experiment, in the registry's order, `repro.harness.topics.PACKAGES`), and a topic's
    own view of its rows (`repro.ground.sizes.profile`, as `repro seedprint-eval` reads them) is
    the registry's."""
    import importlib

    from repro.harness import topics

    modules = {topic: importlib.import_module(f"repro.{topic}.sizes") for topic in topics.PACKAGES}
    assert list(profiles.SIZES) == [exp for m in modules.values() for exp in m.SIZES]
    for topic, m in modules.items():
        for exp, rows in m.SIZES.items():
            assert profiles.SIZES[exp] is rows and profiles.TOPIC_OF[exp] == topic
        for name in profiles.PROFILES:
            own = ground_sizes.profile(name, m.SIZES, m.OVERRIDES)
            assert {e: own.sizes(e) for e in m.SIZES} == {e: profiles.get_profile(name).sizes(e) for e in m.SIZES}


def test_the_machinery_needs_no_registry():
    """`repro.ground.sizes` on a table of its own: rows checked, long merged from its overrides."""
    table = {"x": {"ci": dict(n=1, train=dict(steps=2, lr=0.1)), "paper": dict(n=10, train=dict(steps=20, lr=0.1))}}
    long = ground_sizes.profile("long", table, {"long": {"x": {"train": {"steps": 5}}}})
    assert long.sizes("x") == {"n": 1, "train": {"steps": 5, "lr": 0.1}}
    assert ground_sizes.profile("paper", table).sizes("x")["train"]["steps"] == 20
    with pytest.raises(ReproError, match=r"x\[paper\]: missing \['n'\]"):
        ground_sizes.profile("ci", {"x": {"ci": dict(n=1), "paper": dict()}})


def test_the_machinery_reads_a_dataclass_table_as_plain_rows():
    """A table of row classes: a profile's sizes are plain dicts in field order, nested rows
    too; the paper row states only what it changes (`dataclasses.replace`)."""

    @ground_sizes.row
    class Train:
        steps: int
        lr: float

    @ground_sizes.row
    class X:
        n: int
        train: Train

    ci = X(n=1, train=Train(steps=2, lr=0.1))
    table = {"x": {"ci": ci, "paper": dataclasses.replace(ci, train=Train(steps=20, lr=0.1))}}
    assert ground_sizes.check_rows(table) == []
    paper = ground_sizes.profile("paper", table).sizes("x")
    assert paper == {"n": 1, "train": {"steps": 20, "lr": 0.1}} and list(paper) == ["n", "train"]
    assert type(paper["train"]) is ground_sizes.Sizes
    long = ground_sizes.profile("long", table, {"long": {"x": {"train": {"lr": 1}}}})
    assert long.sizes("x")["train"] == {"steps": 2, "lr": 1}  # an int is a float
    assert ground_sizes.check_rows(table, {"long": {"x": {"n": True}}}) == ["x[long].n: True is not int"]
