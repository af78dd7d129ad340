"""Corpora and probes (repro/core/data.py): Brown parsing and splits, stdlib code, tokenizers, probes."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
import torch

from repro.core import data
from repro.core.data import (
    CORPORA,
    Document,
    brown_documents,
    brown_split,
    brown_tokenizer,
    corpus_documents,
    detokenize,
    gaussian_inputs,
    parse_brown,
    random_tokens,
    stdlib_code_documents,
    strip_tag,
    token_ids,
)
from repro.ground import resources
from repro.ground.runtime import ReproError, generator, read_json_or_none


@pytest.fixture(scope="session")
def brown() -> list[Document]:
    resources.fetch("brown")  # a cache hit after `make fixtures`
    return brown_documents()


@pytest.fixture(scope="session")
def bpe():
    resources.fetch("brown")
    return brown_tokenizer()


# --------------------------------------------------------------------------- Brown parsing


@pytest.mark.parametrize(
    "token, word",
    [
        ("The/at", "The"),
        ("1/2/cd", "1/2"),
        ("and/or/cc", "and/or"),
        ("//in", "/"),
        ("AAb//nn", "AAb/"),
        ("Atlanta's/np$", "Atlanta's"),
        ("./.", "."),
        ("``/``", "``"),
        ("didn't/dod*", "didn't"),
        ("no-tag", "no-tag"),
    ],
)
def test_strip_tag_removes_only_the_last_tag(token: str, word: str) -> None:
    assert strip_tag(token) == word


def test_detokenize_spacing_and_quotes() -> None:
    words = "`` Only a handful '' , the jury said ( twice ) ; ; it was Jr. . he said ?".split()
    assert detokenize(words) == '"Only a handful", the jury said (twice); it was Jr. he said?'
    assert detokenize("more ' pro ' letters".split()) == "more 'pro' letters"
    assert detokenize("the taxpayers ' pockets".split()) == "the taxpayers' pockets"
    assert detokenize("get 'em all".split()) == "get 'em all"


def test_parse_brown_keeps_paragraphs_and_sentences() -> None:
    raw = (
        "\n\n\tThe/at jury/nn said/vbd ``/`` no/at ''/'' ./.\nIt/pps ran/vbd 1/2/cd miles/nns ./.\n"
        "\n\n\tNew/jj para/nn (/( see/vb ./.\n)/) Done/vbn ;/. ;/.\n"
    )
    assert parse_brown(raw) == 'The jury said "no". It ran 1/2 miles.\n\nNew para (see.) Done;'


def test_brown_documents(brown: list[Document]) -> None:
    assert len(brown) == 500 and len({d.doc_id for d in brown}) == 500
    assert [d.doc_id for d in brown] == sorted(d.doc_id for d in brown)
    assert {d.genre for d in brown} == set(data.BROWN_GENRES)
    assert all(d.genre == d.doc_id[1] for d in brown)
    chars = sum(len(d.text) for d in brown)
    assert 5.5e6 < chars < 6.5e6  # NOTES: ≈ 6M characters once the tags are stripped
    first = brown[0].text
    assert first.startswith("The Fulton County Grand Jury said Friday an investigation of Atlanta's")
    joined = "\n".join(d.text for d in brown[:50])
    assert not re.search(r"\S/(at|nn|vbd|in|np-tl|\.)(\s|$)", joined)  # no tag left behind
    assert " ." not in joined and " ," not in joined


def test_brown_parse_is_cached_and_rebuilt_when_corrupt(brown: list[Document]) -> None:
    cache = data._brown_cache_path()
    assert cache.exists()
    data._brown_documents_cached.cache_clear()
    cache.write_text('[["ca01", "a", "trunc')  # a killed writer could not do this (atomic), a disk error could
    assert brown_documents() == brown
    assert read_json_or_none(cache) is not None


def test_brown_needs_the_fixture(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REPRO_CACHE", str(tmp_path))
    with pytest.raises(ReproError, match="run `repro fetch brown`"):
        brown_documents()


# --------------------------------------------------------------------------- splits


def test_brown_split_is_disjoint_stratified_and_deterministic(brown: list[Document]) -> None:
    splits = {s: brown_split(s) for s in data.SPLITS}
    ids = {s: {d.doc_id for d in docs} for s, docs in splits.items()}
    assert {s: len(v) for s, v in ids.items()} == {"train": 392, "validation": 54, "test": 54}
    assert not (ids["train"] & ids["validation"] or ids["train"] & ids["test"] or ids["validation"] & ids["test"])
    assert ids["train"] | ids["validation"] | ids["test"] == {d.doc_id for d in brown}
    for docs in splits.values():
        assert {d.genre for d in docs} == set(data.BROWN_GENRES)  # every genre in every split
    assert [d.doc_id for d in brown_split("validation")][:3] == ["ca01", "ca11", "ca21"]
    assert brown_split("test") == splits["test"]
    with pytest.raises(ReproError, match="unknown split 'dev'; choose one of train, validation, test"):
        brown_split("dev")


def test_stdlib_code_documents() -> None:
    docs = stdlib_code_documents()
    ids = [d.doc_id for d in docs]
    assert len(docs) > 300 and ids == sorted(ids)
    assert "json/decoder.py" in ids and "os.py" in ids
    assert not any(set(i.split("/")[:-1]) & data.STDLIB_EXCLUDED_DIRS for i in ids)
    assert next(d for d in docs if d.doc_id == "json/decoder.py").genre == "json"
    parts = {s: {d.doc_id for d in stdlib_code_documents(s)} for s in data.SPLITS}
    assert sum(map(len, parts.values())) == len(ids) and set().union(*parts.values()) == set(ids)
    assert 0.05 < len(parts["validation"]) / len(ids) < 0.2
    assert [d.doc_id for d in stdlib_code_documents("train", max_files=5)] == sorted(parts["train"])[:5]


def test_corpus_documents_names() -> None:
    assert CORPORA[:3] == ("brown", "stdlib-code", "mix") and "wikitext-2" in CORPORA
    with pytest.raises(ReproError, match="unknown corpus 'c4'; choose one of brown, stdlib-code, mix, wikitext-2"):
        corpus_documents("c4")
    assert corpus_documents("stdlib-code", "test") == stdlib_code_documents("test")


def test_corpus_brown_is_the_brown_split(brown: list[Document]) -> None:
    assert corpus_documents("brown") == brown_split("validation")


def test_hub_corpus_offline_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(resources, "hub_reachable", lambda timeout=3.0: False)
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_OFFLINE", False)
    with pytest.raises(ReproError, match=r"cannot load corpus 'wikitext-2': the Hugging Face hub is unreachable"):
        corpus_documents("wikitext-2")


def test_wikitext_lines_group_into_articles() -> None:
    lines = ["", " = Alpha = \n", "", " = = Section = = \n", " Text a . \n", " = Beta = \n", " Text b . \n"]
    docs = data._wikitext_articles(lines, "wikitext-2", "validation")
    assert [d.text for d in docs] == ["= Alpha = \n = = Section = = \n Text a .", "= Beta = \n Text b ."]
    assert docs[1].doc_id == "wikitext-2/validation/00001"


# --------------------------------------------------------------------------- tokenizers


def test_brown_tokenizer_round_trips_and_has_specials(bpe, brown: list[Document]) -> None:
    assert len(bpe) == 4096
    assert (bpe.pad_token_id, bpe.bos_token_id, bpe.eos_token_id) == (0, 1, 2)
    for text in (brown[7].text[:2000], "naïve café — 😀 tabs\tand\nnewlines  ", ""):
        ids = bpe(text, add_special_tokens=False)["input_ids"]
        assert bpe.decode(ids) == text
    assert bpe("The jury said")["input_ids"][0] != bpe.bos_token_id  # adds no special tokens itself
    text = brown_split("train")[0].text
    assert len(text) / len(bpe(text)["input_ids"]) > 3.0  # a real BPE (bytes would give 1 char/token)


def test_brown_tokenizer_training_is_deterministic(brown: list[Document]) -> None:
    a, b = data._train_brown_bpe(600), data._train_brown_bpe(600)
    assert a.to_str() == b.to_str()


def test_brown_tokenizer_cache_rebuilt_when_corrupt(bpe, real_cache_copy: Path) -> None:
    paths = list((real_cache_copy / "tokenizers").glob("brown-bpe-4096-*.json"))
    assert len(paths) == 1
    paths[0].write_text('{"version": "1.0", "trunc')
    again = brown_tokenizer()
    assert again.get_vocab() == bpe.get_vocab()


@pytest.fixture
def real_cache_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bpe) -> Path:
    """A private REPRO_CACHE holding copies of the Brown fixture and the trained tokenizer."""
    src_fixture = resources.fetch("brown")
    src_tok = next(resources.cache_dir("tokenizers").glob("brown-bpe-4096-*.json"))
    root = tmp_path / "cache"
    shutil.copytree(src_fixture, root / "fixtures" / "brown")
    (root / "tokenizers").mkdir(parents=True)
    shutil.copy(src_tok, root / "tokenizers" / src_tok.name)
    monkeypatch.setenv("REPRO_CACHE", str(root))
    return root


def test_token_ids_stream(bpe) -> None:
    docs = [Document("x1", "t", "The cat sat."), Document("x2", "t", "A dog ran.")]
    ids = token_ids(bpe, docs)
    one = bpe("The cat sat.", add_special_tokens=False)["input_ids"]
    assert ids.dtype == torch.long and ids.dim() == 1
    assert ids[: len(one) + 2].tolist() == [1, *one, 2]
    assert (ids == 1).sum() == 2 and (ids == 2).sum() == 2 and ids[-1] == 2
    no_bos = token_ids(bpe, docs, add_bos=False)
    assert len(no_bos) == len(ids) - 2 and (no_bos == 1).sum() == 0
    assert token_ids(bpe, docs, max_tokens=5).tolist() == ids[:5].tolist()
    assert token_ids(bpe, []).numel() == 0


# --------------------------------------------------------------------------- random probes


def test_random_tokens() -> None:
    x = random_tokens(64, 32, 100, generator(0))
    assert x.shape == (64, 32) and x.dtype == torch.long and 0 <= x.min() and x.max() < 100
    assert torch.equal(x, random_tokens(64, 32, 100, generator(0)))
    assert not torch.equal(x, random_tokens(64, 32, 100, generator(1)))
    assert len(x.unique()) == 100  # 2048 draws cover a 100-token vocabulary
    with pytest.raises(ValueError):
        random_tokens(1, 1, 0, generator(0))


def test_gaussian_inputs() -> None:
    x = gaussian_inputs(50, 40, 30, generator(3), mean=2.0, std=0.5)
    assert x.shape == (50, 40, 30) and x.dtype == torch.float32
    assert torch.equal(x, gaussian_inputs(50, 40, 30, generator(3), mean=2.0, std=0.5))
    # 60,000 draws: standard error of the mean 0.5/245 = 0.002, of the std 0.5/346 = 0.0014
    assert abs(x.mean().item() - 2.0) < 0.01 and abs(x.std().item() - 0.5) < 0.01
    z = gaussian_inputs(2, 3, 4, generator(3))
    assert z.shape == (2, 3, 4)


def test_bos_windows_needs_a_bos():
    from repro.core.data import bos_windows
    from repro.ground.runtime import ReproError

    with pytest.raises(ReproError, match="need a tokenizer with <bos>"):
        bos_windows(None, "test", 2, 8, who="CA-4's claims")


def test_local_corpus_directory_splits_by_path_and_feeds_windows_and_training(tmp_path, bpe):
    """--corpus DIR: text files split by sha256(relative path) mod 10 (the stdlib rule), read by
    data.windows and token_streams.corpus_tokens like an embedded corpus; bad directories get one line."""
    from repro.core import data, token_streams
    from repro.ground.runtime import ReproError

    for i in range(60):
        (tmp_path / f"doc{i:02d}.txt").write_text(
            f"Document {i}. " + "The quick brown fox jumps over the lazy dog. " * 40
        )
    splits = {s: data.corpus_documents(str(tmp_path), s) for s in ("train", "validation", "test")}
    assert sum(len(d) for d in splits.values()) == 60 and all(splits.values())
    assert not ({d.doc_id for d in splits["train"]} & {d.doc_id for d in splits["test"]})
    w = data.windows(bpe, "test", 3, 16, corpus=str(tmp_path))
    assert w.shape == (3, 16)
    tr, va, ident = token_streams.corpus_tokens(str(tmp_path), 4096)
    assert tr.numel() > va.numel() > 0
    with pytest.raises(ReproError, match="does not exist"):
        data.corpus_documents(str(tmp_path / "missing"), "train")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ReproError, match="no train documents"):
        data.corpus_documents(str(tmp_path / "empty"), "train")
