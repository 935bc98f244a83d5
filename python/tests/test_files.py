import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from conftest import make_batch
from murphy_reader import FileBatchReader, SchemaVersionError, list_files, read_file


def name(topic, p, first, last, ext):
    return f"{topic}-p{p:05d}-{first:020d}-{last:020d}.{ext}"


def write_ipc(path, batches, compression=None):
    with pa.OSFile(str(path), "wb") as f:
        with pa.ipc.new_file(f, batches[0].schema, options=pa.ipc.IpcWriteOptions(compression=compression)) as w:
            for b in batches:
                w.write_batch(b)


def write_parquet(path, batches):
    with pq.ParquetWriter(str(path), batches[0].schema, store_schema=True) as w:
        for b in batches:
            w.write_batch(b, row_group_size=b.num_rows)


@pytest.fixture
def out_dir(tmp_path):
    # partition 0: two files, partition 1: one file, plus a file being written
    b00 = make_batch(4, partition=0, first=0)
    b01 = make_batch(3, partition=0, first=4, seed=1)
    b02 = make_batch(5, partition=0, first=7, seed=2)
    b10 = make_batch(6, partition=1, first=0, seed=3)
    for fmt, ext, write in [("ipc", "arrow", write_ipc), ("parquet", "parquet", write_parquet)]:
        write(tmp_path / name("t.credited", 0, 0, 6, ext), [b00, b01])
        write(tmp_path / name("t.credited", 0, 7, 11, ext), [b02])
        write(tmp_path / name("t.credited", 1, 0, 5, ext), [b10])
        (tmp_path / f".t.credited-p00000-{12:020d}.{ext}.tmp").write_bytes(b"half written")
    return tmp_path, {"p0": [b00, b01, b02], "p1": [b10]}


@pytest.mark.parametrize("fmt", ["ipc", "parquet"])
def test_reads_every_batch_in_order_and_skips_temp_files(out_dir, fmt):
    d, want = out_dir
    got = list(FileBatchReader(str(d), fmt=fmt))
    assert [b.batch_id for b in got] == [b.column("batch_id")[0].as_py() for b in want["p0"] + want["p1"]]
    for g, w in zip(got, want["p0"] + want["p1"]):
        assert g.record_batch.to_pylist() == w.to_pylist()
        assert g.credit_config["strategy"] == "mars"


@pytest.mark.parametrize("fmt", ["ipc", "parquet"])
def test_ranks_split_by_partition(out_dir, fmt):
    d, want = out_dir
    r0 = [b.batch_id for b in FileBatchReader(str(d), fmt=fmt, rank=0, world_size=2)]
    r1 = [b.batch_id for b in FileBatchReader(str(d), fmt=fmt, rank=1, world_size=2)]
    assert len(r0) == 3 and len(r1) == 1
    assert not set(r0) & set(r1)


def test_duplicate_batches_are_dropped(out_dir):
    d, want = out_dir
    # the same batch again in a later file (e.g. copied by hand)
    write_ipc(d / name("t.credited", 0, 12, 12, "arrow"), [want["p0"][1]])
    r = FileBatchReader(str(d), fmt="ipc")
    ids = [b.batch_id for b in r]
    assert len(ids) == len(set(ids)) == 4
    assert r.duplicates_dropped == 1


def test_staleness_filter(out_dir):
    d, _ = out_dir
    r = FileBatchReader(str(d), fmt="ipc", policy_version=lambda: 4, max_staleness=0)
    rows = [v for b in r for v in b.record_batch.column("policy_version").to_pylist()]
    assert rows and set(rows) == {4}
    assert r.filtered_rows > 0


def test_unknown_schema_version_is_refused(tmp_path):
    b = make_batch(2)
    b = b.replace_schema_metadata({**b.schema.metadata, b"murphy.schema_version": b"9"})
    write_ipc(tmp_path / name("t.credited", 0, 0, 1, "arrow"), [b])
    with pytest.raises(SchemaVersionError):
        list(FileBatchReader(str(tmp_path)))


def test_list_files_rejects_bad_rank(tmp_path):
    with pytest.raises(ValueError):
        list_files(str(tmp_path), "ipc", rank=2, world_size=2)
    with pytest.raises(ValueError):
        list_files(str(tmp_path), "csv")
