"""Fairness metrics on 1,000,000 rows with 3 sensitive attributes vs fairlearn.

Run: ``python benchmarks/bench_metrics.py [--n-samples N] [--repeat R]``

Computes DPD, DPR, DFPR and DPPV (the paper's four metrics) over the
intersectional groups of 3 attributes (5 x 2 x 4 = 40 groups), with
skfedida (one call of ``fairness_summary``, and the four metric functions
called separately) and with fairlearn's ``MetricFrame`` (one frame holding
selection rate, FPR and precision, the usual way to get all four). Prints the
median (and min) wall time of R runs of each, with the core count and load,
and the ratio of medians; checks that both agree.

Then times the same skfedida calls with the 3 attributes held as strings of
each kind a user may have (pandas' default ``str``, ``object``, ``string``
and ``category`` columns, a numpy ``<U`` array) and as integer codes of the
same groups, and prints the ratio string / integer of the medians: the cost
of encoding string groups (issue 34 asks for at most 2x).
"""

import argparse
import statistics
import warnings

import numpy as np
import pandas as pd
from _timing import Timing, header, timed

from skfedida.metrics import (
    demographic_parity_difference,
    demographic_parity_ratio,
    fairness_summary,
    false_positive_rate_difference,
    positive_predictive_value_difference,
)


def make_data(n_samples, seed=0):
    rng = np.random.default_rng(seed)
    race = rng.choice(
        ["White", "Black", "Asian", "Native", "Other"],
        size=n_samples,
        p=[0.6, 0.2, 0.1, 0.05, 0.05],
    )
    sex = rng.choice(["Female", "Male"], size=n_samples)
    age = rng.choice(["<30", "30-45", "45-60", ">60"], size=n_samples)
    S = pd.DataFrame({"race": race, "sex": sex, "age": age})
    y_true = rng.integers(0, 2, size=n_samples)
    y_pred = (rng.random(n_samples) < 0.3 + 0.4 * y_true).astype(int)
    return y_true, y_pred, S


def run_skfedida_summary(y_true, y_pred, S):
    summary = fairness_summary(y_true, y_pred, sensitive_features=S)
    return [
        summary[name]
        for name in (
            "demographic_parity_difference",
            "demographic_parity_ratio",
            "false_positive_rate_difference",
            "positive_predictive_value_difference",
        )
    ]


def run_skfedida_separate(y_true, y_pred, S):
    return [
        func(y_true, y_pred, sensitive_features=S)
        for func in (
            demographic_parity_difference,
            demographic_parity_ratio,
            false_positive_rate_difference,
            positive_predictive_value_difference,
        )
    ]


def string_forms(S):
    """The same sensitive features as every string form, and as integer codes."""
    return {
        "str (pandas default)": S.astype("str"),
        "object": S.astype(object),
        "string": S.astype("string"),
        "category": S.astype("category"),
        "numpy <U array": S.to_numpy(dtype=str),
        "integer codes": S.apply(lambda column: column.factorize(sort=True)[0]),
    }


def _pooled(single_runs):
    """One Timing (median, min) from the Timings of single runs of one call."""
    seconds = [timing.median for timing in single_runs]
    return Timing(
        statistics.median(seconds), min(seconds), len(seconds), single_runs[-1].result
    )


def run_fairlearn(y_true, y_pred, S):
    from fairlearn.metrics import MetricFrame, false_positive_rate, selection_rate
    from sklearn.metrics import precision_score

    def ppv(y_t, y_p):
        return precision_score(y_t, y_p, zero_division=np.nan)

    frame = MetricFrame(
        metrics={"selection": selection_rate, "fpr": false_positive_rate, "ppv": ppv},
        y_true=y_true,
        y_pred=y_pred,
        sensitive_features=S,
    )
    difference = frame.difference()
    ratio = frame.ratio()
    return [
        difference["selection"],
        ratio["selection"],
        difference["fpr"],
        difference["ppv"],
    ]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-samples", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    y_true, y_pred, S = make_data(args.n_samples)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t_summary = timed(lambda: run_skfedida_summary(y_true, y_pred, S), args.repeat)
        t_separate = timed(
            lambda: run_skfedida_separate(y_true, y_pred, S), args.repeat
        )
        t_fairlearn = timed(lambda: run_fairlearn(y_true, y_pred, S), args.repeat)
    ours, separate, theirs = t_summary.result, t_separate.result, t_fairlearn.result
    np.testing.assert_allclose(ours, theirs, rtol=1e-9)
    np.testing.assert_allclose(separate, theirs, rtol=1e-9)

    print(
        f"{args.n_samples:,} rows, 3 sensitive attributes, "
        f"{len(S.drop_duplicates())} groups"
    )
    print(header(args.repeat) + "\n")
    print("| implementation | what | time (s) | fairlearn / this (medians) |")
    print("|---|---|---:|---:|")
    print(
        f"| skfedida | fairness_summary (one pass, all four) | {t_summary} "
        f"| {t_fairlearn.median / t_summary.median:.1f}x |"
    )
    print(
        f"| skfedida | four metric functions, one call each | {t_separate} "
        f"| {t_fairlearn.median / t_separate.median:.1f}x |"
    )
    print(f"| fairlearn | MetricFrame(selection, FPR, PPV) | {t_fairlearn} | 1.0x |")

    # Every form is timed in this one run, round-robin (one call of each per
    # round), so a change in the machine's load weighs on all forms alike.
    forms = string_forms(S)
    runs = (run_skfedida_summary, run_skfedida_separate)
    rounds = [
        {
            form: [
                timed(lambda run=run, S_form=S_form: run(y_true, y_pred, S_form), 1)
                for run in runs
            ]
            for form, S_form in forms.items()
        }
        for _ in range(args.repeat)
    ]
    timings = {
        form: [_pooled([r[form][k] for r in rounds]) for k in range(len(runs))]
        for form in forms
    }
    for form_timings in timings.values():
        for timing in form_timings:
            np.testing.assert_allclose(timing.result, theirs, rtol=1e-9)
    base = timings["integer codes"]
    print("\nString groups against integer codes of the same groups\n")
    print(
        "| groups as | fairness_summary (s) | / integer "
        "| four functions (s) | / integer |"
    )
    print("|---|---:|---:|---:|---:|")
    for form, (summary, separate) in timings.items():
        print(
            f"| {form} | {summary} | {summary.median / base[0].median:.2f}x "
            f"| {separate} | {separate.median / base[1].median:.2f}x |"
        )


if __name__ == "__main__":
    main()
