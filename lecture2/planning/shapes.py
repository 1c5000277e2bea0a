"""A decoder-only Transformer's shape: its matrices, parameter counts and FLOPs per token, from a preset, from flags
or from a Hugging Face `config.json`.

Covers what real runs use: multi-head, grouped-query (GQA) and multi-head latent attention (MLA, DeepSeek-V2/V3), a
SwiGLU (3 matrices) or GELU (2) MLP, mixture-of-experts layers (routed experts of which `top_k` are active, shared
experts, a router, the first `dense_layers` layers dense) and DeepSeek-V3's multi-token-prediction layers.

FLOPs per token (training, forward + backward = 3 x forward):
    matrices    6 x the active matrix parameters a token passes through (each layer's attention and MLP matrices,
                the LM head; the input embedding is a lookup, not a matmul)
    attention   3 x 2·T·a·(d_qk + d_v) per layer for the full T x T square (PaLM's 12·L·h·T when d_qk = d_v = h/a);
                causal attention computes about half of it, and that half is what MFU counts here ("model FLOPs":
                what the model needs, not what a kernel happens to execute)
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path

__all__ = ["MODELS", "ModelShape", "ConfigReport", "from_config", "model"]


@dataclass(frozen=True)
class ModelShape:
    """A decoder-only Transformer (pre-norm). Sizes in elements; see the module's text for what each part means."""

    name: str
    n_layers: int
    d_model: int
    n_heads: int
    d_ff: int  # the dense MLP's hidden width
    vocab_size: int
    kv_heads: int | None = None  # grouped-query attention; None: as many as n_heads
    head_dim: int | None = None  # None: d_model / n_heads
    ffn: str = "swiglu"  # "swiglu" (gate, up, down) or "gelu" (up, down)
    tied_embeddings: bool = False
    bias: bool = False  # GPT-2 / GPT-NeoX / Megatron's GPT keep biases in every linear layer
    norm: str = "rmsnorm"  # or "layernorm" (a weight and a bias)
    # multi-head latent attention (DeepSeek-V2/V3): compressed queries and keys/values, a decoupled RoPE part
    q_lora_rank: int = 0
    kv_lora_rank: int = 0
    qk_rope_dim: int = 0
    qk_nope_dim: int = 0
    v_head_dim: int = 0
    # mixture of experts
    n_experts: int = 0  # routed experts per MoE layer
    top_k: int = 0  # routed experts each token goes to
    shared_experts: int = 0  # experts every token goes to
    expert_ffn: int = 0  # hidden width of one expert
    dense_layers: int = 0  # the first layers keep a dense MLP (DeepSeek-V3: 3)
    max_nodes_per_token: int = 0  # node-limited routing (DeepSeek-V3: each token to at most 4 nodes); 0: none
    mtp_layers: int = 0  # multi-token prediction modules (DeepSeek-V3: 1), each a layer + a 2h x h projection
    n_params_override: float | None = None  # a round figure to plan with (the lecture's "7B")
    source: str = ""

    def __post_init__(self):
        for name in ("n_layers", "d_model", "n_heads", "d_ff", "vocab_size"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} 应是正整数 (a positive int), 得到 {value!r}")
        if self.ffn not in ("swiglu", "gelu"):
            raise ValueError(f"ffn 应是 'swiglu' 或 'gelu', 得到 {self.ffn!r}")
        if not self.mla and self.head_dim is None and self.d_model % self.n_heads:
            raise ValueError(f"d_model ({self.d_model}) 要被 n_heads ({self.n_heads}) 整除 (or give head_dim)")
        if self.n_heads % self.kv:
            raise ValueError(f"n_heads ({self.n_heads}) 要被 kv_heads ({self.kv}) 整除")
        if self.moe and not (0 < self.top_k <= self.n_experts and self.expert_ffn > 0):
            raise ValueError(f"MoE 需要 0 < top_k <= n_experts 且 expert_ffn > 0, 得到 top_k={self.top_k}, "
                             f"n_experts={self.n_experts}, expert_ffn={self.expert_ffn}")

    # ---- what the shape is made of
    @property
    def kv(self) -> int:
        return self.kv_heads or self.n_heads

    @property
    def hd(self) -> int:
        return self.head_dim or self.d_model // self.n_heads

    @property
    def mla(self) -> bool:
        return self.kv_lora_rank > 0

    @property
    def moe(self) -> bool:
        return self.n_experts > 0

    @property
    def qk_dim(self) -> int:
        """Width of one head's query and key (MLA: its no-RoPE and RoPE parts)."""
        return self.qk_nope_dim + self.qk_rope_dim if self.mla else self.hd

    @property
    def v_dim(self) -> int:
        return self.v_head_dim if self.mla else self.hd

    def attention_matrices(self) -> list[tuple[str, int, int]]:
        """(name, in features, out features) of one layer's attention matrices."""
        h, a = self.d_model, self.n_heads
        if self.mla:
            q = ([("q_down", h, self.q_lora_rank), ("q_up", self.q_lora_rank, a * self.qk_dim)] if self.q_lora_rank
                 else [("q", h, a * self.qk_dim)])
            return q + [("kv_down", h, self.kv_lora_rank + self.qk_rope_dim),
                        ("kv_up", self.kv_lora_rank, a * (self.qk_nope_dim + self.v_dim)),
                        ("out", a * self.v_dim, h)]
        return [("qkv", h, (a + 2 * self.kv) * self.hd), ("out", a * self.hd, h)]

    def mlp_matrices(self, width: int) -> list[tuple[str, int, int]]:
        """(name, in, out) of one MLP of hidden width `width` (SwiGLU's gate and up as one matrix of 2·width)."""
        up = 2 * width if self.ffn == "swiglu" else width
        return [("up", self.d_model, up), ("down", width, self.d_model)]

    def is_moe_layer(self, i: int) -> bool:
        return self.moe and i >= self.dense_layers

    def layer_norm_params(self) -> int:
        h = self.d_model
        extra = (self.q_lora_rank + self.kv_lora_rank) if self.mla else 0  # MLA normalises its compressed vectors
        return (2 * h + extra) * (2 if self.norm == "layernorm" else 1)

    def _matrix_params(self, matrices) -> int:
        return sum(i * o + (o if self.bias else 0) for _, i, o in matrices)

    def layer_params(self, i: int = 0, active: bool = False) -> int:
        """Parameters of layer `i`: all of them, or (`active`) those one token passes through."""
        return self._layer_kinds[(self.is_moe_layer(i), active)]

    @cached_property
    def _layer_kinds(self) -> dict[tuple[bool, bool], int]:
        """(MoE layer?, active only?) -> parameters of such a layer (computed once: a search asks thousands of times)."""
        attn = self._matrix_params(self.attention_matrices()) + self.layer_norm_params()
        dense = attn + self._matrix_params(self.mlp_matrices(self.d_ff))
        out = {(False, False): dense, (False, True): dense}
        if self.moe:
            expert = self._matrix_params(self.mlp_matrices(self.expert_ffn))
            for active in (False, True):
                experts = (self.top_k if active else self.n_experts) + self.shared_experts
                out[(True, active)] = attn + experts * expert + self.d_model * self.n_experts  # + the router
        return out

    def expert_params(self) -> int:
        """Parameters of one routed expert (what expert parallelism places on a GPU)."""
        return self._matrix_params(self.mlp_matrices(self.expert_ffn)) if self.moe else 0

    def embedding_params(self) -> int:
        return self.vocab_size * self.d_model

    def mtp_params(self) -> int:
        """DeepSeek-V3's MTP modules: a layer, two norms and a 2h x h projection each (embedding and head shared)."""
        return self.mtp_layers * (self.layer_params(self.n_layers - 1) + 2 * self.d_model * self.d_model
                                  + 2 * self.d_model)

    @cached_property
    def _counted(self) -> int:
        return self.counted_params()

    def counted_params(self) -> int:
        heads = 1 if self.tied_embeddings else 2
        return (sum(self.layer_params(i) for i in range(self.n_layers)) + heads * self.embedding_params()
                + self.d_model + self.mtp_params())

    @cached_property
    def scale(self) -> float:
        """1, or the round figure a preset plans with over what its shape counts (the lecture's 7e9 / 6.74e9)."""
        return 1.0 if self.n_params_override is None else self.n_params_override / self._counted

    @property
    def n_params(self) -> float:
        """All parameters (every expert), as a checkpoint holds them."""
        return float(self.n_params_override if self.n_params_override is not None else self.counted_params())

    @cached_property
    def n_active(self) -> float:
        """Parameters one token passes through (= n_params for a dense model)."""
        heads = 1 if self.tied_embeddings else 2
        counted = (sum(self.layer_params(i, active=True) for i in range(self.n_layers))
                   + heads * self.embedding_params() + self.d_model)
        return counted * self.scale

    def matmul_params(self) -> float:
        return self._matmul

    @cached_property
    def _matmul(self) -> float:
        """Active parameters that enter a matmul: every layer's matrices (the active experts), the LM head, the MTP
        modules (which reuse the head). Norms, biases and the input embedding are not matmuls."""
        total = 0
        for i in range(self.n_layers):
            total += sum(i_ * o for _, i_, o in self.attention_matrices())
            if self.is_moe_layer(i):
                per = sum(i_ * o for _, i_, o in self.mlp_matrices(self.expert_ffn))
                total += (self.top_k + self.shared_experts) * per + self.d_model * self.n_experts
            else:
                total += sum(i_ * o for _, i_, o in self.mlp_matrices(self.d_ff))
        mtp_layer = sum(i_ * o for _, i_, o in self.attention_matrices()) + (
            (self.top_k + self.shared_experts) * sum(i_ * o for _, i_, o in self.mlp_matrices(self.expert_ffn))
            if self.moe else sum(i_ * o for _, i_, o in self.mlp_matrices(self.d_ff)))
        head = self.embedding_params()
        total += head + self.mtp_layers * (mtp_layer + 2 * self.d_model * self.d_model + head)
        return total * self.scale

    def attention_flops_per_token(self, seq_len: int, causal: bool = True) -> float:
        """Training FLOPs per token of attention's two matmuls (QK^T, PV), forward + backward, over all layers:
        3 x 2·T·a·(d_qk + d_v) per layer for the full square, half of it causal."""
        layers = self.n_layers + self.mtp_layers
        full = 3 * 2 * seq_len * self.n_heads * (self.qk_dim + self.v_dim) * layers
        return full / 2 if causal else full

    def model_flops_per_token(self, seq_len: int) -> float:
        """What MFU counts per token: 6 x matmul parameters + causal attention (no recomputation)."""
        return 6 * self.matmul_params() + self.attention_flops_per_token(seq_len, causal=True)

    def describe(self) -> str:
        kind = "MLA" if self.mla else ("GQA" if self.kv < self.n_heads else "MHA")
        text = (f"{self.name}: {self.n_layers} layers, d {self.d_model}, {self.n_heads} heads ({kind}"
                + (f", {self.kv} KV heads" if kind == "GQA" else "") + f"), {self.ffn.upper()} MLP {self.d_ff}")
        if self.moe:
            text += (f", MoE {self.n_experts} experts (top {self.top_k}, {self.shared_experts} shared, "
                     f"width {self.expert_ffn}, first {self.dense_layers} dense)")
        return text + f", vocabulary {self.vocab_size:,}: {self.n_params / 1e9:.1f}B parameters" + (
            f", {self.n_active / 1e9:.1f}B active" if self.moe else "")


