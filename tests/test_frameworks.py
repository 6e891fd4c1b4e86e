"""Models from TensorFlow/Keras and PyTorch (hlotune/frameworks.py), built from their own
libraries with random weights: each runs in hlotune on the cpu and matches its framework's own
run, tunes, and refuses what it cannot take with a typed error naming it."""

from __future__ import annotations

import os

import numpy as np
import pytest
from hlotune.dsl.errors import UnsupportedOpError

import hlotune

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

RNG = np.random.default_rng(0)


def _close(got, want, tol=2e-4):
    got = got if isinstance(got, tuple) else (got,)
    want = want if isinstance(want, (tuple, list)) else (want,)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        w = np.asarray(w)
        scale = max(float(np.max(np.abs(w))), 1.0)
        np.testing.assert_allclose(np.asarray(g), w, rtol=tol, atol=tol * scale)


# ------------------------------------------------------------------ TensorFlow / Keras

def _keras():
    pytest.importorskip("tensorflow", reason="the tensorflow extra is not installed")
    import keras
    if keras.backend.backend() != "tensorflow":
        pytest.skip(f"KERAS_BACKEND is {keras.backend.backend()}")
    keras.utils.set_random_seed(0)
    return keras


def keras_cnn():
    keras = _keras()
    inp = keras.Input((16, 16, 3))
    h = keras.layers.Conv2D(8, 3, activation="relu", padding="same")(inp)
    h = keras.layers.BatchNormalization()(h)
    h = keras.layers.MaxPooling2D()(h)
    h = keras.layers.Conv2D(16, 3, activation="relu")(h)
    h = keras.layers.GlobalAveragePooling2D()(h)
    return keras.Model(inp, keras.layers.Dense(4)(h)), RNG.standard_normal((2, 16, 16, 3)).astype(np.float32)


def keras_encoder():
    keras = _keras()
    inp = keras.Input((12, 32))
    a = keras.layers.MultiHeadAttention(num_heads=4, key_dim=8)(inp, inp)
    h = keras.layers.LayerNormalization()(inp + a)
    f = keras.layers.Dense(32)(keras.layers.Dense(64, activation="gelu")(h))
    return keras.Model(inp, keras.layers.LayerNormalization()(h + f)), \
        RNG.standard_normal((2, 12, 32)).astype(np.float32)


@pytest.mark.parametrize("build", [keras_cnn, keras_encoder])
def test_keras_models_match_tensorflow(build):
    model, x = build()
    m = hlotune.from_tensorflow(model, x)
    want = model(x).numpy()
    _close(hlotune.compile(m)(x), want)
    named = {model.trainable_variables[0].path: model.trainable_variables[0].numpy() * 0}
    assert not np.allclose(hlotune.compile(m)(x, **named), want)      # a weight replaced by name
    folded = hlotune.from_tensorflow(model, x, weights="constants")
    assert len(folded.params) == 1
    _close(hlotune.compile(folded)(x), want)


def test_a_tf_function_and_its_refusals():
    tf = pytest.importorskip("tensorflow", reason="the tensorflow extra is not installed")
    x = RNG.standard_normal((4, 8)).astype(np.float32)
    m = hlotune.from_tensorflow(lambda v: tf.nn.softmax(tf.matmul(v, tf.transpose(v))), x)
    _close(hlotune.compile(m)(x), tf.nn.softmax(x @ x.T).numpy())
    v = tf.Variable(np.ones((8, 8), np.float32))
    with pytest.raises(UnsupportedOpError, match="resource variables"):
        hlotune.from_tensorflow(tf.function(lambda a: a @ v), x)


@pytest.mark.parametrize("make, op, kind", [
    (lambda tf: (lambda v: tf.py_function(lambda a: a * 2, [v], tf.float32)), "EagerPyFunc", "TensorFlow op"),
    (lambda tf: (lambda v: tf.strings.as_string(v)), "AsString", "TensorFlow op"),
    (lambda tf: (lambda v: tf.unique(tf.reshape(v, [-1]))[0]), "Unique", "data-dependent shape"),
    (lambda tf: (lambda v: tf.where(v > 0)), "Where", "data-dependent shape"),
])
def test_tf_ops_xla_cannot_compile_or_shape_are_refused_by_name(make, op, kind):
    """An op XLA cannot lower, and one whose result's shape depends on the data (XLA writes a
    dynamic dimension), each a typed error naming the TF op."""
    tf = pytest.importorskip("tensorflow", reason="the tensorflow extra is not installed")
    x = RNG.standard_normal((4, 4)).astype(np.float32)
    with pytest.raises(UnsupportedOpError, match=f"{kind}.*'{op}'"):
        hlotune.from_tensorflow(make(tf), x)


