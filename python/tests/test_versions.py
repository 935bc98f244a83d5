"""Staleness, per-reason drop counts, progress and version records; two
trainers with different bounds on one batches topic (real broker)."""

import json
import os
import uuid

import pyarrow as pa
import pytest

from conftest import make_batch, stream_bytes
from murphy_reader import DROP_DUPLICATE, DROP_STALE, filter_staleness, staleness
from murphy_reader.progress import ProgressPublisher, version_record

BROKERS = os.environ.get("MURPHY_KAFKA_BROKERS")
broker = pytest.mark.skipif(not BROKERS, reason="MURPHY_KAFKA_BROKERS not set: no real Kafka broker")


def test_staleness_is_trainer_version_minus_row_version():
    rb = make_batch(5)  # policy_version 0..4
    assert staleness(rb, 4) == [4, 3, 2, 1, 0]
    assert filter_staleness(rb, 4, 1).column("policy_version").to_pylist() == [3, 4]


def test_records_match_the_go_contract():
    rec = version_record(3, "run-v3", checkpoint_uri="/ckpt/3")
    assert rec["schema_version"] == 2 and rec["version"] == 3 and rec["created_at"].endswith("Z")
    with pytest.raises(ValueError):
        version_record(0, "m")
    with pytest.raises(ValueError):
        ProgressPublisher.__init__(object.__new__(ProgressPublisher), "x", "t", "a", max_staleness=1, trees_per_version=0)


def test_version_start_is_fixed_by_a_versions_first_record():
    pub = object.__new__(ProgressPublisher)
    pub.trainer_id, pub.rank, pub.group_id, pub.max_staleness, pub.trees_per_version = "a", 0, "g", 1, 4
    pub._version, pub._version_start = None, {}
    assert pub.record(0, {0: 0})["version_start"] == {"0": 0}
    assert pub.record(0, {0: 2})["version_start"] == {"0": 0}  # partway through version 0
    rec = pub.record(1, {0: 4})
    assert rec["version_start"] == {"0": 4} and rec["consumed"] == {"0": 4}
    assert pub.record(1, {0: 6})["version_start"] == {"0": 4}


class _Msg:
    """A batches-topic message as confluent-kafka gives it."""

    def __init__(self, rb, partition=0, offset=0):
        self._value, self._partition, self._offset = stream_bytes(rb), partition, offset

    def value(self):
        return self._value

    def topic(self):
        return "t.batches"

    def partition(self):
        return self._partition

    def offset(self):
        return self._offset


def _headers(rb, part=0):
    pv = rb.column("policy_version").to_pylist()
    return {"batch_id": rb.column("batch_id")[0].as_py(), "rows": str(rb.num_rows), "trees": str(rb.num_rows),
            "source_partition": str(part), "last_offset": str(rb.column("source_offset").to_pylist()[-1]),
            "min_policy_version": str(min(pv)), "max_policy_version": str(max(pv))}


def _reader(policy_version=None, max_staleness=None):
    from murphy_reader.kafka import KafkaBatchReader

    r = object.__new__(KafkaBatchReader)  # no consumer: batches are handed to _decode
    r._init_state(policy_version, max_staleness)
    return r


def test_reader_counts_trained_rows_by_staleness():
    # Bounded: rows of versions 0..4 at trainer version 4, eta 2: versions
    # 2..4 are yielded (staleness 2, 1, 0), 0..1 dropped as stale; a whole
    # batch older than the bound and a duplicate are not trained.
    version = 4
    r = _reader(lambda: version, 2)
    assert r._decode(_Msg(make_batch(5, first=0)), _headers(make_batch(5, first=0))) is not None
    old = make_batch(2, first=10)
    old = old.set_column(old.schema.get_field_index("policy_version"), "policy_version", pa.array([1, 1], pa.int64()))
    assert r._decode(_Msg(old), _headers(old)) is None
    assert r._decode(_Msg(make_batch(5, first=0)), _headers(make_batch(5, first=0))) is None  # duplicate
    version = 5  # the trainer moved on: the same rows are one version staler
    b = make_batch(5, first=20)
    assert r._decode(_Msg(b), _headers(b)).num_rows == 2  # versions 3, 4
    assert r.staleness_rows == {0: 1, 1: 2, 2: 2}
    assert r.trained_staleness == r.staleness_rows
    assert r.dropped_rows == {DROP_STALE: 2 + 2 + 3, DROP_DUPLICATE: 5}
    # Unbounded with a version: every row is trained and counted.
    u = _reader(3)
    b = make_batch(5)
    assert u._decode(_Msg(b), _headers(b)).num_rows == 5
    assert u.trained_staleness == {3: 1, 2: 1, 1: 1, 0: 1, -1: 1}
    # Without the trainer's version nothing is counted, and nothing reported.
    n = _reader()
    assert n._decode(_Msg(b), _headers(b)).num_rows == 5 and n.trained_staleness is None


