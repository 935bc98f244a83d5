"""Padded trainer tensors from a batch.

Layout (B rows, T = longest prompt+response, right padded):

- input_ids [B, T] int64: prompt tokens then response tokens, then pad_id.
- attention_mask [B, T] int64: 1 on real tokens.
- response_mask [B, T] float32: 1 on response tokens.
- loss_weights [B, T] float32: the per-token loss weight of each response
  token (govern's process scores, 0 for masked routes); rows without
  weights get 1.0, or 0.0 when route is "masked".
- loss_mask [B, T] float32: response_mask where loss_weights != 0.
- advantages [B] float32: the row's GRPO advantage.
- token_advantages [B, T] float32: loss_weights × advantage.
- old_logprobs [B, T] float32: the sampling policy's logprob of the token
  at that position (0 where unknown); has_old_logprobs [B] bool says which
  rows carry them.
- policy_version [B] int64.

Position t holds token t and its logprob; a causal LM predicts it from
position t-1 (see examples/grpo_step.py).
"""

from __future__ import annotations

from typing import Any, Optional, Union

import numpy as np
import pyarrow as pa

from .batch import Batch


def _lists(rb: pa.RecordBatch, name: str, dtype: Any) -> tuple[np.ndarray, np.ndarray]:
    col = rb.column(rb.schema.get_field_index(name))
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks()
    offsets = col.offsets.to_numpy(zero_copy_only=False).astype(np.int64)
    values = col.values.to_numpy(zero_copy_only=False).astype(dtype, copy=False)
    # A sliced list array starts at offsets[0]; values cover the parent.
    return offsets, values


def _col(rb: pa.RecordBatch, name: str) -> pa.Array:
    return rb.column(rb.schema.get_field_index(name))


def to_numpy(
    batch: Union[Batch, pa.RecordBatch],
    *,
    pad_id: int = 0,
    max_length: Optional[int] = None,
) -> dict[str, np.ndarray]:
    """Padded numpy arrays (see the module doc). With max_length, long rows
    lose prompt tokens from the left first, then response tokens from the
    right."""
    rb = batch.record_batch if isinstance(batch, Batch) else batch
    n = rb.num_rows
    p_off, p_val = _lists(rb, "prompt_token_ids", np.int64)
    r_off, r_val = _lists(rb, "response_token_ids", np.int64)
    l_off, l_val = _lists(rb, "response_logprobs", np.float32)
    w_off, w_val = _lists(rb, "loss_weights", np.float32)
    adv = _col(rb, "advantage").to_numpy(zero_copy_only=False).astype(np.float32)
    routes = _col(rb, "route").cast(pa.string()).to_pylist()
    pver = _col(rb, "policy_version").to_numpy(zero_copy_only=False).astype(np.int64)

    plen = np.diff(p_off)
    rlen = np.diff(r_off)
    if max_length is not None:
        if max_length < 1:
            raise ValueError("max_length must be >= 1")
        rkeep = np.minimum(rlen, max_length)
        pkeep = np.minimum(plen, max_length - rkeep)
    else:
        rkeep, pkeep = rlen, plen
    T = int((pkeep + rkeep).max()) if n else 0
    T = max(T, 1)

    input_ids = np.full((n, T), pad_id, dtype=np.int64)
    attention = np.zeros((n, T), dtype=np.int64)
    resp_mask = np.zeros((n, T), dtype=np.float32)
    weights = np.zeros((n, T), dtype=np.float32)
    old_lp = np.zeros((n, T), dtype=np.float32)
    has_lp = np.zeros(n, dtype=bool)
    for i in range(n):
        pk, rk = int(pkeep[i]), int(rkeep[i])
        ps = p_off[i + 1] - pk
        input_ids[i, :pk] = p_val[ps : p_off[i + 1]]
        input_ids[i, pk : pk + rk] = r_val[r_off[i] : r_off[i] + rk]
        attention[i, : pk + rk] = 1
        resp_mask[i, pk : pk + rk] = 1.0
        nw = w_off[i + 1] - w_off[i]
        if nw == rlen[i] and nw > 0:
            weights[i, pk : pk + rk] = w_val[w_off[i] : w_off[i] + rk]
        elif nw == 0:
            weights[i, pk : pk + rk] = 0.0 if routes[i] == "masked" else 1.0
        else:
            raise ValueError(f"row {i}: {nw} loss weights for {rlen[i]} response tokens")
        nl = l_off[i + 1] - l_off[i]
        if nl == rlen[i] and nl > 0:
            old_lp[i, pk : pk + rk] = l_val[l_off[i] : l_off[i] + rk]
            has_lp[i] = True
        elif nl != 0:
            raise ValueError(f"row {i}: {nl} logprobs for {rlen[i]} response tokens")
    loss_mask = resp_mask * (weights != 0)
    return {
        "input_ids": input_ids,
        "attention_mask": attention,
        "response_mask": resp_mask,
        "loss_weights": weights,
        "loss_mask": loss_mask.astype(np.float32),
        "advantages": adv,
        "token_advantages": weights * adv[:, None],
        "old_logprobs": old_lp,
        "has_old_logprobs": has_lp,
        "policy_version": pver,
    }


def to_torch(batch: Union[Batch, pa.RecordBatch], *, device: Any = None, **kw: Any) -> dict[str, Any]:
    """to_numpy as torch tensors (on device when given)."""
    import torch

    out = {k: torch.from_numpy(v) for k, v in to_numpy(batch, **kw).items()}
    if device is not None:
        out = {k: v.to(device) for k, v in out.items()}
    return out
