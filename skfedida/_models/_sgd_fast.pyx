# cython: language_level=3, boundscheck=False, wraparound=False
# cython: cdivision=True, initializedcheck=False
"""Minibatch SGD of the penalised models, compiled.

The same steps as ``BaseFairClassifier._minibatch_steps`` (the numpy
reference, tested equal to this to 1e-10): for every minibatch (the rows
``indptr[b]:indptr[b + 1]`` of X), the objective

    sum_i w_i logloss(y_i, s_i) / sum_i w_i + fairness * f(s) + alpha ||coef||^2

with ``s`` the model's scores, its gradient, and a step of ``learning_rate``
halved until the Armijo condition holds. A Python loop over minibatches costs
about 50 numpy calls per step (~0.2 ms); this loop is a few microseconds.

The three loops (``linear_sgd_steps``, ``multinomial_sgd_steps``,
``mlp_sgd_steps``) differ only in their model, a ``_Steps``; every rule is
written once, but for three sums (below):

- the step loop, ``_sgd_steps``: the objective and its gradient per
  minibatch, the status of a non-finite gradient, the standardized penalty
  left out of the trials at constant scores, the Armijo search
  (``_armijo_step``, halving while ``_search_goes_on``; the gradient's
  squared norm is ``_squared_sum``'s) and the running sums of ``average``;
- the linear model, ``_Affine``, with one logit (two classes) or C: the
  scores of a trial step are ``s - t * d`` with ``d = X g_coef +
  g_intercept`` computed once per step (``_affine_scores`` computes both, the
  model being linear); the network is ``_Network``;
- the objective: the logistic loss of one logit (``_objective``) or the
  softmax of C (``_mn_objective``: the penalty of the row-centred logits per
  class column, rows matched on their class), each plus ``fairness`` times
  the penalty and ``alpha ||coef||^2`` (``_squared_sum``);
- the penalties, from per-(group, label) sums of one score column
  (``_cell_sums``), O(rows + groups) per trial, following
  :mod:`skfedida.penalty` formula for formula: ``_group_penalty``,
  ``_individual_penalty``, and for the standardized one
  ``_within_label_variance`` and ``_variance_resolved``; scores constant
  within every label (where it is 0/0) are ``_constant_within_labels``.

Three sums are still written twice, as merging them would change results
in their last bits (which the federation's Flower-vs-in-process tests and the
committed figures rely on): the sums of the group penalty's determinant and
cell gradients have an order of their own for one logit; the standardized
penalty takes its label means from the cell sums there, from the rows in the
softmax, whose gradient also groups its terms differently; and the gradient
of ``alpha ||coef||^2`` starts the linear model's sums but ends the network's.
"""

from libc.math cimport INFINITY, exp, fabs, isfinite, log, log1p, tanh
from libc.string cimport memcpy
from scipy.linalg.cython_blas cimport dgemm
from libc.stdlib cimport calloc, free

import numpy as np

cdef double _TINY = 2.2250738585072014e-308  # np.finfo(np.float64).tiny
cdef double _EPS = 2.220446049250313e-16  # np.finfo(np.float64).eps

# Penalty codes: 0 none, 1 group, 2 individual, 3 group_standardized.


cdef inline bint _search_goes_on(
    Py_ssize_t halvings, int max_halvings, double armijo, double step,
    double squared_norm, double value,
) noexcept nogil:
    """``_fair_base._search_goes_on``: whether the Armijo search halves again.

    Always within ``max_halvings``; after them while the decrease asked for is
    above the round-off of the objective (features of a huge scale need far
    smaller steps; below round-off no trial can pass).
    """
    return (
        halvings < max_halvings
        or armijo * step * squared_norm > _EPS * fabs(value)
    )


cdef inline double _log1pexp(double s) noexcept nogil:
    """log(1 + exp(s)), as np.logaddexp(0, s) computes it."""
    if s > 0:
        return s + log1p(exp(-s))
    return log1p(exp(s))


cdef inline double _expit(double s) noexcept nogil:
    return 1.0 / (1.0 + exp(-s))


cdef double _squared_sum(
    const double* v, Py_ssize_t rows, Py_ssize_t cols, Py_ssize_t ld
) noexcept nogil:
    """||v||^2 of a rows x cols matrix with row stride ``ld``, in row order."""
    cdef Py_ssize_t i, j
    cdef double total = 0.0
    for i in range(rows):
        for j in range(cols):
            total += v[i * ld + j] * v[i * ld + j]
    return total


cdef double _squared_distance(
    const double* a, const double* b, Py_ssize_t n
) noexcept nogil:
    """||a - b||^2 of two vectors of n values, in order."""
    cdef Py_ssize_t i
    cdef double total = 0.0, diff
    for i in range(n):
        diff = a[i] - b[i]
        total += diff * diff
    return total


cdef inline bint _variance_resolved(double variance, double scale) noexcept nogil:
    """``penalty._variance_floor``: a variance above that of constant scores.

    Scores constant within each label have a variance of round-off size,
    about (eps * their largest magnitude)^2, not 0: dividing by it would make
    the standardized penalty noise.
    """
    cdef double floor = 16.0 * _EPS * scale
    return variance > max(_TINY, floor * floor)


cdef class _Workspace:
    """Buffers of one call: per-row scores, per-cell sums, the parameters' gradient.

    Rows hold C score columns (``[i * C + c]``), cells L labels per group
    (``[k * L + l]``): C = 1 and L = 2 for one logit, C = L = n_classes for the
    softmax. ``gradient`` and ``trial_params`` hold n_params values. One
    block, as a call of a few minibatches (a federated client's) pays for
    every allocation.
    """

    cdef double* block
    cdef double* scores
    cdef double* trial
    cdef double* direction
    cdef double* score_gradient
    # The softmax's row-centred logits and their penalty gradient.
    cdef double* u
    cdef double* pen
    cdef double* n
    cdef double* S
    cdef double* Q
    cdef double* cell_gradient
    cdef double* slope
    cdef double* offset
    cdef double* label_n
    cdef double* label_S
    cdef double* label_Q
    cdef double* label_mean
    cdef double* xk
    cdef double* yk
    cdef double* M
    cdef double* R
    cdef double* low
    cdef double* high
    cdef double* gradient
    cdef double* trial_params
    # The one-logit standardized penalty's gradient terms (with label_mean):
    # ratio, variance (0 when the penalty is 0) and the total weight.
    cdef double ratio, variance, total
    # Whether the scores of the last gradient evaluation were constant within
    # each label (the standardized penalty is then 0/0; see
    # BaseFairClassifier._penalty_undefined).
    cdef bint constant

    def __cinit__(
        self, Py_ssize_t max_rows, Py_ssize_t n_columns, Py_ssize_t n_labels,
        Py_ssize_t n_groups, Py_ssize_t n_params,
    ):
        cdef Py_ssize_t rows = max(max_rows, 1) * n_columns
        cdef Py_ssize_t cells = max(n_groups, 1) * n_labels
        cdef Py_ssize_t L = n_labels, params = max(n_params, 1)
        cdef double* p = <double*> calloc(
            6 * rows + 6 * cells + 4 * L + 4 * L + 6 * L * L + 2 * L * n_columns
            + 2 * params,
            sizeof(double),
        )
        if not p:
            raise MemoryError()
        self.block = p
        self.scores = p
        self.trial = self.scores + rows
        self.direction = self.trial + rows
        self.score_gradient = self.direction + rows
        self.u = self.score_gradient + rows
        self.pen = self.u + rows
        self.n = self.pen + rows
        self.S = self.n + cells
        self.Q = self.S + cells
        self.cell_gradient = self.Q + cells
        self.slope = self.cell_gradient + cells
        self.offset = self.slope + cells
        self.label_n = self.offset + cells
        self.label_S = self.label_n + L
        self.label_Q = self.label_S + L
        self.label_mean = self.label_Q + L
        self.xk = self.label_mean + L
        self.yk = self.xk + 2 * L
        self.M = self.yk + 2 * L
        self.R = self.M + 4 * L * L
        self.low = self.R + 2 * L * L
        self.high = self.low + L * n_columns
        self.gradient = self.high + L * n_columns
        self.trial_params = self.gradient + params

    def __dealloc__(self):
        free(self.block)