def test_progress_reports_rows_trained_by_staleness(monkeypatch):
    import murphy_reader.progress as progress

    assert progress.staleness_counts({0: 3, 2: 1, -1: 2}) == {"0": 5, "2": 1}
    with pytest.raises(ValueError):
        progress.staleness_counts({1: -1})
    sent = []
    monkeypatch.setattr(progress, "_send", lambda _p, topic, key, value, _t: sent.append((topic, key, value)))
    pub = object.__new__(ProgressPublisher)
    pub.topic, pub.trainer_id, pub.rank, pub.group_id, pub.max_staleness, pub.trees_per_version = "tp", "a", 1, "g", 2, 4
    pub._version, pub._version_start, pub._p, pub._timeout, pub.published = None, {}, None, 1.0, 0
    pub._lock, pub._last = __import__("threading").Lock(), None
    r = _reader(lambda: 4, 2)
    b = make_batch(5)
    r._decode(_Msg(b), _headers(b))
    rec = pub.publish_reader(4, r)
    assert sent == [("tp", "a/1", rec)]
    assert rec["rows_trained_staleness"] == {"0": 1, "1": 1, "2": 1}
    assert rec["rows_dropped"] == {DROP_STALE: 2, DROP_DUPLICATE: 0}
    # A reader that does not know the trainer's version reports no counts
    # (the field is optional: generate then exports no histogram).
    assert "rows_trained_staleness" not in pub.publish_reader(4, _reader())
    assert pub.record(4, {}, rows_trained_staleness={})["rows_trained_staleness"] == {}


@pytest.fixture
def topics():
    ck = pytest.importorskip("confluent_kafka")
    from confluent_kafka.admin import AdminClient, NewTopic

    run = uuid.uuid4().hex[:8]
    names = {k: f"versions-test-{run}.{k}" for k in ("batches", "trainer-progress", "policy-versions")}
    admin = AdminClient({"bootstrap.servers": BROKERS})
    new = [NewTopic(names["batches"], num_partitions=3, replication_factor=1)] + [
        NewTopic(names[k], num_partitions=1, replication_factor=1, config={"cleanup.policy": "compact"})
        for k in ("trainer-progress", "policy-versions")]
    for f in admin.create_topics(new).values():
        f.result(30)
    yield names
    for f in admin.delete_topics(list(names.values())).values():
        try:
            f.result(30)
        except Exception:
            pass
    del ck


def produce(topic, batches, duplicate=None):
    import confluent_kafka as ck

    p = ck.Producer({"bootstrap.servers": BROKERS, "acks": "all", "message.max.bytes": 32 << 20})
    msgs = list(batches) + ([duplicate] if duplicate else [])
    for part, rb in msgs:
        bid = rb.column("batch_id")[0].as_py()
        pv = rb.column("policy_version").to_pylist()
        last = rb.column("source_offset").to_pylist()[-1]
        headers = {"batch_id": bid, "rows": str(rb.num_rows), "trees": str(rb.num_rows),
                   "source_partition": str(part), "last_offset": str(last),
                   "min_policy_version": str(min(pv)), "max_policy_version": str(max(pv)), "schema_version": "1"}
        p.produce(topic, stream_bytes(rb, "zstd"), partition=part, headers=list(headers.items()))
    assert p.flush(30) == 0


def read_all(topic):
    import confluent_kafka as ck

    c = ck.Consumer({"bootstrap.servers": BROKERS, "group.id": f"check-{uuid.uuid4().hex[:6]}",
                     "auto.offset.reset": "earliest", "enable.auto.commit": False})
    c.subscribe([topic])
    out = []
    import time

    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is None:
            if out:
                break
            continue
        if not m.error():
            out.append((m.key().decode(), json.loads(m.value())))
    c.close()
    return out


