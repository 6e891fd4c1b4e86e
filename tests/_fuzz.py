"""Module fuzzing shared by tests/test_fuzz_modules.py (bounded, in CI) and bench/fuzz_modules.py
(thousands of cases, off CI).

A case is one corpus module (HLO, XLA-optimized HLO or StableHLO text) with one token changed by
:func:`_checks.mutate_token`. A worker subprocess loads it, compiles and runs it on the cpu, and
runs the same text through XLA:CPU itself (jaxlib compiles StableHLO text; HLO text is parsed by
XLA and converted to StableHLO) on the same inputs: XLA is the oracle, independent of hlotune's
own reference. When the worker dies, the signal is the outcome. Outcomes:

* ``matched``: loaded, ran, equal to XLA's answer under the tolerance policy (XLA's optimized
  HLO, ``.opt.hlo``, does not compile again in XLA:CPU: those are held to hlotune's reference
  evaluator; ``stage`` says which oracle answered);
* ``refused``: a typed refusal of the input (a parse or verifier error, an unsupported op, a
  resource limit) before the module was accepted;
* ``xla_refused``: hlotune ran a module that XLA refuses, or crashes on (reported; not a failure
  by itself);
* ``impl_defined``: hlotune and XLA differ where the semantics leave the answer open (a reduction
  whose init value is not its reducer's identity; see ``implementation_defined``);
* ``timeout``: still running after the time limit while XLA ends (a hang of hlotune's);
* ``both_hang``: hlotune and XLA both still running after the limit (the mutation made a loop
  endless: not a failure); ``hang_unjudged``: over the limit where XLA cannot run the text
  (XLA's optimized HLO) to say whether the program ends;
* failures: ``crash`` (a signal or exit), ``untyped`` (any other exception), ``internal``
  (hlotune's InternalError: a bug it caught), ``verified_error`` (a module the verifier accepted
  ending in a compile, lowering, schedule or DSL error), ``wrong`` (an answer differing from
  XLA's).

Run ``python tests/_fuzz.py FILE`` to replay one module text in this process.
"""

from __future__ import annotations

import json
import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

DATA = Path(__file__).parent / "data"
FAILURES = ("crash", "untyped", "internal", "verified_error", "wrong")
#: modules whose compile + run + reference take over 2 s here: left out of the fuzz
HEAVY = ("matmul_1024", "attention_multi_head")
#: JAX programs of special functions: a mutated operand sends their rational approximations where
#: they cancel, and contracted (FMA) kernels then differ from the reference beyond any tolerance
ILL_CONDITIONED = ("special_", "lax_special")

_HLO_TOKEN = r"%?[A-Za-z_][\w.-]*|\d+|[^\s\w]"
_MLIR_TOKEN = r"%[\w#]+|[A-Za-z_][\w.-]*|\d+|[^\s\w]"
_HLO_OPS = ["add", "multiply", "dot", "reduce", "transpose", "broadcast", "slice", "tanh", "reshape",
            "concatenate", "pad", "select", "compare", "convert", "copy", "negate", "while",
            "dynamic-slice", "gather", "iota", "maximum", "f32", "s32", "pred", "bf16", "u8", "f16"]
_MLIR_OPS = ["stablehlo.add", "stablehlo.multiply", "stablehlo.dot_general", "stablehlo.reduce",
             "stablehlo.transpose", "stablehlo.broadcast_in_dim", "stablehlo.slice", "stablehlo.tanh",
             "stablehlo.reshape", "stablehlo.convert", "stablehlo.select", "stablehlo.while",
             "func.call", "stablehlo.return", "f32", "i32", "i1", "bf16", "f16", "tensor"]


def corpus(heavy: bool = False) -> list[Path]:
    """The corpus, JAX user modules and JAX programs in every form (HLO, .opt.hlo, .stablehlo.mlir)."""
    files = sorted(p for d in ("hlo", "jax_user", "jax_programs") for p in (DATA / d).iterdir()
                   if p.suffix in (".hlo", ".mlir"))
    return [p for p in files if heavy or not p.name.startswith(HEAVY + ILL_CONDITIONED)]


