"""The one place where private scikit-learn and imbalanced-learn names are imported.

skfedida follows scikit-learn's conventions, and a few of them have no public
API yet: parameter constraints and the ``validate_params`` decorator of public
functions, metadata requests, the scorer base classes, the search and K-fold
bases, sample-weight and fit-context helpers. Every such import lives here,
so that an upgrade of either library that moves one of them breaks in one
file, and the rest of the package imports only public names or these. The
federated transformers (skfedida.preprocessing) also reuse the parents'
own helpers (zero-scale handling, category uniques and lookups, missing
masks) so that their statistics match the parents' exactly.

Each private name is given here under the name the package uses (the same
without its leading underscore), so that no underscore name crosses from
this module into another package (``tests/test_project.py`` checks both).
"""

import functools

from imblearn.utils._validation import check_target_type
from sklearn._loss.loss import HalfBinomialLoss
from sklearn.base import _fit_context as fit_context
from sklearn.ensemble._hist_gradient_boosting.binning import _BinMapper as BinMapper
from sklearn.ensemble._hist_gradient_boosting.common import (
    G_H_DTYPE,
    HISTOGRAM_DTYPE,
    X_BINNED_DTYPE,
)
from sklearn.ensemble._hist_gradient_boosting.grower import TreeGrower
from sklearn.ensemble._hist_gradient_boosting.histogram import HistogramBuilder
from sklearn.ensemble._hist_gradient_boosting.predictor import TreePredictor
from sklearn.ensemble._hist_gradient_boosting.splitting import SplitInfo, Splitter
from sklearn.metrics._scorer import _BaseScorer as BaseScorer
from sklearn.metrics._scorer import _cached_call as cached_call
from sklearn.metrics._scorer import _Scorer as Scorer
from sklearn.model_selection._search import BaseSearchCV
from sklearn.model_selection._split import _BaseKFold as BaseKFold
from sklearn.preprocessing._data import _handle_zeros_in_scale as handle_zeros_in_scale
from sklearn.preprocessing._data import _is_constant_feature as is_constant_feature
from sklearn.utils import _safe_indexing as safe_indexing
from sklearn.utils._encode import _map_to_integer as map_to_integer
from sklearn.utils._encode import _unique as unique_values
from sklearn.utils._mask import _get_mask as get_mask
from sklearn.utils._metadata_requests import MetadataRequest, MethodMetadataRequest
from sklearn.utils._missing import is_scalar_nan
from sklearn.utils._openmp_helpers import (
    _openmp_effective_n_threads as openmp_effective_n_threads,
)
from sklearn.utils._param_validation import (
    HasMethods,
    Hidden,
    Interval,
    StrOptions,
    validate_params,
)
from sklearn.utils.metadata_routing import _raise_for_params as raise_for_params
from sklearn.utils.metadata_routing import _routing_enabled as routing_enabled
from sklearn.utils.multiclass import (
    _check_partial_fit_first_call as check_partial_fit_first_call,
)
from sklearn.utils.optimize import _check_optimize_result as check_optimize_result
from sklearn.utils.validation import _check_monotonic_cst as check_monotonic_cst
from sklearn.utils.validation import _check_sample_weight as check_sample_weight
from sklearn.utils.validation import _num_samples as num_samples


class CachedParamNamesMixin:
    """Read an estimator class's parameter names once, not on every call.

    scikit-learn reads them from the signature of ``__init__`` (``inspect``)
    on every ``get_params``, ``set_params`` and ``clone``; the federated client
    trainer clones the sampler every round of every client, so the signature
    was read hundreds of times per fit (about 5% of a FedIDA fit on Adult).
    A class's signature does not change, so the names are kept per class.
    """

    @classmethod
    def _get_param_names(cls):
        return list(_param_names(cls))


@functools.cache
def _param_names(cls):
    return tuple(super(CachedParamNamesMixin, cls)._get_param_names())


__all__ = [
    "G_H_DTYPE",
    "HISTOGRAM_DTYPE",
    "X_BINNED_DTYPE",
    "BaseKFold",
    "BaseScorer",
    "BaseSearchCV",
    "BinMapper",
    "CachedParamNamesMixin",
    "HalfBinomialLoss",
    "HasMethods",
    "Hidden",
    "HistogramBuilder",
    "Interval",
    "MetadataRequest",
    "MethodMetadataRequest",
    "Scorer",
    "SplitInfo",
    "Splitter",
    "StrOptions",
    "TreeGrower",
    "TreePredictor",
    "cached_call",
    "check_monotonic_cst",
    "check_optimize_result",
    "check_partial_fit_first_call",
    "check_sample_weight",
    "check_target_type",
    "fit_context",
    "get_mask",
    "handle_zeros_in_scale",
    "is_constant_feature",
    "is_scalar_nan",
    "map_to_integer",
    "num_samples",
    "openmp_effective_n_threads",
    "raise_for_params",
    "routing_enabled",
    "safe_indexing",
    "unique_values",
    "validate_params",
]
