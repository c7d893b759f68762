"""Fresh venvs for the package tests (#43): the wheel installed into a new venv as a user installs it, its
dependencies taken from the test interpreter's own environment instead of the network.

    wheel = build_wheel(tmp / "wheel")                  # pip wheel --no-deps --no-build-isolation of a copy
    venv = Venv.create(tmp / "venv", wheel)             # venv --without-pip, pip install --no-deps --no-index
    venv.add(SITE)                                      # every package of this environment, after its own
    venv.add(link_distributions(wanted, tmp / "layer"), sitedir=True)   # or: exactly these distributions
    venv.run("-c", "import llm_call_anatomy")

A venv gets no pip of its own (``--without-pip``): this environment's pip installs into it (``pip --python``).
The wheel is installed before any layer is added, so pip finds no other copy of the project to replace. A
layer is a line of a ``.pth`` file in the venv's site-packages, after its own packages on ``sys.path``: a
plain directory (:data:`SITE`, whose own ``.pth`` files, the editable install of this checkout among them,
are then not run), or, with ``sitedir=True``, a directory of distributions added as a site directory (its
``.pth`` files run, as they would where pip had installed them).

:func:`requirements_closure` reads what a wheel requires for some extras, and what each of those requires,
from the installed distributions' metadata (markers evaluated, extras followed): the distributions ``pip
install 'WHEEL[EXTRA]'`` would install, at the versions this environment has. :func:`link_distributions`
makes a directory holding exactly those (symlinks to their files here, per ``RECORD``), so a venv sees no
package that its requirements do not bring.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.conftest import ROOT

SITE = Path(sysconfig.get_paths()["purelib"])  # this environment's site-packages: the packages to lend
DIST = "llm-call-anatomy"
NOT_SOURCE_NAMES = (
    ".git",
    ".venv",
    "runs",
    "build",
    "dist",
    "*.egg-info",
    ".cache",
    "__pycache__",
    ".pytest_cache",
    ".ruff_cache",
    "test-artifacts",
    ".gpu",
    ".whl",
    ".gl",
    ".lca-commit",
)
STAMP = "0123456789abcdef0123456789abcdef01234567"  # the commit a source archive carries (.lca-commit)


# --- pip and the wheel ------------------------------------------------------------------------------------
def pip(*args: str, python: Path | None = None, cwd: Path | None = None) -> str:
    """This environment's pip (``--python``: acting on another interpreter's environment); its output, or an
    assertion with the end of it. A deprecation warning fails too (e.g. the licence table)."""
    target = ("--python", str(python)) if python else ()
    proc = subprocess.run(
        [sys.executable, "-m", "pip", *target, *args], capture_output=True, text=True, timeout=300, cwd=cwd
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    assert "deprecat" not in (proc.stdout + proc.stderr).lower(), proc.stderr[-3000:]
    return proc.stdout


def build_wheel(base: Path) -> Path:
    """The project's wheel, built from a copy of the checkout (``build/`` left in a checkout would leak stale
    files into it) that carries a ``.lca-commit`` as a source archive does: seconds, no network."""
    source = base / "src"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(*NOT_SOURCE_NAMES))
    (source / ".lca-commit").write_text(STAMP + "\n")
    pip("wheel", "--no-deps", "--no-build-isolation", "-w", str(base / "dist"), str(source))
    (built,) = (base / "dist").glob("llm_call_anatomy-*.whl")
    return built


def wheel_requirements(wheel: Path) -> list[Requirement]:
    """The ``Requires-Dist`` lines of a wheel's METADATA, markers kept (``extra == "openai"``)."""
    with zipfile.ZipFile(wheel) as z:
        name = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        text = z.read(name).decode()
    return [
        Requirement(line.split(":", 1)[1].strip())
        for line in text.splitlines()
        if line.startswith("Requires-Dist:")
    ]


