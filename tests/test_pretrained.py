"""Pretrained loader (repro/core/models/pretrained.py): embedded GGUF models, local dirs, hub ids.

The cache logic (build once, detect a truncated or corrupt cache, rebuild, atomic writes) is
tested fast with a tiny random Llama standing in for the 25-second GGUF dequantisation; the
real SmolLM2 load, its facts and one real truncated-cache rebuild are `pretrained` tests.
Gemma (a ~1-2 minute cold load) is checked only through its GGUF metadata and cache path.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from repro.core.data import brown_split, brown_tokenizer, token_ids
from repro.core.models import gguf_cache
from repro.core.models.embedded import EMBEDDED_MODELS
from repro.core.models.gguf_cache import model_cache_dir
from repro.core.models.pretrained import ensure_model_cache, load_pretrained, model_family
from repro.ground import resources
from repro.ground.runtime import ReproError


@pytest.fixture
def tmp_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "cache"
    monkeypatch.setenv("REPRO_CACHE", str(root))
    return root


@pytest.fixture(scope="module")
def bpe():
    resources.fetch("brown")
    return brown_tokenizer()


def _tiny_llama(vocab_size: int = 4096):
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    cfg = LlamaConfig(
        vocab_size=vocab_size,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=4,
        max_position_embeddings=64,
    )
    return LlamaForCausalLM(cfg).eval()


def _logits(model, ids: list[int]) -> torch.Tensor:
    with torch.no_grad():
        return model(torch.tensor([ids])).logits


# --------------------------------------------------------------------------- facts and names


def test_embedded_models_match_the_manifest() -> None:
    assert list(EMBEDDED_MODELS) == ["smollm2-135m", "gemma3-270m"]
    for name, spec in EMBEDDED_MODELS.items():
        fixture = resources.EMBEDDED_FIXTURES[spec.fixture]
        assert fixture.output == spec.gguf_file
        assert model_cache_dir(name).name == f"{name}-{fixture.sha256[:12]}"
    assert EMBEDDED_MODELS["smollm2-135m"].tokenizer_adds_bos is False
    assert EMBEDDED_MODELS["gemma3-270m"].tokenizer_adds_bos is True


def test_on_demand_models_are_pinned_fetched_on_use_and_users_models() -> None:
    """A real model of another family (qwen2) is known by name, pinned in the manifest, never
    fetched by `repro fetch` / a ci run, and not one of the run's default models: a `--model`
    run on it is its own configuration (no recorded expectation), as a user's model is."""
    from repro.core.models.embedded import KNOWN_MODELS, ON_DEMAND_MODELS
    from repro.core.models.pretrained import model_spec_problem

    assert set(ON_DEMAND_MODELS) == {"qwen2.5-coder-1.5b"} and not set(ON_DEMAND_MODELS) & set(EMBEDDED_MODELS)
    assert set(KNOWN_MODELS) == set(EMBEDDED_MODELS) | set(ON_DEMAND_MODELS)
    for name, spec in ON_DEMAND_MODELS.items():
        fixture = resources.EMBEDDED_FIXTURES[spec.fixture]
        assert (
            fixture.on_demand and fixture.output == spec.gguf_file and spec.fixture not in resources.default_fixtures()
        )
        assert model_cache_dir(name).name == f"{name}-{fixture.sha256[:12]}"
        assert model_spec_problem(name) is None
        assert spec.family not in {m.family for m in EMBEDDED_MODELS.values()}  # a family the defaults lack
    assert "qwen2.5-coder-1.5b (fetched on first use)" in model_spec_problem("no-such-model")


def test_model_family() -> None:
    from transformers import Gemma3TextConfig, GPT2Config, GPTNeoXConfig, LlamaConfig

    assert model_family(LlamaConfig()) == "llama"
    assert model_family(Gemma3TextConfig()) == "gemma"
    assert model_family(GPT2Config()) == "gpt2"
    assert model_family(GPTNeoXConfig()) == "gpt_neox"
    assert model_family(_tiny_llama(64)) == "llama"


