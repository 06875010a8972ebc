"""One-way layers: import-linter checks the contract in pyproject.toml (the layers of
docs/architecture.md), and a check of this file's own, with no dependency, finds any import
circle among netfl's modules (an import inside a function counts; one under ``if
TYPE_CHECKING:`` does not)."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def package_modules(folder: Path, package: str) -> dict[str, tuple[Path, bool]]:
    """Every module of the package in ``folder``: dotted name -> (file, whether a package)."""
    modules = {}
    for path in sorted(folder.rglob("*.py")):
        parts = path.relative_to(folder).with_suffix("").parts
        is_package = parts[-1] == "__init__"
        modules[".".join((package, *(parts[:-1] if is_package else parts)))] = (path, is_package)
    return modules


def _type_checking(test: ast.expr) -> bool:
    return ((isinstance(test, ast.Name) and test.id == "TYPE_CHECKING")
            or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"))


def _runtime_imports(node: ast.AST):
    """The Import and ImportFrom nodes under ``node`` at any depth (functions included), less
    the bodies of ``if TYPE_CHECKING:``."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.If) and _type_checking(child.test):
            for other in child.orelse:
                yield from _runtime_imports(ast.Module(body=[other], type_ignores=[]))
            continue
        if isinstance(child, ast.Import | ast.ImportFrom):
            yield child
        yield from _runtime_imports(child)


def _known(name: str, modules) -> str | None:
    """The module ``name`` is, or the innermost module of the package that holds it."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def import_graph(folder: Path, package: str) -> dict[str, set[str]]:
    """Module -> the package's modules it imports (grimp's convention: ``from a import b``
    imports the module a.b where there is one, else a; an implicit parent package is not an
    edge)."""
    modules = package_modules(folder, package)
    graph: dict[str, set[str]] = {}
    for name, (path, is_package) in modules.items():
        targets = set()
        for node in _runtime_imports(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets.update(_known(alias.name, modules) for alias in node.names)
                continue
            base = node.module or ""
            if node.level:
                here = name.split(".") if is_package else name.split(".")[:-1]
                here = here[:len(here) - node.level + 1]
                base = ".".join([*here, base] if base else here)
            for alias in node.names:
                full = f"{base}.{alias.name}"
                targets.add(full if full in modules else _known(base, modules))
        graph[name] = {t for t in targets if t is not None and t != name}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import circle as its modules (the first repeated at the end), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    for start in sorted(graph):
        if state.get(start):
            continue
        path, stack = [start], [iter(sorted(graph[start]))]
        state[start] = 1
        while stack:
            following = next(stack[-1], None)
            if following is None:
                state[path.pop()] = 2
                stack.pop()
            elif state.get(following) == 1:
                return path[path.index(following):] + [following]
            elif not state.get(following):
                state[following] = 1
                path.append(following)
                stack.append(iter(sorted(graph.get(following, ()))))
    return None


def test_netfl_has_no_import_circle():
    cycle = find_cycle(import_graph(ROOT / "netfl", "netfl"))
    assert cycle is None, "import circle: " + " -> ".join(cycle)


def test_the_circle_check_finds_a_circle_and_skips_type_only_imports(tmp_path):
    folder = tmp_path / "pkg"
    files = {
        "__init__.py": "",
        "a.py": "from pkg.b import thing\n",
        "b.py": "def thing():\n    from . import c\n",  # inside a function: it counts
        "c.py": "import typing\nif typing.TYPE_CHECKING:\n    from pkg.a import x\n",
        "sub/__init__.py": "from .d import y\n",
        "sub/d.py": "from .. import a\ny = 1\n",
    }
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(textwrap.dedent(text))
    graph = import_graph(folder, "pkg")
    assert graph == {"pkg": set(), "pkg.a": {"pkg.b"}, "pkg.b": {"pkg.c"}, "pkg.c": set(),
                     "pkg.sub": {"pkg.sub.d"}, "pkg.sub.d": {"pkg.a"}}
    assert find_cycle(graph) is None
    (folder / "c.py").write_text("def later():\n    from pkg.a import x\n")
    assert find_cycle(import_graph(folder, "pkg")) == ["pkg.a", "pkg.b", "pkg.c", "pkg.a"]


def test_lint_imports_keeps_the_layer_contract():
    """The contract in pyproject.toml ([tool.importlinter]); import-linter is in the dev
    extra, which the README's test command installs."""
    here = Path(sys.executable).parent / "lint-imports"
    command = str(here) if here.exists() else shutil.which("lint-imports")
    if command is None:
        pytest.skip("lint-imports is not installed (pip install -e '.[dev]' installs it)")
    result = subprocess.run([command, "--no-cache", "--no-logo"], cwd=ROOT, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, (result.stdout + result.stderr)[-6000:]