_HEADER_TABLES = re.compile(r"\n(?:FileNames|FunctionNames|FileLocations|StackFrames)\n(?:\d+ [^\n]*\n)*")
_METADATA = re.compile(r", metadata=\{[^{}]*\}")


def mutate(path: Path, data, kinds=("number", "delete", "duplicate", "replace")) -> str:
    """``path``'s text with one token changed by ``_checks.mutate_token``. One case in ten
    changes any token of the whole original text; the others change one line, drawn uniformly,
    of the module's semantic text (XLA's metadata and stack-frame tables removed): a number put
    for a number (dimensions, attributes: 4 in 10), a value name for another (an operand swapped:
    2 in 10) or any token changed by any of ``kinds`` (opcodes, element types and value names
    for replacements)."""
    from _checks import mutate_token
    from hypothesis import strategies as st
    text = path.read_text()
    mlir = path.suffix == ".mlir"
    token_re = _MLIR_TOKEN if mlir else _HLO_TOKEN
    name_re = r"%[\w#.]+" if mlir else r"%?[A-Za-z_][\w.-]*(?= = )"
    names = sorted(set(re.findall(name_re, text)))[:40]
    replacements = (_MLIR_OPS if mlir else _HLO_OPS) + names
    rnd = data.draw(st.randoms(use_true_random=False))
    u = rnd.random()
    if u < 0.1:
        return mutate_token(text, data, token_re, replacements, kinds)
    lines = _METADATA.sub("", _HEADER_TABLES.sub("\n", text)).split("\n")
    if u < 0.5:
        token_re, replacements, kinds = r"(?<![\w.])\d+(?![\w.])", [], ("number",)
    elif u < 0.7:
        token_re = r"%[\w#.]+" if mlir else r"(?<=[(, ])%?[A-Za-z_][\w.-]*(?=[,)])"
        replacements, kinds = names, ("replace",)
    candidates = [i for i, ln in enumerate(lines) if re.search(token_re, ln)]
    if not candidates:
        return mutate_token(text, data, _MLIR_TOKEN if mlir else _HLO_TOKEN, replacements or names, ("delete",))
    k = rnd.choice(candidates)
    lines[k] = mutate_token(lines[k], data, token_re, replacements, kinds)
    return "\n".join(lines)


@dataclass(frozen=True)
class Outcome:
    kind: str            # matched, refused, xla_refused, timeout, or one of FAILURES
    error: str = ""      # the exception type, or the signal
    stage: str = ""      # load, compile, run, xla, compare
    detail: str = ""
    seconds: float = 0.0

    @property
    def failed(self) -> bool:
        return self.kind in FAILURES


# ----------------------------------------------------------------------------- the worker side

def _tolerance(dtype, ref):
    import numpy as np

    from hlotune.api import tolerance
    finite = np.abs(ref[np.isfinite(ref)]) if ref.dtype.kind in "fc" else np.abs(ref)
    return tolerance(dtype, float(finite.max()) if finite.size else 1.0)


#: errors that refuse the input: a module the verifier accepted may end in none but the last two
REFUSALS = ("HloParseError", "UnsupportedOpError", "DataFileError", "ResourceError", "MemoryError")
#: errors after verification that are hlotune's own fault
BUGS = ("CompileError", "LoweringError", "ScheduleError", "DSLError", "InternalError")


