"""Settings a backend cannot apply (issue 44 item 2): refused before anything runs, or recorded as asked and
not applied, never recorded as if the engine ran with them.

Each backend declares the recorded settings its engine is configured by (``backends.APPLIES``, a
:class:`contract.adapter.SettingsApplied` each; a server someone else started, ``--backend openai``, applies
none). A setting is *asked* when its flag is given a value other than its default. What happens when a chosen
backend does not apply a setting asked depends on the setting (:data:`SETTINGS`):

- ``refuse``: one line, exit 2, before anything runs (``--no-prefix-caching``, ``--tp``, ``--dtype``): a
  column recorded as "caching off" or "tp 2" that ran otherwise would be compared as what it is not (the
  page pairs caching on with off).
- ``family``: a setting of one family of engines (``--attn``: HF's attention; ``--engine-defaults``: vLLM's
  scheduler): refused where no chosen backend applies it (the flag would do nothing), else recorded as not
  applied by the others.
- ``record``: a setting the harness itself uses whatever the engine (``--max-model-len``: every prompt plus
  its new tokens is checked against it; ``--random-weights``: how a config-only model's files are read;
  ``--device``: the dtype's default), or that only some backends' load has a use for (``--client-procs``:
  client processes over HTTP): never refused, recorded as not applied by the backends that do not take it.

``--dp`` and ``--router`` are refused by the same declaration in harness/parallel_args.py, with their own
reasons. :func:`not_applied` is what env.json's ``settings_not_applied`` holds: per backend, every recorded
setting it does not apply, ``asked`` or ``default``; the page never pairs columns on a setting that one of
them did not apply (``workloads.load.report.caching``).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any

from llm_call_anatomy import backends
from llm_call_anatomy.harness.cli_checks import UsageError

REFUSE, FAMILY, RECORD = "refuse", "family", "record"


@dataclass(frozen=True)
class Setting:
    """One recorded setting: its ``SettingsApplied`` field, its flag and argparse ``dest``, the flag's
    default (any other value is asked) and what a backend that does not apply it gets (``policy``)."""

    name: str
    flag: str
    dest: str
    default: Any
    policy: str

    def asked(self, args: argparse.Namespace) -> bool:
        return getattr(args, self.dest, self.default) != self.default

    def shown(self, args: argparse.Namespace) -> str:
        """The flag as given: ``--tp 2``, ``--no-prefix-caching``."""
        value = getattr(args, self.dest, self.default)
        return self.flag if isinstance(value, bool) else f"{self.flag} {value}"


SETTINGS: tuple[Setting, ...] = (
    Setting("prefix_caching", "--no-prefix-caching", "no_prefix_caching", False, REFUSE),
    Setting("tp", "--tp", "tp", 1, REFUSE),
    Setting("dtype", "--dtype", "dtype", "auto", REFUSE),
    Setting("attn", "--attn", "attn", "eager", FAMILY),
    Setting("engine_defaults", "--engine-defaults", "engine_defaults", "matched", FAMILY),
    Setting("max_model_len", "--max-model-len", "max_model_len", 4096, RECORD),
    Setting("random_weights", "--random-weights", "random_weights", False, RECORD),
    Setting("device", "--device", "device", "auto", RECORD),
    Setting("client_procs", "--client-procs", "client_procs", None, RECORD),  # in process: no clients
)
# checked with their own reasons in harness/parallel_args.py (the same declaration: backends.DATA_PARALLEL)
PARALLEL: tuple[Setting, ...] = (
    Setting("dp", "--dp", "dp", 1, REFUSE),
    Setting("router", "--router", "router", "internal", REFUSE),
)


def _why(name: str) -> str:
    """Why ``name`` does not apply a setting, in a few words."""
    if backends.base_of(name) in backends.EXTERNAL:
        return (
            "a server someone else started keeps its own: start it with the setting you want, and leave this "
            "flag out"
        )
    return "its engine takes no such setting: run it in a run of its own"


def check_applicable(args: argparse.Namespace, names: list[str]) -> None:
    """``UsageError`` (one line, exit 2) for the first setting asked that a chosen backend cannot apply and
    that is not only recorded (see the module docstring)."""
    for setting in SETTINGS:
        if setting.policy == RECORD or not setting.asked(args):
            continue
        lacking = [n for n in names if not backends.applies(n).applies(setting.name)]
        if not lacking:
            continue
        those = backends.applying(setting.name)
        if setting.policy == REFUSE:
            raise UsageError(
                f"{setting.shown(args)}: --backend {', '.join(lacking)} cannot apply it "
                f"({_why(lacking[0])}; it applies to: {', '.join(those) or 'none'})"
            )
        if len(lacking) == len(names):  # FAMILY: the flag would do nothing at all
            raise UsageError(
                f"{setting.shown(args)}: applies to {', '.join(those)} only, none of which is in --backend "
                f"({', '.join(names)})"
            )


def not_applied(args: argparse.Namespace, names: list[str]) -> dict[str, dict[str, str]]:
    """Per chosen backend, each recorded setting it does not apply: ``asked`` (its flag was given) or
    ``default`` (run.json's value is the default, not what the engine ran with); backends that apply every
    one are left out. env.json's ``settings_not_applied``."""
    out: dict[str, dict[str, str]] = {}
    for name in names:
        applied = backends.applies(name)
        missing = {
            s.name: "asked" if s.asked(args) else "default"
            for s in (*SETTINGS, *PARALLEL)
            if not applied.applies(s.name)
        }
        if missing:
            out[name] = missing
    return out
