import lecture2.exercises.checkpointing  # noqa: F401  (registers the checkpointing.* hints)
from lecture2.checks import HINTS

from . import Planted

NOTEBOOK = "07_checkpointing.ipynb"

_STACK_HEAD = '''
class CheckpointedStack(nn.Module):
    def __init__(self, blocks, segments):
        super().__init__()
        if not 1 <= segments <= len(blocks):
            raise ValueError(segments)
        self.blocks, self.segments = blocks, segments
        n = len(blocks)
        cuts = [round(i * n / segments) for i in range(segments + 1)]
        self.spans = list(zip(cuts[:-1], cuts[1:]))

    def _span(self, z, lo, hi):
        for block in self.blocks[lo:hi]:
            z = block(z)
        return z
'''

MISTAKES = [
    Planted("ex07_checkpointed_stack", "no checkpoint at all", _STACK_HEAD + '''
    def forward(self, x):
        return self._span(x, 0, len(self.blocks))
''', HINTS["checkpointing.no_checkpoint"]),
    Planted("ex07_checkpointed_stack", "a checkpoint for every layer, segments ignored", _STACK_HEAD + '''
    def forward(self, x):
        for block in self.blocks:
            x = checkpoint(block, x, use_reentrant=False)
        return x
''', HINTS["checkpointing.every_layer"]),
    Planted("ex07_checkpointed_stack", "segments taken as the segment length", _STACK_HEAD + '''
    def forward(self, x):
        n, size = len(self.blocks), self.segments
        for lo in range(0, n, size):
            x = checkpoint(self._span, x, lo, min(lo + size, n), use_reentrant=False)
        return x
''', HINTS["checkpointing.segments_as_length"]),
    Planted("ex07_checkpointed_stack", "checkpoint_sequential: the last segment kept", _STACK_HEAD + '''
    def forward(self, x):
        return checkpoint_sequential(nn.Sequential(*self.blocks), self.segments, x, use_reentrant=False)
''', HINTS["checkpointing.last_segment_kept"]),
    Planted("ex07_checkpointed_stack", "use_reentrant=True recomputes a full forward", _STACK_HEAD + '''
    def forward(self, x):
        for lo, hi in self.spans:
            x = checkpoint(self._span, x, lo, hi, use_reentrant=True)
        return x
''', HINTS["checkpointing.reentrant"]),
    Planted("ex07_checkpointed_stack", "the remainder layers dropped", _STACK_HEAD + '''
    def forward(self, x):
        size = len(self.blocks) // self.segments
        for i in range(self.segments):
            x = checkpoint(self._span, x, i * size, (i + 1) * size, use_reentrant=False)
        return x
''', HINTS["checkpointing.outputs_differ"]),
    Planted("ex07_checkpointed_stack", "segment inputs detached", _STACK_HEAD + '''
    def forward(self, x):
        for lo, hi in self.spans:
            x = checkpoint(self._span, x.detach(), lo, hi, use_reentrant=False)
        return x
''', HINTS["checkpointing.grads_differ"]),
    Planted("ex07_checkpointed_stack", "no ValueError for a bad segment count", '''
class CheckpointedStack(nn.Module):
    def __init__(self, blocks, segments):
        super().__init__()
        self.blocks, n = blocks, len(blocks)
        segments = max(1, min(segments, n))
        cuts = [round(i * n / segments) for i in range(segments + 1)]
        self.spans = list(zip(cuts[:-1], cuts[1:]))

    def _span(self, z, lo, hi):
        for block in self.blocks[lo:hi]:
            z = block(z)
        return z

    def forward(self, x):
        for lo, hi in self.spans:
            x = checkpoint(self._span, x, lo, hi, use_reentrant=False)
        return x
''', HINTS["checkpointing.segments_range"]),
    Planted("ex07_checkpoint_memory", "no checkpointing: L layers of activations", '''
def checkpoint_memory(n_layers, segments, layer_input_bytes, layer_activation_bytes):
    return n_layers * layer_activation_bytes

def best_segments(n_layers, layer_input_bytes=1, layer_activation_bytes=1):
    return max(1, round(math.sqrt(n_layers * layer_activation_bytes / layer_input_bytes)))
''', HINTS["checkpointing.memory_no_checkpoint"]),
    Planted("ex07_checkpoint_memory", "the recomputed segment forgotten", '''
def checkpoint_memory(n_layers, segments, layer_input_bytes, layer_activation_bytes):
    return segments * layer_input_bytes

def best_segments(n_layers, layer_input_bytes=1, layer_activation_bytes=1):
    return 1
''', HINTS["checkpointing.memory_no_recompute"]),
    Planted("ex07_checkpoint_memory", "L/s instead of ceil(L/s)", '''
def checkpoint_memory(n_layers, segments, layer_input_bytes, layer_activation_bytes):
    return segments * layer_input_bytes + n_layers / segments * layer_activation_bytes

def best_segments(n_layers, layer_input_bytes=1, layer_activation_bytes=1):
    costs = {s: checkpoint_memory(n_layers, s, layer_input_bytes, layer_activation_bytes) for s in range(1, n_layers + 1)}
    return max(s for s in costs if costs[s] == min(costs.values()))
''', HINTS["checkpointing.memory_ceil"]),
    Planted("ex07_checkpoint_memory", "best_segments = sqrt(L) whatever A/a", '''
def checkpoint_memory(n_layers, segments, layer_input_bytes, layer_activation_bytes):
    return segments * layer_input_bytes + math.ceil(n_layers / segments) * layer_activation_bytes

def best_segments(n_layers, layer_input_bytes=1, layer_activation_bytes=1):
    return round(math.sqrt(n_layers))
''', HINTS["checkpointing.best_sqrt_l"]),
    Planted("ex07_checkpoint_memory", "the continuous optimum, not searched", '''
def checkpoint_memory(n_layers, segments, layer_input_bytes, layer_activation_bytes):
    return segments * layer_input_bytes + math.ceil(n_layers / segments) * layer_activation_bytes

def best_segments(n_layers, layer_input_bytes=1, layer_activation_bytes=1):
    return round(math.sqrt(n_layers * layer_activation_bytes / layer_input_bytes))
''', HINTS["checkpointing.best_search"]),
    Planted("ex07_checkpoint_memory", "a tie goes to fewer segments", '''
def checkpoint_memory(n_layers, segments, layer_input_bytes, layer_activation_bytes):
    return segments * layer_input_bytes + math.ceil(n_layers / segments) * layer_activation_bytes

def best_segments(n_layers, layer_input_bytes=1, layer_activation_bytes=1):
    return min(range(1, n_layers + 1), key=lambda s: checkpoint_memory(n_layers, s, layer_input_bytes, layer_activation_bytes))
''', HINTS["checkpointing.best_tie"]),
]

