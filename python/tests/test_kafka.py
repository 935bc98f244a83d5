"""KafkaBatchReader against the real broker (MURPHY_KAFKA_BROKERS)."""

import os
import uuid

import pytest

ck = pytest.importorskip("confluent_kafka")
BROKERS = os.environ.get("MURPHY_KAFKA_BROKERS")
pytestmark = pytest.mark.skipif(not BROKERS, reason="MURPHY_KAFKA_BROKERS not set: no real Kafka broker")

from conftest import make_batch, stream_bytes  # noqa: E402
from murphy_reader import KafkaBatchReader  # noqa: E402


@pytest.fixture
def topic():
    from confluent_kafka.admin import AdminClient, NewTopic

    name = f"reader-test-{uuid.uuid4().hex[:8]}.batches"
    admin = AdminClient({"bootstrap.servers": BROKERS})
    for f in admin.create_topics([NewTopic(name, num_partitions=3, replication_factor=1)]).values():
        f.result(30)
    yield name
    for f in admin.delete_topics([name]).values():
        try:
            f.result(30)
        except Exception:
            pass


def produce(topic, batches, duplicate_first=False):
    p = ck.Producer({"bootstrap.servers": BROKERS, "acks": "all", "message.max.bytes": 32 << 20})
    msgs = list(batches)
    if duplicate_first:
        msgs.append(msgs[0])
    for part, rb in msgs:
        bid = rb.column("batch_id")[0].as_py()
        pv = rb.column("policy_version").to_pylist()
        headers = {"batch_id": bid, "rows": str(rb.num_rows), "min_policy_version": str(min(pv)),
                   "max_policy_version": str(max(pv)), "schema_version": "1"}
        p.produce(topic, stream_bytes(rb, "zstd"), partition=part, headers=list(headers.items()))
    assert p.flush(30) == 0


def batches(n_per_partition=3):
    out = []
    for part in range(3):
        for k in range(n_per_partition):
            out.append((part, make_batch(4, partition=part, first=10 * k, seed=part * 10 + k)))
    return out


def test_groups_see_everything_ranks_split_and_duplicates_drop(topic):
    bs = batches()
    produce(topic, bs, duplicate_first=True)
    want = {rb.column("batch_id")[0].as_py() for _, rb in bs}
    run = uuid.uuid4().hex[:6]
    for group in ("a", "b"):
        with KafkaBatchReader(BROKERS, topic, f"{group}-{run}") as r:
            got = [b.batch_id for b in r.take(len(want) + 1, timeout=20, idle=3)]
            assert sorted(got) == sorted(want)
            assert r.duplicates_dropped == 1
    ranks = []
    for rank in range(2):
        with KafkaBatchReader(BROKERS, topic, f"dp-{run}", rank=rank, world_size=2) as r:
            ranks.append({b.batch_id for b in r.take(len(want), timeout=20, idle=3)})
    assert not ranks[0] & ranks[1]
    assert ranks[0] | ranks[1] == want


def test_commit_resumes_after_the_last_batch(topic):
    bs = batches()
    produce(topic, bs[:4])
    group = f"resume-{uuid.uuid4().hex[:6]}"
    with KafkaBatchReader(BROKERS, topic, group) as r:
        first = [b.batch_id for b in r.take(4, timeout=20)]
        r.commit()
    produce(topic, bs[4:])
    with KafkaBatchReader(BROKERS, topic, group) as r:
        rest = [b.batch_id for b in r.take(len(bs), timeout=20, idle=3)]
    assert len(first) == 4
    assert not set(first) & set(rest)
    assert len(first) + len(rest) == len(bs)


def test_stale_batches_are_filtered(topic):
    produce(topic, batches(1))  # policy versions 0..3 per batch
    with KafkaBatchReader(BROKERS, topic, f"stale-{uuid.uuid4().hex[:6]}", policy_version=lambda: 5, max_staleness=2) as r:
        got = r.take(3, timeout=20, idle=3)
        versions = {v for b in got for v in b.record_batch.column("policy_version").to_pylist()}
    assert versions == {3}
    assert r.filtered_rows == 9
