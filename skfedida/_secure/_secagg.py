"""Secure aggregation: the server learns a sum over clients, never one client's terms.

The protocol of Bonawitz et al. (CCS 2017), in the form Bell et al. (CCS 2020)
call SecAgg+ when each client masks with some neighbours rather than all:

1. **Keys.** Each client draws two X25519 key pairs: one to agree an
   encryption key with each neighbour, one to agree a mask seed with it.
2. **Shares.** Each client draws a self-mask seed and splits it, and its
   mask key, into ``threshold``-out-of-``len(neighbours)`` Shamir shares;
   each neighbour's pair of shares travels to it encrypted (Fernet, under
   the agreed key), through the server, which cannot read them.
3. **Masked input.** Each client adds to its vector (ring elements of
   ``Z / 2**64``, see ``_fixed_point``) its self mask and, per neighbour, the
   mask both derive from their agreed seed, with opposite signs: summed over
   the clients, every pairwise mask cancels.
4. **Unmasking.** The server names who sent a masked input (survivors) and
   who did not (dropped). Each answering client returns, per neighbour, the
   share of its self-mask seed (a survivor) or of its mask key (dropped),
   never both. From ``threshold`` shares the server rebuilds each survivor's
   self mask and each dropped client's pairwise masks, and removes them.

What the server sees of a client is its public keys, ciphertexts it cannot
open and a masked vector uniformly spread over the ring, whatever the client's
values; only the sum over at least ``threshold`` survivors is revealed. The
protocol assumes an honest-but-curious server, and clients that follow it:
a client can still add any ring element to the sum (the quantisation range
bounds honest values, not a dishonest client's).

Mask streams are SHAKE-256 of the full 32-byte secret (and of the sum's
label), read as little-endian ``uint64``: no bias modulo ``2**64`` and no
folding of the seed. Flower's own ``pseudo_rand_gen`` folds the seed into
32 bits of a Mersenne Twister, which a curious server could search; it is
not used. Key agreement (X25519, HKDF) and the shares' encryption (Fernet)
are the ``cryptography`` package's, which Flower itself depends on; Shamir's
shares are ``_shamir``'s, over a prime field (pycryptodome's are far slower,
see there).
"""

from __future__ import annotations

import base64
import hashlib
import os
import random
import struct
from dataclasses import dataclass

import numpy as np

from ._shamir import combine, split

#: Bytes of a secret (a self-mask seed, a private key).
_SECRET_BYTES = 32


def _crypto():
    try:
        from cryptography.fernet import Fernet
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import x25519
        from cryptography.hazmat.primitives.kdf.hkdf import HKDF
    except ImportError as exc:  # pragma: no cover - the flower extra has both
        raise ImportError(
            "secure_aggregation needs the cryptography package: pip install "
            "'skfedida[secure]' (Flower depends on it too)."
        ) from exc
    return Fernet, hashes, serialization, x25519, HKDF


def mask_stream(secret, label, size):
    """``size`` pseudo-random ring elements from a 32-byte ``secret``.

    Parameters
    ----------
    secret : bytes
        The seed: a self-mask seed, or a pairwise secret.
    label : bytes
        Which sum the mask is for: one secret masks several sums with
        independent streams.
    size : int
        Elements wanted.

    Returns
    -------
    mask : ndarray of uint64 of shape (size,)
        Uniform over the ring, independent across labels and secrets.
    """
    if len(secret) != _SECRET_BYTES:
        raise ValueError(f"A mask seed has {_SECRET_BYTES} bytes; got {len(secret)}.")
    digest = hashlib.shake_256(
        b"skfedida secagg mask\x00" + secret + struct.pack("<Q", len(label)) + label
    ).digest(8 * int(size))
    return np.frombuffer(digest, dtype="<u8").astype(np.uint64, copy=False)


def _derive(HKDF, hashes, shared, purpose):
    return HKDF(
        algorithm=hashes.SHA256(),
        length=_SECRET_BYTES,
        salt=None,
        info=b"skfedida secagg " + purpose,
    ).derive(shared)


