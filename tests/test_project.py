"""The project's own promises: README commands, CI, the API reference."""

import importlib
import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MODULES = [
    "skfedida.metrics",
    "skfedida.datasets",
    "skfedida.ensemble",
    "skfedida.over_sampling",
    "skfedida.penalty",
    "skfedida.linear_model",
    "skfedida.neural_network",
    "skfedida.federated",
    "skfedida.model_selection",
    "skfedida.plotting",
    "skfedida.postprocessing",
    "skfedida.preprocessing",
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


def test_the_html_repr_links_every_estimator_to_its_api_page():
    # issue 35: the "?" of a notebook's estimator diagram went nowhere.
    import tomllib
    from importlib import metadata

    from sklearn.base import BaseEstimator
    from sklearn.utils import estimator_html_repr

    import skfedida
    from skfedida._doc_links import DOCUMENTATION_URL, documentation_url

    api = (ROOT / "doc" / "api.rst").read_text(encoding="utf-8")
    # The pages autosummary generates: <currentmodule>.<entry> each.
    pages = set()
    for section in api.split(".. currentmodule::")[1:]:
        module, body = section.split("\n", 1)
        pages |= {
            f"{module.strip()}.{line.strip()}"
            for line in body.splitlines()
            if line.startswith("   ") and not line.strip().startswith(":")
        }
    base = documentation_url(metadata.version("skfedida"))
    linked = []
    for module_name in MODULES:
        module = importlib.import_module(module_name)
        for name in module.__all__:
            cls = getattr(module, name)
            if not (isinstance(cls, type) and issubclass(cls, BaseEstimator)):
                continue
            link = cls.__new__(cls)._get_doc_link()
            # The page doc/api.rst generates for the class, under its module.
            page_module = link.removeprefix(base + "generated/").rsplit(".", 2)[0]
            assert link == f"{base}generated/{page_module}.{name}.html", link
            assert f"{page_module}.{name}" in pages, (page_module, name)
            linked.append(name)
    assert set(linked) == {
        "CoarseToFineSearchCV",
        "DifferentialPrivacy",
        "FairHistGradientBoostingClassifier",
        "FairMLPClassifier",
        "FairPenaltyLogisticRegression",
        "FairnessAwareROSE",
        "FederatedEstimator",
        "FederatedMinMaxScaler",
        "FederatedOneHotEncoder",
        "FederatedSimpleImputer",
        "FederatedStandardScaler",
        "FederatedThresholdOptimizer",
        "SecureAggregation",
    }
    html = estimator_html_repr(
        skfedida.FederatedEstimator(skfedida.FairMLPClassifier())
    )
    assert f'href="{base}generated/skfedida.federated.FederatedEstimator.html"' in html
    assert f"{base}generated/skfedida.neural_network.FairMLPClassifier.html" in html
    # One address: pyproject's, which the package's metadata carries.
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["urls"]
    assert DOCUMENTATION_URL.startswith(declared["Documentation"])


def test_the_version_has_one_source():
    from importlib import metadata

    import skfedida

    assert skfedida.__version__ == metadata.version("skfedida")
    assert isinstance(skfedida.__version__, str) and skfedida.__version__


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


def _public_docstring_owners():
    """(import path, numpydoc lint name) of every public module, class, function
    and method, methods inherited from skfedida base classes included.

    The lint name is what ``python -m numpydoc lint`` calls an object defined in
    the module of its public function or class (``_estimator.FederatedEstimator``,
    ``_aggregation.WeightedMean.flower_options``), so that the ``exclude``
    patterns of ``[tool.numpydoc_validation]`` apply unchanged.
    """
    import inspect
    import pkgutil
    import sys

    import skfedida

    def lint_name(module_name, qualname=None):
        stem = Path(sys.modules[module_name].__file__).stem
        return stem if qualname is None else f"{stem}.{qualname}"

    # The subpackages first, so that a re-exported name is reported under the
    # module that documents it.
    module_names = [
        info.name
        for info in pkgutil.walk_packages(skfedida.__path__, "skfedida.")
        if not any(part.startswith("_") for part in info.name.split("."))
    ] + ["skfedida"]
    seen = set()
    for module_name in module_names:
        module = importlib.import_module(module_name)
        yield module_name, lint_name(module_name)
        for name in module.__all__:
            obj = getattr(module, name)
            if not (inspect.isclass(obj) or inspect.isfunction(obj)):
                continue  # constants, documented in their module
            if id(obj) in seen:  # re-exported from the top level
                continue
            seen.add(id(obj))
            yield f"{module_name}.{name}", lint_name(obj.__module__, obj.__qualname__)
            if not inspect.isclass(obj):
                continue
            for attr in dir(obj):
                if attr.startswith("_"):
                    continue
                owner = next(k for k in obj.__mro__ if attr in vars(k))
                if not owner.__module__.startswith("skfedida"):
                    continue  # sklearn's, imblearn's or Flower's own methods
                raw = vars(owner)[attr]
                if isinstance(raw, staticmethod | classmethod | property):
                    function = raw.__func__ if hasattr(raw, "__func__") else raw.fget
                elif inspect.isfunction(raw):
                    function = raw
                elif callable(raw) or hasattr(raw, "__get__"):
                    # sklearn generates set_{method}_request from the signatures.
                    assert re.fullmatch(r"set_\w+_request", attr), (obj, attr)
                    continue
                else:
                    continue  # class attributes such as flower_strategy
                if id(function) in seen:  # inherited by several public classes
                    continue
                seen.add(id(function))
                yield (
                    f"{module_name}.{name}.{attr}",
                    lint_name(obj.__module__, f"{obj.__qualname__}.{attr}"),
                )


def test_every_public_docstring_passes_numpydoc_validation(monkeypatch):
    # `python -m numpydoc lint` (in .ci/run) reads the source; this validates the
    # imported objects, so it also sees docstrings completed at import time
    # (skfedida.metrics' shared parameters) and methods public classes inherit
    # from private bases, under the same [tool.numpydoc_validation] rules.
    from numpydoc.hooks.validate_docstrings import parse_config
    from numpydoc.validate import Validator, validate

    # numpydoc 1.11 raises StopIteration for the line of a module's docstring
    # when the module has no def or class line (a package __init__ that only
    # imports); report such a docstring at line 1, as numpydoc intends.
    def_line = Validator.source_file_def_line.fget

    def def_line_or_none(self):
        try:
            return def_line(self)
        except StopIteration:
            return None

    monkeypatch.setattr(Validator, "source_file_def_line", property(def_line_or_none))

    config = parse_config(ROOT)
    errors = []
    n_validated = 0
    for path, name in _public_docstring_owners():
        if config["exclude"] and config["exclude"].search(name):
            continue
        n_validated += 1
        result = validate(path)
        for code, message in result["errors"]:
            if code not in config["checks"]:
                continue
            override = config["overrides"].get(code)
            if override and override.search(result["docstring"]):
                continue
            errors.append(f"{path} ({name}): {code} {message}")
    assert n_validated > 80, n_validated  # the walk found the public API
    assert not errors, "\n".join(errors)


def test_the_readmes_first_example_runs_and_prints_what_it_says():
    import subprocess
    import sys

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    code = re.search(r"```python\n(.*?)```", readme, re.S).group(1)
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    # Each model's name, the summary's header, then one line per metric.
    summaries, name = {}, None
    for line in result.stdout.splitlines():
        words = line.split()
        if len(words) == 1:
            name = words[0]
            summaries[name] = {}
        elif words and words[0] != "mean":
            summaries[name][words[0]] = words[1]
    # The figures the README quotes right after the example, in its table.
    metrics = ("roc_auc", "brier", "selection_rate", "dpd", "dfpr")
    for name, figures in {
        "FedAvg": ("0.858", "0.125", "0.249", "0.393", "0.192"),
        "FedIDA": ("0.850", "0.127", "0.250", "0.362", "0.139"),
    }.items():
        assert summaries[name] == dict(zip(metrics, figures, strict=True))
        assert f"| {name} | {' | '.join(figures)} |" in readme
    assert "AUROC 0.850, Brier 0.127, selection rate 0.250, DPD 0.362" in readme


def _mutants():
    # benchmarks/mutants is a folder of lists beside the runner, imported the
    # way the runner imports it (its folder first on sys.path).
    import sys

    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import mutants
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    return mutants


def test_every_mutant_still_applies_to_the_code():
    # benchmarks/mutation.py reports a mutant whose original text is not
    # found once as "stale" and does not run it: code that moves would
    # silently shrink what the mutation run checks (7 of 33 had gone stale
    # when the sampler and the aggregation moved into their own modules).
    # Mutants name the definition they change, so a move between files keeps
    # them; a rename, or a line moved out of its function, does not.
    mutants = _mutants()
    from mutants._locate import apply

    every = mutants.SUITE + mutants.BLIND
    stale, broken = [], []
    for mutant in every:
        try:
            path, mutated = apply(mutant, ROOT)
        except LookupError as error:
            stale.append(f"{mutant.name}: {error}")
            continue
        # A mutant that does not change the text, or breaks the file's
        # syntax, would be "killed" by an import error and measure nothing.
        if mutant.original == mutant.mutated:
            broken.append(mutant.name)
        elif path.endswith(".py"):
            try:
                compile(mutated, "m", "exec")
            except SyntaxError:
                broken.append(mutant.name)
    assert stale == []
    assert broken == []
    missing_tests = {
        test for mutant in every for test in mutant.tests if not (ROOT / test).is_file()
    }
    assert missing_tests == set()
    names = [mutant.name for mutant in every]
    assert len(names) == len(set(names)), "two mutants share a name"
    # Within a set, one mutation listed twice would count twice. (A blind set
    # may repeat a mutant of the suite or of an earlier blind set: the runner
    # leaves those out of its rate.)
    for listed in (mutants.SUITE, *mutants.BLIND_SETS.values()):
        edits = [(mutant.where, mutant.original, mutant.mutated) for mutant in listed]
        assert len(edits) == len(set(edits)), "one mutation is listed twice"


def test_a_mutant_follows_its_function_to_another_module(tmp_path):
    # The point of naming a definition: the same mutant applies after the
    # function moves to another file, and is stale once it is renamed.
    mutants = _mutants()
    from mutants._locate import apply, locate

    package = tmp_path / "skfedida"
    (package / "sub").mkdir(parents=True)
    (package / "sub" / "__init__.py").write_text("")
    (package / "_a.py").write_text(
        "LIMIT = 3\n\n\ndef check(x):\n    return x < LIMIT\n\n\n"
        "class Gate:\n    def check(self, x):\n        return x < LIMIT\n"
    )
    mutant = mutants.Mutant(
        "bound off by one", "_a.check", "x < LIMIT", "x <= LIMIT", ()
    )
    path, mutated = apply(mutant, tmp_path)
    # Only the named function changes, not the method with the same text.
    assert path == "skfedida/_a.py"
    assert mutated.count("x <= LIMIT") == 1
    assert mutated.index("x <= LIMIT") < mutated.index("class Gate")
    assert locate("Gate.check", tmp_path).name == "skfedida._a.Gate.check"
    with pytest.raises(LookupError, match="2 definitions"):
        locate("check", tmp_path)
    moved = tmp_path / "moved"
    (moved / "skfedida" / "sub").mkdir(parents=True)
    (moved / "skfedida" / "sub" / "_b.py").write_text(
        "def check(x):\n    return x < 3\n"
    )
    moved_mutant = mutants.Mutant("moved", "check", "x < 3", "x <= 3", ())
    assert apply(moved_mutant, moved) == (
        "skfedida/sub/_b.py",
        "def check(x):\n    return x <= 3\n",
    )
    renamed = tmp_path / "renamed" / "skfedida"
    renamed.mkdir(parents=True)
    (renamed / "_b.py").write_text("def admit(x):\n    return x < 3\n")
    with pytest.raises(LookupError, match="0 definitions"):
        apply(moved_mutant, renamed.parent)


def test_every_public_feature_has_a_mutant():
    # The mutation run covers the whole public surface: every name in the API
    # reference and every kind of reply the server checks.
    mutants = _mutants()
    covered = {feature for mutant in mutants.SUITE for feature in mutant.features}
    features = mutants.public_features(ROOT)
    assert set(covered) <= set(features), "a mutant names an unknown feature"
    assert [name for name in features if name not in covered] == []


def _internal_imports():
    """Per module of the package, the package's modules it imports (lazy too)."""
    import ast

    package = ROOT / "skfedida"
    modules = {}
    for path in package.rglob("*.py"):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts.pop()
        modules[".".join(parts)] = (path, is_package)
    known = set(modules) | {"skfedida._models._sgd_fast"}
    graph = {}
    for name, (path, is_package) in modules.items():
        here = name.split(".") if is_package else name.split(".")[:-1]
        targets = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                candidates = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = here[: len(here) - node.level + 1] if node.level else []
                module = ".".join(base + ([node.module] if node.module else []))
                candidates = [module] + [f"{module}.{a.name}" for a in node.names]
            else:
                continue
            targets.update(c for c in candidates if c in known and c != name)
        graph[name] = targets
    return graph


def _cycle(graph):
    """One cycle of the directed graph, as a list of nodes, or None."""
    state = {}

    def visit(node, path):
        state[node] = "open"
        for target in sorted(graph.get(node, ())):
            if state.get(target) == "open":
                return [*path[path.index(target) :], target]
            if target not in state:
                found = visit(target, [*path, target])
                if found:
                    return found
        state[node] = "done"
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node, [node])
            if found:
                return found
    return None