# fmt: off
MODELS: dict[str, ModelShape] = {m.name: m for m in [
    ModelShape("llama2-7b", 32, 4096, 32, 11008, 32000, source="Touvron et al. 2023 (Llama 2), Table 1; its config.json"),
    ModelShape("lecture-7b", 32, 4096, 32, 11008, 32000, n_params_override=7e9,
               source="the lecture's 7B (N = 7e9) on Llama 2 7B's shape"),
    ModelShape("llama2-70b", 80, 8192, 64, 28672, 32000, kv_heads=8, source="Touvron et al. 2023 (Llama 2)"),
    ModelShape("llama3-8b", 32, 4096, 32, 14336, 128256, kv_heads=8, source="Dubey et al. 2024 (Llama 3), Table 3"),
    ModelShape("llama3-70b", 80, 8192, 64, 28672, 128256, kv_heads=8, source="Dubey et al. 2024 (Llama 3), Table 3"),
    ModelShape("llama3-405b", 126, 16384, 128, 53248, 128256, kv_heads=8, source="Dubey et al. 2024 (Llama 3), Table 3"),
    ModelShape("gpt3-175b", 96, 12288, 96, 4 * 12288, 50257, ffn="gelu", tied_embeddings=True,
               source="Brown et al. 2020, Table 2.1"),
    # Narayanan et al. 2021 (Megatron-LM, SC'21), Table 1: GPT models with vocabulary 51,200, sequences of 2,048,
    # a GELU MLP of 4h, biases and LayerNorm (Megatron's GPT), input embedding and head tied.
    ModelShape("megatron-145b", 80, 12288, 96, 4 * 12288, 51200, ffn="gelu", tied_embeddings=True, bias=True,
               norm="layernorm", source="Narayanan et al. 2021, Table 1 (145.6B)"),
    ModelShape("megatron-530b", 105, 20480, 128, 4 * 20480, 51200, ffn="gelu", tied_embeddings=True, bias=True,
               norm="layernorm", source="Narayanan et al. 2021, Table 1 (529.6B)"),
    ModelShape("megatron-1t", 128, 25600, 160, 4 * 25600, 51200, ffn="gelu", tied_embeddings=True, bias=True,
               norm="layernorm", source="Narayanan et al. 2021, Table 1 (1008B)"),
    # DeepSeek-AI 2024, DeepSeek-V3 technical report §4.2 and its config.json: 61 layers, d 7,168, 128 heads of MLA
    # (queries compressed to 1,536, keys/values to 512, RoPE part 64, heads of 128), the first 3 layers dense
    # (18,432), then 1 shared + 256 routed experts of 2,048, 8 active; one MTP module; 671B, 37B active.
    ModelShape("deepseek-v3", 61, 7168, 128, 18432, 129280, head_dim=128, q_lora_rank=1536, kv_lora_rank=512,
               qk_rope_dim=64, qk_nope_dim=128, v_head_dim=128, n_experts=256, top_k=8, shared_experts=1,
               expert_ffn=2048, dense_layers=3, max_nodes_per_token=4, mtp_layers=1,
               source="DeepSeek-V3 technical report (2024), §2 and §4.2; its config.json"),
]}
# fmt: on


