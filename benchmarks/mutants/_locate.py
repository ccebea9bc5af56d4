"""Where a mutant applies: the definition its qualified name addresses.

A mutant names the function, method or class it changes (``"consensus"``,
``"TreeChannel._round"``), not a file: the runner finds the one definition of
the package with that name, wherever it now lives, and applies the mutation
inside it. Moving a function to another module, or splitting a module, keeps
its mutants valid; renaming the function or moving the mutated line out of it
does not, and ``tests/test_project.py`` says which mutant to update.

A name is matched against the end of each definition's full dotted name
(``skfedida.federated._trees.TreeChannel._round``), so a mutant may add a
module (``"_trees.fit"``) when a bare name is not unique. Module-level
assignments (``RANGE_FACTOR = 4``) are definitions too; a function nested in
another is named through it (``"client_app.handle_fit"``).
"""

import ast
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "skfedida"


@dataclass(frozen=True)
class Definition:
    #: The full dotted name: module, then the names enclosing it.
    name: str
    #: The file, from the project root.
    path: str
    #: Character offsets of its text in the file, from its head (decorators
    #: excluded) to the end of its last line.
    start: int
    end: int


def _line_starts(source):
    starts = [0]
    for line in source.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    return starts


def _python_definitions(source, module, path):
    starts = _line_starts(source)
    found = []

    def visit(body, prefix):
        for node in body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                name = f"{prefix}.{node.name}"
                start = starts[node.lineno - 1] + node.col_offset
                # To the end of its last line, the line break included.
                end = starts[node.end_lineno]
                found.append(Definition(name, path, start, end))
                visit(node.body, name)
            elif prefix == module and isinstance(node, ast.Assign | ast.AnnAssign):
                targets = (
                    node.targets if isinstance(node, ast.Assign) else [node.target]
                )
                start = starts[node.lineno - 1] + node.col_offset
                end = starts[node.end_lineno]
                for target in targets:
                    if isinstance(target, ast.Name):
                        found.append(
                            Definition(f"{prefix}.{target.id}", path, start, end)
                        )
            elif hasattr(node, "body") and not isinstance(node, ast.ClassDef):
                # if/try/with blocks at any level hold definitions of the
                # enclosing scope.
                for block in ("body", "orelse", "finalbody", "handlers"):
                    visit(getattr(node, block, []) or [], prefix)

    visit(ast.parse(source).body, module)
    return found


_CYTHON_HEAD = re.compile(
    r"^(?P<indent>[ ]*)(?:cdef\s+class\s+(?P<cls>\w+)|class\s+(?P<pycls>\w+)"
    r"|(?:cpdef|cdef|def)\s[^=(\n]*?(?P<fn>\w+)\s*\()",
    re.M,
)


def _cython_definitions(source, module, path):
    # Cython has no parser in the standard library: a definition runs from
    # its head to the next line indented no deeper (a signature's closing
    # parenthesis excepted).
    found = []
    enclosing = []  # (indent, name)
    lines = source.splitlines(keepends=True)
    starts = _line_starts(source)
    for match in _CYTHON_HEAD.finditer(source):
        indent = len(match["indent"])
        while enclosing and enclosing[-1][0] >= indent:
            enclosing.pop()
        prefix = enclosing[-1][1] if enclosing else module
        name = f"{prefix}.{match['cls'] or match['pycls'] or match['fn']}"
        first = source.count("\n", 0, match.start())
        last = first
        for number in range(first + 1, len(lines)):
            text = lines[number]
            if not text.strip() or text.lstrip().startswith(")"):
                continue
            if len(text) - len(text.lstrip(" ")) <= indent:
                break
            last = number
        found.append(Definition(name, path, match.start(), starts[last + 1]))
        enclosing.append((indent, name))
    return found


@lru_cache
def definitions(root=ROOT):
    """Every definition of the package under ``root``."""
    root = Path(root)
    found = []
    for file in sorted((root / PACKAGE).rglob("*.py*")):
        if file.suffix not in (".py", ".pyx"):
            continue
        path = file.relative_to(root).as_posix()
        module = path.rsplit(".", 1)[0].replace("/", ".").removesuffix(".__init__")
        source = file.read_text(encoding="utf-8")
        read = _python_definitions if file.suffix == ".py" else _cython_definitions
        found += read(source, module, path)
    return tuple(found)


def candidates(where, root=ROOT):
    """The definitions whose full dotted name ends with ``where``."""
    return [
        definition
        for definition in definitions(root)
        if definition.name == where or definition.name.endswith("." + where)
    ]


def locate(where, root=ROOT):
    """The one definition ``where`` names; ``LookupError`` if not exactly one."""
    found = candidates(where, root)
    if len(found) != 1:
        named = ", ".join(definition.name for definition in found) or "none"
        raise LookupError(f"{where!r} names {len(found)} definitions: {named}")
    return found[0]


def apply(mutant, root):
    """The file the mutant changes, from ``root``, and its mutated text.

    ``LookupError`` when the mutant's definition is not found once under
    ``root`` or its original text is not found once inside it.
    """
    definition = locate(mutant.where, root)
    source = (Path(root) / definition.path).read_text(encoding="utf-8")
    inside = source[definition.start : definition.end]
    if inside.count(mutant.original) != 1:
        raise LookupError(
            f"the original text is found {inside.count(mutant.original)} "
            f"times in {definition.name}, not once"
        )
    mutated = inside.replace(mutant.original, mutant.mutated)
    return definition.path, (
        source[: definition.start] + mutated + source[definition.end :]
    )
