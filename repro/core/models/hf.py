"""Random-init causal LMs built from transformers configs, with the source's init (001 App B.1).

Three architectures, named as in 001 §3 / Table 1:

- ``"gpt2"``: `GPT2LMHeadModel` — learned absolute positions, LayerNorm, GELU (GPT-2's tanh
  approximation, as ``gelu_pytorch_tanh``: the function of ``gelu_new`` in one fused
  `F.gelu(approximate="tanh")` kernel instead of seven elementwise passes — measured on 2
  cores: a 12-layer 768-wide random probe in float32 15.9 → 12.2 s, a third of it had been
  the activation), biases everywhere, tied embedding / LM head.
- ``"rope-gpt2"``: the source's "RoPE-enhanced GPT-2" (001 §3, B.2: weight tying).
  transformers has no GPT-2 with rotary positions, so we use `GPTNeoXForCausalLM` configured
  to *be* a pre-LN GPT-2 block with rotary positions:
  ``use_parallel_residual=False`` (sequential residual x + Attn(LN x), then + MLP(LN ·), as in
  GPT-2 and 001 §2.1), ``partial_rotary_factor=1.0`` (rotary on the whole head, not NeoX's
  default 25%), ``rope_theta=10000``, LayerNorm, ``gelu_pytorch_tanh`` (same activation as our
  ``"gpt2"``, so the two differ only in how positions enter), biases in all linear layers
  (``attention_bias=True``; NeoX's MLP always has them), as GPT-2 has, and
  ``tie_word_embeddings=True`` (GPTNeoXForCausalLM declares ``_tied_weights_keys`` in 5.23,
  so HF ties it; a test checks the two are one tensor). Biases are zero at init, so at
  random init this is GPT-2 minus `wpe` plus RoPE; the source (nanoGPT-like) may have had no
  biases, which matters only after training. NeoX fuses Q/K/V in one per-head-interleaved
  matrix; with i.i.d. init that layout is immaterial.
- ``"llama"``: `LlamaForCausalLM` — RMSNorm, SwiGLU, RoPE, no biases, untied embeddings
  (001 B.2). ``d_ff`` defaults to the Llama rule 8d/3 rounded up to a multiple of 256
  (768 → 2048, 001 Table 13).

Init (001 App B.1), done by :func:`init_gpt_style_` for HF models and `tiny.TinyDecoder` alike:
every linear and embedding weight ~ N(0, 0.02²); the residual projections (attention output
W_O and MLP down-projection W_down) ~ N(0, (0.02/√(2L))²); linear biases 0; norm weights 1 and
norm biases 0. All draws come from explicit `torch.Generator`s in `named_parameters()` order,
so one seed gives bit-identical weights (drawn in float32 on CPU, then cast/moved).

HF's own init is skipped (the model is built under ``transformers.initialization.
no_init_weights``, then tied by hand): it would be overwritten anyway and costs more than our
draws (12L/768d/V=50,257 GPT-2: HF init ≈ 1.7 s, construction without it ≈ 0.01 s, our draws
≈ 0.7 s on 2 cores).
"""

from __future__ import annotations

import contextlib
import math
from typing import TYPE_CHECKING, Iterator

import torch
from torch import nn

from repro.ground.errors import ReproError
from repro.ground.runtime import derive_seed
from repro.ground.runtime import generator as make_generator

if TYPE_CHECKING:  # transformers is imported lazily: `import repro.core.models.hf` stays light
    from transformers import PreTrainedConfig, PreTrainedModel

ARCHS = ("gpt2", "rope-gpt2", "llama")
INIT_STD = 0.02
PARAM_GROUPS = ("embedding", "lm_head", "linear", "residual_proj", "norm", "bias")

# (parent module name, module name) of residual projections: W_O and W_down of 001 App B.1,
# in GPT-2, GPT-NeoX, Llama and tiny.TinyDecoder naming.
_RESIDUAL_PROJ = {
    ("attn", "c_proj"),
    ("mlp", "c_proj"),  # GPT-2
    ("attention", "dense"),
    ("mlp", "dense_4h_to_h"),  # GPT-NeoX ("rope-gpt2")
    ("self_attn", "o_proj"),
    ("mlp", "down_proj"),  # Llama
    ("attn", "o_proj"),  # tiny.TinyDecoder
}


def _check_arch(arch: str) -> None:
    if arch not in ARCHS:
        raise ReproError(f"unknown architecture {arch!r}; choose one of {', '.join(ARCHS)}")


