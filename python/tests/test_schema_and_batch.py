import pyarrow as pa
import pytest

from conftest import CREDIT_CONFIG, make_batch, stream_bytes
from murphy_reader import (
    Deduper,
    SchemaVersionError,
    check_schema,
    expected_schema,
    filter_staleness,
    parse_batch_id,
    ranks_partitions,
    read_stream,
)


def with_meta(schema, **changes):
    meta = dict(schema.metadata)
    for k, v in changes.items():
        key = k.replace("_", ".", 1).encode()
        if v is None:
            meta.pop(key, None)
        else:
            meta[key] = v
    return schema.with_metadata(meta)


def test_check_schema_returns_credit_config():
    assert check_schema(expected_schema(CREDIT_CONFIG)) == CREDIT_CONFIG


@pytest.mark.parametrize(
    "schema, match",
    [
        (with_meta(expected_schema(), murphy_schema_version=b"2"), "version 2"),
        (with_meta(expected_schema(), murphy_schema_version=None), "not a murphy batch"),
        (with_meta(expected_schema(), murphy_credit_config=None), "credit_config"),
        (with_meta(expected_schema(), murphy_credit_config=b"{"), "not JSON"),
        (expected_schema().remove(expected_schema().get_field_index("advantage")), "advantage missing"),
        (
            expected_schema().set(
                expected_schema().get_field_index("response_logprobs"), pa.field("response_logprobs", pa.list_(pa.float64()))
            ),
            "response_logprobs",
        ),
    ],
)
def test_check_schema_rejects(schema, match):
    with pytest.raises(SchemaVersionError, match=match):
        check_schema(schema)


@pytest.mark.parametrize("compression", [None, "zstd", "lz4"])
def test_read_stream_round_trip(compression):
    rb = make_batch(9, seed=3)
    got, cfg = read_stream(stream_bytes(rb, compression))
    assert cfg == CREDIT_CONFIG
    assert got.equals(rb)


def test_read_stream_rejects_unknown_version():
    rb = make_batch(2)
    rb = rb.replace_schema_metadata(with_meta(rb.schema, murphy_schema_version=b"7").metadata)
    with pytest.raises(SchemaVersionError):
        read_stream(stream_bytes(rb))


def test_parse_batch_id():
    r = parse_batch_id("pre.credited:3:100-150")
    assert (r.topic, r.partition, r.first, r.last) == ("pre.credited", 3, 100, 150)
    assert r.batch_id == "pre.credited:3:100-150"
    for bad in ["x:1:5-4", "x:1:5", "1-2", "x:a:1-2"]:
        with pytest.raises(ValueError):
            parse_batch_id(bad)


def test_filter_staleness_keeps_recent_rows():
    rb = make_batch(20)  # policy_version = i % 5
    kept = filter_staleness(rb, policy_version=4, max_staleness=1)
    assert set(kept.column("policy_version").to_pylist()) == {3, 4}
    assert kept.num_rows == 8
    assert filter_staleness(rb, policy_version=4, max_staleness=10) is rb


def test_deduper_drops_repeats_within_capacity():
    d = Deduper(capacity=2)
    assert [d.seen(x) for x in ["a", "b", "a", "c", "d", "a"]] == [False, False, True, False, False, False]
    assert d.dropped == 1


@pytest.mark.parametrize("n, world", [(8, 2), (8, 3), (5, 5), (3, 4)])
def test_ranks_split_partitions_disjointly(n, world):
    parts = list(range(n))
    shares = [ranks_partitions(parts, r, world) for r in range(world)]
    flat = [p for s in shares for p in s]
    assert sorted(flat) == parts
    assert len(flat) == len(set(flat))
    with pytest.raises(ValueError):
        ranks_partitions(parts, world, world)