@dataclass(frozen=True)
class PublicKeys:
    """A client's two public keys (raw X25519 bytes)."""

    encryption: bytes
    masking: bytes


@dataclass(frozen=True)
class UnmaskShare:
    """One share a client returns at unmasking, for one neighbour.

    ``of``: the neighbour; ``kind``: ``"self mask"`` (a survivor's seed) or
    ``"mask key"`` (a dropped client's private mask key); ``share``: bytes.
    """

    of: int
    kind: str
    share: bytes


class SecAggClient:
    """One client's side of a secure sum.

    Parameters
    ----------
    client : int
        Its index in the federation.
    """

    def __init__(self, client):
        self.client = int(client)
        (
            self._Fernet,
            self._hashes,
            self._serialization,
            x25519,
            self._HKDF,
        ) = _crypto()
        self._x25519 = x25519
        self._encryption_key = x25519.X25519PrivateKey.generate()
        self._mask_key = x25519.X25519PrivateKey.generate()
        self._self_seed = os.urandom(_SECRET_BYTES)
        self._neighbours = None
        self._received = {}
        self._masked = False
        self._unmasked = False

    def _raw(self, key):
        return key.public_key().public_bytes(
            self._serialization.Encoding.Raw, self._serialization.PublicFormat.Raw
        )

    def _private_raw(self, key):
        return key.private_bytes(
            self._serialization.Encoding.Raw,
            self._serialization.PrivateFormat.Raw,
            self._serialization.NoEncryption(),
        )

    def public_keys(self):
        """Stage 1: its public keys, for the server to hand its neighbours.

        Returns
        -------
        keys : PublicKeys
            Its encryption key and its mask key, raw X25519 bytes.
        """
        return PublicKeys(self._raw(self._encryption_key), self._raw(self._mask_key))

    def _channel(self, public):
        shared = self._encryption_key.exchange(
            self._x25519.X25519PublicKey.from_public_bytes(public.encryption)
        )
        key = _derive(self._HKDF, self._hashes, shared, b"channel")
        return self._Fernet(base64.urlsafe_b64encode(key))

    def share_keys(self, neighbours, threshold):
        """Stage 2: its encrypted shares, one ciphertext per neighbour.

        Parameters
        ----------
        neighbours : dict of int to PublicKeys
            Its neighbours' public keys (itself not among them).
        threshold : int
            Shares needed to rebuild a secret: at least 2, at most the
            number of neighbours.

        Returns
        -------
        ciphertexts : dict of int to bytes
            Per neighbour, its shares of this client's two secrets, encrypted
            for it alone.
        """
        if self.client in neighbours:
            raise ValueError("A client is not its own neighbour.")
        if not 2 <= threshold <= len(neighbours) + 1:
            raise ValueError(
                f"threshold must be between 2 and the {len(neighbours) + 1} "
                f"holders of shares (its neighbours and itself); got {threshold}."
            )
        self._neighbours = dict(neighbours)
        self._threshold = int(threshold)
        # It keeps a share of its own secrets too (as Flower's SecAgg+ does):
        # one neighbour fewer needs to answer at unmasking.
        order = sorted([*neighbours, self.client])
        seed_shares = split(self._self_seed, threshold, len(order))
        key_shares = split(self._private_raw(self._mask_key), threshold, len(order))
        ciphertexts = {}
        for v, seed, key in zip(order, seed_shares, key_shares, strict=True):
            if v == self.client:
                self._own_shares = (seed, key)
                continue
            ciphertexts[v] = self._channel(neighbours[v]).encrypt(
                struct.pack("<QQI", self.client, v, len(seed)) + seed + key
            )
        return ciphertexts

    def _pairwise_secret(self, public):
        shared = self._mask_key.exchange(
            self._x25519.X25519PublicKey.from_public_bytes(public.masking)
        )
        return _derive(self._HKDF, self._hashes, shared, b"pairwise")

    def masked_input(self, encoded, ciphertexts, label):
        """Stage 3: its vector, masked; ``ciphertexts`` are the shares sent to it.

        Parameters
        ----------
        encoded : ndarray of uint64
            Its values as ring elements (``FixedPoint.encode``).
        ciphertexts : dict of int to bytes
            Per neighbour that shared with it, that neighbour's ciphertext.
        label : bytes
            Which sum this is.

        Returns
        -------
        masked : ndarray of uint64
            ``encoded`` plus its self mask and its pairwise masks.
        """
        if self._neighbours is None:
            raise RuntimeError("masked_input comes after share_keys.")
        for v, ciphertext in ciphertexts.items():
            if v not in self._neighbours:
                raise ValueError(f"Client {v} is not a neighbour of this client.")
            plain = self._channel(self._neighbours[v]).decrypt(ciphertext)
            source, destination, length = struct.unpack("<QQI", plain[:20])
            if (source, destination) != (v, self.client):
                raise ValueError("A share reached the wrong client.")
            self._received[v] = (plain[20 : 20 + length], plain[20 + length :])
        encoded = np.asarray(encoded, dtype=np.uint64)
        size = encoded.size
        masked = encoded.ravel() + mask_stream(self._self_seed, label, size)
        # With the neighbours that shared with it: one that dropped before
        # sharing left no share to rebuild its key, so none masks with it.
        for v in sorted(self._received):
            pairwise = mask_stream(
                self._pairwise_secret(self._neighbours[v]), label, size
            )
            if self.client < v:
                masked += pairwise
            else:
                masked -= pairwise
        self._masked = True
        return masked.reshape(encoded.shape)

    def unmask(self, survivors, dropped):
        """Stage 4: its shares of each neighbour's secret the server may rebuild.

        A survivor's self-mask seed, a dropped neighbour's mask key; never
        both of one client, and nothing when the sets are inconsistent.

        Parameters
        ----------
        survivors : set of int
            The clients whose masked input the server received (this one
            among them).
        dropped : set of int
            The clients that shared their keys but sent no masked input.

        Returns
        -------
        shares : list of UnmaskShare
            Its own self-mask share, then one share per neighbour named.
        """
        survivors, dropped = set(survivors), set(dropped)
        if survivors & dropped:
            raise ValueError("A client cannot be both a survivor and dropped.")
        if self.client not in survivors:
            raise ValueError("Only a survivor helps to unmask.")
        if self._unmasked:
            raise RuntimeError("A client unmasks one sum once.")
        if len(survivors) < self._threshold:
            # Bonawitz et al.'s check: fewer survivors than the threshold
            # would make the sum one of too few clients.
            raise ValueError(
                f"Only {len(survivors)} survivors named; this client helps to "
                f"unmask a sum of {self._threshold} or more."
            )
        self._unmasked = True
        shares = [UnmaskShare(self.client, "self mask", self._own_shares[0])]
        for v, (seed_share, key_share) in sorted(self._received.items()):
            if v in survivors:
                shares.append(UnmaskShare(v, "self mask", seed_share))
            elif v in dropped:
                shares.append(UnmaskShare(v, "mask key", key_share))
        return shares


