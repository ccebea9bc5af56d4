"""The project's own promises: README commands, CI, the API reference."""

import importlib
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODULES = [
    "skfedida.metrics",
    "skfedida.datasets",
    "skfedida.over_sampling",
    "skfedida.penalty",
    "skfedida.linear_model",
    "skfedida.neural_network",
    "skfedida.federated",
    "skfedida.model_selection",
    "skfedida.plotting",
]


def _readme_commands():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(r"```bash\n(.*?)```", readme, re.S).group(1)
    return [line for line in block.splitlines() if line and not line.startswith("#")]


def test_readme_opens_with_the_two_setup_commands():
    main_job, tests = _readme_commands()
    assert "examples/quickstart.py" in main_job
    assert "pytest" in tests


def test_ci_runs_exactly_the_readme_test_command():
    _, tests = _readme_commands()
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    commands = [
        line
        for line in ci.splitlines()
        if line and not line.startswith(("#", "set ", "cd "))
    ]
    assert commands == [tests]


def test_every_public_name_is_in_the_api_reference():
    api = (ROOT / "doc" / "api.rst").read_text(encoding="utf-8")
    # skfedida.flower needs the optional Flower extra, so it is documented but
    # not re-exported from the top level.
    for module_name in [*MODULES, "skfedida.flower"]:
        module = importlib.import_module(module_name)
        for name in module.__all__:
            if name.isupper():  # constants are documented in their module
                continue
            assert f"{name}\n" in api, f"{module_name}.{name} missing from doc/api.rst"


def test_top_level_reexports_every_public_name():
    import skfedida

    for module_name in MODULES:
        module = importlib.import_module(module_name)
        for name in module.__all__:
            if not name.isupper():
                assert getattr(skfedida, name) is getattr(module, name)


def test_private_sklearn_and_imblearn_names_are_imported_only_in_compat():
    import ast

    offending = []
    for path in (ROOT / "skfedida").rglob("*.py"):
        if path.name == "_compat.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ImportFrom) or node.level or not node.module:
                continue
            if node.module.split(".")[0] not in ("sklearn", "imblearn"):
                continue
            private_module = any(
                part.startswith("_") for part in node.module.split(".")
            )
            private_names = [a.name for a in node.names if a.name.startswith("_")]
            if private_module or private_names:
                offending.append(f"{path.relative_to(ROOT)}: from {node.module}")
    assert not offending, offending
