"""Reading activations: forward hooks at a model's residual stream, sub-modules, attention maps and
final norm — `hooks` / `capture`, the one way the suite reads them.

Everything is read with plain forward hooks (no model surgery): registered for one forward pass
and always removed in a `finally`, so a capture leaves the model exactly as it found it.

Residual stream convention (used everywhere in the suite): for a model with L blocks,
`residual[:, l]` is the input of block l (l = 0 is the embedding output, after Gemma's √d
scaling, which happens inside Gemma's embedding module) and `residual[:, L]` is the output of
the last block, i.e. the final state *before* the final norm. transformers 5.x's
`output_hidden_states` agrees on the first L entries, but its last entry is *after* the final
norm — so the logit lens (`repro.core.lens`) is built from hooked pre-norm states, and applies
the final norm exactly once.

Additive decomposition: `attn_out` and `mlp_out` are what each block adds to the stream
(for Gemma 2/3 that is the output of the post-attention / post-feed-forward norm), so for
sequential blocks residual[l+1] = residual[l] + attn_out[l] + mlp_out[l], and the same holds
for GPT-NeoX's parallel residual.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any, Iterator, Sequence

import torch
from torch import nn

from repro.core.arch import arch_map, resolve
from repro.ground.errors import ReproError

# --------------------------------------------------------------------------- hooks


# module name → (path inside a block, "in" | "out"): what a capture records per layer.
MODULE_ALIASES: dict[str, tuple[str, str]] = {
    "attn_out": ("attn_resid", "out"),  # attention's contribution to the residual stream
    "mlp_out": ("mlp_resid", "out"),  # MLP's contribution to the residual stream
    "attn_in": ("attn_norm", "out"),  # normalised input of attention
    "mlp_in": ("mlp_norm", "out"),  # normalised input of the MLP
    "attn_heads": ("attn_out_proj", "in"),  # concatenated per-head outputs, before W_O
}


@dataclass
class Capture:
    """What one `hooks`/`capture` session recorded. Per-layer tensors are detached copies;
    several forward passes inside one session are concatenated along the batch dimension.

    residual: (B, L+1, T, d) — block inputs, then the last block's (pre-norm) output.
    modules: name → list of L per-layer tensors (e.g. "attn_out" (B, T, d)).
    attentions: L tensors (B, H, T, T) of attention probabilities (eager attention only).
    final_normed: (B, T, d) — the final norm's output (with `final_norm=True`).
    output: the model's return value from the last forward pass.
    With `positions`, T is the number of positions kept.
    """

    residual: torch.Tensor | None = None
    modules: dict[str, list[torch.Tensor]] = field(default_factory=dict)
    attentions: list[torch.Tensor] | None = None
    final_normed: torch.Tensor | None = None
    output: Any = None

    @property
    def logits(self) -> torch.Tensor | None:
        return getattr(self.output, "logits", None)


def _first_tensor(x: Any) -> torch.Tensor | None:
    if isinstance(x, torch.Tensor):
        return x
    if isinstance(x, (tuple, list)) and x and isinstance(x[0], torch.Tensor):
        return x[0]
    return None


class _Recorder:
    def __init__(self, n_layers: int, device: torch.device | str | None, positions: torch.Tensor | None = None):
        self.n = n_layers
        self.device = device
        self.positions = positions
        self.store: dict[str, list[list[torch.Tensor]]] = {}

    def put(self, key: str, layer: int, t: torch.Tensor | None) -> None:
        if t is None:
            return
        t = t.detach()
        if self.positions is not None:  # a new tensor of the kept positions only
            t = t.index_select(1, self.positions.to(t.device))
            t = t.to(self.device) if self.device is not None else t
        else:
            t = t.to(self.device, copy=True) if self.device is not None else t.clone()
        self.store.setdefault(key, [[] for _ in range(self.n)])[layer].append(t)

    def per_layer(self, key: str, expect: int) -> list[torch.Tensor] | None:
        runs = self.store.get(key)
        if runs is None:
            return None
        out = []
        for layer, chunks in enumerate(runs[:expect]):
            if not chunks:
                raise ReproError(f"capture of {key!r} saw nothing at layer {layer}")
            try:
                out.append(chunks[0] if len(chunks) == 1 else torch.cat(chunks, dim=0))
            except RuntimeError as e:
                raise ReproError(
                    f"forward passes in one capture of {key!r} have different shapes "
                    f"({[tuple(c.shape) for c in chunks]}); capture them separately"
                ) from e
        return out


@contextlib.contextmanager
def hooks(
    model: nn.Module,
    *,
    residual: bool = True,
    modules: Sequence[str] | None = None,
    attentions: bool = False,
    final_norm: bool = False,
    positions: torch.Tensor | None = None,
    device: torch.device | str | None = None,
) -> Iterator[Capture]:
    """Register forward hooks, yield a Capture that is filled when the `with` block exits.

    `modules`: aliases from MODULE_ALIASES or any dotted path inside a block (its output is
    recorded); None means ("attn_out", "mlp_out"), those the blocks have. `attentions`: the
    attention modules' probabilities — needs eager attention (HF) or, for the tiny decoder,
    a forward pass with output_attentions=True (`capture` passes it). `final_norm`: the final
    norm's output too (the last block's output where the model has no final norm).
    `positions`: (P,) sequence positions — every recorded state keeps only these (dim 1), so a
    long batch costs P, not T, per state (e.g. the preference probe's last tokens).
    `device`: where captured copies go (e.g. "cpu" while the model runs on a GPU).
    The hooks are removed in a `finally`, also when the forward pass raises.
    """
    if positions is not None and attentions:
        raise ReproError("hooks: `positions` keeps sequence positions of states, not of attention maps")
    amap = arch_map(model)
    if modules is None:
        modules = [m for m, attr in (("attn_out", amap.attn_resid), ("mlp_out", amap.mlp_resid)) if attr]
    modules = list(dict.fromkeys(modules))  # a name asked for twice is hooked once
    if attentions and amap.attn is None:
        raise ReproError(f"{amap.family} blocks have no attention: no attention maps to capture")
    blocks = amap.blocks(model)
    n_layers = len(blocks)
    rec = _Recorder(n_layers + 1, device, positions)
    cap = Capture()
    handles: list[torch.utils.hooks.RemovableHandle] = []

    def resid_in(layer: int):
        def hook(_mod, args, kwargs):
            h = args[0] if args else kwargs.get("hidden_states")
            rec.put("residual", layer, _first_tensor(h))

        return hook

    def last_out(_mod, _args, output):
        rec.put("residual", n_layers, _first_tensor(output))

    def out_hook(key: str, layer: int):
        return lambda _m, _a, output: rec.put(key, layer, _first_tensor(output))

    def in_hook(key: str, layer: int):
        def hook(_mod, args, kwargs):
            rec.put(key, layer, _first_tensor(args[0] if args else kwargs.get("hidden_states")))

        return hook

    def attn_hook(layer: int):
        def hook(_mod, _args, output):
            w = output[1] if isinstance(output, (tuple, list)) and len(output) > 1 else None
            if not isinstance(w, torch.Tensor):
                raise ReproError(
                    f"{type(model).__name__} returned no attention weights at layer {layer}: "
                    "attention maps need eager attention — build the model with "
                    "attn_implementation='eager' (or call model.set_attn_implementation('eager')), "
                    "and run the forward pass with output_attentions=True"
                )
            rec.put("attentions", layer, w)

        return hook

    try:
        for i, block in enumerate(blocks):
            if residual:
                handles.append(block.register_forward_pre_hook(resid_in(i), with_kwargs=True))
            for name in modules:
                attr, where = MODULE_ALIASES.get(name, (None, "out"))
                path = getattr(amap, attr) if attr else name
                if path is None:
                    raise ReproError(f"{amap.family} blocks have no {name!r} module")
                mod = resolve(block, path)
                if where == "in":
                    handles.append(mod.register_forward_pre_hook(in_hook(name, i), with_kwargs=True))
                else:
                    handles.append(mod.register_forward_hook(out_hook(name, i)))
            if attentions:
                handles.append(resolve(block, amap.attn).register_forward_hook(attn_hook(i)))
        if residual:
            handles.append(blocks[-1].register_forward_hook(last_out))
        if final_norm:
            norm = resolve(model, amap.final_norm) if amap.final_norm is not None else None
            handles.append(
                (norm if norm is not None else blocks[-1]).register_forward_hook(
                    lambda _m, _a, output: rec.put("final", 0, _first_tensor(output))
                )
            )
        yield cap
    finally:
        for h in handles:
            h.remove()

    if residual and "residual" in rec.store:
        cap.residual = torch.stack(rec.per_layer("residual", n_layers + 1), dim=1)
    for name in modules:
        got = rec.per_layer(name, n_layers)
        if got is not None:
            cap.modules[name] = got
    if attentions:
        cap.attentions = rec.per_layer("attentions", n_layers)
    if final_norm:
        cap.final_normed = rec.per_layer("final", 1)[0] if "final" in rec.store else None


def capture(
    model: nn.Module,
    input_ids: torch.Tensor,
    *,
    residual: bool = True,
    modules: Sequence[str] | None = None,
    attentions: bool = False,
    device: torch.device | str | None = None,
    **forward_kwargs: Any,
) -> Capture:
    """One forward pass under torch.no_grad() with hooks; returns residual states, module
    outputs, attention maps and the model output. Extra keyword arguments go to the model
    (e.g. attention_mask, or logits_to_keep=1 to skip full-vocabulary logits)."""
    if input_ids.dim() == 1:
        input_ids = input_ids.unsqueeze(0)
    if attentions:
        forward_kwargs.setdefault("output_attentions", True)
    with hooks(model, residual=residual, modules=modules, attentions=attentions, device=device) as cap:
        with torch.no_grad():
            cap.output = model(input_ids=input_ids, **forward_kwargs)
    return cap
