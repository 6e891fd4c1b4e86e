"""Real model layers written in JAX with the published sizes of well-known architectures
(batch 1, fp32), for ``bench/models_cpu.py``.

Each entry is ``name -> (function, example arguments)``; weights are arguments, so the HLO module
is small and every contender computes the same thing. Sizes:
- BERT-base encoder layer (Devlin et al. 2019): d 768, 12 heads, FFN 3072, exact GELU, post-LN; seq 128.
- GPT-2 small decoder layer (Radford et al. 2019): d 768, 12 heads, FFN 3072, tanh GELU, pre-LN,
  causal mask; seq 128.
- ViT-B/16 encoder layer (Dosovitskiy et al. 2021): d 768, 12 heads, MLP 3072, pre-LN; 197 tokens.
- T5-small encoder layer (Raffel et al. 2020): d 512, 8 heads of 64, FFN 2048 ReLU, RMS norm; seq 128.
- ResNet-50 bottleneck block, conv2_x (He et al. 2016): 56x56x256 -> 1x1 64 -> 3x3 64 -> 1x1 256,
  folded batch norm, ReLU, residual; NHWC.
- MobileNetV2 inverted residual block (Sandler et al. 2018): 56x56x24, expansion 6 (144),
  depthwise 3x3, ReLU6, linear 1x1 projection, residual; NHWC.
"""

from __future__ import annotations

import numpy as np

from hlotune.jaxbridge import hlo_text as lowered_text


def _rng(seed: int):
    r = np.random.default_rng(seed)
    return lambda *s, scale=0.05: (r.standard_normal(s) * scale).astype(np.float32)


def _attention(jnp, jax, x, wq, wk, wv, wo, heads, causal=False):
    s, d = x.shape
    hd = d // heads
    q = (x @ wq).reshape(s, heads, hd).transpose(1, 0, 2)
    k = (x @ wk).reshape(s, heads, hd).transpose(1, 0, 2)
    v = (x @ wv).reshape(s, heads, hd).transpose(1, 0, 2)
    sc = jnp.einsum("hqd,hkd->hqk", q, k) / float(np.sqrt(hd))   # Python floats keep bf16/fp16 layers narrow
    if causal:
        mask = jnp.tril(jnp.ones((s, s), bool))
        sc = jnp.where(mask, sc, -1e9)
    p = jax.nn.softmax(sc, axis=-1)
    o = jnp.einsum("hqk,hkd->hqd", p, v).transpose(1, 0, 2).reshape(s, d)
    return o @ wo


def _ln(jnp, x, g, b, eps=1e-5):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) / jnp.sqrt(v + eps) * g + b


def _transformer(seq, d, heads, ffn, pre_ln, causal, approx_gelu, seed):
    import jax
    import jax.numpy as jnp
    w = _rng(seed)

    def layer(x, wq, wk, wv, wo, g1, b1, w1, c1, w2, c2, g2, b2):
        if pre_ln:
            h = x + _attention(jnp, jax, _ln(jnp, x, g1, b1), wq, wk, wv, wo, heads, causal)
            return h + (jax.nn.gelu(_ln(jnp, h, g2, b2) @ w1 + c1, approximate=approx_gelu) @ w2 + c2)
        h = _ln(jnp, x + _attention(jnp, jax, x, wq, wk, wv, wo, heads, causal), g1, b1)
        return _ln(jnp, h + (jax.nn.gelu(h @ w1 + c1, approximate=approx_gelu) @ w2 + c2), g2, b2)

    ones = np.ones(d, np.float32)
    args = (w(seq, d, scale=1.0), w(d, d), w(d, d), w(d, d), w(d, d), ones, w(d), w(d, ffn), w(ffn),
            w(ffn, d), w(d), ones, w(d))
    return layer, args


def _t5(seq=128, d=512, heads=8, ffn=2048, seed=4):
    import jax
    import jax.numpy as jnp
    w = _rng(seed)

    def rms(x, g):
        return x * jax.lax.rsqrt((x * x).mean(-1, keepdims=True) + 1e-6) * g

    def layer(x, wq, wk, wv, wo, g1, w1, w2, g2):
        h = x + _attention(jnp, jax, rms(x, g1), wq, wk, wv, wo, heads)
        return h + jax.nn.relu(rms(h, g2) @ w1) @ w2

    ones = np.ones(d, np.float32)
    return layer, (w(seq, d, scale=1.0), w(d, d), w(d, d), w(d, d), w(d, d), ones, w(d, ffn), w(ffn, d), ones)


def _conv(lax, x, k, stride=1, groups=1):
    return lax.conv_general_dilated(x, k, (stride, stride), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"),
                                    feature_group_count=groups)


def _resnet_bottleneck(hw=56, cin=256, mid=64, seed=5):
    import jax
    from jax import lax
    w = _rng(seed)

    def block(x, k1, s1, b1, k2, s2, b2, k3, s3, b3):
        h = jax.nn.relu(_conv(lax, x, k1) * s1 + b1)
        h = jax.nn.relu(_conv(lax, h, k2) * s2 + b2)
        return jax.nn.relu(_conv(lax, h, k3) * s3 + b3 + x)

    one = lambda n: (1.0 + w(n)).astype(np.float32)
    return block, (w(1, hw, hw, cin, scale=1.0), w(1, 1, cin, mid), one(mid), w(mid), w(3, 3, mid, mid), one(mid),
                   w(mid), w(1, 1, mid, cin), one(cin), w(cin))


def _mobilenet_v2(hw=56, c=24, expand=6, seed=6):
    import jax.numpy as jnp
    from jax import lax
    w = _rng(seed)
    e = c * expand

    def block(x, k1, b1, kd, bd, k2, b2):
        h = jnp.clip(_conv(lax, x, k1) + b1, 0.0, 6.0)
        h = jnp.clip(_conv(lax, h, kd, groups=e) + bd, 0.0, 6.0)
        return _conv(lax, h, k2) + b2 + x

    return block, (w(1, hw, hw, c, scale=1.0), w(1, 1, c, e, scale=0.2), w(e), w(3, 3, 1, e, scale=0.3), w(e),
                   w(1, 1, e, c, scale=0.1), w(c))


def layers() -> dict:
    """name -> (JAX function, example arguments as numpy arrays)."""
    return {
        "bert_base_encoder": _transformer(128, 768, 12, 3072, False, False, False, 1),
        "gpt2_small_decoder": _transformer(128, 768, 12, 3072, True, True, True, 2),
        "vit_b16_encoder": _transformer(197, 768, 12, 3072, True, False, False, 3),
        "t5_small_encoder": _t5(),
        "resnet50_bottleneck": _resnet_bottleneck(),
        "mobilenet_v2_block": _mobilenet_v2(),
    }


def hlo_text(fn, args) -> str:
    """The unoptimized HLO module JAX prints for ``fn`` on ``args``."""
    import jax
    return lowered_text(jax.jit(fn).lower(*args))


__all__ = ["hlo_text", "layers"]
