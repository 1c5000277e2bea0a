from lecture2.checks import HINTS
from lecture2.exercises import training_step  # noqa: F401 (registers the module's own hints, training_step.*, in HINTS)

from . import Planted

NOTEBOOK = "04_training_step.ipynb"

MISTAKES = [
    # ---- ex04_accumulated_step
    Planted("ex04_accumulated_step", "loss not divided by the steps", '''
def accumulated_step(model, optimizer, batches, loss_fn):
    optimizer.zero_grad()
    total = 0.0
    for xb, yb in batches:
        loss = loss_fn(model(xb), yb)
        loss.backward()
        total += loss.item()
    optimizer.step()
    return total
''', HINTS["loss_not_divided"], visible=True),
    Planted("ex04_accumulated_step", "the lecture's / steps with unequal micro-batches", '''
def accumulated_step(model, optimizer, batches, loss_fn):
    optimizer.zero_grad()
    total = 0.0
    for xb, yb in batches:
        loss = loss_fn(model(xb), yb) / len(batches)
        loss.backward()
        total += loss.item()
    optimizer.step()
    return total
''', HINTS["accum_weights"], visible=True),
    Planted("ex04_accumulated_step", "zero_grad inside the loop", '''
def accumulated_step(model, optimizer, batches, loss_fn):
    n = sum(len(xb) for xb, _ in batches)
    total = 0.0
    for xb, yb in batches:
        optimizer.zero_grad()
        loss = loss_fn(model(xb), yb) * len(xb) / n
        loss.backward()
        total += loss.item()
    optimizer.step()
    return total
''', HINTS["zero_grad_in_loop"], visible=True),
    Planted("ex04_accumulated_step", "no zero_grad before accumulating", '''
def accumulated_step(model, optimizer, batches, loss_fn):
    n = sum(len(xb) for xb, _ in batches)
    total = 0.0
    for xb, yb in batches:
        loss = loss_fn(model(xb), yb) * len(xb) / n
        loss.backward()
        total += loss.item()
    optimizer.step()
    return total
''', HINTS["zero_grad_missing"], visible=True),
    Planted("ex04_accumulated_step", "zero_grad after the step", '''
def accumulated_step(model, optimizer, batches, loss_fn):
    n = sum(len(xb) for xb, _ in batches)
    optimizer.zero_grad()
    total = 0.0
    for xb, yb in batches:
        loss = loss_fn(model(xb), yb) * len(xb) / n
        loss.backward()
        total += loss.item()
    optimizer.step()
    optimizer.zero_grad()
    return total
''', HINTS["grads_cleared"], visible=True),
    Planted("ex04_accumulated_step", "no optimizer step", '''
def accumulated_step(model, optimizer, batches, loss_fn):
    n = sum(len(xb) for xb, _ in batches)
    optimizer.zero_grad()
    total = 0.0
    for xb, yb in batches:
        loss = loss_fn(model(xb), yb) * len(xb) / n
        loss.backward()
        total += loss.item()
    return total
''', HINTS["no_optimizer_step"], visible=True),
    Planted("ex04_accumulated_step", "the gradient right, the returned loss the sum of the micro-batch means", '''
def accumulated_step(model, optimizer, batches, loss_fn):
    n = sum(len(xb) for xb, _ in batches)
    optimizer.zero_grad()
    total = 0.0
    for xb, yb in batches:
        loss = loss_fn(model(xb), yb)
        (loss * len(xb) / n).backward()
        total += loss.item()
    optimizer.step()
    return total
''', HINTS["loss_not_divided"], visible=True),
    Planted("ex04_accumulated_step", "the loss returned as a tensor", '''
def accumulated_step(model, optimizer, batches, loss_fn):
    n = sum(len(xb) for xb, _ in batches)
    optimizer.zero_grad()
    total = 0.0
    for xb, yb in batches:
        loss = loss_fn(model(xb), yb) * len(xb) / n
        loss.backward()
        total = total + loss.detach()
    optimizer.step()
    return total
''', HINTS["returns_float"], visible=True),
]

_ADAMW_HEAD = '''
class AdamW(torch.optim.Optimizer):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2):
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay))

    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            lr, (b1, b2), eps, wd = group["lr"], group["betas"], group["eps"], group["weight_decay"]
            for p in group["params"]:
                if p.grad is None:
                    continue
'''
_STATE = '''
                state = self.state[p]
                if not state:
                    state["step"], state["m"], state["v"] = 0, torch.zeros_like(p), torch.zeros_like(p)
                state["step"] += 1
                t, m, v = state["step"], state["m"], state["v"]
'''
_DECAY = '''
                p.mul_(1 - lr * wd)
'''
_MOMENTS = '''
                m.mul_(b1).add_(p.grad, alpha=1 - b1)
                v.mul_(b2).addcmul_(p.grad, p.grad, value=1 - b2)
'''
_UPDATE = '''
                p.sub_(lr * (m / (1 - b1 ** t)) / ((v / (1 - b2 ** t)).sqrt() + eps))
'''