@pytest.mark.parametrize("name", ["./no/such/dir", "/no/such/dir", "not a model!", "a/b/c", "~nobody/x"])
def test_unknown_model_is_a_clear_error(name: str) -> None:
    with pytest.raises(
        ReproError,
        match=r"unknown model .*: not an embedded model \(smollm2-135m, gemma3-270m; "
        r"also qwen2\.5-coder-1\.5b \(fetched on first use\)\)",
    ):
        load_pretrained(name)


def test_empty_model_name_is_a_clear_error() -> None:
    with pytest.raises(ReproError, match="no model given"):
        load_pretrained(" ")


def test_offline_hub_id_is_a_clear_error_and_fast(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    start = time.perf_counter()
    with pytest.raises(ReproError) as err:
        load_pretrained("meta-llama/Llama-2-7b-hf")
    assert str(err.value) == (
        "cannot load hub model 'meta-llama/Llama-2-7b-hf': the Hugging Face hub is unreachable (offline). "
        "Use an embedded model (smollm2-135m, gemma3-270m; also qwen2.5-coder-1.5b (fetched on first use)) or a "
        "local path."
    )
    assert time.perf_counter() - start < 10


def test_unreachable_hub_is_detected_without_the_env_var(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(resources, "hub_reachable", lambda timeout=3.0: False)
    with pytest.raises(ReproError, match="unreachable \\(offline\\)"):
        load_pretrained("gpt2")


def test_hub_probe_honours_hf_hub_offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    start = time.perf_counter()
    assert resources.hub_reachable() is False
    assert time.perf_counter() - start < 0.5


# --------------------------------------------------------------------------- local directories


def test_local_directory_loads(tmp_path: Path, bpe) -> None:
    model = _tiny_llama()
    model.save_pretrained(tmp_path)
    bpe.save_pretrained(tmp_path)
    loaded, tok = load_pretrained(str(tmp_path))
    assert not loaded.training and loaded.config._attn_implementation == "eager"
    ids = tok("The jury said", add_special_tokens=False)["input_ids"]
    assert ids == bpe("The jury said", add_special_tokens=False)["input_ids"]
    torch.testing.assert_close(_logits(loaded, ids), _logits(model, ids))
    half, _ = load_pretrained(str(tmp_path), dtype=torch.bfloat16, attn_implementation="sdpa")
    assert half.dtype == torch.bfloat16 and half.config._attn_implementation == "sdpa"


def test_directory_without_a_model_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ReproError, match=r"cannot load a model from directory .* save_pretrained\(\)"):
        load_pretrained(str(tmp_path))


def test_cuda_requested_without_gpu_is_a_clear_error(tmp_path: Path) -> None:
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU: the error path is for CPU-only machines")
    with pytest.raises(ReproError, match="--device cuda was asked for"):
        load_pretrained(str(tmp_path), device="cuda")


# --------------------------------------------------------------------------- the dequantised cache


@pytest.fixture
def fake_dequantise(monkeypatch: pytest.MonkeyPatch, tmp_cache: Path, bpe) -> list[str]:
    """Replace the 25 s GGUF dequantisation with saving a tiny Llama; record each build."""
    builds: list[str] = []

    def build(name: str, out_dir: Path) -> None:
        builds.append(name)
        out_dir.mkdir()
        _tiny_llama().save_pretrained(out_dir)
        bpe.save_pretrained(out_dir)

    monkeypatch.setattr(gguf_cache, "_dequantise_gguf", build)
    return builds


def test_cache_is_built_once(fake_dequantise: list[str], tmp_cache: Path) -> None:
    directory = ensure_model_cache("smollm2-135m")
    assert directory == tmp_cache / "models" / model_cache_dir("smollm2-135m").name
    stamp = json.loads((directory / "repro-cache.json").read_text())
    assert stamp["files"]["model.safetensors"] == (directory / "model.safetensors").stat().st_size
    model, _ = load_pretrained("smollm2-135m")
    assert fake_dequantise == ["smollm2-135m"] and model.config.hidden_size == 32


def test_truncated_cache_is_detected_and_rebuilt(fake_dequantise: list[str]) -> None:
    weights = ensure_model_cache("smollm2-135m") / "model.safetensors"
    with open(weights, "r+b") as fh:
        fh.truncate(weights.stat().st_size // 2)
    model, _ = load_pretrained("smollm2-135m")
    assert fake_dequantise == ["smollm2-135m"] * 2
    assert weights.stat().st_size > 0 and model.config.num_hidden_layers == 2


def test_corrupt_cache_of_the_right_size_is_rebuilt_when_loading_fails(fake_dequantise: list[str]) -> None:
    weights = ensure_model_cache("smollm2-135m") / "model.safetensors"
    with open(weights, "r+b") as fh:
        fh.write(b"\xff" * 16)  # garbage safetensors header; size (and stamp) unchanged
    model, _ = load_pretrained("smollm2-135m")
    assert fake_dequantise == ["smollm2-135m"] * 2 and model.config.hidden_size == 32


def test_interrupted_build_leaves_no_cache(monkeypatch: pytest.MonkeyPatch, tmp_cache: Path) -> None:
    def crash(name: str, out_dir: Path) -> None:
        out_dir.mkdir()
        (out_dir / "model.safetensors").write_bytes(b"half")
        raise KeyboardInterrupt

    monkeypatch.setattr(gguf_cache, "_dequantise_gguf", crash)
    with pytest.raises(KeyboardInterrupt):
        load_pretrained("smollm2-135m")
    assert not model_cache_dir("smollm2-135m").exists()
    assert not list((tmp_cache / "models").glob(".*.tmp"))


def test_background_build_starts_only_for_missing_caches(fake_dequantise: list[str], tmp_cache: Path) -> None:
    """`prepare_in_background` (a cold run's models dequantised while its first claims compute)
    starts nothing for a model whose cache is valid, nor for names that are not embedded models."""
    ensure_model_cache("smollm2-135m")  # built (a tiny stand-in)
    assert gguf_cache.prepare_in_background(["smollm2-135m", "not-a-model"]) is None


def test_background_build_fails_quietly_and_the_foreground_says_why(tmp_cache: Path) -> None:
    """Here the empty cache has no fixture: the background process stops (quietly, nothing built)
    and the foreground's own load gives the one clear error."""
    proc = gguf_cache.prepare_in_background(["gemma3-270m", "not-a-model"])
    assert proc is not None and proc.args[-1:] == ["gemma3-270m"]
    assert proc.wait(timeout=120) != 0 and not model_cache_dir("gemma3-270m").exists()
    with pytest.raises(ReproError, match="run `repro fetch gemma3-270m`"):
        load_pretrained("gemma3-270m")


def test_missing_fixture_says_to_fetch(tmp_cache: Path) -> None:
    with pytest.raises(ReproError, match=r"fixture 'gemma3-270m' is not in the cache .*run `repro fetch gemma3-270m`"):
        load_pretrained("gemma3-270m")
    assert not model_cache_dir("gemma3-270m").exists()


def test_gguf_checksum_mismatch_stops_before_dequantising(tmp_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spec = EMBEDDED_MODELS["smollm2-135m"]
    corrupt = resources.fixture_dir(spec.fixture) / spec.gguf_file
    corrupt.parent.mkdir(parents=True)
    corrupt.write_bytes(b"GGUF" + b"\0" * 4096)  # e.g. a truncated download copied in by hand
    import transformers

    monkeypatch.setattr(
        transformers.AutoModelForCausalLM,
        "from_pretrained",
        lambda *a, **k: pytest.fail("dequantised a file that failed its checksum"),
    )
    with pytest.raises(ReproError) as err:
        load_pretrained("smollm2-135m")
    msg = str(err.value)
    assert msg.startswith("checksum mismatch for fixture 'smollm2-135m'") and str(corrupt) in msg
    assert resources.EMBEDDED_FIXTURES["smollm2-135m"].sha256 in msg and "repro fetch smollm2-135m" in msg
    assert not model_cache_dir("smollm2-135m").exists()


# --------------------------------------------------------------------------- real models


@pytest.fixture(scope="module")
def smollm2():
    resources.fetch("smollm2-135m")
    return load_pretrained("smollm2-135m")


@pytest.mark.pretrained
def test_smollm2_matches_its_facts(smollm2) -> None:
    model, tok = smollm2
    spec = EMBEDDED_MODELS["smollm2-135m"]
    cfg = model.config
    assert (cfg.num_hidden_layers, cfg.hidden_size, cfg.num_attention_heads, cfg.vocab_size) == (
        spec.n_layers,
        spec.d_model,
        spec.n_heads,
        spec.vocab_size,
    )
    assert model_family(model) == spec.family and cfg.tie_word_embeddings
    assert model.dtype == torch.float32 and not model.training and cfg._attn_implementation == "eager"
    assert not hasattr(model, "hf_quantizer") or model.hf_quantizer is None
    ids = tok("The jury said")["input_ids"]
    assert ids == tok("The jury said", add_special_tokens=False)["input_ids"]  # NOTES: no BOS added
    assert (tok.bos_token, tok.eos_token) == ("<|im_start|>", "<|im_end|>")


@pytest.mark.pretrained
def test_smollm2_predicts_english(smollm2) -> None:
    model, tok = smollm2
    ids = token_ids(tok, brown_split("validation")[:1], add_bos=False, max_tokens=256)[None]
    with torch.no_grad():
        nll = model(ids, labels=ids).loss.item()
    assert 1.5 < nll < 4.0  # NOTES: ≈ 2.7-2.9 nats/token on English prose; uniform would be 10.8


@pytest.mark.pretrained
def test_warm_load_is_fast_and_identical(smollm2) -> None:
    model, tok = smollm2
    start = time.perf_counter()
    again, _ = load_pretrained("smollm2-135m")
    assert time.perf_counter() - start < 15  # seconds, vs ≈ 25 s for a cold GGUF load
    ids = tok("Attention sinks appear at position zero.")["input_ids"]
    assert torch.equal(_logits(again, ids), _logits(model, ids))


@pytest.fixture(scope="module")
def smollm2_paths(smollm2) -> tuple[Path, Path]:
    """The real fixture directory and dequantised cache (resolved before any test's tmp cache)."""
    return resources.fixture_dir("smollm2-135m"), model_cache_dir("smollm2-135m")


@pytest.mark.pretrained
def test_real_truncated_cache_is_rebuilt(smollm2, smollm2_paths: tuple[Path, Path], tmp_cache: Path) -> None:
    """End to end on the real model (≈ 25 s): a private cache holding the real GGUF and a copy of
    the real dequantised cache with its weights cut in half loads as the same model."""
    model, tok = smollm2
    real_fixture, real_cache = smollm2_paths
    (tmp_cache / "fixtures").mkdir(parents=True)
    (tmp_cache / "fixtures" / real_fixture.name).symlink_to(real_fixture, target_is_directory=True)
    copy = tmp_cache / "models" / real_cache.name
    shutil.copytree(real_cache, copy)
    weights = copy / "model.safetensors"
    with open(weights, "r+b") as fh:
        fh.truncate(weights.stat().st_size // 2)
    rebuilt, _ = load_pretrained("smollm2-135m")
    assert weights.stat().st_size == (real_cache / "model.safetensors").stat().st_size
    ids = tok("The rebuilt cache gives the same model.")["input_ids"]
    assert torch.equal(_logits(rebuilt, ids), _logits(model, ids))


@pytest.mark.pretrained
def test_a_gguf_file_path_loads_as_the_embedded_model(
    smollm2, smollm2_paths: tuple[Path, Path], tmp_path: Path
) -> None:
    """A user's own .gguf file (here the embedded SmolLM2's, ≈ 20 s to dequantise) loads by its
    path — the same logits as the embedded name; a truncated copy is one clear error (control)."""
    model, tok = smollm2
    gguf = resources.fixture_dir("smollm2-135m") / EMBEDDED_MODELS["smollm2-135m"].gguf_file
    loaded, tok2 = load_pretrained(str(gguf))
    ids = tok("A GGUF file is a model too.")["input_ids"]
    assert tok2(["x"])["input_ids"] == tok(["x"])["input_ids"]
    assert torch.equal(_logits(loaded, ids), _logits(model, ids))
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(gguf.read_bytes()[: 1 << 16])
    with pytest.raises(ReproError, match="cannot load a model from GGUF file"):
        load_pretrained(str(cut))


@pytest.mark.pretrained
def test_gguf_metadata_of_both_models() -> None:
    """The facts of EMBEDDED_MODELS, read from the GGUF headers (no dequantisation; < 1 s,
    where gguf.GGUFReader takes 12 s on Gemma's 262k-token vocabulary)."""
    for _name, spec in EMBEDDED_MODELS.items():
        meta = _gguf_metadata(resources.fetch(spec.fixture))
        arch = meta["general.architecture"]
        assert {"llama": "llama", "gemma3": "gemma"}[arch] == spec.family
        assert meta[f"{arch}.block_count"] == spec.n_layers
        assert meta[f"{arch}.embedding_length"] == spec.d_model
        assert meta[f"{arch}.attention.head_count"] == spec.n_heads
        assert meta["tokenizer.ggml.tokens"] == spec.vocab_size  # arrays are read as their length
        assert bool(meta.get("tokenizer.ggml.add_bos_token", False)) == spec.tokenizer_adds_bos


_GGUF_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}


def _gguf_metadata(path: Path) -> dict[str, object]:
    """Key/value header of a GGUF file (spec: github.com/ggml-org/ggml docs/gguf.md); arrays
    are returned as their length and skipped without being read."""
    import struct

    def unpack(fh, fmt):
        return struct.unpack(fmt, fh.read(struct.calcsize(fmt)))[0]

    def string(fh):
        return fh.read(unpack(fh, "<Q")).decode("utf-8", "replace")

    def value(fh, vtype):
        if vtype == 8:
            return string(fh)
        if vtype == 9:
            itype, count = unpack(fh, "<I"), unpack(fh, "<Q")
            if itype == 8:
                for _ in range(count):
                    fh.seek(unpack(fh, "<Q"), 1)
            else:
                fh.seek(count * struct.calcsize(_GGUF_SCALARS[itype]), 1)
            return count
        return unpack(fh, _GGUF_SCALARS[vtype])

    with open(path, "rb") as fh:
        assert fh.read(4) == b"GGUF"
        fh.seek(4 + 8, 1)  # version (u32), tensor count (u64)
        n_kv = unpack(fh, "<Q")
        meta = {}
        for _ in range(n_kv):
            key = string(fh)
            meta[key] = value(fh, unpack(fh, "<I"))
    return meta


def test_one_gguf_parse_shares_one_reader_per_path(tmp_path: Path) -> None:
    """transformers builds a new gguf.GGUFReader for each of tokenizer, config and weights (four
    parses of Gemma's 262k-token vocabulary); `one_gguf_parse` hands every read-only reader of one
    file the first one, and puts gguf's class back afterwards, also after an error. (That the
    shared reader loads the same model: test_a_gguf_file_path_loads_as_the_embedded_model.)"""
    import gguf

    from repro.core.models.pretrained import one_gguf_parse

    paths = []
    for name in ("a", "b"):
        w = gguf.GGUFWriter(tmp_path / f"{name}.gguf", "llama")
        w.add_uint32("test.value", 7)
        w.add_tensor("t", np.arange(4, dtype=np.float32))
        w.write_header_to_file(), w.write_kv_data_to_file(), w.write_tensors_to_file(), w.close()
        paths.append(tmp_path / f"{name}.gguf")
    original = gguf.GGUFReader
    with one_gguf_parse():
        first = gguf.GGUFReader(paths[0])
        assert gguf.GGUFReader(str(paths[0])) is first  # same file, another spelling: one parse
        assert gguf.GGUFReader(paths[1]) is not first
        assert gguf.GGUFReader(paths[0], "r+") is not first  # a writable reader is never shared
        assert int(first.fields["test.value"].parts[-1][0]) == 7
    assert gguf.GGUFReader is original and original(paths[0]) is not first
    with pytest.raises(RuntimeError), one_gguf_parse():
        raise RuntimeError("a failed load")
    assert gguf.GGUFReader is original
