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

# a correct walk, the base of the planted walks that each drop one rule
_WALK = '''
def backward_nodes(t):
    out, seen, todo = [], set(), [t.grad_fn] if t.grad_fn is not None else []
    while todo:
        node = todo.pop()
        {dedup}
        out.append({name})
        todo.extend(n for n, _ in node.next_functions{first} if n is not None{leaf})
    return [n for n in out if n is not None]
'''
_DEDUP = "if node in seen:\n            continue\n        seen.add(node)"

MISTAKES = [
    Planted("ex02_hand_grads", "the derivative of 3x forgotten", '''
def quadratic_grad(x):
    return 2 * x
''' + _MSE_OK, "3x"),
    Planted("ex02_hand_grads", "y returned instead of dy/dx", '''
def quadratic_grad(x):
    return x ** 2 + 3 * x + 1
''' + _MSE_OK, "不是导数"),
    Planted("ex02_hand_grads", "the 2 of the square forgotten", _QUAD_OK + '''
def mse_grads(X, y, w, b):
    r = X @ w + b - y
    return X.T @ r / len(y), r.mean()
''', "d(r²)/dr = 2r"),
    Planted("ex02_hand_grads", "sum instead of mean", _QUAD_OK + '''
def mse_grads(X, y, w, b):
    r = X @ w + b - y
    return 2 * X.T @ r, 2 * r.sum()
''', "除以 N"),
    Planted("ex02_hand_grads", "residual with the wrong sign", _QUAD_OK + '''
def mse_grads(X, y, w, b):
    r = y - X @ w - b
    return 2 * X.T @ r / len(y), 2 * r.mean()
''', "符号反了"),
    Planted("ex02_hand_grads", "grad_b left per sample", _QUAD_OK + '''
def mse_grads(X, y, w, b):
    r = X @ w + b - y
    return 2 * X.T @ r / len(y), 2 * r / len(y)
''', "对样本求和"),
    Planted("ex02_graph_nodes", "a node reached twice counted twice",
            _WALK.format(dedup="", name="type(node).__name__", first="", leaf=""), "只能算一次"),
    Planted("ex02_graph_nodes", "AccumulateGrad leaves skipped",
            _WALK.format(dedup=_DEDUP, name="type(node).__name__", first="",
                         leaf=" and type(n).__name__ != 'AccumulateGrad'"), "AccumulateGrad"),
    Planted("ex02_graph_nodes", "only the first input followed",
            _WALK.format(dedup=_DEDUP, name="type(node).__name__", first="[:1]", leaf=""), "第一项"),
    Planted("ex02_graph_nodes", "str(node) instead of the class name",
            _WALK.format(dedup=_DEDUP, name="str(node)", first="", leaf=""), "type(node).__name__"),
    Planted("ex02_saved_bytes", "parameters counted too", '''
def mlp_saved_bytes(B, sizes):
    params = sum(a * b + b for a, b in zip(sizes[:-1], sizes[1:]))
    return 4 * (B * sum(sizes[:-1]) + params)
''', "parameters"),
    Planted("ex02_saved_bytes", "the input forgotten", '''
def mlp_saved_bytes(B, sizes):
    return 4 * B * sum(sizes[1:-1])
''', "忘了输入"),
    Planted("ex02_saved_bytes", "bits instead of bytes", '''
def mlp_saved_bytes(B, sizes):
    return 32 * B * sum(sizes[:-1])
''', HINTS["bits_for_bytes"]),
    Planted("ex02_saved_bytes", "ReLU output and next Linear input counted separately", '''
def mlp_saved_bytes(B, sizes):
    return 4 * B * (sizes[0] + 2 * sum(sizes[1:-1]))
''', "同一块存储"),
    Planted("ex02_saved_bytes", "every layer output counted, logits included", '''
def mlp_saved_bytes(B, sizes):
    return 4 * B * sum(sizes)
''', "logits"),
    Planted("ex02_saved_bytes", "pre-activations counted too", '''
def mlp_saved_bytes(B, sizes):
    return 4 * B * (sizes[0] + 2 * sum(sizes[1:-1]) + sizes[-1])
''', "pre-activation"),
    Planted("ex02_saved_bytes", "a float instead of an int", '''
def mlp_saved_bytes(B, sizes):
    return 4.0 * B * sum(sizes[:-1])
''', "应返回 int"),
]
