"""What the conformance table (lecture2.planning.published) says about any plan, kept as data so that a plan does not
re-plan thirty published runs: the spread of the planner's error over them, and the MFU each published run reached.
tests/test_conformance.py recomputes both from the table and fails when they drift; `python -m tools.bench_planner`
prints them anew.

BAND       (lowest, median, highest) ratio of planned to published throughput over the table's rows: a plan whose
           MFU is x ran, in the published runs, at x / highest to x / lowest
REACHED    per published run: (name, GPU architecture, parameters, MFU it reached counted as the planner counts MFU:
           6 x matmul parameters + causal attention), i.e. its reported figure over the ratio of its plan
"""
from __future__ import annotations

__all__ = ["BAND", "REACHED", "TIE"]

BAND = (0.8349, 1.0804, 1.3794)
# Two layouts of one run whose steps differ by less than this are a tie: the table's median error, the planner's
# precision on a run it has not seen
TIE = 0.085
REACHED: tuple[tuple[str, str, float, float], ...] = (
    ('Megatron-LM 1.7B on 32 A100', 'ampere', 1648000000.0, 0.314),
    ('Megatron-LM 3.6B on 64 A100', 'ampere', 3556000000.0, 0.319),
    ('Megatron-LM 7.5B on 128 A100', 'ampere', 7459000000.0, 0.331),
    ('Megatron-LM 18.4B on 256 A100', 'ampere', 18440000000.0, 0.317),
    ('Megatron-LM 39.1B on 512 A100', 'ampere', 39080000000.0, 0.326),
    ('Megatron-LM 76.1B on 1,024 A100', 'ampere', 76030000000.0, 0.332),
    ('Megatron-LM 145.6B on 1,536 A100', 'ampere', 145600000000.0, 0.351),
    ('Megatron-LM 310.1B on 1,920 A100', 'ampere', 310100000000.0, 0.369),
    ('Megatron-LM 529.6B on 2,520 A100', 'ampere', 529600000000.0, 0.389),
    ('Megatron-LM 1008B on 3,072 A100', 'ampere', 1008000000000.0, 0.389),
    ('Megatron-LM 22B, SP + selective, 8 A100', 'ampere', 22060000000.0, 0.404),
    ('Megatron-LM 175B, SP + selective, 64 A100', 'ampere', 174600000000.0, 0.507),
    ('Megatron-LM 530B, SP + selective, 280 A100', 'ampere', 529600000000.0, 0.555),
    ('Megatron-LM 1T, SP + selective, 512 A100', 'ampere', 1008000000000.0, 0.559),
    ('MT-NLG 530B on 2,240 A100', 'ampere', 529600000000.0, 0.301),
    ('MT-NLG 530B on 2,800 A100', 'ampere', 529600000000.0, 0.289),
    ('MT-NLG 530B on 3,360 A100', 'ampere', 529600000000.0, 0.27),
    ('BLOOM 176B on 384 A100', 'ampere', 176200000000.0, 0.373),
    ('MPT-70B, 2,048 tokens, 64 A100', 'ampere', 64840000000.0, 0.523),
    ('MPT-13B, 2,048 tokens, 8 A100', 'ampere', 12840000000.0, 0.577),
    ('MPT-7B, 65,536 tokens, 8 A100', 'ampere', 6649000000.0, 0.297),
    ('MPT-1B, 2,048 tokens, 8 A100', 'ampere', 1311000000.0, 0.557),
    ('MPT-70B, 2,048 tokens, 512 H100', 'hopper', 64840000000.0, 0.404),
    ('MPT-13B, 2,048 tokens, 128 H100', 'hopper', 12840000000.0, 0.408),
    ('MPT-7B, 2,048 tokens, 128 H100', 'hopper', 6649000000.0, 0.439),
    ('MPT-1B, 2,048 tokens, 128 H100', 'hopper', 1311000000.0, 0.378),
    ('Llama 3 405B, 8K sequences, 16,384 H100', 'hopper', 405900000000.0, 0.392),
    ('Llama 3 405B, 8K sequences, 8,192 H100', 'hopper', 405900000000.0, 0.411),
    ('Llama 3 405B, 131K sequences, CP 16, 16,384 H100', 'hopper', 405900000000.0, 0.271),
    ('Nemotron-4 340B on 1,536 H100', 'hopper', 341000000000.0, 0.415),
    ('Nemotron-4 340B on 3,072 H100', 'hopper', 341000000000.0, 0.414),
    ('Nemotron-4 340B on 6,144 H100', 'hopper', 341000000000.0, 0.402),
    ('DeepSeek-V3 on 2,048 H800', 'hopper', 682600000000.0, 0.407),
)