def test_no_import_circle_between_modules_or_packages():
    # A circle (a module importing one that imports it back, even lazily
    # inside a function) hides which layer owns a rule. Packages are layered
    # too: skfedida/<package>/ and each top-level module skfedida/<m>.py is
    # one node, and a lower one never imports a higher one (issue 33).
    graph = _internal_imports()
    assert _cycle(graph) is None, f"import circle: {' -> '.join(_cycle(graph))}"

    circle = _cycle(_package_graph(graph))
    assert circle is None, f"packages import each other: {' -> '.join(circle)}"


def _package_graph(graph):
    """Per package (the facade left out), the other packages it imports."""
    packages = {}
    for module, targets in graph.items():
        if module == "skfedida":  # the facade imports every package
            continue
        edges = packages.setdefault(_package_of(module), set())
        edges.update(
            _package_of(t) for t in targets if _package_of(t) != _package_of(module)
        )
    return packages


def _package_layers(packages):
    """Lines "N: a, b": each package one layer above the highest it imports."""
    layer = {}

    def of(package):
        if package not in layer:
            below = [of(t) for t in packages.get(package, ()) if t in packages]
            layer[package] = 1 + max(below, default=-1)
        return layer[package]

    for package in packages:
        of(package)
    lines = []
    for n in range(max(layer.values()) + 1):
        names = sorted(p.removeprefix("skfedida.") for p in layer if layer[p] == n)
        lines.append(f"{n}: {', '.join(names)}")
    return lines


