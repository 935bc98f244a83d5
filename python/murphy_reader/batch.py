"""One emitted batch, decoding, staleness filtering and duplicate dropping."""

from __future__ import annotations

import re
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Callable, Union

import pyarrow as pa
import pyarrow.compute as pc

from .schema import check_schema

_BATCH_ID = re.compile(r"^(?P<topic>.+):(?P<partition>\d+):(?P<first>\d+)-(?P<last>\d+)$")

# A policy version source: a fixed int, or a callable returning the
# trainer's current version (read at every batch).
PolicyVersion = Union[int, Callable[[], int]]


@dataclass(frozen=True)
class BatchRange:
    """The credited-topic offsets a batch covers; its id derives from them."""

    topic: str
    partition: int
    first: int
    last: int

    @property
    def batch_id(self) -> str:
        return f"{self.topic}:{self.partition}:{self.first}-{self.last}"


def parse_batch_id(batch_id: str) -> BatchRange:
    m = _BATCH_ID.match(batch_id)
    if not m or int(m["last"]) < int(m["first"]):
        raise ValueError(f"malformed batch id {batch_id!r}")
    return BatchRange(m["topic"], int(m["partition"]), int(m["first"]), int(m["last"]))


@dataclass
class Batch:
    """One batch: an Arrow record batch with where it came from."""

    batch_id: str
    record_batch: pa.RecordBatch
    credit_config: dict[str, Any]
    # Kafka position (topic, partition, offset) or file path it was read from.
    source: tuple[Any, ...] = ()
    headers: dict[str, str] = field(default_factory=dict)

    @property
    def range(self) -> BatchRange:
        return parse_batch_id(self.batch_id)

    @property
    def num_rows(self) -> int:
        return self.record_batch.num_rows


def batch_id_of(rb: pa.RecordBatch) -> str:
    """The id of a batch, from its batch_id column."""
    if rb.num_rows == 0:
        raise ValueError("empty batch has no id")
    col = rb.column(rb.schema.get_field_index("batch_id"))
    ids = pc.unique(col)
    if len(ids) != 1:
        raise ValueError(f"batch holds {len(ids)} batch ids")
    return ids[0].as_py()


def read_stream(data: bytes | memoryview | pa.Buffer) -> tuple[pa.RecordBatch, dict[str, Any]]:
    """Decode one self-contained Arrow IPC stream (one message of the
    batches topic). Returns the record batch and the credit configuration.
    Raises SchemaVersionError for a schema this reader does not know."""
    reader = pa.ipc.open_stream(pa.py_buffer(data) if not isinstance(data, pa.Buffer) else data)
    cfg = check_schema(reader.schema)
    batches = list(reader)
    if len(batches) != 1:
        # The emit stage writes exactly one batch per stream; tolerate more.
        table = pa.Table.from_batches(batches, schema=reader.schema).combine_chunks()
        rbs = table.to_batches()
        rb = rbs[0] if rbs else pa.RecordBatch.from_pylist([], schema=reader.schema)
    else:
        rb = batches[0]
    return rb, cfg


def current_version(v: PolicyVersion) -> int:
    return int(v() if callable(v) else v)


def staleness(rb: pa.RecordBatch, policy_version: int) -> list[int]:
    """Each row's staleness: the trainer's current version minus the row's
    policy_version (negative for a row newer than the trainer)."""
    return [policy_version - v for v in rb.column(rb.schema.get_field_index("policy_version")).to_pylist()]


# Reasons a reader drops rows (Reader.dropped_rows keys).
DROP_STALE = "stale"
DROP_DUPLICATE = "duplicate_batch"


def filter_staleness(rb: pa.RecordBatch, policy_version: int, max_staleness: int) -> pa.RecordBatch:
    """Keep the rows sampled at most max_staleness policy versions ago
    (staleness = policy_version - the row's policy_version <= max_staleness)."""
    col = rb.column(rb.schema.get_field_index("policy_version"))
    keep = pc.greater_equal(col, pa.scalar(policy_version - max_staleness, pa.int64()))
    if pc.all(keep).as_py():
        return rb
    return rb.filter(keep)


class Deduper:
    """Remembers the last `capacity` batch ids and reports repeats."""

    def __init__(self, capacity: int = 100_000):
        self._seen: OrderedDict[str, None] = OrderedDict()
        self._capacity = capacity
        self.dropped = 0

    def seen(self, batch_id: str) -> bool:
        if batch_id in self._seen:
            self._seen.move_to_end(batch_id)
            self.dropped += 1
            return True
        self._seen[batch_id] = None
        if len(self._seen) > self._capacity:
            self._seen.popitem(last=False)
        return False


def ranks_partitions(partitions: list[int], rank: int, world_size: int) -> list[int]:
    """The partitions data-parallel rank `rank` of `world_size` reads:
    every world_size-th one, so ranks are disjoint and cover all."""
    if world_size < 1 or not 0 <= rank < world_size:
        raise ValueError(f"rank {rank} outside world size {world_size}")
    return sorted(p for p in partitions if p % world_size == rank)
