"""The package is laid out as its pipeline, and imports only run down it: no module imports (at the top, in
a function or for type checking) a module of a higher layer. docs/architecture.md has the same table, and
names every module in its layer's row."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from helpers.imports import imported_modules, module_names

LAYERS = [
    ["mjsweep.errors", "mjsweep.naming", "mjsweep.childproc", "mjsweep.svgplot"],  # errors, names, children, SVG
    ["mjsweep.sweepdir"],     # the sweep folder's on-disk contract
    ["mjsweep.spec"],         # the YAML spec, validated
    ["mjsweep.robots"],       # variants, edits, model files, envs
    ["mjsweep.plan"],         # runs, their order, what each invocation does
    ["mjsweep.worker"],       # one training, in its own process
    ["mjsweep.results"],      # reading results back, aggregation, statistics
    ["mjsweep.launchers"],    # starting workers: local, Ray, SLURM
    ["mjsweep.engine"],       # checks before launch, the lock, the scheduler
    ["mjsweep.search"],       # searches as a source of runs for the engine
    ["mjsweep.crosseval"],    # trained policies on other variants
    ["mjsweep.media"],        # pictures and videos drawn with MuJoCo
    # The package itself: its top level hands out the Python API's names (lazily), the version too.
    # The kinds of sweep beside the API: each prices its dry run with api/planning.py, and the API runs it.
    ["mjsweep", "mjsweep.api", "mjsweep.kinds"],  # the Python API: sweeps loaded, run and checked from Python
    ["mjsweep.bench"],        # sweep bench's measurements: this machine's scaling, peers, --stats' simulations
    ["mjsweep.ui"],           # the commands, the terminal, figures, reports (sweep bench's view too)
]


def layer_of(module: str) -> int:
    """The layer of the longest prefix of `module` that LAYERS names."""
    best = None
    for index, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and (best is None or len(prefix) > best[1]):
                best = (index, len(prefix))
    assert best is not None, f"{module} is in no layer: add it to LAYERS and to docs/architecture.md"
    return best[0]


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    return sorted(f"{m} -> {dep}" for m, deps in graph.items() for dep in deps if layer_of(dep) > layer_of(m))


def test_every_import_runs_down_the_layers():
    known = module_names()
    graph = {name: imported_modules(name, path, known) for name, path in known.items()}
    assert "mjsweep.sweepdir.files" in graph["mjsweep.engine.status_recorder"], "the import graph is read"
    assert upward_imports(graph) == []


def test_the_layer_check_sees_an_import_that_runs_up():
    graph = {"mjsweep.sweepdir.files": {"mjsweep.ui.cli"}, "mjsweep.ui.cli": {"mjsweep.sweepdir.files"}}
    assert upward_imports(graph) == ["mjsweep.sweepdir.files -> mjsweep.ui.cli"]


def test_the_bench_sits_below_the_ui():
    graph = {"mjsweep.bench.batches": {"mjsweep.ui.live"}, "mjsweep.ui.bench_view": {"mjsweep.bench.batches"}}
    assert upward_imports(graph) == ["mjsweep.bench.batches -> mjsweep.ui.live"]


def imports_the_lab(source: str) -> bool:
    """Whether the source imports benchmarks/, the lab at the checkout's root."""
    for node in ast.walk(ast.parse(source)):
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
            [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
        if any(name == "benchmarks" or name.startswith("benchmarks.") for name in names):
            return True
    return False


def test_the_package_never_imports_the_lab():
    # benchmarks/ is not installed: an import of it works in a checkout and fails wherever mjsweep is installed.
    assert imports_the_lab("def f():\n    from benchmarks.ceiling import ceiling\n")
    assert not imports_the_lab("from .bench import decisions\nimport mjsweep.bench\n")
    assert [name for name, path in module_names().items() if imports_the_lab(path.read_text(encoding="utf-8"))] == []


def test_the_wheel_leaves_the_lab_out():
    # What setuptools packages, found as pyproject tells it to: mjsweep's packages, and not benchmarks/.
    import tomllib

    from setuptools import find_packages

    root = Path(__file__).resolve().parents[1]
    setuptools_table = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    find = setuptools_table["packages"]["find"]
    packages = {p for where in find["where"] for p in find_packages(where=root / where)}
    assert "mjsweep.bench" in packages and all(p == "mjsweep" or p.startswith("mjsweep.") for p in packages)


def test_every_module_has_a_layer():
    for name in module_names():
        layer_of(name)


ARCHITECTURE = Path(__file__).resolve().parents[1] / "docs" / "architecture.md"


def architecture_rows() -> dict[int, tuple[list[str], str]]:
    """docs/architecture.md's layer table: layer -> (the packages it names, the text of the row)."""
    rows = {}
    for line in ARCHITECTURE.read_text(encoding="utf-8").splitlines():
        if match := re.match(r"\| (\d+) \| ([^|]+) \| (.+) \|$", line):
            names = re.findall(r"`([\w.]+)/?`", match.group(2))
            rows[int(match.group(1))] = (["mjsweep." + n.removesuffix(".py") for n in names], match.group(3))
    return rows


def test_the_architecture_table_has_the_layers_and_names_every_module():
    rows = architecture_rows()
    assert sorted(rows) == list(range(len(LAYERS)))
    for index, prefixes in enumerate(LAYERS):
        assert rows[index][0] == [p for p in prefixes if p != "mjsweep"], f"layer {index}"
    missing = []
    for name, path in module_names().items():
        if path.name == "__init__.py" or name.count(".") < 2 and layer_of(name) == 0:
            continue
        package, text = name.split(".")[1], rows[layer_of(name)][1]
        if path.name not in text and f"{package}/{path.name}" not in text:
            missing.append(name)
    assert missing == []
