"""A real trainer step on murphy batches: token-level clipped GRPO.

A tiny randomly initialised causal transformer computes the logprob of every
response token; the loss is the clipped surrogate

    L = - sum_t m_t * min(r_t * A_t, clip(r_t, 1 - eps_low, 1 + eps_high) * A_t) / sum_t m_t

with r_t = exp(logp_t - old_logp_t), A_t = loss weight x advantage of the
token and m_t its loss mask, averaged over all tokens of the batch
(token-level, as in DAPO). Rows without sampling logprobs use the current
policy's (detached), i.e. ratio 1. Masked tokens enter neither the sum nor
its gradient: their log-ratio is replaced by 0 before exp, so a masked row
contributes exactly zero gradient.

Run:  python3 grpo_step.py --dir <emit output dir> [--steps N] [--device cuda]
  or  python3 grpo_step.py --brokers host:port --topic murphy.batches --group trainer-a
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from typing import Any, Iterable

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from murphy_reader import Batch, to_torch  # noqa: E402


class TinyCausalLM(nn.Module):
    """A small decoder-only transformer (pre-LN, learned positions)."""

    def __init__(self, vocab_size: int, d_model: int = 64, n_layers: int = 2, n_heads: int = 4, max_len: int = 4096):
        super().__init__()
        self.vocab_size, self.max_len = vocab_size, max_len
        self.tok = nn.Embedding(vocab_size, d_model)
        self.pos = nn.Embedding(max_len, d_model)
        layer = nn.TransformerEncoderLayer(
            d_model, n_heads, dim_feedforward=4 * d_model, dropout=0.0, batch_first=True, norm_first=True
        )
        self.blocks = nn.TransformerEncoder(layer, n_layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab_size, bias=False)

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        T = input_ids.shape[1]
        if T > self.max_len:
            raise ValueError(f"sequence of {T} tokens > max_len {self.max_len}")
        pos = torch.arange(T, device=input_ids.device)
        h = self.tok(input_ids) + self.pos(pos)[None]
        # Causal attention only: rows are right padded, so real tokens never
        # see padding, and an all-padding row stays finite.
        causal = nn.Transformer.generate_square_subsequent_mask(T, device=input_ids.device, dtype=h.dtype)
        h = self.blocks(h, mask=causal, is_causal=True)
        return self.head(self.norm(h))


def token_logprobs(model: nn.Module, input_ids: torch.Tensor) -> torch.Tensor:
    """logp[b, t] = log P(input_ids[b, t] | input_ids[b, :t]); 0 at t = 0."""
    logits = model(input_ids)[:, :-1].float()
    lp = torch.log_softmax(logits, dim=-1).gather(-1, input_ids[:, 1:, None]).squeeze(-1)
    return F.pad(lp, (1, 0))


def grpo_loss(
    logprobs: torch.Tensor,
    old_logprobs: torch.Tensor,
    token_advantages: torch.Tensor,
    loss_mask: torch.Tensor,
    clip_low: float = 0.2,
    clip_high: float = 0.2,
) -> tuple[torch.Tensor, dict[str, float]]:
    """Token-level clipped surrogate loss and diagnostics."""
    mask = loss_mask > 0
    log_ratio = torch.where(mask, logprobs - old_logprobs, torch.zeros_like(logprobs))
    ratio = torch.exp(log_ratio)
    unclipped = ratio * token_advantages
    clipped = torch.clamp(ratio, 1.0 - clip_low, 1.0 + clip_high) * token_advantages
    surrogate = torch.minimum(unclipped, clipped)
    n = mask.sum().clamp(min=1)
    loss = -(torch.where(mask, surrogate, torch.zeros_like(surrogate))).sum() / n
    with torch.no_grad():
        clip_frac = ((unclipped != clipped) & mask).sum() / n
        approx_kl = (torch.where(mask, ratio - 1 - log_ratio, torch.zeros_like(ratio))).sum() / n
    return loss, {"tokens": float(mask.sum()), "clip_frac": float(clip_frac), "approx_kl": float(approx_kl)}


def prepare(batch: Batch | dict[str, torch.Tensor], vocab_size: int, device: Any = None, max_length: int | None = None) -> dict[str, torch.Tensor]:
    t = batch if isinstance(batch, dict) else to_torch(batch, max_length=max_length)
    if t["input_ids"].numel() and int(t["input_ids"].max()) >= vocab_size:
        raise ValueError(f"token id {int(t['input_ids'].max())} >= vocab size {vocab_size}")
    if device is not None:
        t = {k: v.to(device) for k, v in t.items()}
    return t


def train_step(model: nn.Module, optimizer: torch.optim.Optimizer, t: dict[str, torch.Tensor], **clip: float) -> dict[str, float]:
    """One optimizer step on padded tensors from murphy_reader.to_torch."""
    model.train()
    optimizer.zero_grad(set_to_none=True)
    lp = token_logprobs(model, t["input_ids"])
    old = torch.where(t["has_old_logprobs"][:, None], t["old_logprobs"], lp.detach())
    loss, info = grpo_loss(lp, old, t["token_advantages"], t["loss_mask"], **clip)
    if not torch.isfinite(loss):
        raise FloatingPointError(f"non-finite loss {loss.item()}")
    loss.backward()
    grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    info.update(loss=float(loss.detach()), grad_norm=float(grad_norm))
    return info


def _batches(args: argparse.Namespace) -> Iterable[Batch]:
    if args.dir:
        from murphy_reader import FileBatchReader

        return FileBatchReader(args.dir, fmt=args.format)
    from murphy_reader import KafkaBatchReader

    reader = KafkaBatchReader(args.brokers, args.topic, args.group)
    return iter(lambda: reader.poll(args.timeout), None)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dir", help="emit output directory")
    ap.add_argument("--format", default="ipc", choices=["ipc", "parquet"])
    ap.add_argument("--brokers")
    ap.add_argument("--topic", default="murphy.batches")
    ap.add_argument("--group", default="grpo-example")
    ap.add_argument("--timeout", type=float, default=10.0)
    ap.add_argument("--steps", type=int, default=1)
    ap.add_argument("--vocab-size", type=int, default=152064)
    ap.add_argument("--max-length", type=int, default=1024)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    if not args.dir and not args.brokers:
        ap.error("give --dir or --brokers")
    torch.manual_seed(args.seed)
    model = TinyCausalLM(args.vocab_size, max_len=args.max_length).to(args.device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    steps = 0
    for batch in _batches(args):
        t0 = time.perf_counter()
        info = train_step(model, opt, prepare(batch, args.vocab_size, args.device, args.max_length))
        if args.device.startswith("cuda"):
            torch.cuda.synchronize()
        info["seconds"] = time.perf_counter() - t0
        print(f"step {steps} batch {batch.batch_id} rows {batch.num_rows} device {args.device} "
              + " ".join(f"{k}={v:.4g}" for k, v in info.items()), flush=True)
        if not math.isfinite(info["loss"]):
            return 1
        steps += 1
        if steps >= args.steps:
            break
    if steps == 0:
        print("no batch", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
