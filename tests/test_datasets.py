import os
import subprocess
import sys
import textwrap
import zipfile
from itertools import product
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from skfedida.datasets import load_adult, make_federated_classification, make_roc_like

ROOT = Path(__file__).resolve().parents[1]
SHARED_ADULT = ROOT.parent / "shared" / "data" / "adult" / "C5"

# ../shared/data/README.md: rows per client (1..5) and split.
EXPECTED_ROWS = {
    "train": [2712, 4069, 5426, 6783, 8140],
    "val": [679, 1018, 1357, 1696, 2035],
    "test": [1131, 1696, 2261, 2827, 3392],
}


@pytest.mark.parametrize("split", ["train", "val", "test"])
@pytest.mark.parametrize("raw", [False, True])
def test_adult_row_counts_per_split_and_client(split, raw):
    adult = load_adult(split, raw=raw)
    counts = adult.clients.value_counts().sort_index()
    assert counts.index.tolist() == [1, 2, 3, 4, 5]
    assert counts.tolist() == EXPECTED_ROWS[split]
    n = sum(EXPECTED_ROWS[split])
    assert len(adult.data) == len(adult.target) == len(adult.sensitive) == n
    assert set(adult) == {
        "data",
        "target",
        "sensitive",
        "clients",
        "feature_names",
        "DESCR",
    }


def test_adult_all_splits():
    adult = load_adult("all")
    assert len(adult.data) == 45222
    assert adult.target.mean() == pytest.approx(0.2478, abs=0.002)


@pytest.mark.parametrize("raw", [False, True])
def test_adult_never_exposes_sensitive_attributes_as_predictors(raw):
    adult = load_adult("train", raw=raw)
    for column in adult.data.columns:
        assert not column.startswith(("race", "gender", "income"))
    assert list(adult.sensitive.columns) == ["race", "gender"]
    assert adult.feature_names == list(adult.data.columns)
    assert set(adult.sensitive["gender"]) == {"Female", "Male"}
    assert adult.sensitive["race"].nunique() == 5
    groups = adult.sensitive.drop_duplicates()
    assert len(groups) == 10


def test_adult_encoded_predictors_are_numeric_and_identical_across_splits():
    columns = None
    for split in ("train", "val", "test", "all"):
        adult = load_adult(split)
        assert all(dtype == np.float64 for dtype in adult.data.dtypes)
        assert set(np.unique(adult.data.to_numpy())) <= {0.0, 1.0}
        # Exactly one category of each of the three predictors per row.
        np.testing.assert_array_equal(adult.data.sum(axis=1).to_numpy(), 3.0)
        if columns is None:
            columns = list(adult.data.columns)
        assert list(adult.data.columns) == columns
    prefixes = {column.split("_")[0] for column in columns}
    assert prefixes == {"workclass", "education", "marital.status"}
    assert set(load_adult("train").target.unique()) == {0, 1}


def test_adult_descr_has_attribution():
    descr = load_adult().DESCR
    assert "10.24432/C5XW20" in descr
    assert "CC BY 4.0" in descr


def test_adult_bad_arguments():
    with pytest.raises(ValueError, match="split must be one of"):
        load_adult("validation")
    with pytest.raises(ValueError, match="raw must be a bool"):
        load_adult("train", raw="yes")


@pytest.mark.skipif(not SHARED_ADULT.is_dir(), reason="shared data not beside repo")
@pytest.mark.parametrize(
    "split, prefix", [("train", "train"), ("val", "val"), ("test", "tests")]
)
def test_adult_packaged_file_equals_the_source_csvs(split, prefix):
    adult = load_adult(split, raw=True)
    frames = []
    for client in range(1, 6):
        frame = pd.read_csv(SHARED_ADULT / f"{prefix}_S{client}.csv")
        frames.append(
            frame.drop(columns=[c for c in frame.columns if c.startswith("Unnamed")])
        )
    source = pd.concat(frames, ignore_index=True)
    pd.testing.assert_frame_equal(adult.data, source[adult.data.columns])
    np.testing.assert_array_equal(adult.target, source["income.new"])
    pd.testing.assert_frame_equal(adult.sensitive, source[["race", "gender"]])


