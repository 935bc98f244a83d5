"""Checks, with pyarrow, batches written by the Go emit stage.

Usage: check_go_output.py DIR

DIR holds expected.json (written by the Go test: the rows every artifact set
must hold, the credit config, and per case the compression) and, per case,
streams/*.arrows (one Kafka message value each, with .json headers),
files/*.arrow and files/*.parquet. Every expected row must appear exactly
once in each artifact set with every value equal; exits non-zero otherwise.
"""

from __future__ import annotations

import glob
import json
import os
import sys

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from murphy_reader import SCHEMA_VERSION, check_schema, parse_batch_id, read_file, read_stream  # noqa: E402

DICT_COLUMNS = ("route", "failure_cause", "status", "finish_reason")
TS_COLUMNS = ("generated_at", "executed_at", "governed_at", "credited_at", "emitted_at")
PARQUET_CODECS = {"none": "UNCOMPRESSED", "zstd": "ZSTD", "lz4": "LZ4"}  # pyarrow names LZ4_RAW "LZ4"


class Mismatch(AssertionError):
    pass


def plain_rows(rb: pa.RecordBatch) -> list[dict]:
    """Rows with timestamps as int64 microseconds and dictionaries decoded."""
    for name in DICT_COLUMNS:
        t = rb.schema.field(name).type
        if not pa.types.is_dictionary(t):
            raise Mismatch(f"column {name} is {t}, not dictionary encoded")
    cols, names = [], []
    for i, f in enumerate(rb.schema):
        c = rb.column(i)
        if f.name in TS_COLUMNS:
            if f.type != pa.timestamp("us", tz="UTC"):
                raise Mismatch(f"column {f.name} is {f.type}")
            c = pc.cast(c, pa.int64())
        elif pa.types.is_dictionary(f.type):
            c = pc.cast(c, pa.string())
        cols.append(c)
        names.append(f.name)
    return pa.RecordBatch.from_arrays(cols, names=names).to_pylist()


def check_set(label: str, batches: list[tuple[str, pa.RecordBatch]], expected: dict, want_config: dict) -> int:
    """batches: (batch id from the container, record batch)."""
    want = {(r["source_partition"], r["source_offset"], r["node_id"]): r for r in expected}
    seen: dict = {}
    ids = set()
    for batch_id, rb in batches:
        cfg = check_schema(rb.schema)
        if cfg != want_config:
            raise Mismatch(f"{label}: credit config {cfg} != {want_config}")
        if batch_id in ids:
            raise Mismatch(f"{label}: batch {batch_id} twice")
        ids.add(batch_id)
        rng = parse_batch_id(batch_id)
        for row in plain_rows(rb):
            if row["batch_id"] != batch_id:
                raise Mismatch(f"{label}: row of {row['batch_id']} in batch {batch_id}")
            if not (rng.first <= row["source_offset"] <= rng.last) or row["source_partition"] != rng.partition:
                raise Mismatch(f"{label}: row at {row['source_partition']}/{row['source_offset']} outside {batch_id}")
            if row.pop("emitted_at") is None:
                raise Mismatch(f"{label}: emitted_at is null")
            key = (row["source_partition"], row["source_offset"], row["node_id"])
            if key in seen:
                raise Mismatch(f"{label}: row {key} twice")
            if key not in want:
                raise Mismatch(f"{label}: unexpected row {key}")
            exp = dict(want[key], batch_id=batch_id)
            if row != exp:
                diff = {k: (row.get(k), exp.get(k)) for k in set(row) | set(exp) if row.get(k) != exp.get(k)}
                raise Mismatch(f"{label}: row {key} differs (got, want): {diff}")
            seen[key] = batch_id
    missing = set(want) - set(seen)
    if missing:
        raise Mismatch(f"{label}: {len(missing)} rows missing, e.g. {sorted(missing)[:3]}")
    # Trees are never split across batches.
    tree_batch: dict = {}
    for (part, off, _), bid in seen.items():
        if tree_batch.setdefault((part, off), bid) != bid:
            raise Mismatch(f"{label}: tree at {part}/{off} split across batches")
    return len(seen)


def check_case(case_dir: str, case: dict, expected: list, want_config: dict) -> list[str]:
    codec = case["compression"]
    report = []
    # Streams: one Kafka message value each; headers beside it.
    streams = []
    for path in sorted(glob.glob(os.path.join(case_dir, "streams", "*.arrows"))):
        with open(path, "rb") as f:
            data = f.read()
        with open(path[: -len(".arrows")] + ".json") as f:
            headers = json.load(f)
        rb, _ = read_stream(data)
        # Plain pyarrow, without the package, reads the same values.
        plain = pa.ipc.open_stream(data).read_all()
        if plain.num_rows != rb.num_rows or headers["rows"] != str(rb.num_rows):
            raise Mismatch(f"{path}: {rb.num_rows} rows, headers say {headers['rows']}")
        if headers["schema_version"] != str(SCHEMA_VERSION) or headers["compression"] != codec:
            raise Mismatch(f"{path}: headers {headers}")
        rng = parse_batch_id(headers["batch_id"])
        if (str(rng.first), str(rng.last)) != (headers["first_offset"], headers["last_offset"]):
            raise Mismatch(f"{path}: offsets headers {headers} disagree with the batch id")
        streams.append((headers["batch_id"], rb))
    if not streams:
        raise Mismatch(f"{case_dir}: no streams")
    n = check_set(f"{codec}/streams", streams, expected, want_config)
    report.append(f"{codec}/streams: {len(streams)} batches, {n} rows")
    for fmt, ext in (("ipc", "arrow"), ("parquet", "parquet")):
        files = sorted(glob.glob(os.path.join(case_dir, "files", f"*.{ext}")))
        if not files:
            raise Mismatch(f"{case_dir}: no {fmt} files")
        if glob.glob(os.path.join(case_dir, "files", ".*.tmp")):
            raise Mismatch(f"{case_dir}: temporary files left")
        batches = []
        for path in files:
            if fmt == "parquet":
                md = pq.ParquetFile(path).metadata
                for g in range(md.num_row_groups):
                    for c in range(md.num_columns):
                        got = md.row_group(g).column(c).compression
                        if got != PARQUET_CODECS[codec]:
                            raise Mismatch(f"{path}: column {c} compressed {got}, want {PARQUET_CODECS[codec]}")
                ids = md.metadata.get(b"murphy.batch_ids", b"").decode().split(",")
            else:
                reader = pa.ipc.open_file(path)
                ids = []
                for i in range(reader.num_record_batches):
                    _, meta = reader.get_batch_with_custom_metadata(i)
                    ids.append(meta[b"murphy.batch_id"].decode())
            got = [(b.batch_id, b.record_batch) for b in read_file(path)]
            if [g[0] for g in got] != ids:
                raise Mismatch(f"{path}: batch ids {ids} in metadata, {[g[0] for g in got]} in rows")
            batches.extend(got)
        n = check_set(f"{codec}/{fmt}", batches, expected, want_config)
        report.append(f"{codec}/{fmt}: {len(files)} files, {len(batches)} batches, {n} rows")
    return report


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    root = argv[1]
    with open(os.path.join(root, "expected.json")) as f:
        spec = json.load(f)
    try:
        for case in spec["cases"]:
            for line in check_case(os.path.join(root, case["dir"]), case, spec["rows"], spec["credit_config"]):
                print(line)
    except Mismatch as e:
        print(f"MISMATCH: {e}", file=sys.stderr)
        return 1
    print(f"OK pyarrow {pa.__version__}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
