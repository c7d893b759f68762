"""The package as a user installs it (#20): the wheel's contents, and the installed ``llm-call-anatomy``
command producing a report from another directory.

The wheel is built from a copy of the tree (``pip wheel --no-deps --no-build-isolation``: seconds, no
network; a ``build/`` folder left in a checkout would otherwise leak stale files into it) and installed
into a fresh venv (``pip install --no-deps --no-index``), whose dependencies are this interpreter's own
packages (torch, transformers) on ``sys.path`` after the venv's: downloading every dependency anew would
take many minutes on a 2-core CI machine and test pip, not us (``tests/package/venvs.py``). That each extra
alone brings what its code imports is ``tests/package/test_extras_alone.py``'s.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tarfile
import tomllib
import zipfile

from llm_call_anatomy import LAYERS
from llm_call_anatomy.workloads.catalog import BUILTIN
from tests.conftest import ROOT
from tests.package.venvs import NOT_SOURCE_NAMES, SITE, STAMP, Venv, pip

PACKAGE = "llm_call_anatomy"


def test_the_wheel_carries_workloads_templates_and_the_licence_not_the_lab_or_benchmarks(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/")[0] for n in names if ".dist-info/" not in n}
    assert tops == {PACKAGE}  # one package on sys.path: no contract, reports... beside other projects'
    layers = {n.split("/")[1] for n in names if n.startswith(f"{PACKAGE}/") and n.count("/") > 1}
    assert layers == set(LAYERS)  # not benchmarks, not lab, not tests
    assert f"{PACKAGE}/__init__.py" in names
    assert not [n for n in names if "lab/" in n or "benchmarks/" in n or "/examples/" in n or "tests/" in n]
    assert not [n for n in names if n.endswith((".sh", ".md", ".html", ".jsonl.gz", ".tgz"))]  # no sitting
    assert {f"{PACKAGE}/workloads/{name}/builtin.yaml" for name in BUILTIN} <= set(names)
    templates = {
        f"{PACKAGE}/{p.relative_to(ROOT).as_posix()}"
        for p in (ROOT / "reports" / "templates").glob("*.jinja")
    }
    assert templates and templates <= set(names)
    configs = {
        f"{PACKAGE}/{p.relative_to(ROOT).as_posix()}" for p in (ROOT / "harness" / "configs").glob("*.json")
    }
    assert configs and configs <= set(names)
    assert f"{PACKAGE}/harness/chat_template.jinja" in names
    stamp = zipfile.ZipFile(wheel).read(f"{PACKAGE}/harness/.lca-commit").decode()
    assert stamp == STAMP + "\n"  # stamped by the build
    dist_info = next(n.split("/")[0] for n in names if n.endswith(".dist-info/METADATA"))
    metadata = zipfile.ZipFile(wheel).read(f"{dist_info}/METADATA").decode()
    assert "License-Expression: Apache-2.0" in metadata
    assert "Apache License" in zipfile.ZipFile(wheel).read(f"{dist_info}/licenses/LICENSE").decode()
    entry_points = zipfile.ZipFile(wheel).read(f"{dist_info}/entry_points.txt").decode()
    assert "llm-call-anatomy = llm_call_anatomy.harness.console:main" in entry_points
    assert wheel.stat().st_size < 1_000_000  # megabytes of run data would show here first


def test_the_installed_command_makes_a_report_from_another_directory(wheel, tmp_path):
    venv = Venv.create(tmp_path / "venv", wheel)
    venv.add(SITE)  # torch, transformers...: this interpreter's, after the venv's own packages
    command = venv.path / "bin" / "llm-call-anatomy"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = venv.env()

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [str(command), *args], cwd=elsewhere, env=env, capture_output=True, text=True, timeout=600
        )

    where = venv.run(
        "-c", "import llm_call_anatomy, sys; print(llm_call_anatomy.HOME, *sys.modules)", cwd=elsewhere
    )
    home, *loaded = where.stdout.split()
    assert home == str(venv.site.resolve()), where.stdout + where.stderr  # the installed copy runs
    assert not set(loaded) & {"contract", "backends", "harness", "workloads", "reports"}
    version = run("--version")
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert (version.returncode, version.stdout.strip()) == (0, f"llm-call-anatomy {declared}"), version.stderr
    proc = run(
        "--backend", "hf", "--model", "tiny", "--workloads", "template", "--repeats", "1", "--out", "x"
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = elsewhere / "x"
    assert (out / "report.html").is_file() and (out / "records.jsonl").stat().st_size > 0
    run_env = json.loads((out / "env.json").read_text())  # site-packages is no checkout: the build's stamp
    assert (run_env["git_commit"], run_env["git_commit_source"]) == (STAMP, "build")
    again = run("report", "x", "-o", "again.html")
    assert again.returncode == 0, again.stderr[-3000:]
    assert (elsewhere / "again.html").is_file()
    bad = run("report", "no-such-run")
    assert bad.returncode == 2 and bad.stderr.startswith("llm-call-anatomy report: error: "), bad.stderr


def test_a_source_archive_and_its_wheel_carry_the_checkouts_commit(tmp_path):
    """``.lca-commit`` is never tracked: a source archive built in a checkout stamps its HEAD at the root,
    and a wheel built from that archive (no .git) stamps the same commit into
    ``llm_call_anatomy/harness/``."""
    checkout = tmp_path / "checkout"
    shutil.copytree(ROOT, checkout, ignore=shutil.ignore_patterns(*NOT_SOURCE_NAMES, "lab", "tests", "docs"))
    git = ["git", "-C", str(checkout), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "x"], check=True)
    head = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True)
    head = head.stdout.strip()
    sdist = "import sys, setuptools.build_meta as b; print(b.build_sdist(sys.argv[1]))"
    proc = subprocess.run(
        [sys.executable, "-c", sdist, str(tmp_path / "dist")],
        cwd=checkout,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    archive = tmp_path / "dist" / proc.stdout.strip().splitlines()[-1]
    with tarfile.open(archive) as tar:
        (stamp,) = [m for m in tar.getmembers() if m.name.endswith("/.lca-commit")]
        assert tar.extractfile(stamp).read().decode() == head + "\n"
        tar.extractall(tmp_path / "unpacked", filter="data")
    (unpacked,) = (tmp_path / "unpacked").iterdir()
    pip("wheel", "--no-deps", "--no-build-isolation", "-w", str(tmp_path / "wheel"), str(unpacked))
    (built,) = (tmp_path / "wheel").glob("llm_call_anatomy-*.whl")
    assert zipfile.ZipFile(built).read(f"{PACKAGE}/harness/.lca-commit").decode() == head + "\n"
