"""XGBoost's own federated (horizontal) training, timed and its rounds counted.

Imported by the tree benchmarks; ``python benchmarks/_xgboost_federated.py``
runs it on the shipped Adult training rows, 5 clients.

XGBoost's federated mode (``dmlc_communicator="federated"``) runs a gRPC
server that does every collective operation: each ``Allreduce``,
``Allgather``, ``AllgatherV`` or ``Broadcast`` of a worker is one unary gRPC
call to it, answered once all workers have sent theirs, i.e. one round trip.
To count them for real, the workers talk to the server through a TCP proxy
in this process that reads the HTTP/2 frames the workers send: one request
HEADERS frame per call, its ``:path`` giving the method, and the first bytes
of its message giving the worker's rank and XGBoost's own per-worker
``sequence_number``, which every collective call increments by one. The
count is checked against those sequence numbers (no gap, no repeat) and
across workers (all make the same calls). The proxy can also delay every
byte by half a round trip each way, so training under latency is measured,
not estimated.

The plugin is in XGBoost 3.2's Linux wheels (``build_info()["USE_FEDERATED"]``)
and its source up to 3.4.1; the project removed it from its main branch in
August 2026 (dmlc/xgboost#12413).
"""

import contextlib
import itertools
import multiprocessing
import queue
import socket
import threading
import time
import traceback
import warnings
from collections import Counter

# HPACK's static table, names only (RFC 7541, appendix A): enough to follow
# the dynamic table the workers' gRPC library fills with ``:path`` values.
_STATIC_NAMES = (
    ":authority :method :method :path :path :scheme :scheme"
    + " :status" * 7
    + " accept-charset accept-encoding accept-language accept-ranges accept"
    " access-control-allow-origin age allow authorization cache-control"
    " content-disposition content-encoding content-language content-length"
    " content-location content-range content-type cookie date etag expect"
    " expires from host if-match if-modified-since if-none-match if-range"
    " if-unmodified-since last-modified link location max-forwards"
    " proxy-authenticate proxy-authorization range referer refresh retry-after"
    " server set-cookie strict-transport-security transfer-encoding user-agent"
    " vary via www-authenticate"
).split()
assert len(_STATIC_NAMES) == 61


def unavailable_reason():
    """Say why XGBoost's federated training cannot run here, if it cannot.

    Returns
    -------
    str or None
        The reason, or None when ``xgboost`` imports and was built with its
        federated plugin.
    """
    try:
        import xgboost
    except ImportError as exc:
        return f"xgboost is not importable: {exc}"
    if not xgboost.build_info().get("USE_FEDERATED", False):
        return (
            f"xgboost {xgboost.__version__} was built without its federated "
            "plugin (XGBoost 3.2's Linux wheel has it, as does a source build "
            "<= 3.4.1 with -DPLUGIN_FEDERATED=ON)"
        )
    return None


def _varint(data, i):
    """Read a protobuf varint at ``data[i]``: (value, next index)."""
    value = shift = 0
    while True:
        byte = data[i]
        value |= (byte & 0x7F) << shift
        i += 1
        if byte < 0x80:
            return value, i
        shift += 7


