module @jit__lambda attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<3x8xf32>) -> (tensor<3x8xcomplex<f32>> {jax.result_info = "result[0]"}, tensor<3x5xcomplex<f32>> {jax.result_info = "result[1]"}, tensor<3x8xf32> {jax.result_info = "result[2]"}) {
    %0 = call @fft(%arg0) : (tensor<3x8xf32>) -> tensor<3x8xcomplex<f32>>
    %1 = call @fft_0(%arg0) : (tensor<3x8xf32>) -> tensor<3x5xcomplex<f32>>
    %2 = call @fft_1(%arg0) : (tensor<3x8xf32>) -> tensor<3x8xcomplex<f32>>
    %3 = stablehlo.abs %2 : (tensor<3x8xcomplex<f32>>) -> tensor<3x8xf32>
    %4 = call @_roll_static(%3) : (tensor<3x8xf32>) -> tensor<3x8xf32>
    return %0, %1, %4 : tensor<3x8xcomplex<f32>>, tensor<3x5xcomplex<f32>>, tensor<3x8xf32>
  }
  func.func private @fft(%arg0: tensor<3x8xf32>) -> tensor<3x8xcomplex<f32>> {
    %0 = stablehlo.convert %arg0 : (tensor<3x8xf32>) -> tensor<3x8xcomplex<f32>>
    %1 = stablehlo.fft %0, type = FFT, length = [3, 8] : (tensor<3x8xcomplex<f32>>) -> tensor<3x8xcomplex<f32>>
    return %1 : tensor<3x8xcomplex<f32>>
  }
  func.func private @fft_0(%arg0: tensor<3x8xf32>) -> tensor<3x5xcomplex<f32>> {
    %0 = stablehlo.fft %arg0, type = RFFT, length = [3, 8] : (tensor<3x8xf32>) -> tensor<3x5xcomplex<f32>>
    return %0 : tensor<3x5xcomplex<f32>>
  }
  func.func private @fft_1(%arg0: tensor<3x8xf32>) -> tensor<3x8xcomplex<f32>> {
    %0 = stablehlo.convert %arg0 : (tensor<3x8xf32>) -> tensor<3x8xcomplex<f32>>
    %1 = stablehlo.fft %0, type = FFT, length = [8] : (tensor<3x8xcomplex<f32>>) -> tensor<3x8xcomplex<f32>>
    return %1 : tensor<3x8xcomplex<f32>>
  }
  func.func private @_roll_static(%arg0: tensor<3x8xf32>) -> tensor<3x8xf32> {
    %0 = stablehlo.slice %arg0 [2:3, 0:8] : (tensor<3x8xf32>) -> tensor<1x8xf32>
    %1 = stablehlo.slice %arg0 [0:2, 0:8] : (tensor<3x8xf32>) -> tensor<2x8xf32>
    %2 = stablehlo.concatenate %0, %1, dim = 0 : (tensor<1x8xf32>, tensor<2x8xf32>) -> tensor<3x8xf32>
    %3 = stablehlo.slice %2 [0:3, 4:8] : (tensor<3x8xf32>) -> tensor<3x4xf32>
    %4 = stablehlo.slice %2 [0:3, 0:4] : (tensor<3x8xf32>) -> tensor<3x4xf32>
    %5 = stablehlo.concatenate %3, %4, dim = 1 : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x8xf32>
    return %5 : tensor<3x8xf32>
  }
}
