"""Mutants of ``skfedida/flower``.

The Flower path is compared with the in-process federation to the last bit,
so a mistake in what the apps send, check or record shows as a difference.
"""

from ._base import Mutant

FLOWER_TESTS = ("tests/test_flower.py",)
GUARD_TESTS = ("tests/test_guard_flower.py",)
RESULT_TESTS = ("tests/test_result_file.py",)
PIPELINE_TESTS = ("tests/test_preprocessing.py",)
APPS = ("make_client_app", "make_server_app")

MUTANTS = [
    Mutant(
        "the ServerApp says nothing of an inactive fairness penalty",
        "run_federation",
        "    warn_if_penalty_inactive(\n        federation,\n",
        "    (lambda *args: None)(\n        federation,\n",
        ("tests/test_backend_parity.py",),
        features=("make_server_app", "InactivePenaltyWarning"),
    ),
    Mutant(
        "a ClientApp's failure is worded as Flower words it",
        "remote_failure",
        'return reason if found is None else f"{found[1]}: {found[2]}"',
        "return reason",
        ("tests/test_backend_parity.py",),
        features=("make_server_app",),
    ),
    Mutant(
        "a client's failure in a round is worded as a stage query's",
        "FlowerTransport._failure",
        "if kind not in ROUND_KINDS:",
        "if True:",
        ("tests/test_backend_parity.py",),
        features=("make_server_app",),
    ),
    Mutant(
        "a node's row weights are taken for an unknown key",
        "_load",
        'if "sample_weight" in loaded:',
        "if False:",
        ("tests/test_backend_parity.py",),
        features=("make_client_app",),
    ),
    Mutant(
        "a run by message names its clients without their nodes",
        "FederatedEstimator._server",
        "            name=name,\n",
        "",
        ("tests/test_guard_flower.py", "tests/test_flower.py"),
        features=("make_server_app",),
    ),
    # -- the ServerApp ---------------------------------------------------------
    Mutant(
        "a node keeps what it trained though the server refused its reply",
        "ClientNode.settle",
        "if int(config[KEPT_ROUND]) == pending_round:",
        "if True:",
        ("tests/test_backend_parity.py",),
        features=("make_client_app",),
    ),
    Mutant(
        "the server never tells a node that its reply was admitted",
        "MessageRounds.keep",
        "self.kept_round[k] = self._training_round",
        "pass",
        ("tests/test_backend_parity.py",),
        features=("make_server_app",),
    ),
    Mutant(
        "a client without evaluation rows is evaluated on its training rows",
        "MessageRounds.evaluate",
        'if self.declared[k].evaluation != "train"',
        "if True",
        ("tests/test_backend_parity.py",),
        features=("make_server_app",),
    ),
    Mutant(
        "decision counts are held to every row loaded, not the training rows",
        "_final_decisions",
        'declared_rows=[sets.sizes["train"] for sets in declared],',
        'declared_rows=[sets.sizes["rows"] for sets in declared],',
        ("tests/test_backend_parity.py",),
        features=("make_server_app", "DegenerateModelWarning"),
    ),
    Mutant(
        "a client skipped at the decision query is recorded before training",
        "_final_decisions",
        '{"round": state["rounds"], **record}',
        '{"round": 0, **record}',
        ("tests/test_backend_parity.py",),
        features=("make_server_app",),
    ),
    Mutant(
        "server app checks only the replies that arrived",
        "MessageRounds._send",
        "return [(k, replies[k]) for k in clients]",
        "return [(k, replies[k]) for k in clients if not isinstance(replies[k], str)]",
        GUARD_TESTS,
        features=("make_server_app",),
    ),
    Mutant(
        "a skipped evaluation is not recorded",
        "skip",
        'record(k)["evaluation_skipped"] = reason',
        "pass",
        GUARD_TESTS,
        features=("make_server_app", "reply:evaluation"),
    ),
    Mutant(
        "the private mean divides by the replies, not the selected",
        "RoundServer._aggregated",
        "n_selected=n_selected,",
        "n_selected=len(results),",
        ("tests/test_guard_federated.py", *GUARD_TESTS),
        features=("make_server_app", "DifferentialPrivacy"),
    ),
    Mutant(
        "server app ignores the run config's overrides",
        "main",
        "plan_for_run(federation, context.run_config),",
        "plan_for_run(federation, {}),",
        FLOWER_TESTS,
        features=("make_server_app",),
    ),
    Mutant(
        "server app ignores the run config's result-key",
        "main",
        'key = context.run_config.get("result-key", result_key)',
        "key = result_key",
        RESULT_TESTS + GUARD_TESTS,
        features=("make_server_app", "load_result"),
    ),
    Mutant(
        "server app starts from the last client's initial model",
        "run_federation",
        '"global_parameters": replies[admitted[0]].arrays(),',
        '"global_parameters": replies[admitted[-1]].arrays(),',
        FLOWER_TESTS,
        features=("make_server_app",),
    ),
    Mutant(
        "server app reports all loaded rows as client_sizes_",
        "run_federation",
        'client_sizes=[sets.sizes["train"] for sets in declared],',
        'client_sizes=[sets.sizes["rows"] for sets in declared],',
        FLOWER_TESTS,
        features=("make_server_app",),
    ),
    Mutant(
        "server app's evaluation summary unweighted",
        "evaluation_summary",
        "[evaluation.rows[k] for k in admitted],",
        "[1.0 for k in admitted],",
        ("tests/test_flower.py", "tests/test_guard_federated.py"),
        features=("make_server_app", "reply:evaluation"),
    ),
    # -- the ClientApp ---------------------------------------------------------
    Mutant(
        "client app weighs its evaluation by its training rows",
        "ClientNode.evaluate",
        "metrics[NUM_EXAMPLES] = int(part.n_evaluation)",
        "metrics[NUM_EXAMPLES] = int(part.train.n)",
        FLOWER_TESTS,
        features=("make_client_app", "reply:evaluation"),
    ),
    Mutant(
        "client app replies with its evaluation rows as its training rows",
        "ClientNode.train",
        "NUM_EXAMPLES: int(trained.n_rows),",
        "NUM_EXAMPLES: int(part.n_evaluation),",
        FLOWER_TESTS,
        features=("make_client_app", "reply:training"),
    ),
    Mutant(
        "client app sends its FairFed counts in the wrong order",
        "ClientNode.train",
        "[trained.report[key] for key in REPORT_KEYS]",
        "[trained.report[key] for key in sorted(REPORT_KEYS)]",
        FLOWER_TESTS,
        features=("make_client_app", "reply:fairness_report"),
    ),
    Mutant(
        "client app writes its model after the first round",
        "ClientNode.evaluate",
        "if round_ == plan.n_rounds and node.record()",
        "if round_ == 1 and node.record()",
        (*FLOWER_TESTS, "tests/flower/test_plain_flower_server.py"),
        features=("make_client_app",),
    ),
    Mutant(
        "run config local-epochs not read",
        "RUN_CONFIG_PARAMETERS",
        '    "local-epochs": "local_epochs",\n',
        "",
        FLOWER_TESTS,
        features=APPS,
    ),
    # -- the statistics codec --------------------------------------------------
    Mutant(
        "codec decodes an array without its dtype",
        "_restore",
        'array = np.array(value["data"], dtype=np.dtype(kind))',
        'array = np.array(value["data"])',
        GUARD_TESTS + PIPELINE_TESTS,
        features=APPS,
    ),
    Mutant(
        "codec decodes a numpy scalar as a Python one",
        "_restore",
        'return np.array(value["value"], dtype=_dtype(value["__scalar__"]))[()]',
        'return value["value"]',
        GUARD_TESTS + PIPELINE_TESTS,
        features=APPS,
    ),
    Mutant(
        "codec decodes a tuple as a list",
        "_restore",
        'return tuple(_restore(item) for item in value["__tuple__"])',
        'return [_restore(item) for item in value["__tuple__"]]',
        GUARD_TESTS + PIPELINE_TESTS,
        features=APPS,
    ),
    # -- the in-process grid and runner ----------------------------------------
    Mutant(
        "InProcessGrid keeps a failed ClientApp's changes to its state",
        "_deliver",
        "context = copy.deepcopy(self.contexts[node])",
        "context = self.contexts[node]",
        GUARD_TESTS + FLOWER_TESTS,
        features=("InProcessGrid",),
    ),
    Mutant(
        "InProcessGrid returns a pulled reply again",
        "pull_messages",
        "replies = [self._pending.pop(i) for i in message_ids if i in self._pending]",
        "replies = [self._pending[i] for i in message_ids if i in self._pending]",
        GUARD_TESTS + FLOWER_TESTS,
        features=("InProcessGrid",),
    ),
    Mutant(
        "run_in_process drops the nodes' extra config",
        "run_in_process",
        "{**config, PARTITION_ID: k, NUM_PARTITIONS: num_partitions}",
        "{PARTITION_ID: k, NUM_PARTITIONS: num_partitions}",
        FLOWER_TESTS,
        features=("run_in_process",),
    ),
    Mutant(
        "run_in_process ignores the run config's result-key",
        "run_in_process",
        'key = result_key if result_key is not None else run_config.get("result-key")',
        "key = result_key",
        RESULT_TESTS + GUARD_TESTS,
        features=("run_in_process",),
    ),
    # -- the result file ---------------------------------------------------------
    Mutant(
        "load_result does not check an unsigned file's digest",
        "load_result",
        "if not hmac.compare_digest(digest, hashlib.sha256(data).digest()):",
        "if not hmac.compare_digest(digest, digest):",
        RESULT_TESTS,
        features=("load_result",),
    ),
    Mutant(
        "load_result loads an unsigned file when given a key",
        "load_result",
        "        if key is not None:\n            raise ValueError(",
        "        if False:\n            raise ValueError(",
        RESULT_TESTS,
        features=("load_result",),
    ),
]

# -- issue 35: Flower's own strategies with skfedida's ClientApp --------------
PLAIN_TESTS = ("tests/flower/test_plain_flower_server.py",)
MUTANTS += [
    Mutant(
        "a node that sets itself up takes client 0's seed",
        "start_without_skfedida_server",
        "seed = int(plan.client_seeds(n_partitions)[partition])",
        "seed = int(plan.client_seeds(n_partitions)[0])",
        PLAIN_TESTS,
        features=("make_client_app",),
    ),
    Mutant(
        "settings only skfedida's server applies are dropped silently",
        "start_without_skfedida_server",
        "        if server_side:\n",
        "        if False:\n",
        PLAIN_TESTS,
        features=("make_client_app",),
    ),
]
