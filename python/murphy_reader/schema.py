"""The Arrow schema of murphy's emitted batches (stages/emit/SCHEMA.md).

A change to the columns bumps SCHEMA_VERSION on both sides; this reader
refuses versions it does not know rather than misreading them.
"""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa

SCHEMA_VERSION = 1

META_SCHEMA_VERSION = b"murphy.schema_version"
META_RECORD_SCHEMA_VERSION = b"murphy.record_schema_version"
META_CREDIT_CONFIG = b"murphy.credit_config"
META_BATCH_ID = b"murphy.batch_id"


class SchemaVersionError(ValueError):
    """The batch was written with a schema this reader does not read."""


def _fields() -> list[pa.Field]:
    dict_str = pa.dictionary(pa.int32(), pa.string())
    ts = pa.timestamp("us", tz="UTC")
    li32 = pa.list_(pa.int32())
    lf32 = pa.list_(pa.float32())
    spec = [
        ("batch_id", pa.string(), False),
        ("source_partition", pa.int32(), False),
        ("source_offset", pa.int64(), False),
        ("tree_id", pa.string(), False),
        ("task_id", pa.string(), False),
        ("node_id", pa.string(), False),
        ("parent_id", pa.string(), False),
        ("group_id", pa.string(), False),
        ("turn", pa.int32(), False),
        ("max_turns", pa.int32(), False),
        ("group_size", pa.int32(), False),
        ("sample_index", pa.int32(), False),
        ("children_requested", pa.int32(), False),
        ("prompt_token_ids", li32, False),
        ("response_token_ids", li32, False),
        ("response_logprobs", lf32, False),
        ("prompt_text", pa.string(), False),
        ("response_text", pa.string(), False),
        ("reward", pa.float64(), False),
        ("credited_reward", pa.float64(), False),
        ("advantage", pa.float64(), False),
        ("loss_weights", lf32, False),
        ("step_ends", li32, False),
        ("step_scores", lf32, False),
        ("route", dict_str, False),
        ("failure_cause", dict_str, False),
        ("status", dict_str, False),
        ("finish_reason", dict_str, False),
        ("in_group_stats", pa.bool_(), False),
        ("tests_passed", pa.int32(), False),
        ("tests_total", pa.int32(), False),
        ("policy", pa.string(), False),
        ("policy_version", pa.int64(), False),
        ("incomplete", pa.bool_(), False),
        ("pruned_nodes", pa.int32(), False),
        ("generated_at", ts, True),
        ("executed_at", ts, True),
        ("governed_at", ts, True),
        ("credited_at", ts, True),
        ("emitted_at", ts, False),
    ]
    return [pa.field(n, t, nullable=nullable) for n, t, nullable in spec]


def expected_schema(credit_config: dict[str, Any] | None = None) -> pa.Schema:
    """The schema of version SCHEMA_VERSION, with its metadata."""
    meta = {
        META_SCHEMA_VERSION: str(SCHEMA_VERSION).encode(),
        META_RECORD_SCHEMA_VERSION: b"1",
        META_CREDIT_CONFIG: json.dumps(credit_config or {}).encode(),
    }
    return pa.schema(_fields(), metadata=meta)


def _same_type(got: pa.DataType, want: pa.DataType) -> bool:
    if pa.types.is_list(want):
        # Parquet round trips may rename the list's item field.
        return pa.types.is_list(got) and got.value_type.equals(want.value_type)
    return got.equals(want)


def check_schema(schema: pa.Schema) -> dict[str, Any]:
    """Verify that schema is a murphy batch schema this reader understands.

    Returns the credit/pruning configuration carried in the metadata.
    Raises SchemaVersionError otherwise.
    """
    meta = schema.metadata or {}
    version = meta.get(META_SCHEMA_VERSION)
    if version is None:
        raise SchemaVersionError("no murphy.schema_version metadata: not a murphy batch")
    if version != str(SCHEMA_VERSION).encode():
        raise SchemaVersionError(
            f"batch schema version {version.decode(errors='replace')}, this reader reads {SCHEMA_VERSION}"
        )
    for want in _fields():
        idx = schema.get_field_index(want.name)
        if idx < 0:
            raise SchemaVersionError(f"column {want.name} missing")
        got = schema.field(idx)
        if not _same_type(got.type, want.type):
            raise SchemaVersionError(f"column {want.name} is {got.type}, want {want.type}")
    raw = meta.get(META_CREDIT_CONFIG)
    if raw is None:
        raise SchemaVersionError("no murphy.credit_config metadata")
    try:
        return json.loads(raw)
    except ValueError as e:
        raise SchemaVersionError(f"credit config is not JSON: {e}") from e
