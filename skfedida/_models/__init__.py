"""The fairness-penalised classifiers' core, in one place.

``_penalty.py`` (the group penalties and their codes in the compiled
loops), ``_fair_base.py`` (what the classifiers share: validation, the
minibatch loop, the numpy reference of the compiled loops, the client
trainer's checked-input entries), ``_sgd_fast.pyx`` (the compiled loops),
``_logistic.py`` (``FairPenaltyLogisticRegression``) and ``_mlp.py``
(``FairMLPClassifier``). Users import the estimators from
``skfedida.linear_model`` and ``skfedida.neural_network`` and the
penalties from ``skfedida.penalty``.
"""
