"""Every XLA HloOpcode and every CHLO op, with what hlotune does with it: the tables behind the
status sections of docs/hlo_ops.md.

``HLO_OPCODES`` is XLA's ``HLO_OPCODE_LIST`` (xla/hlo/ir/hlo_opcode.h); ``CHLO_OPS`` the ops of
StableHLO's CHLO dialect (stablehlo/dialect/ChloOps.td). An opcode is *lowered* when the lowering
table has a handler for it, *refused* when its handler raises UnsupportedOpError with a reason
(``collective.REFUSED``), and otherwise *not lowered*, with the reason below.
"""

from __future__ import annotations

HLO_OPCODES = (
    "abs", "acos", "acosh", "add", "add-dependency", "after-all", "all-gather", "all-gather-done",
    "all-gather-start", "all-reduce", "all-reduce-done", "all-reduce-start", "all-to-all", "and",
    "asin", "asinh", "async-done", "async-start", "async-update", "atan", "atan2", "atanh",
    "batch-norm-grad", "batch-norm-inference", "batch-norm-training", "bitcast", "bitcast-convert",
    "broadcast", "call", "cbrt", "ceil", "cholesky", "clamp", "count-leading-zeros",
    "collective-broadcast", "collective-permute", "collective-permute-done",
    "collective-permute-start", "collective-reduce", "compare", "complex", "concatenate",
    "conditional", "constant", "convert", "convolution", "copy", "copy-done", "copy-start", "cosine",
    "cosh", "custom-call", "divide", "domain", "dot", "dynamic-reshape", "dynamic-slice",
    "dynamic-update-slice", "erf", "exponential", "exponential-minus-one", "fft", "floor", "fusion",
    "gather", "get-dimension-size", "get-tuple-element", "imag", "infeed", "iota", "is-finite", "log",
    "log-plus-one", "logistic", "map", "maximum", "minimum", "mulhi", "multiply", "negate", "not",
    "opt-barrier", "or", "outfeed", "pad", "parameter", "partition-id", "popcnt", "power",
    "ragged-all-to-all", "ragged-dot", "real", "recv", "recv-done", "reduce", "reduce-precision",
    "reduce-scatter", "reduce-window", "remainder", "replica-id", "reshape", "reverse", "rng",
    "rng-bit-generator", "rng-get-and-update-state", "round-nearest-afz", "round-nearest-even",
    "rsqrt", "scaled-dot", "scan", "scatter", "select", "select-and-scatter", "send", "send-done",
    "set-dimension-size", "shift-left", "shift-right-arithmetic", "shift-right-logical", "shuffle",
    "sign", "sine", "sinh", "slice", "sort", "sqrt", "stochastic-convert", "subtract", "tan", "tanh",
    "topk", "transpose", "triangular-solve", "tuple", "while", "xor",
)

#: why an HloOpcode without a handler is not lowered
NOT_LOWERED = {
    "parameter": "lowered as the computation's inputs (no handler needed)",
    "async-start": "asynchronous wrappers appear only in scheduled, optimized HLO; load the HLO "
                   "JAX prints before XLA's scheduling passes",
    "async-update": "asynchronous wrappers appear only in scheduled, optimized HLO",
    "async-done": "asynchronous wrappers appear only in scheduled, optimized HLO",
    "ragged-all-to-all": "not lowered: ragged exchanges between devices",
    "scaled-dot": "not lowered: block-scaled dot of microscaling types",
    "scan": "not lowered in HLO text (XLA's JAX releases print its expansion); StableHLO's "
            "chlo.scan is lowered",
    "set-dimension-size": "not lowered: dynamic (bounded) dimensions in HLO text",
    "shuffle": "not lowered",
}

CHLO_OPS = (
    "_asin_acos_kernel", "acos", "acosh", "asin", "asinh", "atan", "atanh", "bessel_i1e",
    "broadcast_add", "broadcast_and", "broadcast_atan2", "broadcast_compare", "broadcast_complex",
    "broadcast_divide", "broadcast_maximum", "broadcast_minimum", "broadcast_multiply",
    "broadcast_next_after", "broadcast_or", "broadcast_polygamma", "broadcast_power",
    "broadcast_remainder", "broadcast_select", "broadcast_shift_left",
    "broadcast_shift_right_arithmetic", "broadcast_shift_right_logical", "broadcast_subtract",
    "broadcast_xor", "broadcast_zeta", "conj", "constant", "constant_like", "cosh", "digamma", "erf",
    "erf_inv", "erfc", "is_inf", "is_neg_inf", "is_pos_inf", "lgamma", "mulhi", "next_after",
    "polygamma", "ragged_dot", "scan", "sinh", "square", "tan", "top_k", "zeta",
)

#: why a CHLO op is not lowered
CHLO_NOT_LOWERED = {
    "_asin_acos_kernel": "internal to the complex asin/acos decompositions; never printed by JAX",
}


def hlo_status(op: str) -> str:
    """'lowered', 'refused: why' or 'not lowered: why' for an HloOpcode."""
    from .handlers.collective import REFUSED
    from .lower import HANDLERS
    if op in REFUSED:
        return f"refused: {REFUSED[op]}"
    if op in HANDLERS:
        return "lowered"
    return NOT_LOWERED.get(op, "not lowered")


def chlo_status(op: str) -> str:
    from .stablehlo_convert import SUPPORTED
    if f"chlo.{op}" in SUPPORTED:
        return "lowered"
    return f"not lowered: {CHLO_NOT_LOWERED.get(op, 'no decomposition yet')}"


def status_markdown() -> list[str]:
    """The status sections of docs/hlo_ops.md."""
    lines = ["", "## Every HloOpcode", "",
             ("XLA's opcode list (`xla/hlo/ir/hlo_opcode.h`) and what hlotune does with each "
              "(`frontend/opcodes.py`)."), "", "| HloOpcode | status |", "|---|---|"]
    lines += [f"| `{op}` | {hlo_status(op)} |" for op in HLO_OPCODES]
    lines += ["", "## Every CHLO op", "",
              ("StableHLO's CHLO dialect (`stablehlo/dialect/ChloOps.td`): JAX's StableHLO holds "
               "these where XLA has no opcode; hlotune decomposes them as XLA's CHLO legalization "
               "does (`frontend/handlers/chlo_math.py`)."), "", "| CHLO op | status |", "|---|---|"]
    lines += [f"| `chlo.{op}` | {chlo_status(op)} |" for op in CHLO_OPS]
    return lines


__all__ = ["CHLO_OPS", "HLO_OPCODES", "chlo_status", "hlo_status", "status_markdown"]
