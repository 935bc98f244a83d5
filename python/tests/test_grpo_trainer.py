"""The closed-loop example trainer's step, without a broker (the loop itself
runs in cmd/murphy/loop_test.go against the real broker)."""

import os
import sys

import pytest

torch = pytest.importorskip("torch")

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))

from conftest import CREDIT_CONFIG, from_rows, make_rows  # noqa: E402
from murphy_reader import Batch  # noqa: E402
from grpo_step import TinyCausalLM  # noqa: E402
from grpo_trainer import main, step  # noqa: E402

VOCAB = 300


def batch(seed, versions):
    rows = make_rows(len(versions), seed=seed, vocab=VOCAB, first=10 * seed)
    for i, (r, v) in enumerate(zip(rows, versions)):
        k = 3 + i % 3
        r.update(route="train", response_token_ids=[(5 * i + j) % VOCAB + 1 for j in range(k)],
                 response_logprobs=[], loss_weights=[1.0] * k, advantage=1.0 if i % 2 else -1.0,
                 policy_version=v)
    rb = from_rows(rows)
    return Batch(rb.column("batch_id")[0].as_py(), rb, CREDIT_CONFIG)


def test_step_moves_the_model_and_reports_staleness_per_row():
    torch.manual_seed(0)
    m = TinyCausalLM(VOCAB, d_model=16, n_layers=1, n_heads=2, max_len=64)
    opt = torch.optim.AdamW(m.parameters(), lr=1e-2)
    before = [p.detach().clone() for p in m.parameters()]
    info = step(m, opt, [batch(1, [3, 3, 2, 2]), batch(2, [3, 2])], version=3, vocab=VOCAB, max_length=64)
    assert info["rows"] == 6 and info["tokens"] > 0 and info["grad_norm"] > 0
    assert info["row_versions"] == {3: 3, 2: 3}
    assert info["staleness"] == {0: 3, 1: 3}
    assert any(not torch.equal(a, b) for a, b in zip(before, m.parameters()))


def test_step_without_loss_tokens_leaves_the_model():
    m = TinyCausalLM(VOCAB, d_model=16, n_layers=1, n_heads=2, max_len=64)
    opt = torch.optim.AdamW(m.parameters(), lr=1e-2)
    b = batch(3, [1, 1])
    rb = b.record_batch
    import pyarrow as pa

    zeros = pa.array([[0.0] * len(x) for x in rb.column("response_token_ids").to_pylist()], pa.list_(pa.float32()))
    b.record_batch = rb.set_column(rb.schema.get_field_index("loss_weights"), rb.schema.field("loss_weights"), zeros)
    before = [p.detach().clone() for p in m.parameters()]
    info = step(m, opt, [b], version=1, vocab=VOCAB, max_length=64)
    assert info["tokens"] == 0 and info["grad_norm"] == 0.0
    assert all(torch.equal(a, b) for a, b in zip(before, m.parameters()))


def test_cli_rejects_bad_step_sizes():
    with pytest.raises(SystemExit):
        main(["--brokers", "x:1", "--trees-per-step", "0"])


def test_checkpoint_is_a_peft_lora_adapter(tmp_path):
    pytest.importorskip("peft")
    import json

    from safetensors import safe_open
    from grpo_trainer import lora_model, save_checkpoint

    torch.manual_seed(0)
    m = lora_model(TinyCausalLM(VOCAB, d_model=16, n_layers=1, n_heads=2, max_len=64), rank=4)
    trainable = [n for n, p in m.named_parameters() if p.requires_grad]
    assert trainable and all("lora_" in n for n in trainable)  # only the adapter trains
    save_checkpoint(m, str(tmp_path / "v1"))
    cfg = json.loads((tmp_path / "v1" / "adapter_config.json").read_text())
    assert cfg["peft_type"] == "LORA" and cfg["r"] == 4 and sorted(cfg["target_modules"]) == ["linear1", "linear2"]
    with safe_open(str(tmp_path / "v1" / "adapter_model.safetensors"), "pt") as f:
        keys = list(f.keys())
    assert any("lora_A" in k for k in keys) and sum("lora_A" in k for k in keys) == sum("lora_B" in k for k in keys)
    # The trainer's own state restores the weights after a restart.
    m2 = lora_model(TinyCausalLM(VOCAB, d_model=16, n_layers=1, n_heads=2, max_len=64), rank=4)
    m2.load_state_dict(torch.load(str(tmp_path / "v1" / "trainer_state.pt")))
    assert all(torch.equal(a, b) for a, b in zip(m.state_dict().values(), m2.state_dict().values()))
