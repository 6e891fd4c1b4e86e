"""K groups: dot products that one CPU instruction takes several K steps at a time.

``C[i, j] += sum_{g < size} acc(A[i, k + g]) * acc(B[k + g, j])`` for ``size`` consecutive K
steps in one instruction per vector of ``j``: AVX512-BF16's ``vdpbf16ps`` (bf16 pairs summed
into f32) and AVX512-VNNI's ``vpdpbusd`` (four u8 x s8 products summed into int32). The gemm
template offers ``kgroup`` = ``size`` where the target's ISA has the instruction; it packs both
operands with each group's elements side by side, and the renderer's micro-kernel takes each
group in one instruction (runtime/codegen/kgroup_c.py), with an exact portable fallback.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..dsl import dtypes as dt


@dataclass(frozen=True)
class GroupKind:
    """Products of an ``a`` operand (broadcast along the vector lanes) and a ``b`` operand
    (one group per lane) accumulating in ``acc``, ``size`` K steps per instruction, where the
    ISA has ``isa``. ``compensate``: signed ``a`` enters ``vpdpbusd`` (unsigned) as ``a + 128``,
    and ``128 * sum(b)`` is subtracted at the end."""

    name: str
    size: int
    acc: dt.DType
    a: dt.DType
    b: dt.DType
    isa: str
    compensate: bool = False


KINDS = (GroupKind("bf16", 2, dt.float32, dt.bfloat16, dt.bfloat16, "avx512bf16"),
         GroupKind("s8s8", 4, dt.int32, dt.int8, dt.int8, "avx512vnni", compensate=True),
         GroupKind("u8s8", 4, dt.int32, dt.uint8, dt.int8, "avx512vnni"),
         GroupKind("s8u8", 4, dt.int32, dt.int8, dt.uint8, "avx512vnni"))
#: every group size a kind has (the ``kgroup`` knob's domain, with 1: none)
SIZES = (1, *sorted({k.size for k in KINDS}))


def group_kind(acc, a, b) -> GroupKind | None:
    """The kind accumulating ``a x b`` products in ``acc`` (None: no instruction does)."""
    return next((k for k in KINDS if (k.acc, k.a, k.b) == (acc, a, b)), None)


__all__ = ["KINDS", "SIZES", "GroupKind", "group_kind"]
