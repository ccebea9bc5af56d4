"""Mutation testing: do the tests catch the mistakes they claim to?

Run: ``python benchmarks/mutation.py [--set suite|blind|...|blind6|all]
[--only WORD ...]
[--area AREA ...] [--module LIST ...] [--jobs 2] [--coverage] [--baseline]``

Each mutant (``benchmarks/mutants/``) is one small, plausible mistake in the
package: a wrong sign, a dropped check, a weight ignored, a seed re-used. It
names the function it changes, not a file (``benchmarks/mutants/_locate.py``
finds the file), so code can move between modules without breaking it. For
each, the script copies the project's tracked files to a scratch folder,
applies the mutation there (the working tree is never touched) and runs, with
``pytest -x``:

1. the test files that cover the changed code (the mutant's ``tests``);
2. only when they all pass, the whole suite but the Flower deployment
   (``-m "not e2e"``, doctests included).

A mutant is killed when a test fails (or the run times out). The script
prints one line per mutant, then the kill rate per package and overall. A
survivor is a missing test (write one that states the behaviour) or an
equivalent mutant (say why in its ``equivalent``).

``--coverage`` lists the public features (every name in ``doc/api.rst`` and
every reply kind the server reads) that no mutant of the set changes, and
fails if there is one. ``--baseline`` first runs the unmutated suite in a
scratch copy, which must pass for the second stage to mean anything.

Cost on 2 cores: a mutant a focused test kills takes 5-60 s; a survivor of the
first stage adds the suite's few minutes. Not part of CI; run it after
changing code or tests.
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from mutants import BLIND, BLIND_SETS, BY_MODULE, SUITE, public_features
from mutants._locate import apply

ROOT = Path(__file__).resolve().parents[1]


def area(path):
    """The package a mutated file belongs to, for the per-package rates."""
    inside = path.removeprefix("skfedida/")
    if inside.startswith("_models/"):
        return "estimators"
    if "/" in inside:
        return inside.split("/")[0]
    return inside.removesuffix(".py").lstrip("_")


def _tracked_files():
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout.decode()
    files = [name for name in listed.split("\0") if name]
    # The compiled loops are built, not tracked.
    files += [str(path.relative_to(ROOT)) for path in (ROOT / "skfedida").rglob("*.so")]
    return files


def _scratch_copy(files):
    scratch = Path(tempfile.mkdtemp(prefix="skfedida-mutation-"))
    for name in files:
        source = ROOT / name
        if not source.is_file():
            continue
        target = scratch / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target)
    return scratch


def _pytest(scratch, paths, timeout):
    """Run pytest on ``paths`` in ``scratch``; (passed, first failure)."""
    # PYTHONPATH makes subprocesses the tests start (examples, Flower apps)
    # import the scratch copy too, not the editable install.
    env = {
        **os.environ,
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONPATH": str(scratch),
    }
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-x",
            "-q",
            "-p",
            "no:cacheprovider",
            "-m",
            "not e2e",
            "--no-header",
            *paths,
        ],
        cwd=scratch,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )
    if result.returncode == 0:
        return True, ""
    failed = [
        line.split(" ")[1]
        for line in result.stdout.splitlines()
        if line.startswith(("FAILED ", "ERROR "))
    ]
    return False, failed[0] if failed else f"exit {result.returncode}"


def run_mutant(mutant, files, timeout):
    """(mutant, result, stage, seconds, detail) for one mutant."""
    scratch = _scratch_copy(files)
    start = time.perf_counter()
    try:
        try:
            path, mutated = apply(mutant, scratch)
        except LookupError as error:
            return mutant, "stale", 0, 0.0, str(error)
        target = scratch / path
        target.write_text(mutated, encoding="utf-8")
        if target.suffix == ".pyx":
            # The scratch copy holds the built extension of the unmutated
            # loops: a compiled mutant must be built, or the tests would run
            # the original code and the mutant would "survive" unseen.
            built = subprocess.run(
                [sys.executable, "setup.py", "-q", "build_ext", "--inplace"],
                cwd=scratch,
                capture_output=True,
                text=True,
            )
            if built.returncode:
                reason = (built.stderr.strip().splitlines() or ["unknown"])[-1]
                return mutant, "stale", 0, 0.0, f"not built (needs Cython): {reason}"
        # The mutated copy no longer holds its own mutant's original text, so
        # the check that mutants still apply would fail whatever the mutant.
        whole_suite = (
            "--deselect",
            "tests/test_project.py::test_every_mutant_still_applies_to_the_code",
        )
        for stage, paths in ((1, mutant.tests), (2, whole_suite)):
            try:
                passed, detail = _pytest(scratch, paths, timeout)
            except subprocess.TimeoutExpired:
                return mutant, "killed", stage, time.perf_counter() - start, "timeout"
            if detail in ("exit 4", "exit 5"):
                # pytest found no such test file or collected nothing (a
                # test file git does not track is not copied): no verdict.
                return mutant, "stale", stage, 0.0, f"its tests did not run ({detail})"
            if not passed:
                seconds = time.perf_counter() - start
                return mutant, "killed", stage, seconds, detail
        return mutant, "survived", 2, time.perf_counter() - start, ""
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def coverage_gaps(mutants):
    """The public features no mutant in ``mutants`` changes."""
    covered = {feature for mutant in mutants for feature in mutant.features}
    return [name for name in public_features(ROOT) if name not in covered]


def _report(outcomes):
    by_area = defaultdict(lambda: [0, 0])
    for mutant, result, *_ in outcomes:
        counts = by_area[area(mutant.path)]
        counts[1] += result != "stale"
        counts[0] += result == "killed"
    print("\n| package | killed | mutants | kill rate |")
    print("|---|---:|---:|---:|")
    for name in sorted(by_area):
        killed, total = by_area[name]
        print(f"| {name} | {killed} | {total} | {killed / max(total, 1):.0%} |")
    killed = sum(k for k, _ in by_area.values())
    total = sum(t for _, t in by_area.values())
    print(f"| **all** | {killed} | {total} | {killed / max(total, 1):.1%} |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", choices=("suite", *BLIND_SETS, "all"), default="suite")
    parser.add_argument(
        "--only", nargs="+", help="run the mutants whose name has these words"
    )
    parser.add_argument("--area", nargs="+", help="run these packages' mutants")
    parser.add_argument(
        "--module",
        nargs="+",
        choices=sorted(BY_MODULE),
        help="run the mutants listed in these modules of benchmarks/mutants",
    )
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=900)
    parser.add_argument("--coverage", action="store_true")
    parser.add_argument("--baseline", action="store_true")
    args = parser.parse_args()
    # "all": the suite and every blind set; "blind" is the first blind set.
    mutants = {"suite": SUITE, "all": SUITE + BLIND, **BLIND_SETS}[args.set]

    if args.coverage:
        gaps = coverage_gaps(mutants)
        features = public_features(ROOT)
        print(
            f"{len(features) - len(gaps)} of {len(features)} public features "
            f"have a mutant in the {args.set} set"
        )
        for name in gaps:
            print(f"  no mutant: {name}")
        return 1 if gaps else 0

    if args.set not in ("suite", "all"):
        # A blind mutant that repeats one of the suite, or of an earlier blind
        # set, is not blind any more: tests may have been written with it in
        # view.
        earlier = list(SUITE)
        for name, listed in BLIND_SETS.items():
            if name == args.set:
                break
            earlier += listed
        seen = {(m.where, m.original, m.mutated) for m in earlier}
        repeats = [m for m in mutants if (m.where, m.original, m.mutated) in seen]
        if repeats:
            print(
                f"{len(repeats)} mutants of {args.set} repeat an earlier "
                "mutant (left out):"
            )
            for mutant in repeats:
                print(f"  {mutant.name}")
        mutants = [m for m in mutants if m not in repeats]

    if args.only:
        mutants = [m for m in mutants if any(w in m.name for w in args.only)]
    if args.module:
        listed = {id(m) for name in args.module for m in BY_MODULE[name]}
        mutants = [m for m in mutants if id(m) in listed]
    if args.area:
        mutants = [m for m in mutants if area(m.path) in args.area]
    files = _tracked_files()
    if args.baseline:
        scratch = _scratch_copy(files)
        try:
            passed, detail = _pytest(scratch, (), args.timeout)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        if not passed:
            print(f"the unmutated suite fails in a scratch copy: {detail}")
            return 2
        print("baseline: the unmutated suite passes in a scratch copy")

    print(f"{len(mutants)} mutants, {args.jobs} at a time\n")
    print("| mutant | where | result | caught by | stage | s |")
    print("|---|---|---|---|---:|---:|")
    outcomes = []
    with ThreadPoolExecutor(args.jobs) as pool:
        for outcome in pool.map(lambda m: run_mutant(m, files, args.timeout), mutants):
            mutant, result, stage, seconds, detail = outcome
            outcomes.append(outcome)
            if result == "survived":
                detail = mutant.equivalent or "NOT CAUGHT"
            print(
                f"| {mutant.name} | {mutant.where} | "
                f"{result} | {detail} | {stage} | {seconds:.0f} |",
                flush=True,
            )
    _report(outcomes)
    survived = [m for m, result, *_ in outcomes if result == "survived"]
    stale = [m for m, result, *_ in outcomes if result == "stale"]
    unjustified = [m for m in survived if not m.equivalent]
    print(
        f"\nsurvived: {len(survived)}; unjustified: {len(unjustified)}; "
        f"stale (fix the mutant's text): {len(stale)}"
    )
    return 1 if unjustified or stale else 0


if __name__ == "__main__":
    sys.exit(main())