def test_adult_loads_from_a_built_wheel_without_the_source_tree(tmp_path):
    """The data ship inside the package: an installed wheel alone can load them."""
    wheel_dir = tmp_path / "wheel"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "-q",
            "-w",
            str(wheel_dir),
            str(ROOT),
        ],
        check=True,
        capture_output=True,
    )
    (wheel,) = wheel_dir.glob("skfedida-*.whl")
    site = tmp_path / "site"
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        assert "skfedida/datasets/data/adult_c5.csv.gz" in names
        archive.extractall(site)
    script = textwrap.dedent(f"""
        import skfedida
        assert skfedida.__file__.startswith({str(site)!r}), skfedida.__file__
        from skfedida.datasets import load_adult
        print(len(load_adult("all").data))
    """)
    env = {**os.environ, "PYTHONPATH": str(site)}
    result = subprocess.run(
        [sys.executable, "-c", script],
        cwd=tmp_path,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    assert result.stdout.strip() == "45222"


def test_synthetic_is_reproducible_and_shaped():
    a = make_federated_classification(500, n_clients=3, n_features=4, random_state=1)
    b = make_federated_classification(500, n_clients=3, n_features=4, random_state=1)
    c = make_federated_classification(500, n_clients=3, n_features=4, random_state=2)
    np.testing.assert_array_equal(a.data, b.data)
    np.testing.assert_array_equal(a.target, b.target)
    assert not np.array_equal(a.data, c.data)
    assert a.data.shape == (500, 4)
    assert np.bincount(a.clients).tolist() == [167, 167, 166]
    assert a.group_labels == [
        ("A", "Female"),
        ("A", "Male"),
        ("B", "Female"),
        ("B", "Male"),
    ]
    assert set(a.sensitive) == {"race", "gender"}


def test_synthetic_client_sizes_and_frames():
    fed = make_federated_classification(
        1000,
        n_clients=2,
        client_sizes=[1, 3],
        as_frame=True,
        random_state=0,
        sensitive_attributes={
            "sex": ["F", "M"],
            "age": ["young", "old"],
            "site": ["u", "r"],
        },
    )
    assert fed.clients.value_counts().sort_index().tolist() == [250, 750]
    assert isinstance(fed.data, pd.DataFrame)
    assert list(fed.sensitive.columns) == ["sex", "age", "site"]
    assert fed.group_proportions.shape == (2, 8)


@pytest.mark.parametrize(
    "n_samples, weights",
    [(11, [1, 2, 3, 4]), (20, [1, 1, 1, 1, 1, 1, 3]), (101, [5, 1, 3]), (7, [2, 5])],
)
def test_client_sizes_are_the_nearest_whole_split_of_the_shares(n_samples, weights):
    # Stated behaviour: the rows per client are the whole numbers adding up
    # to n_samples that lie nearest the exact shares n_samples * w / sum(w)
    # (largest remainders rounded up). Reference: every split of floors and
    # ceilings with the right total, searched for the least squared error.
    fed = make_federated_classification(
        n_samples, n_clients=len(weights), client_sizes=weights, random_state=0
    )
    sizes = np.bincount(fed.clients, minlength=len(weights))
    exact = n_samples * np.asarray(weights, float) / np.sum(weights)
    candidates = [
        np.floor(exact) + np.array(up)
        for up in product([0, 1], repeat=len(weights))
        if np.sum(np.floor(exact) + np.array(up)) == n_samples
    ]
    best = min(np.sum((c - exact) ** 2) for c in candidates)
    assert sizes.sum() == n_samples
    assert np.sum((sizes - exact) ** 2) == pytest.approx(best)


def test_synthetic_features_predict_the_outcome():
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import roc_auc_score

    fed = make_federated_classification(4000, class_sep=2.0, random_state=0)
    model = LogisticRegression().fit(fed.data[:3000], fed.target[:3000])
    auc = roc_auc_score(fed.target[3000:], model.predict_proba(fed.data[3000:])[:, 1])
    assert auc > 0.75


def test_synthetic_heterogeneity_spreads_clients_apart():
    homogeneous = make_federated_classification(100, n_clients=6, random_state=0)
    heterogeneous = make_federated_classification(
        100, n_clients=6, heterogeneity=1.0, random_state=0
    )
    assert np.ptp(homogeneous.group_proportions, axis=0).max() == 0
    assert np.ptp(heterogeneous.group_proportions, axis=0).max() > 0.1
    np.testing.assert_allclose(heterogeneous.group_proportions.sum(axis=1), 1.0)


def test_synthetic_heterogeneity_is_the_dirichlet_spread_it_documents():
    """Each client's shares are Dirichlet(p / h): a group of share p varies
    across clients with variance p (1 - p) h / (1 + h), so a larger h spreads
    the clients further apart (400 clients, equal shares of 4 groups)."""
    for heterogeneity in (0.1, 10.0):
        fed = make_federated_classification(
            400, n_clients=400, heterogeneity=heterogeneity, random_state=0
        )
        expected = 0.25 * 0.75 * heterogeneity / (1 + heterogeneity)
        np.testing.assert_allclose(
            fed.group_proportions.var(axis=0, ddof=1), expected, rtol=0.25
        )


def test_synthetic_groups_are_drawn_with_the_normalised_shares():
    """group_proportions are relative: [2, 1, 1, 0] is half, a quarter, a
    quarter and none, by default equal shares; the rows follow them (within
    4 standard errors of the binomial share)."""
    for given, shares in (
        ([2, 1, 1, 0], [0.5, 0.25, 0.25, 0.0]),
        (None, [0.25, 0.25, 0.25, 0.25]),
    ):
        fed = make_federated_classification(
            4000, n_clients=2, group_proportions=given, random_state=0
        )
        np.testing.assert_allclose(fed.group_proportions, [shares, shares])
        rows = zip(*fed.sensitive.values(), strict=True)
        group = np.array([fed.group_labels.index(label) for label in rows])
        observed = np.bincount(group, minlength=4) / group.size
        se = np.sqrt(np.multiply(shares, np.subtract(1, shares)) / group.size)
        assert np.all(np.abs(observed - shares) <= 4 * se + 1e-12)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(n_samples=0), "n_samples must be an int"),
        (dict(n_samples=3, n_clients=5), "at least n_clients"),
        (dict(prevalence=1.5), "prevalence must hold finite values"),
        (dict(prevalence=[0.1, 0.2]), "prevalence has 2 values but there are 4"),
        (dict(group_proportions=np.ones((2, 4))), r"shape \(5, 4\)"),
        (dict(client_sizes=[1, 2]), "client_sizes must hold 5"),
        (dict(heterogeneity=-1.0), "heterogeneity must be"),
        (dict(sensitive_attributes={"race": []}), "at least one value"),
    ],
)
def test_synthetic_bad_parameters(kwargs, message):
    with pytest.raises(ValueError, match=message):
        make_federated_classification(**{"n_samples": 100, **kwargs})