@broker
def test_two_trainers_different_bounds_one_stream(topics):
    from murphy_reader import KafkaBatchReader

    # 3 partitions x 2 batches of 5 rows, policy versions 0..4 in each batch,
    # plus one whole batch at version 0 (dropped by its header) and a duplicate.
    bs = [(part, make_batch(5, partition=part, first=10 * k, seed=part * 10 + k)) for part in range(3) for k in range(2)]
    old = make_batch(3, partition=0, first=100, seed=99)
    old = old.set_column(old.schema.get_field_index("policy_version"), "policy_version",
                         __import__("pyarrow").array([0, 0, 0], __import__("pyarrow").int64()))
    produce(topics["batches"], bs + [(0, old)], duplicate=bs[0])
    run = uuid.uuid4().hex[:6]
    trainers = {"strict": 1, "loose": 3}  # max_staleness at trainer version 4
    got = {}
    for name, eta in trainers.items():
        pub = ProgressPublisher(BROKERS, topics["trainer-progress"], name, max_staleness=eta, trees_per_version=4,
                                group_id=f"{name}-{run}")
        with KafkaBatchReader(BROKERS, topics["batches"], f"{name}-{run}", policy_version=lambda: 4,
                              max_staleness=eta) as r:
            batches = r.take(20, timeout=30, idle=4)
            r.commit()
            rows = [v for b in batches for v in b.record_batch.column("policy_version").to_pylist()]
            got[name] = (rows, dict(r.dropped_rows), dict(r.consumed))
            assert max(r.staleness_rows) <= eta and sum(r.staleness_rows.values()) == len(rows)
            pub.publish_reader(4, r)
    for name, eta in trainers.items():
        rows, dropped, consumed = got[name]
        # Exactly what its bound allows: every row with staleness <= eta, once.
        assert sorted(rows) == sorted(v for _, rb in bs for v in rb.column("policy_version").to_pylist() if 4 - v <= eta)
        assert all(4 - v <= eta for v in rows)
        assert dropped[DROP_STALE] == 6 * (4 - eta) + 3
        assert dropped[DROP_DUPLICATE] == 5
        assert consumed == {0: 101 + 2, 1: 15, 2: 15}
    progress = dict(read_all(topics["trainer-progress"]))
    assert set(progress) == {"strict/0", "loose/0"}
    assert progress["strict/0"]["max_staleness"] == 1 and progress["strict/0"]["consumed"] == {"0": 103, "1": 15, "2": 15}
    assert progress["loose/0"]["rows_dropped"][DROP_STALE] == 6 + 3
    for name, eta in trainers.items():  # 6 rows at each staleness within the bound
        assert progress[f"{name}/0"]["rows_trained_staleness"] == {str(s): 6 for s in range(eta + 1)}


@broker
def test_publish_version(topics):
    from murphy_reader import publish_version

    publish_version(BROKERS, topics["policy-versions"], 1, "run-v1", checkpoint_uri="/ckpt/1")
    publish_version(BROKERS, topics["policy-versions"], 2, "run-v2", checkpoint_uri="/ckpt/2")
    recs = read_all(topics["policy-versions"])
    assert [k for k, _ in recs] == ["1", "2"]
    assert recs[1][1]["model"] == "run-v2" and recs[1][1]["schema_version"] == 2


@broker
def test_progress_resumes_from_the_last_record_and_keeps_its_heartbeat():
    import time

    from murphy_reader.progress import last_progress
    from confluent_kafka.admin import AdminClient, NewTopic

    topic = f"t-{uuid.uuid4().hex[:8]}.trainer-progress"
    admin = AdminClient({"bootstrap.servers": BROKERS})
    admin.create_topics([NewTopic(topic, 2, 1, config={"cleanup.policy": "compact"})])[topic].result()
    first = ProgressPublisher(BROKERS, topic, "tr", max_staleness=1, trees_per_version=4)
    first.publish(2, {0: 3})  # version 2 begins at 3
    rec = first.publish(2, {0: 5})
    assert rec["version_start"] == {"0": 3}
    # A restarted trainer: its version's start is the one it had, not where
    # it stands now (that would undercount the version's trees).
    again = ProgressPublisher(BROKERS, topic, "tr", max_staleness=1, trees_per_version=4)
    resumed = again.resume(BROKERS)
    assert resumed["consumed"] == {"0": 5} and resumed["policy_version"] == 2
    assert again.record(2, {0: 6})["version_start"] == {"0": 3}
    # A long step: the heartbeat republishes the last record, fresh.
    again.publish(2, {0: 6})
    again.start_heartbeat(0.2)
    time.sleep(1.0)
    again.stop_heartbeat()
    last = last_progress(BROKERS, topic, "tr")
    assert again.heartbeats >= 2 and last["consumed"] == {"0": 6} and last["updated_at"] > rec["updated_at"]
    assert last_progress(BROKERS, topic, "nobody") is None
