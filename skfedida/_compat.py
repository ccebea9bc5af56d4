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
"""

from imblearn.utils._validation import check_target_type
from sklearn.base import _fit_context
from sklearn.metrics._scorer import _BaseScorer, _cached_call, _Scorer
from sklearn.model_selection._search import BaseSearchCV
from sklearn.model_selection._split import _BaseKFold
from sklearn.preprocessing._data import _handle_zeros_in_scale, _is_constant_feature
from sklearn.utils import _safe_indexing
from sklearn.utils._encode import _map_to_integer, _unique
from sklearn.utils._mask import _get_mask
from sklearn.utils._metadata_requests import MetadataRequest, MethodMetadataRequest
from sklearn.utils._param_validation import (
    HasMethods,
    Hidden,
    Interval,
    StrOptions,
    validate_params,
)
from sklearn.utils.metadata_routing import _raise_for_params, _routing_enabled
from sklearn.utils.multiclass import _check_partial_fit_first_call
from sklearn.utils.optimize import _check_optimize_result
from sklearn.utils.validation import (
    _check_sample_weight,
    _num_samples,
)

__all__ = [
    "BaseSearchCV",
    "HasMethods",
    "Hidden",
    "Interval",
    "MetadataRequest",
    "MethodMetadataRequest",
    "StrOptions",
    "_BaseKFold",
    "_BaseScorer",
    "_Scorer",
    "_cached_call",
    "_check_optimize_result",
    "_check_partial_fit_first_call",
    "_check_sample_weight",
    "_fit_context",
    "_get_mask",
    "_handle_zeros_in_scale",
    "_is_constant_feature",
    "_map_to_integer",
    "_num_samples",
    "_raise_for_params",
    "_routing_enabled",
    "_safe_indexing",
    "_unique",
    "check_target_type",
    "validate_params",
]