# ------------------------------------------------------------------ PyTorch

def _torch():
    torch = pytest.importorskip("torch", reason="the torch extra is not installed")
    pytest.importorskip("torchax", reason="the torch extra is not installed")
    torch.manual_seed(0)
    return torch


def torch_encoder():
    torch = _torch()
    m = torch.nn.TransformerEncoderLayer(d_model=32, nhead=4, dim_feedforward=64, batch_first=True, dropout=0.0)
    return m, torch.randn(2, 10, 32)


def torch_resnet_block():
    torch = _torch()
    nn = torch.nn

    class Block(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.c1, self.b1 = nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c)
            self.c2, self.b2 = nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c)

        def forward(self, x):
            return torch.relu(x + self.b2(self.c2(torch.relu(self.b1(self.c1(x))))))
    b = Block(8)
    for bn in (b.b1, b.b2):          # running statistics that are not the identity
        bn.running_mean.uniform_(-0.5, 0.5)
        bn.running_var.uniform_(0.5, 1.5)
    return b, torch.randn(2, 8, 12, 12)


def torch_gru():
    torch = _torch()
    return torch.nn.GRU(16, 24, batch_first=True), torch.randn(3, 7, 16)


@pytest.mark.parametrize("build", [torch_encoder, torch_resnet_block, torch_gru])
def test_torch_modules_match_pytorch(build):
    torch = _torch()
    model, x = build()
    model.eval()
    with torch.no_grad():
        want = model(x)
    want = [w.numpy() for w in (want if isinstance(want, tuple) else (want,))]
    m = hlotune.from_torch(model, x)
    assert m.param_names[0] in dict(model.named_parameters()) or m.param_names[0] in dict(model.named_buffers())
    _close(hlotune.compile(m)(x.numpy()), want)


def test_a_data_dependent_branch_is_refused_by_name():
    torch = _torch()

    class Branchy(torch.nn.Module):
        def forward(self, x):
            return x * 2 if x.sum() > 0 else x - 1
    with pytest.raises(UnsupportedOpError, match="data-dependent branch"):
        hlotune.from_torch(Branchy(), torch.randn(4))


@pytest.mark.parametrize("forward, what", [(lambda t, x: t.nonzero(x > 0), "jnp.nonzero"),
                                           (lambda t, x: x[x > 0], "boolean indices"),
                                           (lambda t, x: t.unique(x), "jnp.unique")])
def test_a_shape_that_depends_on_the_data_is_refused_by_name(forward, what):
    """No bound, no static shape: a typed error naming the construct, not a JAX traceback."""
    torch = _torch()

    class Dynamic(torch.nn.Module):
        def forward(self, x):
            return forward(torch, x)
    with pytest.raises(UnsupportedOpError, match=f"data-dependent shape '{what}'"):
        hlotune.from_torch(Dynamic(), torch.randn(4, 4))


def _opencl():
    from hlotune.dsl.errors import HlotuneError
    try:
        from hlotune.runtime import opencl
        if opencl.devices():
            return "opencl"
    except HlotuneError:
        pass
    pytest.skip("no OpenCL device (the opencl extra installs PoCL and Intel's CPU runtime)")


def _framework(build):
    """(module, numpy input, the framework's own answer) of a model builder."""
    model, x = build()
    if hasattr(model, "eval"):
        torch = _torch()
        model.eval()
        with torch.no_grad():
            want = model(x)
        want = [w.numpy() for w in (want if isinstance(want, tuple) else (want,))]
        return hlotune.from_torch(model, x), x.numpy(), want
    return hlotune.from_tensorflow(model, x), x, model(x).numpy()


MODELS = [keras_cnn, keras_encoder, torch_encoder, torch_resnet_block, torch_gru]