def test_contributing_draws_the_package_layers_as_they_are():
    # doc/contributing.rst draws the import graph as layers (issue 33: "a
    # drawing of the import graph shows it"): a package imports only from
    # the layers below its own. The drawing is rebuilt here from the code,
    # so it cannot go stale: paste the lines the assertion prints.
    lines = _package_layers(_package_graph(_internal_imports()))
    text = (ROOT / "doc" / "contributing.rst").read_text(encoding="utf-8")
    drawn = text.split(".. package layers (tests/test_project.py)")[1]
    drawn = drawn.split("::", 1)[1].strip().split("\n\n")[0]
    assert [line.strip() for line in drawn.splitlines()] == lines, "\n".join(lines)


def _package_of(module):
    """The layer a module belongs to: skfedida/<package>/ or skfedida/<m>.py."""
    return ".".join(module.split(".")[:2])


def _parsed_modules():
    """Per module of the package: its dotted name, whether a package, its tree."""
    import ast

    for path in sorted((ROOT / "skfedida").rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts.pop()
        tree = ast.parse(path.read_text(encoding="utf-8"))
        yield ".".join(parts), is_package, tree


def _is_private(name):
    return name.startswith("_") and not name.startswith("__")


def test_no_underscore_name_is_imported_across_packages():
    # A private name is its package's to change. A private module's public
    # names are its package's internal API, which other packages may use;
    # a name with a leading underscore is not (issue 33).
    import ast

    crossings = []
    for name, is_package, tree in _parsed_modules():
        here = name.split(".") if is_package else name.split(".")[:-1]
        for node in ast.walk(tree):
            if not isinstance(node, ast.ImportFrom) or not (
                node.level or (node.module or "").startswith("skfedida")
            ):
                continue
            base = here[: len(here) - node.level + 1] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            if _package_of(module) == _package_of(name):
                continue
            crossings += [
                f"{name} imports {module}.{alias.name}"
                for alias in node.names
                if _is_private(alias.name)
            ]
    assert crossings == []


def test_no_call_into_another_packages_private_method():
    # A module calls another class's private method only inside the class's
    # own package; other packages go through a method meant for them
    # (issue 33). Receivers are matched by method name: a private method
    # that only classes of other packages define is one of theirs.
    import ast

    owners = {}
    calls = []
    for name, _, tree in _parsed_modules():
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                for item in node.body:
                    if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                        owners.setdefault(item.name, set()).add(_package_of(name))
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and _is_private(node.func.attr)
            ):
                receiver = node.func.value
                if isinstance(receiver, ast.Name) and receiver.id in {"self", "cls"}:
                    continue
                if (
                    isinstance(receiver, ast.Call)
                    and getattr(receiver.func, "id", None) == "super"
                ):
                    continue
                calls.append((name, node.lineno, node.func.attr))
    foreign = [
        f"{name}:{line} calls .{method}()"
        for name, line, method in calls
        if owners.get(method) and _package_of(name) not in owners[method]
    ]
    assert foreign == []