def xla_outputs(text: str, file: str, inputs) -> list:
    """XLA:CPU's outputs of module ``text`` on ``inputs``: StableHLO compiled as it is, HLO text
    parsed by XLA and converted to StableHLO. Raises whatever XLA raises when it refuses."""
    import jax
    import numpy as np
    from jax._src import xla_bridge as xb
    from jax._src.lib import xla_client as xc
    from jaxlib import lapack
    lapack._lapack.initialize()     # jax does this when it lowers a linalg op; XLA's LAPACK calls need it
    be = xb.get_backend("cpu")
    if file.endswith(".mlir") or not text.lstrip().startswith("HloModule"):
        mod = text
    else:
        proto = xc.hlo.hlo_module_from_text(text).as_serialized_hlo_module_proto()
        mod = xc._xla.mlir.hlo_to_stablehlo(proto)
    exe = be.compile_and_load(mod, xc.DeviceList(tuple(be.local_devices()[:1])), xc.CompileOptions())
    outs = exe.execute_sharded([jax.device_put(np.asarray(a)) for a in inputs])
    return [np.asarray(o[0]) for o in outs.disassemble_into_single_device_arrays()]


_IDENTITIES = {"add": 0, "or": 0, "xor": 0, "multiply": 1, "maximum": "-inf", "minimum": "+inf", "and": "ones"}


def _params(by: dict, name: str) -> set:
    """The parameter numbers that comparator value ``name`` depends on."""
    ins = by.get(name)
    if ins is None:
        return set()
    if ins.opcode == "parameter":
        return {ins.parameter_number}
    return set().union(*(_params(by, o) for o in ins.operands)) if ins.operands else set()


def _same_function(by: dict, x: str, y: str, pairs: set) -> bool:
    """Whether comparator values ``x`` and ``y`` are one function, of parameter i in ``x`` where
    of parameter j in ``y`` (each (i, j) recorded in ``pairs``); a shared value that depends on
    no parameter (a constant) is the same on both sides."""
    if x == y:
        return not _params(by, x)
    a, b = by.get(x), by.get(y)
    if a is None or b is None:
        return False
    if a.opcode == "parameter" and b.opcode == "parameter":
        pairs.add((a.parameter_number, b.parameter_number))
        return True
    if a.opcode == "constant" and b.opcode == "constant":   # one value (NaN payloads too)
        import numpy as np
        la, lb = np.asarray(a.literal), np.asarray(b.literal)
        return a.literal is not None and la.dtype == lb.dtype and la.tobytes() == lb.tobytes() \
            and str(a.shape) == str(b.shape)
    if (a.opcode, len(a.operands), str(a.shape)) != (b.opcode, len(b.operands), str(b.shape)) or \
            a.opcode in ("constant", "parameter") or dict(a.attrs) != dict(b.attrs):
        return False
    return all(_same_function(by, p, q, pairs) for p, q in zip(a.operands, b.operands))


def _key_compare(by: dict, name: str, directions: tuple) -> tuple | None:
    """For a ``compare`` of one operand's two parameters (2k and 2k+1, either way round) under
    the same function, with a direction in ``directions`` and a strict total order (integers,
    or TOTALORDER floats): its two operand names; else None."""
    ins = by.get(name)
    if ins is None or ins.opcode != "compare" or str(ins.attr("direction", "")).upper() not in directions:
        return None
    x, y = ins.operands
    pairs: set = set()
    if not _same_function(by, x, y, pairs) or len(pairs) != 1:
        return None
    i, j = next(iter(pairs))
    if i // 2 != j // 2 or i == j:
        return None
    kind = getattr(by[x].shape, "element_type", "")
    total = str(ins.attr("type", "")).upper() == "TOTALORDER" or kind in ("pred",) or kind[:1] in "su"
    return (x, y) if total else None