class SecAggServer:
    """The server's side of one secure sum: routes keys and shares, removes masks.

    Parameters
    ----------
    neighbours : dict of int to set of int
        Each client's neighbours (symmetric; a client is not its own).
    threshold : int
        Shares needed to rebuild a secret, and the fewest survivors whose
        sum may be revealed.
    """

    def __init__(self, neighbours, threshold):
        self.neighbours = {k: set(v) for k, v in neighbours.items()}
        for k, others in self.neighbours.items():
            if k in others or any(k not in self.neighbours[v] for v in others):
                raise ValueError("Neighbours must be symmetric and exclude oneself.")
        self.threshold = int(threshold)
        (
            _,
            self._hashes,
            self._serialization,
            self._x25519,
            self._HKDF,
        ) = _crypto()
        self.public = {}
        self.shared = set()

    def neighbour_keys(self, public):
        """Stage 1 to 2: per client, its neighbours' public keys.

        Parameters
        ----------
        public : dict of int to PublicKeys
            The keys of every client that answered stage 1.

        Returns
        -------
        keys : dict of int to dict of int to PublicKeys
            Per client, the keys of its neighbours that answered.
        """
        self.public = dict(public)
        return {
            k: {v: public[v] for v in self.neighbours[k] if v in public} for k in public
        }

    def route(self, ciphertexts):
        """Stage 2 to 3: per client, the ciphertexts addressed to it.

        Parameters
        ----------
        ciphertexts : dict of int to dict of int to bytes
            Per client that answered stage 2, its ciphertext per neighbour.

        Returns
        -------
        routed : dict of int to dict of int to bytes
            Per client, the ciphertexts its neighbours sent it, by sender.
        """
        self.shared = set(ciphertexts)
        routed = {}
        for source, sent in ciphertexts.items():
            for destination, ciphertext in sent.items():
                routed.setdefault(destination, {})[source] = ciphertext
        return routed

    def unmask(self, masked, shares, label):
        """Stage 4: the sum of the survivors' vectors, as ring elements.

        Parameters
        ----------
        masked : dict of int to ndarray of uint64
            The survivors' masked vectors.
        shares : dict of int to list of UnmaskShare
            Per answering survivor, its shares.
        label : bytes
            Which sum this is.

        Returns
        -------
        total : ndarray of uint64
            The survivors' inputs summed modulo ``2**64``.
        """
        survivors = set(masked)
        if len(survivors) < self.threshold:
            raise RuntimeError(
                f"Only {len(survivors)} clients sent their masked input; a sum "
                f"is revealed over {self.threshold} or more."
            )
        if not survivors <= self.shared:
            raise ValueError("A client sent a masked input without sharing its keys.")
        dropped = self.shared - survivors
        shape = next(iter(masked.values())).shape
        size = int(np.prod(shape))
        total = np.zeros(size, dtype=np.uint64)
        for vector in masked.values():
            total += np.asarray(vector, dtype=np.uint64).ravel()
        by_owner = {}
        for answering, given in shares.items():
            if answering not in survivors:
                continue
            for share in given:
                by_owner.setdefault((share.of, share.kind), []).append(share.share)
        for u in survivors:
            seed = self._rebuild(by_owner.get((u, "self mask"), []), u)
            total -= mask_stream(seed, label, size)
        for v in dropped:
            raw = self._rebuild(by_owner.get((v, "mask key"), []), v)
            key = self._x25519.X25519PrivateKey.from_private_bytes(raw)
            # Each survivor that received v's shares masked with v.
            for u in self.neighbours[v] & survivors:
                shared = key.exchange(
                    self._x25519.X25519PublicKey.from_public_bytes(
                        self.public[u].masking
                    )
                )
                pairwise = mask_stream(
                    _derive(self._HKDF, self._hashes, shared, b"pairwise"),
                    label,
                    size,
                )
                # Survivor u added +mask when u < v, -mask when u > v.
                if u < v:
                    total -= pairwise
                else:
                    total += pairwise
        return total.reshape(shape)

    def _rebuild(self, shares, owner):
        if len(shares) < self.threshold:
            raise RuntimeError(
                f"Only {len(shares)} shares of client {owner}'s secret came back; "
                f"{self.threshold} are needed to unmask the sum."
            )
        return combine(shares[: self.threshold])