def default_d_ff(arch: str, d_model: int) -> int:
    """4d for the GPT-2 family; Llama's 8d/3 rounded up to a multiple of 256 for "llama"."""
    _check_arch(arch)
    if arch == "llama":
        return 256 * math.ceil(8 * d_model / 3 / 256)
    return 4 * d_model


def build_config(
    arch: str,
    *,
    n_layer: int,
    n_head: int,
    d_model: int,
    vocab_size: int,
    n_positions: int = 1024,
    d_ff: int | None = None,
    tie_word_embeddings: bool | None = None,
    attn_implementation: str = "eager",
) -> "PreTrainedConfig":
    """A transformers config for `arch` (see the module docstring), dropout 0, no special tokens.

    ``tie_word_embeddings=None`` takes the source's choice: tied for the GPT-2 family, untied
    for Llama (001 B.2).
    """
    _check_arch(arch)
    for name, value in (
        ("n_layer", n_layer),
        ("n_head", n_head),
        ("d_model", d_model),
        ("vocab_size", vocab_size),
        ("n_positions", n_positions),
    ):
        if int(value) < 1:
            raise ReproError(f"{name} must be a positive integer, got {value!r}")
    if d_model % n_head:
        raise ReproError(f"d_model={d_model} is not divisible by n_head={n_head}")
    if arch != "gpt2" and (d_model // n_head) % 2:
        raise ReproError(f"rotary positions need an even head size; d_model/n_head = {d_model // n_head}")
    d_ff = default_d_ff(arch, d_model) if d_ff is None else int(d_ff)
    if d_ff < 1:
        raise ReproError(f"d_ff must be a positive integer, got {d_ff}")
    tie = (arch != "llama") if tie_word_embeddings is None else bool(tie_word_embeddings)
    no_tokens = dict(bos_token_id=None, eos_token_id=None, pad_token_id=None)

    if arch == "gpt2":
        from transformers import GPT2Config

        return GPT2Config(
            vocab_size=vocab_size,
            n_positions=n_positions,
            n_embd=d_model,
            n_layer=n_layer,
            n_head=n_head,
            n_inner=d_ff,
            activation_function="gelu_pytorch_tanh",
            resid_pdrop=0.0,
            embd_pdrop=0.0,
            attn_pdrop=0.0,
            initializer_range=INIT_STD,
            tie_word_embeddings=tie,
            attn_implementation=attn_implementation,
            **no_tokens,
        )
    if arch == "rope-gpt2":
        from transformers import GPTNeoXConfig

        return GPTNeoXConfig(
            vocab_size=vocab_size,
            hidden_size=d_model,
            num_hidden_layers=n_layer,
            num_attention_heads=n_head,
            intermediate_size=d_ff,
            hidden_act="gelu_pytorch_tanh",
            max_position_embeddings=n_positions,
            use_parallel_residual=False,
            rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 1.0},
            attention_bias=True,
            hidden_dropout=0.0,
            attention_dropout=0.0,
            layer_norm_eps=1e-5,
            initializer_range=INIT_STD,
            tie_word_embeddings=tie,
            attn_implementation=attn_implementation,
            **no_tokens,
        )
    from transformers import LlamaConfig

    return LlamaConfig(
        vocab_size=vocab_size,
        hidden_size=d_model,
        intermediate_size=d_ff,
        num_hidden_layers=n_layer,
        num_attention_heads=n_head,
        num_key_value_heads=n_head,
        max_position_embeddings=n_positions,
        hidden_act="silu",
        rms_norm_eps=1e-6,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
        attention_bias=False,
        mlp_bias=False,
        attention_dropout=0.0,
        initializer_range=INIT_STD,
        tie_word_embeddings=tie,
        attn_implementation=attn_implementation,
        **no_tokens,
    )


def _model_class(arch: str):
    if arch == "gpt2":
        from transformers import GPT2LMHeadModel

        return GPT2LMHeadModel
    if arch == "rope-gpt2":
        from transformers import GPTNeoXForCausalLM

        return GPTNeoXForCausalLM
    from transformers import LlamaForCausalLM

    return LlamaForCausalLM


