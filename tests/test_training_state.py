"""lecture2.training_state: the bytes a training run holds, counted on live tensors made here."""
import pytest
import torch

from lecture2 import training_state


def _step(model, optimizer):
    model(torch.randn(4, 8, dtype=next(model.parameters()).dtype)).float().sum().backward()
    optimizer.step()


def test_held_bytes_counts_a_storage_once():
    """Is a view of a tensor counted with it, once, and None skipped?"""
    t = torch.zeros(10, 10)
    assert training_state.held_bytes([t, t[2:], t.T, None]) == 400


def test_fp32_adam_holds_16_bytes_per_parameter_plus_step_counters():
    """Does one Adam step on an fp32 model hold 4 + 4 + 8 bytes per parameter and a 4-byte step per tensor?"""
    model = torch.nn.Linear(8, 16)  # 128 + 16 parameters in 2 tensors
    optimizer = torch.optim.Adam(model.parameters())
    _step(model, optimizer)
    assert training_state.state_bytes(model.parameters(), optimizer) == {
        "params": 144 * 4, "grads": 144 * 4, "optimizer": 144 * 8 + 2 * 4}


def test_plain_sgd_keeps_no_state():
    """Does SGD without momentum keep nothing, and with momentum one buffer per parameter?"""
    model = torch.nn.Linear(8, 16)
    plain = torch.optim.SGD(model.parameters(), lr=0.1)
    _step(model, plain)
    assert training_state.state_bytes(model.parameters(), plain)["optimizer"] == 0
    momentum = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    _step(model, momentum)
    assert training_state.state_bytes(model.parameters(), momentum)["optimizer"] == 144 * 4


def test_master_copy_counts_under_optimizer_and_its_grad_under_grads():
    """With a bf16 model and an fp32 master copy, are master weights 'optimizer' and their kept grads 'grads'?"""
    model = torch.nn.Linear(8, 16, bias=False).bfloat16()
    master = [p.detach().float() for p in model.parameters()]
    optimizer = torch.optim.Adam(master)
    model(torch.randn(4, 8, dtype=torch.bfloat16)).float().sum().backward()
    for m, p in zip(master, model.parameters()):
        m.grad = p.grad.float()
    optimizer.step()
    held = training_state.state_bytes(model.parameters(), optimizer, master)
    assert held == {"params": 128 * 2, "grads": 128 * 2 + 128 * 4, "optimizer": 128 * 12 + 4}


def test_state_bytes_wants_an_optimizer():
    """Is a wrong argument refused with a message rather than counted as zero?"""
    with pytest.raises(TypeError):
        training_state.state_bytes([], object())