# -- the penalties, from per-(group, label) sums of one score column ----------


cdef void _cell_sums(
    const double* u, Py_ssize_t stride, const double[::1] y,
    const Py_ssize_t[::1] groups, const double[::1] weight, Py_ssize_t start,
    Py_ssize_t m, Py_ssize_t L, Py_ssize_t n_cells, double* n, double* S,
    double* Q, bint squares,
) noexcept nogil:
    """Weight, weighted score (and, with ``squares``, squared score) sums per cell.

    The scores of rows start:stop are ``u[i * stride]``; cell k * L + l holds
    the rows of group k and label l.
    """
    cdef Py_ssize_t i, r, c
    for c in range(n_cells):
        n[c] = 0.0
        S[c] = 0.0
        Q[c] = 0.0
    for i in range(m):
        r = start + i
        c = L * groups[r] + <Py_ssize_t> y[r]
        n[c] += weight[r]
        S[c] += weight[r] * u[i * stride]
        if squares:
            Q[c] += weight[r] * u[i * stride] * u[i * stride]


cdef bint _constant_within_labels(
    const double* u, Py_ssize_t C, const double[::1] y, Py_ssize_t start,
    Py_ssize_t m, Py_ssize_t L, double* low, double* high,
) noexcept nogil:
    """Whether each of the C score columns is constant within every label present.

    The standardized penalty is 0/0 there (BaseFairClassifier._penalty_undefined).
    Ends at the first row that differs from an earlier one of its label,
    within a few rows unless the scores are constant.
    """
    cdef Py_ssize_t i, c, a
    for a in range(L * C):
        low[a] = INFINITY
        high[a] = -INFINITY
    for i in range(m):
        for c in range(C):
            a = <Py_ssize_t> y[start + i] * C + c
            if u[i * C + c] < low[a]:
                low[a] = u[i * C + c]
            if u[i * C + c] > high[a]:
                high[a] = u[i * C + c]
            if high[a] > low[a]:
                return False
    return True


cdef inline double _cell_row(
    Py_ssize_t k, Py_ssize_t L, const double* n, const double* S,
    const double* label_mean, double* xk,
) noexcept nogil:
    """Group k's row of X = [n_kl, S_kl - n_kl * (label l's mean score)] in xk.

    Returns the group's weight (1 for an empty group), which divides the row
    into Y's: ``penalty._group_1d``'s X and Y, one group at a time.
    """
    cdef Py_ssize_t l
    cdef double total = 0.0
    for l in range(L):
        xk[l] = n[k * L + l]
        xk[L + l] = S[k * L + l] - n[k * L + l] * label_mean[l]
        total += n[k * L + l]
    return total if total != 0 else 1.0


cdef double _group_penalty(
    _Workspace ws, Py_ssize_t K, Py_ssize_t L, double* cell_gradient,
    bint gradient, bint one_logit,
) noexcept nogil:
    """Berk's group penalty from ``ws.n`` and ``ws.S``; ``penalty._group_1d``'s algebra.

    ``ws.n[k * L + l]`` and ``ws.S[k * L + l]`` are the weight and weighted
    score sums of group k and label l; ``cell_gradient[k * L + l]`` receives
    d value / d s_i for a row of unit weight in that cell. Leaves the label
    sums in ``ws.label_n`` and ``ws.label_S`` (and overwrites
    ``ws.label_mean``).
    """
    cdef Py_ssize_t k, l, a, b, L2 = 2 * L
    cdef double grand = 0.0, squares = 0.0, total, W, value, acc
    cdef double* x = ws.xk
    cdef double* M = ws.M
    cdef double* R = ws.R
    for l in range(L):
        ws.label_n[l] = 0.0
        ws.label_S[l] = 0.0
    for k in range(K):
        total = 0.0
        for l in range(L):
            ws.label_n[l] += ws.n[k * L + l]
            ws.label_S[l] += ws.S[k * L + l]
            total += ws.n[k * L + l]
        grand += total
        squares += total * total
    W = 0.5 * (grand * grand - squares)
    if W <= 0:
        if gradient:
            for a in range(K * L):
                cell_gradient[a] = 0.0
        return 0.0
    for l in range(L):
        ws.label_mean[l] = ws.label_S[l] / (
            ws.label_n[l] if ws.label_n[l] != 0 else 1.0
        )
    for a in range(L2 * L2):
        M[a] = 0.0
    for k in range(K):
        total = _cell_row(k, L, ws.n, ws.S, ws.label_mean, x)
        for a in range(L2):
            ws.yk[a] = x[a] / total
        for a in range(L2):
            for b in range(L2):
                M[a * L2 + b] += x[a] * ws.yk[b]
    # value = sum_ab A_ab D_ab - C_ab C_ba, with A = M[:L, :L], C = M[:L, L:],
    # D = M[L:, L:].
    if one_logit:
        # The one-logit loop's own order of the sum (L = 2), which its
        # results are pinned to bit for bit.
        value = M[0] * M[2 * L2 + 2] + M[1] * M[2 * L2 + 3]
        value += M[L2] * M[3 * L2 + 2]
        value += M[L2 + 1] * M[3 * L2 + 3]
        value -= M[2] * M[2] + 2.0 * M[3] * M[L2 + 2] + M[L2 + 3] * M[L2 + 3]
    else:
        value = 0.0
        for a in range(L):
            for b in range(L):
                value += (
                    M[a * L2 + b] * M[(L + a) * L2 + L + b]
                    - M[a * L2 + L + b] * M[b * L2 + L + a]
                )
    value = value / W
    if value < 0.0:
        value = 0.0
    if gradient:
        # R = [-C^T; A] * 2 / W, 2L x L.
        for a in range(L):
            for b in range(L):
                R[a * L + b] = -M[b * L2 + L + a] * (2.0 / W)
                R[(L + a) * L + b] = M[a * L2 + b] * (2.0 / W)
        for k in range(K):
            total = _cell_row(k, L, ws.n, ws.S, ws.label_mean, x)
            for b in range(L):
                if one_logit:
                    acc = x[0] * R[b] + x[1] * R[L + b] + x[2] * R[2 * L + b]
                    acc = acc + x[3] * R[3 * L + b]
                else:
                    acc = 0.0
                    for a in range(L2):
                        acc = acc + x[a] * R[a * L + b]
                cell_gradient[k * L + b] = acc / total
    return value


