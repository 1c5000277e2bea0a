"""ZeRO as Rajbhandari et al. (2020) state it, written out on flat buffers: a textbook engine for notebook 10.

Stage 0 is plain data parallelism; stage 1 shards the optimizer states, stage 2 also the gradients,
stage 3 also the parameters. PyTorch ships stage 1 (`ZeroRedundancyOptimizer`, sharded by whole
parameter tensors) and stage 3 (FSDP2 `fully_shard`), but no engine that holds stage 2's state between
steps (full parameters, sharded gradients). This one holds exactly what the paper counts, for every
recipe of notebook 06, and issues exactly the paper's collectives, so that each byte and each collective
can be predicted. It runs inside a process of a live group (`lecture2.distributed` starts it).

Layout: the model's parameters are views into one flat buffer of the model dtype. For stages 1-3 it is
padded to n * s elements, s = ceil(N / n), so that it splits into n equal shards: rank r owns elements
[r*s, (r+1)*s). (With N divisible by n there is no padding.) Stage 0 keeps N elements.

Held between steps, per rank (p: bytes of the model dtype; N elements full, s per shard):

    stage   parameters   gradients   optimizer states (Adam: m, v; mixed precision: + fp32 master)
    0       N p          N p         full
    1       N p          N p         shard
    2       N p          s p         shard
    3       s p          s p         shard

Collectives per step (parameters in the model dtype; gradients in `reduce_dtype`, the model dtype unless said):

    stage 0   all_reduce(gradients)
    stage 1   reduce_scatter(gradients), all_gather(updated parameters)   (the full gradient stays allocated)
    stage 2   reduce the gradients bucket by bucket during backward, all_gather(updated parameters)
    stage 3   all_gather(parameters) for forward, again for backward, gradients reduced as in stage 2

Reduce dtype. Megatron reduces bf16 models' gradients in fp32 (its main_grad buffers; bf16 turns on
--accumulate-allreduce-grads-in-fp32) and torchtitan's FSDP2 default is mixed_precision_reduce = "float32":
with `reduce_dtype=torch.float32` the gradients are cast to fp32 for the collective (a bucket at a time), summed
in fp32 and rounded once into the recipe's gradient dtype. The parameter gathers stay in the model dtype. The
bytes on the wire for the gradients double, the bytes held between steps do not change.

Buckets (stages 2-3). Autograd writes each parameter's gradient as its backward finishes; a hook copies it into
the current bucket (in the reduce dtype) and frees it at once. A full bucket is reduced and only this rank's
slice of the result is kept, so a rank never holds the full gradient: its peak is the shard, one bucket and
one parameter's gradient, below stage 1's full gradient buffer (DeepSpeed's ZeRO-2 does the same: its
reduce_bucket_size). A bucket that covers the whole padded buffer (the default, `bucket_bytes=None`: the paper's
one-shot reduce-scatter) is one reduce_scatter; a smaller one is a `reduce` of each rank's part of it to that
rank, as DeepSpeed's ZeRO-2 does, which sends the same (n-1)/n of its bytes in the ring model.

Simplifications, stated: stage 3 gathers the whole model as one unit (FSDP gathers one block at a time, which
bounds the peak; the bytes between steps and per step are the same).
"""
from __future__ import annotations

import math

import torch
import torch.distributed as dist

from . import estimate
from .flat_collectives import all_gather_flat, reduce_scatter_flat

__all__ = ["RECIPES", "Optimizer", "ZeroEngine"]

# recipe -> (model dtype, optimizer, keeps an fp32 master copy): the recipes of lecture2.estimate's one table that
# the engines train (estimate.TRAINED_RECIPES: fp32_adam 4 + 4 + 8 bytes/param, bf16_mixed_adam the lecture's
# 2 + 2 + 12, sgd 4 + 4 + 0, sgd_momentum 4 + 4 + 4, bf16_sgd the lecture's "4N" 2 + 2 + 0)
RECIPES: dict[str, tuple[torch.dtype, str, bool]] = {
    key: ({"fp32": torch.float32, "bf16": torch.bfloat16}[r.dtype], r.algorithm, r.master)
    for key, r in estimate.TRAINED_RECIPES.items()}


