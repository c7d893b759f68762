"""Configurations as columns (issue 41): a backend column that carries a named configuration of its engine.

    --backend vllm-server@fp8,sglang-server --variants-file variants.yaml
    --variant vllm-server@big-batch:max_num_seqs=1024          (repeatable; the column runs)
    --sweep vllm-server:max_num_seqs=128,256,1024              (columns vllm-server@max_num_seqs=128, ...)

A variant is its base backend plus engine settings. The settings go the one way engine settings already go
(``--engine-arg``: in-process engines' keyword arguments, a launched server's ``--key value`` flags, hf-cb's
``ContinuousBatchingConfig`` fields) and are checked by the one rule (``server_args.check_engine_setting``: a
backend that takes engine arguments, no setting the harness owns, finite values). The column's name is
``base@variant`` everywhere (``env/<column>.json``, the records' ``backend``, the page); its adapter, the
settings it applies and its interpreter are its base's (``contract.columns.base_of``).

Where variants are defined: on the command line (``--variant``, ``--sweep``), or in a ``--variants-file``, a
YAML mapping ``variants: {fp8: {quantization: fp8, kv_cache_dtype: fp8}}`` whose names may also be
``base@name`` (that base alone; before a plain ``name``). A file of its own rather than a key of the
workload file: a workload file describes requests, is checked by the workloads layer (which knows no
backends) and is hashed into the plan; a configuration is a property of a column, and every column of a run
replays the same plan, so one variants file serves any workload file and changing a variant's settings
never changes the plan. ``--resume`` compares each column's engine arguments (run.json), so a variant
redefined under the same name is refused, not mixed.

Every mistake (unknown variant or base backend, a setting the harness owns, a malformed ``KEY=VALUE``) is
one line, exit 2, before any engine starts.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from llm_call_anatomy.contract.columns import NAME, base_of, column, split_column
from llm_call_anatomy.contract.docs import doc
from llm_call_anatomy.harness import server_args
from llm_call_anatomy.harness.cli_checks import UsageError, parse_backends


@dataclass(frozen=True)
class Variant:
    """One column's configuration: its base backend, its name, its settings as given and where from."""

    base: str
    name: str
    settings: dict[str, Any] = field(default_factory=dict)
    source: str = "--variant"

    @property
    def column(self) -> str:
        return column(self.base, self.name)

    def described(self) -> dict[str, Any]:
        """env.json's ``variants[column]``."""
        return {
            "base": self.base,
            "variant": self.name,
            "settings": dict(self.settings),
            "source": self.source,
        }


def add_variant_args(p: argparse.ArgumentParser) -> None:
    """``--variant``, ``--variants-file`` and ``--sweep`` on the study's parser (:func:`resolve` checks)."""
    p.add_argument(
        "--variant",
        action="append",
        default=[],
        metavar="BACKEND@NAME:KEY=VALUE,...",
        help="a named configuration of a backend, run as its own column BACKEND@NAME, e.g. "
        "vllm-server@big-batch:max_num_seqs=1024 (engine settings as --engine-arg takes them; repeatable)",
    )
    p.add_argument(
        "--variants-file",
        type=Path,
        default=None,
        metavar="YAML",
        help="variants by name for --backend BACKEND@NAME: 'variants: {fp8: {quantization: fp8, "
        "kv_cache_dtype: fp8}}' (a name may be BACKEND@NAME: that backend only); "
        f"{doc('guides/servers.md#configurations-as-columns')}",
    )
    p.add_argument(
        "--sweep",
        action="append",
        default=[],
        metavar="BACKEND:KEY=V1,V2,...",
        help="one column per value, each its own engine start in turn, e.g. "
        "vllm-server:max_num_seqs=128,256,1024 (columns vllm-server@max_num_seqs=128 ...; resumable; "
        "the load page draws their Pareto)",
    )


# --- parsing ---------------------------------------------------------------------------------------------
def parse_settings(what: str, base: str, text: str) -> dict[str, Any]:
    """``KEY=VALUE,KEY=VALUE`` -> {key: value}, each checked by the engine-setting rule."""
    out: dict[str, Any] = {}
    for item in filter(None, (x.strip() for x in text.split(","))):
        key, eq, value_text = item.partition("=")
        key = key.strip().replace("-", "_")
        if not eq or not key.isidentifier():
            raise UsageError(f"{what}: expected KEY=VALUE[,KEY=VALUE...], not {item!r}")
        out[key] = checked(what, base, key, server_args.parse_value(value_text.strip()), value_text)
    if not out:
        raise UsageError(f"{what}: expected KEY=VALUE[,KEY=VALUE...] after the ':'")
    return out


def checked(what: str, base: str, key: str, value: Any, text: str | None = None) -> Any:
    server_args.check_engine_setting(what, base, key, value, text)
    return value


def parse_variant(item: str, known: tuple[str, ...]) -> Variant:
    """``BACKEND@NAME:KEY=VALUE,...`` (``--variant``)."""
    what = f"--variant {item!r}"
    head, sep, rest = item.partition(":")
    base, name = split_column(head.strip())
    if not sep or name is None:
        raise UsageError(
            f"{what}: expected BACKEND@NAME:KEY=VALUE,..., e.g. vllm-server@big-batch:max_num_seqs=1024"
        )
    check_base(what, base, known)
    check_name(what, name)
    return Variant(base, name, parse_settings(what, base, rest), "--variant")


