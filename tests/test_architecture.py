"""The floors of the house (docs/architecture.md), checked from the code's own imports.

Every import statement in the installed package - at module level or inside a function - is an
edge of the graph: a lazy import is still a dependency a reader must follow. The rules:

- ``c4forge.core`` (the shared floor) imports no stage;
- ``corpus`` imports only the floor (never Beam, tokenizer or train);
- ``tokenizer`` sits on ``corpus``; ``pipelines`` (Beam wiring) on ``corpus`` and ``tokenizer``
  (``tokenizer encode --runner``); ``train`` reads token shards through
  ``tokenizer`` and never sees ``corpus``, ``pipelines`` or the ablation;
- the ablation composes the stages; the CLIs compose everything; nothing imports the CLIs;
- no module imports, directly or through others, a module that imports it back.
"""
from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# Installed name -> folder in the repository (pyproject's package-dir).
PACKAGES = {"c4forge.core": "c4forge/core", "c4forge.cli": "c4forge/cli",
            "c4forge.ablation": "c4forge/ablation", "c4forge.corpus": "corpus",
            "c4forge.pipelines": "pipelines", "c4forge.tokenizer": "tokenizer",
            "c4forge.train": "train"}
FLOOR = {"c4forge.core": set(),
         "c4forge.corpus": {"c4forge.core"},
         # Beam wiring of the corpus stage and of the token stage (pipelines/encode.py)
         "c4forge.pipelines": {"c4forge.core", "c4forge.corpus", "c4forge.tokenizer"},
         "c4forge.tokenizer": {"c4forge.core", "c4forge.corpus"},
         "c4forge.train": {"c4forge.core", "c4forge.tokenizer"},
         "c4forge.ablation": {"c4forge.core", "c4forge.corpus", "c4forge.tokenizer",
                              "c4forge.train"},
         "c4forge.cli": set(PACKAGES)}


def modules() -> dict[str, Path]:
    found = {}
    for package, folder in PACKAGES.items():
        for path in (ROOT / folder).rglob("*.py"):
            parts = path.relative_to(ROOT / folder).with_suffix("").parts
            name = ".".join((package, *parts))
            found[name.removesuffix(".__init__")] = path
    return found