class Optimizer:
    """Adam (with torch.optim.Adam's defaults and arithmetic) or SGD (momentum 0 or 0.9), written out on a
    list of tensors. Its state is exactly Adam's m and v, or the momentum buffer: the step count is a
    Python int, not a tensor. (torch.optim would also do, but its first use imports torch._dynamo, seconds
    of CPU in every rank.)"""

    def __init__(self, params: list[torch.Tensor], kind: str, lr: float = 1e-3, betas=(0.9, 0.999),
                 eps: float = 1e-8, momentum: float = 0.9):
        if kind not in ("adam", "sgd", "sgd_momentum"):
            raise ValueError(f"optimizer 应是 'adam', 'sgd' 或 'sgd_momentum', 得到 {kind!r}")
        self.params, self.kind, self.lr, self.betas, self.eps, self.momentum = list(params), kind, lr, betas, eps, momentum
        self.t = 0
        zeros = [torch.zeros_like(p) for p in self.params]
        if kind == "adam":
            self.state = {"exp_avg": zeros, "exp_avg_sq": [torch.zeros_like(p) for p in self.params]}
        elif kind == "sgd_momentum":
            self.state = {"momentum_buffer": zeros}
        else:
            self.state = {}

    @torch.no_grad()
    def step(self, grads: list[torch.Tensor]) -> None:
        """Update every parameter in place with its gradient (same order as `params`)."""
        self.t += 1
        b1, b2 = self.betas
        for i, (p, g) in enumerate(zip(self.params, grads)):
            if self.kind == "adam":
                m, v = self.state["exp_avg"][i], self.state["exp_avg_sq"][i]
                m.lerp_(g, 1 - b1)  # m = b1 m + (1 - b1) g
                v.mul_(b2).addcmul_(g, g, value=1 - b2)  # v = b2 v + (1 - b2) g^2
                denom = v.sqrt().div_(math.sqrt(1 - b2**self.t)).add_(self.eps)  # one temporary
                p.addcdiv_(m, denom, value=-self.lr / (1 - b1**self.t))
            elif self.kind == "sgd_momentum":
                buf = self.state["momentum_buffer"][i]
                buf.mul_(self.momentum).add_(g)
                p.add_(buf, alpha=-self.lr)
            else:
                p.add_(g, alpha=-self.lr)

    def tensors(self) -> list[torch.Tensor]:
        """Every state tensor (m and v, or the momentum buffers)."""
        return [t for ts in self.state.values() for t in ts]


def _free(t: torch.Tensor) -> None:
    t.untyped_storage().resize_(0)  # the tensor object (and every view of it) stays; its bytes go


def _allocate(t: torch.Tensor) -> None:
    t.untyped_storage().resize_(t.numel() * t.element_size())


def _check_arguments(stage: int, recipe: str, bucket_bytes) -> None:
    """ZeroEngine's arguments, checked before anything is allocated: the stage, the recipe, the bucket size (bytes)."""
    if stage not in (0, 1, 2, 3):
        raise ValueError(f"ZeRO stage 应是 0, 1, 2 或 3, 得到 {stage!r}")
    if recipe not in RECIPES:
        raise ValueError(f"未知的 recipe {recipe!r}; known: {', '.join(RECIPES)}")
    if bucket_bytes is not None and (not isinstance(bucket_bytes, int) or isinstance(bucket_bytes, bool)
                                     or bucket_bytes < 1):
        raise ValueError(f"bucket_bytes 应是正整数或 None, 得到 {bucket_bytes!r}")