cdef bint _individual_penalty(
    _Workspace ws, Py_ssize_t K, Py_ssize_t L, bint gradient, double* value
) noexcept nogil:
    """Berk's individual penalty from ``ws.n``, ``ws.S`` and ``ws.Q``.

    ``penalty.individual_penalty``'s algebra: *value receives it (0 when no
    two rows of a label are in different groups, W = 0, when this returns
    False), and with ``gradient`` ``ws.slope`` and ``ws.offset`` receive d
    value / d s_i = (slope s_i - offset) for a row of unit weight in a cell.
    """
    cdef Py_ssize_t k, l, c
    cdef double grand = 0.0, squares = 0.0, t, W, ordered
    for l in range(L):
        ws.label_n[l] = 0.0
        ws.label_S[l] = 0.0
        ws.label_Q[l] = 0.0
    for k in range(K):
        t = 0.0
        for l in range(L):
            ws.label_n[l] += ws.n[k * L + l]
            ws.label_S[l] += ws.S[k * L + l]
            ws.label_Q[l] += ws.Q[k * L + l]
            t += ws.n[k * L + l]
        grand += t
        squares += t * t
    W = 0.5 * (grand * grand - squares)
    if W <= 0:
        value[0] = 0.0
        if gradient:
            for c in range(K * L):
                ws.slope[c] = 0.0
                ws.offset[c] = 0.0
        return False
    ordered = 0.0
    for k in range(K):
        for l in range(L):
            c = k * L + l
            ordered += (ws.label_n[l] - ws.n[c]) * ws.Q[c]
            ordered += ws.n[c] * (ws.label_Q[l] - ws.Q[c])
            ordered -= 2.0 * ws.S[c] * (ws.label_S[l] - ws.S[c])
    value[0] = 0.5 * ordered / W
    if gradient:
        for k in range(K):
            for l in range(L):
                c = k * L + l
                ws.slope[c] = (2.0 / W) * (ws.label_n[l] - ws.n[c])
                ws.offset[c] = (2.0 / W) * (ws.label_S[l] - ws.S[c])
    return True


cdef double _within_label_variance(
    const double* u, Py_ssize_t stride, const double[::1] y,
    const double[::1] weight, Py_ssize_t start, Py_ssize_t m,
    const double* label_mean, double weight_total, double* scale,
) noexcept nogil:
    """The weighted variance of the scores ``u[i * stride]`` about their label's mean.

    The standardized penalty's denominator (``penalty._standardized_1d``);
    *scale receives the scores' largest magnitude, for ``_variance_resolved``.
    """
    cdef Py_ssize_t i, r
    cdef double variance = 0.0, largest = 0.0, residual
    for i in range(m):
        r = start + i
        residual = u[i * stride] - label_mean[<Py_ssize_t> y[r]]
        variance += weight[r] * residual * residual
        largest = max(largest, fabs(u[i * stride]))
    scale[0] = largest
    return variance / weight_total if weight_total > 0 else 0.0


# -- the objectives ---------------------------------------------------------


cdef double _objective(
    _Workspace ws,
    double* s,
    const double[::1] y,
    const Py_ssize_t[::1] groups,
    Py_ssize_t n_groups,
    const double[::1] weight,
    Py_ssize_t start,
    Py_ssize_t stop,
    double fairness,
    int penalty,
    double regularisation,
    bint gradient,
) noexcept nogil:
    """Objective of one logit per row: rows start:stop at scores s (indexed from 0).

    With ``gradient``, ``ws.score_gradient`` receives its derivative in every
    score; the regularisation term is added by value only.
    """
    cdef Py_ssize_t i, r, c, l, m = stop - start
    cdef double total = 0.0, loss = 0.0, value, pen = 0.0, w, si, yi
    cdef double weight_total, group_value, residual, variance, scale
    cdef bint active = fairness > 0 and n_groups > 1
    for i in range(m):
        r = start + i
        w = weight[r]
        total += w
        loss += w * (_log1pexp(s[i]) - y[r] * s[i])
    weight_total = total
    if gradient:
        ws.constant = _constant_within_labels(s, 1, y, start, m, 2, ws.low, ws.high)
    if total == 0:
        total = 1.0
    value = loss / total
    if active:
        _cell_sums(
            s, 1, y, groups, weight, start, m, 2, 2 * n_groups, ws.n, ws.S, ws.Q,
            penalty == 2,
        )
        if penalty == 1 or penalty == 3:
            pen = _group_penalty(ws, n_groups, 2, ws.cell_gradient, gradient, True)
            if penalty == 3:
                group_value = pen
                pen = 0.0
                ws.variance = 0.0
                if group_value != 0.0:
                    # Label means from the cell sums' label totals.
                    for l in range(2):
                        ws.label_mean[l] = (
                            ws.label_S[l] / ws.label_n[l] if ws.label_n[l] > 0
                            else 0.0
                        )
                    variance = _within_label_variance(
                        s, 1, y, weight, start, m, ws.label_mean, weight_total,
                        &scale,
                    )
                    if _variance_resolved(variance, scale):
                        ws.ratio = group_value / variance
                        pen = ws.ratio
                        ws.variance = variance
                        ws.total = weight_total
        elif penalty == 2:
            _individual_penalty(ws, n_groups, 2, gradient, &pen)
        value += fairness * pen
    value += regularisation
    if not gradient:
        return value
    for i in range(m):
        r = start + i
        w = weight[r]
        si = s[i]
        yi = y[r]
        ws.score_gradient[i] = w * (_expit(si) - yi) / total
        if not active:
            continue
        c = 2 * groups[r] + <Py_ssize_t> yi
        if penalty == 1:
            ws.score_gradient[i] += fairness * (ws.cell_gradient[c] * w)
        elif penalty == 2:
            ws.score_gradient[i] += fairness * (
                (ws.slope[c] * si - ws.offset[c]) * w
            )
        elif penalty == 3 and ws.variance != 0.0:
            residual = si - (ws.label_mean[1] if yi != 0 else ws.label_mean[0])
            ws.score_gradient[i] += fairness * (
                (ws.cell_gradient[c] * w - ws.ratio * (2.0 * w * residual / ws.total))
                / ws.variance
            )
    return value


