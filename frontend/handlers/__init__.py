"""HLO op handlers, one module per op family; each module exports ``HANDLERS`` mapping an
opcode to ``handler(ctx, instr, operands) -> Tensor | tuple``."""
