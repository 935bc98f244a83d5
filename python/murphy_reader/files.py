"""Reading batches from the emit stage's files (Arrow IPC file or Parquet).

Complete files are named <topic>-p<partition>-<first>-<last>.arrow|.parquet;
files still being written start with a dot and end in .tmp and are never
read. Each IPC record batch / Parquet row group is one emitted batch.
"""

from __future__ import annotations

import os
import re
import time
from typing import Iterator, Optional

import pyarrow as pa
import pyarrow.parquet as pq

from .batch import (
    Batch,
    Deduper,
    PolicyVersion,
    batch_id_of,
    current_version,
    filter_staleness,
)
from .schema import check_schema

_FILE = re.compile(r"^(?P<topic>.+)-p(?P<partition>\d{5,})-(?P<first>\d{20})-(?P<last>\d{20})\.(?P<ext>arrow|parquet)$")

FORMATS = {"ipc": "arrow", "parquet": "parquet"}


def list_files(directory: str, fmt: str = "ipc", rank: int = 0, world_size: int = 1) -> list[str]:
    """Complete files of one format for this rank, in (partition, offset) order."""
    if fmt not in FORMATS:
        raise ValueError(f"format {fmt!r} is not one of {sorted(FORMATS)}")
    if world_size < 1 or not 0 <= rank < world_size:
        raise ValueError(f"rank {rank} outside world size {world_size}")
    found = []
    for name in os.listdir(directory):
        m = _FILE.match(name)
        if not m or m["ext"] != FORMATS[fmt]:
            continue
        p = int(m["partition"])
        if p % world_size != rank:
            continue
        found.append((m["topic"], p, int(m["first"]), name))
    found.sort()
    return [os.path.join(directory, f[3]) for f in found]


def read_file(path: str) -> Iterator[Batch]:
    """The batches of one complete file, in order."""
    if path.endswith(".parquet"):
        pf = pq.ParquetFile(path)
        cfg = check_schema(pf.schema_arrow)
        for i in range(pf.num_row_groups):
            table = pf.read_row_group(i).combine_chunks()
            for rb in table.to_batches():
                yield Batch(batch_id_of(rb), rb, cfg, (path, i))
        return
    with pa.memory_map(path) as source:
        reader = pa.ipc.open_file(source)
        cfg = check_schema(reader.schema)
        for i in range(reader.num_record_batches):
            rb = reader.get_batch(i)
            yield Batch(batch_id_of(rb), rb, cfg, (path, i))


class FileBatchReader:
    """Iterates the batches in a directory for one trainer rank.

    Ranks split by source partition (p % world_size == rank). With follow,
    the directory is polled for new complete files until close().
    """

    def __init__(
        self,
        directory: str,
        *,
        fmt: str = "ipc",
        rank: int = 0,
        world_size: int = 1,
        follow: bool = False,
        poll_interval: float = 1.0,
        policy_version: Optional[PolicyVersion] = None,
        max_staleness: Optional[int] = None,
    ):
        if (max_staleness is None) != (policy_version is None):
            raise ValueError("max_staleness and policy_version go together")
        self.directory, self.fmt = directory, fmt
        self.rank, self.world_size = rank, world_size
        self.follow, self.poll_interval = follow, poll_interval
        self._policy_version, self._max_staleness = policy_version, max_staleness
        self._done: set[str] = set()
        self._dedupe = Deduper()
        self._closed = False
        self.filtered_rows = 0

    @property
    def duplicates_dropped(self) -> int:
        return self._dedupe.dropped

    def close(self) -> None:
        self._closed = True

    def _new_files(self) -> list[str]:
        files = [f for f in list_files(self.directory, self.fmt, self.rank, self.world_size) if f not in self._done]
        return files

    def __iter__(self) -> Iterator[Batch]:
        while not self._closed:
            files = self._new_files()
            for path in files:
                self._done.add(path)
                for b in read_file(path):
                    if self._dedupe.seen(b.batch_id):
                        continue
                    if self._max_staleness is not None:
                        rb = filter_staleness(b.record_batch, current_version(self._policy_version), self._max_staleness)
                        self.filtered_rows += b.num_rows - rb.num_rows
                        if rb.num_rows == 0:
                            continue
                        b.record_batch = rb
                    yield b
            if not self.follow:
                return
            if not files:
                time.sleep(self.poll_interval)
