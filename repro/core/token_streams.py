"""Token streams of the suite's corpora under the Brown BPE, cached: what training runs read.

`corpus_tokens` tokenizes a `repro.core.data` corpus's train and validation documents once and
caches the two streams under `cache_dir("tokens")`, keyed by the tokenizer and the documents;
its `identity` labels the checkpoint key of runs on them. `shuffled_corpus_tokens`: the same
streams with their tokens in a random order (the corpus's unigram statistics and no sequence to
model: the current token tells nothing of the next). `repeated_corpus_tokens`: those shuffled
tokens each repeated a random number of times (the current token is the next one's best guess).
"""

from __future__ import annotations

import hashlib
import math
import re
from typing import Any

import torch

from repro.ground.cache import atomic_torch_save, cache_dir, config_key
from repro.ground.errors import ReproError
from repro.ground.runtime import derive_seed, generator


def corpus_tokens(
    corpus: str = "brown",
    vocab_size: int = 4096,
    *,
    add_bos: bool = True,
    max_tokens: int | None = None,
    max_files: int | None = None,
) -> tuple[torch.Tensor, torch.Tensor, dict[str, Any]]:
    """(train_tokens, val_tokens, identity) of a repro.core.data corpus under the Brown byte-level
    BPE (`brown_tokenizer(vocab_size)`), so models trained on one corpus can continue on the
    other with the same vocabulary: "brown", or "stdlib-code" (the running interpreter's
    standard library, the suite's shifted corpus; `max_files` keeps the first files of each
    split). `identity` labels the key of runs on them. The token streams are cached under
    cache_dir("tokens"), keyed by the tokenizer and the documents."""
    from repro.core import data

    if corpus not in data.CORPORA and not data.is_local_corpus(corpus):
        raise ReproError(f"corpus_tokens: unknown corpus {corpus!r} (known: {', '.join(data.CORPORA)}, or a directory)")
    tok = data.brown_tokenizer(vocab_size=vocab_size)
    tok_sha = hashlib.sha256(tok.backend_tokenizer.to_str().encode()).hexdigest()
    streams = []
    for split in ("train", "validation"):
        docs = data.corpus_documents(corpus, split, max_files=max_files)
        if not docs:
            raise ReproError(f"corpus {corpus!r} has no {split} documents on this machine")
        h = hashlib.sha256()
        for d in docs:
            h.update(f"{d.doc_id}\0{d.text}\0".encode())
        key = config_key(
            {"tokenizer": tok_sha, "docs": h.hexdigest(), "add_bos": add_bos, "max_tokens": max_tokens, "format": 1}
        )
        label = re.sub(r"[^A-Za-z0-9_.-]+", "-", corpus).strip("-.")[-40:] or "corpus"  # a path → a file name
        path = cache_dir("tokens") / f"{label}-{split}-{vocab_size}-{key}.pt"
        ids = None
        if path.exists():
            try:
                ids = torch.load(path, weights_only=True)
            except Exception:  # truncated / corrupt: tokenize again
                ids = None
        if not isinstance(ids, torch.Tensor):
            ids = data.token_ids(tok, docs, add_bos=add_bos, max_tokens=max_tokens)
            atomic_torch_save(path, ids)
        streams.append(ids)
    identity = {
        "corpus": corpus,
        "tokenizer": f"brown-bpe-{vocab_size}",
        "tokenizer_sha256": tok_sha,
        "add_bos": add_bos,
    }
    return streams[0], streams[1], identity


def shuffled_corpus_tokens(
    corpus: str = "brown", vocab_size: int = 4096, *, seed: int = 0
) -> tuple[torch.Tensor, torch.Tensor, dict[str, Any]]:
    """`corpus_tokens`'s train and validation streams, each with its tokens permuted at random
    (one permutation per stream, drawn from `seed`): the same tokens and unigram frequencies, no
    order left to learn. `identity` is `corpus_tokens`'s with the order named, so a run on them
    keys apart from one on the corpus (the streams are hashed into the key as well)."""
    tr, va, identity = corpus_tokens(corpus, vocab_size)
    out = []
    for i, ids in enumerate((tr, va)):
        perm = torch.randperm(ids.numel(), generator=generator(derive_seed("token-order", seed, i)))
        out.append(ids.reshape(-1)[perm].reshape(ids.shape))
    return out[0], out[1], {**identity, "token_order": f"shuffled (seed {seed})"}


RUN_MEAN = 4  # `repeated_corpus_tokens`: the next token repeats the current one at ≈ 3 positions in 4


def repeated_corpus_tokens(
    corpus: str = "brown", vocab_size: int = 4096, *, seed: int = 0, mean_run: float = RUN_MEAN
) -> tuple[torch.Tensor, torch.Tensor, dict[str, Any]]:
    """`shuffled_corpus_tokens`'s streams with each token repeated a geometric number of times
    (≥ 1, mean `mean_run`), cut to the stream's length: runs of one token, the run's token drawn
    from the corpus's unigram frequencies, its length memoryless. At every position the best
    prediction is "the current token again" (probability 1 − 1/mean_run), else a unigram draw:
    the current token is the next one's best guess, and nothing else is left to learn (no
    position can tell that its run ends there). `identity` names the runs, so a run on them keys
    apart from one on the corpus or its shuffle."""
    if mean_run <= 1:
        raise ReproError(f"repeated_corpus_tokens: mean_run must exceed 1 (got {mean_run})")
    tr, va, identity = shuffled_corpus_tokens(corpus, vocab_size, seed=seed)
    out = []
    for i, ids in enumerate((tr, va)):
        flat = ids.reshape(-1)
        u = torch.rand(flat.numel(), generator=generator(derive_seed("token-runs", seed, i)), dtype=torch.float64)
        # inverse CDF of the geometric law on 1, 2, …: 1 + ⌊log U / log(1 − 1/m)⌋
        lengths = 1 + torch.floor(u.clamp_min(1e-300).log() / math.log(1.0 - 1.0 / mean_run)).long()
        out.append(torch.repeat_interleave(flat, lengths)[: flat.numel()].reshape(ids.shape).clone())
    order = f"runs of shuffled tokens (mean length {mean_run:g}, seed {seed})"
    return out[0], out[1], {**identity, "token_order": order}


def repeated_streams(
    corpus: str = "brown", vocab_size: int = 4096, seed: int = 0, mean_run: float = RUN_MEAN
) -> tuple[torch.Tensor, torch.Tensor]:
    """(train, validation) of `repeated_corpus_tokens`: the token factory of a training job in
    another process (`repro.core.launch.job(tokens=...)`)."""
    tr, va, _ = repeated_corpus_tokens(corpus, vocab_size, seed=seed, mean_run=mean_run)
    return tr, va