class _Requests:
    """Follow the HTTP/2 bytes one worker sends and log its gRPC calls.

    Parameters
    ----------
    calls : list
        Where each call is appended, once its message has begun, as
        ``(arrival time, rank, sequence number, method, message bytes)``.
    """

    def __init__(self, calls):
        self.calls = calls
        self.buffer = bytearray()
        self.preface = True
        self.table = []  # HPACK dynamic table, newest first: (name, value, size)
        self.table_max = 4096
        self.block = bytearray()
        self.streams = {}  # stream id -> [arrival, method, message head]

    def feed(self, data, now):
        """Parse the complete frames in what has arrived so far."""
        buf = self.buffer
        buf += data
        if self.preface:  # "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
            if len(buf) < 24:
                return
            del buf[:24]
            self.preface = False
        while len(buf) >= 9:
            length = int.from_bytes(buf[:3], "big")
            if len(buf) < 9 + length:
                return
            kind, flags = buf[3], buf[4]
            stream = int.from_bytes(buf[5:9], "big") & 0x7FFFFFFF
            payload = bytes(buf[9 : 9 + length])
            del buf[: 9 + length]
            if kind in (0, 1) and flags & 0x8:  # PADDED
                payload = payload[1 : len(payload) - payload[0]]
            if kind == 1:  # HEADERS: a new call (clients send no trailers)
                if flags & 0x20:  # PRIORITY
                    payload = payload[5:]
                self.streams[stream] = [now, None, b""]
                self.block = bytearray(payload)
            elif kind == 9:  # CONTINUATION
                self.block += payload
            elif kind == 0 and stream in self.streams:  # DATA
                entry = self.streams[stream]
                if len(entry[2]) < 32:
                    entry[2] += payload[:32]
                if len(entry[2]) >= 32 or flags & 0x1:  # END_STREAM
                    self._log(*self.streams.pop(stream))
            if kind in (1, 9) and flags & 0x4 and stream in self.streams:
                self.streams[stream][1] = self._method(self.block)  # END_HEADERS

    def _log(self, arrival, method, head):
        # gRPC message: compressed flag, 4-byte length, then the protobuf
        # request, which starts with sequence_number (1) and rank (2); proto3
        # leaves out fields equal to 0.
        size = int.from_bytes(head[1:5], "big")
        fields, i = {}, 5
        while i < len(head) and head[i] in (0x08, 0x10):
            fields[head[i] >> 3], i = _varint(head, i + 1)
        self.calls.append((arrival, fields.get(2, 0), fields.get(1, 0), method, size))

    def _string(self, block, i):
        huffman = block[i] & 0x80
        length, i = self._integer(block, i, 7)
        text = block[i : i + length].decode("latin-1")
        # gRPC sends ":path" plainly; a Huffman-coded string is kept unread.
        return (None if huffman else text), length, i + length

    @staticmethod
    def _integer(block, i, bits):
        mask = (1 << bits) - 1
        value, i = block[i] & mask, i + 1
        if value == mask:
            more, i = _varint(block, i)
            value += more
        return value, i

    def _entry(self, index):
        if index <= len(_STATIC_NAMES):
            name = _STATIC_NAMES[index - 1]
            return name, None, len(name)
        return self.table[index - len(_STATIC_NAMES) - 1]

    def _evict(self):
        while self.table and sum(e[2] for e in self.table) > self.table_max:
            self.table.pop()

    def _method(self, block):
        """Decode an HPACK header block just enough to find ``:path``."""
        path, i = None, 0
        while i < len(block):
            byte = block[i]
            if byte & 0x80:  # indexed field
                index, i = self._integer(block, i, 7)
                name, value, _ = self._entry(index)
            elif byte & 0xE0 == 0x20:  # dynamic table size update
                self.table_max, i = self._integer(block, i, 5)
                self._evict()
                continue
            else:  # literal, with (0x40) or without indexing
                index, i = self._integer(block, i, 6 if byte & 0x40 else 4)
                if index:
                    name, _, name_size = self._entry(index)
                else:
                    name, name_size, i = self._string(block, i)
                value, value_size, i = self._string(block, i)
                if byte & 0x40:
                    self.table.insert(0, (name, value, name_size + value_size + 32))
                    self._evict()
            if name == ":path" and value:
                path = value
        return path.rsplit("/", 1)[-1] if path else "unknown"


class _Proxy:
    """TCP proxy from the workers to the federated server, logging calls.

    Parameters
    ----------
    upstream : int
        The federated server's port on 127.0.0.1.
    delay : float
        Seconds each chunk of bytes waits before it is passed on, each way.
    """

    def __init__(self, upstream, delay):
        self.upstream, self.delay = upstream, delay
        self.calls = []
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.sockets = [self.listener]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                worker, _ = self.listener.accept()
                server = socket.create_connection(("127.0.0.1", self.upstream))
            except OSError:
                return
            for sock in (worker, server):
                # gRPC writes small frames; Nagle would hold them for an ACK.
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                self.sockets.append(sock)
            self._pipe(worker, server, _Requests(self.calls))
            self._pipe(server, worker, None)

    def _pipe(self, src, dst, parser):
        later = queue.Queue() if self.delay else None

        def send(data):
            try:
                if data:
                    dst.sendall(data)
                else:
                    dst.shutdown(socket.SHUT_WR)
            except OSError:
                pass

        def read():
            while True:
                try:
                    data = src.recv(1 << 16)
                except OSError:
                    data = b""
                now = time.monotonic()
                if parser is not None and data:
                    parser.feed(data, now)
                if later is None:
                    send(data)
                else:  # keep sending while bytes wait: latency, not bandwidth
                    later.put((now + self.delay, data))
                if not data:
                    return

        def write():
            while True:
                due, data = later.get()
                time.sleep(max(0.0, due - time.monotonic()))
                send(data)
                if not data:
                    return

        threading.Thread(target=read, daemon=True).start()
        if later is not None:
            threading.Thread(target=write, daemon=True).start()

    def close(self):
        """Close every socket, which ends the proxy's threads."""
        for sock in self.sockets:
            with contextlib.suppress(OSError):
                sock.close()


