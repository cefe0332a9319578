"""The partition of a keyed message: aiokafka's default (Java's murmur2 of the key), each
key's hash computed once.

Every fact and decision about a job carries the job's key, about sixteen messages per
job, and aiokafka hashes each in pure Python (7 µs for a job key): the hash of a key
seen before is kept instead, for the `capacity` keys seen last.
"""

from __future__ import annotations

from collections.abc import Sequence

from aiokafka.partitioner import DefaultPartitioner, murmur2

#: job keys whose hashes are kept (a few hundred bytes each)
CAPACITY = 100_000


class KeyHashPartitioner:
    """`partitioner(key, all_partitions, available)`, as AIOKafkaProducer calls it: the
    partition aiokafka's `DefaultPartitioner` chooses."""

    def __init__(self, *, capacity: int = CAPACITY) -> None:
        self._capacity = capacity
        self._hashes: dict[bytes, int] = {}

    def __call__(
        self, key: bytes | None, all_partitions: Sequence[int], available: Sequence[int]
    ) -> int:
        if key is None:  # no job: any partition, as aiokafka picks one
            chosen: int = DefaultPartitioner()(key, all_partitions, available)
            return chosen
        hashed = self._hashes.get(key)
        if hashed is None:
            if len(self._hashes) >= self._capacity:
                del self._hashes[next(iter(self._hashes))]  # the key kept longest
            hashed = self._hashes[key] = murmur2(key) & 0x7FFFFFFF
        return all_partitions[hashed % len(all_partitions)]
