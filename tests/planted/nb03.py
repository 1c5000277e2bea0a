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

# gpt_params, correct but for the one rule each planted mistake changes
_GPT = '''
def gpt_params(config):
    c = config
    d, b = c.d_model, 1 if c.bias else 0
    hidden = {hidden}

    def linear(n_in, n_out):
        return n_in * n_out + {linear_bias} * n_out

    norm = {norm}
    block = {block}
    head = {head}
    return {emb} * d + c.n_layer * block + {final} + head
'''
_RIGHT = dict(hidden="4 * d if c.d_ff is None else c.d_ff", linear_bias="b",
              norm="d * (2 if (c.norm == 'layer' and c.bias) else 1)",
              block="linear(d, 3 * d) + linear(d, d) + linear(d, hidden) + linear(hidden, d) + 2 * norm",
              head="0 if c.tie_embeddings else c.vocab_size * d", emb="(c.vocab_size + c.block_size)", final="norm")


def _gpt(**wrong) -> str:
    return _GPT.format(**{**_RIGHT, **wrong})


MISTAKES = [
    Planted("ex03_gpt_params", "the norm weights of the blocks forgotten",
            _gpt(block="linear(d, 3 * d) + linear(d, d) + linear(d, hidden) + linear(hidden, d)"),
            HINTS["norm_weights"], visible=True),
    Planted("ex03_gpt_params", "the output projection forgotten",
            _gpt(block="linear(d, 3 * d) + linear(d, hidden) + linear(hidden, d) + 2 * norm"),
            HINTS["attention_proj"], visible=True),
    Planted("ex03_gpt_params", "d_ff ignored: always 4d", _gpt(hidden="4 * d"), HINTS["d_ff_ignored"], visible=True),
    Planted("ex03_gpt_params", "the lecture's 12d^2 + 2d block for every configuration",
            _gpt(block="12 * d * d + 2 * d"), HINTS["d_ff_ignored"], visible=True),
    Planted("ex03_gpt_params", "a bias counted for RMSNorm", _gpt(norm="d * (2 if c.bias else 1)"),
            HINTS["rms_norm_bias"], visible=True),
    Planted("ex03_gpt_params", "no bias on LayerNorm", _gpt(norm="d"), HINTS["layernorm_bias"], visible=True),
    Planted("ex03_gpt_params", "no biases on the Linears", _gpt(linear_bias="0"), HINTS["linear_bias"], visible=True),
    Planted("ex03_gpt_params", "the tied embedding counted twice",
            _gpt(head="c.vocab_size * d"), HINTS["tied_twice"], visible=True),
    Planted("ex03_gpt_params", "the position embeddings forgotten", _gpt(emb="c.vocab_size"),
            HINTS["position_embeddings"], visible=True),
    Planted("ex03_gpt_params", "the final norm forgotten", _gpt(final="0"), HINTS["final_norm"], visible=True),
    Planted("ex03_gpt_params", "the untied head forgotten", _gpt(head="0"), HINTS["untied_head"], visible=True),
    Planted("ex03_gpt_params", "counted on a model built on the meta device", '''
def gpt_params(config):
    with torch.device("meta"):
        model = GPT(config)
    return sum(p.numel() for p in model.parameters())
''', HINTS["count_by_formula"], visible=True),
    Planted("ex03_gpt_params", "a float instead of an int", _gpt(hidden="4.0 * d if c.d_ff is None else float(c.d_ff)"),
            HINTS["returns_int"], visible=True),
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