cdef double _mn_objective(
    _Workspace ws,
    double* s,
    const double[::1] y,
    const Py_ssize_t[::1] groups,
    Py_ssize_t n_groups,
    const double[::1] weight,
    Py_ssize_t start,
    Py_ssize_t stop,
    Py_ssize_t C,
    double fairness,
    int penalty,
    double regularisation,
    bint gradient,
) noexcept nogil:
    """Objective of C logits per row: rows start:stop at scores s (m x C, from 0).

    The softmax loss, plus ``fairness`` times the penalty of the row-centred
    logits summed over the class columns, as ``BaseFairClassifier._objective``
    computes it. With ``gradient``, ``ws.score_gradient`` receives its
    derivative in every score (through the centring).
    """
    cdef Py_ssize_t i, r, c, k, l, m = stop - start, K = n_groups
    cdef double total = 0.0, loss = 0.0, value, w, top, row_sum, mean, pen = 0.0
    cdef double group_value, variance, residual, scale, ratio, weight_total, acc
    cdef double individual
    cdef double* u = ws.u
    cdef bint active = fairness > 0 and n_groups > 1
    for i in range(m):
        r = start + i
        w = weight[r]
        total += w
        top = s[i * C]
        for c in range(1, C):
            if s[i * C + c] > top:
                top = s[i * C + c]
        row_sum = 0.0
        for c in range(C):
            row_sum += exp(s[i * C + c] - top)
        loss += w * (top + log(row_sum) - s[i * C + <Py_ssize_t> y[r]])
        mean = 0.0
        for c in range(C):
            mean += s[i * C + c]
        mean /= C
        for c in range(C):
            u[i * C + c] = s[i * C + c] - mean
    weight_total = total
    if total == 0:
        total = 1.0
    value = loss / total
    if gradient:
        ws.constant = _constant_within_labels(u, C, y, start, m, C, ws.low, ws.high)
        for i in range(m * C):
            ws.pen[i] = 0.0
    if active:
        for c in range(C):
            _cell_sums(
                u + c, C, y, groups, weight, start, m, C, K * C, ws.n, ws.S, ws.Q,
                penalty == 2,
            )
            if penalty == 1 or penalty == 3:
                group_value = _group_penalty(
                    ws, K, C, ws.cell_gradient, gradient, False
                )
                if penalty == 1:
                    pen += group_value
                    if gradient:
                        for i in range(m):
                            r = start + i
                            ws.pen[i * C + c] = (
                                ws.cell_gradient[groups[r] * C + <Py_ssize_t> y[r]]
                                * weight[r]
                            )
                elif group_value != 0.0:
                    # Label means from the rows (label_Q holds their weights).
                    for l in range(C):
                        ws.label_mean[l] = 0.0
                        ws.label_Q[l] = 0.0
                    for i in range(m):
                        r = start + i
                        ws.label_mean[<Py_ssize_t> y[r]] += weight[r] * u[i * C + c]
                        ws.label_Q[<Py_ssize_t> y[r]] += weight[r]
                    for l in range(C):
                        ws.label_mean[l] = (
                            ws.label_mean[l] / ws.label_Q[l] if ws.label_Q[l] > 0
                            else 0.0
                        )
                    variance = _within_label_variance(
                        u + c, C, y, weight, start, m, ws.label_mean, weight_total,
                        &scale,
                    )
                    if _variance_resolved(variance, scale):
                        ratio = group_value / variance
                        pen += ratio
                        if gradient:
                            for i in range(m):
                                r = start + i
                                l = <Py_ssize_t> y[r]
                                residual = u[i * C + c] - ws.label_mean[l]
                                ws.pen[i * C + c] = (
                                    ws.cell_gradient[groups[r] * C + l]
                                    - ratio * 2.0 * residual / weight_total
                                ) / variance * weight[r]
            # Code 0 lands here too (Q left 0), unlike in the one-logit
            # objective: kept so, as results must not move; no estimator
            # passes 0.
            elif _individual_penalty(ws, K, C, gradient, &individual):
                pen += individual
                if gradient:
                    for i in range(m):
                        r = start + i
                        k = groups[r] * C + <Py_ssize_t> y[r]
                        ws.pen[i * C + c] = (
                            ws.slope[k] * u[i * C + c] - ws.offset[k]
                        ) * weight[r]
        value += fairness * pen
    value += regularisation
    if not gradient:
        return value
    for i in range(m):
        r = start + i
        w = weight[r]
        top = s[i * C]
        for c in range(1, C):
            if s[i * C + c] > top:
                top = s[i * C + c]
        row_sum = 0.0
        for c in range(C):
            row_sum += exp(s[i * C + c] - top)
        mean = 0.0
        for c in range(C):
            mean += ws.pen[i * C + c]
        mean /= C
        for c in range(C):
            acc = exp(s[i * C + c] - top) / row_sum
            if c == <Py_ssize_t> y[r]:
                acc -= 1.0
            ws.score_gradient[i * C + c] = acc * w / total
            if active:
                ws.score_gradient[i * C + c] += fairness * (ws.pen[i * C + c] - mean)
    return value


# -- the step loop, shared by every model -----------------------------------


cdef class _Steps:
    """One model's part of ``_sgd_steps``; the objective of one logit per row.

    For rows start:stop, ``evaluate`` returns the objective at the current
    parameters and leaves the squared norm of its gradient in
    ``squared_norm``; ``trial`` returns the objective at the parameters
    moved ``step`` against that gradient, and ``take`` makes that move the
    parameters (right after a ``trial`` of the same step); ``accumulate`` adds
    the parameters to their running sums.
    """

    cdef _Workspace ws
    cdef const double[::1] y
    cdef const Py_ssize_t[::1] groups
    cdef const double[::1] weight
    cdef Py_ssize_t n_groups
    cdef double fairness, alpha, squared_norm
    cdef int penalty
    # FedProx's proximal term (mu / 2) ||params - anchor||^2 over every
    # parameter (the model's own layout of them, flat); NULL: none.
    cdef double mu
    cdef const double* anchor
    cdef object anchor_array
    # With an ``order``, minibatch b is the source rows order[indptr[b] :
    # indptr[b + 1]], copied into the buffers the model reads (X_rows, and
    # y, groups and weight above) before its steps: a 128-row copy stays in
    # cache for the three passes over it, where a copy of all the rows in
    # that order (numpy's X[order], once per epoch) costs as much as the
    # steps of a linear model. NULL: the rows in place. (The network's
    # matrix products then start at the buffer, not part way into X[order]:
    # the same results with a BLAS whose sums do not depend on alignment,
    # as OpenBLAS's; MKL's can, outside its reproducible mode.)
    cdef const Py_ssize_t* order
    cdef const double* X_source
    cdef const double* y_source
    cdef const Py_ssize_t* groups_source
    cdef const double* weight_source
    cdef Py_ssize_t ld_source, column_step, n_columns
    cdef double* X_rows
    cdef double* y_rows
    cdef Py_ssize_t* groups_rows
    cdef double* weight_rows
    cdef object row_buffers

    cdef void set_rows(
        self, _Workspace ws, const double[::1] y, const Py_ssize_t[::1] groups,
        Py_ssize_t n_groups, const double[::1] weight, double fairness,
        double alpha, int penalty,
    ):
        self.ws = ws
        self.y = y
        self.groups = groups
        self.n_groups = n_groups
        self.weight = weight
        self.fairness = fairness
        self.alpha = alpha
        self.penalty = penalty

    cdef double objective(
        self, double* s, Py_ssize_t start, Py_ssize_t stop, double fairness,
        double regularisation, bint gradient,
    ) noexcept nogil:
        return _objective(
            self.ws, s, self.y, self.groups, self.n_groups, self.weight, start,
            stop, fairness, self.penalty, regularisation, gradient,
        )

    cdef void gather(self, Py_ssize_t start, Py_ssize_t stop) noexcept nogil:
        """Copy the source rows order[start:stop] into the row buffers."""
        cdef Py_ssize_t i, j, r, d = self.n_columns, step = self.column_step
        cdef const double* source
        cdef double* target
        for i in range(stop - start):
            r = self.order[start + i]
            source = self.X_source + r * self.ld_source
            target = self.X_rows + i * d
            if step == 1:
                memcpy(target, source, d * sizeof(double))
            else:  # a column-major X (a DataFrame's values): no copy of it
                for j in range(d):
                    target[j] = source[j * step]
            self.y_rows[i] = self.y_source[r]
            self.groups_rows[i] = self.groups_source[r]
            self.weight_rows[i] = self.weight_source[r]

    cdef double evaluate(self, Py_ssize_t start, Py_ssize_t stop) noexcept nogil:
        return 0.0

    cdef double trial(
        self, Py_ssize_t start, Py_ssize_t stop, double step, double fairness
    ) noexcept nogil:
        return 0.0

    cdef void take(self, double step) noexcept nogil:
        pass

    cdef void accumulate(self) noexcept nogil:
        pass


