module @jit__lambda attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<3x8xf32>) -> (tensor<3x8xcomplex<f32>> {jax.result_info = "result[0]"}, tensor<3x8xcomplex<f32>> {jax.result_info = "result[1]"}) {
    %0 = call @fft(%arg0) : (tensor<3x8xf32>) -> tensor<3x8xcomplex<f32>>
    %1 = call @fft(%arg0) : (tensor<3x8xf32>) -> tensor<3x8xcomplex<f32>>
    %cst = stablehlo.constant dense<(2.000000e+00,0.000000e+00)> : tensor<complex<f32>>
    %2 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<complex<f32>>) -> tensor<3x8xcomplex<f32>>
    %3 = stablehlo.multiply %1, %2 : tensor<3x8xcomplex<f32>>
    %4 = call @fft_0(%3) : (tensor<3x8xcomplex<f32>>) -> tensor<3x8xcomplex<f32>>
    return %0, %4 : tensor<3x8xcomplex<f32>>, tensor<3x8xcomplex<f32>>
  }
  func.func private @fft(%arg0: tensor<3x8xf32>) -> tensor<3x8xcomplex<f32>> {
    %0 = stablehlo.convert %arg0 : (tensor<3x8xf32>) -> tensor<3x8xcomplex<f32>>
    %1 = stablehlo.fft %0, type = FFT, length = [8] : (tensor<3x8xcomplex<f32>>) -> tensor<3x8xcomplex<f32>>
    return %1 : tensor<3x8xcomplex<f32>>
  }
  func.func private @fft_0(%arg0: tensor<3x8xcomplex<f32>>) -> tensor<3x8xcomplex<f32>> {
    %0 = stablehlo.fft %arg0, type = IFFT, length = [8] : (tensor<3x8xcomplex<f32>>) -> tensor<3x8xcomplex<f32>>
    return %0 : tensor<3x8xcomplex<f32>>
  }
}