def complete_neighbours(clients):
    """Every client the neighbour of every other (SecAgg; SecAgg+ thins it).

    Parameters
    ----------
    clients : int or iterable of int
        The clients' indices (an int: ``range(clients)``).

    Returns
    -------
    neighbours : dict of int to set of int
        Per client, every other client.
    """
    everyone = set(range(clients) if isinstance(clients, int) else clients)
    return {k: everyone - {k} for k in everyone}


def harary_neighbours(clients, degree):
    """Draw SecAgg+'s graph: each client masks with ``degree`` others, not all.

    The clients in a random order on a ring, each the neighbour of the
    ``degree / 2`` nearest on either side (a Harary graph, as Bell et al.
    2020 draw it): every client has ``degree`` neighbours whatever the
    number of clients, so a client's work and messages grow with
    ``degree``, not with the federation. The order is drawn from the
    operating system's entropy, a secret of the server's; no result
    depends on it (the masks cancel whatever the graph).

    Parameters
    ----------
    clients : iterable of int
        The clients' indices.
    degree : int
        Neighbours per client: even, at least 2. At ``len(clients) - 1``
        or more every client is the neighbour of every other.

    Returns
    -------
    neighbours : dict of int to set of int
        Per client, its neighbours (symmetric).
    """
    clients = sorted(set(clients))
    if isinstance(degree, bool) or not isinstance(degree, int) or degree < 2:
        raise ValueError(f"A neighbour degree is an even int >= 2; got {degree!r}.")
    if degree % 2:
        raise ValueError(
            f"A neighbour degree is even (half on either side); got {degree}."
        )
    if degree >= len(clients) - 1:
        return complete_neighbours(clients)
    order = list(clients)
    random.SystemRandom().shuffle(order)
    n = len(order)
    neighbours = {k: set() for k in order}
    for place, k in enumerate(order):
        for step in range(1, degree // 2 + 1):
            other = order[(place + step) % n]
            neighbours[k].add(other)
            neighbours[other].add(k)
    return neighbours


@dataclass(frozen=True)
class SecureSum:
    """A secure sum's outcome, as the server knows it.

    ``total``: the survivors' sum (ring elements); ``survivors``: the
    clients whose inputs it covers; ``dropped``: those that shared their
    keys but sent no masked input; ``masked``: what the server received
    from each survivor (for tests: nothing of one client's input).
    """

    total: np.ndarray
    survivors: list
    dropped: list
    masked: dict


#: The stages a client can fail at, in order.
STAGES = ("shares", "masked input", "unmasking")


def secure_sum(inputs, threshold, label, neighbours=None, fail=None):
    """Run the protocol in this process: the sum of ``inputs``, masked.

    Parameters
    ----------
    inputs : dict of int to ndarray of uint64
        Each client's encoded vector (all of one shape).
    threshold : int
        Shares needed to rebuild a secret; the fewest survivors.
    label : bytes
        Which sum this is.
    neighbours : dict of int to set of int, default=None
        The mask graph (None: every client with every other).
    fail : dict of str to set of int, default=None
        Per stage (``STAGES``), the clients that fail at it: they send
        nothing from that stage on.

    Returns
    -------
    result : SecureSum
        The sum, who it covers, and what the server received.
    """
    fail = {stage: set(fail.get(stage, ())) for stage in STAGES} if fail else {}
    clients = {k: SecAggClient(k) for k in inputs}
    server = SecAggServer(
        complete_neighbours(inputs) if neighbours is None else neighbours,
        threshold,
    )
    out = set()
    keys = server.neighbour_keys({k: c.public_keys() for k, c in clients.items()})
    out |= fail.get("shares", set())
    routed = server.route(
        {k: clients[k].share_keys(keys[k], threshold) for k in clients if k not in out}
    )
    out |= fail.get("masked input", set())
    masked = {
        k: clients[k].masked_input(inputs[k], routed.get(k, {}), label)
        for k in clients
        if k not in out
    }
    survivors = set(masked)
    dropped = server.shared - survivors
    out |= fail.get("unmasking", set())
    shares = {
        k: clients[k].unmask(survivors, dropped) for k in survivors if k not in out
    }
    total = server.unmask(masked, shares, label)
    return SecureSum(total, sorted(survivors), sorted(dropped), masked)
