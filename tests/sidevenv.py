"""Side environments for the tools apache-beam 2.62 cannot share a venv with.

HF ``datasets`` and ``lm-eval`` need a newer ``dill`` (through ``multiprocess``) than apache-beam
2.62 allows, and transformers 5 needs protobuf >= 7, which apache-beam forbids. The tests that run
them do so in a venv made once under .cache/: for datasets and lm-eval one that sees the
project's venv behind its own packages (a ``.pth`` adds the project's site-packages last), so
torch, transformers and c4forge are not installed twice; only what conflicts is shadowed.
"""
from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
HF_VENV = ROOT / ".cache" / "venv-hf"
HF_PACKAGES = ("datasets>=3,<5", "lm-eval[hf]>=0.4.13,<0.5")


def hf_python() -> str:
    """The side venv's python with datasets and lm-eval (made once; skips where it cannot be)."""
    python = HF_VENV / "bin" / "python"
    ready = HF_VENV / ".installed"
    if ready.exists():
        return str(python)
    HF_VENV.parent.mkdir(parents=True, exist_ok=True)
    with open(HF_VENV.parent / "venv-hf.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # test processes running in parallel make it once
        if ready.exists():
            return str(python)
        return _make(python, ready)


def _make(python: Path, ready: Path) -> str:
    made = subprocess.run([sys.executable, "-m", "venv", str(HF_VENV)], capture_output=True, text=True)
    if made.returncode:
        pytest.skip(f"could not make {HF_VENV.relative_to(ROOT)}: {made.stderr[-300:]}")
    side = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    main = sysconfig.get_paths()["purelib"]
    Path(side, "c4forge-project-venv.pth").write_text(f"import site; site.addsitedir({main!r})\n")
    install = subprocess.run([str(python), "-m", "pip", "install", "-q", *HF_PACKAGES],
                             capture_output=True, text=True, timeout=1200)
    if install.returncode:
        pytest.skip(f"could not install {', '.join(HF_PACKAGES)} into {HF_VENV.relative_to(ROOT)} "
                    f"(no package index?): {install.stderr[-300:]}")
    ready.write_text("ok\n")
    return str(python)


def run_json(python: str, script: str, *args: str, timeout: int = 900) -> dict:
    """Run ``script`` (a file under tests/) with ``python``; the JSON on its last stdout line."""
    env = dict(os.environ, TOKENIZERS_PARALLELISM="false", HF_DATASETS_OFFLINE="1", HF_HUB_OFFLINE="1")
    result = subprocess.run([python, str(ROOT / "tests" / script), *args], capture_output=True,
                            text=True, timeout=timeout, env=env, cwd=str(ROOT))
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])