cdef void _armijo_step(
    _Steps model, Py_ssize_t start, Py_ssize_t stop, double value,
    double learning_rate, double armijo, int max_halvings, double fairness,
) noexcept nogil:
    """A step of ``learning_rate``, halved until the Armijo condition holds.

    No step when the search gives up first (``_search_goes_on``).
    """
    cdef double step = learning_rate, squared_norm = model.squared_norm
    cdef Py_ssize_t halving = 0
    while True:
        if (
            model.trial(start, stop, step, fairness)
            <= value - armijo * step * squared_norm
        ):
            model.take(step)
            return
        step *= 0.5
        halving += 1
        if not _search_goes_on(
            halving, max_halvings, armijo, step, squared_norm, value
        ):
            return


cdef int _sgd_steps(
    _Steps model, const Py_ssize_t[::1] indptr, double learning_rate,
    double armijo, int max_halvings, bint average, double* values,
) noexcept nogil:
    """One Armijo-safeguarded step per minibatch ``indptr[b]:indptr[b + 1]``.

    Adds (objective before the step) x (rows) to *values; returns 0, or 1 when
    a gradient was not finite (its minibatch is the last one evaluated).
    """
    cdef Py_ssize_t b, start, stop
    cdef double value, trial_fairness
    for b in range(indptr.shape[0] - 1):
        start = indptr[b]
        stop = indptr[b + 1]
        if model.order != NULL:
            model.gather(start, stop)
            stop -= start
            start = 0
        value = model.evaluate(start, stop)
        values[0] += value * (stop - start)
        if not isfinite(model.squared_norm):
            return 1
        # At scores constant within every label the standardized penalty is
        # 0/0, taken as 0, and any step away would pay its whole ratio at
        # once: the trials judge the step on the rest of the objective, as
        # the reference does (BaseFairClassifier._penalty_undefined).
        trial_fairness = model.fairness
        if model.penalty == 3 and model.ws.constant:
            trial_fairness = 0.0
        if model.squared_norm != 0.0:
            _armijo_step(
                model, start, stop, value, learning_rate, armijo, max_halvings,
                trial_fairness,
            )
        if average:
            model.accumulate()
    return 0


cdef Py_ssize_t _max_rows(const Py_ssize_t[::1] indptr) noexcept nogil:
    cdef Py_ssize_t b, rows = 0
    for b in range(indptr.shape[0] - 1):
        if indptr[b + 1] - indptr[b] > rows:
            rows = indptr[b + 1] - indptr[b]
    return rows


cdef bint _gathers(object order):
    """Whether a loop is given an order of rows to gather (and rows in it)."""
    return order is not None and len(order) > 0


cdef object _set_rows(
    _Steps model, _Workspace ws, const double[:, :] X, const double[::1] y,
    const Py_ssize_t[::1] groups, Py_ssize_t n_groups, const double[::1] weight,
    object order, Py_ssize_t max_rows, double fairness, double alpha,
    int penalty,
):
    """``model.set_rows`` on the rows, or on buffers its minibatches are gathered into.

    Returns the array the model's X is: X itself (which must then be
    C-contiguous), or (with an ``order``) the buffer of one minibatch's
    gathered rows, C-contiguous; an X gathered from may have any strides.
    """
    cdef const Py_ssize_t[::1] order_view
    cdef double[:, ::1] X_rows
    cdef double[::1] y_rows, weight_rows
    cdef Py_ssize_t[::1] groups_rows
    if not _gathers(order):
        if X.shape[0] and X.shape[1] and (
            X.strides[1] != sizeof(double)
            or (X.shape[0] > 1 and X.strides[0] != X.shape[1] * sizeof(double))
        ):
            raise ValueError("X must be C-contiguous unless an order is given.")
        model.order = NULL
        model.set_rows(ws, y, groups, n_groups, weight, fairness, alpha, penalty)
        return X
    rows = max(max_rows, 1)
    buffers = (
        order,
        np.zeros((rows, X.shape[1])),
        np.zeros(rows),
        np.zeros(rows, dtype=np.intp),
        np.zeros(rows),
    )
    # The model holds the buffers (and the order) for as long as it points at them.
    model.row_buffers = buffers
    order_view = buffers[0]
    X_rows = buffers[1]
    y_rows = buffers[2]
    groups_rows = buffers[3]
    weight_rows = buffers[4]
    model.order = &order_view[0]
    model.X_source = &X[0, 0] if X.shape[0] else NULL
    model.ld_source = X.strides[0] // sizeof(double)
    model.column_step = X.strides[1] // sizeof(double)
    model.n_columns = X.shape[1]
    model.y_source = &y[0] if y.shape[0] else NULL
    model.groups_source = &groups[0] if groups.shape[0] else NULL
    model.weight_source = &weight[0] if weight.shape[0] else NULL
    model.X_rows = &X_rows[0, 0]
    model.y_rows = &y_rows[0]
    model.groups_rows = &groups_rows[0]
    model.weight_rows = &weight_rows[0]
    model.set_rows(
        ws, y_rows, groups_rows, n_groups, weight_rows, fairness, alpha, penalty
    )
    return buffers[1]


cdef void _set_anchor(_Steps model, double mu, object anchor, Py_ssize_t n) except *:
    """FedProx's term for ``model``: ``mu`` and its anchor (None or mu 0: none)."""
    cdef const double[::1] view
    if anchor is None or mu == 0.0:
        model.anchor = NULL
        return
    model.anchor_array = np.ascontiguousarray(anchor, dtype=np.float64).ravel()
    if model.anchor_array.shape[0] != n:
        raise ValueError(f"anchor has {model.anchor_array.shape[0]} values for {n}")
    view = model.anchor_array
    model.anchor = &view[0]
    model.mu = mu


# -- the linear model: one logit (two classes) or one per class ---------------


cdef void _affine_scores(
    const double* X, Py_ssize_t ldx, Py_ssize_t d, Py_ssize_t start,
    Py_ssize_t m, const double* coef, const double* intercept, Py_ssize_t ldc,
    Py_ssize_t ldb, Py_ssize_t C, double* out,
) noexcept nogil:
    """out[i * C + c] = X[start + i] . coef[c] + intercept[c], summed in feature order.

    X and coef are row-major with row strides ``ldx`` and ``ldc``; class c's
    intercept is ``intercept[c * ldb]``.
    """
    cdef Py_ssize_t i, j, c
    cdef const double* x
    cdef const double* w
    cdef double acc
    # Classes outermost: with one logit the rows' loop is then as tight as
    # a loop of its own.
    for c in range(C):
        w = coef + c * ldc
        for i in range(m):
            x = X + (start + i) * ldx
            acc = intercept[c * ldb]
            for j in range(d):
                acc = acc + x[j] * w[j]
            out[i * C + c] = acc