def parse_sweep(item: str, known: tuple[str, ...]) -> list[Variant]:
    """``BACKEND:KEY=V1,V2,...`` (``--sweep``): one variant ``KEY=V`` per value, in the order given."""
    what = f"--sweep {item!r}"
    base, sep, rest = item.partition(":")
    key, eq, values = rest.partition("=")
    key = key.strip().replace("-", "_")
    texts = [v.strip() for v in values.split(",") if v.strip()]
    if not sep or not eq or not key.isidentifier() or not texts:
        raise UsageError(
            f"{what}: expected BACKEND:KEY=V1,V2,..., e.g. vllm-server:max_num_seqs=128,256,1024"
        )
    base = base.strip()
    check_base(what, base, known)
    if len(set(texts)) < len(texts):
        raise UsageError(f"{what}: a value is given twice")
    out = []
    for text in texts:
        name = f"{key}={text}"
        check_name(what, name)
        value = checked(what, base, key, server_args.parse_value(text), text)
        out.append(Variant(base, name, {key: value}, "--sweep"))
    return out


def read_variants_file(path: Path, known: tuple[str, ...]) -> dict[str, dict[str, Any]]:
    """``--variants-file``: {name or base@name: {key: value}} as the file gives them (checked per column)."""
    import yaml

    what = f"--variants-file {path}"
    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise UsageError(f"{what}: {exc.strerror or exc}") from exc
    except yaml.YAMLError as exc:
        raise UsageError(f"{what}: not YAML ({str(exc).splitlines()[0]})") from exc
    found = data.get("variants") if isinstance(data, dict) else None
    if not isinstance(found, dict) or not found or set(data) != {"variants"}:
        raise UsageError(f"{what}: expected one top-level mapping 'variants: {{NAME: {{KEY: VALUE, ...}}}}'")
    out: dict[str, dict[str, Any]] = {}
    for raw_name, settings in found.items():
        name = str(raw_name)
        base, variant = split_column(name)
        if variant is not None:
            check_base(f"{what}: {name}", base, known)
        check_name(f"{what}: {name}", variant if variant is not None else name)
        if not isinstance(settings, dict) or not settings:
            raise UsageError(
                f"{what}: {name}: expected a mapping of engine settings, e.g. {{max_num_seqs: 256}}"
            )
        out[name] = {str(k).replace("-", "_"): v for k, v in settings.items()}
    return out


def check_base(what: str, base: str, known: tuple[str, ...]) -> None:
    if base not in known:
        raise UsageError(f"{what}: unknown backend {base!r} (choose from: {', '.join(known)})")


def check_name(what: str, name: str) -> None:
    if not NAME.match(name):
        raise UsageError(f"{what}: {name!r} is no variant name (letters, digits and . _ = + -)")


# --- the run's columns --------------------------------------------------------------------------------------
def resolve(args: argparse.Namespace, known: tuple[str, ...]) -> tuple[list[str], dict[str, Variant]]:
    """The run's columns (``--backend``'s, then each ``--variant``'s and ``--sweep``'s not already named) and
    the variant of each ``base@name`` column. ``--backend`` left out: ``all`` without variants, else none but
    theirs. ``args.backend`` is set to the columns, for what reads it again."""
    given = [parse_variant(item, known) for item in args.variant]
    given += [v for item in args.sweep for v in parse_sweep(item, known)]
    defined = {v.column: v for v in given}
    if len(defined) < len(given):
        twice = sorted({v.column for v in given if sum(w.column == v.column for w in given) > 1})
        raise UsageError(f"--variant/--sweep: {', '.join(twice)} defined twice")
    from_file = read_variants_file(args.variants_file, known) if args.variants_file else {}
    text = args.backend if args.backend is not None else ("" if given else "all")
    names = parse_backends(text) if text else []
    names += [c for c in defined if c not in names]
    if not names:
        raise UsageError("--backend names no backend")
    variants: dict[str, Variant] = {}
    for name in names:
        base, variant = split_column(name)
        if variant is None:
            continue
        if name in defined:
            variants[name] = defined[name]
            continue
        settings = from_file.get(name, from_file.get(variant))
        if settings is None:
            variants[name] = unknown(name, from_file, defined, args.variants_file)
        where = f"--backend {name} (--variants-file {args.variants_file})"
        variants[name] = Variant(
            base,
            variant,
            {k: checked(where, base, k, v) for k, v in settings.items()},
            f"--variants-file {args.variants_file}",
        )
    args.backend = ",".join(names)
    return names, variants


def unknown(name: str, from_file: dict, defined: dict, path: Path | None) -> Variant:
    base, variant = split_column(name)
    names = sorted({*from_file, *(c for c in defined if base_of(c) == base)})
    where = f"--variants-file {path}" if path else "no --variants-file given"
    raise UsageError(
        f"--backend {name}: no variant {variant!r} is defined ({where}; defined: "
        f"{', '.join(names) or 'none'}); define it with --variant {base}@{variant}:KEY=VALUE or in a "
        "--variants-file"
    )


def engine_args_by_column(
    engine_args: dict[str, dict[str, Any]], names: list[str], variants: dict[str, Variant]
) -> dict[str, dict[str, Any]]:
    """run.json's ``engine_args``, per column: ``--engine-arg``'s for its base, then for the column itself,
    then the variant's settings on top (the variant is what the column is named after)."""
    out: dict[str, dict[str, Any]] = {}
    for name in names:
        merged = {
            **engine_args.get(base_of(name), {}),
            **(engine_args.get(name, {}) if name != base_of(name) else {}),
            **(variants[name].settings if name in variants else {}),
        }
        if merged:
            out[name] = merged
    return out
