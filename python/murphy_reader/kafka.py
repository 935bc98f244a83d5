"""Reading batches from the batches topic with confluent-kafka.

Each trainer is its own consumer group (group_id) and so sees every batch.
Inside one trainer, data-parallel ranks split the topic's partitions: rank r
of world_size reads the partitions p with p % world_size == r, assigned
explicitly (no group rebalancing), and commits its own partitions' offsets
to the trainer's group.
"""

from __future__ import annotations

import time
from typing import Any, Iterator, Optional

from .batch import (
    DROP_DUPLICATE,
    DROP_STALE,
    Batch,
    Deduper,
    PolicyVersion,
    current_version,
    filter_staleness,
    parse_batch_id,
    ranks_partitions,
    read_stream,
    staleness,
)


class KafkaBatchReader:
    """Iterates the batches of one trainer rank.

    brokers: "host:port,host:port"; topic: the batches topic;
    group_id: one per trainer; rank/world_size: data-parallel split.
    policy_version: the trainer's current version (an int or a callable):
    the reader counts the rows it yields by staleness (staleness_rows).
    max_staleness (with policy_version): drop rows sampled more than
    max_staleness versions before the trainer's current version.
    commit: "manual" (call commit() after a step) or "auto" (offsets of
    yielded batches are committed in the background).
    """

    def __init__(
        self,
        brokers: str,
        topic: str,
        group_id: str,
        *,
        rank: int = 0,
        world_size: int = 1,
        policy_version: Optional[PolicyVersion] = None,
        max_staleness: Optional[int] = None,
        commit: str = "manual",
        start: str = "earliest",
        consumer_config: Optional[dict[str, Any]] = None,
        metadata_timeout: float = 30.0,
    ):
        from confluent_kafka import Consumer, TopicPartition, OFFSET_STORED

        if commit not in ("manual", "auto"):
            raise ValueError("commit must be 'manual' or 'auto'")
        if max_staleness is not None and policy_version is None:
            raise ValueError("max_staleness needs policy_version")
        conf = {
            "bootstrap.servers": brokers,
            "group.id": group_id,
            "enable.auto.commit": commit == "auto",
            "enable.auto.offset.store": False,
            "auto.offset.reset": start,
            "fetch.message.max.bytes": 64 << 20,
            "receive.message.max.bytes": 128 << 20,
        }
        conf.update(consumer_config or {})
        self._conf = conf
        self._consumer = Consumer(conf)
        self.topic = topic
        self.rank, self.world_size = rank, world_size
        self._init_state(policy_version, max_staleness)
        md = self._consumer.list_topics(topic, timeout=metadata_timeout)
        tmd = md.topics.get(topic)
        if tmd is None or tmd.error is not None or not tmd.partitions:
            self._consumer.close()
            raise RuntimeError(f"topic {topic} not found: {tmd.error if tmd else 'no metadata'}")
        self.partitions = ranks_partitions(list(tmd.partitions), rank, world_size)
        self._consumer.assign([TopicPartition(topic, p, OFFSET_STORED) for p in self.partitions])

    def _init_state(self, policy_version: Optional[PolicyVersion], max_staleness: Optional[int]) -> None:
        # What the reader keeps and counts, apart from its consumer.
        self._policy_version = policy_version
        self._max_staleness = max_staleness
        self._dedupe = Deduper()
        self._pending: dict[int, int] = {}
        # Rows dropped, per reason (DROP_STALE, DROP_DUPLICATE).
        self.dropped_rows: dict[str, int] = {DROP_STALE: 0, DROP_DUPLICATE: 0}
        # Credited partition -> next credited offset consumed (batches
        # yielded or dropped): what ProgressPublisher reports.
        self.consumed: dict[int, int] = {}
        self._consumed_pending: dict[int, int] = {}
        self.trees_consumed = 0
        # Staleness (trainer version - row version) -> rows yielded, with
        # policy_version set: the staleness histogram of trained rows.
        self.staleness_rows: dict[int, int] = {}

    @property
    def duplicates_dropped(self) -> int:
        return self._dedupe.dropped

    def poll(self, timeout: float = 1.0) -> Optional[Batch]:
        """The next batch, or None when none arrived within timeout."""
        from confluent_kafka import KafkaError, KafkaException, TopicPartition

        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            msg = self._consumer.poll(left)
            if msg is None:
                return None
            if msg.error():
                if msg.error().code() == KafkaError._PARTITION_EOF:
                    continue
                raise KafkaException(msg.error())
            self._pending[msg.partition()] = msg.offset() + 1
            self._consumer.store_offsets(offsets=[TopicPartition(msg.topic(), msg.partition(), msg.offset() + 1)])
            headers = {k: (v.decode() if v is not None else "") for k, v in (msg.headers() or [])}
            batch = self._decode(msg, headers)
            if batch is not None:
                return batch

    @property
    def trained_staleness(self) -> Optional[dict[int, int]]:
        """Rows yielded by staleness (staleness_rows) when the reader knows
        the trainer's version (policy_version), else None: what
        ProgressPublisher.publish_reader reports as rows_trained_staleness."""
        return dict(self.staleness_rows) if self._policy_version is not None else None

    @property
    def filtered_rows(self) -> int:
        """Rows dropped as too stale (dropped_rows["stale"])."""
        return self.dropped_rows[DROP_STALE]

    def _consume(self, batch_id: str, headers: dict[str, str]) -> None:
        # Record the credited range the batch covers, trained or dropped.
        try:
            if "source_partition" in headers and "last_offset" in headers:
                part, last = int(headers["source_partition"]), int(headers["last_offset"])
            else:
                r = parse_batch_id(batch_id)
                part, last = r.partition, r.last
        except ValueError:
            return
        if last + 1 > self._consumed_pending.get(part, 0):
            self._consumed_pending[part] = last + 1
        self.trees_consumed += int(headers.get("trees", "0") or 0)

    def _decode(self, msg: Any, headers: dict[str, str]) -> Optional[Batch]:
        batch_id = headers.get("batch_id", "")
        if batch_id and self._dedupe.seen(batch_id):
            self.dropped_rows[DROP_DUPLICATE] += int(headers.get("rows", "0") or 0)
            return None
        if self._max_staleness is not None and "max_policy_version" in headers:
            # The whole batch is too old: skip it without decoding.
            cur = current_version(self._policy_version)
            if int(headers["max_policy_version"]) < cur - self._max_staleness:
                self.dropped_rows[DROP_STALE] += int(headers.get("rows", "0"))
                self._consume(batch_id, headers)
                return None
        rb, cfg = read_stream(msg.value())
        if not batch_id:
            from .batch import batch_id_of

            batch_id = batch_id_of(rb)
            if self._dedupe.seen(batch_id):
                self.dropped_rows[DROP_DUPLICATE] += rb.num_rows
                return None
        self._consume(batch_id, headers)
        if self._max_staleness is not None:
            kept = filter_staleness(rb, current_version(self._policy_version), self._max_staleness)
            self.dropped_rows[DROP_STALE] += rb.num_rows - kept.num_rows
            rb = kept
            if rb.num_rows == 0:
                return None
        if self._policy_version is not None:
            for s in staleness(rb, current_version(self._policy_version)):
                self.staleness_rows[s] = self.staleness_rows.get(s, 0) + 1
        return Batch(batch_id, rb, cfg, (msg.topic(), msg.partition(), msg.offset()), headers)

    def __iter__(self) -> Iterator[Batch]:
        while True:
            b = self.poll(1.0)
            if b is not None:
                yield b

    def take(self, n: int, timeout: float, idle: Optional[float] = None) -> list[Batch]:
        """Up to n batches, waiting at most timeout seconds in total, or,
        once a batch arrived, idle seconds without another."""
        out: list[Batch] = []
        deadline = time.monotonic() + timeout
        last = 0.0
        while len(out) < n:
            now = time.monotonic()
            left = deadline - now
            if left <= 0 or (idle is not None and out and now - last >= idle):
                break
            b = self.poll(min(left, 0.5))
            if b is not None:
                out.append(b)
                last = time.monotonic()
        return out

    def resume(self, consumed: Optional[dict[Any, int]] = None, *, look_back: int = 16, timeout: float = 30.0) -> dict[int, int]:
        """Restore what a restarted rank had consumed: consumed (its last
        progress record's, ProgressPublisher.resume) and, past it, the
        credited ranges of the last batches its consumer group committed on
        each of its partitions (a step committed but not yet reported when
        the trainer stopped). Reads at most look_back batches back per
        partition. Returns the consumed positions, as the reader now
        reports them."""
        from confluent_kafka import Consumer, TopicPartition

        for p, off in (consumed or {}).items():
            if int(off) > self.consumed.get(int(p), 0):
                self.consumed[int(p)] = int(off)
        committed = self._consumer.committed([TopicPartition(self.topic, p) for p in self.partitions], timeout=timeout)
        conf = dict(self._conf, **{"group.id": f"{self._conf['group.id']}-resume", "enable.auto.commit": False})
        peek = Consumer(conf)
        try:
            for tp in committed:
                if tp.offset is None or tp.offset <= 0:
                    continue
                first = max(0, tp.offset - look_back)
                peek.assign([TopicPartition(self.topic, tp.partition, first)])
                deadline = time.monotonic() + timeout
                while time.monotonic() < deadline:
                    msg = peek.poll(0.5)
                    if msg is None or msg.error():
                        continue
                    if msg.offset() >= tp.offset:
                        break
                    headers = {k: (v.decode() if v is not None else "") for k, v in (msg.headers() or [])}
                    try:
                        part, last = int(headers["source_partition"]), int(headers["last_offset"])
                    except (KeyError, ValueError):
                        continue
                    if last + 1 > self.consumed.get(part, 0):
                        self.consumed[part] = last + 1
                    if msg.offset() + 1 >= tp.offset:
                        break
        finally:
            peek.close()
        return dict(self.consumed)

    def commit(self) -> None:
        """Commit (synchronously) the offsets of every batch polled so far."""
        if self._pending:
            self._consumer.commit(asynchronous=False)
            self._pending.clear()
        for part, off in self._consumed_pending.items():
            if off > self.consumed.get(part, 0):
                self.consumed[part] = off

    def close(self) -> None:
        self._consumer.close()

    def __enter__(self) -> "KafkaBatchReader":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