cdef class _Affine(_Steps):
    """C logits per row, X coef^T + intercept; C = 1 is the one-logit model.

    Pointers into the caller's arrays (row strides ``ldx``, ``ldc``, ``lds``),
    which outlive the model.
    """

    cdef const double* X
    cdef double* coef
    cdef double* intercept
    cdef double* coef_sum
    cdef double* intercept_sum
    cdef Py_ssize_t ldx, ldc, lds, d, C
    cdef bint fit_intercept
    # In the workspace: the gradient, C rows of 1 + d (a class's intercept,
    # then its coefficients: the order its squared norm sums them in), and
    # the coefficients of the last trial.
    cdef double* gradient
    cdef double* trial_coef

    cdef double distance(
        self, const double* coef, Py_ssize_t ldc, const double* gradient,
        double step,
    ) noexcept nogil:
        """||(coef, intercept - step * g_intercept) - anchor||^2, coef first.

        ``gradient`` (C rows of 1 + d, the intercept first) moves the
        intercepts as ``take`` will; NULL: the intercepts as they are.
        """
        cdef Py_ssize_t j, c, C = self.C, d = self.d
        cdef double total = 0.0, diff, intercept
        for c in range(C):
            for j in range(d):
                diff = coef[c * ldc + j] - self.anchor[c * d + j]
                total += diff * diff
        for c in range(C):
            intercept = self.intercept[c]
            if gradient != NULL:
                intercept = intercept - step * gradient[c * (d + 1)]
            diff = intercept - self.anchor[C * d + c]
            total += diff * diff
        return total

    cdef double evaluate(self, Py_ssize_t start, Py_ssize_t stop) noexcept nogil:
        cdef Py_ssize_t i, j, c, m = stop - start, C = self.C, d = self.d
        cdef const double* x
        cdef double value, dd, regularisation, alpha = self.alpha
        cdef double* g
        cdef const double* coef = self.coef
        _affine_scores(
            self.X, self.ldx, d, start, m, coef, self.intercept, self.ldc, 1, C,
            self.ws.scores,
        )
        regularisation = alpha * _squared_sum(coef, C, d, self.ldc)
        if self.anchor != NULL:
            regularisation += 0.5 * self.mu * self.distance(coef, self.ldc, NULL, 0.0)
        value = self.objective(
            self.ws.scores, start, stop, self.fairness, regularisation, True,
        )
        for c in range(C):
            g = self.gradient + c * (d + 1)
            g[0] = 0.0
            for j in range(d):
                g[1 + j] = 2.0 * alpha * coef[c * self.ldc + j]
            if self.anchor != NULL:
                g[0] = self.mu * (self.intercept[c] - self.anchor[C * d + c])
                for j in range(d):
                    g[1 + j] += self.mu * (
                        coef[c * self.ldc + j] - self.anchor[c * d + j]
                    )
            # Each gradient entry sums the rows in order.
            for i in range(m):
                x = self.X + (start + i) * self.ldx
                dd = self.ws.score_gradient[i * C + c]
                g[0] += dd
                for j in range(d):
                    g[1 + j] += dd * x[j]
            if not self.fit_intercept:
                g[0] = 0.0
        self.squared_norm = _squared_sum(self.gradient, C, d + 1, d + 1)
        # The scores move along X g_coef + g_intercept, the model being
        # linear: each trial of the search is then O(rows), not
        # O(rows x features).
        _affine_scores(
            self.X, self.ldx, d, start, m, self.gradient + 1, self.gradient,
            d + 1, d + 1, C, self.ws.direction,
        )
        return value

    cdef double trial(
        self, Py_ssize_t start, Py_ssize_t stop, double step, double fairness
    ) noexcept nogil:
        cdef Py_ssize_t i, j, c, C = self.C, d = self.d
        cdef double regularisation
        cdef double* trial = self.ws.trial
        cdef const double* scores = self.ws.scores
        cdef const double* direction = self.ws.direction
        for i in range((stop - start) * C):
            trial[i] = scores[i] - step * direction[i]
        for c in range(C):
            for j in range(d):
                self.trial_coef[c * d + j] = (
                    self.coef[c * self.ldc + j]
                    - step * self.gradient[c * (d + 1) + 1 + j]
                )
        regularisation = self.alpha * _squared_sum(self.trial_coef, C, d, d)
        if self.anchor != NULL:
            regularisation += 0.5 * self.mu * self.distance(
                self.trial_coef, d, self.gradient, step
            )
        return self.objective(trial, start, stop, fairness, regularisation, False)

    cdef void take(self, double step) noexcept nogil:
        cdef Py_ssize_t j, c, d = self.d
        for c in range(self.C):
            for j in range(d):
                self.coef[c * self.ldc + j] = self.trial_coef[c * d + j]
            self.intercept[c] = (
                self.intercept[c] - step * self.gradient[c * (d + 1)]
            )

    cdef void accumulate(self) noexcept nogil:
        cdef Py_ssize_t j, c
        for c in range(self.C):
            for j in range(self.d):
                self.coef_sum[c * self.lds + j] += self.coef[c * self.ldc + j]
            self.intercept_sum[c] += self.intercept[c]


cdef class _Multinomial(_Affine):
    """The softmax of C logits: the multinomial model."""

    cdef double objective(
        self, double* s, Py_ssize_t start, Py_ssize_t stop, double fairness,
        double regularisation, bint gradient,
    ) noexcept nogil:
        return _mn_objective(
            self.ws, s, self.y, self.groups, self.n_groups, self.weight, start,
            stop, self.C, fairness, self.penalty, regularisation, gradient,
        )


cdef object _affine_steps(
    _Affine model, const double[:, :] X, const double[::1] y,
    const Py_ssize_t[::1] groups, Py_ssize_t n_groups, const double[::1] weight,
    const Py_ssize_t[::1] indptr, double* coef, Py_ssize_t ldc, Py_ssize_t C,
    double* intercept, bint fit_intercept, double fairness, double alpha,
    int penalty, double learning_rate, double armijo, int max_halvings,
    bint average, double* coef_sum, Py_ssize_t lds, double* intercept_sum,
    Py_ssize_t n_labels, object order, double mu, object anchor,
):
    """``_sgd_steps`` of ``model``, set up on the arguments of the two defs."""
    cdef Py_ssize_t d = X.shape[1]
    cdef double values = 0.0
    cdef int status
    cdef _Workspace ws = _Workspace(
        _max_rows(indptr), C, n_labels, n_groups, C * (d + 1) + 1
    )
    cdef const double[:, ::1] X_model = _set_rows(
        model, ws, X, y, groups, n_groups, weight, order, _max_rows(indptr),
        fairness, alpha, penalty,
    )
    model.X = &X_model[0, 0]
    model.ldx = X_model.strides[0] // sizeof(double)
    model.d = d
    model.C = C
    model.coef = coef
    model.ldc = ldc
    model.intercept = intercept
    model.coef_sum = coef_sum
    model.lds = lds
    model.intercept_sum = intercept_sum
    model.fit_intercept = fit_intercept
    # The coefficients' part of the gradient starts 16-byte aligned, as numpy
    # aligns X's rows: misaligned, the loop over features that sums it costs
    # 1-2% of a step.
    model.gradient = ws.gradient + (1 if (<size_t> ws.gradient) % 16 == 0 else 0)
    model.trial_coef = ws.trial_params
    _set_anchor(model, mu, anchor, C * (d + 1))
    with nogil:
        status = _sgd_steps(
            model, indptr, learning_rate, armijo, max_halvings, average, &values
        )
    return values, indptr.shape[0] - 1, status


