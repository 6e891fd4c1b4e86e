"""Random numbers (frontend/handlers/random.py, prng.py): ``rng-bit-generator`` bit for bit as
XLA (Random123's known answers for Threefry-2x32-20 and Philox-4x32-10, and XLA's own outputs
recorded from jax.jit for each algorithm, shape split and width), counters that continue across
calls (hypothesis), ``rng``'s distributions, and the StableHLO forms."""

from __future__ import annotations

import numpy as np
import pytest
from hlotune.dsl.errors import UnsupportedOpError
from hlotune.frontend.handlers.prng import philox4x32, threefry2x32
from hlotune.frontend.handlers.random import generate
from hlotune.frontend.lower import lower_module
from hlotune.frontend.parser import parse_hlo
from hlotune.frontend.stablehlo import parse_stablehlo
from hlotune.dsl.reference import evaluate
from hypothesis import given, settings
from hypothesis import strategies as st

import hlotune

U32 = np.uint32


@pytest.mark.parametrize("counter, key, want", [
    ((0, 0), (0, 0), (0x6B200159, 0x99BA4EFE)),
    ((0xFFFFFFFF, 0xFFFFFFFF), (0xFFFFFFFF, 0xFFFFFFFF), (0x1CB996FC, 0xBB002BE7)),
    ((0x243F6A88, 0x85A308D3), (0x13198A2E, 0x03707344), (0xC4923A9C, 0x483DF7A0)),
])
def test_threefry_known_answers(counter, key, want):
    out = threefry2x32(np.array([counter[0]], U32), np.array([counter[1]], U32), *key)
    assert tuple(int(o[0]) for o in out) == want


@pytest.mark.parametrize("counter, key, want", [
    ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((0xFFFFFFFF,) * 4, (0xFFFFFFFF, 0xFFFFFFFF), (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
     (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1)),
])
def test_philox_known_answers(counter, key, want):
    out = philox4x32([np.array([c], U32) for c in counter], *key)
    assert tuple(int(o[0]) for o in out) == want


#: XLA:CPU's rng-bit-generator for the state u32[4] {0x12345678, 0x9abcdef0, 0x0badf00d, 7}
#: (as u64[2]: little-endian pairs), recorded from jax.lax.rng_bit_generator under jax.jit:
#: algorithm, shape, type, the new state's u32 words, the bits
XLA_GOLDEN = [
    ("rng_three_fry", (3, 5), "u32", [305419896, 2596069104, 195948566, 7],
     [356457922, 1141037659, 2234135502, 3276521994, 851751817, 2761285118, 4167677286, 3746300011,
      1108043655, 3187895199, 1985390121, 3279492601, 3723653425, 2487665909, 65131894]),
    ("rng_three_fry", (7,), "u64", [305419896, 2596069104, 195948564, 7],
     [4900719429265857986, 14072554811088843726, 12507723740727260041, 17900037646413323774,
      4759011264511606891, 2889477240557628319, 14085313470754367017]),
    ("rng_three_fry", (2, 3), "u8", [305419896, 2596069104, 195948560, 7], [194, 206, 137, 91, 10, 121]),
    ("rng_philox", (3, 5), "u32", [305419896, 2596069104, 195948561, 7],
     [3069814847, 1407115419, 2348356862, 1581664808, 2442433228, 3630435713, 617264166, 2651585872,
      268765852, 1376949750, 4171280785, 3240960925, 1419041483, 1825082746, 2299625145]),
    ("rng_philox", (7,), "u64", [305419896, 2596069104, 195948561, 7],
     [6043514709372151871, 6793198625942476030, 15592602660007875276, 11388474603392906278,
      5913954144754141852, 13919821184660189585, 7838670707982916299]),
    ("rng_default", (2, 3), "u8", [305419896, 2596069104, 195948559, 7], [63, 155, 254, 40, 204, 129]),
]
STATE = np.array([0x12345678, 0x9ABCDEF0, 0x0BADF00D, 7], U32).view(np.uint64)


def _rbg_module(algorithm: str, shape, ty: str, state_len: int = 2) -> str:
    dims = ",".join(map(str, shape))
    return (f"HloModule rbg\nENTRY e {{\n  s = u64[{state_len}] parameter(0)\n"
            f"  ROOT g = (u64[{state_len}], {ty}[{dims}]) rng-bit-generator(s), algorithm={algorithm}\n}}\n")


@pytest.mark.parametrize("algorithm, shape, ty, state, bits", XLA_GOLDEN)
def test_rng_bit_generator_is_bit_exact_with_xla(algorithm, shape, ty, state, bits):
    text = _rbg_module(algorithm, shape, ty)
    m = hlotune.load_hlo(text)
    got = hlotune.compile(m, target="cpu")(STATE)
    low = lower_module(parse_hlo(text))
    ref = evaluate(low.outputs, [STATE])
    for new_state, out in (got, ref):
        assert new_state.view(U32).tolist() == state
        assert out.shape == shape and out.dtype == np.dtype(f"uint{ty[1:]}")
        assert out.ravel().tolist() == bits


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(["threefry", "philox"]), st.integers(0, 2**64 - 1), st.integers(0, 2**64 - 1),
       st.integers(1, 40), st.integers(1, 40), st.sampled_from([np.uint32, np.uint64]))
