"""The topic registry (`repro.harness.topics`) and the manifest each topic declares (`repro.ground.topic`).

Issue 66 item 1: every topic says what it is once, in its package; the roof finds the packages
and reads the manifests, and keeps no list of its own. These tests hold the registry to that: it
finds every package under ``repro/`` that is not a floor, in CLAIMS.md's order; a package without a
manifest, or with a manifest that names another package, is an error that names the package; a
manifest's subcommand must live in its own package.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
from pathlib import Path

import pytest

import repro
from repro.ground.errors import ReproError
from repro.ground.topic import Topic
from repro.harness import topics


def test_registry_finds_every_package_that_is_not_a_floor() -> None:
    packages = {i.name for i in pkgutil.iter_modules(repro.__path__) if i.ispkg} - set(topics.FLOORS)
    assert set(topics.PACKAGES) == packages and len(topics.PACKAGES) == 7


def test_topics_are_in_claims_md_order() -> None:
    """CLAIMS.md lists BB, SP, SK, CS, RS, SF, CA (BB-7 sits with SeedPrint); the first claim
    prefix of each topic's catalogue follows that order."""
    first = [importlib.import_module(f"repro.{p}.catalogue").CLAIMS[0].id.split("-")[0] for p in topics.PACKAGES]
    assert first == ["BB", "SP", "SK", "CS", "RS", "SF", "CA"]
    assert [t.order for t in topics.TOPICS] == sorted(t.order for t in topics.TOPICS)


def test_every_manifest_command_resolves_to_a_function() -> None:
    for module, function in topics.commands():
        assert callable(getattr(importlib.import_module(module), function)), (module, function)


@pytest.fixture
def scratch_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A scratch ``repro/newtopic/`` the registry can find (an extra entry on ``repro.__path__``)."""
    monkeypatch.setattr(repro, "__path__", [*repro.__path__, str(tmp_path)])
    pkg = tmp_path / "newtopic"
    pkg.mkdir()
    yield pkg / "__init__.py"
    sys.modules.pop("repro.newtopic", None)


def test_a_package_without_a_manifest_is_named(scratch_package: Path) -> None:
    scratch_package.write_text('"""a new topic that forgot its manifest"""\n')
    with pytest.raises(ReproError, match=r"repro/newtopic/: a topic package declares `TOPIC = Topic"):
        topics.discover()


def test_a_manifest_naming_another_package_is_named(scratch_package: Path) -> None:
    scratch_package.write_text("from repro.ground.topic import Topic\nTOPIC = Topic(package='sinks', order=99)\n")
    with pytest.raises(ReproError, match=r"repro/newtopic/__init__.py: its TOPIC names package 'sinks'"):
        topics.discover()


def test_a_manifest_sharing_a_place_is_named(scratch_package: Path) -> None:
    scratch_package.write_text("from repro.ground.topic import Topic\nTOPIC = Topic(package='newtopic', order=1)\n")
    with pytest.raises(ReproError, match="share a place in CLAIMS.md's order"):
        topics.discover()


def test_a_well_formed_new_topic_is_found_in_its_place(scratch_package: Path) -> None:
    scratch_package.write_text("from repro.ground.topic import Topic\nTOPIC = Topic(package='newtopic', order=8)\n")
    assert [t.package for t in topics.discover()] == [*topics.PACKAGES, "newtopic"]


@pytest.mark.parametrize("command", ["repro.sinks.cli:add", "repro.newtopic.cli:not a name", "repro.newtopic.cli"])
def test_a_command_outside_its_package_or_malformed_is_refused(command: str) -> None:
    with pytest.raises(ValueError, match="is not 'repro.newtopic.<module>:<function>'"):
        Topic(package="newtopic", order=8, commands=(command,))


def test_toy_rows_are_read_only() -> None:
    toy = Topic(package="newtopic", order=8, toy={"exp": {"n": 1}}).toy
    with pytest.raises(TypeError):
        toy["other"] = {}  # type: ignore[index]
