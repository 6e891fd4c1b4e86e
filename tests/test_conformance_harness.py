"""bench/stablehlo_cases.py, which turns StableHLO's interpreter tests into runnable modules: case
splitting, the rewrite of check ops into results, and the check dialect's comparison rules."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.stablehlo_cases import Check, HarnessError, compare, harness, split_cases
from bench.stablehlo_conformance import parse_literal, run_case

FILE = """// RUN: stablehlo-translate --interpret -split-input-file %s

func.func @add_op_test_si4() {
  // a comment with ( and { that must not unbalance anything
  %0 = stablehlo.constant dense<[7, -8]> : tensor<2xi4>
  %1 = stablehlo.add %0, %0 : tensor<2xi4>
  check.expect_eq_const %1, dense<[-2, 0]> : tensor<2xi4>
  func.return
}

// -----

func.func @two() {
  %0 = stablehlo.constant dense<1.0> : tensor<f32>
  check.expect_almost_eq_const %0,
    dense<1.00001> : tensor<f32>
  func.return
}
func.func @three() {
  %0 = stablehlo.constant dense<[1.0, 2.0]> : tensor<2xf64>
  %1 = stablehlo.multiply %0, %0 : tensor<2xf64>
  check.expect_almost_eq %1, %0, tolerance = 3.0 : tensor<2xf64>
  func.return
}

// -----

module @cross_replica {
  func.func @main() {
    %r:2 = "interpreter.run_parallel"() {programs=[[@f], [@f]]} : () -> (tensor<i64>, tensor<i64>)
    check.expect_eq_const %r#0, dense<0> : tensor<i64>
    func.return
  }
}
"""


def test_one_program_run_in_parallel_is_a_single_device_case():
    """infeed/outfeed cases run one program through run_parallel (for its queues): one device,
    counted with the single-device cases, not with the multi-device ones."""
    text = FILE.replace("programs=[[@f], [@f]]", "infeed=[@q], programs=[[@f]]")
    assert split_cases("y.mlir", text)[-1].kind == "single-run-parallel"


def test_sections_and_test_functions_become_cases():
    cases = split_cases("x.mlir", FILE)
    assert [(c.index, c.func, c.kind) for c in cases] == [
        (0, "add_op_test_si4", "single"), (1, "two", "single"), (1, "three", "single"),
        (2, "main", "multi-device")]
    assert [c.line for c in cases] == [3, 13, 19, 29] and "@two" in cases[1].name


def test_harness_returns_the_checked_values():
    cases = split_cases("x.mlir", FILE)
    text, checks = harness(cases[2], parse_literal)
    assert "@two" not in text and "check." not in text and "func.func @main() -> (tensor<2xf64>, tensor<2xf64>)" in text
    assert [(c.kind, c.actual, c.expected, c.tolerance) for c in checks] == [("almost_eq", 0, 1, 3.0)]
    text, checks = harness(cases[1], parse_literal)
    assert checks[0].kind == "almost_eq" and checks[0].expected == np.float32(1.00001)
    assert run_case(cases[0], "reference") == ("pass", "", "")
    assert run_case(cases[2], "cpu") == ("pass", "", "")


def test_cases_the_harness_cannot_run_are_refused_with_the_reason():
    (case,) = split_cases("p.mlir", "func.func @f(%a: tensor<f32>) {\n  check.expect_eq %a, %a : tensor<f32>\n"
                                    "  func.return\n}\n")
    with pytest.raises(HarnessError, match="takes arguments"):
        harness(case, parse_literal)
    assert run_case(case, "reference")[0] == "refused"


def test_check_rules_follow_the_check_dialect():
    nan = np.float32("nan")
    eq = Check("eq", 0, np.array([1.0, nan], np.float32))
    assert compare(eq, [np.array([1.0, nan], np.float32)]) is not None      # NaN != NaN, as APFloat ==
    almost = Check("almost_eq", 0, np.array([1.0, nan, np.inf, 0.0], np.float32), tolerance=1e-4)
    assert compare(almost, [np.array([1.00005, nan, np.inf, -0.0], np.float32)]) is None
    assert compare(almost, [np.array([1.001, nan, np.inf, 0.0], np.float32)]) is not None
    assert compare(almost, [np.array([1.0, 0.0, np.inf, 0.0], np.float32)]) is not None     # NaN vs number
    assert compare(almost, [np.array([1.0, nan, np.inf, 0.0], np.float64)]).startswith("result 0 has dtype")
    cplx = Check("almost_eq", 0, np.array([1 + 1j], np.complex64))
    assert compare(cplx, [np.array([1 + 1.001j], np.complex64)]) is not None
    close = Check("close", 0, 1, max_ulp=3)
    a = np.array([1.0, 2.0], np.float16)
    assert compare(close, [a, np.nextafter(a, np.float16(3)).astype(np.float16)]) is None
    assert compare(Check("close", 0, 1, max_ulp=0), [a, np.nextafter(a, np.float16(3))]) is not None


FEED_CASE = """module @distribution_ops {
  func.func @feed(%token : !stablehlo.token) -> (tensor<2xi64>, !stablehlo.token, tensor<2xi64>, !stablehlo.token) {
    %a:2 = "stablehlo.infeed"(%token) : (!stablehlo.token) -> (tensor<2xi64>, !stablehlo.token)
    %b:2 = "stablehlo.infeed"(%token) : (!stablehlo.token) -> (tensor<2xi64>, !stablehlo.token)
    func.return %a#0, %a#1, %b#0, %b#1 : tensor<2xi64>, !stablehlo.token, tensor<2xi64>, !stablehlo.token
  }
  func.func @q0() -> (tensor<2xi64>) {
    %c = stablehlo.constant dense<[1, 2]> : tensor<2xi64>
    func.return %c : tensor<2xi64>
  }
  func.func @q1() -> (tensor<2xi64>) {
    %c = stablehlo.constant dense<[5, 6]> : tensor<2xi64>
    func.return %c : tensor<2xi64>
  }
  func.func @main() {
    %token = stablehlo.after_all : !stablehlo.token
    %r:4 = "interpreter.run_parallel"(%token) {infeed=[@q0, @q1], programs=[[@feed]]} :
        (!stablehlo.token) -> (tensor<2xi64>, !stablehlo.token, tensor<2xi64>, !stablehlo.token)
    check.expect_eq_const %r#0, dense<[1, 2]> : tensor<2xi64>
    check.expect_eq_const %r#2, dense<[5, 6]> : tensor<2xi64>
    func.return
  }
}
"""


@pytest.mark.parametrize("target", ["reference", "cpu"])
def test_one_program_run_in_parallel_reads_its_queue_in_order(target):
    (case,) = split_cases("feed.mlir", FEED_CASE)
    assert case.kind == "single-run-parallel"
    assert run_case(case, target) == ("pass", "", "")
    (swapped,) = split_cases("feed.mlir", FEED_CASE.replace("infeed=[@q0, @q1]", "infeed=[@q1, @q0]"))
    status, reason, detail = run_case(swapped, target)
    assert (status, reason) == ("fail", "wrong answer") and "got np.int64(5)" in detail
