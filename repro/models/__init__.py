"""Models: random-init HF builders (`hf`), the ablation decoder (`tiny`), pretrained loaders.

Re-exports are lazy so that importing a sibling module (e.g. `repro.models.pretrained`) does not
pay for importing transformers' model classes.
"""
from __future__ import annotations

import importlib

_EXPORTS = {
    "ARCHS": "hf", "build_config": "hf", "build_model": "hf", "init_gpt_style_": "hf",
    "param_groups": "hf",
    "TinyConfig": "tiny", "TinyDecoder": "tiny", "TinyOutput": "tiny", "TinyConfigError": "tiny",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
