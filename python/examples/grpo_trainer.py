"""A closed-loop GRPO trainer on murphy's batches topic (stages/generate/VERSIONS.md).

It reads credited batches with murphy_reader from the real broker (its own
consumer group, a staleness bound η = --max-staleness), takes token-level
clipped GRPO steps (examples/grpo_step.py) on a tiny CPU causal LM, and:

- after every step commits its offsets and publishes its TrainerProgress
  (version, η, trees per version, consumed credited positions) on
  "<prefix>trainer-progress", so that generate runs at most η versions ahead;
- every --steps-per-version steps saves its PEFT LoRA adapter
  (<checkpoint-dir>/<model>/adapter_config.json + adapter_model.safetensors,
  and trainer_state.pt to resume from) and publishes the next PolicyVersion
  on "<prefix>policy-versions" with an immutable model name
  (<model-prefix><version>, e.g. tiny-v3) and the checkpoint directory as
  checkpoint_uri: generate loads it (its load hook, e.g. vLLM's
  load_lora_adapter) and sends new trees to that name;
- restarted, resumes from its last progress record, its group's committed
  offsets and its version's checkpoint (--resume), and keeps a heartbeat of
  progress while a step runs (--heartbeat);
- stops once at version --versions and (--wait-last) trained on rows
  sampled by it: the version change went round the loop.

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


# LoRA adapter of the tiny model: what the trainer publishes and a vLLM-like
# server loads (adapter_config.json + adapter_model.safetensors).
LORA_TARGETS = ["linear1", "linear2"]


def lora_model(model: torch.nn.Module, rank: int) -> torch.nn.Module:
    """The model under a PEFT LoRA on its feed-forward layers: only the
    adapter trains, and save_pretrained writes the adapter."""
    from peft import LoraConfig, get_peft_model

    return get_peft_model(model, LoraConfig(r=rank, lora_alpha=2 * rank, lora_dropout=0.0, target_modules=LORA_TARGETS))


def save_checkpoint(model: torch.nn.Module, path: str) -> None:
    """The PEFT adapter (what the servers load) and the trainer's own state
    (to resume from after a restart), written before the version is
    published."""
    os.makedirs(path, exist_ok=True)
    model.save_pretrained(path)
    torch.save(model.state_dict(), os.path.join(path, "trainer_state.pt"))


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


def parse_args(argv: list[str] | None) -> tuple[argparse.Namespace, dict[str, Any]]:
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
    ap.add_argument("--versions", type=int, default=0, help="stop once at this version (0: never)")
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
    ap.add_argument("--publish-versions", action=argparse.BooleanOptionalAction, default=True,
                    help="save a checkpoint and publish every version (off: a trainer that counts its versions but "
                         "publishes none, e.g. a second trainer reading the same stream)")
    ap.add_argument("--filter", action=argparse.BooleanOptionalAction, default=True,
                    help="the reader drops rows staler than --max-staleness (off: every row is trained and counted "
                         "by staleness; the bound is still reported)")
    ap.add_argument("--resume", action=argparse.BooleanOptionalAction, default=True,
                    help="resume from this trainer's last progress record, its group's committed offsets and the "
                         "checkpoint of its version")
    ap.add_argument("--heartbeat", type=float, default=20.0,
                    help="seconds between progress reports while a step runs (keep it under generate's progress_ttl)")
    ap.add_argument("--lora-rank", type=int, default=8, help="rank of the published LoRA adapter")
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
    return args, kconf


class Trainer:
    """The loop: gather about --trees-per-step trees of batches, take a
    step, commit, report progress; every --steps-per-version steps a new
    version (checkpointed and published first)."""

    def __init__(self, args: argparse.Namespace, kconf: dict[str, Any]):
        from murphy_reader import KafkaBatchReader, ProgressPublisher

        self.args, self.kconf = args, kconf
        self.log = Log(args.log_json)
        pre = args.topic_prefix
        self.t_batches, self.t_versions, self.t_progress = pre + "batches", pre + "policy-versions", pre + "trainer-progress"
        self.group = args.group or args.trainer_id
        self.eta: Optional[int] = args.max_staleness if args.max_staleness >= 0 else None
        self.k = args.trees_per_step * args.steps_per_version
        self.ckpt_dir = args.checkpoint_dir or tempfile.mkdtemp(prefix=f"{args.trainer_id}-ckpt-")
        self.deadline = time.monotonic() + args.timeout if args.timeout > 0 else None
        wait_topics(args.brokers, [self.t_batches, self.t_versions, self.t_progress], args.wait_topics, kconf)
        base = TinyCausalLM(args.vocab_size, d_model=args.d_model, n_layers=args.layers, n_heads=4, max_len=args.max_length)
        self.model = lora_model(base, args.lora_rank)
        self.opt = torch.optim.AdamW([p for p in self.model.parameters() if p.requires_grad], lr=args.lr)
        self.version = args.start_version
        bound = self.eta if self.eta is not None else 10**9
        self.reader = KafkaBatchReader(args.brokers, self.t_batches, self.group, policy_version=lambda: self.version,
                                       max_staleness=bound if args.filter else None, consumer_config=kconf)
        self.progress = ProgressPublisher(args.brokers, self.t_progress, args.trainer_id, max_staleness=self.eta,
                                          trees_per_version=self.k, group_id=self.group, producer_config=kconf)
        self.steps = 0
        if args.resume:
            self.resume()
        # Report before the first batch: generate is bounded from the start.
        self.progress.publish_reader(self.version, self.reader)
        self.progress.start_heartbeat(args.heartbeat)
        self.log.event("ready", f"version {self.version}, eta {self.eta}, {self.k} trees per version, group {self.group}, "
                       f"checkpoints in {self.ckpt_dir}", version=self.version, max_staleness=self.eta,
                       trees_per_version=self.k, group=self.group, consumed={str(p): o for p, o in self.reader.consumed.items()})

    def name(self, version: int) -> str:
        return f"{self.args.model_prefix}{version}"

    def resume(self) -> None:
        """Back after a restart: the version and positions of the last
        progress record, the batches committed past them, the weights of
        the version's checkpoint."""
        rec = self.progress.resume(self.args.brokers, consumer_config=self.kconf)
        if rec is None:
            return
        self.version = int(rec.get("policy_version", self.version))
        self.reader.resume(rec.get("consumed") or {})
        self.steps = (self.version - self.args.start_version) * self.args.steps_per_version
        state = os.path.join(self.ckpt_dir, self.name(self.version), "trainer_state.pt")
        if os.path.exists(state):
            self.model.load_state_dict(torch.load(state))
        self.log.event("resume", f"at version {self.version} from its last progress record", version=self.version,
                       consumed={str(p): o for p, o in self.reader.consumed.items()}, checkpoint=os.path.exists(state))

    def gather(self) -> tuple[list[Batch], int]:
        batches: list[Batch] = []
        start_trees = self.reader.trees_consumed
        while self.reader.trees_consumed - start_trees < self.args.trees_per_step:
            if self.deadline is not None and time.monotonic() > self.deadline:
                raise TimeoutError(f"timeout after {self.args.timeout}s at version {self.version}, step {self.steps}")
            b = self.reader.poll(0.5)
            if b is not None:
                batches.append(b)
        return batches, self.reader.trees_consumed - start_trees

    def new_version(self) -> None:
        self.version += 1
        if not self.args.publish_versions:
            return
        from murphy_reader import publish_version

        name = self.name(self.version)
        path = os.path.join(self.ckpt_dir, name)
        save_checkpoint(self.model, path)
        publish_version(self.args.brokers, self.t_versions, self.version, name, adapter=name if self.args.adapter else "",
                        checkpoint_uri=path, trainer_id=self.args.trainer_id, producer_config=self.kconf)
        self.log.event("version", f"published {self.version} as {name} ({path})", version=self.version, model=name,
                       checkpoint_uri=path, step=self.steps)

    def done(self, trained_last: bool) -> bool:
        a = self.args
        if not a.versions or self.version < a.versions:
            return False
        return trained_last or not a.wait_last or not a.publish_versions

    def run(self) -> int:
        trained_last = False
        while not self.done(trained_last):
            batches, trees = self.gather()
            if not batches:
                # Every row was too stale: report the trees consumed anyway,
                # or generate would keep counting them as not consumed.
                self.reader.commit()
                self.progress.publish_reader(self.version, self.reader)
                self.log.event("skip", f"{trees} trees, every row too stale", version=self.version,
                               dropped=dict(self.reader.dropped_rows))
                continue
            info = step(self.model, self.opt, batches, self.version, self.args.vocab_size, self.args.max_length)
            self.reader.commit()
            self.steps += 1
            if self.args.versions and self.version >= self.args.versions and self.version in info["row_versions"]:
                trained_last = True
            self.log_step(batches, trees, info)
            if self.steps % self.args.steps_per_version == 0 and not (self.args.versions and self.version >= self.args.versions):
                self.new_version()
            self.progress.publish_reader(self.version, self.reader)
        return 0

    def log_step(self, batches: list[Batch], trees: int, info: dict[str, Any]) -> None:
        rows = []
        for b in batches:
            rb = b.record_batch
            rows += [[t, v] for t, v in zip(rb.column("tree_id").to_pylist(), rb.column("policy_version").to_pylist())]
        self.log.event("step", f"{self.steps} at version {self.version}: {info['rows']} rows of versions "
                       f"{sorted(info['row_versions'])}, staleness {info['staleness']}, loss {info['loss']:.4g}, "
                       f"grad norm {info['grad_norm']:.3g}, reward {info['reward_mean']:.3f}, dropped {self.reader.dropped_rows}",
                       step=self.steps, version=self.version, trees=trees, rows_trained=rows,
                       batch_ids=[b.batch_id for b in batches], dropped=dict(self.reader.dropped_rows),
                       consumed={str(p): o for p, o in self.reader.consumed.items()},
                       **{kk: ({str(a): c for a, c in v.items()} if isinstance(v, dict) else v) for kk, v in info.items()})

    def close(self, code: int) -> None:
        self.progress.stop_heartbeat()
        self.reader.close()
        r = self.reader
        self.log.event("done", f"{self.steps} steps, at version {self.version}, staleness of trained rows "
                       f"{dict(sorted(r.staleness_rows.items()))}, dropped {r.dropped_rows}",
                       steps=self.steps, version=self.version,
                       staleness_rows={str(s): n for s, n in r.staleness_rows.items()}, dropped=dict(r.dropped_rows), code=code)
        self.log.close()


def main(argv: list[str] | None = None) -> int:
    args, kconf = parse_args(argv)
    torch.manual_seed(args.seed)
    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    tr = Trainer(args, kconf)
    code = 0
    try:
        code = tr.run()
    except TimeoutError as e:
        tr.log.event("error", str(e), version=tr.version, step=tr.steps)
        code = 1
    finally:
        tr.close(code)
    return code


if __name__ == "__main__":
    sys.exit(main())