def test_counters_continue_across_calls(algorithm, key, counter, n1, n2, dtype):
    """One call for n1 + n2 numbers gives the numbers of two calls for n1 and then n2 where XLA's
    layout makes it so: flat 64-bit outputs (Threefry), whole 128-bit blocks (Philox, with a
    u64[3] state: a u64[2] state keeps only the low word of the counter, as XLA's, so a carry
    out of it is lost between calls)."""
    if algorithm == "philox":
        n1 = 4 * n1 if dtype == np.uint32 else 2 * n1
        state = np.array([key, counter, 7], np.uint64)
    else:
        dtype = np.uint64
        state = np.array([key, counter], np.uint64)
    s1, a = generate(algorithm, state, (n1,), np.dtype(dtype))
    _, b = generate(algorithm, s1, (n2,), np.dtype(dtype))
    _, both = generate(algorithm, state, (n1 + n2,), np.dtype(dtype))
    assert s1[0] == state[0]
    np.testing.assert_array_equal(np.concatenate([a, b]), both)


def test_philox_with_a_128_bit_counter_carries():
    """A u64[3] state holds (key, counter low, counter high); the low word wraps into the high."""
    state = np.array([5, 2**64 - 2, 9], np.uint64)
    new, bits = generate("philox", state, (16,), np.dtype(np.uint32))
    assert new.tolist() == [5, 2, 10]
    _, again = generate("philox", np.array([5, 2**64 - 2, 9], np.uint64), (16,), np.dtype(np.uint32))
    np.testing.assert_array_equal(bits, again)
    _, later = generate("philox", np.array([5, 0, 10], np.uint64), (8,), np.dtype(np.uint32))
    np.testing.assert_array_equal(bits[8:], later)


def test_stablehlo_rng_bit_generator_forms():
    pretty = """func.func @main(%s: tensor<2xui64>) -> (tensor<2xui64>, tensor<3x5xui32>) {
      %ns, %v = stablehlo.rng_bit_generator %s, algorithm = THREE_FRY : (tensor<2xui64>) -> (tensor<2xui64>, tensor<3x5xui32>)
      return %ns, %v : tensor<2xui64>, tensor<3x5xui32>
    }"""
    generic = """func.func @main(%s: tensor<2xui64>) -> (tensor<2xui64>, tensor<3x5xui32>) {
      %0:2 = "stablehlo.rng_bit_generator"(%s) {rng_algorithm = #stablehlo<rng_algorithm THREE_FRY>} : (tensor<2xui64>) -> (tensor<2xui64>, tensor<3x5xui32>)
      return %0#0, %0#1 : tensor<2xui64>, tensor<3x5xui32>
    }"""
    for text in (pretty, generic):
        low = lower_module(parse_stablehlo(text))
        new, bits = evaluate(low.outputs, [STATE])
        assert new.view(U32).tolist() == XLA_GOLDEN[0][3]
        assert bits.ravel().tolist() == XLA_GOLDEN[0][4]


def _rng_module(dist: str, ty: str, a, b, shape=(4000,)) -> str:
    dims = ",".join(map(str, shape))
    return (f"HloModule r\nENTRY e {{\n  a = {ty}[] constant({a})\n  b = {ty}[] constant({b})\n"
            f"  ROOT r = {ty}[{dims}] rng(a, b), distribution={dist}\n}}\n")


@pytest.mark.parametrize("ty", ["f32", "f64", "f16", "bf16"])
def test_rng_uniform_floats_lie_in_range_and_runs_continue(ty):
    f = hlotune.compile(hlotune.load_hlo(_rng_module("rng_uniform", ty, -2, 3)), target="cpu")
    a, b = np.asarray(f()).astype(np.float64), np.asarray(f()).astype(np.float64)
    for x in (a, b):
        assert x.min() >= -2 and x.max() <= 3
        assert abs(x.mean() - 0.5) < 0.15 and abs(x.std() - 5 / np.sqrt(12)) < 0.1
    assert not np.array_equal(a, b)   # stateful, as XLA's rng: a second run continues


@pytest.mark.parametrize("ty", ["s32", "u32", "s64"])
def test_rng_uniform_ints(ty):
    low = lower_module(parse_hlo(_rng_module("rng_uniform", ty, 3, 10)))
    (x,) = evaluate(low.outputs, [])
    assert x.min() == 3 and x.max() == 9
    assert np.all(np.bincount(x - 3) > 450)


def test_rng_normal_has_the_mean_and_deviation_asked():
    low = lower_module(parse_hlo(_rng_module("rng_normal", "f32", 1.5, 2, (60, 71))))
    (x,) = evaluate(low.outputs, [])
    assert x.shape == (60, 71)
    assert abs(x.mean() - 1.5) < 0.1 and abs(x.std() - 2) < 0.1


def test_stablehlo_rng_drops_the_shape_operand():
    text = """func.func @main() -> tensor<3x4xf32> {
      %a = stablehlo.constant dense<0.0> : tensor<f32>
      %b = stablehlo.constant dense<1.0> : tensor<f32>
      %s = stablehlo.constant dense<[3, 4]> : tensor<2xi64>
      %r = stablehlo.rng %a, %b, %s, distribution = UNIFORM : (tensor<f32>, tensor<f32>, tensor<2xi64>) -> tensor<3x4xf32>
      return %r : tensor<3x4xf32>
    }"""
    low = lower_module(parse_stablehlo(text))
    (x,) = evaluate(low.outputs, [])
    assert x.shape == (3, 4) and 0 <= x.min() and x.max() < 1


@pytest.mark.parametrize("text, match", [
    (_rbg_module("rng_mersenne", (4,), "u32"), "unknown algorithm"),
    (_rbg_module("rng_philox", (4,), "u32", state_len=1), "u64\\[2\\] or longer"),
    (_rng_module("rng_binomial", "f32", 0, 1), "distribution"),
    (_rng_module("rng_normal", "s32", 0, 1), "rng_normal of int32"),
])
def test_bad_random_ops_are_refused_with_the_op_and_line(text, match):
    with pytest.raises(UnsupportedOpError, match=match) as e:
        lower_module(parse_hlo(text))
    assert e.value.line is not None
