"""Which attention a model runs: the name the suite's SDPA is registered under, and whether a
model attends through SDPA (torch's, transformers' or the suite's).

Read by the checkpoint key (`repro.core.checkpoints`: under a bf16 autocast on a CPU, SDPA runs
in float32, and the key says so) and by the models (`repro.core.models.attention` registers
`SDPA`; `repro.core.models.tiny`'s attention says `attends_by_sdpa`), here so that the
checkpoint cache imports no model code and the models' loader (`models.pretrained`) can import
the checkpoint cache.
"""

from __future__ import annotations

from torch import nn

#: the suite's SDPA in transformers' AttentionInterface (`repro.core.models.attention.register`)
SDPA = "repro_sdpa"


def attends_by_sdpa(model: nn.Module) -> bool:
    """Does the model attend through SDPA: an HF config whose attention implementation is "sdpa"
    or `SDPA`, or a module that says so itself (`attends_by_sdpa`, the tiny decoder's attention)?"""
    for m in model.modules():
        if getattr(getattr(m, "config", None), "_attn_implementation", None) in ("sdpa", SDPA):
            return True
        if getattr(m, "attends_by_sdpa", False) is True:
            return True
    return False
