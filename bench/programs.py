"""Whole JAX programs for ``bench/programs_cpu.py``: the kinds users hand hlotune beyond single
layers (loops with state, decode steps, scans, mixture of experts, sampling, training steps,
linear algebra), at sizes where XLA:CPU takes 0.05-20 ms.

Each entry is ``name -> (function, example arguments, kind)``; weights and states are
arguments, and randomness comes from a key argument, so every contender computes the same
thing. Written for this benchmark (none is tuned for); sizes are stated in each builder.
"""

from __future__ import annotations

import numpy as np

from hlotune.jaxbridge import hlo_text as lowered_text


def _rng(seed: int):
    r = np.random.default_rng(seed)
    return lambda *s, scale=0.1: (r.standard_normal(s) * scale).astype(np.float32)


def _ln(jnp, x, eps=1e-5):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) / jnp.sqrt(v + eps)


def _attn(jax, jnp, x, wqkv, wo, heads, causal=True):
    s, d = x.shape
    hd = d // heads
    q, k, v = jnp.split(x @ wqkv, 3, axis=-1)
    q, k, v = (t.reshape(s, heads, hd).transpose(1, 0, 2) for t in (q, k, v))
    sc = jnp.einsum("hqd,hkd->hqk", q, k) / np.float32(np.sqrt(hd))
    if causal:
        sc = jnp.where(jnp.tril(jnp.ones((s, s), bool)), sc, np.float32(-1e9))
    o = jnp.einsum("hqk,hkd->hqd", jax.nn.softmax(sc, -1), v)
    return o.transpose(1, 0, 2).reshape(s, d) @ wo


def loops(jax, jnp, lax):
    w = _rng(1)

    def mamba_scan(a, b, c, xs):
        """Selective-scan recurrence h = a*h + b*x_t, y_t = sum(c*h): 256 steps x 1024 states."""
        def step(h, x):
            h = a * h + b * x
            return h, jnp.sum(c * h, axis=-1)
        return lax.scan(step, jnp.zeros_like(a), xs)

    def decoder_scan(x, wqkv, wo, w1, w2):
        """A 2-layer pre-LN decoder (d 128, 4 heads, FFN 512, seq 64) as lax.scan over stacked layers."""
        def layer(h, p):
            q, o, f1, f2 = p
            h = h + _attn(jax, jnp, _ln(jnp, h), q, o, 4)
            return h + jax.nn.gelu(_ln(jnp, h) @ f1) @ f2, None
        return lax.scan(layer, x, (wqkv, wo, w1, w2))[0]

    def newton_while(x):
        """Newton's square root of 4096 values in a while_loop that stops when every update is small."""
        def cond(s):
            _, dy, i = s
            return (jnp.max(jnp.abs(dy)) > 1e-6) & (i < 100)

        def body(s):
            y, _, i = s
            y1 = 0.5 * (y + x / y)
            return y1, y1 - y, i + 1
        return lax.while_loop(cond, body, (x + 1.0, jnp.ones_like(x), 0))[0]

    def gru_cond_scan(xs, wx, wh, h0):
        """A GRU cell (d 64) over 128 steps, with lax.cond resetting the state on every 32nd step."""
        def step(carry, x):
            h, t = carry
            z = jax.nn.sigmoid(x @ wx[0] + h @ wh[0])
            r = jax.nn.sigmoid(x @ wx[1] + h @ wh[1])
            n = jnp.tanh(x @ wx[2] + (r * h) @ wh[2])
            h = (1 - z) * n + z * h
            h = lax.cond(t % 32 == 31, lambda v: v * 0.5, lambda v: v, h)
            return (h, t + 1), h
        return lax.scan(step, (h0, 0), xs)[1]

    def fori_power(m, v):
        """100 power-iteration steps (64x64) in fori_loop, normalizing each step."""
        def body(i, u):
            u = m @ u
            return u / jnp.linalg.norm(u)
        return lax.fori_loop(0, 100, body, v)

    return {
        "mamba_scan": (mamba_scan, (np.float32(0.9) * np.ones((1024,), np.float32), w(1024), w(1024), w(256, 1024)),
                       "scan"),
        "decoder_scan": (decoder_scan, (w(64, 128), w(2, 128, 384), w(2, 128, 128), w(2, 128, 512), w(2, 512, 128)),
                         "scan"),
        "newton_while": (newton_while, (np.abs(w(4096, scale=10.0)) + 0.1,), "while"),
        "gru_cond_scan": (gru_cond_scan, (w(128, 64), w(3, 64, 64), w(3, 64, 64), w(64)), "scan+cond"),
        "fori_power": (fori_power, (w(64, 64), w(64) + 1.0), "while"),
    }