def test_roc_like_reproduces_table_s2():
    roc = make_roc_like(random_state=0)
    assert roc.data.shape == (7425, 7)
    clients = np.asarray(roc.clients)
    race, gender = roc.sensitive["race"], roc.sensitive["gender"]
    # Table S2 (percent): client 1's shares, and two prevalences.
    np.testing.assert_allclose(roc.group_proportions[0, :2], [0.161, 0.397])
    np.testing.assert_allclose(roc.prevalence[1, 0], 0.199)
    n_outside = 0
    for k in range(4):
        in_client = clients == k
        n_k = in_client.sum()
        for g, (r, s) in enumerate(roc.group_labels):
            in_group = in_client & (race == r) & (gender == s)
            p = roc.group_proportions[k, g]
            # Within 4 standard errors of the binomial share.
            se = np.sqrt(p * (1 - p) / n_k)
            n_outside += abs(in_group.sum() / n_k - p) > 4 * se + 1e-12
            prevalence = roc.prevalence[k, g]
            n_g = in_group.sum()
            if n_g >= 20:
                observed = roc.target[in_group].mean()
                se = np.sqrt(prevalence * (1 - prevalence) / n_g)
                n_outside += abs(observed - prevalence) > 4 * se + 1e-12
    assert n_outside == 0
    # Hispanic women of client 3 never have the outcome (0.0% in Table S2).
    hispanic_f_3 = (clients == 2) & (race == "Hispanic") & (gender == "Female")
    assert hispanic_f_3.sum() > 0 and roc.target[hispanic_f_3].sum() == 0
    with pytest.raises(TypeError, match="fixes prevalence"):
        make_roc_like(prevalence=0.5)


@pytest.mark.parametrize("raw", [False, True])
@pytest.mark.parametrize("split", ["train", "test", "all"])
def test_adult_as_arrays_equals_the_frames(split, raw):
    arrays = load_adult(split, raw=raw, as_frame=False)
    frames = load_adult(split, raw=raw)
    assert arrays.feature_names == frames.feature_names
    if raw:
        for j, name in enumerate(arrays.feature_names):
            assert arrays.data[:, j].tolist() == frames.data[name].tolist()
    else:
        assert arrays.data.dtype == np.float64
        np.testing.assert_array_equal(arrays.data, frames.data.to_numpy())
    np.testing.assert_array_equal(arrays.target, frames.target.to_numpy())
    np.testing.assert_array_equal(arrays.clients, frames.clients.to_numpy())
    for name in ("race", "gender"):
        assert arrays.sensitive[name].tolist() == frames.sensitive[name].tolist()


def test_adult_arrays_and_a_federation_need_no_pandas():
    # The install without the pandas extra: as_frame=False reads the shipped
    # file with the standard library, and the arrays train a federation.
    script = (
        "import importlib.abc, sys\n"
        "class NoPandas(importlib.abc.MetaPathFinder):\n"
        "    def find_spec(self, name, path, target=None):\n"
        "        if name.split('.')[0] == 'pandas':\n"
        "            raise ImportError('pandas is not installed')\n"
        "sys.meta_path.insert(0, NoPandas())\n"
        "from skfedida.datasets import load_adult\n"
        "from skfedida.model_selection import make_fedida\n"
        "adult = load_adult('train', as_frame=False)\n"
        "fedida = make_fedida(random_state=0).set_params(n_rounds=1)\n"
        "fedida.fit(adult.data, adult.target, clients=adult.clients,\n"
        "           sensitive_features=adult.sensitive)\n"
        "print(fedida.predict(adult.data[:3]).shape)\n"
        "try:\n"
        "    load_adult('train')\n"
        "except ImportError as exc:\n"
        "    print('as_frame=False' in str(exc))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split() == ["(3,)", "True"]
