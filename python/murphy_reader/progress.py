"""Closing the loop with generate (stages/generate/VERSIONS.md).

A trainer publishes each new policy version on the compacted
policy-versions topic (publish_version) and its progress on the compacted
trainer-progress topic (ProgressPublisher): its version, its staleness bound
η (max_staleness), how many trees it consumes per version, and the credited
positions it consumed (KafkaBatchReader.consumed). Generate starts a new tree
only while it is at most η versions ahead of the slowest bounded trainer.
"""

from __future__ import annotations

import datetime as dt
import json
import threading
import time
import uuid
from typing import Any, Mapping, Optional

# The record schema version this module writes (topics.SchemaVersion).
RECORD_SCHEMA_VERSION = 2


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat().replace("+00:00", "Z")


def _producer(brokers: str, config: Optional[dict[str, Any]]) -> Any:
    from confluent_kafka import Producer

    conf = {"bootstrap.servers": brokers, "acks": "all", "enable.idempotence": True}
    conf.update(config or {})
    return Producer(conf)


def _send(p: Any, topic: str, key: str, value: dict[str, Any], timeout: float) -> None:
    err: list[Any] = []
    p.produce(topic, key=key.encode(), value=json.dumps(value).encode(),
              on_delivery=lambda e, _m: err.append(e) if e is not None else None)
    left = p.flush(timeout)
    if left:
        raise TimeoutError(f"{topic}: record {key} not acknowledged in {timeout}s")
    if err:
        raise RuntimeError(f"{topic}: record {key} not written: {err[0]}")


def last_progress(brokers: str, topic: str, trainer_id: str, rank: int = 0, *,
                  consumer_config: Optional[dict[str, Any]] = None, timeout: float = 30.0) -> Optional[dict[str, Any]]:
    """The last progress record of trainer_id/rank on the compacted
    trainer-progress topic, read from its start outside any consumer group
    (None when it has none)."""
    from confluent_kafka import Consumer, TopicPartition, OFFSET_BEGINNING

    conf = {"bootstrap.servers": brokers, "group.id": f"progress-resume-{uuid.uuid4()}",
            "enable.auto.commit": False, "enable.partition.eof": True}
    conf.update(consumer_config or {})
    c = Consumer(conf)
    key = f"{trainer_id}/{rank}".encode()
    last = None
    try:
        md = c.list_topics(topic, timeout=timeout).topics.get(topic)
        if md is None or md.error is not None:
            return None
        parts = list(md.partitions)
        ends = {}
        for p in parts:
            _, hi = c.get_watermark_offsets(TopicPartition(topic, p), timeout=timeout)
            ends[p] = hi
        todo = {p for p, hi in ends.items() if hi > 0}
        c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in todo])
        deadline = time.monotonic() + timeout
        while todo and time.monotonic() < deadline:
            msg = c.poll(0.5)
            if msg is None or msg.error():
                continue
            if msg.key() == key and msg.value():
                last = json.loads(msg.value())
            if msg.offset() + 1 >= ends[msg.partition()]:
                todo.discard(msg.partition())
        if todo:
            raise TimeoutError(f"{topic}: not read to its end in {timeout}s")
    finally:
        c.close()
    return last


def staleness_counts(staleness_rows: Mapping[int, int]) -> dict[str, int]:
    """A progress record's rows_trained_staleness: rows by staleness in
    versions, keys decimal strings. A row newer than the trainer's version
    (negative staleness: the version moved on while it was read) counts as
    0, as fresh as can be."""
    out: dict[str, int] = {}
    for s, n in staleness_rows.items():
        if n < 0:
            raise ValueError(f"staleness {s}: negative row count {n}")
        k = str(max(0, int(s)))
        out[k] = out.get(k, 0) + int(n)
    return out


def version_record(version: int, model: str, *, adapter: str = "", checkpoint_uri: str = "",
                   trainer_id: str = "") -> dict[str, Any]:
    """A PolicyVersion record. model must be a name never used by another
    version (e.g. f"{run}-v{version}")."""
    if version < 1:
        raise ValueError("version must be >= 1")
    if not model.strip():
        raise ValueError("model is required")
    return {"schema_version": RECORD_SCHEMA_VERSION, "version": int(version), "model": model,
            "adapter": adapter, "checkpoint_uri": checkpoint_uri, "trainer_id": trainer_id,
            "created_at": _now()}


def publish_version(brokers: str, topic: str, version: int, model: str, *, adapter: str = "",
                    checkpoint_uri: str = "", trainer_id: str = "", producer_config: Optional[dict[str, Any]] = None,
                    timeout: float = 30.0) -> dict[str, Any]:
    """Publish a new policy version (topic: "<prefix>policy-versions");
    returns the record written. Publish only once the weights are where the
    servers (or generate's load hook) can read them."""
    rec = version_record(version, model, adapter=adapter, checkpoint_uri=checkpoint_uri, trainer_id=trainer_id)
    p = _producer(brokers, producer_config)
    _send(p, topic, str(int(version)), rec, timeout)
    return rec


