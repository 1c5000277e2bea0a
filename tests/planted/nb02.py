from lecture2.checks import HINTS

from . import Planted

NOTEBOOK = "02_autograd.ipynb"

# a correct mse_grads, for the planted mistakes in quadratic_grad only
_MSE_OK = '''
def mse_grads(X, y, w, b):
    r = X @ w + b - y
    return 2 * X.T @ r / len(y), 2 * r.mean()
'''
_QUAD_OK = '''
def quadratic_grad(x):
    return 2 * x + 3
'''

MISTAKES = [
    Planted("ex02_hand_grads", "the derivative of 3x forgotten", '''
def quadratic_grad(x):
    return 2 * x
''' + _MSE_OK, HINTS["grad_3x_dropped"], visible=True),
    Planted("ex02_hand_grads", "y returned instead of dy/dx", '''
def quadratic_grad(x):
    return x ** 2 + 3 * x + 1
''' + _MSE_OK, HINTS["grad_returned_y"], visible=True),
    Planted("ex02_hand_grads", "dy/dx by autograd, not by hand", '''
def quadratic_grad(x):
    t = torch.tensor(float(x), requires_grad=True)
    (t ** 2 + 3 * t + 1).backward()
    return t.grad.item()
''' + _MSE_OK, HINTS["grad_by_autograd"], visible=True),
    Planted("ex02_hand_grads", "dy/dx by autograd, graph mode switched back on", '''
def quadratic_grad(x):
    with torch.enable_grad():
        t = torch.tensor(float(x), requires_grad=True)
        (dy,) = torch.autograd.grad(t ** 2 + 3 * t + 1, t)
    return dy.item()
''' + _MSE_OK, HINTS["grad_by_autograd"], visible=True),
    Planted("ex02_hand_grads", "mse_grads by autograd, not by hand", _QUAD_OK + '''
def mse_grads(X, y, w, b):
    w, b = w.clone().requires_grad_(True), b.clone().requires_grad_(True)
    ((X @ w + b - y) ** 2).mean().backward()
    return w.grad, b.grad
''', HINTS["grad_by_autograd"], visible=True),
    Planted("ex02_hand_grads", "mse_grads by autograd under torch.enable_grad()", _QUAD_OK + '''
def mse_grads(X, y, w, b):
    with torch.enable_grad():
        w, b = w.clone().requires_grad_(True), b.clone().requires_grad_(True)
        ((X @ w + b - y) ** 2).mean().backward()
    return w.grad, b.grad
''', HINTS["grad_by_autograd"], visible=True),
    Planted("ex02_hand_grads", "the 2 of the square forgotten", _QUAD_OK + '''
def mse_grads(X, y, w, b):
    r = X @ w + b - y
    return X.T @ r / len(y), r.mean()
''', HINTS["mse_two"], visible=True),
    Planted("ex02_hand_grads", "sum instead of mean", _QUAD_OK + '''
def mse_grads(X, y, w, b):
    r = X @ w + b - y
    return 2 * X.T @ r, 2 * r.sum()
''', HINTS["mse_mean"], visible=True),
    Planted("ex02_hand_grads", "residual with the wrong sign", _QUAD_OK + '''
def mse_grads(X, y, w, b):
    r = y - X @ w - b
    return 2 * X.T @ r / len(y), 2 * r.mean()
''', HINTS["mse_sign"], visible=True),
    Planted("ex02_hand_grads", "grad_b left per sample", _QUAD_OK + '''
def mse_grads(X, y, w, b):
    r = X @ w + b - y
    return 2 * X.T @ r / len(y), 2 * r / len(y)
''', HINTS["mse_grad_b_scalar"], visible=True),
    Planted("ex02_saved_bytes", "parameters counted too", '''
def mlp_saved_bytes(B, sizes):
    params = sum(a * b + b for a, b in zip(sizes[:-1], sizes[1:]))
    return 4 * (B * sum(sizes[:-1]) + params)
''', HINTS["saved_params"], visible=True),
    Planted("ex02_saved_bytes", "the parameters counted instead of the activations", '''
def mlp_saved_bytes(B, sizes):
    return 4 * sum(a * b + b for a, b in zip(sizes[:-1], sizes[1:]))
''', HINTS["saved_params"], visible=True),
    Planted("ex02_saved_bytes", "the input forgotten", '''
def mlp_saved_bytes(B, sizes):
    return 4 * B * sum(sizes[1:-1])
''', HINTS["saved_input"], visible=True),
    Planted("ex02_saved_bytes", "bits instead of bytes", '''
def mlp_saved_bytes(B, sizes):
    return 32 * B * sum(sizes[:-1])
''', HINTS["bits_for_bytes"], visible=True),
    Planted("ex02_saved_bytes", "ReLU output and next Linear input counted separately", '''
def mlp_saved_bytes(B, sizes):
    return 4 * B * (sizes[0] + 2 * sum(sizes[1:-1]))
''', HINTS["saved_shared"], visible=True),
    Planted("ex02_saved_bytes", "every layer output counted, logits included", '''
def mlp_saved_bytes(B, sizes):
    return 4 * B * sum(sizes)
''', HINTS["saved_logits"], visible=True),
    Planted("ex02_saved_bytes", "pre-activations counted too", '''
def mlp_saved_bytes(B, sizes):
    return 4 * B * (sizes[0] + 2 * sum(sizes[1:-1]) + sizes[-1])
''', HINTS["saved_preact"], visible=True),
    Planted("ex02_saved_bytes", "a float instead of an int", '''
def mlp_saved_bytes(B, sizes):
    return 4.0 * B * sum(sizes[:-1])
''', HINTS["returns_int"], visible=True),
]
