"""Measurements cached by everything that produced them: arguments, inputs, dtype policy, code.

A warm re-run of the claims (models, tokenizers and checkpoints cached) spent most of its time
re-measuring what it had measured before: BB's random-init probes, the tuned lens. `@cached`
memoises such an experiment function:

    @memo.cached("bb-preference-run")
    def preference_run(arch, *, seed, ...): ...

The key hashes the function's bound arguments (tensors by their bytes, modules by their state
and class, numbers and strings as they are, other objects by what their `memo_key()` returns),
the dtype the policy gives "auto" here, the torch version and thread count (float results may
depend on them), and the source of every package the function's module can reach (its topic,
the topics it imports, core and ground; `packages_reached`) — an edit there recomputes, so a
cached number never outlives the code that measured it (and so does a new torch, transformers,
numpy or scipy), while an edit to another topic or to the harness leaves it warm. Modules are keyed with
their buffers, train/eval mode and device, and refused while forward hooks are registered.
A computation that draws from a global RNG (torch, numpy, random) has the state it left
stored, and a hit restores it, so what runs after draws what it drew on the cold run; one
that does not leaves the RNGs alone on a hit too.

Entries live in `cache_dir("measurements", name)` as a pickle (written atomically) beside its
JSON description; an unreadable entry is recomputed. Storing is optional: a read-only or shared
cache serves the entries it holds and computes the others without storing them (a warning says
so). `REPRO_MEMO=0` recomputes everything (and stores nothing).
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import json
import os
import pickle
import random
import re
from pathlib import Path
from typing import Any, Callable, TypeVar

import numpy as np
import torch
from torch import nn

from repro.ground.cache import atomic_write_bytes, atomic_write_json, cache_dir, config_key
from repro.ground.errors import CacheUnusable, ReproError
from repro.ground.runtime import dtype_name, resolve_dtype

MEMO_ENV = "REPRO_MEMO"
PACKAGE = Path(__file__).resolve().parents[1]  # repro/
F = TypeVar("F", bound=Callable[..., Any])


def enabled() -> bool:
    value = os.environ.get(MEMO_ENV, "1").strip()
    if value not in ("0", "1"):
        raise ReproError(f"{MEMO_ENV}={value!r} is unknown; use 1 (cache measurements, the default) or 0")
    return value == "1"


_IMPORT = re.compile(r"^\s*(?:from|import)\s+repro\.(\w+)", re.MULTILINE)


def _package_files(package: str) -> list[Path]:
    """A package's source: its modules and the non-Python files it ships (a C++ kernel, a
    committed table), caches and compiled files aside."""
    root = PACKAGE / package
    files = root.rglob("*") if root.is_dir() else [root.with_suffix(".py")]
    return sorted(
        f for f in files if f.is_file() and "__pycache__" not in f.parts and f.suffix not in (".pyc", ".so", ".o")
    )


@functools.lru_cache(maxsize=None)
def packages_reached(package: str) -> tuple[str, ...]:
    """The repro packages (`core`, `born_biased`, …) whose code `package` can run: itself and
    every package it imports, transitively (imports inside functions included: the scan reads
    each `import repro.X` / `from repro.X` line)."""
    seen, todo = set(), [package]
    while todo:
        p = todo.pop()
        if p in seen:
            continue
        seen.add(p)
        for f in _package_files(p):
            if f.suffix == ".py":
                todo.extend(set(_IMPORT.findall(f.read_text(encoding="utf-8"))) - seen)
    return tuple(sorted(seen))


@functools.lru_cache(maxsize=None)
def code_version(module: str = "") -> str:
    """sha256 over the source of every package `module` can reach (`packages_reached`: path and
    bytes of each file). A topic's measurement is keyed by its topic, the topics it imports and
    the floors below (core, ground) — an edit to another topic or to the harness leaves it warm.
    A module outside the topics and floors (the harness, a test file) is keyed by all of `repro/`."""
    parts = module.split(".")
    topics_and_floors = {p.name for p in PACKAGE.iterdir() if p.is_dir() and p.name not in ("harness", "__pycache__")}
    if parts[0] == "repro" and len(parts) > 1 and parts[1] in topics_and_floors:
        packages = packages_reached(parts[1])
    else:
        packages = tuple(sorted(p.name for p in PACKAGE.iterdir() if p.is_dir() and p.name != "__pycache__"))
    h = hashlib.sha256()
    for p in ("__init__", *packages):
        for path in _package_files(p):
            h.update(str(path.relative_to(PACKAGE)).encode())
            h.update(path.read_bytes())
    return h.hexdigest()


# transformers (5.x) installs these on a model's layers the first time it runs with
# output_attentions / output_hidden_states, and leaves them there; they record only while a
# collector is active (a context variable of that forward call) and never change an output
_TRANSFORMERS_CAPTURE = "transformers.utils.output_capturing"


def _foreign_hooks(module: nn.Module) -> list[Any]:
    """Forward (pre-)hooks on `module` that could change what it computes: all but transformers'
    own output-capturing hooks."""
    return [
        h
        for h in (*module._forward_hooks.values(), *module._forward_pre_hooks.values())
        if getattr(h, "__module__", None) != _TRANSFORMERS_CAPTURE
    ]


def keyable(value: Any) -> Any:
    """A JSON-able stand-in for an argument that changes whenever the argument does."""
    from repro.core.checkpoints import model_description, state_sha256, tensor_sha256

    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        return [keyable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): keyable(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, (torch.device, torch.dtype)):
        return str(value)
    if isinstance(value, torch.Tensor):
        return {"tensor_sha256": tensor_sha256(value), "device": str(value.device)}
    if isinstance(value, np.ndarray):
        return keyable(torch.from_numpy(np.ascontiguousarray(value)))
    if callable(getattr(value, "memo_key", None)):  # an object that says what identifies it
        return keyable(value.memo_key())
    if isinstance(value, nn.Module):  # weights and buffers, class, config, attention, mode, device
        hooked = [n for n, m in value.named_modules() if _foreign_hooks(m)]
        if hooked:
            raise ReproError(
                f"memo: module {type(value).__name__} has forward hooks on {hooked[:3]}; a cached "
                "measurement cannot see what they do — call it without them"
            )
        config = getattr(value, "config", None)
        buffers = {n: {"tensor_sha256": tensor_sha256(b)} for n, b in value.named_buffers()}
        device = next((str(p.device) for p in value.parameters()), "cpu")
        return {
            **keyable_json(model_description(value)),
            "state_sha256": state_sha256(value),
            "buffers": buffers,
            "attention": getattr(config, "_attn_implementation", None),
            "training": value.training,
            "device": device,
        }
    raise ReproError(
        f"memo: cannot key an argument of type {type(value).__name__}; pass plain values, tensors or modules"
    )


def keyable_json(obj: Any) -> Any:
    """`obj` as JSON (anything JSON cannot hold as its repr), for configs inside a key."""
    return json.loads(json.dumps(obj, sort_keys=True, default=repr))


@functools.lru_cache(maxsize=None)
def library_versions() -> dict[str, str]:
    """The libraries whose code measures (models, masks, statistics)."""
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for name in ("torch", "transformers", "numpy", "scipy"):
        try:
            out[name] = version(name)
        except PackageNotFoundError:  # pragma: no cover - a source build
            out[name] = "unknown"
    return out


def description(fn: Callable[..., Any], args: tuple, kwargs: dict, ignore: tuple[str, ...] = ()) -> dict[str, Any]:
    bound = inspect.signature(fn).bind(*args, **kwargs)
    bound.apply_defaults()
    return {
        "function": f"{fn.__module__}.{fn.__qualname__}",
        "arguments": {k: keyable(v) for k, v in bound.arguments.items() if k not in ignore},
        "auto_dtype": dtype_name(resolve_dtype("auto")),
        "autocast": [torch.is_autocast_enabled(d) for d in ("cpu", "cuda")],
        "libraries": library_versions(),
        "torch_threads": torch.get_num_threads(),
        "code": code_version(fn.__module__),
    }


def _rng_state() -> tuple:
    return torch.get_rng_state(), np.random.get_state(), random.getstate()


def _set_rng_state(state: tuple) -> None:
    torch.set_rng_state(state[0])
    np.random.set_state(state[1])
    random.setstate(state[2])


_MISSING = object()


def _load(path: Path) -> Any:
    try:
        return pickle.loads(path.read_bytes())
    except FileNotFoundError:
        return _MISSING
    except (
        OSError,
        ImportError,
        pickle.UnpicklingError,
        EOFError,
        AttributeError,
        ValueError,
        TypeError,
        RuntimeError,
    ):  # unreadable, or written where a device this machine lacks existed: measure again
        return _MISSING


def _same_rng(a: tuple, b: tuple) -> bool:
    return (
        torch.equal(a[0], b[0])
        and a[1][0] == b[1][0]
        and np.array_equal(a[1][1], b[1][1])
        and a[1][2:] == b[1][2:]
        and a[2] == b[2]
    )


def cached(name: str, ignore: tuple[str, ...] = ()) -> Callable[[F], F]:
    """Memoise an experiment function under `cache_dir("measurements", name)` (see module doc);
    `ignore`: arguments that cannot change the result (e.g. a progress bar)."""

    def decorate(fn: F) -> F:
        def entry_path(desc: dict[str, Any]) -> Path:
            return cache_dir("measurements", name, create=False) / f"{config_key(desc, 24)}.pkl"

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if not enabled():
                return fn(*args, **kwargs)
            desc = description(fn, args, kwargs, ignore)
            where = entry_path(desc)
            entry = _load(where)
            if entry is not _MISSING:
                result, state = entry
                if state is not None:  # the computation drew from a global RNG: leave it where that left it
                    _set_rng_state(state)
                return result
            before = _rng_state()
            result = fn(*args, **kwargs)
            after = _rng_state()
            try:
                atomic_write_bytes(
                    where,
                    pickle.dumps(
                        (result, None if _same_rng(before, after) else after), protocol=pickle.HIGHEST_PROTOCOL
                    ),
                )
                atomic_write_json(where.with_suffix(".json"), desc)
            except (CacheUnusable, OSError, pickle.PicklingError, TypeError, AttributeError) as err:  # keep the result
                import warnings

                warnings.warn(f"memo: could not store {name} ({err}); it will be measured again next run", stacklevel=1)
            return result

        def path(*args: Any, **kwargs: Any) -> Path:
            """Where a call with these arguments stores its entry (`.pkl`, its description `.json`
            beside it): to carry a measurement to another machine's cache."""
            return entry_path(description(fn, args, kwargs, ignore))

        def stored(*args: Any, **kwargs: Any) -> bool:
            """Would a call with these arguments be served from the cache (an entry is on disk)?
            Asked before a costly step the call would make redundant (e.g. training models whose
            measurement is stored); an entry on disk that cannot be read is recomputed by the call."""
            return enabled() and path(*args, **kwargs).is_file()

        wrapper.uncached = fn  # type: ignore[attr-defined]
        wrapper.stored = stored  # type: ignore[attr-defined]
        wrapper.path = path  # type: ignore[attr-defined]
        return wrapper  # type: ignore[return-value]

    return decorate