def test_every_message_key_is_written_once():
    # What a server and its clients say is keyed by the names of
    # skfedida/_messages.py; a key spelt out again elsewhere (issue 48 found
    # them as literals in five files) drifts when one side renames it.
    # Docstrings may show a key to a reader.
    import ast

    from skfedida._messages import MESSAGE_KEYS

    literals = []
    for name, _, tree in _parsed_modules():
        if name == "skfedida._messages":
            continue
        docstrings = {
            id(node.body[0].value)
            for node in ast.walk(tree)
            if isinstance(
                node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef
            )
            and node.body
            and isinstance(node.body[0], ast.Expr)
            and isinstance(node.body[0].value, ast.Constant)
        }
        literals += [
            f"{name}:{node.lineno} {node.value!r}"
            for node in ast.walk(tree)
            if isinstance(node, ast.Constant)
            and node.value in MESSAGE_KEYS
            and id(node) not in docstrings
        ]
    assert literals == []


def test_the_flower_backend_only_translates_messages():
    # Issue 48: the stages of a run (discovery, statistics, initialisation,
    # rounds, the trees' queries, the thresholds' histograms) live in
    # federated/ and run over any transport; flower/ carries the messages.
    # So no Flower module calls a check of the reply gate (constants such as
    # REPORT_KEYS aside), the ServerApp reaches the run through
    # run_federation alone (and the run config through plan_for_run), and
    # the ClientApp reaches the client through ClientNode alone.
    import ast

    gate_calls = []
    apps = {"skfedida.flower._server_app": set(), "skfedida.flower._client_app": set()}
    for name, _, tree in _parsed_modules():
        if not name.startswith("skfedida.flower"):
            continue
        for node in ast.walk(tree):
            if not isinstance(node, ast.ImportFrom):
                continue
            module = node.module or ""
            if "_gate" in module:
                gate_calls += [
                    f"{name}: {alias.name}"
                    for alias in node.names
                    if not alias.name.isupper()
                ]
            if name in apps and "federated" in module:
                apps[name] |= {alias.name for alias in node.names}
    assert gate_calls == []
    assert apps == {
        "skfedida.flower._server_app": {"run_federation", "plan_for_run"},
        "skfedida.flower._client_app": {"ClientNode", "plan_for_run"},
    }