def build_model(
    arch: str,
    *,
    n_layer: int,
    n_head: int,
    d_model: int,
    vocab_size: int,
    seed: int,
    n_positions: int = 1024,
    d_ff: int | None = None,
    embedding_seed: int | None = None,
    perturb_norms: float = 0.0,
    attn_implementation: str = "eager",
    dtype: torch.dtype = torch.float32,
    tie_word_embeddings: bool | None = None,
    build_layers: int | None = None,
) -> "PreTrainedModel":
    """A randomly initialised causal LM (001 App B.1), in eval mode, on CPU.

    ``build_layers``: build only the first ``build_layers`` decoder layers of an ``n_layer``
    model (the residual scaling still uses ``n_layer``). Initialisation draws in parameter order
    (embeddings, then layer 0, 1, …), so the layers built hold exactly the weights of the full
    model's first layers; what follows them (later layers, final norm, an untied LM head) is not
    the full model's. For measurements that read only early layers (SK-1 reads layer 0 of 48
    12-layer models at paper size: a whole one takes 2.5 s of CPU draws on 2 cores, its
    first block with the embeddings 0.3 s).

    ``embedding_seed``: draw the token embedding, the position embedding (GPT-2) and an untied
    LM head from their own generator seeded with it, so they are identical across ``seed``s
    (001 footnote 2, B.2); the blocks still come from ``seed``.
    ``perturb_norms > 0``: norm weights 1 + p·N(0,1) and norm biases p·N(0,1) instead of 1 and
    0 (drawn after all other weights, so the linear weights do not depend on p), for tests that
    must not pass by an accident of identity norms.
    """
    from repro.core.models.attention import register

    register()  # attn_implementation may name repro_sdpa (repro.core.models.attention.SDPA)
    if build_layers is not None and not 1 <= build_layers <= n_layer:
        raise ReproError(f"build_layers must be in 1..n_layer={n_layer}, got {build_layers}")
    config = build_config(
        arch,
        n_layer=n_layer if build_layers is None else build_layers,
        n_head=n_head,
        d_model=d_model,
        vocab_size=vocab_size,
        n_positions=n_positions,
        d_ff=d_ff,
        tie_word_embeddings=tie_word_embeddings,
        attn_implementation=attn_implementation,
    )
    cls = _model_class(arch)
    try:
        from transformers.initialization import no_init_weights
    except ImportError:  # older/newer layout: pay for HF's init, then overwrite it
        model = cls(config)
    else:
        with no_init_weights():  # also skips tying (it lives in init_weights): tie below
            model = cls(config)
    model.tie_weights()
    init_gpt_style_(
        model,
        n_layer,
        make_generator(seed),
        embedding_generator=None if embedding_seed is None else make_generator(embedding_seed),
        perturb_norms=perturb_norms,
    )
    if dtype != torch.float32:
        # parameters only: buffers such as RoPE's inv_freq stay float32 (a bf16 inv_freq would
        # blur positions); a tied parameter is one object, so it stays tied.
        for param in model.parameters():
            param.data = param.data.to(dtype)
    return model.eval()


def random_init_twin(model: nn.Module, seed: int = 0) -> nn.Module:
    """The same transformers architecture, freshly initialised (tied embeddings stay tied): the
    negative control of the alignment measures (no training, so no input→output drift); the
    claims of causal shift, residual stream, sinks and SeedPrint use it."""
    with torch.random.fork_rng():
        torch.manual_seed(derive_seed("random-init-twin", seed))
        twin = type(model)(model.config)
    return twin.to(next(model.parameters()).device).eval()


# --------------------------------------------------------------------------- init groups


def _is_norm(module: nn.Module) -> bool:
    name = type(module).__name__
    return isinstance(module, (nn.LayerNorm, nn.RMSNorm)) or "LayerNorm" in name or "RMSNorm" in name


def _is_linear(module: nn.Module) -> bool:
    from transformers.pytorch_utils import Conv1D

    return isinstance(module, (nn.Linear, Conv1D))


