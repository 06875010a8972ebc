"""netfl's own algorithms are built only from the public primitives of netfl.algorithms.base,
as a user's plug-in is (docs/extending.md): no module reaches for the context (``ctx.network``,
``ctx.fleet``, ``ctx.streams``, ...), the base's private members, or anything's private member
but its own."""

import ast
from pathlib import Path

import pytest

import netfl.algorithms
from netfl.algorithms.base import Algorithm

ALGORITHMS = Path(netfl.algorithms.__file__).parent
EXAMPLE = Path(__file__).parents[2] / "examples" / "netfl-example" / "netfl_example"
# the base itself, the primitives' own modules, its bookkeeping and the registry may use what
# the primitives are made of
INSIDE = {"__init__.py", "base.py", "moves.py", "rounds.py", "cohort.py", "primitive.py",
          "bookkeeping.py", "registry.py", "asynchrony.py"}
# the trainer's data layout is reached through data_sizes and label_counts
TRAINER_INTERNALS = {"client_sizes", "partition"}


def base_private_names() -> set[str]:
    """The private attributes and methods of Algorithm and its mixins (set in their methods
    or defined)."""
    names = {name for cls in Algorithm.__mro__ for name in vars(cls)
             if name.startswith("_") and not name.startswith("__")}
    trees = [ast.parse((ALGORITHMS / name).read_text())
             for name in ("base.py", "moves.py", "rounds.py", "asynchrony.py")]
    for node in (node for tree in trees for node in ast.walk(tree)):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                and node.value.id == "self" and node.attr.startswith("_")
                and not node.attr.startswith("__")):
            names.add(node.attr)
    return names


def reaches_past_primitives(source: str, private: set[str]) -> list[str]:
    """Every place in ``source`` that uses more than the primitives, as 'line: what'."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Attribute):
            continue
        owner = node.value.id if isinstance(node.value, ast.Name) else None
        where = f"{node.lineno}: {ast.unparse(node)}"
        if node.attr == "ctx":
            found.append(f"{where} (the context: use the primitives)")
        elif node.attr.startswith("_") and not node.attr.startswith("__"):
            if owner not in ("self", "cls"):
                found.append(f"{where} (another object's private member)")
            elif node.attr in private:
                found.append(f"{where} (the base's private member)")
        elif (node.attr in TRAINER_INTERNALS and isinstance(node.value, ast.Attribute)
              and node.value.attr == "trainer"):
            found.append(f"{where} (use data_sizes / label_counts)")
    return sorted(found, key=lambda line: int(line.split(":")[0]))


def algorithm_modules() -> list[Path]:
    mine = [p for p in sorted(ALGORITHMS.glob("*.py")) if p.name not in INSIDE]
    return mine + sorted(EXAMPLE.glob("*.py"))


@pytest.mark.parametrize("path", algorithm_modules(), ids=lambda p: p.name)
def test_algorithm_modules_use_only_the_primitives(path):
    assert reaches_past_primitives(path.read_text(), base_private_names()) == []


def test_the_check_finds_each_way_past_the_primitives():
    source = (
        "class A(Algorithm):\n"
        "    def run(self):\n"
        "        self.ctx.network.route('a', 'b')\n"
        "        self.ctx.streams.get('sampling')\n"
        "        yield from self._network.transfer('s', 'c', 1)\n"
        "        self.trainer._threads\n"
        "        self.trainer.client_sizes[0]\n"
        "        self._mine = 1\n")
    found = reaches_past_primitives(source, base_private_names())
    assert [line.split(":")[0] for line in found] == ["3", "4", "5", "6", "7"]