def _adamw(*parts: str) -> str:
    """An AdamW cell made of the right parts and the one wrong part it plants."""
    return _ADAMW_HEAD + "".join(part.strip("\n") + "\n" for part in parts)


MISTAKES += [
    Planted("ex04_accumulated_step", "each loss weighted by its share squared: no usual mistake, the idea", '''
def accumulated_step(model, optimizer, batches, loss_fn):
    n = sum(len(xb) for xb, _ in batches)
    optimizer.zero_grad()
    total = 0.0
    for xb, yb in batches:
        loss = loss_fn(model(xb), yb) * (len(xb) / n) ** 2
        loss.backward()
        total += loss.item()
    optimizer.step()
    return total
''', HINTS["training_step.accum_idea"], visible=True),
    # ---- ex04_adamw
    Planted("ex04_adamw", "bias correction forgotten", _adamw(_STATE, _DECAY, _MOMENTS, '''
                p.sub_(lr * m / (v.sqrt() + eps))
'''), HINTS["training_step.bias_correction"], visible=True),
    Planted("ex04_adamw", "weight decay added to the gradient (Adam's L2, not AdamW's)", _adamw(_STATE, '''
                g = p.grad + wd * p
                m.mul_(b1).add_(g, alpha=1 - b1)
                v.mul_(b2).addcmul_(g, g, value=1 - b2)
''', _UPDATE), HINTS["training_step.l2_not_decoupled"], visible=True),
    Planted("ex04_adamw", "weight decay without the learning rate", _adamw(_STATE, '''
                p.mul_(1 - wd)
''', _MOMENTS, _UPDATE), HINTS["training_step.decay_without_lr"], visible=True),
    Planted("ex04_adamw", "the moments started from zero at every step (state not kept)", _adamw('''
                t, m, v = 1, torch.zeros_like(p), torch.zeros_like(p)
''', _DECAY, _MOMENTS, _UPDATE), HINTS["training_step.state_kept"], visible=True),
    Planted("ex04_adamw", "one step counter for the optimizer, counted per parameter", _adamw('''
                state = self.state[p]
                if not state:
                    state["m"], state["v"] = torch.zeros_like(p), torch.zeros_like(p)
                self.t = getattr(self, "t", 0) + 1
                t, m, v = self.t, state["m"], state["v"]
''', _DECAY, _MOMENTS, _UPDATE), HINTS["training_step.step_per_param"], visible=True),
    Planted("ex04_adamw", "the constructor's defaults, not each group's own", '''
class AdamW(torch.optim.Optimizer):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2):
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay))

    @torch.no_grad()
    def step(self, closure=None):
        lr, (b1, b2), eps, wd = (self.defaults[k] for k in ("lr", "betas", "eps", "weight_decay"))
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
''' + "".join(part.strip("\n") + "\n" for part in (_STATE, _DECAY, _MOMENTS, _UPDATE)),
            HINTS["training_step.param_groups"], visible=True),
    Planted("ex04_adamw", "betas swapped", _adamw(_STATE, _DECAY, '''
                m.mul_(b2).add_(p.grad, alpha=1 - b2)
                v.mul_(b1).addcmul_(p.grad, p.grad, value=1 - b1)
                p.sub_(lr * (m / (1 - b2 ** t)) / ((v / (1 - b1 ** t)).sqrt() + eps))
'''), HINTS["training_step.betas_swapped"], visible=True),
    Planted("ex04_adamw", "the moments kept outside self.state: a checkpoint loses them", _adamw('''
                if not hasattr(self, "moments"):
                    self.moments = {}
                t, m, v = self.moments.setdefault(p, [0, torch.zeros_like(p), torch.zeros_like(p)])
                self.moments[p][0] = t = t + 1
''', _DECAY, _MOMENTS, _UPDATE), HINTS["training_step.state_dict"], visible=True),
    Planted("ex04_adamw", "not a torch.optim.Optimizer", '''
class AdamW:
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2):
        self.inner = torch.optim.AdamW(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay)

    def zero_grad(self):
        self.inner.zero_grad()

    def step(self, closure=None):
        self.inner.step()
''', HINTS["training_step.subclass"], visible=True),
    Planted("ex04_adamw", "no first moment (RMSprop's step): no usual mistake, the idea", _adamw(_STATE, _DECAY, _MOMENTS, '''
                p.sub_(lr * p.grad / ((v / (1 - b2 ** t)).sqrt() + eps))
'''), HINTS["training_step.adamw_idea"], visible=True),
]