def test_no_private_flower_name_is_used():
    # Issue 48: a private name of Flower's (a module, an import, an
    # attribute of something imported from Flower) changes without notice
    # between releases; the package reaches Flower through its public API.
    import ast

    private = []
    for name, _, tree in _parsed_modules():
        from_flower = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                "flwr"
            ):
                if any(part.startswith("_") for part in node.module.split(".")):
                    private.append(f"{name}: module {node.module}")
                for alias in node.names:
                    if alias.name.startswith("_"):
                        private.append(f"{name}: {node.module}.{alias.name}")
                    from_flower.add(alias.asname or alias.name)
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in from_flower
                and node.attr.startswith("_")
                and not node.attr.startswith("__")
            ):
                private.append(f"{name}:{node.lineno} {node.value.id}.{node.attr}")
            # A private attribute written through __dict__ (a message's
            # id, which Flower sets only so) is as private as one named.
            if (
                isinstance(node, ast.Subscript)
                and isinstance(node.value, ast.Attribute)
                and node.value.attr == "__dict__"
                and isinstance(node.slice, ast.Constant)
                and str(node.slice.value).startswith("_")
            ):
                private.append(f"{name}:{node.lineno} __dict__[{node.slice.value!r}]")
    assert private == []


def test_contributing_names_the_checks_only_flower_calls():
    # doc/contributing.rst says which of the gate's checks only a run by
    # message (Flower's) calls (issue 48: it used to say every check served
    # every backend). The list is rebuilt from the imports: a check that
    # starts serving the in-process server too leaves it.
    import ast

    by_message = {
        "skfedida.federated._lifecycle",
        "skfedida.federated._message_rounds",
    }
    defined = set()
    for path in (ROOT / "skfedida" / "_gate").glob("*.py"):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.FunctionDef | ast.ClassDef):
                defined.add(node.name)
    callers = {}
    for name, _, tree in _parsed_modules():
        if name.startswith("skfedida._gate"):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and "_gate" in (node.module or ""):
                for alias in node.names:
                    callers.setdefault(alias.name, set()).add(
                        "message"
                        if name in by_message or name.startswith("skfedida.flower")
                        else name
                    )
    flower_only = sorted(
        name
        for name in defined
        if not name.startswith("_")
        and callers.get(name)
        and callers[name] == {"message"}
    )
    text = (ROOT / "doc" / "contributing.rst").read_text(encoding="utf-8")
    listed = text.split(".. flower-only checks (tests/test_project.py)")[1]
    listed = listed.strip().split("\n\n")[0]
    assert sorted(re.findall(r"``(\w+)``", listed)) == flower_only
