"""What `pip install` and the Docker images get: everything under the one name `c4forge`, the
console scripts, the package data - built from exactly the files each Dockerfile copies."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCKERFILES = sorted((ROOT / "docker").glob("*/Dockerfile"))


def copied_paths(dockerfile: Path) -> list[str]:
    """The sources of the Dockerfile's COPY lines (relative to the build context, the repo)."""
    paths = []
    for line in dockerfile.read_text(encoding="utf-8").splitlines():
        match = re.match(r"^COPY\s+(?!--from)(.+)$", line.strip())
        if match:
            paths += match.group(1).split()[:-1]
    return paths


def build_wheel(context: Path, out: Path) -> Path:
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                    "-q", "-w", str(out), str(context)], check=True, capture_output=True,
                    timeout=300)
    return next(out.glob("c4forge-*.whl"))


@pytest.mark.slow
@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=lambda p: p.parent.name)
def test_wheel_from_the_dockerfile_copies_has_the_cli_and_only_c4forge(dockerfile, tmp_path):
    context = tmp_path / "context"
    context.mkdir()
    for source in copied_paths(dockerfile):
        target = context / source
        if (ROOT / source).is_dir():
            shutil.copytree(ROOT / source, target, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy(ROOT / source, target)
    assert "c4forge" in copied_paths(dockerfile), f"{dockerfile} does not copy the c4forge package"
    wheel = build_wheel(context, tmp_path / "dist")
    names = zipfile.ZipFile(wheel).namelist()
    top = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert top == {"c4forge"}, top
    for needed in ("c4forge/cli/corpus.py", "c4forge/corpus/rules/clean.py", "c4forge/pipelines/c4.py",
                   "c4forge/tokenizer/formats.py", "c4forge/train/trainer.py",
                   "c4forge/corpus/data/sample.warc.wet.gz", "c4forge/corpus/data/demo-badwords/en",
                   "c4forge/core/schemas/corpus-manifest.schema.json"):
        assert needed in names, needed
    entry_points = zipfile.ZipFile(wheel).read(
        next(n for n in names if n.endswith("entry_points.txt"))).decode()
    scripts = dict(re.findall(r"^(\w+) = (\S+)$", entry_points, flags=re.M))
    assert set(scripts) >= {"corpus", "tokenizer", "train"}
    # Each console script from the installed wheel alone (not the checkout) answers --help.
    site = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target",
                    str(site), str(wheel)], check=True, capture_output=True, timeout=300)
    env = dict(os.environ, PYTHONPATH=str(site))
    for name, target in scripts.items():
        module, _, function = target.partition(":")
        code = f"import {module} as m, c4forge; assert c4forge.__file__.startswith({str(site)!r}); m.{function}(['--help'])"
        proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0 and "Usage:" in proc.stdout, (name, proc.stderr[-500:])


def test_the_base_install_is_the_corpus_job_and_each_other_job_has_an_extra():
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    base = {re.split(r"[<>=\[; ]", d)[0].lower() for d in project["dependencies"]}
    assert not base & {"torch", "matplotlib", "sentencepiece", "tokenizers", "safetensors", "tensorboard",
                       "apache-beam"}
    extras = project["optional-dependencies"]
    assert {"corpus", "beam", "tokenizer", "train", "gcp", "aws", "all", "hf", "test-hf"} <= set(extras)
    assert "beam" in _extras("gcp", extras) and "beam" in _extras("aws", extras)
    # training alone pulls no Beam; the one environment of everything current (.venv-hf) holds it
    assert "beam" not in _extras("train,hf", extras) and {"beam", "train", "hf"} <= _extras("test-hf", extras)
    assert any(d.startswith("sentencepiece") for d in extras["tokenizer"])
    assert any(d.startswith("torch") for d in extras["train"]) and "c4forge[tokenizer]" in extras["train"]


def test_building_the_wheel_warns_of_nothing_and_ships_the_engine_locks(tmp_path):
    """Regression: every install printed setuptools' 40-line "Package would be ignored" block
    for the folder of engine locks (data files in a folder Python can import)."""
    source = tmp_path / "source"  # a copy: an in-tree build writes build/ and *.egg-info
    source.mkdir()
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy(ROOT / name, source / name)
    for name in ("c4forge", "corpus", "pipelines", "tokenizer", "train"):
        shutil.copytree(ROOT / name, source / name, ignore=shutil.ignore_patterns("__pycache__"))
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-v",
                           "-w", str(tmp_path / "dist"), str(source)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    output = proc.stdout + proc.stderr
    assert "would be ignored" not in output and "absent from the `packages`" not in output
    names = zipfile.ZipFile(next((tmp_path / "dist").glob("c4forge-*.whl"))).namelist()
    assert {f"c4forge/pipelines/engines/jvm/locks/{n}.json" for n in
            ("flink-1.19-cluster", "flink-1.19-job-server", "spark-3-job-server", "spark-3.5-cluster")} <= set(names)


