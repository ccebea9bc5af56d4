"""Mutation testing of the core modules: do the tests catch what they claim?

Run: ``python benchmarks/mutation.py [--only NAME ...] [--jobs 2]``

Each mutant is one small, plausible mistake in the core code (the penalty,
the metrics engine and operating points, the sampler, federated averaging and
seeding, model selection, evaluation). For each, the script copies the
package and its tests to a scratch folder, applies the mutation there (the
working tree is never touched), runs the tests that cover that code with
``pytest -x``, and counts the mutant as killed when they fail. It prints one
line per mutant and the survival rate. A survivor is either a missing test
(write it) or an equivalent mutant (justify it in the table below).

It takes a few minutes (about 30 s a mutant on 2 cores), so it is not part of
CI; run it after changing core code or its tests.
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

METRICS_TESTS = (
    "tests/test_mutants.py",
    "tests/test_metrics.py",
    "tests/test_scorers.py",
)
SAMPLER_TESTS = ("tests/test_mutants.py", "tests/test_over_sampling.py")
MINIBATCH_TESTS = ("tests/test_minibatch_resampling.py",)
PENALTY_TESTS = (
    "tests/test_penalty.py",
    "tests/test_penalty_large_k.py",
    "tests/test_operating_point.py",
)
FEDERATED_TESTS = (
    "tests/test_mutants.py",
    "tests/test_federated.py",
    "tests/test_determinism.py",
    "tests/test_operating_point.py",
)
SELECTION_TESTS = (
    "tests/test_mutants.py",
    "tests/test_model_selection.py",
    "tests/test_operating_point.py",
)
EVALUATION_TESTS = (
    "tests/test_mutants.py",
    "tests/test_operating_point.py",
    "tests/test_federated.py",
)
ESTIMATOR_TESTS = (
    "tests/test_mutants.py",
    "tests/test_fair_estimators.py",
    "tests/test_operating_point.py",
)
GATE_TESTS = (
    "tests/test_reply_gate.py",
    "tests/test_reply_gate_variants.py",
    "tests/test_preprocessing.py",
)
OPERATING_POINT_TESTS = (
    "tests/test_mutants.py",
    "tests/test_operating_point.py",
    "tests/test_exact_operating_point.py",
)


@dataclass(frozen=True)
class Mutant:
    name: str
    path: str
    original: str
    mutated: str
    tests: tuple
    #: Why it cannot be caught, when it is equivalent to the original.
    equivalent: str = ""


MUTANTS = [
    # -- metrics engine and operating points
    Mutant(
        "FPR min_group_size counts all rows, not negatives",
        "skfedida/metrics/_fairness.py",
        '"false_positive_rate": ("false_positive", "negative", "n_negative", '
        '"no negatives")',
        '"false_positive_rate": ("false_positive", "negative", "n", "no negatives")',
        METRICS_TESTS,
    ),
    Mutant(
        "difference is max, not max - min",
        "skfedida/metrics/_fairness.py",
        "return float(defined.max() - defined.min())",
        "return float(defined.max())",
        METRICS_TESTS,
    ),
    Mutant(
        "DPR of all-zero rates is 0, not 1",
        "skfedida/metrics/_fairness.py",
        "return 1.0 if highest == 0 else float(defined.min() / highest)",
        "return 0.0 if highest == 0 else float(defined.min() / highest)",
        METRICS_TESTS,
    ),
    Mutant(
        "selection rate ignores sample weights",
        "skfedida/metrics/_fairness.py",
        '"selection_rate": ("predicted", "weight", "n", "empty group")',
        '"selection_rate": ("predicted", "n", "n", "empty group")',
        METRICS_TESTS,
    ),
    Mutant(
        "threshold_at_rate does not interpolate within its bin",
        "skfedida/metrics/_operating_point.py",
        "fraction = 0.0 if inside <= 0 else (above[j] - wanted) / inside",
        "fraction = 0.0",
        OPERATING_POINT_TESTS,
    ),
    Mutant(
        "score_histogram puts 1.0 in the wrong bin",
        "skfedida/metrics/_operating_point.py",
        "return np.minimum((scores * n_bins).astype(np.intp), n_bins - 1)",
        "return np.minimum((scores * n_bins).astype(np.intp), n_bins - 2)",
        OPERATING_POINT_TESTS,
    ),
    Mutant(
        "tied rows all selected, not with the probability that meets the rate",
        "skfedida/metrics/_operating_point.py",
        "decisions[self._tied(scores)] = self.tie_probability",
        "decisions[self._tied(scores)] = 1.0",
        OPERATING_POINT_TESTS,
    ),
    Mutant(
        "narrowing stops at a bin of one float value plus its neighbour",
        "skfedida/metrics/_operating_point.py",
        "if n_rows[j] <= 1 or block_high - block_low <= 1:",
        "if n_rows[j] <= 1 or block_high - block_low <= 2:",
        OPERATING_POINT_TESTS,
    ),
    Mutant(
        "the first grid leaves out a score of 1.0",
        "skfedida/metrics/_operating_point.py",
        "_TOP = int(ordinal(1.0)) + 1",
        "_TOP = int(ordinal(1.0))",
        OPERATING_POINT_TESTS,
    ),
    Mutant(
        "expected accuracy counts a tied row as right when selected",
        "skfedida/federated/_evaluation.py",
        "np.dot(w, y * pred + (1 - y) * (1 - pred))",
        "np.dot(w, y * pred + (1 - y) * (pred < 1))",
        OPERATING_POINT_TESTS,
    ),
    Mutant(
        "set_score_request drops the scorer's sensitive_features request",
        "skfedida/metrics/_scorer.py",
        "if param not in kwargs and alias is not None:",
        "if param not in kwargs and alias is None:",
        OPERATING_POINT_TESTS,
    ),
    Mutant(
        "a threshold scorer guesses the favourable label of string classes",
        "skfedida/metrics/_scorer.py",
        'numeric.dtype.kind in "biuf" and np.isin(numeric, [-1, 0, 1]).all()',
        "True",
        OPERATING_POINT_TESTS,
    ),
    # -- the reply gate
    Mutant(
        "a group a client did not declare is accepted",
        "skfedida/federated/_replies.py",
        "            if label not in declared:\n",
        "            if label not in declared and False:\n",
        GATE_TESTS,
    ),
    Mutant(
        "consensus takes a plurality, not a strict majority",
        "skfedida/federated/_replies.py",
        "if 2 * counts[best] > len(keys):",
        "if counts[best] >= 1:",
        GATE_TESTS,
    ),
    Mutant(
        "extremes far beyond the other clients' are accepted",
        "skfedida/federated/_statistics_replies.py",
        "below = scaled & (low < lo - RANGE_FACTOR * width)",
        "below = scaled & (low < lo - 1e300 * width)",
        GATE_TESTS,
    ),
    Mutant(
        "prior_aggregation='median' takes the clients' mean share",
        "skfedida/federated/_aggregation.py",
        "median = np.median(rates, axis=0)",
        "median = np.mean(rates, axis=0)",
        GATE_TESTS,
    ),
    Mutant(
        "FairFed keeps groups smaller than min_group_size",
        "skfedida/federated/_aggregation.py",
        "defined & (n_federation >= self.min_group_size)",
        "defined",
        GATE_TESTS,
    ),
    # -- penalties
    Mutant(
        "group penalty value doubled",
        "skfedida/penalty.py",
        "value = max(value / W, 0.0)",
        "value = max(2.0 * value / W, 0.0)",
        PENALTY_TESTS,
    ),
    Mutant(
        "group penalty gradient: wrong sign of one moment",
        "skfedida/penalty.py",
        "R = np.concatenate((-M[:L, L:].T, M[:L, :L])) * (2.0 / W)",
        "R = np.concatenate((M[:L, L:].T, M[:L, :L])) * (2.0 / W)",
        PENALTY_TESTS,
    ),
    Mutant(
        "individual penalty counts ordered pairs",
        "skfedida/penalty.py",
        "value = 0.5 * ordered.sum() / W",
        "value = ordered.sum() / W",
        PENALTY_TESTS,
    ),
    Mutant(
        "standardized penalty: variance gradient added, not subtracted",
        "skfedida/penalty.py",
        "return ratio, (gradient - ratio * variance_gradient) / variance",
        "return ratio, (gradient + ratio * variance_gradient) / variance",
        PENALTY_TESTS,
    ),
    # -- the sampler
    Mutant(
        "undersampling draws with replacement",
        "skfedida/over_sampling/_fairness_aware_rose.py",
        "rows = rows[random_state.permutation(size)[:target]]",
        "rows = rows[random_state.randint(0, size, size=target)]",
        SAMPLER_TESTS,
    ),
    Mutant(
        "a per-subgroup shrinkage dict is ignored",
        "skfedida/over_sampling/_fairness_aware_rose.py",
        "return {k: given.get(k, 0.0) for k in keys}",
        "return dict.fromkeys(keys, 1.0)",
        SAMPLER_TESTS,
    ),
    Mutant(
        'covariance="full" ignores shrinkage',
        "skfedida/over_sampling/_fairness_aware_rose.py",
        "return scale * (draws @ factor.T) * unit",
        "return (draws @ factor.T) * unit",
        SAMPLER_TESTS,
    ),
    Mutant(
        "Silverman's factor with p + 1",
        "skfedida/over_sampling/_fairness_aware_rose.py",
        "return (4.0 / ((n_noised + 2) * n_samples)) ** (1.0 / (n_noised + 4))",
        "return (4.0 / ((n_noised + 1) * n_samples)) ** (1.0 / (n_noised + 4))",
        SAMPLER_TESTS,
    ),
    Mutant(
        'n_target="group_mean" rounds the group\'s mean down',
        "skfedida/over_sampling/_fairness_aware_rose.py",
        "key: max(round(group_rows[key[0]] / group_cells[key[0]]), 1)",
        "key: max(group_rows[key[0]] // group_cells[key[0]], 1)",
        SAMPLER_TESTS,
    ),
    Mutant(
        'per-minibatch "group_mean" counts absent cells in the mean',
        "skfedida/over_sampling/_minibatches.py",
        "value = np.round(by_group.sum(axis=2) / np.maximum(n_present, 1))",
        "value = np.round(by_group.sum(axis=2) / n_labels)",
        MINIBATCH_TESTS,
    ),
    Mutant(
        "a resampled minibatch past batch_size is split into several steps",
        "skfedida/federated/_client.py",
        "        estimator.batch_size = data.n\n",
        "",
        MINIBATCH_TESTS,
    ),
    # -- federated averaging, seeding, training
    Mutant(
        "client seeds ignore random_state",
        "skfedida/federated/_client.py",
        "return check_random_state(random_state).randint(",
        "return check_random_state(0).randint(",
        FEDERATED_TESTS,
    ),
    Mutant(
        "round seed ignores the round",
        "skfedida/federated/_client.py",
        "np.random.SeedSequence([int(client_seed), round_])",
        "np.random.SeedSequence([int(client_seed), 0])",
        FEDERATED_TESTS,
    ),
    Mutant(
        "FedAvg averages with uniform weights, not n_k / n",
        "skfedida/federated/_aggregation.py",
        "return _weighted_sum(parameter_lists, weights / weights.sum())",
        "return _weighted_sum(parameter_lists, np.ones_like(weights) / weights.size)",
        FEDERATED_TESTS,
    ),
    Mutant(
        "median aggregation is the mean",
        "skfedida/federated/_aggregation.py",
        "np.asarray(np.median(np.stack(layers), axis=0))",
        "np.asarray(np.mean(np.stack(layers), axis=0))",
        ("tests/test_aggregation.py",),
    ),
    Mutant(
        "trimmed mean cuts nothing",
        "skfedida/federated/_aggregation.py",
        "lowercut = int(cut_fraction * nobs)",
        "lowercut = 0",
        ("tests/test_aggregation.py",),
    ),
    Mutant(
        "Per-FedAvg meta-step in the wrong direction",
        "skfedida/federated/_client.py",
        "[t - (a - s) for t, a, s in zip(theta, adapted, stepped, strict=True)]",
        "[t + (a - s) for t, a, s in zip(theta, adapted, stepped, strict=True)]",
        FEDERATED_TESTS,
    ),
    Mutant(
        "prior-correction weights inverted",
        "skfedida/federated/_client.py",
        "ratio = np.divide(before, after, out=np.ones(n_classes), where=after > 0)",
        "ratio = np.divide(after, before, out=np.ones(n_classes), where=before > 0)",
        FEDERATED_TESTS,
    ),
    Mutant(
        "fairness weight doubled in the objective's value",
        "skfedida/_fair_base.py",
        "value += self.fairness * penalty",
        "value += 2.0 * self.fairness * penalty",
        ESTIMATOR_TESTS,
    ),
    Mutant(
        "fairness weight doubled in the objective's gradient",
        "skfedida/_fair_base.py",
        "score_gradient += self.fairness * penalty_gradient",
        "score_gradient += 2.0 * self.fairness * penalty_gradient",
        ESTIMATOR_TESTS,
    ),
    Mutant(
        "L2 term on the intercept too",
        "skfedida/linear_model.py",
        "return [params[0]]",
        "return [params[0], params[1]]",
        ESTIMATOR_TESTS,
    ),
    Mutant(
        "Armijo accepts any decrease",
        "skfedida/_fair_base.py",
        "if trial_value <= value - _ARMIJO * step * squared_norm:",
        "if trial_value <= value:",
        ESTIMATOR_TESTS,
    ),
    # -- model selection
    Mutant(
        "one fine candidate too few",
        "skfedida/model_selection.py",
        "fine = self._grid(left, right, self.n_fine + 2)[1:-1]",
        "fine = self._grid(left, right, self.n_fine + 1)[1:-1]",
        SELECTION_TESTS,
    ),
    Mutant(
        "fine window half as wide",
        "skfedida/model_selection.py",
        "right = coarse[min(i + 1, len(coarse) - 1)]",
        "right = coarse[i]",
        SELECTION_TESTS,
    ),
    Mutant(
        "fairest_within ignores the upper end of the band",
        "skfedida/model_selection.py",
        "usable = (rate >= low) & (rate <= high)",
        "usable = rate >= low",
        SELECTION_TESTS,
    ),
    Mutant(
        "fairest_within ignores its tolerance",
        "skfedida/model_selection.py",
        "eligible = candidates[perf[candidates] >= best - self.tolerance]",
        "eligible = candidates[perf[candidates] >= best]",
        SELECTION_TESTS,
    ),
    Mutant(
        "lambda_range takes the value that failed as the bound",
        "skfedida/model_selection.py",
        "bound = lambdas[len(scores) - 2] if stopped else lambdas[len(scores) - 1]",
        "bound = lambdas[len(scores) - 1]",
        SELECTION_TESTS,
    ),
    # -- evaluation
    Mutant(
        "bootstrap ignores the resample weights",
        "skfedida/federated/_evaluation.py",
        "metrics, y_k, proba_k, pred_k, S_k, weight, min_group_size",
        "metrics, y_k, proba_k, pred_k, S_k, None, min_group_size",
        EVALUATION_TESTS,
    ),
    Mutant(
        "interval = min/max of the draws, ignoring confidence",
        "skfedida/federated/_evaluation.py",
        "np.quantile(finite, [tail, 1 - tail])",
        "np.quantile(finite, [0.0, 1.0])",
        EVALUATION_TESTS,
    ),
    Mutant(
        "Brier score as mean absolute error",
        "skfedida/federated/_evaluation.py",
        'values["brier"] = float(np.dot(w, (proba - y) ** 2) / total)',
        'values["brier"] = float(np.dot(w, np.abs(proba - y)) / total)',
        EVALUATION_TESTS,
    ),
]


def _scratch_copy():
    scratch = Path(tempfile.mkdtemp(prefix="skfedida-mutation-"))
    for name in ("skfedida", "tests"):
        shutil.copytree(
            ROOT / name,
            scratch / name,
            ignore=shutil.ignore_patterns("__pycache__", "*.pyc"),
        )
    shutil.copy(ROOT / "pyproject.toml", scratch / "pyproject.toml")
    return scratch


def run_mutant(mutant, timeout):
    scratch = _scratch_copy()
    try:
        target = scratch / mutant.path
        source = target.read_text(encoding="utf-8")
        if source.count(mutant.original) != 1:
            return mutant, "stale", 0.0, "the original text is not found once"
        target.write_text(
            source.replace(mutant.original, mutant.mutated), encoding="utf-8"
        )
        start = time.perf_counter()
        # ``python -m pytest`` from the scratch folder imports its package copy.
        env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
        try:
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
                    *mutant.tests,
                ],
                cwd=scratch,
                capture_output=True,
                text=True,
                timeout=timeout,
                env=env,
            )
        except subprocess.TimeoutExpired:
            return mutant, "killed", time.perf_counter() - start, "timeout"
        seconds = time.perf_counter() - start
        if result.returncode == 0:
            return mutant, "survived", seconds, ""
        failed = [
            line.split(" ")[1]
            for line in result.stdout.splitlines()
            if line.startswith("FAILED ")
        ]
        return mutant, "killed", seconds, failed[0] if failed else "error"
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--only", nargs="+", help="run the mutants whose name has these words"
    )
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=600)
    args = parser.parse_args()
    mutants = MUTANTS
    if args.only:
        mutants = [m for m in MUTANTS if any(w in m.name for w in args.only)]
    print(f"{len(mutants)} mutants, {args.jobs} at a time\n")
    print("| mutant | file | result | caught by | s |")
    print("|---|---|---|---|---:|")
    survived = []
    with ThreadPoolExecutor(args.jobs) as pool:
        for mutant, result, seconds, detail in pool.map(
            lambda m: run_mutant(m, args.timeout), mutants
        ):
            if result == "survived":
                survived.append(mutant)
                detail = mutant.equivalent or "NOT CAUGHT"
            print(
                f"| {mutant.name} | {mutant.path.removeprefix('skfedida/')} | "
                f"{result} | {detail} | {seconds:.0f} |",
                flush=True,
            )
    unjustified = [m for m in survived if not m.equivalent]
    print(
        f"\nsurvival rate: {len(survived)}/{len(mutants)} "
        f"({len(survived) / len(mutants):.0%}); unjustified survivors: "
        f"{len(unjustified)}"
    )
    return 1 if unjustified else 0


if __name__ == "__main__":
    sys.exit(main())
