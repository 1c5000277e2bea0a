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


class _Quantized(torch.Tensor):
    """A wrapper tensor subclass like torchao's 8-bit optimizer state: no storage of its own, the bytes live
    in `codes` (uint8) and `scale` (fp32 per block)."""

    @staticmethod
    def __new__(cls, codes, scale):
        return torch.Tensor._make_wrapper_subclass(cls, codes.shape, dtype=torch.float32)

    def __init__(self, codes, scale):
        self.codes, self.scale = codes, scale

    def __tensor_flatten__(self):
        return ["codes", "scale"], None

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        raise NotImplementedError(f"{func} is not needed by this test")


def test_a_wrapper_subclass_is_counted_by_its_inner_tensors():
    """Is a quantized state held in a tensor subclass counted by the bytes of its inner tensors?"""
    state = _Quantized(torch.zeros(64, 32, dtype=torch.uint8), torch.zeros(8))
    assert training_state.held_bytes([state, None]) == 64 * 32 + 8 * 4


def test_eight_bit_adam_state_is_counted_as_held():
    """bitsandbytes' Adam8bit: uint8 m and v, an fp32 absmax per 256-element block, two shared 256-entry maps;
    tensors under 4096 elements keep fp32 m and v; the step is a Python int."""
    bnb = pytest.importorskip("bitsandbytes")
    params = [torch.nn.Parameter(torch.randn(70, 70)), torch.nn.Parameter(torch.randn(16))]
    optimizer = bnb.optim.Adam8bit(params, lr=1e-3)
    for p in params:
        p.grad = torch.randn_like(p)
    optimizer.step()
    assert training_state.state_bytes(params, optimizer)["optimizer"] == (
        2 * 4900 + 2 * 4 * 20 + 2 * 256 * 4 + 8 * 16)


def test_adafactor_keeps_a_row_and_a_column_per_matrix():
    """torch.optim.Adafactor: a matrix keeps row and column sums (fp32), a vector its full second moment."""
    params = [torch.nn.Parameter(torch.randn(30, 20)), torch.nn.Parameter(torch.randn(3, 4, 5)),
              torch.nn.Parameter(torch.randn(7))]
    optimizer = torch.optim.Adafactor(params)
    for p in params:
        p.grad = torch.randn_like(p)
    optimizer.step()
    assert training_state.state_bytes(params, optimizer)["optimizer"] == 4 * ((30 + 20) + 3 * (4 + 5) + 7) + 3 * 4


@pytest.mark.gpu
def test_eight_bit_adam_state_on_cuda():
    """On CUDA too, does bitsandbytes keep uint8 m and v, fp32 block scales and the two maps (measured on an H200)?"""
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    bnb = pytest.importorskip("bitsandbytes")
    params = [torch.nn.Parameter(torch.randn(70, 70, device="cuda")), torch.nn.Parameter(torch.randn(16, device="cuda"))]
    optimizer = bnb.optim.Adam8bit(params, lr=1e-3)
    for p in params:
        p.grad = torch.randn_like(p)
    optimizer.step()
    assert training_state.state_bytes(params, optimizer)["optimizer"] == 2 * 4900 + 2 * 4 * 20 + 2 * 256 * 4 + 8 * 16


@pytest.mark.parametrize("optimizer, precision, fp32_grads, per_param, counters", [
    ("sgd", "fp32", "none", (4, 4, 0), 0), ("sgd_momentum", "fp32", "none", (4, 4, 4), 0),
    ("adagrad", "fp32", "none", (4, 4, 4), 24),
    ("sgd", "bf16", "none", (2, 2, 0), 0), ("adam", "fp32", "none", (4, 4, 8), 24),
    ("adam", "mixed", "none", (2, 2, 12), 24), ("adam", "mixed", "instead", (2, 4, 12), 24),
    ("adam", "mixed", "also", (2, 6, 12), 24)])
def test_one_real_step_of_each_recipe_holds_its_copies(optimizer, precision, fp32_grads, per_param, counters):
    """Does one step of each recipe on a real block hold exactly its copies per parameter (16 for the lecture's
    bf16 + Adam, 18 and 20 with resident fp32 gradients), with torch.optim's step counters apart?"""
    held = training_state.step_bytes(optimizer, precision, d_model=32, n_heads=4, fp32_grads=fp32_grads)
    n = held.n_params
    assert n == 12 * 32 * 32 + 2 * 32 and held.n_tensors == 6
    assert (held.params, held.grads, held.optimizer) == tuple(b * n for b in per_param)
    assert held.counters == counters  # one 4-byte fp32 step per parameter tensor for Adam and Adagrad, none for SGD
    assert held.total == sum(per_param) * n and held.per_param()["total"] == sum(per_param)


def test_eight_bit_and_adafactor_steps_hold_less_than_adam():
    """Are Adafactor's and 8-bit Adam's states far below Adam's 8 bytes/param, with no tensor step counter for
    bitsandbytes?"""
    pytest.importorskip("bitsandbytes")
    adafactor = training_state.step_bytes("adafactor", "fp32", d_model=256)
    eight_bit = training_state.step_bytes("adam8bit", "fp32", d_model=256)
    assert adafactor.per_param()["optimizer"] < 0.05 and 2 < eight_bit.per_param()["optimizer"] < 2.1
    assert eight_bit.counters == 0 and adafactor.counters == 6 * 4


def test_step_bytes_refuses_what_it_does_not_know():
    """Is an unknown optimizer, precision or fp32-gradient option refused with a message?"""
    with pytest.raises(ValueError, match="optimizer"):
        training_state.step_bytes("lion")
    with pytest.raises(ValueError, match="precision"):
        training_state.step_bytes("adam", "fp8")
    with pytest.raises(ValueError, match="fp32_grads"):
        training_state.step_bytes("adam", "fp32", fp32_grads="also")
