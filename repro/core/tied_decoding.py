"""Hidden states decoded in the token dictionary (000 §III) and their input→output axis.

A tied model's one matrix is both its input embedding and its unembedding: `tied_dictionary`,
`nearest_tokens` (with "dot" on final-normed states: the logit lens's top-k), `top_k_match`,
`cosine_to`. The input→output axis: `axis_projection` (Fig 3's normalised projection between
the two tokens' embeddings) and `axis_preference` (the logit lens's two-token contrast, read
through `token_logits` without the full-vocabulary matmul).
"""

from __future__ import annotations

import torch
from torch import nn

from repro.core.arch import ArchMap, arch_map, final_norm, resolve, text_config
from repro.ground.errors import NotApplicable, ReproError


def input_embeddings(model: nn.Module, amap: ArchMap | None = None) -> torch.Tensor:
    """W_e (V, d) as the residual stream receives it (Gemma's √d scale included), detached."""
    amap = amap or arch_map(model)
    emb = resolve(model, amap.embed)
    W = emb.weight.detach()
    if amap.embed_scaled_inside:
        W = W * emb.embed_scale.to(W.dtype)
    return W


def is_tied(model: nn.Module, amap: ArchMap | None = None) -> bool:
    """Whether the LM head and the input embedding share one matrix."""
    amap = amap or arch_map(model)
    head = resolve(model, amap.lm_head).weight
    emb = resolve(model, amap.embed).weight
    return head.data_ptr() == emb.data_ptr() or (head.shape == emb.shape and torch.equal(head, emb))


def tied_dictionary(model: nn.Module) -> torch.Tensor:
    """The shared token dictionary (V, d) of a tied-embedding model (000 §III); a clear error
    for untied models, whose hidden states have no single dictionary to be decoded in."""
    amap = arch_map(model)
    if not is_tied(model, amap):
        raise NotApplicable(
            f"{type(model).__name__} does not tie its input and output embeddings: "
            "000 §III decodes hidden states in one shared dictionary (use a tied model)"
        )
    return input_embeddings(model, amap)


@torch.no_grad()
def nearest_tokens(
    h: torch.Tensor,
    dictionary: torch.Tensor,
    k: int = 5,
    *,
    metric: str = "dot",
    chunk: int = 512,
    compute_dtype: torch.dtype | None = None,
) -> torch.Tensor:
    """The k dictionary entries nearest to each state: h (N, d) → (N, k) ids, nearest first.
    metric "dot": the largest ⟨h, e_v⟩ — with h the final-normed state and a tied dictionary
    this is the logit lens's top-k (000 §III); "cosine": the smallest angle (Voronoi cells on
    the unit sphere). `compute_dtype` (e.g. bfloat16 on CPU) for the (N, V) matmul."""
    if metric not in ("dot", "cosine"):
        raise ReproError(f"metric must be 'dot' or 'cosine', got {metric!r}")
    norm = (lambda t: torch.nn.functional.normalize(t, dim=-1)) if metric == "cosine" else (lambda t: t)  # noqa: E731
    D = norm(dictionary.float())
    if compute_dtype is not None:
        D = D.to(compute_dtype)
    out = torch.empty(h.shape[0], k, dtype=torch.long, device=h.device)
    for s in range(0, h.shape[0], chunk):
        x = norm(h[s : s + chunk].float()).to(D.dtype)
        out[s : s + chunk] = (x @ D.T).topk(k, dim=-1).indices
    return out


def top_k_match(decoded: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
    """(N, k) decoded ids, (N,) reference ids → (N,) bool: the reference is among the k."""
    return (decoded == ids.unsqueeze(-1)).any(-1)


def cosine_to(h: torch.Tensor, dictionary: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
    """Cosine between each state h (N, d) and the dictionary row of its id (N,)."""
    return torch.nn.functional.cosine_similarity(h.float(), dictionary[ids].float(), dim=-1)


def axis_projection(h: torch.Tensor, e_in: torch.Tensor, e_out: torch.Tensor) -> torch.Tensor:
    """Normalised projection of each state on its input→output axis (000 §III, Fig 3): with
    every vector scaled to unit length (hidden states and embeddings live at different scales),
    t = ⟨ĥ − ê_in, ê_out − ê_in⟩ / ‖ê_out − ê_in‖², so t = 0 at the input token's embedding and
    1 at the output token's. Tokens whose input and output are the same token give NaN."""
    n = torch.nn.functional.normalize
    x, a, b = n(h.float(), dim=-1), n(e_in.float(), dim=-1), n(e_out.float(), dim=-1)
    axis = b - a
    den = (axis * axis).sum(-1)
    t = ((x - a) * axis).sum(-1) / den
    return t.masked_fill(den < 1e-12, float("nan"))


def token_logits(
    model: nn.Module, h: torch.Tensor, ids: torch.Tensor, *, normed: bool = False, amap: ArchMap | None = None
) -> torch.Tensor:
    """The logits `unembed` gives states h (N, d) for one token each, ids (N,) → (N,) float32,
    without the (N, V) matmul: final norm (unless `normed`), the LM head's row (and bias) of each
    id, the model's final soft-cap if it has one."""
    amap = amap or arch_map(model)
    if not normed:
        h = final_norm(model, amap)(h)
    head = resolve(model, amap.lm_head)
    z = (h.float() * head.weight[ids].float()).sum(-1)
    bias = getattr(head, "bias", None)
    if bias is not None:
        z = z + bias[ids].float()
    cap = getattr(text_config(model), amap.softcap_attr, None) if amap.softcap_attr else None
    if cap:
        z = torch.tanh(z / cap) * cap
    return z


def axis_preference(
    model: nn.Module, h: torch.Tensor, in_ids: torch.Tensor, out_ids: torch.Tensor, *, normed: bool = False
) -> torch.Tensor:
    """Position of each state on its input→output axis as the logit lens reads it (000 §III,
    Fig 3's projection, 0: the input token, 1: the output token): σ(z_out − z_in), the logit
    lens's probability of the output token against the input token, where z_out − z_in =
    ⟨norm(h), u_out − u_in⟩ is the (un-normalised) projection of the lens-space state on the
    axis between the two tokens' unembedding rows. A state that decodes as the input token scores
    ≈ 0, one that decodes as the output token ≈ 1, one indifferent between them 0.5; the model's
    own last layer scores its own preference for the target over repeating the input, so the
    whole 0 … 1 range is within a model's reach — unlike `axis_projection`, whose unit vectors
    put the output end at cos(h, e_out) = 1, which no layer of a real model approaches.
    h (N, d) pre-norm states (`normed`: already through the final norm), ids (N,) → (N,)
    float32; NaN where the input and output token are the same."""
    amap = arch_map(model)
    if not normed:
        h = final_norm(model, amap)(h)
    z_out = token_logits(model, h, out_ids, normed=True, amap=amap)
    z_in = token_logits(model, h, in_ids, normed=True, amap=amap)
    return torch.sigmoid(z_out - z_in).masked_fill(in_ids == out_ids, float("nan"))