def imports_of(path: Path, name: str) -> set[str]:
    """Absolute module names ``path`` imports (relative imports resolved)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            out.add(base)
            out |= {f"{base}.{alias.name}" for alias in node.names}
    return out


def graph() -> dict[str, set[str]]:
    mods = modules()
    return {name: {m for m in imports_of(path, name) if m in mods and m != name}
            for name, path in mods.items()}


def package_of(module: str) -> str:
    return max((p for p in PACKAGES if module == p or module.startswith(p + ".")), key=len)


def test_every_package_imports_only_the_floors_below_it():
    bad = []
    for module, targets in graph().items():
        own = package_of(module)
        for target in targets:
            other = package_of(target)
            if other != own and other not in FLOOR[own]:
                bad.append(f"{module} imports {target}")
    assert not bad, "\n".join(sorted(bad))


def test_no_stage_imports_beam_or_click_except_pipelines_and_the_cli():
    bad = []
    for module, path in modules().items():
        external = {m.split(".")[0] for m in imports_of(path, module)}
        own = package_of(module)
        if "apache_beam" in external and own != "c4forge.pipelines":
            bad.append(f"{module} imports apache_beam")
        if "click" in external and own != "c4forge.cli":
            bad.append(f"{module} imports click")
    assert not bad, "\n".join(bad)


def test_no_import_cycles():
    edges = graph()
    state: dict[str, int] = {}
    cycles = []

    def visit(node, stack):
        state[node] = 1
        stack.append(node)
        for nxt in sorted(edges[node]):
            if state.get(nxt) == 1:
                cycles.append(" -> ".join(stack[stack.index(nxt):] + [nxt]))
            elif nxt not in state:
                visit(nxt, stack)
        stack.pop()
        state[node] = 2

    for node in sorted(edges):
        if node not in state:
            visit(node, [])
    assert not cycles, "\n".join(cycles)


def test_no_top_level_stage_names_are_imported():
    """Everything installs under c4forge; a bare ``import corpus`` would only work in a checkout."""
    bad = []
    for path in [*ROOT.glob("tests/*.py"), *ROOT.glob("benchmarks/*.py"), *ROOT.glob("scripts/*.py"),
                 *modules().values()]:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module] if isinstance(node, ast.ImportFrom) and node.module and not node.level
                     else [])
            bad += [f"{path.relative_to(ROOT)}: {n}" for n in names
                    if n.split(".")[0] in ("corpus", "pipelines", "tokenizer", "train")]
    assert not bad, "\n".join(bad)


def test_train_config_loads_no_corpus_module():
    assert _loaded_by("c4forge.train.config", ("c4forge.corpus", "c4forge.pipelines", "apache_beam")) == []


MAX_FUNCTION_LINES = 60
MAX_LAZY_IMPORTS = 10


def _functions_and_lazy_imports():
    """(function, lines) for every function of the package, every import of the project's own
    modules made inside a function, and every other in-function import (third-party and the
    standard library), each with its source lines."""
    functions, lazy, other = [], [], []
    for path in modules().values():
        text = path.read_text(encoding="utf-8")
        lines = text.splitlines()
        for node in ast.walk(ast.parse(text)):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            functions.append((f"{path.relative_to(ROOT)}:{node.lineno} {node.name}",
                              node.end_lineno - node.lineno + 1))
            for sub in ast.walk(node):
                if isinstance(sub, ast.Import):
                    own = any(a.name.startswith("c4forge") for a in sub.names)
                elif isinstance(sub, ast.ImportFrom):
                    own = bool(sub.level) or (sub.module or "").startswith("c4forge")
                else:
                    continue
                found = (f"{path.relative_to(ROOT)}:{sub.lineno}", "\n".join(lines[sub.lineno - 1:sub.end_lineno]))
                (lazy if own else other).append(found)
    return functions, sorted(set(lazy)), sorted(set(other))


def test_no_product_function_is_longer_than_a_screen():
    """Functions of the installed package fit in 60 lines: longer ones are split into named
    steps (docs/architecture.md, "Style")."""
    functions, _, _ = _functions_and_lazy_imports()
    long = [f"{where} ({n} lines)" for where, n in functions if n > MAX_FUNCTION_LINES]
    assert not long, "\n".join(long)


def test_lazy_imports_of_our_own_modules_are_few_and_say_why():
    """An import inside a function hides a dependency from the reader: at most ten, each with a
    ``# lazy:`` comment saying what it spares (an extra's package, start-up time)."""
    _, lazy, _ = _functions_and_lazy_imports()
    unexplained = [where for where, source in lazy if "# lazy:" not in source]
    assert not unexplained, "in-function imports without a '# lazy:' reason:\n" + "\n".join(unexplained)
    assert len(lazy) <= MAX_LAZY_IMPORTS, "\n".join(where for where, _ in lazy)


def test_other_imports_sit_at_the_top_unless_a_reason_is_written_beside_them():
    """A third-party (or standard-library) import inside a function hides a dependency too: it
    belongs at the top of the module unless a ``# lazy:`` comment beside it says what loading
    it there would cost (an optional extra, start-up time, a process that must stay free of it)."""
    _, _, other = _functions_and_lazy_imports()
    unexplained = [f"{where}: {source.strip()}" for where, source in other if "# lazy:" not in source]
    assert not unexplained, "in-function imports without a '# lazy:' reason:\n" + "\n".join(unexplained)


STEPS = "c4forge.corpus.steps"
# each corpus-wide step's two twins, under one name in the three rooms (corpus/steps/ declares the
# step, corpus/dedup/ is its one-process twin, pipelines/twins/ its Beam twin's DoFns: pipelines/c4.py CORPUS_WIDE)
TWIN_NAMES = ("url_dedup", "exact_dedup", "line_dedup", "near_dedup")
TWINS = {f"c4forge.{room}.{name}" for room in ("corpus.dedup", "pipelines.twins") for name in TWIN_NAMES}