# --- a venv ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Venv:
    path: Path

    @property
    def python(self) -> Path:
        return self.path / "bin" / "python"

    @property
    def site(self) -> Path:
        """Its site-packages (the ``venv`` scheme of the interpreter it was made from)."""
        scheme = {"base": str(self.path), "platbase": str(self.path)}
        return Path(
            sysconfig.get_path("purelib", "venv" if "venv" in sysconfig.get_scheme_names() else None, scheme)
        )

    @classmethod
    def create(cls, path: Path, wheel: Path) -> Venv:
        """A new venv (no pip) with the wheel installed, none of its dependencies."""
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True, timeout=120)
        venv = cls(path)
        assert venv.site.is_dir(), venv.site
        pip("install", "--no-deps", "--no-index", "--no-compile", str(wheel), python=venv.python)
        return venv

    def add(self, layer: Path, *, sitedir: bool = False) -> None:
        """``layer`` on ``sys.path`` after everything before it (a line appended to ``zz-layers.pth``)."""
        line = f"import site; site.addsitedir({str(layer)!r})" if sitedir else str(layer)
        with (self.site / "zz-layers.pth").open("a") as f:
            f.write(line + "\n")

    def env(self) -> dict[str, str]:
        """This process's environment without what would put the checkout or another environment first."""
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "LCA_GIT_COMMIT")}
        env["VIRTUAL_ENV"] = str(self.path)
        env["PATH"] = f"{self.path / 'bin'}{os.pathsep}{env.get('PATH', '')}"
        return env

    def run(self, *args: str, cwd: Path | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
        """Its python with ``args``, from ``cwd`` (default: the venv, never the checkout)."""
        return subprocess.run(
            [str(self.python), *args],
            cwd=cwd or self.path,
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=timeout,
        )


# --- the distributions a requirement brings ----------------------------------------------------------------
@functools.cache
def installed() -> dict[str, metadata.Distribution]:
    """The distributions in :data:`SITE` by normalised name (the first of a name, as ``sys.path`` sees it)."""
    found: dict[str, metadata.Distribution] = {}
    for dist in metadata.distributions(path=[str(SITE)]):
        found.setdefault(canonicalize_name(dist.metadata["Name"]), dist)
    return found


def _wanted_by(requirement: Requirement, extras: set[str]) -> bool:
    """True where the requirement applies here for one of the extras asked of its distribution ("": none)."""
    if requirement.marker is None:
        return "" in extras
    return any(requirement.marker.evaluate({"extra": extra}) for extra in extras)


def requirements_closure(requirements: list[Requirement]) -> tuple[dict[str, str], list[str]]:
    """The distributions that ``requirements`` bring, transitively, as installed here: (name -> version,
    problems: a requirement no distribution here meets, by name or version)."""
    asked: dict[str, set[str]] = {}  # distribution -> the extras asked of it ("": itself)
    problems: list[str] = []
    todo = list(requirements)
    while todo:
        req = todo.pop()
        name = canonicalize_name(req.name)
        dist = installed().get(name)
        if dist is None:
            problems.append(f"{req} (required) is not installed in {SITE}")
            continue
        if not req.specifier.contains(dist.version, prereleases=True):
            problems.append(f"{req} (required), {dist.version} installed in {SITE}")
        new = {""} | {canonicalize_name(e) for e in req.extras}
        added = new - asked.get(name, set())
        if not added:
            continue
        asked.setdefault(name, set()).update(added)
        todo += [r for r in map(Requirement, dist.requires or []) if _wanted_by(r, added)]
    return {name: installed()[name].version for name in asked}, problems


# --- a directory of exactly those distributions ------------------------------------------------------------
@functools.cache
def _files() -> tuple[dict[tuple[str, ...], set[str]], dict[tuple[str, ...], set[str]]]:
    """For every path under :data:`SITE` that a distribution's RECORD lists, and every folder above one: the
    distributions owning something there, and the folder's entries. Scripts outside it (``../../bin``) are not
    part of a layer."""
    owners: dict[tuple[str, ...], set[str]] = {}
    children: dict[tuple[str, ...], set[str]] = {}
    for name, dist in installed().items():
        for file in dist.files or ():
            parts = Path(file).parts
            if not parts or parts[0] == ".." or Path(file).is_absolute():
                continue
            for depth in range(1, len(parts) + 1):
                owners.setdefault(parts[:depth], set()).add(name)
                children.setdefault(parts[: depth - 1], set()).add(parts[depth - 1])
    return owners, children


def link_distributions(names: set[str], into: Path) -> Path:
    """A directory holding exactly the distributions ``names`` of :data:`SITE`: a folder or file all of whose
    owners are wanted is one symlink, a folder shared with distributions not wanted (a namespace such as
    ``nvidia/``) is made and filled entry by entry."""
    owners, children = _files()
    missing = sorted(n for n in names if n not in installed() or installed()[n].files is None)
    assert not missing, f"no RECORD of {missing} in {SITE}: cannot lend them"

    def place(prefix: tuple[str, ...]) -> None:
        for entry in sorted(children.get(prefix, ())):
            path = (*prefix, entry)
            mine = owners[path] & names
            if not mine:
                continue
            if owners[path] <= names or path not in children:
                (into.joinpath(*path)).symlink_to(SITE.joinpath(*path))
            else:
                into.joinpath(*path).mkdir()
                place(path)

    into.mkdir(parents=True)
    place(())
    return into


def extra_names(wheel: Path) -> list[str]:
    """The extras a wheel declares (``Provides-Extra``)."""
    with zipfile.ZipFile(wheel) as z:
        name = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        text = z.read(name).decode()
    return re.findall(r"^Provides-Extra: (\S+)$", text, flags=re.M)
