"""Builders of murphy batches in pure pyarrow, for tests that need no Go."""

from __future__ import annotations

import datetime as dt
import os
import random
import sys
from typing import Any

import pyarrow as pa
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from murphy_reader.schema import expected_schema  # noqa: E402

CREDIT_CONFIG = {"strategy": "mars", "gamma": 0.9, "z": "1", "advantage": "std", "epsilon": 1e-6}


def make_rows(n: int, *, seed: int = 0, partition: int = 0, first: int = 0, batch_id: str | None = None,
              topic: str = "t.credited", vocab: int = 1000) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    last = first + max(n - 1, 0)
    bid = batch_id or f"{topic}:{partition}:{first}-{last}"
    now = dt.datetime(2026, 3, 1, tzinfo=dt.timezone.utc)
    rows = []
    for i in range(n):
        r = rng.randint(0, 12)
        route = rng.choice(["train", "train", "masked", "last_step_penalty"])
        rows.append({
            "batch_id": bid, "source_partition": partition, "source_offset": first + i,
            "tree_id": f"run/task-{i % 3}/{i}", "task_id": f"task-{i % 3}", "node_id": f"n{i}",
            "parent_id": "", "group_id": f"r{i // 4}", "turn": 1, "max_turns": 2, "group_size": 4,
            "sample_index": i % 4, "children_requested": 0,
            "prompt_token_ids": [rng.randrange(1, vocab) for _ in range(rng.randint(1, 8))],
            "response_token_ids": [rng.randrange(1, vocab) for _ in range(r)],
            "response_logprobs": [-rng.random() * 3 for _ in range(r)] if rng.random() < 0.8 else [],
            "prompt_text": "def f(x):", "response_text": "  return x",
            "reward": rng.random(), "credited_reward": rng.random(), "advantage": rng.gauss(0, 1),
            "loss_weights": [0.0 if route == "masked" else 1.0 for _ in range(r)],
            "step_ends": [], "step_scores": [],
            "route": route, "failure_cause": "" if route == "train" else "infra.sandbox",
            "status": "passed", "finish_reason": "stop", "in_group_stats": True,
            "tests_passed": 1, "tests_total": 2, "policy": "simulated", "policy_version": i % 5,
            "incomplete": False, "pruned_nodes": 0,
            "generated_at": now, "executed_at": now, "governed_at": None, "credited_at": now, "emitted_at": now,
        })
    return rows


# Fixed dictionaries, as the emit stage keeps them: an Arrow IPC file holds
# one dictionary per column.
VOCABS = {
    "route": ["train", "masked", "last_step_penalty"],
    "failure_cause": ["", "infra.sandbox"],
    "status": ["passed"],
    "finish_reason": ["stop", "length", ""],
}


def from_rows(rows: list[dict[str, Any]]) -> pa.RecordBatch:
    schema = expected_schema(CREDIT_CONFIG)
    cols = []
    for f in schema:
        values = [r[f.name] for r in rows]
        if f.name in VOCABS:
            vocab = VOCABS[f.name]
            idx = pa.array([vocab.index(v) for v in values], pa.int32())
            cols.append(pa.DictionaryArray.from_arrays(idx, pa.array(vocab, pa.string())))
        else:
            cols.append(pa.array(values, f.type))
    return pa.RecordBatch.from_arrays(cols, schema=schema)


def make_batch(n: int, **kw: Any) -> pa.RecordBatch:
    return from_rows(make_rows(n, **kw))


def stream_bytes(rb: pa.RecordBatch, compression: str | None = None) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, rb.schema, options=pa.ipc.IpcWriteOptions(compression=compression)) as w:
        w.write_batch(rb)
    return sink.getvalue().to_pybytes()


@pytest.fixture
def batch_factory():
    return make_batch