def param_groups(model: nn.Module) -> dict[str, list[str]]:
    """Names (as in ``model.named_parameters()``) of the parameters in each init group of B.1.

    Groups: ``"embedding"`` (token and learned position embeddings), ``"lm_head"`` (an untied
    unembedding; empty when tied, since then it is the embedding), ``"linear"``,
    ``"residual_proj"`` (W_O and W_down weights), ``"norm"`` (norm weights *and* biases),
    ``"bias"`` (biases of linear layers). Works on the three HF archs and `tiny.TinyDecoder`;
    a parameter it cannot place is an error, so a new architecture cannot slip past the init.
    """
    groups: dict[str, list[str]] = {g: [] for g in PARAM_GROUPS}
    output = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    if output is None:
        output = getattr(model, "lm_head", None)
    seen: set[int] = set()  # tied parameters are listed once, under their first name
    for mod_name, module in model.named_modules():
        for p_name, param in module.named_parameters(recurse=False):
            full = f"{mod_name}.{p_name}" if mod_name else p_name
            if id(param) in seen:
                continue
            seen.add(id(param))
            if output is not None and module is output and p_name == "weight":
                group = "lm_head"
            elif isinstance(module, nn.Embedding):
                group = "embedding"
            elif _is_norm(module):
                group = "norm"
            elif _is_linear(module):
                parts = mod_name.split(".")
                if p_name == "bias":
                    group = "bias"
                elif len(parts) >= 2 and (parts[-2], parts[-1]) in _RESIDUAL_PROJ:
                    group = "residual_proj"
                else:
                    group = "linear"
            else:
                raise ReproError(
                    f"param_groups: cannot place parameter {full!r} of {type(module).__name__}; "
                    "add its module type to repro.core.models.hf"
                )
            groups[group].append(full)
    # keep named_parameters() order within each group
    order = {n: i for i, (n, _) in enumerate(model.named_parameters())}
    for names in groups.values():
        names.sort(key=lambda n: order.get(n, len(order)))
    return groups


def _normal_(param: torch.Tensor, std: float, gen: torch.Generator) -> None:
    # Draw in float32 on CPU so the numbers do not depend on the model's dtype or device.
    if param.dtype == torch.float32 and param.device.type == "cpu":
        param.normal_(0.0, std, generator=gen)
    else:
        param.copy_(torch.empty(param.shape, dtype=torch.float32).normal_(0.0, std, generator=gen))


@torch.no_grad()
def init_gpt_style_(
    model: nn.Module,
    n_layer: int,
    generator: torch.Generator,
    *,
    embedding_generator: torch.Generator | None = None,
    perturb_norms: float = 0.0,
    std: float = INIT_STD,
) -> None:
    """Initialise `model` in place as 001 App B.1 says (see the module docstring).

    Pass 1 walks ``named_parameters()`` in order: embeddings / LM head from
    ``embedding_generator`` (else ``generator``), linear weights N(0, std²), residual
    projections N(0, (std/√(2·n_layer))²), linear biases 0, norms 1 / 0. Pass 2 (only when
    ``perturb_norms > 0``) perturbs the norms from ``generator``.
    """
    if n_layer < 1:
        raise ReproError(f"n_layer must be >= 1 for the residual scaling, got {n_layer}")
    if perturb_norms < 0:
        raise ReproError(f"perturb_norms must be >= 0, got {perturb_norms}")
    groups = param_groups(model)
    group_of = {name: g for g, names in groups.items() for name in names}
    emb_gen = embedding_generator if embedding_generator is not None else generator
    resid_std = std / math.sqrt(2 * n_layer)
    norm_params: list[tuple[str, torch.Tensor]] = []
    for name, param in model.named_parameters():
        group = group_of[name]
        if group in ("embedding", "lm_head"):
            _normal_(param, std, emb_gen)
        elif group == "linear":
            _normal_(param, std, generator)
        elif group == "residual_proj":
            _normal_(param, resid_std, generator)
        elif group == "bias":
            param.zero_()
        else:  # norm
            param.fill_(0.0 if name.endswith("bias") else 1.0)
            norm_params.append((name, param))
    if perturb_norms > 0:
        for _name, param in norm_params:
            noise = torch.empty(param.shape, dtype=torch.float32).normal_(0.0, perturb_norms, generator=generator)
            param.add_(noise.to(param.dtype))


# --------------------------------------------------------------------------- attention switching


@contextlib.contextmanager
def attn_implementation(model: nn.Module, name: str) -> Iterator[nn.Module]:
    """Run a transformers model on the attention implementation `name` (e.g. a function
    registered in the AttentionInterface) for the duration of the block, restoring its own
    afterwards, also on error."""
    if not hasattr(model, "set_attn_implementation"):
        raise ReproError(
            f"switching attention needs a transformers model (AttentionInterface); got {type(model).__name__}"
        )
    before = model.config._attn_implementation
    model.set_attn_implementation(name)
    try:
        yield model
    finally:
        model.set_attn_implementation(before)


@contextlib.contextmanager
def in_dtype(model: nn.Module, dtype: torch.dtype) -> Iterator[nn.Module]:
    """Run `model` with its parameters and buffers in `dtype` for the duration of the block,
    converted in place and back, also on error. Exact when `dtype` holds every value of the
    model's own (float32 or bfloat16 → float64 → back): no copy of the weights is needed."""
    before = next(model.parameters()).dtype
    model.to(dtype)
    try:
        yield model
    finally:
        model.to(before)
