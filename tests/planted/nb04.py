from lecture2.checks import HINTS

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
    # ---- ex04_underflow_fraction
    Planted("ex04_underflow_fraction", "tiny (smallest normal) as the threshold", '''
def fp16_underflow_fraction(grad, scale=1.0):
    nz = grad != 0
    if not nz.any():
        return 0.0
    return ((grad[nz] * scale).abs() < torch.finfo(torch.float16).tiny).float().mean().item()
''', HINTS["fp16_tiny_threshold"], visible=True),
    Planted("ex04_underflow_fraction", "the smallest subnormal, not half of it", '''
def fp16_underflow_fraction(grad, scale=1.0):
    fi = torch.finfo(torch.float16)
    nz = grad != 0
    if not nz.any():
        return 0.0
    return ((grad[nz] * scale).abs() < fi.tiny * fi.eps).float().mean().item()
''', HINTS["fp16_subnormal_not_half"], visible=True),
    Planted("ex04_underflow_fraction", "scale forgotten", '''
def fp16_underflow_fraction(grad, scale=1.0):
    fi = torch.finfo(torch.float16)
    nz = grad != 0
    if not nz.any():
        return 0.0
    return (grad[nz].abs() <= fi.tiny * fi.eps / 2).float().mean().item()
''', HINTS["forgot_scale"], visible=True),
    Planted("ex04_underflow_fraction", "exact zeros counted", '''
def fp16_underflow_fraction(grad, scale=1.0):
    fi = torch.finfo(torch.float16)
    return ((grad * scale).abs() <= fi.tiny * fi.eps / 2).float().mean().item()
''', HINTS["zeros_counted"], visible=True),
    Planted("ex04_underflow_fraction", "strict < at the tie 2**-25", '''
def fp16_underflow_fraction(grad, scale=1.0):
    fi = torch.finfo(torch.float16)
    nz = grad != 0
    if not nz.any():
        return 0.0
    return ((grad[nz] * scale).abs() < fi.tiny * fi.eps / 2).float().mean().item()
''', HINTS["fp16_round_half_even"], visible=True),
    Planted("ex04_underflow_fraction", "a tensor instead of a float", '''
def fp16_underflow_fraction(grad, scale=1.0):
    fi = torch.finfo(torch.float16)
    nz = grad != 0
    return ((grad[nz] * scale).abs() <= fi.tiny * fi.eps / 2).float().mean()
''', HINTS["returns_float"], visible=True),
    Planted("ex04_underflow_fraction", "a real cast instead of a prediction", '''
def fp16_underflow_fraction(grad, scale=1.0):
    nz = grad != 0
    if not nz.any():
        return 0.0
    return ((grad * scale).to(torch.float16) == 0)[nz].double().mean().item()
''', HINTS["fp16_cast_for_real"], visible=True),
    Planted("ex04_underflow_fraction", "NaN when no entry is nonzero", '''
def fp16_underflow_fraction(grad, scale=1.0):
    fi = torch.finfo(torch.float16)
    kept = grad[grad != 0]
    return ((kept * scale).abs() <= fi.tiny * fi.eps / 2).double().mean().item()
''', HINTS["fp16_no_nonzero"], visible=True),
    # ---- ex04_train_step
    Planted("ex04_train_step", "parameters cast to low precision (master weights lost)", '''
def train_step(model, optimizer, x, y, precision, scaler=None):
    dtype = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[precision]
    model.to(dtype)
    optimizer.zero_grad()
    loss = F.cross_entropy(model(x.to(dtype)).float(), y)
    loss.backward()
    optimizer.step()
    return loss.item()
''', HINTS["master_weights"], visible=True),
    Planted("ex04_train_step", "no autocast: every precision runs fp32", '''
def train_step(model, optimizer, x, y, precision, scaler=None):
    if precision not in ("fp32", "bf16", "fp16"):
        raise ValueError(precision)
    optimizer.zero_grad()
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    optimizer.step()
    return loss.item()
''', HINTS["no_autocast"], visible=True),
    Planted("ex04_train_step", "fp16 without the GradScaler", '''
def train_step(model, optimizer, x, y, precision, scaler=None):
    dtype = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[precision]
    optimizer.zero_grad()
    with torch.autocast(device_type=x.device.type, dtype=dtype, enabled=precision != "fp32"):
        loss = F.cross_entropy(model(x), y)
    loss.backward()
    optimizer.step()
    return loss.item()
''', HINTS["scaler_unused"], visible=True),
    Planted("ex04_train_step", "scaled gradients passed to optimizer.step()", '''
def train_step(model, optimizer, x, y, precision, scaler=None):
    dtype = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[precision]
    optimizer.zero_grad()
    with torch.autocast(device_type=x.device.type, dtype=dtype, enabled=precision != "fp32"):
        loss = F.cross_entropy(model(x), y)
    if precision == "fp16":
        scaler.scale(loss).backward()
        optimizer.step()
        scaler.update()
    else:
        loss.backward()
        optimizer.step()
    return loss.item()
''', HINTS["scaled_grads"], visible=True),
    Planted("ex04_train_step", "scaler.update() forgotten", '''
def train_step(model, optimizer, x, y, precision, scaler=None):
    dtype = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[precision]
    optimizer.zero_grad()
    with torch.autocast(device_type=x.device.type, dtype=dtype, enabled=precision != "fp32"):
        loss = F.cross_entropy(model(x), y)
    if precision == "fp16":
        scaler.scale(loss).backward()
        scaler.step(optimizer)
    else:
        loss.backward()
        optimizer.step()
    return loss.item()
''', HINTS["scaler_update"], visible=True),
    Planted("ex04_train_step", "no zero_grad between steps", '''
def train_step(model, optimizer, x, y, precision, scaler=None):
    dtype = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[precision]
    with torch.autocast(device_type=x.device.type, dtype=dtype, enabled=precision != "fp32"):
        loss = F.cross_entropy(model(x), y)
    if precision == "fp16":
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
    else:
        loss.backward()
        optimizer.step()
    return loss.item()
''', HINTS["zero_grad_missing"], visible=True),
    Planted("ex04_train_step", "optimizer.step() forgotten outside fp16", '''
def train_step(model, optimizer, x, y, precision, scaler=None):
    dtype = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[precision]
    optimizer.zero_grad()
    with torch.autocast(device_type=x.device.type, dtype=dtype, enabled=precision != "fp32"):
        loss = F.cross_entropy(model(x), y)
    if precision == "fp16":
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
    else:
        loss.backward()
    return loss.item()
''', HINTS["no_optimizer_step"], visible=True),
    Planted("ex04_train_step", "unscale_ by hand, scaler.update() forgotten", '''
def train_step(model, optimizer, x, y, precision, scaler=None):
    dtype = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[precision]
    optimizer.zero_grad()
    with torch.autocast(device_type=x.device.type, dtype=dtype, enabled=precision != "fp32"):
        loss = F.cross_entropy(model(x), y)
    if precision == "fp16":
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        scaler.step(optimizer)
    else:
        loss.backward()
        optimizer.step()
    return loss.item()
''', HINTS["scaler_update"], visible=True),
    Planted("ex04_train_step", "the loss returned as a tensor", '''
def train_step(model, optimizer, x, y, precision, scaler=None):
    dtype = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[precision]
    optimizer.zero_grad()
    with torch.autocast(device_type=x.device.type, dtype=dtype, enabled=precision != "fp32"):
        loss = F.cross_entropy(model(x), y)
    if precision == "fp16":
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
    else:
        loss.backward()
        optimizer.step()
    return loss.detach()
''', HINTS["returns_float"], visible=True),
    Planted("ex04_train_step", "unknown precisions trained as fp32", '''
def train_step(model, optimizer, x, y, precision, scaler=None):
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(precision)
    optimizer.zero_grad()
    with torch.autocast(device_type=x.device.type, dtype=dtype or torch.bfloat16, enabled=dtype is not None):
        loss = F.cross_entropy(model(x), y)
    if precision == "fp16":
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
    else:
        loss.backward()
        optimizer.step()
    return loss.item()
''', HINTS["precision_unknown"], visible=True),
]