def model(name: str) -> ModelShape:
    """The preset named `name` (a key of MODELS)."""
    if name not in MODELS:
        raise KeyError(f"未知的模型 (unknown model) {name!r}; known: {', '.join(MODELS)}")
    return MODELS[name]


# ---- Hugging Face config.json ------------------------------------------------------------------------------------

# config key -> ModelShape field, per family; the first key found of each tuple wins
_KEYS = {
    "n_layers": ("num_hidden_layers", "n_layer", "num_layers"),
    "d_model": ("hidden_size", "n_embd", "d_model"),
    "n_heads": ("num_attention_heads", "n_head"),
    "kv_heads": ("num_key_value_heads",),
    "head_dim": ("head_dim",),
    "d_ff": ("intermediate_size", "n_inner", "ffn_hidden_size"),
    "vocab_size": ("vocab_size", "padded_vocab_size"),
    "q_lora_rank": ("q_lora_rank",),
    "kv_lora_rank": ("kv_lora_rank",),
    "qk_rope_dim": ("qk_rope_head_dim",),
    "qk_nope_dim": ("qk_nope_head_dim",),
    "v_head_dim": ("v_head_dim",),
    "n_experts": ("n_routed_experts", "num_local_experts", "num_experts"),
    "top_k": ("num_experts_per_tok",),
    "shared_experts": ("n_shared_experts",),
    "expert_ffn": ("moe_intermediate_size",),
    "dense_layers": ("first_k_dense_replace",),
    "mtp_layers": ("num_nextn_predict_layers",),
}
_ACTIVATIONS = {"silu": "swiglu", "swiglu": "swiglu", "gelu": "gelu", "gelu_new": "gelu", "gelu_fast": "gelu",
                "gelu_pytorch_tanh": "gelu", "relu": "gelu"}
