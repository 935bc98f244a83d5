"""A closed-loop GRPO trainer on murphy's batches topic (stages/generate/VERSIONS.md).

It reads credited batches with murphy_reader from the real broker (its own
consumer group, a staleness bound η = --max-staleness), takes token-level
clipped GRPO steps (examples/grpo_step.py) on a tiny CPU causal LM, and:

- after every step commits its offsets and publishes its TrainerProgress
  (version, η, trees per version, consumed credited positions) on
  "<prefix>trainer-progress", so that generate runs at most η versions ahead;
- every --steps-per-version steps saves a checkpoint (<checkpoint-dir>/<model>/
  model.pt) and publishes the next PolicyVersion on "<prefix>policy-versions"
  with an immutable model name (<model-prefix><version>, e.g. tiny-v3) and
  the checkpoint directory as checkpoint_uri: generate loads it (its load
  hook, e.g. vLLM's load_lora_adapter) and sends new trees to that name;
- stops once it published --versions versions and (--wait-last) trained on
  rows sampled by the last one: the version change went round the loop.

A step gathers batches until they hold --trees-per-step trees (trees dropped
as stale count: the bound counts positions), and accumulates the gradient of
every batch before one optimizer step. Rows whose staleness (trainer version
- row policy_version) exceeds η are dropped by the reader and counted.

--log-json FILE writes one JSON object per event (ready, step, skip,
version, done): each step lists the staleness of every trained row and the versions
that sampled them.

Run (a pipeline on the broker with generate following versions and bounded):

  python3 grpo_trainer.py --brokers 127.0.0.1:9092 --topic-prefix murphy. \\
      --max-staleness 1 --trees-per-step 8 --steps-per-version 4 --versions 10
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from typing import Any, Optional

import torch

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, ".."))
sys.path.insert(0, here)

from grpo_step import TinyCausalLM, grpo_loss, prepare, token_logprobs  # noqa: E402
from murphy_reader import Batch  # noqa: E402


# Seconds between progress reports while no step completes.
HEARTBEAT = 30.0


class Log:
    """Human-readable lines on stdout, JSON lines in a file."""

    def __init__(self, path: Optional[str]):
        self._f = open(path, "a", buffering=1) if path else None

    def event(self, kind: str, text: str, **fields: Any) -> None:
        print(f"[trainer] {kind}: {text}", flush=True)
        if self._f:
            self._f.write(json.dumps({"event": kind, "time": time.time(), **fields}, sort_keys=True) + "\n")

    def close(self) -> None:
        if self._f:
            self._f.close()


def wait_topics(brokers: str, names: list[str], timeout: float, config: dict[str, Any]) -> None:
    """Waits until every topic exists (the stages create them at start)."""
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": brokers, **config})
    deadline = time.monotonic() + timeout
    missing = names
    while True:
        md = admin.list_topics(timeout=10)
        missing = [n for n in names if n not in md.topics or md.topics[n].error is not None]
        if not missing:
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"topics {missing} do not exist after {timeout}s (start the pipeline first)")
        time.sleep(0.5)


def step(model: torch.nn.Module, opt: torch.optim.Optimizer, batches: list[Batch], version: int, vocab: int,
         max_length: int) -> dict[str, Any]:
    """One optimizer step over batches: the gradient of the token-level
    GRPO loss of their rows together (each batch weighted by its tokens)."""
    model.train()
    opt.zero_grad(set_to_none=True)
    tensors = [prepare(b, vocab, max_length=max_length) for b in batches]
    total = sum(float(t["loss_mask"].sum()) for t in tensors)
    loss_sum = 0.0
    for t in tensors:
        n = float(t["loss_mask"].sum())
        if n == 0:
            continue
        lp = token_logprobs(model, t["input_ids"])
        old = torch.where(t["has_old_logprobs"][:, None], t["old_logprobs"], lp.detach())
        loss, _ = grpo_loss(lp, old, t["token_advantages"], t["loss_mask"])
        if not torch.isfinite(loss):
            raise FloatingPointError(f"non-finite loss {loss.item()}")
        (loss * (n / total)).backward()
        loss_sum += float(loss.detach()) * n / total
    grad_norm = 0.0
    if total > 0:
        grad_norm = float(torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0))
        opt.step()
    row_versions: dict[int, int] = {}
    stale: dict[int, int] = {}
    rewards: list[float] = []
    for b in batches:
        rb = b.record_batch
        rewards += rb.column("reward").to_pylist()
        for v in rb.column("policy_version").to_pylist():
            row_versions[v] = row_versions.get(v, 0) + 1
            stale[version - v] = stale.get(version - v, 0) + 1
    return {"loss": loss_sum, "tokens": total, "grad_norm": grad_norm, "rows": sum(b.num_rows for b in batches),
            "row_versions": row_versions, "staleness": stale,
            "reward_mean": sum(rewards) / len(rewards) if rewards else 0.0}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--brokers", required=True, help="Kafka bootstrap servers, host:port[,host:port]")
    ap.add_argument("--topic-prefix", default="murphy.", help="the pipeline's topics.prefix")
    ap.add_argument("--trainer-id", default="grpo-example", help="names this trainer in its progress and versions")
    ap.add_argument("--group", help="consumer group of the batches topic (default: the trainer id)")
    ap.add_argument("--max-staleness", type=int, default=1,
                    help="η: rows sampled more than η versions before the current one are dropped, and generate is "
                         "held at most η versions ahead (-1: no bound, progress is only reported)")
    ap.add_argument("--trees-per-step", type=int, default=8, help="trees consumed per optimizer step")
    ap.add_argument("--steps-per-version", type=int, default=4, help="optimizer steps between published versions")
    ap.add_argument("--versions", type=int, default=0, help="stop after publishing this many versions (0: never)")
    ap.add_argument("--wait-last", action=argparse.BooleanOptionalAction, default=True,
                    help="after the last version, keep training until rows sampled by it arrive")
    ap.add_argument("--start-version", type=int, default=0, help="the version of the initial weights")
    ap.add_argument("--model-prefix", default="tiny-v", help="a version's model name is this + its number (never reuse one)")
    ap.add_argument("--adapter", action="store_true", help="publish the model name as the version's LoRA adapter name")
    ap.add_argument("--checkpoint-dir", help="where checkpoints go (default: a new temporary directory)")
    ap.add_argument("--vocab-size", type=int, default=152064, help="the tokenizer's vocabulary size")
    ap.add_argument("--max-length", type=int, default=1024, help="tokens kept per row (prompt cut from the left)")
    ap.add_argument("--d-model", type=int, default=64)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--timeout", type=float, default=0, help="give up (exit 1) after this many seconds (0: never)")
    ap.add_argument("--wait-topics", type=float, default=60, help="seconds to wait for the topics to exist")
    ap.add_argument("--log-json", help="append one JSON object per event to this file")
    ap.add_argument("--kafka-config", action="append", default=[], metavar="KEY=VALUE",
                    help="a librdkafka setting for every client, repeatable: a secured cluster takes "
                         "security.protocol=SASL_SSL, sasl.mechanisms=SCRAM-SHA-512, sasl.username=..., "
                         "sasl.password=..., ssl.ca.location=ca.crt (and ssl.certificate.location, "
                         "ssl.key.location for mutual TLS)")
    args = ap.parse_args(argv)
    if args.trees_per_step < 1 or args.steps_per_version < 1:
        ap.error("--trees-per-step and --steps-per-version must be >= 1")
    kconf: dict[str, Any] = {}
    for kv in args.kafka_config:
        key, sep, value = kv.partition("=")
        if not sep or not key.strip():
            ap.error(f"--kafka-config {kv!r}: want KEY=VALUE")
        kconf[key.strip()] = value

    from murphy_reader import KafkaBatchReader, ProgressPublisher, publish_version

    torch.manual_seed(args.seed)
    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    log = Log(args.log_json)
    pre = args.topic_prefix
    t_batches, t_versions, t_progress = pre + "batches", pre + "policy-versions", pre + "trainer-progress"
    group = args.group or args.trainer_id
    eta: Optional[int] = args.max_staleness if args.max_staleness >= 0 else None
    k = args.trees_per_step * args.steps_per_version
    ckpt_dir = args.checkpoint_dir or tempfile.mkdtemp(prefix=f"{args.trainer_id}-ckpt-")
    deadline = time.monotonic() + args.timeout if args.timeout > 0 else None

    wait_topics(args.brokers, [t_batches, t_versions, t_progress], args.wait_topics, kconf)
    model = TinyCausalLM(args.vocab_size, d_model=args.d_model, n_layers=args.layers, n_heads=4,
                         max_len=args.max_length)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr)
    version = args.start_version
    reader = KafkaBatchReader(args.brokers, t_batches, group, policy_version=lambda: version,
                              max_staleness=eta if eta is not None else 10**9, consumer_config=kconf)
    progress = ProgressPublisher(args.brokers, t_progress, args.trainer_id, max_staleness=eta,
                                 trees_per_version=k, group_id=group, producer_config=kconf)
    # Report before the first batch: generate is bounded from the start.
    progress.publish_reader(version, reader)
    log.event("ready", f"version {version}, eta {eta}, {k} trees per version, group {group}, checkpoints in {ckpt_dir}",
              version=version, max_staleness=eta, trees_per_version=k, group=group)

    steps = published = 0
    last_report = time.monotonic()
    last_version = -1
    trained_last = False
    code = 0
    try:
        while True:
            if args.versions and published >= args.versions and (trained_last or not args.wait_last):
                break
            batches: list[Batch] = []
            start_trees = reader.trees_consumed
            while reader.trees_consumed - start_trees < args.trees_per_step:
                if deadline is not None and time.monotonic() > deadline:
                    raise TimeoutError(f"timeout after {args.timeout}s at version {version}, step {steps}")
                if time.monotonic() - last_report > HEARTBEAT:
                    progress.publish_reader(version, reader)  # stay fresher than progress_ttl
                    last_report = time.monotonic()
                b = reader.poll(0.5)
                if b is not None:
                    batches.append(b)
            if not batches:
                # Every row was too stale: report the trees consumed anyway,
                # or generate would keep counting them as not consumed.
                reader.commit()
                progress.publish_reader(version, reader)
                last_report = time.monotonic()
                log.event("skip", f"{reader.trees_consumed - start_trees} trees, every row too stale",
                          version=version, dropped=dict(reader.dropped_rows))
                continue
            info = step(model, opt, batches, version, args.vocab_size, args.max_length)
            reader.commit()
            steps += 1
            if published and last_version in info["row_versions"]:
                trained_last = True
            log.event("step", f"{steps} at version {version}: {info['rows']} rows of versions "
                      f"{sorted(info['row_versions'])}, staleness {info['staleness']}, loss {info['loss']:.4g}, "
                      f"grad norm {info['grad_norm']:.3g}, reward {info['reward_mean']:.3f}, dropped {reader.dropped_rows}",
                      step=steps, version=version, trees=reader.trees_consumed - start_trees,
                      batch_ids=[b.batch_id for b in batches], dropped=dict(reader.dropped_rows),
                      consumed={str(p): o for p, o in reader.consumed.items()},
                      **{kk: ({str(a): c for a, c in v.items()} if isinstance(v, dict) else v) for kk, v in info.items()})
            if steps % args.steps_per_version == 0 and not (args.versions and published >= args.versions):
                version += 1
                name = f"{args.model_prefix}{version}"
                path = os.path.join(ckpt_dir, name)
                os.makedirs(path, exist_ok=True)
                torch.save(model.state_dict(), os.path.join(path, "model.pt"))
                publish_version(args.brokers, t_versions, version, name, adapter=name if args.adapter else "",
                                checkpoint_uri=path, trainer_id=args.trainer_id, producer_config=kconf)
                published += 1
                last_version, trained_last = version, False
                log.event("version", f"published {version} as {name} ({path})", version=version, model=name,
                          checkpoint_uri=path, step=steps)
            progress.publish_reader(version, reader)
            last_report = time.monotonic()
    except TimeoutError as e:
        log.event("error", str(e), version=version, step=steps)
        code = 1
    finally:
        reader.close()
    log.event("done", f"{steps} steps, {published} versions, at version {version}, staleness of trained rows "
              f"{dict(sorted(reader.staleness_rows.items()))}, dropped {reader.dropped_rows}",
              steps=steps, versions=published, version=version,
              staleness_rows={str(s): n for s, n in reader.staleness_rows.items()}, dropped=dict(reader.dropped_rows),
              code=code)
    log.close()
    return code


if __name__ == "__main__":
    sys.exit(main())
