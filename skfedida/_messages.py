"""The keys of what a federation's server and clients say to each other.

Each key is defined here once: the clients write them (in-process and as a
Flower ClientApp), the ServerApp and the in-process server read them, and
the reply gate (``skfedida._gate``) checks the values under them, so the
gate, below every backend, needs them too. ``tests/test_project.py`` fails
when a key is written as a literal anywhere else in the package.

The values are Flower's spelling (``"num-examples"`` is the key Flower's own
strategies weight by; ``"partition-id"`` and ``"num-partitions"`` are the
node config keys of Flower's simulation engine).
"""

#: Rows a training reply's update rests on (Flower's strategies weight by it).
NUM_EXAMPLES = "num-examples"
#: A training reply's mean loss over its epochs.
TRAIN_LOSS = "train-loss"
#: Declared at discovery: every row the client loaded, and its evaluation
#: rows (every later count of its rows must agree).
NUM_ROWS = "num-rows"
NUM_EVAL_ROWS = "num-eval-rows"
#: Declared at discovery: the data's description (the clients must agree).
N_FEATURES = "n-features"
FEATURE_NAMES = "feature-names"
RAW_COLUMNS = "raw-columns"
RAW_DTYPES = "raw-dtypes"
#: A client's groups (JSON: one value per sensitive attribute) and the
#: attributes' names.
GROUP_LABELS = "group-labels"
SENSITIVE_NAMES = "sensitive-names"
#: A client's groups and their rows per label, declared at initialisation.
DECLARED_GROUPS = "declared-groups"
#: A client's rows per class, at initialisation.
CLASS_COUNTS = "class-counts"
#: Declared at discovery: the labels of a client's rows (JSON); the server
#: sends their union back at initialisation (JSON): the federation's classes.
LABELS = "client-labels"
FEDERATION_CLASSES = "federation-classes"
#: A client's training rows per class that the model it uses predicts,
#: after the last round.
DECISION_COUNTS = "decision-counts"
#: The node's place among the clients and their number (Flower node config).
PARTITION_ID = "partition-id"
NUM_PARTITIONS = "num-partitions"
#: The round a training message belongs to.
SERVER_ROUND = "server-round"
#: The seed the server gives a client at initialisation.
CLIENT_SEED = "client-seed"
#: A client that initialised itself (no initialisation message came).
SELF_INITIALISED = "self-initialised"
#: Sent to each client with every message after a training round: the last
#: round whose replies the server has decided on, and the last round whose
#: reply of this client it admitted (0: none). A node keeps what it trained
#: in a round only once the server has admitted that reply.
SETTLED_ROUND = "settled-round"
KEPT_ROUND = "kept-round"
#: In a node's record: what it trained in its last round, and that round,
#: until the server has decided on its reply.
PENDING_ESTIMATOR = "pending-estimator"
PENDING_ROUND = "pending-round"
#: The fitted transformers' states of a pipeline federation (JSON).
PREPROCESSING_STATES = "preprocessing-states"
#: The number of score bins of a histogram query.
N_BINS = "n-bins"
#: The fitted trees a histogram query after boosting scores with (JSON).
TREE_MODEL = "tree-model"
#: A rate constraint's term for the round (JSON).
RATE_TERM = "rate-term"
#: A query of the trees or of a statistics round (JSON).
QUERY = "query"
#: The transformers' states fitted so far, sent with a statistics query (JSON).
FITTED_STATES = "states"
#: A client's answer to a query of the trees or of a statistics round (JSON).
ANSWER = "answer"

#: Every key above.
MESSAGE_KEYS = frozenset(
    value
    for name, value in dict(globals()).items()
    if name.isupper() and isinstance(value, str)
)