def _strict_weak(comp) -> bool:
    """Whether sort comparator ``comp`` is recognizably a strict weak order: ``LT``/``GT`` of one
    operand's two parameters under one function (a strict total order), or a lexicographic chain
    ``or(key, and(eq(same key), rest))`` of those. Others may be one too, unrecognized."""
    by = {i.name: i for i in comp.instructions}

    def swo(name: str) -> bool:
        if _key_compare(by, name, ("LT", "GT")):
            return True
        ins = by.get(name)
        if ins is None or ins.opcode != "or" or len(ins.operands) != 2:
            return False
        for key, tail in (ins.operands, ins.operands[::-1]):
            k = _key_compare(by, key, ("LT", "GT"))
            t = by.get(tail)
            if not k or t is None or t.opcode != "and" or len(t.operands) != 2:
                continue
            for eq, rest in (t.operands, t.operands[::-1]):
                e = _key_compare(by, eq, ("EQ",))
                if e and set(e) == set(k) and swo(rest):
                    return True
        return False

    root = next((i for i in comp.instructions if i.is_root), None)
    return root is not None and swo(root.name)


def implementation_defined(text: str, file: str) -> str | None:
    """Why XLA may rightly answer otherwise than hlotune for this module, or None: a reduction
    whose constant init value is not its reducer's identity (XLA:CPU applies the init once per
    partial accumulator of a vectorized loop, hlotune and the StableHLO interpreter once), or
    whose reducer is not one associative op of its two parameters (the order in which a
    reduction applies its reducer is implementation-defined: StableHLO's spec, reduce), or a sort
    whose comparator is not recognizably a strict weak order (``_strict_weak``; StableHLO's spec
    asks for one)."""
    import numpy as np
    from hlotune.frontend.read import parse_module_text
    mod = parse_module_text(text, file)
    comps = {c.name: c for c in mod.computations}
    for comp in mod.computations:
        by = {i.name: i for i in comp.instructions}
        for ins in comp.instructions:
            if ins.opcode == "sort":
                to = ins.attr("to_apply")
                body = comps.get(to[0] if isinstance(to, tuple) else to)
                if body is not None and not _strict_weak(body):
                    return (f"'sort' {ins.name} compares with '{body.name}', not recognizably a strict weak "
                            "order: which order it leaves is implementation-defined")
            if ins.opcode not in ("reduce", "reduce-window"):
                continue
            to = ins.attr("to_apply")
            body = comps.get(to[0] if isinstance(to, tuple) else to)
            root = next((i for i in body.instructions if i.is_root), None) if body else None
            want = _IDENTITIES.get(root.opcode if root else "")
            params = {i.name for i in body.instructions if i.opcode == "parameter"} if body else set()
            if body and len(params) == 2 and (want is None or set(root.operands) != params):
                return f"'{ins.opcode}' {ins.name} reduces with '{body.name}', not one associative op: " \
                       "its order is implementation-defined"
            for name in ins.operands[len(ins.operands) // 2:]:
                init = by.get(name)
                if want is None or init is None or init.opcode != "constant" or init.literal is None:
                    continue
                v = np.asarray(init.literal).reshape(-1)[0]
                ident = {"-inf": v == -np.inf or (v.dtype.kind in "iu" and v == np.iinfo(v.dtype).min),
                         "+inf": v == np.inf or (v.dtype.kind in "iu" and v == np.iinfo(v.dtype).max),
                         "ones": bool(v) if v.dtype.kind == "b" else v == -1 or (v.dtype.kind == "u" and
                                                                                v == np.iinfo(v.dtype).max)
                         }.get(want, v == want) if not isinstance(want, int) else v == want
                if not ident:
                    return f"'{ins.opcode}' {ins.name} starts from {v!r}, not its {root.opcode}'s identity"
    return None


def _compare(got, want) -> str | None:
    """Why ``got`` differs from XLA's ``want`` beyond the tolerance policy, or None."""
    import numpy as np
    if len(got) != len(want):
        return f"{len(got)} outputs, XLA gives {len(want)}"
    for k, (g, r) in enumerate(zip(got, want)):
        g, r = np.asarray(g), np.asarray(r)
        if g.shape != r.shape or g.dtype != r.dtype:
            return f"output {k}: {g.dtype}{list(g.shape)} vs XLA's {r.dtype}{list(r.shape)}"
        if r.dtype.kind in "fc" or r.dtype.name in ("bfloat16", "float8_e4m3fn", "float8_e5m2"):
            w = r.astype(np.complex128 if r.dtype.kind == "c" else np.float64)
            rtol, atol = _tolerance(r.dtype, w)
            ok = np.isclose(g.astype(w.dtype), w, rtol=rtol, atol=atol, equal_nan=True)
        else:
            ok = g == r
        if not ok.all():
            i = tuple(int(x[0]) for x in np.nonzero(~ok))
            return (f"output {k} differs at {list(i)}: {g[i]!r} vs XLA's {r[i]!r} "
                    f"({int((~ok).sum())} of {ok.size} elements)")
    return None


def run_case(text: str, file: str, phase=lambda name: None) -> dict:
    """Load, compile and run one module in this process, then XLA on the same inputs; never
    raises. ``seconds``: hlotune's load + compile + run time."""
    import time

    from hlotune.dsl.errors import HlotuneError

    import hlotune
    stage, t0 = "load", time.perf_counter()
    try:
        m = hlotune.load_hlo(text)
        stage = "compile"
        c = hlotune.compile(m)
        stage = "run"
        ins = m.random_inputs(seed=1)
        got = c(*ins)
        got = got if isinstance(got, tuple) else (got,)
    except BaseException as e:  # noqa: BLE001  (classified, never raised)
        name = type(e).__name__
        if name == "InternalError":
            kind = "internal"
        elif not isinstance(e, (HlotuneError, MemoryError)):
            kind = "untyped"
        elif stage != "load" and name in BUGS:
            kind = "verified_error"
        else:
            kind = "refused"
        return {"kind": kind, "error": name, "stage": stage, "detail": str(e)[:800],
                "seconds": time.perf_counter() - t0}
    dt = time.perf_counter() - t0
    oracle = "reference" if file.endswith(".opt.hlo") else "xla"
    try:
        if oracle == "xla":
            phase("xla")     # from here on a crash is XLA's, not hlotune's
            want = xla_outputs(text, file, ins)
        else:   # XLA's optimized HLO (fusions without backend configs) does not compile again in
            from hlotune.dsl.reference import evaluate  # XLA:CPU (its converter may even crash)
            want = evaluate(list(m.outputs), ins, m.params)
    except Exception as e:  # noqa: BLE001  (the oracle's refusal, recorded)
        return {"kind": "xla_refused", "error": type(e).__name__, "stage": oracle, "detail": str(e)[:800],
                "seconds": dt}
    why = _compare(got, want)
    if why:
        loose = implementation_defined(text, file)
        if loose:
            return {"kind": "impl_defined", "stage": "compare", "detail": f"({oracle}) {why}; {loose}", "seconds": dt}
        return {"kind": "wrong", "stage": "compare", "detail": f"({oracle}) {why}", "seconds": dt}
    return {"kind": "matched", "stage": oracle, "seconds": dt}


def xla_only(text: str, file: str) -> dict:
    """XLA alone on the module's inputs: how long it takes (after hlotune hung on the module)."""
    import time

    import hlotune
    t0 = time.perf_counter()
    try:
        m = hlotune.load_hlo(text)
        xla_outputs(text, file, m.random_inputs(seed=1))
    except Exception as e:  # noqa: BLE001
        return {"kind": "xla_refused", "error": type(e).__name__, "stage": "xla", "detail": str(e)[:400]}
    return {"kind": "xla_done", "stage": "xla", "seconds": time.perf_counter() - t0}


def _serve() -> None:
    """Worker loop: one JSON request per stdin line, one JSON reply per line on the original
    stdout (fd 1 is redirected to stderr, so nothing else can corrupt the replies)."""
    out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    for line in sys.stdin:
        req = json.loads(line)
        if "signal" in req:   # tests of the parent's crash detection
            os.kill(os.getpid(), req["signal"])
        def phase(name, out=out):
            out.write(json.dumps({"phase": name}) + "\n")
            out.flush()
        if req.get("xla_only"):
            out.write(json.dumps(xla_only(req["text"], req["file"])) + "\n")
        else:
            out.write(json.dumps(run_case(req["text"], req["file"], phase)) + "\n")
        out.flush()


# ----------------------------------------------------------------------------- the parent side

class Fuzzer:
    """Runs cases in a worker subprocess (restarted after a crash or timeout) with its own
    compile cache."""

    def __init__(self, timeout: float = 60.0):
        self.timeout = timeout
        self.cache = tempfile.mkdtemp(prefix="hlotune_fuzz_")
        self.proc: subprocess.Popen | None = None
        self.replies: queue.Queue = queue.Queue()

    def _start(self) -> None:
        env = dict(os.environ, HLOTUNE_CACHE=self.cache, PYTHONPATH=os.pathsep.join(
            [str(Path(__file__).parent), os.environ.get("PYTHONPATH", "")]))
        self.proc = subprocess.Popen([sys.executable, __file__, "--serve"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                                     env=env, start_new_session=True)
        self.replies = queue.Queue()
        threading.Thread(target=self._read, args=(self.proc, self.replies), daemon=True).start()

    @staticmethod
    def _read(proc, replies) -> None:
        for line in proc.stdout:
            replies.put(line)
        replies.put(None)

    def _stop(self) -> None:
        if self.proc is not None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait()
            self.proc = None

    def run(self, text: str, file: str, **extra) -> Outcome:
        if self.proc is None or self.proc.poll() is not None:
            self._start()
        try:
            self.proc.stdin.write(json.dumps({"text": text, "file": file, **extra}) + "\n")
            self.proc.stdin.flush()
        except BrokenPipeError:
            pass
        phase = "hlotune"
        while True:
            try:
                line = self.replies.get(timeout=self.timeout)
            except queue.Empty:
                self._stop()
                if phase != "hlotune":
                    return Outcome("xla_refused", "timeout", stage=phase, detail=f"XLA ran over {self.timeout:g} s")
                if extra.get("xla_only"):
                    return Outcome("timeout", stage="xla", detail=f"XLA ran over {self.timeout:g} s too")
                xla = self.run(text, file, xla_only=True)     # does the program itself never end?
                if xla.kind == "timeout":
                    return Outcome("both_hang", stage="run", detail=f"hlotune and XLA both ran over {self.timeout:g} s "
                                                                    "(a loop the mutation made endless)")
                if xla.kind != "xla_done":    # XLA cannot run this text (XLA's optimized HLO): no judge
                    return Outcome("hang_unjudged", stage="run", detail=f"over {self.timeout:g} s; XLA cannot run "
                                                                        f"the module ({xla.kind} {xla.error})")
                return Outcome("timeout", stage="run", detail=f"over {self.timeout:g} s; XLA: {xla.kind} "
                                                              f"{xla.detail or f'in {xla.seconds:.2f} s'}")
            if line is None:
                rc = self.proc.wait()
                self.proc = None
                sig = signal.Signals(-rc).name if rc < 0 else f"exit {rc}"
                if phase != "hlotune":    # hlotune had answered: XLA itself crashed on the module
                    return Outcome("xla_refused", sig, stage=phase, detail=f"XLA ended the worker with {sig}")
                return Outcome("crash", sig, detail=f"the worker ended with {sig}")
            msg = json.loads(line)
            if "phase" in msg:
                phase = msg["phase"]
                continue
            return Outcome(**msg)

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        self._stop()
        shutil.rmtree(self.cache, ignore_errors=True)


if __name__ == "__main__":
    if sys.argv[1:] == ["--serve"]:
        _serve()
    else:
        print(run_case(Path(sys.argv[1]).read_text(), sys.argv[1]))