# usual mistakes the checks name, planted too
MISTAKES += [
    Planted("ex07_checkpointed_stack", "the blocks deep-copied", _STACK_HEAD.replace(
        "self.blocks, self.segments = blocks, segments", "self.blocks, self.segments = copy.deepcopy(blocks), segments")
        .replace("class CheckpointedStack", "import copy\n\nclass CheckpointedStack") + '''
    def forward(self, x):
        for lo, hi in self.spans:
            x = checkpoint(self._span, x, lo, hi, use_reentrant=False)
        return x
''', HINTS["checkpointing.grads_differ"]),
    Planted("ex07_checkpointed_stack", "not an nn.Module", '''
class CheckpointedStack:
    def __init__(self, blocks, segments):
        if not 1 <= segments <= len(blocks):
            raise ValueError(segments)
        self.blocks = blocks

    def __call__(self, x):
        for block in self.blocks:
            x = checkpoint(block, x, use_reentrant=False)
        return x
''', HINTS["checkpointing.not_module"]),
    Planted("ex07_checkpoint_memory", "L // s instead of ceil(L/s)", '''
def checkpoint_memory(n_layers, segments, layer_input_bytes, layer_activation_bytes):
    return segments * layer_input_bytes + n_layers // segments * layer_activation_bytes

def best_segments(n_layers, layer_input_bytes=1, layer_activation_bytes=1):
    costs = {s: checkpoint_memory(n_layers, s, layer_input_bytes, layer_activation_bytes) for s in range(1, n_layers + 1)}
    return max(s for s in costs if costs[s] == min(costs.values()))
''', HINTS["checkpointing.memory_ceil"]),
]
