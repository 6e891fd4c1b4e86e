"""fft (frontend/handlers/fft.py): FFT, IFFT, RFFT and IRFFT over 1-3 trailing dims, batched,
single and double precision, odd and even lengths, against numpy's FFT; inconsistent shapes and
types refused; the StableHLO form."""

from __future__ import annotations

import numpy as np
import pytest
from hlotune.dsl.errors import HloParseError
from hlotune.frontend.lower import lower_module
from hlotune.frontend.parser import parse_hlo
from hlotune.frontend.stablehlo import parse_stablehlo
from hlotune.dsl.reference import evaluate

import hlotune

R = np.random.default_rng(9)
_C = {"f32": "c64", "f64": "c128"}
_NP = {"f32": np.float32, "f64": np.float64, "c64": np.complex64, "c128": np.complex128}


def module(kind, in_ty, in_shape, out_ty, out_shape, lengths):
    s = lambda t, sh: f"{t}[{','.join(map(str, sh))}]"
    return (f"HloModule f\nENTRY e {{\n  x = {s(in_ty, in_shape)} parameter(0)\n"
            f"  ROOT y = {s(out_ty, out_shape)} fft(x), fft_type={kind}, "
            f"fft_length={{{','.join(map(str, lengths))}}}\n}}\n")


CASES = [(kind, real, batch, lengths) for kind in ("FFT", "IFFT", "RFFT", "IRFFT") for real in ("f32", "f64")
         for batch, lengths in [((), (8,)), ((3,), (7,)), ((2,), (4, 6)), ((), (3, 4, 5))]]


@pytest.mark.parametrize("kind, real, batch, lengths", CASES)
def test_fft_matches_numpy(kind, real, batch, lengths):
    cty = _C[real]
    half = tuple(lengths[:-1]) + (lengths[-1] // 2 + 1,)
    in_shape = batch + (half if kind == "IRFFT" else tuple(lengths))
    out_shape = batch + (half if kind == "RFFT" else tuple(lengths))
    in_ty = real if kind == "RFFT" else cty
    out_ty = real if kind == "IRFFT" else cty
    x = R.standard_normal(in_shape)
    if in_ty == cty:
        x = x + 1j * R.standard_normal(in_shape)
    x = x.astype(_NP[in_ty])
    axes = tuple(range(len(batch), len(in_shape)))
    want = {"FFT": lambda a: np.fft.fftn(a, axes=axes), "IFFT": lambda a: np.fft.ifftn(a, axes=axes),
            "RFFT": lambda a: np.fft.rfftn(a, axes=axes),
            "IRFFT": lambda a: np.fft.irfftn(a, s=lengths, axes=axes)}[kind](x.astype(np.complex128 if in_ty == cty else np.float64))
    text = module(kind, in_ty, in_shape, out_ty, out_shape, lengths)
    tol = 1e-5 if real == "f32" else 1e-12
    for got in (evaluate(lower_module(parse_hlo(text)).outputs, [x])[0],
                hlotune.compile(hlotune.load_hlo(text), target="cpu")(x)):
        assert got.dtype == _NP[out_ty] and got.shape == out_shape
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol * np.prod(lengths))


@pytest.mark.parametrize("kind, in_ty, in_shape, out_ty, out_shape, lengths, match", [
    ("RFFT", "c64", (8,), "c64", (5,), (8,), "RFFT of c64"),
    ("FFT", "c64", (8,), "c64", (8,), (6,), "fft_length \\[6\\]"),
    ("FFT", "c64", (2, 2, 2, 2), "c64", (2, 2, 2, 2), (2, 2, 2, 2), "1 to 3 trailing"),
    ("DCT", "c64", (8,), "c64", (8,), (8,), "DCT of c64"),
])
def test_bad_ffts_are_refused(kind, in_ty, in_shape, out_ty, out_shape, lengths, match):
    """The verifier refuses them at the instruction (lowering checks the same, unverified)."""
    text = module(kind, in_ty, in_shape, out_ty, out_shape, lengths)
    with pytest.raises(HloParseError, match=match) as e:
        lower_module(parse_hlo(text, verify=False))
    assert e.value.line == 4


def test_stablehlo_fft_forms():
    text = """func.func @main(%x: tensor<3x8xf32>) -> (tensor<3x5xcomplex<f32>>, tensor<3x8xf32>) {
      %0 = stablehlo.fft %x, type = RFFT, length = [8] : (tensor<3x8xf32>) -> tensor<3x5xcomplex<f32>>
      %1 = "stablehlo.fft"(%0) {fft_type = #stablehlo<fft_type IRFFT>, fft_length = array<i64: 8>} : (tensor<3x5xcomplex<f32>>) -> tensor<3x8xf32>
      return %0, %1 : tensor<3x5xcomplex<f32>>, tensor<3x8xf32>
    }"""
    x = R.standard_normal((3, 8)).astype(np.float32)
    spec, back = evaluate(lower_module(parse_stablehlo(text)).outputs, [x])
    np.testing.assert_allclose(spec, np.fft.rfft(x), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(back, x, rtol=1e-5, atol=1e-5)
