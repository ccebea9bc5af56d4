"""ClientStratifiedKFold (federated/_split.py), called directly.

test_federated.py checks one stratified split and a search that routes the
clients; here the splitter's own promises over many layouts: folds partition
the rows, every (client, outcome) stratum is spread as evenly as it can be
(not merely every client, or every outcome), clients of any type, no
outcome, and the metadata request that lets a search pass ``clients``.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skfedida.federated import ClientStratifiedKFold


@st.composite
def layouts(draw):
    """(clients, y, n_splits): every (client, outcome) stratum >= n_splits rows."""
    n_splits = draw(st.integers(2, 4))
    sizes = draw(
        st.lists(
            st.tuples(st.integers(n_splits, 12), st.integers(n_splits, 12)),
            min_size=1,
            max_size=4,
        )
    )
    clients, y = [], []
    for client, (negatives, positives) in enumerate(sizes):
        clients += [f"c{client}"] * (negatives + positives)
        y += [0] * negatives + [1] * positives
    order = draw(st.permutations(range(len(y))))
    return np.array(clients)[order], np.array(y)[order], n_splits


@settings(max_examples=40, deadline=None)
@given(layouts(), st.booleans())
def test_folds_partition_the_rows_and_spread_every_stratum(layout, shuffle):
    clients, y, n_splits = layout
    cv = ClientStratifiedKFold(
        n_splits, shuffle=shuffle, random_state=0 if shuffle else None
    )
    folds = list(cv.split(np.zeros((len(y), 1)), y, clients=clients))
    assert len(folds) == n_splits == cv.get_n_splits()
    tested = np.concatenate([test for _, test in folds])
    # Every row is validated exactly once, and trained on in the other folds.
    assert sorted(tested.tolist()) == list(range(len(y)))
    for train, test in folds:
        assert np.intersect1d(train, test).size == 0
        assert train.size + test.size == len(y)
    # Each (client, outcome) stratum of c rows puts floor or ceil of
    # c / n_splits rows into every fold: a splitter that stratified by
    # client alone, or merged two strata, would not.
    for client in np.unique(clients):
        for label in (0, 1):
            stratum = (clients == client) & (y == label)
            size = int(stratum.sum())
            for _, test in folds:
                assert int(stratum[test].sum()) in (
                    size // n_splits,
                    -(-size // n_splits),
                )


def test_strata_are_client_and_outcome_pairs_not_their_codes_added():
    # Client codes plus outcome codes would merge (a, 1) with (b, 0) into one
    # stratum of four rows, which one fold could fill with both of a's
    # positives; pairs give each fold one row of every two-row stratum.
    clients = np.repeat(["a", "b"], 4)
    y = np.array([0, 0, 1, 1, 0, 0, 1, 1])
    for _, test in ClientStratifiedKFold(2).split(y, y, clients=clients):
        pairs = sorted(zip(clients[test].tolist(), y[test].tolist(), strict=True))
        assert pairs == [("a", 0), ("a", 1), ("b", 0), ("b", 1)]


def test_without_outcomes_the_folds_spread_every_client():
    clients = np.repeat([10, 20, 30], [4, 6, 8])
    cv = ClientStratifiedKFold(2)
    for _, test in cv.split(np.zeros(18), clients=clients):
        assert np.bincount(
            np.unique(clients, return_inverse=True)[1][test]
        ).tolist() == [
            2,
            3,
            4,
        ]


def test_any_outcome_and_client_values_split_as_their_codes_do():
    # Strings, floats or ints: only which rows share a value matters.
    clients = np.repeat([0, 1], 8)
    y = np.tile([0, 1, 1, 0], 4)
    coded = [
        test.tolist()
        for _, test in ClientStratifiedKFold(2).split(y, y, clients=clients)
    ]
    named = [
        test.tolist()
        for _, test in ClientStratifiedKFold(2).split(
            y,
            np.where(y == 1, "yes", "no"),
            clients=np.where(clients == 1, 0.5, -2.0).tolist(),
        )
    ]
    assert coded == named


def test_the_shuffle_follows_the_random_state():
    clients = np.repeat([0, 1], 20)
    y = np.tile([0, 1], 20)

    def folds(**options):
        cv = ClientStratifiedKFold(4, **options)
        return [test.tolist() for _, test in cv.split(y, y, clients=clients)]

    assert folds(shuffle=True, random_state=1) == folds(shuffle=True, random_state=1)
    assert folds(shuffle=True, random_state=1) != folds(shuffle=True, random_state=2)
    assert folds() == folds()


def test_a_search_is_asked_for_the_clients_of_its_fit():
    routing = ClientStratifiedKFold().get_metadata_routing()
    assert routing.consumes("split", ["clients", "groups"]) == {"clients"}


def test_n_splits_below_two_is_refused():
    with pytest.raises(ValueError, match="n_splits"):
        ClientStratifiedKFold(1)


def test_clients_are_needed_and_must_match_the_rows():
    cv = ClientStratifiedKFold(2)
    y = np.zeros(4)
    with pytest.raises(ValueError, match=r"needs clients="):
        next(cv.split(y, y))
    with pytest.raises(ValueError, match="clients has 3 ids for 4 rows"):
        next(cv.split(y, y, clients=[0, 0, 1]))