def test_a_step_module_imports_nothing_from_other_steps():
    """A step is one module (corpus/chain/step.py): its settings, what it loads, its function. What
    two steps share lives outside corpus/steps/ (corpus/rules/quality.py, words.py, ...)."""
    bad = [f"{module} imports {target}" for module, targets in graph().items()
           if module.startswith(STEPS + ".") for target in targets
           if target.startswith(STEPS) and not module.startswith(target)]
    assert not bad, "\n".join(sorted(bad))


def test_the_registry_holds_every_step_module_and_no_other():
    from c4forge.corpus.steps import MODULES, REGISTRY

    files = {path.stem for path in (ROOT / "corpus" / "steps").glob("*.py") if path.stem != "__init__"}
    assert {module.__name__.rsplit(".", 1)[1] for module in MODULES} == files
    assert len(REGISTRY) == len(MODULES)


def test_no_twin_reads_another_twins_state():
    """A twin imports no other step's twin (its own other half aside: the Beam twin uses its
    one-process twin's pieces), and what it is handed is the page handle and its own segment
    (the step and the page steps after it): the fusions between steps are decided by the
    planning pass in pipelines/c4.py, never by a twin looking at its neighbours."""
    from c4forge.corpus.chain.chains import Segment
    from c4forge.pipelines.pages import Fusion

    edges = graph()
    bad = []
    for twin in TWINS:
        own = twin.rsplit(".", 1)[1]
        bad += [f"{twin} imports {target}" for target in edges[twin]
                if target in TWINS and target.rsplit(".", 1)[1] != own]
    assert not bad, "\n".join(sorted(bad))
    assert Segment._fields == ("step", "after")
    for twin in TWINS:
        source = modules()[twin].read_text(encoding="utf-8")
        assert "next_wide" not in source and "job.parking" not in source, twin
    assert "c4forge.pipelines.c4" in {m for m, targets in edges.items() if "c4forge.pipelines.pages" in targets}
    assert {field.name for field in __import__("dataclasses").fields(Fusion)} == {"fused", "store"}


def _applied_transforms(path: Path) -> list[tuple[str, int]]:
    """Where ``path`` applies a Beam transform (``pcoll | "label" >> beam.X(...)`` or
    ``pcoll | beam.X(...)``), as (the enclosing class, or "" at module level, line)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    owner = {}
    for cls in (node for node in ast.walk(tree) if isinstance(node, ast.ClassDef)):
        owner.update({id(node): cls.name for node in ast.walk(cls)})

    def is_beam_call(node) -> bool:
        return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "beam")

    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr) and (
                is_beam_call(node.right) or (isinstance(node.right, ast.BinOp)
                                             and isinstance(node.right.op, ast.RShift))):
            found.append((owner.get(id(node), ""), node.lineno))
    return found


def test_the_builds_transforms_are_applied_in_one_module():
    """Issue 82: the corpus build's graph reads in order in pipelines/c4.py, as tfds' c4.py does.
    Every transform it applies is applied there; the twins (pipelines/twins/) and the shard
    writer hold DoFns and element functions only, and the page handle (pipelines/pages.py)
    applies only its own conversions between forms, inside ``Pages``. pipelines/encode.py is the
    token stage's graph, of its own."""
    mods = modules()
    applied = {name: _applied_transforms(path) for name, path in mods.items()
               if name.startswith("c4forge.pipelines") and not name.startswith("c4forge.pipelines.engines")}
    assert len(applied["c4forge.pipelines.c4"]) >= 25
    elsewhere = [f"{name}:{line}" for name, found in applied.items()
                 if name not in ("c4forge.pipelines.c4", "c4forge.pipelines.pages", "c4forge.pipelines.encode")
                 for _owner, line in found]
    assert not elsewhere, "transforms applied outside pipelines/c4.py:\n" + "\n".join(elsewhere)
    assert applied["c4forge.pipelines.pages"] and {owner for owner, _ in applied["c4forge.pipelines.pages"]} == {"Pages"}


