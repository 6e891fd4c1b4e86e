"""Every XLA HloOpcode and every CHLO op, with what hlotune does with it, and the page
docs/hlo_ops.md made of them (``python -m hlotune.frontend.opcodes > docs/hlo_ops.md``).

``HLO_OPCODES`` is XLA's ``HLO_OPCODE_LIST`` (xla/hlo/ir/hlo_opcode.h); ``CHLO_OPS`` the ops of
StableHLO's CHLO dialect (stablehlo/dialect/ChloOps.td). An opcode is *lowered* when the lowering
table has a handler for it, *refused* when its handler raises UnsupportedOpError with a reason
(``collective.REFUSED``), and otherwise *not lowered*, with the reason below.
"""

from __future__ import annotations

from .handlers.collective import REFUSED
from .lower import EXTERN_OPS, HANDLERS
from .stablehlo import SUPPORTED
from .stablehlo_convert import hlo_opcode_table

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
    if op in REFUSED:
        return f"refused: {REFUSED[op]}"
    if op in HANDLERS:
        return "lowered"
    return NOT_LOWERED.get(op, "not lowered")


def chlo_status(op: str) -> str:
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


def supported_ops_markdown() -> str:
    """The page docs/hlo_ops.md: every supported opcode with its handler's summary."""
    lines = ["# Supported HLO opcodes", "",
             "Generated from `frontend/lower.py`'s opcode table (`python -m hlotune.frontend.opcodes`).",
             "Every op lowers to tensor-expression `compute` definitions with XLA's semantics, except",
             f"the extern ops ({', '.join(EXTERN_OPS)}). On the cpu, while loops,",
             "conditionals, scatters, sorts and top_k by key comparators, and triangular solves, LU,",
             "Cholesky, eigh and SVD (float32/float64) compile to C kernels (a loop or branch holding such",
             "ops included); the others run on the host with numpy, their sub-computations through",
             "compiled code.",
             "custom-call runs TopK, JAX's LAPACK kernels and sharding annotations; other targets,",
             "send/recv and collectives over several devices raise `UnsupportedOpError`",
             "naming the op, its line and why. infeed/outfeed are the host's queues (`CompiledModule.infeed`",
             "and `.outfeed`, one value per feed and call; a feed in a loop body is refused).",
             "Every element type lowers: pred, s2 to",
             "s64, u2 to u64, f16, bf16, f32, f64, c64, c128, the f8 types, f6e2m3fn, f6e3m2fn and",
             "f4e2m1fn (`dsl/dtypes.py` says how each is stored and computed).", "",
             "Subnormal floats: XLA:CPU runs its kernels with denormals-are-zero and flush-to-zero, so a",
             "subnormal input counts as zero there (log(1e-40) is -inf, floor(-1e-40) is -0) and a subnormal",
             "result becomes zero; hlotune keeps IEEE gradual underflow. Everywhere else the elementwise",
             "functions give XLA's special values (signed zeros, infinities, NaN, saturation) and finite",
             "results within a few ulps of XLA's (`tests/test_math_edges.py`). Dots in bf16 pairs on",
             "AVX512-BF16 (`vdpbf16ps`, the gemm template's `kgroup`) flush subnormal inputs and results",
             "to zero, as XLA does.", "",
             "| opcode | semantics and attributes |", "|---|---|"]
    for op in sorted(HANDLERS):
        doc = (HANDLERS[op].__doc__ or "").strip().split("\n\n")[0]
        doc = " ".join(x.strip() for x in doc.splitlines())
        lines.append(f"| `{op}` | {doc.replace('|', '/')} |")
    return "\n".join(lines + _stablehlo_section() + status_markdown()) + "\n"


def _stablehlo_section() -> list[str]:
    """The StableHLO ops the front-end maps to the opcodes above (``frontend/stablehlo_convert.py``)."""
    lines = ["", "## StableHLO", "",
             "`hlotune.load_hlo` (and `hlotune run/tune`) also read StableHLO text, as",
             "`jax.jit(f).lower(x).as_text()` prints it (`frontend/stablehlo.py`). Each op becomes the",
             "HLO instruction(s) below, lowered by the table above: an op with several results gives a",
             "tuple and `get-tuple-element`s, and `while`/`case`/`if` regions take the values they use",
             "from outside in their tuple parameter. Any other op raises `UnsupportedOpError` naming it.",
             "", "| StableHLO op | HLO opcode |", "|---|---|"]
    lines += [f"| `{op}` | {hlo} |" for op, hlo in hlo_opcode_table().items()]
    return lines


__all__ = ["CHLO_OPS", "HLO_OPCODES", "chlo_status", "hlo_status", "status_markdown", "supported_ops_markdown"]


if __name__ == "__main__":
    print(supported_ops_markdown(), end="")