@pytest.mark.parametrize("build", MODELS)
def test_framework_models_run_on_opencl(build):
    target = _opencl()
    m, x, want = _framework(build)
    _close(hlotune.compile(m, target=target)(x), want, tol=1e-3)


@pytest.mark.parametrize("target", ["cpu", "opencl"])
@pytest.mark.parametrize("build", MODELS)
def test_framework_models_tune(build, target, tmp_path):
    """Each model tuned on the CPU and on the OpenCL device: every trial is recorded for that
    device, and the tuned module still matches the framework."""
    if target == "opencl":
        target = _opencl()
    m, x, want = _framework(build)
    db = str(tmp_path / "t.db")
    res = hlotune.tune(m, target=target, trials=4, db=db, progress=False, confirm_rounds=0)
    assert sum(r.trials for r in res) >= 4 and any(r.best_time for r in res)
    trials = hlotune.report(db).trials()
    assert len(trials) >= 4 and set(trials["target"].str.split(":").str[0]) == {target}
    _close(hlotune.compile(m, target=target, db=db)(x), want, tol=1e-3)


# ------------------------------------------------------------------ Keras 3 on each backend

KERAS_SCRIPT = r"""
import numpy as np, keras, hlotune
keras.utils.set_random_seed(0)
inp = keras.Input((10, 6))
h = keras.layers.Conv1D(8, 3, padding="same", activation="relu")(inp)
h = keras.layers.LayerNormalization()(h)
h = keras.layers.BatchNormalization()(h)
out = keras.layers.Dense(3)(keras.layers.GlobalAveragePooling1D()(h))
model = keras.Model(inp, out)
x = np.random.default_rng(1).standard_normal((2, 10, 6)).astype(np.float32)
want = np.asarray(keras.ops.convert_to_numpy(model(x, training=False)))
m = hlotune.from_keras(model, x)
got = hlotune.compile(m)(x)
assert keras.backend.backend() == "{backend}", keras.backend.backend()
np.testing.assert_allclose(got, want, rtol=2e-4, atol=2e-4)
w = model.trainable_variables[-1]
named = {{w.path: np.asarray(keras.ops.convert_to_numpy(w.value)) + 1}}
np.testing.assert_allclose(hlotune.compile(m)(x, **named), want + 1, rtol=2e-4, atol=2e-4)   # Dense's bias
folded = hlotune.from_keras(model, x, weights="constants")
assert len(folded.params) == 1
np.testing.assert_allclose(hlotune.compile(folded)(x), want, rtol=2e-4, atol=2e-4)
print("ok", len(m.params))
"""


TORCH_BRANCH = r"""
class Branch(keras.layers.Layer):
    def call(self, x):
        return x * 2 if bool(keras.ops.sum(x) > 0) else x
inp = keras.Input((4,))
try:
    hlotune.from_keras(keras.Model(inp, Branch()(keras.layers.Dense(4)(inp))), np.ones((2, 4), np.float32))
except hlotune.UnsupportedOpError as e:
    assert "data-dependent branch" in str(e), e
else:
    raise AssertionError("a branch on a tensor's value was not refused")
"""


@pytest.mark.parametrize("backend,needs", [("jax", "jax"), ("tensorflow", "tensorflow"), ("torch", "torchax")])
def test_keras_models_on_every_backend(backend, needs):
    """``hlotune.from_keras`` through the backend Keras runs on (chosen per process by
    KERAS_BACKEND, so each runs in a child): the answer matches Keras's own, the last bias
    replaced by name shifts it by one, and ``weights="constants"`` leaves the input alone. On
    the torch backend the model goes through torch.export and torchax."""
    import subprocess
    import sys
    pytest.importorskip("keras", reason="the tensorflow extra is not installed")
    pytest.importorskip(needs, reason=f"{needs} is not installed (the {backend} extra)")
    env = {**os.environ, "KERAS_BACKEND": backend, "TF_CPP_MIN_LOG_LEVEL": "2"}
    script = KERAS_SCRIPT.format(backend=backend)
    if backend == "torch":      # a Python branch on a tensor's value is refused by name
        script += TORCH_BRANCH
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=600,
                       check=False)
    assert r.returncode == 0 and r.stdout.startswith("ok"), r.stderr[-3000:]