def _extras(spec: str, extras: dict) -> set:
    """The extras ``spec`` (e.g. "train,hf") brings, following c4forge[...] references."""
    seen, todo = set(), [e.strip() for e in spec.split(",")]
    while todo:
        extra = todo.pop()
        if extra not in seen:
            seen.add(extra)
            for dep in extras.get(extra, []):
                if match := re.match(r"c4forge\[([^\]]+)\]", dep):
                    todo += [e.strip() for e in match.group(1).split(",")]
    return seen


def test_the_training_image_has_no_beam_and_the_dataflow_image_has_the_pinned_one():
    """docker/train installs [train,hf] (no Beam: current numpy, pyarrow, transformers 5 beside
    it); docker/dataflow installs [gcp], which brings [beam], on a Beam SDK base image of the
    release the engines are tested on (the [dev] pin), and keeps that release (a worker's SDK
    must be the client's)."""
    import tomllib

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    installed = {}
    for dockerfile in DOCKERFILES:
        found = re.findall(r'pip install "\.\[([^\]]+)\]"', dockerfile.read_text(encoding="utf-8"))
        assert len(found) == 1, dockerfile
        installed[dockerfile.parent.name] = _extras(found[0], extras)
    assert "beam" not in installed["train"] and {"train", "hf"} <= installed["train"]
    assert "beam" in installed["dataflow"] and "train" not in installed["dataflow"]
    pinned = re.search(r"apache-beam==([\d.]+)", " ".join(extras["dev"])).group(1)
    dataflow = (ROOT / "docker/dataflow/Dockerfile").read_text()
    base = re.search(r"^ARG BEAM_VERSION=([\d.]+)$", dataflow, re.M).group(1)
    assert base == pinned and '"apache-beam[gcp]==${BEAM_VERSION}"' in dataflow
    low, high = re.search(r"apache-beam>=([\d.]+),<([\d.]+)", " ".join(extras["beam"])).groups()
    assert _release(low) <= _release(pinned) < _release(high)


def _release(version: str) -> tuple:
    return tuple(int(part) for part in version.split("."))


def test_the_portable_pool_stages_the_projects_own_setup_file():
    """Regression: when worker_pool moved into pipelines/engines/, its setup.py path pointed at
    pipelines/setup.py (absent), and every portable build failed inside Beam's stager."""
    from c4forge.pipelines.engines.workers.worker_pool import SETUP_FILE
    assert os.path.samefile(SETUP_FILE, ROOT / "setup.py")


def test_the_extras_that_run_the_managed_engines_pin_the_release_of_their_jars():
    """Regression: [bench] took [beam]'s newest release (2.77), whose job-server jars do not
    resolve here, so `make bench`'s flink-local rows refused to start; [dev] and [bench] run the
    managed engines and pin the Beam release the job-server locks are of."""
    import tomllib

    from c4forge.pipelines.engines.jvm.jars import load_lock
    from c4forge.pipelines.engines.runners import JOB_SERVER_LOCKS

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    locked = {load_lock(name).beam for name in JOB_SERVER_LOCKS.values()}
    assert len(locked) == 1
    for extra in ("dev", "bench"):
        pins = re.findall(r"apache-beam==([\d.]+)", " ".join(extras[extra]))
        assert pins == list(locked), extra


def test_the_dockerfiles_python_lines_import_what_exists():
    """Every `python -c "..."` and `python -m ...` of the Dockerfiles names modules and names that
    exist (a module moved without its Dockerfile line fails here, not in an image build)."""
    import importlib.util

    found = 0
    for dockerfile in sorted((ROOT / "docker").glob("*/Dockerfile")):
        text = dockerfile.read_text(encoding="utf-8")
        for code in re.findall(r'python -c "([^"]+)"', text):
            for module, names in re.findall(r"from ([\w.]+) import ([\w, ]+)", code):
                loaded = importlib.import_module(module)
                for name in (n.strip() for n in names.split(",")):
                    assert hasattr(loaded, name) or importlib.util.find_spec(f"{module}.{name}"), \
                        f"{dockerfile.relative_to(ROOT)}: {module} has no {name}"
                found += 1
        for module in re.findall(r"python -m ([\w.]+)", text):
            if module.startswith("c4forge"):
                assert importlib.util.find_spec(module), f"{dockerfile.relative_to(ROOT)}: no module {module}"
                found += 1
    assert found >= 3
