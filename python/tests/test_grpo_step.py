import os
import sys

import pytest

torch = pytest.importorskip("torch")

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))

from conftest import from_rows, make_rows  # noqa: E402
from murphy_reader import to_torch  # noqa: E402
from grpo_step import TinyCausalLM, grpo_loss, prepare, token_logprobs, train_step  # noqa: E402

VOCAB = 1000


def model(seed=0):
    torch.manual_seed(seed)
    return TinyCausalLM(VOCAB, d_model=32, n_layers=2, n_heads=2, max_len=64)


def tensors(rows):
    return prepare(to_torch(from_rows(rows)), VOCAB)


def rows_with_signal(n=6, seed=1):
    rows = make_rows(n, seed=seed, vocab=VOCAB)
    for i, r in enumerate(rows):
        k = 3 + i % 4
        r.update(route="train", response_token_ids=[(7 * i + j) % VOCAB + 1 for j in range(k)],
                 response_logprobs=[-1.0 - 0.1 * j for j in range(k)], loss_weights=[1.0] * k,
                 advantage=1.0 if i % 2 else -1.0)
    return rows


def test_loss_is_finite_and_gradients_flow():
    m = model()
    opt = torch.optim.AdamW(m.parameters(), lr=1e-3)
    t = tensors(rows_with_signal())
    before = [p.detach().clone() for p in m.parameters()]
    info = train_step(m, opt, t)
    assert torch.isfinite(torch.tensor(info["loss"]))
    assert info["tokens"] > 0
    assert info["grad_norm"] > 0
    grads = [p.grad for p in m.parameters()]
    assert all(g is not None and torch.isfinite(g).all() for g in grads)
    changed = sum(not torch.equal(a, b) for a, b in zip(before, m.parameters()))
    assert changed == len(before), "every parameter tensor should receive a gradient and move"


def grads_of(m, t):
    m.zero_grad(set_to_none=True)
    lp = token_logprobs(m, t["input_ids"])
    old = torch.where(t["has_old_logprobs"][:, None], t["old_logprobs"], lp.detach())
    loss, _ = grpo_loss(lp, old, t["token_advantages"], t["loss_mask"])
    loss.backward()
    return loss, {n: p.grad.clone() for n, p in m.named_parameters()}


def test_masked_rows_contribute_exactly_zero_gradient():
    rows = rows_with_signal()
    masked = make_rows(3, seed=9, vocab=VOCAB)
    for r in masked:
        k = len(r["response_token_ids"]) or 1
        # Hostile masked rows: huge advantages and wild old logprobs must not leak.
        r.update(route="masked", response_token_ids=[5] * k, loss_weights=[0.0] * k,
                 response_logprobs=[-80.0] * k, advantage=1e6)
    m = model()
    t_all = tensors(rows + masked)

    # 1. The gradient reaching the masked rows' inputs is exactly zero.
    emb_out = {}

    def keep(_, __, out):
        out.retain_grad()
        emb_out["h"] = out

    h = m.tok.register_forward_hook(keep)
    lp = token_logprobs(m, t_all["input_ids"])
    loss, _ = grpo_loss(lp, torch.where(t_all["has_old_logprobs"][:, None], t_all["old_logprobs"], lp.detach()),
                        t_all["token_advantages"], t_all["loss_mask"])
    loss.backward()
    h.remove()
    g = emb_out["h"].grad
    n = len(rows)
    assert torch.count_nonzero(g[n:]) == 0
    assert torch.count_nonzero(g[:n]) > 0
    assert torch.isfinite(loss)

    # 2. Adding masked rows changes neither the loss nor the parameter gradients.
    loss_a, ga = grads_of(model(), tensors(rows))
    loss_b, gb = grads_of(model(), t_all)
    # Padding to a longer T changes only reduction order, not the value.
    assert torch.allclose(loss_a, loss_b, atol=1e-6, rtol=0)
    for k in ga:
        assert torch.allclose(ga[k], gb[k], atol=1e-6, rtol=1e-5), k

    # 3. A batch of only masked rows has zero loss and zero gradient.
    loss_c, gc = grads_of(model(), tensors(masked))
    assert loss_c.item() == 0.0
    assert all(torch.count_nonzero(v) == 0 for v in gc.values())


def test_clipping_bounds_the_ratio():
    lp = torch.tensor([[0.0, 0.0, 1.0]], requires_grad=True)
    old = torch.tensor([[0.0, 0.0, 0.0]])
    adv = torch.tensor([[0.0, 1.0, 1.0]])
    mask = torch.tensor([[0.0, 1.0, 1.0]])
    loss, info = grpo_loss(lp, old, adv, mask, clip_low=0.2, clip_high=0.2)
    # token 1: ratio 1 -> 1; token 2: ratio e clipped to 1.2 -> 1.2
    assert loss.item() == pytest.approx(-(1.0 + 1.2) / 2)
    loss.backward()
    assert lp.grad[0, 2].item() == 0.0  # clipped: no gradient
    assert lp.grad[0, 1].item() == pytest.approx(-0.5)
    assert info["clip_frac"] == pytest.approx(0.5)


def test_prepare_rejects_ids_outside_the_vocabulary():
    rows = rows_with_signal()
    rows[0]["response_token_ids"] = [VOCAB + 5] * len(rows[0]["response_token_ids"])
    with pytest.raises(ValueError, match="vocab"):
        tensors(rows)