# keys that change nothing the planner computes (positions, numerics, tokens, serving, initialisation)
_IRRELEVANT = {
    "architectures", "model_type", "torch_dtype", "transformers_version", "bos_token_id", "eos_token_id",
    "pad_token_id", "max_position_embeddings", "n_positions", "n_ctx", "rope_theta", "rope_scaling", "rotary_pct",
    "rotary_emb_base", "rms_norm_eps", "layer_norm_eps", "layer_norm_epsilon", "initializer_range", "use_cache",
    "attention_dropout", "hidden_dropout", "attn_pdrop", "embd_pdrop", "resid_pdrop", "summary_type",
    "summary_use_proj", "summary_activation", "summary_proj_to_labels", "summary_first_dropout", "task_specific_params",
    "sliding_window", "use_sliding_window", "max_window_layers", "pretraining_tp", "use_parallel_residual",
    "attention_bias", "mlp_bias", "bias", "scale_attn_weights", "reorder_and_upcast_attn",
    "scale_attn_by_inverse_layer_idx", "quantization_config", "auto_map", "routed_scaling_factor", "scoring_func",
    "topk_method", "n_group", "topk_group", "norm_topk_prob", "aux_loss_alpha", "seq_aux", "ep_size",
    "moe_layer_freq", "output_router_logits", "router_aux_loss_coef", "router_jitter_noise", "tie_word_embeddings",
    "hidden_act", "activation_function", "name_or_path", "_name_or_path", "classifier_dropout", "layer_types",
    "rope_interleave", "use_qk_norm", "qkv_bias", "decoder_sparse_step", "mlp_only_layers", "shared_expert_intermediate_size",
}


