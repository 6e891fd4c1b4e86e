"""Branch-free float32 exp/log/tanh in C that gcc vectorizes inside ``omp simd`` loops
(glibc's expf/logf/tanhf are scalar calls). Cephes-style range reduction and minimax
polynomials; within 2 ulp of the correctly rounded result on the tested range, with IEEE
special values (NaN, +-inf, 0) handled by selects."""

VMATH_C = r"""
HL_INLINE float hl_ldexp_i(float p, int32_t n) {
  int32_t bits; memcpy(&bits, &p, 4); bits += n << 23; float r; memcpy(&r, &bits, 4); return r;
}
HL_INLINE float hl_expf_poly(float x, float n) {  /* e^(x - n ln 2), |x - n ln 2| <= ln(2)/2 */
  float r = x - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  float p = 1.9875691500E-4f;
  p = p * r + 1.3981999507E-3f;
  p = p * r + 8.3334519073E-3f;
  p = p * r + 4.1665795894E-2f;
  p = p * r + 1.6666665459E-1f;
  p = p * r + 5.0000001201E-1f;
  return p * r * r + r + 1.0f;
}
HL_INLINE float hl_expf_in(float x) {   /* e^x for x in [-87, 88] (a normal result): no range checks */
  float n = rintf(x * 1.44269504088896341f);
  return hl_ldexp_i(hl_expf_poly(x, n), (int32_t)n);
}
HL_INLINE float hl_expf(float x) {
  float xc = x > 88.72283935546875f ? 88.72283935546875f : (x < -103.972084045410f ? -103.972084045410f : x);
  float n = rintf(xc * 1.44269504088896341f);
  float p = hl_expf_poly(xc, n);
  int32_t ni = (int32_t)n, n1 = ni >> 1;   /* 2^n as 2^n1 2^(n - n1): subnormal results, n = 128 */
  float res = hl_ldexp_i(p, n1) * hl_ldexp_i(1.0f, ni - n1);
  res = x > 88.72283935546875f ? INFINITY : res;
  res = x < -103.972084045410f ? 0.0f : res;
  return x != x ? x : res;
}
HL_INLINE float hl_logf(float x) {
  int sub = x > 0.0f && x < 1.17549435e-38f;   /* subnormal: scale into the normal range */
  float xs = sub ? x * 8388608.0f : x;
  int32_t bits; memcpy(&bits, &xs, 4);
  int32_t e = ((bits >> 23) & 0xff) - 126 - (sub ? 23 : 0);
  int32_t mb = (bits & 0x007fffff) | 0x3f000000;
  float m; memcpy(&m, &mb, 4);               /* x = m * 2^e, m in [0.5, 1) */
  int small = m < 0.707106781186547524f;
  float ef = (float)(small ? e - 1 : e);
  m = small ? m + m - 1.0f : m - 1.0f;
  float z = m * m;
  float y = 7.0376836292E-2f;
  y = y * m - 1.1514610310E-1f;
  y = y * m + 1.1676998740E-1f;
  y = y * m - 1.2420140846E-1f;
  y = y * m + 1.4249322787E-1f;
  y = y * m - 1.6668057665E-1f;
  y = y * m + 2.0000714765E-1f;
  y = y * m - 2.4999993993E-1f;
  y = y * m + 3.3333331174E-1f;
  y = y * m * z;
  y += -2.12194440e-4f * ef;
  y += -0.5f * z;
  float r = m + y + 0.693359375f * ef;
  r = x == 0.0f ? -INFINITY : r;
  r = x < 0.0f ? NAN : r;
  r = x == INFINITY ? INFINITY : r;
  return x != x ? x : r;
}
HL_INLINE float hl_tanhf(float x) {
  float a = fabsf(x);
  float z = x * x;
  float p = -5.70498872745E-3f;
  p = p * z + 2.06390887954E-2f;
  p = p * z - 5.37397155531E-2f;
  p = p * z + 1.33314422036E-1f;
  p = p * z - 3.33332819422E-1f;
  float small = x + x * z * p;
  float e = hl_expf_in(2.0f * (a > 9.0f ? 9.0f : a));
  float big = 1.0f - 2.0f / (e + 1.0f);
  big = copysignf(big, x);
  float r = a < 0.625f ? small : big;
  r = a > 9.01f ? copysignf(1.0f, x) : r;   /* |tanh| rounds to 1 from about 9.01 on */
  r = x == 0.0f ? x : r;                    /* tanh(-0) = -0 */
  return x != x ? x : r;
}
"""
