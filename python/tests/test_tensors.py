import numpy as np
import pytest

from conftest import from_rows, make_rows
from murphy_reader import to_numpy


def batch(rows):
    return from_rows(rows)


def two_rows():
    rows = make_rows(2)
    rows[0].update(prompt_token_ids=[5, 6, 7], response_token_ids=[8, 9], response_logprobs=[-0.5, -1.5],
                   loss_weights=[1.0, 0.25], advantage=2.0, route="train")
    rows[1].update(prompt_token_ids=[11], response_token_ids=[12, 13, 14, 15], response_logprobs=[],
                   loss_weights=[], advantage=-1.0, route="train")
    return rows


def test_layout_and_values():
    t = to_numpy(batch(two_rows()), pad_id=-1)
    np.testing.assert_array_equal(t["input_ids"], [[5, 6, 7, 8, 9], [11, 12, 13, 14, 15]])
    np.testing.assert_array_equal(t["attention_mask"], [[1, 1, 1, 1, 1], [1, 1, 1, 1, 1]])
    np.testing.assert_array_equal(t["response_mask"], [[0, 0, 0, 1, 1], [0, 1, 1, 1, 1]])
    np.testing.assert_array_equal(t["loss_weights"], [[0, 0, 0, 1, 0.25], [0, 1, 1, 1, 1]])
    np.testing.assert_array_equal(t["token_advantages"], [[0, 0, 0, 2, 0.5], [0, -1, -1, -1, -1]])
    np.testing.assert_array_equal(t["old_logprobs"], np.array([[0, 0, 0, -0.5, -1.5], [0, 0, 0, 0, 0]], np.float32))
    np.testing.assert_array_equal(t["has_old_logprobs"], [True, False])
    np.testing.assert_array_equal(t["advantages"], [2.0, -1.0])


def test_padding_and_masked_rows():
    rows = two_rows()
    rows[1].update(response_token_ids=[12], route="masked", loss_weights=[])
    t = to_numpy(batch(rows), pad_id=0)
    np.testing.assert_array_equal(t["input_ids"][1], [11, 12, 0, 0, 0])
    np.testing.assert_array_equal(t["attention_mask"][1], [1, 1, 0, 0, 0])
    np.testing.assert_array_equal(t["loss_mask"][1], [0, 0, 0, 0, 0])
    np.testing.assert_array_equal(t["response_mask"][1], [0, 1, 0, 0, 0])


def test_zero_weight_tokens_leave_the_loss_mask():
    rows = two_rows()
    rows[0]["loss_weights"] = [0.0, 1.0]
    t = to_numpy(batch(rows))
    np.testing.assert_array_equal(t["loss_mask"][0], [0, 0, 0, 0, 1])


def test_max_length_drops_prompt_first():
    t = to_numpy(batch(two_rows()), max_length=3)
    np.testing.assert_array_equal(t["input_ids"], [[7, 8, 9], [12, 13, 14]])
    np.testing.assert_array_equal(t["response_mask"], [[0, 1, 1], [1, 1, 1]])
    np.testing.assert_array_equal(t["old_logprobs"][0], np.array([0, -0.5, -1.5], np.float32))


def test_sliced_and_filtered_batches():
    rb = batch(two_rows() + two_rows())
    full = to_numpy(rb)
    part = to_numpy(rb.slice(1, 2))
    np.testing.assert_array_equal(part["input_ids"][0][:5], full["input_ids"][1][:5])
    np.testing.assert_array_equal(part["input_ids"][1][:5], full["input_ids"][2][:5])


def test_misaligned_weights_raise():
    rows = two_rows()
    rows[0]["loss_weights"] = [1.0]
    with pytest.raises(ValueError, match="loss weights"):
        to_numpy(batch(rows))


def test_to_torch_matches_numpy():
    torch = pytest.importorskip("torch")
    from murphy_reader import to_torch

    rb = batch(two_rows())
    a, b = to_numpy(rb), to_torch(rb)
    for k in a:
        assert torch.equal(b[k], torch.from_numpy(a[k]))