def linear_sgd_steps(
    const double[:, :] X,
    const double[::1] y,
    const Py_ssize_t[::1] groups,
    Py_ssize_t n_groups,
    const double[::1] weight,
    const Py_ssize_t[::1] indptr,
    const Py_ssize_t[::1] order,
    double[::1] coef,
    double[::1] intercept,
    bint fit_intercept,
    double fairness,
    double alpha,
    int penalty,
    double learning_rate,
    double armijo,
    int max_halvings,
    bint average,
    double[::1] coef_sum,
    double[::1] intercept_sum,
    double mu=0.0,
    object anchor=None,
):
    """One Armijo-safeguarded SGD step per minibatch ``indptr[b]:indptr[b + 1]``.

    Updates ``coef`` and ``intercept`` in place (and adds every iterate to
    ``coef_sum`` and ``intercept_sum`` when ``average``). Returns the sum over
    minibatches of (objective before the step) x (rows), the number of
    minibatches, and a status: 0, or 1 when a gradient was not finite.

    With an ``order`` (None: X's rows as they lie), minibatch b is the rows
    ``order[indptr[b]:indptr[b + 1]]`` of X, y, groups and weight (the caller
    checks that they exist): the steps on ``X[order]``, ``y[order]``, ...,
    to the bit, without that copy.

    With ``mu`` and an ``anchor`` (the coefficients then the intercepts,
    flat), FedProx's term ``(mu / 2) ||(coef, intercept) - anchor||^2`` is in
    the objective and its gradient.
    """
    # The linear model's one-logit case: C = 1 score column, 2 labels.
    return _affine_steps(
        _Affine(), X, y, groups, n_groups, weight, indptr, &coef[0],
        coef.shape[0], 1, &intercept[0], fit_intercept, fairness, alpha, penalty,
        learning_rate, armijo, max_halvings, average, &coef_sum[0],
        coef_sum.shape[0], &intercept_sum[0], 2, order, mu, anchor,
    )


def multinomial_sgd_steps(
    const double[:, :] X,
    const double[::1] y,
    const Py_ssize_t[::1] groups,
    Py_ssize_t n_groups,
    const double[::1] weight,
    const Py_ssize_t[::1] indptr,
    const Py_ssize_t[::1] order,
    double[:, ::1] coef,
    double[::1] intercept,
    bint fit_intercept,
    double fairness,
    double alpha,
    int penalty,
    double learning_rate,
    double armijo,
    int max_halvings,
    bint average,
    double[:, ::1] coef_sum,
    double[::1] intercept_sum,
    double mu=0.0,
    object anchor=None,
):
    """``linear_sgd_steps`` for the multinomial model: C logits per row.

    ``coef`` is (n_classes, n_features) and ``intercept`` (n_classes,); the
    labels in ``y`` are class codes. The same steps as the numpy reference
    (``BaseFairClassifier._minibatch_steps``), tested equal to it.
    """
    cdef Py_ssize_t C = coef.shape[0]
    return _affine_steps(
        _Multinomial(), X, y, groups, n_groups, weight, indptr, &coef[0, 0],
        coef.strides[0] // sizeof(double), C, &intercept[0], fit_intercept,
        fairness, alpha, penalty, learning_rate, armijo, max_halvings, average,
        &coef_sum[0, 0], coef_sum.strides[0] // sizeof(double),
        &intercept_sum[0], C, order, mu, anchor,
    )


# -- the fully connected network (FairMLPClassifier) --------------------------

# Activation codes: 0 relu, 1 tanh, 2 logistic, 3 identity.


cdef inline void _matmul(
    const double* A, const double* B, double* C, int m, int k, int n,
    bint transpose_A, bint transpose_B, double beta,
) noexcept nogil:
    """C (m x n) = op(A) op(B) + beta C, all row-major, through Fortran BLAS.

    Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T, so B is
    passed first. op(A) is m x k, op(B) is k x n.
    """
    cdef char ta = b'T' if transpose_B else b'N'
    cdef char tb = b'T' if transpose_A else b'N'
    cdef int lda = k if not transpose_A else m
    cdef int ldb = n if not transpose_B else k
    cdef int ldc = n
    cdef double one = 1.0
    dgemm(&ta, &tb, &n, &m, &k, &one, <double*> B, &ldb, <double*> A, &lda,
          &beta, C, &ldc)


cdef void _forward(
    const double* X, Py_ssize_t m, const Py_ssize_t[::1] sizes, Py_ssize_t n_layers,
    const double* params, const Py_ssize_t[::1] coef_offset,
    const Py_ssize_t[::1] intercept_offset, int activation,
    double** Z, double** A, double* scores,
) noexcept nogil:
    """Scores of m rows; Z[l] and A[l + 1] receive layer l's pre-activations and
    activations (A[0] is X)."""
    cdef Py_ssize_t l, i, j, n_in, n_out
    cdef const double* inputs = X
    cdef const double* b
    cdef double* out
    cdef double* hidden
    for l in range(n_layers - 1):
        n_in = sizes[l]
        n_out = sizes[l + 1]
        out = Z[l] if l < n_layers - 2 else scores
        b = params + intercept_offset[l]
        for i in range(m):
            memcpy(out + i * n_out, b, n_out * sizeof(double))
        _matmul(inputs, params + coef_offset[l], out, m, n_in, n_out, 0, 0, 1.0)
        if l == n_layers - 2:
            break
        # One loop per activation, branch-free inside: the signs of ReLU's
        # inputs are random, and a branch per value costs more than BLAS.
        # Local pointers, so that the compiler keeps them in registers and
        # vectorises (through A it would reload them at every store).
        hidden = A[l + 1]
        if activation == 0:
            for i in range(m * n_out):
                # A comparison, not fmax: fmax is a libm call per value.
                hidden[i] = out[i] if out[i] > 0.0 else 0.0
        elif activation == 1:
            for i in range(m * n_out):
                hidden[i] = tanh(out[i])
        elif activation == 2:
            for i in range(m * n_out):
                hidden[i] = _expit(out[i])
        else:
            memcpy(hidden, out, m * n_out * sizeof(double))
        inputs = hidden


cdef void _times_derivative(
    double* delta, const double* pre, const double* post, Py_ssize_t size,
    int activation,
) noexcept nogil:
    """delta *= the activation's derivative at pre-activations ``pre`` (``post``)."""
    cdef Py_ssize_t i
    if activation == 0:
        for i in range(size):
            # A select of the factor, not the comparison's 0/1 as one: GCC
            # compiles that into a branch per value, mispredicted on random
            # signs; this it vectorises.
            delta[i] *= 1.0 if pre[i] > 0.0 else 0.0
    elif activation == 1:
        for i in range(size):
            delta[i] *= 1.0 - post[i] * post[i]
    elif activation == 2:
        for i in range(size):
            delta[i] *= post[i] * (1.0 - post[i])


