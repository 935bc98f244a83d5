"""Checks several trainers reading one batches topic with murphy_reader.

Usage: check_trainers.py BROKERS TOPIC IDS_JSON

IDS_JSON lists every batch id on the topic. Two trainers (consumer groups)
must each receive every batch; two data-parallel ranks of a third trainer
must receive disjoint sets whose union is every batch. Exits non-zero
otherwise.
"""

from __future__ import annotations

import json
import os
import sys
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from murphy_reader import KafkaBatchReader, to_numpy  # noqa: E402


def read_all(brokers: str, topic: str, group: str, want: int, rank: int = 0, world_size: int = 1,
             expect: int | None = None) -> list[str]:
    """Batch ids one rank receives (stops after expect batches or 20 s idle)."""
    ids = []
    with KafkaBatchReader(brokers, topic, group, rank=rank, world_size=world_size) as r:
        idle = 0
        while idle < 20 and (expect is None or len(ids) < expect) and len(ids) < want:
            b = r.poll(1.0)
            if b is None:
                idle += 1
                continue
            idle = 0
            to_numpy(b)  # every batch turns into trainer tensors
            ids.append(b.batch_id)
        r.commit()
    return ids


def main(argv: list[str]) -> int:
    brokers, topic, ids_path = argv[1:4]
    with open(ids_path) as f:
        want = set(json.load(f))
    run = uuid.uuid4().hex[:8]
    ok = True
    for trainer in ("trainer-a", "trainer-b"):
        got = read_all(brokers, topic, f"{trainer}-{run}", len(want))
        print(f"{trainer}: {len(got)} batches, {len(set(got))} distinct")
        if set(got) != want or len(got) != len(want):
            print(f"  MISMATCH: missing {len(want - set(got))}, unexpected {len(set(got) - want)}")
            ok = False
    ranks = [read_all(brokers, topic, f"trainer-dp-{run}", len(want), rank=r, world_size=2) for r in range(2)]
    for r, got in enumerate(ranks):
        print(f"trainer-dp rank {r}/2: {len(got)} batches")
    a, b = set(ranks[0]), set(ranks[1])
    if a & b:
        print(f"  MISMATCH: ranks share {len(a & b)} batches")
        ok = False
    if a | b != want:
        print(f"  MISMATCH: ranks miss {len(want - (a | b))} batches")
        ok = False
    # Ranks split by partition (p % 2): with batches of both parities (a
    # batch id is topic:partition:first-last) each rank must get some.
    parities = {int(i.rsplit(":", 2)[1]) % 2 for i in want}
    if len(parities) == 2 and (not a or not b):
        print("  MISMATCH: a rank received nothing")
        ok = False
    print("OK" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
