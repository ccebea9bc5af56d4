# cython: language_level=3, boundscheck=False, wraparound=False
# cython: cdivision=True, initializedcheck=False
"""Minibatch SGD of the penalised logistic model, compiled.

The same steps as ``BaseFairClassifier._minibatch_steps`` (the numpy
reference, tested equal to this to 1e-10): for every minibatch (the rows
``indptr[b]:indptr[b + 1]`` of X), the objective

    sum_i w_i logloss(y_i, s_i) / sum_i w_i + fairness * f(s) + alpha ||coef||^2

with ``s = X coef + intercept``, its gradient, and a step of ``learning_rate``
halved until the Armijo condition holds. A Python loop over minibatches costs
about 50 numpy calls per step (~0.2 ms); this loop is a few microseconds.

Two things make it cheaper than the reference beyond the interpreter: the
scores of a trial step are ``s - t * d`` with ``d = X g_coef + g_intercept``
computed once per step (the model is linear), and the penalty of a trial is
computed from per-(group, label) sums of the trial scores, O(rows + groups).
The penalties follow :mod:`skfedida.penalty` formula for formula.

``multinomial_sgd_steps`` takes the same steps for more than two classes: C
logits per row under a softmax, the penalty of the row-centred logits per
class column with rows matched on the true class (C labels).
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


cdef double _group_penalty(
    Py_ssize_t n_groups, double* n, double* S, double* cell_gradient, bint gradient
) noexcept nogil:
    """Berk's group penalty from cell sums; ``penalty.group_penalty``'s algebra.

    ``n[2k + y]`` and ``S[2k + y]`` are the weight and weighted score sums of
    group k and label y; ``cell_gradient[2k + y]`` receives d value / d s_i
    for a row of unit weight in that cell.
    """
    cdef Py_ssize_t k, i, j, c
    cdef double l0 = 0.0, l1 = 0.0, ls0 = 0.0, ls1 = 0.0
    cdef double total, grand = 0.0, squares = 0.0, W, value, mean0, mean1
    cdef double x[4]
    cdef double y[4]
    cdef double M[4][4]
    cdef double R[4][2]
    for k in range(n_groups):
        l0 += n[2 * k]
        l1 += n[2 * k + 1]
        ls0 += S[2 * k]
        ls1 += S[2 * k + 1]
        total = n[2 * k] + n[2 * k + 1]
        grand += total
        squares += total * total
    W = 0.5 * (grand * grand - squares)
    if W <= 0:
        if gradient:
            for c in range(2 * n_groups):
                cell_gradient[c] = 0.0
        return 0.0
    mean0 = ls0 / (l0 if l0 != 0 else 1.0)
    mean1 = ls1 / (l1 if l1 != 0 else 1.0)
    for i in range(4):
        for j in range(4):
            M[i][j] = 0.0
    for k in range(n_groups):
        x[0] = n[2 * k]
        x[1] = n[2 * k + 1]
        x[2] = S[2 * k] - x[0] * mean0
        x[3] = S[2 * k + 1] - x[1] * mean1
        total = x[0] + x[1]
        if total == 0:
            total = 1.0
        for j in range(4):
            y[j] = x[j] / total
        for i in range(4):
            for j in range(4):
                M[i][j] += x[i] * y[j]
    value = M[0][0] * M[2][2] + M[0][1] * M[2][3] + M[1][0] * M[3][2]
    value += M[1][1] * M[3][3]
    value -= M[0][2] * M[0][2] + 2.0 * M[0][3] * M[1][2] + M[1][3] * M[1][3]
    value = value / W
    if value < 0.0:
        value = 0.0
    if gradient:
        for c in range(2):
            R[0][c] = -M[c][2] * (2.0 / W)
            R[1][c] = -M[c][3] * (2.0 / W)
            R[2][c] = M[0][c] * (2.0 / W)
            R[3][c] = M[1][c] * (2.0 / W)
        for k in range(n_groups):
            x[0] = n[2 * k]
            x[1] = n[2 * k + 1]
            x[2] = S[2 * k] - x[0] * mean0
            x[3] = S[2 * k + 1] - x[1] * mean1
            total = x[0] + x[1]
            if total == 0:
                total = 1.0
            for c in range(2):
                cell_gradient[2 * k + c] = (
                    x[0] * R[0][c] + x[1] * R[1][c] + x[2] * R[2][c] + x[3] * R[3][c]
                ) / total
    return value


cdef class _Workspace:
    """Buffers of one call: per-row scores, directions and gradients, per-cell sums."""

    cdef double* scores
    cdef double* trial
    cdef double* direction
    cdef double* score_gradient
    cdef double* n
    cdef double* S
    cdef double* Q
    cdef double* cell_gradient
    cdef double* slope
    cdef double* offset
    # The standardized penalty's gradient terms: label means, ratio, variance
    # (0 when the penalty is 0) and the total weight.
    cdef double mean[2]
    cdef double ratio, variance, total
    # Whether the scores of the last gradient evaluation were constant within
    # each label (the standardized penalty is then 0/0; see
    # BaseFairClassifier._penalty_undefined).
    cdef bint constant

    def __cinit__(self, Py_ssize_t max_rows, Py_ssize_t n_cells):
        self.scores = <double*> calloc(max_rows + 1, sizeof(double))
        self.trial = <double*> calloc(max_rows + 1, sizeof(double))
        self.direction = <double*> calloc(max_rows + 1, sizeof(double))
        self.score_gradient = <double*> calloc(max_rows + 1, sizeof(double))
        self.n = <double*> calloc(n_cells + 2, sizeof(double))
        self.S = <double*> calloc(n_cells + 2, sizeof(double))
        self.Q = <double*> calloc(n_cells + 2, sizeof(double))
        self.cell_gradient = <double*> calloc(n_cells + 2, sizeof(double))
        self.slope = <double*> calloc(n_cells + 2, sizeof(double))
        self.offset = <double*> calloc(n_cells + 2, sizeof(double))
        if (
            not self.scores or not self.trial or not self.direction
            or not self.score_gradient or not self.n or not self.S or not self.Q
            or not self.cell_gradient or not self.slope or not self.offset
        ):
            raise MemoryError()

    def __dealloc__(self):
        free(self.scores)
        free(self.trial)
        free(self.direction)
        free(self.score_gradient)
        free(self.n)
        free(self.S)
        free(self.Q)
        free(self.cell_gradient)
        free(self.slope)
        free(self.offset)


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
    """Objective of rows start:stop at scores s (indexed from 0).

    With ``gradient``, ``ws.score_gradient`` receives its derivative in every
    score; the regularisation term is added by value only.
    """
    cdef Py_ssize_t i, r, c, k, m = stop - start, n_cells = 2 * n_groups
    cdef double total = 0.0, loss = 0.0, value, pen = 0.0, w, si, yi
    cdef double group_value, N0, N1, S0, S1, Q0, Q1, ordered, W, grand, squares, t
    cdef double mean0, mean1, residual, variance, ratio, label_total, scale, floor
    cdef bint active = fairness > 0 and n_groups > 1
    cdef double low0 = INFINITY, high0 = -INFINITY, low1 = INFINITY, high1 = -INFINITY
    for i in range(m):
        r = start + i
        w = weight[r]
        total += w
        loss += w * (_log1pexp(s[i]) - y[r] * s[i])
        if y[r] != 0:
            low1 = min(low1, s[i])
            high1 = max(high1, s[i])
        else:
            low0 = min(low0, s[i])
            high0 = max(high0, s[i])
    if gradient:
        ws.constant = (low0 >= high0 or low0 == INFINITY) and (
            low1 >= high1 or low1 == INFINITY
        )
    if total == 0:
        total = 1.0
    value = loss / total
    if active:
        for c in range(n_cells):
            ws.n[c] = 0.0
            ws.S[c] = 0.0
            ws.Q[c] = 0.0
        for i in range(m):
            r = start + i
            c = 2 * groups[r] + <Py_ssize_t> y[r]
            ws.n[c] += weight[r]
            ws.S[c] += weight[r] * s[i]
            if penalty == 2:
                ws.Q[c] += weight[r] * s[i] * s[i]
        if penalty == 1 or penalty == 3:
            pen = _group_penalty(n_groups, ws.n, ws.S, ws.cell_gradient, gradient)
            if penalty == 3:
                group_value = pen
                pen = 0.0
                if group_value != 0.0:
                    N0 = N1 = S0 = S1 = 0.0
                    for k in range(n_groups):
                        N0 += ws.n[2 * k]
                        N1 += ws.n[2 * k + 1]
                        S0 += ws.S[2 * k]
                        S1 += ws.S[2 * k + 1]
                    mean0 = S0 / N0 if N0 > 0 else 0.0
                    mean1 = S1 / N1 if N1 > 0 else 0.0
                    label_total = 0.0
                    variance = 0.0
                    scale = 0.0
                    for i in range(m):
                        r = start + i
                        residual = s[i] - (mean1 if y[r] != 0 else mean0)
                        variance += weight[r] * residual * residual
                        label_total += weight[r]
                        scale = max(scale, fabs(s[i]))
                    variance = variance / label_total if label_total > 0 else 0.0
                    # penalty._variance_floor: constant scores up to round-off.
                    floor = 16.0 * _EPS * scale
                    if variance > max(_TINY, floor * floor):
                        ratio = group_value / variance
                        pen = ratio
                        ws.mean[0] = mean0
                        ws.mean[1] = mean1
                        ws.ratio = ratio
                        ws.variance = variance
                        ws.total = label_total
                    else:
                        ws.variance = 0.0
                else:
                    ws.variance = 0.0
        elif penalty == 2:
            N0 = N1 = S0 = S1 = Q0 = Q1 = 0.0
            grand = 0.0
            squares = 0.0
            for k in range(n_groups):
                N0 += ws.n[2 * k]
                N1 += ws.n[2 * k + 1]
                S0 += ws.S[2 * k]
                S1 += ws.S[2 * k + 1]
                Q0 += ws.Q[2 * k]
                Q1 += ws.Q[2 * k + 1]
                t = ws.n[2 * k] + ws.n[2 * k + 1]
                grand += t
                squares += t * t
            W = 0.5 * (grand * grand - squares)
            if W > 0:
                ordered = 0.0
                for k in range(n_groups):
                    ordered += (N0 - ws.n[2 * k]) * ws.Q[2 * k]
                    ordered += ws.n[2 * k] * (Q0 - ws.Q[2 * k])
                    ordered -= 2.0 * ws.S[2 * k] * (S0 - ws.S[2 * k])
                    ordered += (N1 - ws.n[2 * k + 1]) * ws.Q[2 * k + 1]
                    ordered += ws.n[2 * k + 1] * (Q1 - ws.Q[2 * k + 1])
                    ordered -= 2.0 * ws.S[2 * k + 1] * (S1 - ws.S[2 * k + 1])
                pen = 0.5 * ordered / W
                if gradient:
                    for k in range(n_groups):
                        ws.slope[2 * k] = (2.0 / W) * (N0 - ws.n[2 * k])
                        ws.slope[2 * k + 1] = (2.0 / W) * (N1 - ws.n[2 * k + 1])
                        ws.offset[2 * k] = (2.0 / W) * (S0 - ws.S[2 * k])
                        ws.offset[2 * k + 1] = (2.0 / W) * (S1 - ws.S[2 * k + 1])
            elif gradient:
                for c in range(n_cells):
                    ws.slope[c] = 0.0
                    ws.offset[c] = 0.0
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
            residual = si - (ws.mean[1] if yi != 0 else ws.mean[0])
            ws.score_gradient[i] += fairness * (
                (ws.cell_gradient[c] * w - ws.ratio * (2.0 * w * residual / ws.total))
                / ws.variance
            )
    return value


def linear_sgd_steps(
    const double[:, ::1] X,
    const double[::1] y,
    const Py_ssize_t[::1] groups,
    Py_ssize_t n_groups,
    const double[::1] weight,
    const Py_ssize_t[::1] indptr,
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
):
    """One Armijo-safeguarded SGD step per minibatch ``indptr[b]:indptr[b + 1]``.

    Updates ``coef`` and ``intercept`` in place (and adds every iterate to
    ``coef_sum`` and ``intercept_sum`` when ``average``). Returns the sum over
    minibatches of (objective before the step) x (rows), the number of
    minibatches, and a status: 0, or 1 when a gradient was not finite.
    """
    cdef Py_ssize_t n_batches = indptr.shape[0] - 1, n_features = X.shape[1]
    cdef Py_ssize_t b, i, j, r, start, stop, m, max_rows = 0, halving
    cdef double value, trial_value, squared_norm, grad_b, step, reg, acc, d
    cdef double values = 0.0, trial_fairness
    cdef int status = 0
    for b in range(n_batches):
        if indptr[b + 1] - indptr[b] > max_rows:
            max_rows = indptr[b + 1] - indptr[b]
    cdef _Workspace ws = _Workspace(max_rows, 2 * n_groups)
    cdef double[::1] grad_coef = np.zeros(n_features)
    with nogil:
        for b in range(n_batches):
            start = indptr[b]
            stop = indptr[b + 1]
            m = stop - start
            for i in range(m):
                r = start + i
                acc = intercept[0]
                for j in range(n_features):
                    acc = acc + X[r, j] * coef[j]
                ws.scores[i] = acc
            reg = 0.0
            for j in range(n_features):
                reg += coef[j] * coef[j]
            value = _objective(
                ws, ws.scores, y, groups, n_groups, weight, start, stop,
                fairness, penalty, alpha * reg, True,
            )
            values += value * m
            for j in range(n_features):
                grad_coef[j] = 2.0 * alpha * coef[j]
            grad_b = 0.0
            for i in range(m):
                r = start + i
                d = ws.score_gradient[i]
                grad_b += d
                for j in range(n_features):
                    grad_coef[j] += d * X[r, j]
            if not fit_intercept:
                grad_b = 0.0
            squared_norm = grad_b * grad_b
            for j in range(n_features):
                squared_norm += grad_coef[j] * grad_coef[j]
            if not isfinite(squared_norm):
                status = 1
                break
            trial_fairness = fairness
            if penalty == 3 and ws.constant:
                trial_fairness = 0.0
            if squared_norm != 0.0:
                for i in range(m):
                    r = start + i
                    acc = grad_b
                    for j in range(n_features):
                        acc = acc + X[r, j] * grad_coef[j]
                    ws.direction[i] = acc
                step = learning_rate
                halving = 0
                while True:
                    for i in range(m):
                        ws.trial[i] = ws.scores[i] - step * ws.direction[i]
                    reg = 0.0
                    for j in range(n_features):
                        d = coef[j] - step * grad_coef[j]
                        reg += d * d
                    trial_value = _objective(
                        ws, ws.trial, y, groups, n_groups, weight, start, stop,
                        trial_fairness, penalty, alpha * reg, False,
                    )
                    if trial_value <= value - armijo * step * squared_norm:
                        for j in range(n_features):
                            coef[j] = coef[j] - step * grad_coef[j]
                        intercept[0] = intercept[0] - step * grad_b
                        break
                    step *= 0.5
                    halving += 1
                    if not _search_goes_on(
                        halving, max_halvings, armijo, step, squared_norm, value
                    ):
                        break
            if average:
                for j in range(n_features):
                    coef_sum[j] += coef[j]
                intercept_sum[0] += intercept[0]
    return values, n_batches, status


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


cdef double _squared_coefs(
    const double* params, Py_ssize_t n_coef_values
) noexcept nogil:
    cdef Py_ssize_t i
    cdef double total = 0.0
    for i in range(n_coef_values):
        total += params[i] * params[i]
    return total


def mlp_sgd_steps(
    const double[:, ::1] X,
    const double[::1] y,
    const Py_ssize_t[::1] groups,
    Py_ssize_t n_groups,
    const double[::1] weight,
    const Py_ssize_t[::1] indptr,
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
):
    """``linear_sgd_steps`` for a fully connected network.

    ``params`` holds the weight matrices (``sizes[l] x sizes[l + 1]``,
    row-major) then the intercepts, flat; only the weights are under the L2
    term. The gradient is back-propagated as ``FairMLPClassifier._backprop``.
    """
    cdef Py_ssize_t n_layers = sizes.shape[0], n_batches = indptr.shape[0] - 1
    cdef Py_ssize_t n_params = params.shape[0], widest = 1
    cdef Py_ssize_t b, i, j, l, start, stop, m, max_rows = 0, halving, n_in, n_out
    cdef Py_ssize_t n_coef_values = 0
    cdef double value, trial_value, squared_norm, step, reg, d, values = 0.0
    cdef double trial_fairness
    cdef int status = 0
    for b in range(n_batches):
        if indptr[b + 1] - indptr[b] > max_rows:
            max_rows = indptr[b + 1] - indptr[b]
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
    cdef Py_ssize_t[::1] coef_offset = coef_offset_array
    cdef Py_ssize_t[::1] intercept_offset = intercept_offset_array
    cdef _Workspace ws = _Workspace(max_rows, 2 * n_groups)
    # Per hidden layer: pre-activations and activations; two delta buffers.
    buffers = [np.zeros(max(max_rows, 1) * sizes[l + 1]) for l in range(n_layers - 2)]
    activations = [np.zeros(max(max_rows, 1) * sizes[l + 1]) for l in range(n_layers - 2)]
    cdef double** Z = <double**> calloc(n_layers, sizeof(double*))
    cdef double** A = <double**> calloc(n_layers, sizeof(double*))
    cdef double[::1] view
    for l in range(n_layers - 2):
        view = buffers[l]
        Z[l] = &view[0]
        view = activations[l]
        A[l + 1] = &view[0]
    cdef double[::1] delta_array = np.zeros(max(max_rows, 1) * widest)
    cdef double[::1] delta_next_array = np.zeros(max(max_rows, 1) * widest)
    cdef double[::1] gradient = np.zeros(n_params)
    cdef double[::1] trial = np.zeros(n_params)
    cdef double* delta = &delta_array[0]
    cdef double* delta_next = &delta_next_array[0]
    cdef double* swap
    cdef double* pre
    cdef double* post
    cdef const double* inputs
    try:
        with nogil:
            for b in range(n_batches):
                start = indptr[b]
                stop = indptr[b + 1]
                m = stop - start
                A[0] = <double*> &X[start, 0]
                _forward(
                    &X[start, 0], m, sizes, n_layers, &params[0], coef_offset,
                    intercept_offset, activation, Z, A, ws.scores,
                )
                reg = _squared_coefs(&params[0], n_coef_values)
                value = _objective(
                    ws, ws.scores, y, groups, n_groups, weight, start, stop,
                    fairness, penalty, alpha * reg, True,
                )
                values += value * m
                # Back-propagation, last layer first.
                memcpy(delta, ws.score_gradient, m * sizeof(double))
                for l in range(n_layers - 2, -1, -1):
                    n_in = sizes[l]
                    n_out = sizes[l + 1]
                    inputs = A[l]
                    _matmul(
                        inputs, delta, &gradient[coef_offset[l]], n_in, m, n_out,
                        1, 0, 0.0,
                    )
                    for j in range(n_out):
                        gradient[intercept_offset[l] + j] = 0.0
                    for i in range(m):
                        for j in range(n_out):
                            gradient[intercept_offset[l] + j] += delta[i * n_out + j]
                    if l > 0:
                        _matmul(
                            delta, &params[coef_offset[l]], delta_next, m, n_out,
                            n_in, 0, 1, 0.0,
                        )
                        pre = Z[l - 1]
                        post = A[l]
                        if activation == 0:
                            for i in range(m * n_in):
                                delta_next[i] *= pre[i] > 0.0
                        elif activation == 1:
                            for i in range(m * n_in):
                                delta_next[i] *= 1.0 - post[i] * post[i]
                        elif activation == 2:
                            for i in range(m * n_in):
                                delta_next[i] *= post[i] * (1.0 - post[i])
                        swap = delta
                        delta = delta_next
                        delta_next = swap
                for i in range(n_coef_values):
                    gradient[i] += 2.0 * alpha * params[i]
                squared_norm = 0.0
                for i in range(n_params):
                    squared_norm += gradient[i] * gradient[i]
                if not isfinite(squared_norm):
                    status = 1
                    break
                trial_fairness = fairness
                if penalty == 3 and ws.constant:
                    trial_fairness = 0.0
                if squared_norm != 0.0:
                    step = learning_rate
                    halving = 0
                    while True:
                        for i in range(n_params):
                            trial[i] = params[i] - step * gradient[i]
                        _forward(
                            &X[start, 0], m, sizes, n_layers, &trial[0],
                            coef_offset, intercept_offset, activation, Z, A,
                            ws.trial,
                        )
                        reg = _squared_coefs(&trial[0], n_coef_values)
                        trial_value = _objective(
                            ws, ws.trial, y, groups, n_groups, weight, start,
                            stop, trial_fairness, penalty, alpha * reg, False,
                        )
                        if trial_value <= value - armijo * step * squared_norm:
                            memcpy(&params[0], &trial[0], n_params * sizeof(double))
                            break
                        step *= 0.5
                        halving += 1
                        if not _search_goes_on(
                            halving, max_halvings, armijo, step, squared_norm, value
                        ):
                            break
                if average:
                    for i in range(n_params):
                        params_sum[i] += params[i]
    finally:
        free(Z)
        free(A)
    return values, n_batches, status


# -- the multinomial model (FairPenaltyLogisticRegression, > 2 classes) --------


cdef inline double _cell_row(
    Py_ssize_t k, Py_ssize_t L, double[:, ::1] n, double[:, ::1] S,
    double[::1] label_n, double[::1] label_S, double[::1] xk,
) noexcept nogil:
    """Group k's row of X = [n_kl, S_kl - n_kl * (label l's mean score)] in xk.

    Returns the group's weight (1 for an empty group), which divides the row
    into Y's: ``penalty._group_1d``'s X and Y, one group at a time.
    """
    cdef Py_ssize_t l
    cdef double total = 0.0
    for l in range(L):
        xk[l] = n[k, l]
        xk[L + l] = S[k, l] - n[k, l] * (
            label_S[l] / (label_n[l] if label_n[l] != 0 else 1.0)
        )
        total += n[k, l]
    return total if total != 0 else 1.0


cdef double _mn_group_column(
    Py_ssize_t K, Py_ssize_t L, double[:, ::1] n, double[:, ::1] S,
    double[::1] label_n, double[::1] label_S, double[::1] xk, double[::1] yk,
    double[:, ::1] M, double[:, ::1] R, double[:, ::1] cell_gradient, bint gradient,
) noexcept nogil:
    """``penalty._group_1d`` for one score column, from its cell sums.

    ``n[k, l]`` and ``S[k, l]`` are the weight and weighted score sums of group
    k and label l (L labels); ``cell_gradient[k, l]`` receives d value / d s_i
    for a row of unit weight in that cell. M is 2L x 2L, R 2L x L.
    """
    cdef Py_ssize_t k, l, a, b
    cdef double grand = 0.0, squares = 0.0, total, W, value, acc
    for l in range(L):
        label_n[l] = 0.0
        label_S[l] = 0.0
    for k in range(K):
        total = 0.0
        for l in range(L):
            label_n[l] += n[k, l]
            label_S[l] += S[k, l]
            total += n[k, l]
        grand += total
        squares += total * total
    W = 0.5 * (grand * grand - squares)
    if W <= 0:
        if gradient:
            for k in range(K):
                for l in range(L):
                    cell_gradient[k, l] = 0.0
        return 0.0
    for a in range(2 * L):
        for b in range(2 * L):
            M[a, b] = 0.0
    for k in range(K):
        total = _cell_row(k, L, n, S, label_n, label_S, xk)
        for a in range(2 * L):
            yk[a] = xk[a] / total
        for a in range(2 * L):
            for b in range(2 * L):
                M[a, b] += xk[a] * yk[b]
    value = 0.0
    for a in range(L):
        for b in range(L):
            value += M[a, b] * M[L + a, L + b] - M[a, L + b] * M[b, L + a]
    value = value / W
    if value < 0.0:
        value = 0.0
    if gradient:
        # R = [-C^T; A] * 2 / W with A = M[:L, :L], C = M[:L, L:].
        for a in range(L):
            for b in range(L):
                R[a, b] = -M[b, L + a] * (2.0 / W)
                R[L + a, b] = M[a, b] * (2.0 / W)
        for k in range(K):
            total = _cell_row(k, L, n, S, label_n, label_S, xk)
            for b in range(L):
                acc = 0.0
                for a in range(2 * L):
                    acc = acc + xk[a] * R[a, b]
                cell_gradient[k, b] = acc / total
    return value


cdef class _MultinomialWorkspace:
    """Buffers of one multinomial call: per-row scores, per-cell sums."""

    cdef double[:, ::1] s, u, trial, direction, score_gradient, pen
    cdef double[:, ::1] n, S, Q, cell_gradient, slope, offset, M, R
    cdef double[::1] label_n, label_S, label_Q, xk, yk, label_mean
    cdef bint constant

    def __cinit__(self, Py_ssize_t max_rows, Py_ssize_t n_classes, Py_ssize_t n_groups):
        rows = max(max_rows, 1)
        self.s = np.zeros((rows, n_classes))
        self.u = np.zeros((rows, n_classes))
        self.trial = np.zeros((rows, n_classes))
        self.direction = np.zeros((rows, n_classes))
        self.score_gradient = np.zeros((rows, n_classes))
        self.pen = np.zeros((rows, n_classes))
        groups = max(n_groups, 1)
        self.n = np.zeros((groups, n_classes))
        self.S = np.zeros((groups, n_classes))
        self.Q = np.zeros((groups, n_classes))
        self.cell_gradient = np.zeros((groups, n_classes))
        self.slope = np.zeros((groups, n_classes))
        self.offset = np.zeros((groups, n_classes))
        self.M = np.zeros((2 * n_classes, 2 * n_classes))
        self.R = np.zeros((2 * n_classes, n_classes))
        self.label_n = np.zeros(n_classes)
        self.label_S = np.zeros(n_classes)
        self.label_Q = np.zeros(n_classes)
        self.xk = np.zeros(2 * n_classes)
        self.yk = np.zeros(2 * n_classes)
        self.label_mean = np.zeros(n_classes)


cdef double _mn_objective(
    _MultinomialWorkspace ws,
    double[:, ::1] s,
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
    """Objective of rows start:stop at scores s (m x C, indexed from 0).

    The softmax loss, plus ``fairness`` times the penalty of the row-centred
    logits summed over the class columns, as ``BaseFairClassifier._objective``
    computes it. With ``gradient``, ``ws.score_gradient`` receives its
    derivative in every score (through the centring).
    """
    cdef Py_ssize_t i, r, c, k, l, m = stop - start, K = n_groups
    cdef double total = 0.0, loss = 0.0, value, w, top, row_sum, mean, pen = 0.0
    cdef double group_value, variance, residual, scale, floor, ratio, W, grand
    cdef double squares, ordered, t, weight_total, acc
    cdef bint active = fairness > 0 and n_groups > 1
    cdef bint constant = True
    for i in range(m):
        r = start + i
        w = weight[r]
        total += w
        top = s[i, 0]
        for c in range(1, C):
            if s[i, c] > top:
                top = s[i, c]
        row_sum = 0.0
        for c in range(C):
            row_sum += exp(s[i, c] - top)
        loss += w * (top + log(row_sum) - s[i, <Py_ssize_t> y[r]])
        mean = 0.0
        for c in range(C):
            mean += s[i, c]
        mean /= C
        for c in range(C):
            ws.u[i, c] = s[i, c] - mean
    weight_total = total
    if total == 0:
        total = 1.0
    value = loss / total
    if gradient:
        # Constant centred logits within every label present: the
        # standardized penalty is 0/0 (BaseFairClassifier._penalty_undefined).
        for l in range(C):
            for c in range(C):
                ws.n[0, c] = INFINITY  # low
                ws.S[0, c] = -INFINITY  # high
            for i in range(m):
                if <Py_ssize_t> y[start + i] == l:
                    for c in range(C):
                        if ws.u[i, c] < ws.n[0, c]:
                            ws.n[0, c] = ws.u[i, c]
                        if ws.u[i, c] > ws.S[0, c]:
                            ws.S[0, c] = ws.u[i, c]
            for c in range(C):
                if ws.n[0, c] != INFINITY and ws.S[0, c] > ws.n[0, c]:
                    constant = False
        ws.constant = constant
        for i in range(m):
            for c in range(C):
                ws.pen[i, c] = 0.0
    if active:
        for c in range(C):
            for k in range(K):
                for l in range(C):
                    ws.n[k, l] = 0.0
                    ws.S[k, l] = 0.0
                    ws.Q[k, l] = 0.0
            for i in range(m):
                r = start + i
                k = groups[r]
                l = <Py_ssize_t> y[r]
                ws.n[k, l] += weight[r]
                ws.S[k, l] += weight[r] * ws.u[i, c]
                if penalty == 2:
                    ws.Q[k, l] += weight[r] * ws.u[i, c] * ws.u[i, c]
            if penalty == 1 or penalty == 3:
                group_value = _mn_group_column(
                    K, C, ws.n, ws.S, ws.label_n, ws.label_S, ws.xk, ws.yk,
                    ws.M, ws.R, ws.cell_gradient, gradient,
                )
                if penalty == 1:
                    pen += group_value
                    if gradient:
                        for i in range(m):
                            r = start + i
                            ws.pen[i, c] = (
                                ws.cell_gradient[groups[r], <Py_ssize_t> y[r]]
                                * weight[r]
                            )
                elif group_value != 0.0:
                    # Divided by the weighted within-label variance of the
                    # column (penalty._standardized_1d).
                    for l in range(C):
                        ws.label_mean[l] = 0.0
                        ws.label_Q[l] = 0.0
                    for i in range(m):
                        r = start + i
                        ws.label_mean[<Py_ssize_t> y[r]] += weight[r] * ws.u[i, c]
                        ws.label_Q[<Py_ssize_t> y[r]] += weight[r]
                    for l in range(C):
                        ws.label_mean[l] = (
                            ws.label_mean[l] / ws.label_Q[l] if ws.label_Q[l] > 0
                            else 0.0
                        )
                    variance = 0.0
                    scale = 0.0
                    for i in range(m):
                        r = start + i
                        residual = ws.u[i, c] - ws.label_mean[<Py_ssize_t> y[r]]
                        variance += weight[r] * residual * residual
                        scale = max(scale, fabs(ws.u[i, c]))
                    variance = variance / weight_total if weight_total > 0 else 0.0
                    floor = 16.0 * _EPS * scale
                    if variance > max(_TINY, floor * floor):
                        ratio = group_value / variance
                        pen += ratio
                        if gradient:
                            for i in range(m):
                                r = start + i
                                residual = ws.u[i, c] - ws.label_mean[<Py_ssize_t> y[r]]
                                ws.pen[i, c] = (
                                    ws.cell_gradient[groups[r], <Py_ssize_t> y[r]]
                                    - ratio * 2.0 * residual / weight_total
                                ) / variance * weight[r]
            else:  # individual
                grand = 0.0
                squares = 0.0
                for l in range(C):
                    ws.label_n[l] = 0.0
                    ws.label_S[l] = 0.0
                    ws.label_Q[l] = 0.0
                for k in range(K):
                    t = 0.0
                    for l in range(C):
                        ws.label_n[l] += ws.n[k, l]
                        ws.label_S[l] += ws.S[k, l]
                        ws.label_Q[l] += ws.Q[k, l]
                        t += ws.n[k, l]
                    grand += t
                    squares += t * t
                W = 0.5 * (grand * grand - squares)
                if W > 0:
                    ordered = 0.0
                    for k in range(K):
                        for l in range(C):
                            ordered += (ws.label_n[l] - ws.n[k, l]) * ws.Q[k, l]
                            ordered += ws.n[k, l] * (ws.label_Q[l] - ws.Q[k, l])
                            ordered -= 2.0 * ws.S[k, l] * (ws.label_S[l] - ws.S[k, l])
                    pen += 0.5 * ordered / W
                    if gradient:
                        for i in range(m):
                            r = start + i
                            k = groups[r]
                            l = <Py_ssize_t> y[r]
                            ws.pen[i, c] = (
                                (2.0 / W) * (ws.label_n[l] - ws.n[k, l]) * ws.u[i, c]
                                - (2.0 / W) * (ws.label_S[l] - ws.S[k, l])
                            ) * weight[r]
        value += fairness * pen
    value += regularisation
    if not gradient:
        return value
    for i in range(m):
        r = start + i
        w = weight[r]
        top = s[i, 0]
        for c in range(1, C):
            if s[i, c] > top:
                top = s[i, c]
        row_sum = 0.0
        for c in range(C):
            row_sum += exp(s[i, c] - top)
        mean = 0.0
        for c in range(C):
            mean += ws.pen[i, c]
        mean /= C
        for c in range(C):
            acc = exp(s[i, c] - top) / row_sum
            if c == <Py_ssize_t> y[r]:
                acc -= 1.0
            ws.score_gradient[i, c] = acc * w / total
            if active:
                ws.score_gradient[i, c] += fairness * (ws.pen[i, c] - mean)
    return value


def multinomial_sgd_steps(
    const double[:, ::1] X,
    const double[::1] y,
    const Py_ssize_t[::1] groups,
    Py_ssize_t n_groups,
    const double[::1] weight,
    const Py_ssize_t[::1] indptr,
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
):
    """``linear_sgd_steps`` for the multinomial model: C logits per row.

    ``coef`` is (n_classes, n_features) and ``intercept`` (n_classes,); the
    labels in ``y`` are class codes. The same steps as the numpy reference
    (``BaseFairClassifier._minibatch_steps``), tested equal to it.
    """
    cdef Py_ssize_t n_batches = indptr.shape[0] - 1, d = X.shape[1]
    cdef Py_ssize_t C = coef.shape[0]
    cdef Py_ssize_t b, i, j, r, c, start, stop, m, max_rows = 0, halving
    cdef double value, trial_value, squared_norm, step, reg, acc, dd
    cdef double values = 0.0, trial_fairness
    cdef int status = 0
    for b in range(n_batches):
        if indptr[b + 1] - indptr[b] > max_rows:
            max_rows = indptr[b + 1] - indptr[b]
    cdef _MultinomialWorkspace ws = _MultinomialWorkspace(max_rows, C, n_groups)
    cdef double[:, ::1] grad_coef = np.zeros((C, d))
    cdef double[::1] grad_b = np.zeros(C)
    with nogil:
        for b in range(n_batches):
            start = indptr[b]
            stop = indptr[b + 1]
            m = stop - start
            for i in range(m):
                r = start + i
                for c in range(C):
                    acc = intercept[c]
                    for j in range(d):
                        acc = acc + X[r, j] * coef[c, j]
                    ws.s[i, c] = acc
            reg = 0.0
            for c in range(C):
                for j in range(d):
                    reg += coef[c, j] * coef[c, j]
            value = _mn_objective(
                ws, ws.s, y, groups, n_groups, weight, start, stop, C,
                fairness, penalty, alpha * reg, True,
            )
            values += value * m
            for c in range(C):
                grad_b[c] = 0.0
                for j in range(d):
                    grad_coef[c, j] = 2.0 * alpha * coef[c, j]
            for i in range(m):
                r = start + i
                for c in range(C):
                    dd = ws.score_gradient[i, c]
                    grad_b[c] += dd
                    for j in range(d):
                        grad_coef[c, j] += dd * X[r, j]
            if not fit_intercept:
                for c in range(C):
                    grad_b[c] = 0.0
            squared_norm = 0.0
            for c in range(C):
                squared_norm += grad_b[c] * grad_b[c]
                for j in range(d):
                    squared_norm += grad_coef[c, j] * grad_coef[c, j]
            if not isfinite(squared_norm):
                status = 1
                break
            trial_fairness = fairness
            if penalty == 3 and fairness > 0 and ws.constant:
                trial_fairness = 0.0
            if squared_norm != 0.0:
                for i in range(m):
                    r = start + i
                    for c in range(C):
                        acc = grad_b[c]
                        for j in range(d):
                            acc = acc + X[r, j] * grad_coef[c, j]
                        ws.direction[i, c] = acc
                step = learning_rate
                halving = 0
                while True:
                    for i in range(m):
                        for c in range(C):
                            ws.trial[i, c] = ws.s[i, c] - step * ws.direction[i, c]
                    reg = 0.0
                    for c in range(C):
                        for j in range(d):
                            dd = coef[c, j] - step * grad_coef[c, j]
                            reg += dd * dd
                    trial_value = _mn_objective(
                        ws, ws.trial, y, groups, n_groups, weight, start, stop, C,
                        trial_fairness, penalty, alpha * reg, False,
                    )
                    if trial_value <= value - armijo * step * squared_norm:
                        for c in range(C):
                            for j in range(d):
                                coef[c, j] = coef[c, j] - step * grad_coef[c, j]
                            intercept[c] = intercept[c] - step * grad_b[c]
                        break
                    step *= 0.5
                    halving += 1
                    if not _search_goes_on(
                        halving, max_halvings, armijo, step, squared_norm, value
                    ):
                        break
            if average:
                for c in range(C):
                    for j in range(d):
                        coef_sum[c, j] += coef[c, j]
                    intercept_sum[c] += intercept[c]
    return values, n_batches, status