cdef class _Network(_Steps):
    """A fully connected network of one logit: ``params`` flat, weights first."""

    cdef const double[:, ::1] X
    cdef double[::1] params, params_sum
    cdef const Py_ssize_t[::1] sizes
    cdef Py_ssize_t[::1] coef_offset, intercept_offset
    cdef Py_ssize_t n_layers, n_params, n_coef_values
    cdef int activation
    # Per hidden layer: pre-activations Z[l] and activations A[l + 1] (A[0]
    # is the minibatch's X); two delta buffers for back-propagation.
    cdef double** Z
    cdef double** A
    cdef double* delta
    cdef double* delta_next
    cdef object buffers

    def __dealloc__(self):
        free(self.Z)
        free(self.A)

    cdef double evaluate(self, Py_ssize_t start, Py_ssize_t stop) noexcept nogil:
        cdef Py_ssize_t i, j, l, n_in, n_out, m = stop - start
        cdef double value, regularisation, alpha = self.alpha
        cdef double* params = &self.params[0]
        cdef double* gradient = self.ws.gradient
        cdef double* delta = self.delta
        cdef double* delta_next = self.delta_next
        cdef double* swap
        cdef const double* inputs
        self.A[0] = <double*> &self.X[start, 0]
        _forward(
            &self.X[start, 0], m, self.sizes, self.n_layers, params,
            self.coef_offset, self.intercept_offset, self.activation, self.Z,
            self.A, self.ws.scores,
        )
        regularisation = alpha * _squared_sum(
            params, 1, self.n_coef_values, self.n_coef_values
        )
        if self.anchor != NULL:
            regularisation += 0.5 * self.mu * _squared_distance(
                params, self.anchor, self.n_params
            )
        value = self.objective(
            self.ws.scores, start, stop, self.fairness, regularisation, True,
        )
        # Back-propagation, last layer first.
        memcpy(delta, self.ws.score_gradient, m * sizeof(double))
        for l in range(self.n_layers - 2, -1, -1):
            n_in = self.sizes[l]
            n_out = self.sizes[l + 1]
            inputs = self.A[l]
            _matmul(
                inputs, delta, &gradient[self.coef_offset[l]], n_in, m, n_out,
                1, 0, 0.0,
            )
            for j in range(n_out):
                gradient[self.intercept_offset[l] + j] = 0.0
            for i in range(m):
                for j in range(n_out):
                    gradient[self.intercept_offset[l] + j] += delta[i * n_out + j]
            if l > 0:
                _matmul(
                    delta, params + self.coef_offset[l], delta_next, m, n_out,
                    n_in, 0, 1, 0.0,
                )
                _times_derivative(
                    delta_next, self.Z[l - 1], self.A[l], m * n_in, self.activation
                )
                swap = delta
                delta = delta_next
                delta_next = swap
        for i in range(self.n_coef_values):
            gradient[i] += 2.0 * alpha * params[i]
        if self.anchor != NULL:
            for i in range(self.n_params):
                gradient[i] += self.mu * (params[i] - self.anchor[i])
        self.squared_norm = _squared_sum(gradient, 1, self.n_params, self.n_params)
        return value

    cdef double trial(
        self, Py_ssize_t start, Py_ssize_t stop, double step, double fairness
    ) noexcept nogil:
        cdef Py_ssize_t i
        cdef double regularisation
        cdef double* trial = self.ws.trial_params
        cdef const double* params = &self.params[0]
        cdef const double* gradient = self.ws.gradient
        for i in range(self.n_params):
            trial[i] = params[i] - step * gradient[i]
        _forward(
            &self.X[start, 0], stop - start, self.sizes, self.n_layers, trial,
            self.coef_offset, self.intercept_offset, self.activation, self.Z,
            self.A, self.ws.trial,
        )
        regularisation = self.alpha * _squared_sum(
            trial, 1, self.n_coef_values, self.n_coef_values
        )
        if self.anchor != NULL:
            regularisation += 0.5 * self.mu * _squared_distance(
                trial, self.anchor, self.n_params
            )
        return self.objective(
            self.ws.trial, start, stop, fairness, regularisation, False
        )

    cdef void take(self, double step) noexcept nogil:
        memcpy(&self.params[0], self.ws.trial_params, self.n_params * sizeof(double))

    cdef void accumulate(self) noexcept nogil:
        cdef Py_ssize_t i
        for i in range(self.n_params):
            self.params_sum[i] += self.params[i]


def mlp_sgd_steps(
    const double[:, :] X,
    const double[::1] y,
    const Py_ssize_t[::1] groups,
    Py_ssize_t n_groups,
    const double[::1] weight,
    const Py_ssize_t[::1] indptr,
    const Py_ssize_t[::1] order,
    double[::1] params,
    const Py_ssize_t[::1] sizes,
    int activation,
    double fairness,
    double alpha,
    int penalty,
    double learning_rate,
    double armijo,
    int max_halvings,
    bint average,
    double[::1] params_sum,
    double mu=0.0,
    object anchor=None,
):
    """``linear_sgd_steps`` for a fully connected network.

    ``params`` holds the weight matrices (``sizes[l] x sizes[l + 1]``,
    row-major) then the intercepts, flat; only the weights are under the L2
    term. The gradient is back-propagated as ``FairMLPClassifier._backprop``.
    With ``mu`` and an ``anchor`` (laid out as ``params``), FedProx's term
    ``(mu / 2) ||params - anchor||^2`` is in the objective and its gradient.
    """
    cdef Py_ssize_t n_layers = sizes.shape[0], n_params = params.shape[0]
    cdef Py_ssize_t l, max_rows = _max_rows(indptr), widest = 1
    cdef Py_ssize_t n_coef_values = 0
    cdef double values = 0.0
    cdef int status
    coef_offset_array = np.zeros(n_layers - 1, dtype=np.intp)
    intercept_offset_array = np.zeros(n_layers - 1, dtype=np.intp)
    for l in range(n_layers - 1):
        coef_offset_array[l] = n_coef_values
        n_coef_values += sizes[l] * sizes[l + 1]
        widest = max(widest, sizes[l + 1])
    offset = n_coef_values
    for l in range(n_layers - 1):
        intercept_offset_array[l] = offset
        offset += sizes[l + 1]
    if offset != n_params:
        raise ValueError("params do not match the layer sizes")
    cdef _Network model = _Network()
    model.X = _set_rows(
        model, _Workspace(max_rows, 1, 2, n_groups, n_params), X, y, groups,
        n_groups, weight, order, max_rows, fairness, alpha, penalty,
    )
    model.params = params
    model.params_sum = params_sum
    model.sizes = sizes
    model.coef_offset = coef_offset_array
    model.intercept_offset = intercept_offset_array
    model.n_layers = n_layers
    model.n_params = n_params
    model.n_coef_values = n_coef_values
    model.activation = activation
    rows = max(max_rows, 1)
    hidden = [np.zeros(rows * sizes[l + 1]) for l in range(n_layers - 2)]
    activations = [np.zeros(rows * sizes[l + 1]) for l in range(n_layers - 2)]
    deltas = [np.zeros(rows * widest), np.zeros(rows * widest)]
    model.buffers = (hidden, activations, deltas)
    model.Z = <double**> calloc(n_layers, sizeof(double*))
    model.A = <double**> calloc(n_layers, sizeof(double*))
    if not model.Z or not model.A:
        raise MemoryError()
    cdef double[::1] view
    for l in range(n_layers - 2):
        view = hidden[l]
        model.Z[l] = &view[0]
        view = activations[l]
        model.A[l + 1] = &view[0]
    view = deltas[0]
    model.delta = &view[0]
    view = deltas[1]
    model.delta_next = &view[0]
    _set_anchor(model, mu, anchor, n_params)
    with nogil:
        status = _sgd_steps(
            model, indptr, learning_rate, armijo, max_halvings, average, &values
        )
    return values, indptr.shape[0] - 1, status