def decode(jax, jnp, lax):
    w = _rng(2)
    L, H, D, V = 256, 4, 32, 1000

    def kv_decode_step(x, kc, vc, pos, wq, wk, wv, wo):
        """One token's attention with a KV cache (256 x 4 heads x 32): write k/v at pos, attend to <= pos."""
        q = (x @ wq).reshape(H, D)
        kc = lax.dynamic_update_slice(kc, (x @ wk).reshape(1, H, D), (pos, 0, 0))
        vc = lax.dynamic_update_slice(vc, (x @ wv).reshape(1, H, D), (pos, 0, 0))
        sc = jnp.einsum("hd,lhd->hl", q, kc) / np.float32(np.sqrt(D))
        sc = jnp.where(jnp.arange(L)[None, :] <= pos, sc, -1e9)
        o = jnp.einsum("hl,lhd->hd", jax.nn.softmax(sc, -1), vc).reshape(H * D)
        return o @ wo, kc, vc

    def greedy_decode(emb, wq, wk, wv, wo, wout):
        """32 greedy decode steps in fori_loop: embed the token, attend over the KV cache, argmax."""
        def body(i, s):
            tok, kc, vc, out = s
            x = emb[tok]
            q = (x @ wq).reshape(H, D)
            kc = lax.dynamic_update_slice(kc, (x @ wk).reshape(1, H, D), (i, 0, 0))
            vc = lax.dynamic_update_slice(vc, (x @ wv).reshape(1, H, D), (i, 0, 0))
            sc = jnp.einsum("hd,lhd->hl", q, kc)
            sc = jnp.where(jnp.arange(L)[None, :] <= i, sc, -1e9)
            o = jnp.einsum("hl,lhd->hd", jax.nn.softmax(sc, -1), vc).reshape(H * D) @ wo
            tok = jnp.argmax(o @ wout).astype(jnp.int32)
            return tok, kc, vc, out.at[i].set(tok)
        z = jnp.zeros((L, H, D), jnp.float32)
        return lax.fori_loop(0, 32, body, (jnp.int32(1), z, z, jnp.zeros(32, jnp.int32)))[3]

    def top_p_sampling(logits, key):
        """Top-p (0.9) sampling over a 32000-word vocabulary, batch 4: sort, cumsum, mask, categorical."""
        p = jax.nn.softmax(logits, -1)
        order = jnp.argsort(-p, axis=-1)
        sp = jnp.take_along_axis(p, order, -1)
        keep = jnp.cumsum(sp, -1) - sp < 0.9
        masked = jnp.where(keep, jnp.log(sp), -jnp.inf)
        choice = jax.random.categorical(key, masked, axis=-1)
        return jnp.take_along_axis(order, choice[:, None], -1)[:, 0]

    def cumsum_vocab(x):
        """jnp.cumsum over 4 x 32000 (a reduce-window spanning the axis)."""
        return jnp.cumsum(x, axis=-1)

    d = H * D
    return {
        "kv_decode_step": (kv_decode_step, (w(d), w(L, H, D), w(L, H, D), np.int32(100), w(d, d), w(d, d), w(d, d),
                                            w(d, d)), "decode"),
        "greedy_decode": (greedy_decode, (w(V, d), w(d, d), w(d, d), w(d, d), w(d, d), w(d, V)), "decode loop"),
        "top_p_sampling": (top_p_sampling, (w(4, 32000, scale=3.0), np.array([0, 42], np.uint32)), "sampling"),
        "cumsum_vocab": (cumsum_vocab, (w(4, 32000),), "scan"),
    }


