"""Write HLO modules the way a new user would, with JAX, into tests/data/jax_user/.

Each function is lowered with ``jax.jit(f).lower(*args).compiler_ir('hlo').as_hlo_text()``
(and its XLA:CPU-optimized text from ``.compile().as_text()``) and as StableHLO with
``jax.jit(f).lower(*args).as_text()`` (NAME.stablehlo.mlir); its inputs and JAX's outputs go
to NAME.npz (``arg0.., out0..``). ``tests/test_jax_user_modules.py`` and
``tests/test_stablehlo.py`` run them through hlotune.
Run: ``python -m bench.make_jax_user_modules [NAME ...]`` (needs the ``bench`` extra).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "jax_user"


def functions():
    import jax
    import jax.numpy as jnp
    from jax import lax
    r = np.random.default_rng(7)
    f32 = lambda *s: r.standard_normal(s).astype(np.float32)
    return {
        "trig_poly": (lambda x, y: jnp.sin(x) * jnp.cos(y) + x ** 2 - jnp.abs(y) / 3, (f32(33, 65), f32(33, 65))),
        "logsumexp": (lambda x: jax.nn.logsumexp(x, axis=-1), (f32(24, 300),)),
        "dense_relu": (lambda x, w, b: jax.nn.relu(x @ w + b), (f32(20, 48), f32(48, 36), f32(36))),
        "conv_nchw_s2": (lambda x, w: lax.conv_general_dilated(x, w, (2, 2), "SAME",
                                                               dimension_numbers=("NCHW", "OIHW", "NCHW")),
                         (f32(2, 3, 17, 17), f32(8, 3, 3, 3))),
        "argmax_rows": (lambda x: jnp.argmax(x, axis=1), (f32(40, 70),)),
        "cumsum": (lambda x: jnp.cumsum(x, axis=0), (f32(50, 6),)),
        "take_rows": (lambda t, i: jnp.take(t, i, axis=0), (f32(30, 8), r.integers(0, 30, (12,)).astype(np.int32))),
        "slice_concat_pad": (lambda x: jnp.pad(jnp.concatenate([x[::2], x[1::3]], 0), ((1, 2), (0, 3))), (f32(21, 5),)),
        "int_ops": (lambda a, b: ((a * 3 + b) // 4, a % 5, jnp.right_shift(a, 2), jnp.maximum(a, b)),
                    (r.integers(-100, 100, (16, 9)).astype(np.int32), r.integers(-100, 100, (16, 9)).astype(np.int32))),
        "fori_norm": (lambda x: lax.fori_loop(0, 5, lambda i, v: v / jnp.linalg.norm(v) * (i + 1.0), x), (f32(31),)),
        "sort_rows": (lambda x: jnp.sort(x, axis=-1), (f32(6, 19),)),
        "layer_mean_var": (lambda x: (jnp.mean(x, -1), jnp.var(x, -1)), (f32(10, 128),)),
        "switch_capture": (lambda i, x, y: lax.switch(i, [lambda v: v + y, lambda v: v * y,
                                                          lambda v: jnp.sin(v) - y], x),
                           (np.int32(1), f32(5, 4), f32(5, 4))),
        "scatter_add": (lambda x, i, u: x.at[i].add(u), (f32(10, 3), np.array([1, 3, 1, 9], np.int32), f32(4, 3))),
        "maxpool": (lambda x: lax.reduce_window(x, -jnp.inf, lax.max, (1, 3, 3, 1), (1, 2, 2, 1), "SAME"),
                    (f32(2, 9, 9, 3),)),
        "argsort": (lambda x: jnp.argsort(x, axis=-1), (f32(5, 11),)),
        "while_loop": (lambda x, s: lax.while_loop(lambda v: v[0] < 50.0, lambda v: (v[0] + s, v[1] * 1.5),
                                                   (jnp.float32(0), x)), (f32(8), np.float32(7.0))),
        "top_k_sort": (lambda x: top_k_by_sort(x, 16), (special(f32(32, 1000), r),)),
        "sort_multikey": (lambda k, x, v: lax.sort((k, x, v), dimension=1, num_keys=2),
                          (r.integers(0, 3, (8, 40)).astype(np.int32), special(f32(8, 40), r), f32(8, 40))),
    }


def top_k_by_sort(x, k):
    """The ``k`` largest of each row and their indices, through a full descending argsort."""
    import jax.numpy as jnp
    i = jnp.argsort(x, axis=-1, descending=True)[:, :k]
    return jnp.take_along_axis(x, i, axis=-1), i


def special(x, r):
    """``x`` with ties, +-0.0, +-inf and NaNs of both signs sprinkled in (sort tests)."""
    flat = x.copy().reshape(-1)
    vals = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 1.0, 1.0], np.float32)
    hit = r.random(flat.size) < 0.1
    flat[hit] = r.choice(vals, hit.sum())
    return flat.reshape(x.shape)


def main(names=None):
    import jax
    OUT.mkdir(parents=True, exist_ok=True)
    for name, (f, args) in functions().items():
        if names and name not in names:
            continue
        lowered = jax.jit(f).lower(*args)
        (OUT / f"{name}.hlo").write_text(lowered.compiler_ir("hlo").as_hlo_text())
        (OUT / f"{name}.opt.hlo").write_text(lowered.compile().as_text())
        (OUT / f"{name}.stablehlo.mlir").write_text(lowered.as_text())
        outs = jax.jit(f)(*args)
        outs = outs if isinstance(outs, tuple) else (outs,)
        np.savez(OUT / f"{name}.npz", **{f"arg{k}": a for k, a in enumerate(args)},
                 **{f"out{k}": np.asarray(o) for k, o in enumerate(outs)})
        print(name, [np.asarray(o).shape for o in outs])


if __name__ == "__main__":
    import sys
    main(sys.argv[1:])
