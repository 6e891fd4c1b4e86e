"""The opcode status tables (frontend/opcodes.py) behind docs/hlo_ops.md: every XLA HloOpcode
and CHLO op has a status; an opcode is lowered exactly when the lowering table has it; what is
not lowered says why."""

from __future__ import annotations

from hlotune.frontend.handlers.collective import REFUSED
from hlotune.frontend.lower import HANDLERS
from hlotune.frontend.opcodes import CHLO_OPS, HLO_OPCODES, NOT_LOWERED, chlo_status, hlo_status


def test_every_hlo_opcode_has_a_status_with_a_reason():
    assert len(set(HLO_OPCODES)) == len(HLO_OPCODES) == 136
    for op in HLO_OPCODES:
        status = hlo_status(op)
        assert status == "lowered" or status.startswith("refused: ") or op in NOT_LOWERED, op
        assert (status == "lowered") == (op in HANDLERS and op not in REFUSED), op
    lowered = [op for op in HLO_OPCODES if hlo_status(op) == "lowered"]
    assert len(lowered) >= 121


def test_every_chlo_op_jax_emits_is_lowered():
    assert len(set(CHLO_OPS)) == len(CHLO_OPS)
    missing = [op for op in CHLO_OPS if chlo_status(op) != "lowered"]
    assert missing == ["_asin_acos_kernel"]
