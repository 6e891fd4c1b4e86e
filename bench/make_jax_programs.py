"""Write JAX programs across jax.numpy, jax.nn, jax.lax, jax.random, jnp.linalg, jnp.fft,
jax.scipy.special and jax.grad (a small CNN with pooling and a transposed convolution, a
transformer block) into tests/data/jax_programs/, in both forms a user gets them:

* NAME.hlo: ``jax.jit(f).lower(*args).compiler_ir('hlo').as_hlo_text()``;
* NAME.stablehlo.mlir: ``jax.jit(f).lower(*args).as_text()``;
* NAME.npz: the inputs (``arg0``, ...) and JAX's outputs under jax.jit (``out0``, ...).

``tests/test_jax_programs.py`` runs every one through hlotune on the cpu (and opencl where a
device is present) and compares with JAX. Shapes are tiny: the point is the ops, not the work.
Quantized and float8 programs are written by the element-types work, not here.
Run: ``python -m bench.make_jax_programs [NAME ...]`` (needs the ``bench`` extra).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from hlotune.jaxbridge import hlo_text

OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "jax_programs"


def _data():
    r = np.random.default_rng(14)

    def f32(*s, lo=None, hi=None):
        return (r.uniform(lo, hi, s) if lo is not None else r.standard_normal(s)).astype(np.float32)

    def i32(*s, lo=0, hi=10):
        return r.integers(lo, hi, s).astype(np.int32)
    return r, f32, i32


def numpy_programs(jnp, f32, i32):
    a, b = f32(6, 7), f32(6, 7)
    return {
        "np_elementwise": (lambda x, y: (jnp.exp(x) * jnp.log1p(jnp.abs(y)) - jnp.sqrt(jnp.abs(x)) / (1 + y * y),
                                         jnp.clip(x, -0.5, 0.5), jnp.where(x > y, x, y ** 3)), (a, b)),
        "np_hyperbolic": (lambda x: (jnp.sinh(x), jnp.cosh(x), jnp.arcsinh(x), jnp.arccosh(1 + jnp.abs(x)),
                                     jnp.arctanh(jnp.tanh(x) * 0.9)), (f32(5, 8),)),
        "np_inverse_trig": (lambda x: (jnp.arcsin(x), jnp.arccos(x), jnp.arctan(x * 10), jnp.tan(x)),
                            (f32(4, 9, lo=-0.99, hi=0.99),)),
        "np_rounding": (lambda x: (jnp.floor(x), jnp.ceil(x), jnp.round(x), jnp.trunc(x),
                                   jnp.rint(x), jnp.sign(x)), (f32(20) * 3,)),
        "np_nextafter_frexp": (lambda x, y: (jnp.nextafter(x, y), jnp.ldexp(x, 3), jnp.copysign(x, y)),
                               (f32(12), f32(12))),
        "np_integer": (lambda p, q: (p // jnp.maximum(q, 1), p % 7, jnp.left_shift(p, 2), jnp.bitwise_xor(p, q),
                                     jnp.gcd(p, q), jnp.lcm(p % 9, q % 9)),
                       (i32(5, 6, lo=-50, hi=50), i32(5, 6, lo=1, hi=40))),
        "np_reductions": (lambda x: (jnp.mean(x, 0), jnp.std(x, 1), jnp.max(x), jnp.argmin(x, 1),
                                     jnp.prod(x[:3], 0), jnp.any(x > 2), jnp.median(x, 1)), (f32(6, 9),)),
        "np_einsum": (lambda x, y, z: jnp.einsum("bij,bjk,kl->bil", x, y, z), (f32(2, 3, 4), f32(2, 4, 5), f32(5, 2))),
        "np_shapes": (lambda x: (jnp.concatenate([x, x[::-1]], 0), jnp.stack([x, -x], -1), jnp.roll(x, 2, 1),
                                 jnp.tile(x[:1], (2, 1)), jnp.flip(x, 1), jnp.repeat(x, 2, 0)), (f32(3, 5),)),
        "np_take_along": (lambda x, i: (jnp.take_along_axis(x, i, 1), jnp.take(x, i[:, 0], 0)),
                          (f32(4, 6), i32(4, 3, hi=4))),
        "np_linspace_outer": (lambda x: jnp.outer(jnp.linspace(0, 1, 7), x) + jnp.arange(7.0)[:, None], (f32(5),)),
        "np_cumulative": (lambda x: (jnp.cumsum(x, 1), jnp.cumprod(x * 0.5 + 1, 0), jnp.diff(x, axis=1)),
                          (f32(4, 6),)),
        "np_sort_unique": (lambda x: (jnp.sort(x, axis=0), jnp.argsort(-x, axis=1), jnp.searchsorted(jnp.sort(x[0]), x[1])),
                           (f32(3, 8),)),
        "np_polyval_interp": (lambda x: (jnp.polyval(jnp.array([1.0, -2.0, 0.5]), x), jnp.interp(x, jnp.array([-1.0, 0.0, 2.0]),
                                                                                           jnp.array([0.0, 1.0, -1.0]))),
                              (f32(10),)),
    }


def nn_programs(jax, jnp, f32, i32):
    x = f32(4, 10)
    return {
        "nn_gelu_exact": (lambda v: jax.nn.gelu(v, approximate=False), (x,)),
        "nn_gelu_tanh": (lambda v: jax.nn.gelu(v, approximate=True), (x,)),
        "nn_softmax": (lambda v: (jax.nn.softmax(v), jax.nn.log_softmax(v, axis=0), jax.nn.logsumexp(v, 1)), (x,)),
        "nn_activations": (lambda v: (jax.nn.silu(v), jax.nn.sigmoid(v), jax.nn.relu6(v * 4), jax.nn.softplus(v),
                                      jax.nn.elu(v), jax.nn.selu(v), jax.nn.celu(v), jax.nn.hard_tanh(v),
                                      jax.nn.leaky_relu(v), jax.nn.mish(v)), (x,)),
        "nn_one_hot": (lambda i: jax.nn.one_hot(i, 6), (i32(7, hi=6),)),
        "nn_standardize": (lambda v: jax.nn.standardize(v, axis=-1), (x,)),
        "nn_dot_product_attention": (lambda q, k, v: jax.nn.dot_product_attention(q, k, v, is_causal=True),
                                     (f32(1, 5, 2, 4), f32(1, 5, 2, 4), f32(1, 5, 2, 4))),
        "nn_glu_sparse_plus": (lambda v: (jax.nn.glu(v), jax.nn.sparse_plus(v), jax.nn.squareplus(v)), (x,)),
    }


def lax_programs(jax, jnp, lax, f32, i32):
    x = f32(5, 6)
    idx = np.array([[0], [4], [9], [-3], [2]], np.int32)      # out of bounds on purpose

    def scan_fn(v):
        def step(c, row):
            c = c * 0.5 + row
            return c, jnp.sin(c)
        return lax.scan(step, jnp.zeros(v.shape[1:]), v)

    def scatter_all(t, i, u):
        return (t.at[i[:, 0]].add(u, mode="drop"), t.at[i[:, 0]].multiply(u, mode="clip"),
                t.at[i[:, 0]].min(u, mode="drop"), t.at[i[:, 0]].max(u, mode="clip"),
                t.at[i[:, 0]].set(u, mode="drop"), t.at[jnp.abs(i[:, 0]) % 5].set(u, mode="promise_in_bounds",
                                                                                  unique_indices=True))

    def gather_all(t, i):
        return (t.at[i[:, 0]].get(mode="clip"), t.at[i[:, 0]].get(mode="fill", fill_value=-1.0),
                t.at[jnp.abs(i[:, 0]) % 5].get(mode="promise_in_bounds"), t[1:4, ::2], t[i[:2, 0] % 5, 1:3])

    return {
        "lax_scan": (scan_fn, (x,)),
        "lax_scan_reverse_unroll": (lambda v: lax.scan(lambda c, r: (c + r, c * r), jnp.ones(6), v,
                                                       reverse=True, unroll=2), (x,)),
        "lax_cond": (lambda p, v: lax.cond(p > 0, lambda u: jnp.cos(u) * 2, lambda u: u - 1, v),
                     (np.int32(3), x)),
        "lax_switch": (lambda i, v: lax.switch(i, [jnp.sin, jnp.cos, lambda u: u * u], v), (np.int32(2), x)),
        "lax_while": (lambda v: lax.while_loop(lambda s: s[1] < 5, lambda s: (s[0] * 1.1 + 1, s[1] + 1),
                                               (v, jnp.int32(0)))[0], (x,)),
        "lax_fori": (lambda v: lax.fori_loop(0, 4, lambda k, u: u + jnp.tanh(u) * k, v), (x,)),
        "lax_sort_multi": (lambda k, v: lax.sort((k, v), dimension=1, num_keys=1, is_stable=True),
                           (i32(3, 8, hi=3), f32(3, 8))),
        "lax_top_k": (lambda v: lax.top_k(v, 3), (f32(4, 9),)),
        "lax_cumulative": (lambda v: (lax.cumsum(v, 1), lax.cumprod(v, 0), lax.cummax(v, 1), lax.cummin(v, 0),
                                      lax.cumlogsumexp(v, 1), lax.cumsum(v, 1, reverse=True)), (x,)),
        "lax_gather_modes": (gather_all, (x, idx)),
        "lax_scatter_modes": (scatter_all, (x, idx, f32(5, 6))),
        "lax_dynamic_slicing": (lambda v, i: (lax.dynamic_slice(v, (i, i), (2, 3)),
                                              lax.dynamic_update_slice(v, jnp.ones((2, 2)), (i + 3, i))),
                                (x, np.int32(2))),
        "lax_reduce_window": (lambda v: (lax.reduce_window(v, -jnp.inf, lax.max, (2, 3), (1, 2), "SAME"),
                                         lax.reduce_window(v, 0.0, lax.add, (3, 3), (2, 2), ((1, 1), (0, 2)))), (x,)),
        "lax_conv_transpose": (lambda v, w: lax.conv_transpose(v, w, (2, 2), "SAME",
                                                               dimension_numbers=("NHWC", "HWIO", "NHWC")),
                               (f32(1, 4, 4, 2), f32(3, 3, 2, 3))),
        "lax_conv_dilated_grouped": (lambda v, w: lax.conv_general_dilated(v, w, (1, 1), "VALID", rhs_dilation=(2, 1),
                                                                           feature_group_count=2),
                                     (f32(1, 4, 7, 6), f32(6, 2, 2, 3))),
        "lax_rng_bit_generator": (lambda k: (lax.rng_bit_generator(k, (3, 5), algorithm=lax.RandomAlgorithm.RNG_THREE_FRY),
                                             lax.rng_bit_generator(k, (7,), algorithm=lax.RandomAlgorithm.RNG_PHILOX),
                                             lax.rng_bit_generator(k, (2, 3), dtype=np.uint8)),
                                  (np.array([1, 2, 3, 4], np.uint32),)),
        "lax_bits_and_precision": (lambda v, p: (lax.reduce_precision(v, exponent_bits=5, mantissa_bits=4),
                                                 lax.population_count(p), lax.clz(p), lax.shift_right_logical(p, 3)),
                                   (x, i32(6, lo=-100, hi=100))),
        "lax_special": (lambda v: (lax.erf_inv(jnp.tanh(v)), lax.lgamma(jnp.abs(v) + 0.1), lax.digamma(jnp.abs(v) + 0.1),
                                   lax.erfc(v * 3), lax.bessel_i1e(v), lax.igamma(jnp.abs(v) + 1, jnp.abs(v))), (x,)),
        "lax_select_n_clamp": (lambda i, v: (lax.select_n(i, v, -v, v * 2), lax.clamp(-0.3, v, 0.4)),
                               (i32(5, 6, hi=3), x)),
        "lax_map_associative_scan": (lambda v: (lax.map(lambda r: jnp.sum(r * r), v), lax.associative_scan(jnp.add, v, axis=1)),
                                     (x,)),
    }


def special_programs(jax, f32):
    sp = jax.scipy.special
    x = f32(3, 7)
    return {
        "special_erf_family": (lambda v: (sp.erf(v), sp.erfc(v * 4), sp.erfinv(jax.numpy.tanh(v)), sp.ndtri(jax.numpy.abs(v) % 1 * 0.98 + 0.01)),
                               (x,)),
        "special_gamma_family": (lambda v: (sp.gammaln(jax.numpy.abs(v) * 5 + 0.01), sp.digamma(v * 3),
                                            sp.polygamma(2, jax.numpy.abs(v) + 0.5), sp.zeta(jax.numpy.abs(v) + 1.5, 2.0),
                                            sp.gamma(v + 3)), (x,)),
        "special_bessel_logit": (lambda v: (sp.i0e(v * 10), sp.i1e(v * 10), sp.i0(v), sp.i1(v), sp.logit(jax.nn.sigmoid(v)),
                                            sp.xlogy(jax.numpy.abs(v), jax.numpy.abs(v) + 1)), (x,)),
    }


def random_programs(jax, jnp):
    k = np.array([0, 42], np.uint32)
    rbg = np.array([1, 2, 3, 4], np.uint32)

    def key(kd, impl="threefry2x32"):
        return jax.random.wrap_key_data(kd, impl=impl)
    return {
        "random_normal_uniform": (lambda kd: (jax.random.normal(key(kd), (3, 5)), jax.random.uniform(key(kd), (7,), minval=-2.0))
                                  , (k,)),
        "random_randint_bernoulli": (lambda kd: (jax.random.randint(key(kd), (4, 4), 0, 100),
                                                 jax.random.bernoulli(key(kd), 0.3, (9,))), (k,)),
        "random_split_fold_in": (lambda kd: jax.random.normal(jax.random.fold_in(jax.random.split(key(kd), 3)[1], 7), (5,)),
                                 (k,)),
        "random_categorical_gumbel": (lambda kd, lg: (jax.random.categorical(key(kd), lg, axis=-1), jax.random.gumbel(key(kd), (4,))),
                                      (k, np.log(np.array([[0.1, 0.2, 0.7], [0.5, 0.25, 0.25]], np.float32)))),
        "random_permutation_choice": (lambda kd: (jax.random.permutation(key(kd), 10), jax.random.choice(key(kd), 20, (5,), replace=False)),
                                      (k,)),
        "random_truncated_normal_exponential": (lambda kd: (jax.random.truncated_normal(key(kd), -1.0, 2.0, (6,)),
                                                            jax.random.exponential(key(kd), (6,))), (k,)),
        "random_rbg_normal": (lambda kd: jax.random.normal(key(kd, "rbg"), (3, 4)), (rbg,)),
        "random_unsafe_rbg_uniform": (lambda kd: jax.random.uniform(key(kd, "unsafe_rbg"), (11,)), (rbg,)),
    }


def linalg_programs(jax, jnp, f32):
    r = np.random.default_rng(3)
    a = r.standard_normal((4, 4)).astype(np.float32)
    spd = (a @ a.T + 4 * np.eye(4)).astype(np.float32)
    sl = jax.scipy.linalg
    return {
        "linalg_cholesky_solve": (lambda s, b: (jnp.linalg.cholesky(s), sl.cho_solve(sl.cho_factor(s), b)), (spd, f32(4, 2))),
        "linalg_qr": (lambda m: jnp.linalg.qr(m), (f32(5, 3),)),
        "linalg_eigh": (lambda s: jnp.linalg.eigh(s), (spd,)),
        "linalg_svd": (lambda m: (jnp.linalg.svd(m, full_matrices=False), jnp.linalg.norm(m, 2)), (f32(4, 3),)),
        "linalg_inv_det": (lambda m: (jnp.linalg.inv(m), jnp.linalg.det(m), jnp.linalg.slogdet(m)), (a,)),
        "linalg_solve_lu": (lambda m, b: (jnp.linalg.solve(m, b), sl.lu_factor(m)), (a, f32(4, 3))),
        "linalg_triangular": (lambda m, b: (sl.solve_triangular(m, b, lower=True), sl.solve_triangular(m, b, trans=1, unit_diagonal=True)),
                              (a + 3 * np.eye(4, dtype=np.float32), f32(4, 2))),
        "linalg_pinv_lstsq": (lambda m, b: (jnp.linalg.pinv(m), jnp.linalg.lstsq(m, b)[0]), (f32(5, 3), f32(5, 2))),
        "linalg_batched_matrix_power": (lambda m: (jnp.linalg.matrix_power(m, 3), jnp.linalg.cholesky(m @ jnp.swapaxes(m, -1, -2)
                                                                                                      + 3 * jnp.eye(3))),
                                        (f32(2, 3, 3),)),
    }


def fft_programs(jnp, f32):
    x = f32(3, 8)
    return {
        "fft_complex": (lambda v: (jnp.fft.fft(v), jnp.fft.ifft(jnp.fft.fft(v) * 2)), (x,)),
        "fft_real": (lambda v: (jnp.fft.rfft(v), jnp.fft.irfft(jnp.fft.rfft(v), n=8)), (x,)),
        "fft_2d": (lambda v: (jnp.fft.fft2(v), jnp.fft.rfftn(v), jnp.fft.fftshift(jnp.abs(jnp.fft.fft(v)))), (x,)),
        "fft_convolution": (lambda v, w: jnp.fft.irfft(jnp.fft.rfft(v, n=16) * jnp.fft.rfft(w, n=16), n=16),
                            (f32(9), f32(5))),
    }


def grad_programs(jax, jnp, lax, f32):
    def cnn(params, v):
        w1, w2, w3 = params
        h = lax.conv_general_dilated(v, w1, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
        h = jax.nn.relu(h)
        h = lax.reduce_window(h, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")     # max pool
        h = lax.conv_transpose(h, w2, (2, 2), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
        h = lax.reduce_window(h, 0.0, lax.add, (1, 2, 2, 1), (1, 1, 1, 1), "SAME") / 4        # avg pool
        return jnp.mean((h.reshape(h.shape[0], -1) @ w3) ** 2)

    def block(params, v):
        wq, wk, wv, wo, w1, w2, g = params
        n = (v - v.mean(-1, keepdims=True)) / jnp.sqrt(v.var(-1, keepdims=True) + 1e-5) * g
        q, k, vv = n @ wq, n @ wk, n @ wv
        s = jnp.where(jnp.tril(jnp.ones((v.shape[1], v.shape[1]), bool)), q @ jnp.swapaxes(k, -1, -2) / 2.0, -1e9)
        h = v + jax.nn.softmax(s) @ vv @ wo
        return jnp.sum(jax.nn.gelu(h @ w1, approximate=False) @ w2)

    cnn_params = (f32(3, 3, 2, 4) * 0.5, f32(3, 3, 4, 2) * 0.5, f32(2 * 6 * 6, 3) * 0.1)
    blk_params = tuple(f32(4, 4) * 0.5 for _ in range(4)) + (f32(4, 8) * 0.5, f32(8, 4) * 0.5, f32(4))
    return {
        "grad_cnn": (lambda p, v: jax.grad(cnn)(p, v), (cnn_params, f32(2, 6, 6, 2))),
        "grad_cnn_input": (lambda p, v: jax.value_and_grad(cnn, argnums=1)(p, v), (cnn_params, f32(1, 6, 6, 2))),
        "grad_transformer_block": (lambda p, v: jax.grad(block)(p, v), (blk_params, f32(2, 5, 4))),
        "grad_maxpool_only": (lambda v: jax.grad(lambda u: lax.reduce_window(u, -jnp.inf, lax.max, (2, 2), (2, 2),
                                                                           ((0, 1), (1, 0))).sum())(v), (f32(5, 5),)),
    }


def collective_programs(jax, jnp):
    from jax.sharding import PartitionSpec as P
    mesh = jax.make_mesh((1,), ("x",), axis_types=(jax.sharding.AxisType.Auto,))

    def f(v):
        return jax.shard_map(lambda u: (jax.lax.psum(u, "x"), jax.lax.all_gather(u, "x"),
                                        jax.lax.psum_scatter(u, "x", tiled=True), jax.lax.ppermute(u, "x", [(0, 0)]),
                                        jax.lax.all_to_all(u, "x", 0, 0, tiled=True), jax.lax.pmax(u, "x")),
                             mesh=mesh, in_specs=P("x"), out_specs=(P("x"),) * 6)(v)
    return {"collectives_one_device": (f, (np.arange(12, dtype=np.float32).reshape(4, 3),))}


def functions():
    import jax
    import jax.numpy as jnp
    from jax import lax
    _, f32, i32 = _data()
    progs = {}
    progs.update(numpy_programs(jnp, f32, i32))
    progs.update(nn_programs(jax, jnp, f32, i32))
    progs.update(lax_programs(jax, jnp, lax, f32, i32))
    progs.update(special_programs(jax, f32))
    progs.update(random_programs(jax, jnp))
    progs.update(linalg_programs(jax, jnp, f32))
    progs.update(fft_programs(jnp, f32))
    progs.update(grad_programs(jax, jnp, lax, f32))
    progs.update(collective_programs(jax, jnp))
    return progs


def write(name: str, f, args) -> None:
    import jax
    lowered = jax.jit(f).lower(*args)
    (OUT / f"{name}.hlo").write_text(hlo_text(lowered))
    (OUT / f"{name}.stablehlo.mlir").write_text(lowered.as_text())
    outs = jax.tree_util.tree_leaves(jax.jit(f)(*args))
    flat = jax.tree_util.tree_leaves(args)
    np.savez_compressed(OUT / f"{name}.npz", **{f"arg{k}": np.asarray(a) for k, a in enumerate(flat)},
                        **{f"out{k}": np.asarray(o) for k, o in enumerate(outs)})
    print(name, [np.asarray(o).shape for o in outs])


def main(names=None) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    for name, (f, args) in functions().items():
        if not names or name in names:
            write(name, f, args)


if __name__ == "__main__":
    main(sys.argv[1:])
