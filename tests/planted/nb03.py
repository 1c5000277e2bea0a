import lecture2.exercises.modules  # noqa: F401  (registers its own hints, modules.*)
from lecture2.checks import HINTS

from . import Planted

NOTEBOOK = "03_modules.ipynb"

_RMS_HEAD = '''
class RMSNorm(nn.Module):
    def __init__(self, d_model, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d_model))

    def forward(self, x):
'''

MISTAKES = [
    Planted("ex03_block_params", "the norm weights forgotten", '''
def block_params(d_model, d_ff=None, bias=False, norm="rms"):
    h = 4 * d_model if d_ff is None else d_ff
    b = 1 if bias else 0
    return 4 * d_model * d_model + 4 * d_model * b + 2 * d_model * h + (h + d_model) * b
''', HINTS["norm_weights"], visible=True),
    Planted("ex03_block_params", "the output projection forgotten", '''
def block_params(d_model, d_ff=None, bias=False, norm="rms"):
    h = 4 * d_model if d_ff is None else d_ff
    b = 1 if bias else 0
    norm_each = d_model * (2 if norm == "layer" and bias else 1)
    return 3 * d_model * d_model + 3 * d_model * b + 2 * d_model * h + (h + d_model) * b + 2 * norm_each
''', HINTS["attention_proj"], visible=True),
    Planted("ex03_block_params", "d_ff ignored: always 4d", '''
def block_params(d_model, d_ff=None, bias=False, norm="rms"):
    h = 4 * d_model
    b = 1 if bias else 0
    norm_each = d_model * (2 if norm == "layer" and bias else 1)
    return 4 * d_model * d_model + 4 * d_model * b + 2 * d_model * h + (h + d_model) * b + 2 * norm_each
''', HINTS["d_ff_ignored"], visible=True),
    Planted("ex03_block_params", "a bias counted for RMSNorm", '''
def block_params(d_model, d_ff=None, bias=False, norm="rms"):
    h = 4 * d_model if d_ff is None else d_ff
    b = 1 if bias else 0
    norm_each = d_model * (2 if bias else 1)
    return 4 * d_model * d_model + 4 * d_model * b + 2 * d_model * h + (h + d_model) * b + 2 * norm_each
''', HINTS["rms_norm_bias"], visible=True),
    Planted("ex03_block_params", "no bias on LayerNorm", '''
def block_params(d_model, d_ff=None, bias=False, norm="rms"):
    h = 4 * d_model if d_ff is None else d_ff
    b = 1 if bias else 0
    return 4 * d_model * d_model + 4 * d_model * b + 2 * d_model * h + (h + d_model) * b + 2 * d_model
''', HINTS["layernorm_bias"], visible=True),
    Planted("ex03_block_params", "no biases on the Linears", '''
def block_params(d_model, d_ff=None, bias=False, norm="rms"):
    h = 4 * d_model if d_ff is None else d_ff
    norm_each = d_model * (2 if norm == "layer" and bias else 1)
    return 4 * d_model * d_model + 2 * d_model * h + 2 * norm_each
''', HINTS["linear_bias"], visible=True),
    Planted("ex03_block_params", "the lecture's 12d^2 + 2d for every configuration", '''
def block_params(d_model, d_ff=None, bias=False, norm="rms"):
    return 12 * d_model * d_model + 2 * d_model
''', HINTS["d_ff_ignored"], visible=True),
    Planted("ex03_block_params", "counted on a model built on the meta device", '''
def block_params(d_model, d_ff=None, bias=False, norm="rms"):
    with torch.device("meta"):
        block = TransformerBlock(d_model, 1, d_ff, bias, norm)
    return sum(p.numel() for p in block.parameters())
''', HINTS["count_by_formula"], visible=True),
    Planted("ex03_block_params", "a float instead of an int", '''
def block_params(d_model, d_ff=None, bias=False, norm="rms"):
    h = 4.0 * d_model if d_ff is None else float(d_ff)
    b = 1 if bias else 0
    norm_each = d_model * (2 if norm == "layer" and bias else 1)
    return 4 * d_model * d_model + 4 * d_model * b + 2 * d_model * h + (h + d_model) * b + 2 * norm_each
''', HINTS["returns_int"], visible=True),
    Planted("ex03_gpt_params", "the tied embedding counted twice", '''
def gpt_params(config):
    c = config
    final = c.d_model * (2 if c.norm == "layer" and c.bias else 1)
    return (2 * c.vocab_size + c.block_size) * c.d_model + c.n_layer * block_params(c.d_model, c.d_ff, c.bias, c.norm) + final
''', HINTS["tied_twice"], visible=True),
    Planted("ex03_gpt_params", "the position embeddings forgotten", '''
def gpt_params(config):
    c = config
    final = c.d_model * (2 if c.norm == "layer" and c.bias else 1)
    head = 0 if c.tie_embeddings else c.vocab_size * c.d_model
    return c.vocab_size * c.d_model + c.n_layer * block_params(c.d_model, c.d_ff, c.bias, c.norm) + final + head
''', HINTS["position_embeddings"], visible=True),
    Planted("ex03_gpt_params", "the final norm forgotten", '''
def gpt_params(config):
    c = config
    head = 0 if c.tie_embeddings else c.vocab_size * c.d_model
    return (c.vocab_size + c.block_size) * c.d_model + c.n_layer * block_params(c.d_model, c.d_ff, c.bias, c.norm) + head
''', HINTS["final_norm"], visible=True),
    Planted("ex03_gpt_params", "the untied head forgotten", '''
def gpt_params(config):
    c = config
    final = c.d_model * (2 if c.norm == "layer" and c.bias else 1)
    return (c.vocab_size + c.block_size) * c.d_model + c.n_layer * block_params(c.d_model, c.d_ff, c.bias, c.norm) + final
''', HINTS["untied_head"], visible=True),
    Planted("ex03_gpt_params", "counted on a model built on the meta device", '''
def gpt_params(config):
    with torch.device("meta"):
        model = GPT(config)
    return sum(p.numel() for p in model.parameters())
''', HINTS["count_by_formula"], visible=True),
    Planted("ex03_rmsnorm", "mean instead of mean of squares", _RMS_HEAD + '''
        return x / torch.sqrt(x.mean(-1, keepdim=True).abs() + self.eps) * self.weight
''', HINTS["rms_mean_not_square"], visible=True),
    Planted("ex03_rmsnorm", "LayerNorm: the mean subtracted", _RMS_HEAD + '''
        x = x - x.mean(-1, keepdim=True)
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight
''', HINTS["rms_layernorm"], visible=True),
    Planted("ex03_rmsnorm", "eps forgotten", _RMS_HEAD + '''
        return x / x.pow(2).mean(-1, keepdim=True).sqrt() * self.weight
''', HINTS["rms_no_eps"], visible=True),
    Planted("ex03_rmsnorm", "eps outside the sqrt", _RMS_HEAD + '''
        return x / (x.pow(2).mean(-1, keepdim=True).sqrt() + self.eps) * self.weight
''', HINTS["rms_eps_outside"], visible=True),
    Planted("ex03_rmsnorm", "sqrt forgotten", _RMS_HEAD + '''
        return x / (x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight
''', HINTS["rms_no_sqrt"], visible=True),
    Planted("ex03_rmsnorm", "sum of squares instead of mean", _RMS_HEAD + '''
        return x * torch.rsqrt(x.pow(2).sum(-1, keepdim=True) + self.eps) * self.weight
''', HINTS["rms_sum"], visible=True),
    Planted("ex03_rmsnorm", "normalised over the first dim", _RMS_HEAD + '''
        return x * torch.rsqrt(x.pow(2).mean(0, keepdim=True) + self.eps) * self.weight
''', HINTS["rms_dim"], visible=True),
    Planted("ex03_rmsnorm", "the weight not applied", _RMS_HEAD + '''
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
''', HINTS["rms_weight"], visible=True),
    Planted("ex03_rmsnorm", "the scale detached from autograd", _RMS_HEAD + '''
        return (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight).detach()
''', HINTS["rms_detached"], visible=True),
    Planted("ex03_rmsnorm", "the weight under another name", '''
class RMSNorm(nn.Module):
    def __init__(self, d_model, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.scale = nn.Parameter(torch.ones(d_model))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.scale
''', HINTS["rms_state_dict_key"], visible=True),
    Planted("ex03_rmsnorm", "torch's rms_norm called", _RMS_HEAD + '''
        return torch.nn.functional.rms_norm(x, (x.shape[-1],), self.weight, self.eps)
''', HINTS["rms_from_scratch"], visible=True),
    Planted("ex03_rmsnorm", "computed in fp32, not cast back to the input's dtype", _RMS_HEAD + '''
        xf = x.float()
        return xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight.float()
''', HINTS["rms_output_dtype"], visible=True),
    Planted("ex03_rmsnorm", "keepdim forgotten: the mean does not broadcast", _RMS_HEAD + '''
        return x * torch.rsqrt(x.pow(2).mean(-1) + self.eps) * self.weight
''', HINTS["modules.rms_keepdim"], visible=True),
    Planted("ex03_rmsnorm", "the weight initialised at random", '''
class RMSNorm(nn.Module):
    def __init__(self, d_model, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.randn(d_model))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight
''', HINTS["modules.rms_init_ones"], visible=True),
    Planted("ex03_rmsnorm", "a subclass of torch.nn.RMSNorm", '''
class RMSNorm(nn.RMSNorm):
    def __init__(self, d_model, eps=1e-5):
        super().__init__(d_model, eps=eps)
''', HINTS["rms_from_scratch"], visible=True),
    Planted("ex03_rmsnorm", "x.data: no gradient for the input", _RMS_HEAD + '''
        x = x.data
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight
''', HINTS["rms_detached"], visible=True),
    Planted("ex03_rmsnorm", "forward under torch.no_grad()", _RMS_HEAD + '''
        with torch.no_grad():
            return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight
''', HINTS["rms_detached"], visible=True),
    Planted("ex03_rmsnorm", "torch's layer_norm called", _RMS_HEAD + '''
        ms = torch.nn.functional.layer_norm(x, (x.shape[-1],), eps=self.eps)  # then thrown away
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight
''', HINTS["rms_from_scratch"], visible=True),
]