def _serve(conn, n_workers):
    """Run the federated server on a free port until ``conn`` closes."""
    from xgboost.federated import run_federated_server

    args = run_federated_server(n_workers, 0, blocking=False)
    conn.send(args["dmlc_tracker_port"])
    with contextlib.suppress(EOFError):
        conn.recv()


def _work(rank, n_workers, port, X, y, params, n_trees, results):
    """Train as one federated worker; put its times on ``results``."""
    try:
        import numpy as np
        import xgboost as xgb

        stamps = []

        class Stamps(xgb.callback.TrainingCallback):
            def before_training(self, model):
                stamps.append(time.monotonic())
                return model

            def after_iteration(self, model, epoch, evals_log):
                stamps.append(time.monotonic())
                return False

        with xgb.collective.CommunicatorContext(
            dmlc_communicator="federated",
            federated_server_address=f"127.0.0.1:{port}",
            federated_world_size=n_workers,
            federated_rank=rank,
        ):
            dtrain = xgb.DMatrix(X, y, nthread=1)
            # A barrier, so every worker starts training at the same time.
            xgb.collective.allreduce(np.zeros(1), xgb.collective.Op.SUM)
            # time.monotonic is CLOCK_MONOTONIC, shared by the processes.
            start = time.monotonic()
            booster = xgb.train(params, dtrain, n_trees, callbacks=[Stamps()])
            stop = time.monotonic()
        leaves = [tree.count("leaf=") for tree in booster.get_dump()]
        out = {"start": start, "stop": stop, "stamps": stamps, "leaves": leaves}
        results.put((rank, out))
    except BaseException:
        results.put((rank, traceback.format_exc()))


def _check_rounds(calls, outs):
    """Each worker's calls while training: checked, by rank."""
    by_rank = {}
    for rank, out in outs.items():
        mine = [c for c in calls if c[1] == rank and out["start"] < c[0] < out["stop"]]
        seqs = sorted(c[2] for c in mine)
        if seqs and seqs != list(range(seqs[0], seqs[0] + len(seqs))):
            raise RuntimeError(f"rank {rank}: calls missed or repeated: {seqs}")
        by_rank[rank] = mine
    if len({len(mine) for mine in by_rank.values()}) != 1:
        counts = {rank: len(mine) for rank, mine in by_rank.items()}
        raise RuntimeError(f"ranks made different numbers of calls: {counts}")
    return by_rank