def layers(jax, jnp, lax):
    w = _rng(3)
    T, E, Dm, F = 64, 4, 128, 256

    def moe_top2(x, wg, w1, w2):
        """Top-2 mixture of experts (64 tokens, 4 experts, d 128, FFN 256), dense dispatch."""
        g = jax.nn.softmax(x @ wg, -1)
        val, idx = lax.top_k(g, 2)
        gate = jnp.sum(jax.nn.one_hot(idx, E) * (val / val.sum(-1, keepdims=True))[..., None], 1)
        h = jax.nn.gelu(jnp.einsum("td,edf->tef", x, w1))
        return jnp.einsum("tef,efd,te->td", h, w2, gate)

    def segment_sum(data, seg):
        """Scatter-add of 8192 rows (x 64) into 512 segments."""
        return jax.ops.segment_sum(data, seg, num_segments=512)

    def wavenet_stack(x, ws):
        """Six dilated causal 1-D convolutions (dilation 1..32, 64 channels, 1024 steps), gated, residual."""
        for i in range(6):
            d = 2 ** i
            h = lax.conv_general_dilated(jnp.pad(x, ((0, 0), (0, 0), (d, 0))), ws[i], (1,), "VALID",
                                         rhs_dilation=(d,), dimension_numbers=("NCH", "OIH", "NCH"))
            a, b = jnp.split(h, 2, axis=1)
            x = x + jnp.tanh(a) * jax.nn.sigmoid(b)
        return x

    def unet_block(x, w1, w2, wt):
        """A U-Net level (32x32x16): conv, conv, 2x2 max-pool, transposed conv back, skip concat."""
        dn = ("NHWC", "HWIO", "NHWC")
        h = jax.nn.relu(lax.conv_general_dilated(x, w1, (1, 1), "SAME", dimension_numbers=dn))
        h = jax.nn.relu(lax.conv_general_dilated(h, w2, (1, 1), "SAME", dimension_numbers=dn))
        p = lax.reduce_window(h, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
        u = lax.conv_transpose(p, wt, (2, 2), "SAME", dimension_numbers=dn)
        return jnp.concatenate([h, u], -1)

    def int8_matmul(a, b, s):
        """int8 x int8 -> int32 (256 x 512 x 256), per-column dequantization to f32."""
        acc = lax.dot_general(a, b, (((1,), (0,)), ((), ())), preferred_element_type=jnp.int32)
        return acc.astype(jnp.float32) * s

    def bf16_mlp(x, w1, w2):
        """A bf16 MLP (128 x 512 x 1024 x 512) with f32 accumulation."""
        h = jax.nn.gelu(jnp.dot(x, w1, preferred_element_type=jnp.float32).astype(jnp.bfloat16))
        return jnp.dot(h, w2, preferred_element_type=jnp.float32)

    r = np.random.default_rng(4)
    return {
        "moe_top2": (moe_top2, (w(T, Dm), w(Dm, E), w(E, Dm, F), w(E, F, Dm)), "moe"),
        "segment_sum": (segment_sum, (w(8192, 64), np.sort(r.integers(0, 512, 8192)).astype(np.int32)), "scatter"),
        "wavenet_stack": (wavenet_stack, (w(1, 64, 1024), w(6, 128, 64, 2)), "conv"),
        "unet_block": (unet_block, (w(1, 32, 32, 16), w(3, 3, 16, 16), w(3, 3, 16, 16), w(2, 2, 16, 16)), "conv"),
        "int8_matmul": (int8_matmul, (r.integers(-128, 128, (256, 512)).astype(np.int8),
                                      r.integers(-128, 128, (512, 256)).astype(np.int8), w(256) * 1e-3), "int8"),
        "bf16_mlp": (bf16_mlp, (w(128, 512).astype(jnp.bfloat16), w(512, 1024).astype(jnp.bfloat16),
                                w(1024, 512).astype(jnp.bfloat16)), "bf16"),
    }


def training(jax, jnp, lax):
    w = _rng(5)

    def mlp_loss(p, x, y):
        h = jax.nn.relu(x @ p[0] + p[1])
        return jnp.mean((h @ p[2] + p[3] - y) ** 2)

    def sgd_step(w1, b1, w2, b2, x, y):
        """SGD on a 2-layer MLP (256 x 512 x 256 x 10), batch 256."""
        p = (w1, b1, w2, b2)
        g = jax.grad(mlp_loss)(p, x, y)
        return tuple(a - 0.01 * b for a, b in zip(p, g))

    def adam_step(w1, b1, w2, b2, m1, m2, v1, v2, x, y):
        """Adam on the same MLP's weights (first and second moments as state)."""
        p = (w1, w2)
        g1, _, g2, _ = jax.grad(mlp_loss)((w1, b1, w2, b2), x, y)
        out = []
        for q, g, m, v in zip(p, (g1, g2), (m1, m2), (v1, v2)):
            m = 0.9 * m + 0.1 * g
            v = 0.999 * v + 0.001 * g * g
            out += [q - 1e-3 * m / (jnp.sqrt(v) + 1e-8), m, v]
        return tuple(out)

    def cnn_train_step(x, y, k1, k2, wd):
        """A CNN training step (16x16x8 images, batch 8, two 3x3 convs, avg pool, dense): loss gradient and SGD."""
        dn = ("NHWC", "HWIO", "NHWC")

        def loss(ps):
            a, b, c = ps
            h = jax.nn.relu(lax.conv_general_dilated(x, a, (1, 1), "SAME", dimension_numbers=dn))
            h = jax.nn.relu(lax.conv_general_dilated(h, b, (2, 2), "SAME", dimension_numbers=dn))
            return jnp.mean((h.mean((1, 2)) @ c - y) ** 2)
        ps = (k1, k2, wd)
        return tuple(p - 0.1 * g for p, g in zip(ps, jax.grad(loss)(ps)))

    def batchnorm_grad(x, g, b):
        """Gradient of a training-mode batch norm + ReLU block (32 x 28 x 28 x 32) in its input and scale."""
        def f(x, g):
            m = x.mean((0, 1, 2))
            v = x.var((0, 1, 2))
            return jnp.sum(jax.nn.relu((x - m) / jnp.sqrt(v + 1e-5) * g + b) ** 2)
        return jax.grad(f, argnums=(0, 1))(x, g)

    return {
        "sgd_step": (sgd_step, (w(256, 512), w(512), w(512, 10), w(10), w(256, 256), w(256, 10)), "training"),
        "adam_step": (adam_step, (w(256, 512), w(512), w(512, 10), w(10), w(256, 512), w(512, 10),
                                  np.abs(w(256, 512)), np.abs(w(512, 10)), w(256, 256), w(256, 10)), "training"),
        "cnn_train_step": (cnn_train_step, (w(8, 16, 16, 8), w(8, 4), w(3, 3, 8, 16), w(3, 3, 16, 16), w(16, 4)),
                           "training"),
        "batchnorm_grad": (batchnorm_grad, (w(32, 28, 28, 32), w(32) + 1.0, w(32)), "training"),
    }


def linalg(jax, jnp, lax):
    w = _rng(6)

    def solve_slogdet(a, b):
        """inv, slogdet and solve of a 128x128 well-conditioned matrix."""
        a = a + 16.0 * jnp.eye(128)
        s, ld = jnp.linalg.slogdet(a)
        return jnp.linalg.inv(a), s * ld, jnp.linalg.solve(a, b)

    def eigh_lstsq(a, b):
        """eigh of a 64x64 symmetric matrix and a 128x32 least-squares solve."""
        return jnp.linalg.eigh(a @ a.T)[0], jnp.linalg.lstsq(b, b @ jnp.ones(32))[0]

    return {
        "solve_slogdet": (solve_slogdet, (w(128, 128), w(128, 8)), "linalg"),
        "eigh_lstsq": (eigh_lstsq, (w(64, 64), w(128, 32)), "linalg"),
    }


def programs() -> dict:
    """Every program: name -> (function, example arguments, kind)."""
    import jax
    import jax.numpy as jnp
    from jax import lax
    out = {}
    for group in (loops, decode, layers, training, linalg):
        out.update(group(jax, jnp, lax))
    return out


def texts(fn, args) -> tuple[str, str]:
    """The HLO text and the StableHLO text JAX prints for ``fn`` on ``args``."""
    import jax
    low = jax.jit(fn).lower(*args)
    return lowered_text(low), low.as_text()


__all__ = ["programs", "texts"]