@dataclass(frozen=True)
class ConfigReport:
    """What reading a config.json found: the shape, the keys it used, the keys it read and set aside as irrelevant
    to planning, and the keys it does not know (named, never guessed)."""

    shape: ModelShape
    used: tuple[str, ...]
    ignored: tuple[str, ...]
    unknown: tuple[str, ...]
    notes: tuple[str, ...] = field(default=())

    def describe(self) -> str:
        lines = [f"read {len(self.used)} keys: {', '.join(self.used)}"]
        if self.ignored:
            lines.append(f"set aside (they change nothing planned): {', '.join(self.ignored)}")
        if self.unknown:
            lines.append(f"未知的键 (unknown keys, not used): {', '.join(self.unknown)}")
        return "\n".join(lines + list(self.notes))


def from_config(config: str | Path | dict, name: str | None = None) -> ConfigReport:
    """A ModelShape from a Hugging Face config.json (a path or its dict): the LLaMA / Mistral / Qwen family
    (num_hidden_layers, hidden_size, num_attention_heads, num_key_value_heads, intermediate_size, vocab_size,
    tie_word_embeddings, hidden_act silu = SwiGLU), GPT-2 (n_layer, n_embd, n_head, n_inner = 4·n_embd when null,
    a GELU MLP, biases, LayerNorm), GPT-NeoX (GELU, biases, LayerNorm), Mixtral / Qwen-MoE and DeepSeek-V2/V3 (MoE,
    MLA). Raises ValueError naming what is missing or malformed; unknown keys are reported, not guessed."""
    if isinstance(config, (str, Path)):
        path = Path(config)
        try:
            data = json.loads(path.read_text())
        except OSError as err:
            raise ValueError(f"读不了 config (cannot read) {str(path)!r}: {err.strerror or err}") from None
        except json.JSONDecodeError as err:
            raise ValueError(f"{str(path)!r} 不是 JSON (not JSON): line {err.lineno}: {err.msg}") from None
        name = name or path.parent.name or path.stem
    else:
        data = config
    if not isinstance(data, dict):
        raise ValueError(f"config.json 应是一个 JSON object, 得到 {type(data).__name__}")
    family = str(data.get("model_type", "")).lower()
    gpt2_like = family in ("gpt2", "gpt_neox", "gpt_bigcode", "gptj") or "n_embd" in data
    values, used = {}, []
    for target, keys in _KEYS.items():
        for key in keys:
            if data.get(key) is not None:
                values[target] = _int(data[key], key)
                used.append(key)
                break
    for required in ("n_layers", "d_model", "n_heads", "vocab_size"):
        if required not in values:
            raise ValueError(f"config 缺少 (missing) {' or '.join(_KEYS[required])}")
    act = data.get("hidden_act", data.get("activation_function"))
    if act is not None:
        used.append("hidden_act" if "hidden_act" in data else "activation_function")
        if str(act).lower() not in _ACTIVATIONS:
            raise ValueError(f"不认识的激活函数 (unknown activation) {act!r}; known: {', '.join(_ACTIVATIONS)}")
    ffn = _ACTIVATIONS.get(str(act).lower(), "gelu" if gpt2_like else "swiglu") if act is not None else (
        "gelu" if gpt2_like else "swiglu")
    if "d_ff" not in values:  # GPT-2's n_inner: null means 4 x n_embd
        values["d_ff"] = 4 * values["d_model"]
    tied = data.get("tie_word_embeddings", gpt2_like)
    if "tie_word_embeddings" in data:
        used.append("tie_word_embeddings")
    bias = bool(data.get("attention_bias", data.get("bias", gpt2_like)))
    notes = []
    if values.get("n_experts") and "expert_ffn" not in values:
        values["expert_ffn"] = values["d_ff"]  # Mixtral: every expert has the dense width
    if values.get("n_experts") and family == "mixtral":
        notes.append("Mixtral: every layer is MoE, each expert as wide as intermediate_size")
    shape = ModelShape(name=name or family or "config", ffn=ffn, tied_embeddings=bool(tied), bias=bias,
                       norm="layernorm" if gpt2_like else "rmsnorm",
                       source=f"config.json ({family or 'no model_type'})", **values)
    ignored = tuple(k for k in data if k in _IRRELEVANT and k not in used)
    unknown = tuple(k for k in data if k not in _IRRELEVANT and k not in used)
    return ConfigReport(shape, tuple(used), ignored, unknown, tuple(notes))


def _int(value, key: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != int(value) or value < 0:
        raise ValueError(f"config 的 {key} 应是非负整数 (a non-negative int), 得到 {value!r}")
    return int(value)


def with_params(shape: ModelShape, n_params: float) -> ModelShape:
    """The same shape planned with `n_params` parameters (a round figure; every matrix scaled alike)."""
    return replace(shape, n_params_override=float(n_params))


def check_divisible(shape: ModelShape, tp: int) -> None:
    """Tensor parallelism splits heads (and KV heads) over `tp` GPUs: both must divide."""
    if shape.n_heads % tp or (not shape.mla and shape.kv % tp and tp % shape.kv):
        raise ValueError(f"tp={tp} 要整除 n_heads={shape.n_heads} 和 kv_heads={shape.kv} (tp must divide the heads; "
                         f"with fewer KV heads than tp, tp must be a multiple of them)")