def _renames(path: Path) -> list[str]:
    """Calls that rename files in ``path``: os.replace/os.rename/shutil.move, and any other
    ``.rename(...)`` unless handed to c4forge.core as an argument (a lambda: a store's rename,
    Beam's FileSystems, that c4forge.core.io.write_then_rename calls)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    in_lambda = {id(node) for lam in ast.walk(tree) if isinstance(lam, ast.Lambda) for node in ast.walk(lam)}
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        owner = node.func.value.id if isinstance(node.func.value, ast.Name) else ""
        if (owner in ("os", "shutil") and node.func.attr in ("replace", "rename", "renames", "move")) or \
                (node.func.attr == "rename" and id(node) not in in_lambda):
            found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    return found


def test_files_are_renamed_into_place_only_in_the_shared_floor():
    """Atomic writes have one mechanism (c4forge/core/io.py); every other module calls it."""
    bad = [where for name, path in modules().items() if not name.startswith("c4forge.core")
           for where in _renames(path)]
    assert not bad, "renames outside c4forge/core:\n" + "\n".join(bad)
    assert _renames(ROOT / "c4forge" / "core" / "io.py")  # the check sees a rename where there is one


def test_the_engines_process_management_is_one_package():
    """Everything that starts, forks or talks to the engines' processes lives in
    pipelines/engines/, which imports nothing of pipelines/ above it."""
    for name in ("worker_fork", "worker_fork_client", "worker_pool", "worker_boot", "sdk_harness", "job_service"):
        assert f"c4forge.pipelines.engines.workers.{name}" in modules()
        assert f"c4forge.pipelines.{name}" not in modules()
    for room, names in (("jvm", ("java", "jars", "class_sharing")), ("clusters", ("cluster", "flink", "spark", "processes"))):
        assert {f"c4forge.pipelines.engines.{room}.{name}" for name in names} <= set(modules())
    bad = [f"{module} imports {target}" for module, targets in graph().items()
           if module.startswith("c4forge.pipelines.engines") for target in targets
           if target.startswith("c4forge.pipelines") and not target.startswith("c4forge.pipelines.engines")]
    assert not bad, "\n".join(sorted(bad))
    assert "c4forge.corpus.estimate" in modules()  # it measures the corpus stage and uses no Beam


# The chain: what a step is and how steps run, the steps, the config that names them.
CHAIN = ("c4forge.corpus.chain", "c4forge.corpus.steps", "c4forge.corpus.config")
FORMATS = ("c4forge.corpus.output.shards", "c4forge.corpus.output.jsonl", "c4forge.tokenizer.formats")


def _loaded_by(module: str, prefixes: tuple[str, ...]) -> list[str]:
    code = (f"import sys, {module}; "
            f"print(sorted(m for m in sys.modules if m.startswith({prefixes!r})))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                         env=dict(os.environ, PYTHONPATH=str(ROOT)), timeout=120, check=True)
    return ast.literal_eval(out.stdout.strip())


def test_no_module_of_the_formats_imports_the_chain():
    """The corpus shard format and manifest, the JSONL output and the token shard format stand
    alone: a reader of a corpus (the tokenizer, another tool) loads no step and no chain."""
    for module in FORMATS:
        reached = _reachable(module)
        assert not [m for m in reached if m.startswith(CHAIN)], (module, sorted(m for m in reached if m.startswith(CHAIN)))
    assert _loaded_by("c4forge.corpus.output.shards", CHAIN) == []


def _reachable(module: str) -> set[str]:
    edges, seen, todo = graph(), set(), [module]
    while todo:
        node = todo.pop()
        if node not in seen:
            seen.add(node)
            todo.extend(edges.get(node, ()))
    return seen - {module}


def test_every_module_is_named_in_the_architecture_map():
    """docs/architecture.md names every module of the package by its path (the map rendered by
    `make docs` does; a module added without a docstring's first sentence there fails here)."""
    doc = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    missing = [str(path.relative_to(ROOT)) for path in modules().values()
               if path.name != "__init__.py" and f"`{path.relative_to(ROOT).as_posix()}`" not in doc]
    assert not missing, "not named in docs/architecture.md (run make docs):\n" + "\n".join(sorted(missing))
    folders = {path.parent.relative_to(ROOT).as_posix() for path in modules().values()}
    assert not [f for f in folders if f"`{f}/`" not in doc], "a folder missing from the map"