class ZeroEngine:
    """Train `model` with ZeRO stage `stage` (0-3) under `recipe` (a key of RECIPES) on `group`.

    `step(loss_fn)` runs one training step: `loss_fn()` must run the model's forward pass and return the
    loss. `held()` names the tensors held between steps, by part; `full_parameters()` gathers the
    parameters (a collective: every rank must call it).
    """

    def __init__(self, model: torch.nn.Module, stage: int, recipe: str = "fp32_adam", lr: float = 1e-3,
                 group: dist.ProcessGroup | None = None, reduce_dtype: torch.dtype | None = None,
                 bucket_bytes: int | None = None):
        _check_arguments(stage, recipe, bucket_bytes)
        self.stage, self.recipe, self.group = stage, recipe, group
        self.rank, self.world = dist.get_rank(group), dist.get_world_size(group)
        dtype, optimizer, mixed = RECIPES[recipe]
        self.reduce_dtype = dtype if reduce_dtype is None else reduce_dtype
        if self.reduce_dtype not in (dtype, torch.float32):
            raise ValueError(f"reduce_dtype 应是模型的 dtype ({dtype}) 或 torch.float32, 得到 {reduce_dtype!r}")
        self._flatten_parameters(model, dtype)
        self._gradient_buffers()
        self._optimizer_state(mixed, optimizer, lr)
        self._gradient_buckets(bucket_bytes)
        self._pending: dict[int, dict] = {}
        self._reduced: torch.Tensor | None = None
        self.on_phase = None  # called with each phase's name as a step enters it (a memory watch listens)

    def _flatten_parameters(self, model: torch.nn.Module, dtype: torch.dtype) -> None:
        """The model in `dtype`, its parameters views of one flat buffer (padded to a multiple of the world size
        from stage 1 on), and this rank's shard of it (elements lo to lo + shard): a view, or at stage 3 a copy, the
        only one held between steps (the flat buffer's bytes are freed)."""
        stage = self.stage
        self.model = model.to(dtype)
        self.params = list(dict.fromkeys(model.parameters()))  # a tied weight once
        self.n_params = sum(p.numel() for p in self.params)
        n = self.n_params
        self.shard = n if stage == 0 else math.ceil(n / self.world)  # elements this rank updates
        total = n if stage == 0 else self.shard * self.world
        self.lo = 0 if stage == 0 else self.rank * self.shard

        # one flat buffer; the parameters become views of it (their own version counters stay untouched)
        self.flat_params = torch.zeros(total, dtype=dtype, device=self.params[0].device)
        offset = 0
        for p in self.params:
            self.flat_params[offset:offset + p.numel()].copy_(p.detach().reshape(-1))
            p.data = self.flat_params[offset:offset + p.numel()].view_as(p)
            offset += p.numel()
        own = self.flat_params[self.lo:self.lo + self.shard]
        if stage == 3:
            self.param_shard = own.clone()  # the only copy held between steps
            _free(self.flat_params)
        else:
            self.param_shard = own  # a view: no extra bytes

    def _gradient_buffers(self) -> None:
        """Where gradients live: stages 0-1 a full flat buffer (each parameter's .grad a view of it), stages 2-3
        only this rank's reduced shard."""
        self.flat_grads = None  # stages 0-1: a full gradient buffer, the .grad of each parameter a view of it
        self.grad_shard = None  # stages 2-3: only this rank's reduced shard
        if self.stage <= 1:
            self.flat_grads = torch.zeros_like(self.flat_params)
            offset = 0
            for p in self.params:
                p.grad = self.flat_grads[offset:offset + p.numel()].view_as(p)
                offset += p.numel()
        else:
            self.grad_shard = torch.zeros_like(self.param_shard)

    def _optimizer_state(self, mixed: bool, optimizer: str, lr: float) -> None:
        """The optimizer over this rank's shard: in place, or through an fp32 master copy (4 bytes per parameter)
        when the recipe is mixed precision."""
        # the optimizer updates this rank's shard: in place, or through an fp32 master copy (mixed precision)
        self.mixed = mixed
        self.master = self.param_shard.float() if mixed else self.param_shard  # a copy (4 bytes/param) or an alias
        self.optimizer = Optimizer([self.master], optimizer, lr=lr)

    def _gradient_buckets(self, bucket_bytes: int | None) -> None:
        """Stages 2-3: gradient buckets of at most `bucket_bytes` bytes (None: one bucket, the whole buffer),
        contiguous ranges of the flat buffer in backward order, each reduced by a hook once its gradients are in."""
        # stages 2-3: gradient buckets, contiguous ranges of the flat buffer in backward order, filled by hooks
        self.buckets: list[tuple[int, int, list[torch.Tensor]]] = []
        if self.stage >= 2:
            offsets, offset = {}, 0
            for p in self.params:
                offsets[p] = offset
                offset += p.numel()
            if bucket_bytes is None:  # one bucket: the whole padded buffer, one reduce-scatter (the paper)
                self.buckets = [(0, self.flat_params.numel(), list(self.params))]
            else:
                limit = max(1, bucket_bytes // torch.empty(0, dtype=self.reduce_dtype).element_size())
                current: list[torch.Tensor] = []
                for p in reversed(self.params):  # backward produces the last layers' gradients first
                    if current and sum(q.numel() for q in current) + p.numel() > limit:
                        self.buckets.append(self._bucket_range(current, offsets))
                        current = []
                    current.append(p)
                if current:
                    self.buckets.append(self._bucket_range(current, offsets))
            self._bucket_of = {p: i for i, (_, _, ps) in enumerate(self.buckets) for p in ps}
            self._offsets = offsets
            for p in self.params:
                p.register_post_accumulate_grad_hook(self._grad_ready)

    PHASES = ("forward and backward", "gradient reduction", "optimizer step")

    def _mark(self, phase: str) -> None:
        if self.on_phase is not None:
            self.on_phase(phase)

    def _bucket_range(self, params: list[torch.Tensor], offsets: dict) -> tuple[int, int, list[torch.Tensor]]:
        lo = min(offsets[p] for p in params)
        hi = max(offsets[p] + p.numel() for p in params)
        return lo, hi, params

    # --- the collectives, each on the flat buffers ---------------------------------------------------
    def _gather_params(self) -> None:
        if self.stage == 3:
            _allocate(self.flat_params)
        all_gather_flat(self.flat_params, self.param_shard.clone() if self.stage < 3 else self.param_shard,
                               group=self.group)

    def _full_gradient(self) -> torch.Tensor:
        """Stages 0-1: the full gradient buffer, each parameter's .grad a view of it."""
        # autograd accumulates into an existing .grad in place; should it ever hand back a new tensor, copy it
        # into the flat buffer and make the parameter's .grad a view of the buffer again
        offset = 0
        base = self.flat_grads.untyped_storage().data_ptr()
        for p in self.params:
            view = self.flat_grads[offset:offset + p.numel()].view_as(p)
            if p.grad is None or p.grad.untyped_storage().data_ptr() != base:
                if p.grad is not None:
                    view.copy_(p.grad)
                p.grad = view
            offset += p.numel()
        return self.flat_grads

    # --- stages 2-3: buckets filled during backward -----------------------------------------------------
    def _grad_ready(self, p: torch.Tensor) -> None:
        """A parameter's gradient is complete: into its bucket (reduce dtype), then freed; a full bucket is reduced."""
        i = self._bucket_of[p]
        lo, hi, members = self.buckets[i]
        entry = self._pending.get(i)
        if entry is None:
            entry = self._pending[i] = {"buffer": torch.zeros(hi - lo, dtype=self.reduce_dtype,
                                                              device=self.flat_params.device), "seen": 0}
        start = self._offsets[p] - lo
        entry["buffer"][start:start + p.numel()].copy_(p.grad.reshape(-1))
        p.grad = None  # the full gradient of this parameter is not kept
        entry["seen"] += 1
        if entry["seen"] == len(members):
            self._reduce_bucket(i)

    def _reduce_bucket(self, i: int) -> None:
        lo, hi, _ = self.buckets[i]
        buffer = self._pending.pop(i)["buffer"]
        s = self.shard
        target = self._reduced  # this rank's reduced shard, in the reduce dtype (a view of grad_shard if the same)
        if lo == 0 and hi == s * self.world:  # the whole padded buffer: one reduce-scatter
            reduce_scatter_flat(target, buffer, group=self.group)
            return
        for r in range(self.world):  # each rank's part of this bucket, reduced to that rank
            a, b = max(lo, r * s), min(hi, (r + 1) * s)
            if a >= b:
                continue
            piece = buffer[a - lo:b - lo]
            dist.reduce(piece, dst=dist.get_global_rank(self.group, r) if self.group is not None else r,
                        group=self.group)
            if r == self.rank:
                target[a - r * s:b - r * s].copy_(piece)

    def step(self, loss_fn) -> float:
        """One training step; returns the loss (a float)."""
        self._mark("forward and backward")  # stages 2-3 reduce their buckets in here
        if self.flat_grads is not None:
            self.flat_grads.zero_()
        if self.stage >= 2:  # where the buckets put this rank's reduced slice: the held shard, or an fp32 temporary
            self.grad_shard.zero_()
            self._reduced = self.grad_shard if self.reduce_dtype == self.grad_shard.dtype else \
                torch.zeros(self.shard, dtype=self.reduce_dtype, device=self.grad_shard.device)
        if self.stage == 3:
            self._gather_params()  # all-gather #1: the parameters for the forward pass
        loss = loss_fn()
        if self.stage == 3:
            # FSDP frees a unit's full parameters after its forward and gathers them again for its backward:
            # with the whole model as one unit the two happen back to back
            _free(self.flat_params)
            self._gather_params()  # all-gather #2: the parameters for the backward pass
        loss.backward()  # stages 2-3: the hooks reduce the buckets as their gradients complete
        if self.stage == 3:
            _free(self.flat_params)

        self._mark("gradient reduction")
        if self.stage == 0:
            grads = self._full_gradient()
            reduced = grads if self.reduce_dtype == grads.dtype else grads.to(self.reduce_dtype)  # fp32: a copy
            dist.all_reduce(reduced, group=self.group)
        elif self.stage == 1:
            grads = self._full_gradient()
            wide = grads if self.reduce_dtype == grads.dtype else grads.to(self.reduce_dtype)
            reduced = torch.empty(self.shard, dtype=self.reduce_dtype, device=grads.device)
            reduce_scatter_flat(reduced, wide, group=self.group)
            del wide
        else:
            for i in sorted(self._pending):  # a bucket some of whose parameters got no gradient
                self._reduce_bucket(i)
            reduced = self._reduced
        reduced.div_(self.world)  # the mean over ranks, as DDP takes it
        held = self.flat_grads[self.lo:self.lo + self.shard] if self.stage <= 1 else self.grad_shard
        if reduced.data_ptr() != held.data_ptr():
            held.copy_(reduced)  # the recipe's gradient dtype holds the mean between steps (rounded once)

        # the optimizer reads the mean in fp32 where it has it (mixed precision), else the held gradient
        self._mark("optimizer step")
        update = reduced.float() if self.mixed else held
        self.optimizer.step([update])
        del update, reduced
        self._reduced = None
        if self.mixed:
            with torch.no_grad():
                self.param_shard.copy_(self.master)  # round the updated master to the model dtype
        if self.stage in (1, 2):
            self._gather_params()  # every rank needs every updated parameter for the next forward
        return float(loss.detach())

    # --- what the rank holds ----------------------------------------------------------------------------
    def held(self) -> dict[str, list[torch.Tensor]]:
        """The tensors held between steps by part: params, grads, optimizer (the fp32 master copy counts here)."""
        return {
            "params": [self.flat_params, self.param_shard],
            "grads": [t for t in (self.flat_grads, self.grad_shard) if t is not None],
            "optimizer": ([self.master] if self.mixed else []) + self.optimizer.tensors(),
            "step_counters": [],  # a Python int here; torch.optim keeps a 4-byte tensor per parameter tensor
        }

    def full_parameters(self) -> torch.Tensor:
        """All N parameters, gathered (a collective: every rank calls it); fp32, for comparisons."""
        out = torch.empty(self.shard * (1 if self.stage == 0 else self.world), dtype=self.param_shard.dtype,
                          device=self.param_shard.device)
        if self.stage == 0:
            out.copy_(self.param_shard)
        else:
            all_gather_flat(out, self.param_shard.contiguous(), group=self.group)
        return out[:self.n_params].float()
