"""Trainer-side reader of murphy's credited Arrow batches.

Batches come from the batches topic (KafkaBatchReader: one consumer group
per trainer, partitions split across data-parallel ranks) or from the emit
stage's files (FileBatchReader: Arrow IPC or Parquet). to_numpy / to_torch
turn a batch into padded trainer tensors.
"""

from .batch import (
    DROP_DUPLICATE,
    DROP_STALE,
    Batch,
    BatchRange,
    Deduper,
    batch_id_of,
    filter_staleness,
    parse_batch_id,
    ranks_partitions,
    read_stream,
    staleness,
)
from .files import FileBatchReader, list_files, read_file
from .schema import SCHEMA_VERSION, SchemaVersionError, check_schema, expected_schema
from .tensors import to_numpy, to_torch


def __getattr__(name: str):
    # confluent-kafka is optional: import the Kafka reader on first use.
    if name == "KafkaBatchReader":
        from .kafka import KafkaBatchReader

        return KafkaBatchReader
    if name in ("ProgressPublisher", "publish_version", "version_record", "last_progress"):
        from . import progress

        return getattr(progress, name)
    raise AttributeError(name)


__all__ = [
    "DROP_DUPLICATE",
    "DROP_STALE",
    "ProgressPublisher",
    "last_progress",
    "publish_version",
    "staleness",
    "version_record",
    "SCHEMA_VERSION",
    "Batch",
    "BatchRange",
    "Deduper",
    "FileBatchReader",
    "KafkaBatchReader",
    "SchemaVersionError",
    "batch_id_of",
    "check_schema",
    "expected_schema",
    "filter_staleness",
    "list_files",
    "parse_batch_id",
    "ranks_partitions",
    "read_file",
    "read_stream",
    "to_numpy",
    "to_torch",
]