def xgboost_federated(
    parts, n_trees=20, max_leaves=31, seed=0, rtt=None, timeout=600.0
):
    """Time XGBoost's federated training and count its communication rounds.

    A federated server (its own process) and one worker process per client
    (``spawn``) talk gRPC on localhost through a counting proxy in this
    process. Trees grow best-first (``grow_policy="lossguide"``,
    ``max_leaves``, ``max_depth=0``) like scikit-learn's and skfedida's trees
    of ``max_leaf_nodes`` leaves. XGBoost then makes one allreduce per split
    whose children may split again, plus two at the root (its histogram and
    gradient sum): ``max_leaves`` calls per full tree. Depth-wise growth
    would allreduce a whole level's histograms at once, so fewer and larger
    rounds, but for trees of another shape (``max_depth=5`` gives 32 leaves).

    Parameters
    ----------
    parts : list of (ndarray, ndarray)
        Each client's ``(X, y)``: float features (NaN for missing, categories
        one-hot already) and 0/1 labels.
    n_trees : int, default=20
        Boosting rounds, without early stopping or evaluation sets.
    max_leaves : int, default=31
        Leaves per tree at most.
    seed : int, default=0
        XGBoost's seed.
    rtt : float, optional
        Round trip time in seconds the proxy adds, half each way, to every
        byte between workers and server. None adds nothing.
    timeout : float, default=600.0
        Seconds to wait for the workers before giving up.

    Returns
    -------
    dict or None
        None, with a warning saying why, when XGBoost or its federated plugin
        is missing. Else ``seconds`` (rank 0's wall time in ``xgb.train``
        after a barrier: no process start-up, no DMatrix construction),
        ``seconds_per_tree``, ``seconds_by_rank``, ``rounds`` (collective
        calls per worker in ``xgb.train``, checked against XGBoost's
        sequence numbers and equal for all workers, else RuntimeError),
        ``rounds_per_tree`` (by boosting round; the first also sketches the
        bins and fits the intercept), ``rounds_outside_trees``,
        ``calls_by_method``, ``request_bytes`` (sent by rank 0 during
        training), ``leaves_per_tree``, ``n_clients``, ``rtt``, ``version``
        and ``params``.
    """
    reason = unavailable_reason()
    if reason is not None:
        warnings.warn(f"XGBoost federated benchmark skipped: {reason}", stacklevel=2)
        return None
    import xgboost

    params = {
        "objective": "binary:logistic",
        "tree_method": "hist",
        "grow_policy": "lossguide",
        "max_leaves": max_leaves,
        "max_depth": 0,
        "learning_rate": 0.1,
        "nthread": 1,
        "seed": seed,
    }
    n = len(parts)
    ctx = multiprocessing.get_context("spawn")
    here, there = ctx.Pipe()
    results = ctx.Queue()
    processes, proxy = [], None
    try:
        server = ctx.Process(target=_serve, args=(there, n), daemon=True)
        server.start()
        processes.append(server)
        there.close()  # so that a dead server is an EOF here, not a hang
        if not here.poll(60):
            raise RuntimeError("the federated server did not start")
        try:
            proxy = _Proxy(here.recv(), rtt / 2 if rtt else 0.0)
        except EOFError:
            raise RuntimeError("the federated server failed to start") from None
        for rank, (X, y) in enumerate(parts):
            args = (rank, n, proxy.port, X, y, params, n_trees, results)
            worker = ctx.Process(target=_work, args=args, daemon=True)
            worker.start()
            processes.append(worker)
        outs, deadline = {}, time.monotonic() + timeout
        while len(outs) < n:
            try:
                rank, out = results.get(timeout=1.0)
            except queue.Empty:
                dead = [p.exitcode for p in processes if p.exitcode not in (None, 0)]
                if dead or time.monotonic() > deadline:
                    raise RuntimeError(f"workers died or hung: {dead}") from None
                continue
            if isinstance(out, str):
                raise RuntimeError(f"worker {rank} failed:\n{out}")
            outs[rank] = out
        calls = _check_rounds(proxy.calls, outs)[0]
    finally:
        here.close()  # the server returns once its pipe closes
        # Workers exit after training; after an error they may block in a
        # collective call, so all get 10 seconds in total before the kill.
        end = time.monotonic() + 10
        for process in processes[::-1]:
            process.join(timeout=max(0.0, end - time.monotonic()))
            if process.is_alive():
                process.kill()
                process.join()
        if proxy is not None:
            proxy.close()
        results.close()

    first = outs[0]
    # Stamps: before training, then after each boosting round; the calls
    # between two stamps are that round's.
    edges = [first["start"], *first["stamps"], first["stop"]]
    between = [sum(a < c[0] < b for c in calls) for a, b in itertools.pairwise(edges)]
    seconds = first["stop"] - first["start"]
    return {
        "seconds": seconds,
        "seconds_per_tree": seconds / n_trees,
        "seconds_by_rank": [outs[r]["stop"] - outs[r]["start"] for r in range(n)],
        "rounds": len(calls),
        "rounds_per_tree": between[1:-1],
        "rounds_outside_trees": between[0] + between[-1],
        "calls_by_method": dict(Counter(c[3] for c in calls)),
        "request_bytes": sum(c[4] for c in calls),
        "leaves_per_tree": first["leaves"],
        "n_clients": n,
        "rtt": rtt,
        "version": xgboost.__version__,
        "params": params,
    }


if __name__ == "__main__":
    import argparse

    import numpy as np
    import pandas as pd

    from skfedida.datasets import load_adult

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trees", type=int, default=20)
    parser.add_argument("--rtt", type=float, default=None)
    cli = parser.parse_args()
    train = load_adult("train")
    X = pd.get_dummies(train.data, dtype=float).to_numpy(dtype=np.float64)
    y = train.target.to_numpy(dtype=np.float64)
    clients = train.clients.to_numpy()
    parts = [(X[clients == k], y[clients == k]) for k in np.unique(clients)]
    out = xgboost_federated(parts, n_trees=cli.trees, rtt=cli.rtt)
    if out is not None:
        for key, value in out.items():
            print(f"{key}: {value}")
