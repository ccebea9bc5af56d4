"""What the server checks in a client's reply before using it: the one gate.

One package for the in-process federation and the Flower ServerApp,
for every kind of reply a server reads: training and evaluation replies,
initialisation replies (class counts), score histograms (group thresholds),
FairFed's fairness reports and the preprocessing statistics
(``_statistics``) and the trees' queries (``_tree_rules``,
``_tree_histograms``). The rules are the same for every kind (``_checks``):

- the reply has the form the server asked for: known keys, arrays of the
  expected shape and of a numeric (not boolean, string or object) dtype;
- numbers are finite (NaN only where a statistic is undefined, e.g. the
  extremes of a column without a value);
- counts are whole numbers >= 0 and never more than the rows they count;
- groups are tuples of one value per sensitive attribute, labels the
  federation's, and every count of rows adds up to the rows the client
  declared: when it joined (``declared_rows``) and in any earlier reply about
  the same rows (``_ledger.ClientLedger``), so a client cannot claim two different
  things about one set of rows across rounds or reply kinds;
- statistics obey what the maths implies (a sum of n values lies within n
  times their extremes; a sum of squares lies between sum**2 / n and the
  largest the extremes allow).

A reply that fails is that client's failure, named, and handled by
``on_client_error`` like any other (``_policy.ReplyGate``). A reply of the right form
that is consistent with itself can still be false (a client that swaps its
labels and keeps its totals): no check can see it, and what it can move is
bounded by the client's share of the rows; bounding a hostile parameter
update is the aggregator's job (``aggregation="median"`` or
``"trimmed_mean"``), and the class priors have ``prior_aggregation="median"``.

Its modules, one concern each: ``_checks`` (the rules every kind shares),
``_model`` (training and evaluation replies), ``_rows`` (replies about a
client's rows), ``_ledger`` (what each client claimed before),
``_statistics`` (the preprocessing statistics), ``_tree_rules``,
``_tree_histograms`` and ``_tree_ledger`` (the trees' queries),
``_policy`` (what a failing reply does: ``on_client_error``) and
``_history`` (the round records it writes into).
"""