class ProgressPublisher:
    """Publishes one trainer rank's progress (topic:
    "<prefix>trainer-progress", key "trainer_id/rank").

    max_staleness=None reports without asking for a bound.
    trees_per_version: the trees the trainer consumes per optimizer step.
    """

    def __init__(self, brokers: str, topic: str, trainer_id: str, *, rank: int = 0,
                 max_staleness: Optional[int] = None, trees_per_version: int = 1, group_id: str = "",
                 producer_config: Optional[dict[str, Any]] = None, timeout: float = 30.0):
        if max_staleness is not None and (max_staleness < 0 or trees_per_version < 1):
            raise ValueError("a bounded trainer needs max_staleness >= 0 and trees_per_version >= 1")
        self.topic, self.trainer_id, self.rank = topic, trainer_id, rank
        self.max_staleness, self.trees_per_version, self.group_id = max_staleness, trees_per_version, group_id
        self._timeout = timeout
        self._p = _producer(brokers, producer_config)
        self.published = 0
        self.heartbeats = 0
        self._lock = threading.Lock()
        self._last: Optional[dict[str, Any]] = None
        self._heartbeat: Optional[tuple[threading.Event, threading.Thread]] = None
        # consumed positions when the current version's training began
        self._version: Optional[int] = None
        self._version_start: dict[int, int] = {}

    def record(self, policy_version: int, consumed: dict[int, int], *, trees_consumed: int = 0,
               rows_dropped: Optional[dict[str, int]] = None,
               rows_trained_staleness: Optional[Mapping[int, int]] = None) -> dict[str, Any]:
        """The progress record. The first record of a new policy_version
        fixes version_start, the positions its training began at: report
        progress as soon as a new version is published (before consuming
        for it), so that generate counts the version's trees from there.
        rows_dropped (reason -> rows) and rows_trained_staleness (staleness
        -> rows trained, see staleness_counts; left out when None) are
        cumulative counts generate exports as metrics."""
        if policy_version != self._version:
            self._version, self._version_start = policy_version, dict(consumed)
        rec: dict[str, Any] = {
            "schema_version": RECORD_SCHEMA_VERSION, "trainer_id": self.trainer_id, "rank": self.rank,
            "group_id": self.group_id, "policy_version": int(policy_version),
            "trees_per_version": self.trees_per_version,
            "consumed": {str(p): int(o) for p, o in consumed.items()},
            "version_start": {str(p): int(o) for p, o in self._version_start.items()},
            "trees_consumed": int(trees_consumed), "rows_dropped": dict(rows_dropped or {}),
            "updated_at": _now(),
        }
        if self.max_staleness is not None:
            rec["max_staleness"] = self.max_staleness
        if rows_trained_staleness is not None:
            rec["rows_trained_staleness"] = staleness_counts(rows_trained_staleness)
        return rec

    def publish(self, policy_version: int, consumed: dict[int, int], **kw: Any) -> dict[str, Any]:
        rec = self.record(policy_version, consumed, **kw)
        with self._lock:
            _send(self._p, self.topic, f"{self.trainer_id}/{self.rank}", rec, self._timeout)
            self.published += 1
            self._last = rec
        return rec

    def resume(self, brokers: str, *, consumer_config: Optional[dict[str, Any]] = None,
               timeout: float = 30.0) -> Optional[dict[str, Any]]:
        """A restarted trainer's progress: this rank's last record on the
        compacted topic (None when there is none). Its version_start is kept
        for the version it names, so that a restart partway through a
        version does not move the version's start (the bound would then
        count that version's trees from later: too few)."""
        rec = last_progress(brokers, self.topic, self.trainer_id, self.rank, consumer_config=consumer_config, timeout=timeout)
        if rec is not None:
            self._version = int(rec.get("policy_version", 0))
            self._version_start = {int(p): int(o) for p, o in (rec.get("version_start") or {}).items()}
        return rec

    def start_heartbeat(self, interval: float) -> None:
        """Publish the last record again, with a fresh updated_at, every
        interval seconds from a background thread, so that a training step
        or a checkpoint longer than generate's progress_ttl does not lift
        the bound. Use an interval well under progress_ttl."""
        if self._heartbeat is not None:
            return
        stop = threading.Event()

        def beat() -> None:
            while not stop.wait(interval):
                with self._lock:
                    last = self._last
                if last is None:
                    continue
                rec = dict(last, updated_at=_now())
                try:
                    with self._lock:
                        _send(self._p, self.topic, f"{self.trainer_id}/{self.rank}", rec, self._timeout)
                        self.heartbeats += 1
                except Exception:  # noqa: BLE001 - a missed beat is retried at the next one
                    pass

        self._heartbeat = (stop, threading.Thread(target=beat, name="progress-heartbeat", daemon=True))
        self._heartbeat[1].start()

    def stop_heartbeat(self) -> None:
        if self._heartbeat is not None:
            stop, th = self._heartbeat
            stop.set()
            th.join()
            self._heartbeat = None

    def publish_reader(self, policy_version: int, reader: Any) -> dict[str, Any]:
        """Publish what a KafkaBatchReader consumed (after reader.commit())."""
        return self.publish(policy_version, reader.consumed, trees_consumed=reader.trees_consumed,
                            rows_dropped=reader.dropped_rows, rows_trained_staleness=reader.trained_staleness)
