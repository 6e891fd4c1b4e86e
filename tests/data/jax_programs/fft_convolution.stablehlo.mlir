module @jit__lambda attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<9xf32>, %arg1: tensor<5xf32>) -> (tensor<16xf32> {jax.result_info = "result"}) {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %0 = call @_pad(%arg0, %c) : (tensor<9xf32>, tensor<i32>) -> tensor<16xf32>
    %1 = call @fft(%0) : (tensor<16xf32>) -> tensor<9xcomplex<f32>>
    %c_0 = stablehlo.constant dense<0> : tensor<i32>
    %2 = call @_pad_0(%arg1, %c_0) : (tensor<5xf32>, tensor<i32>) -> tensor<16xf32>
    %3 = call @fft(%2) : (tensor<16xf32>) -> tensor<9xcomplex<f32>>
    %4 = stablehlo.multiply %1, %3 : tensor<9xcomplex<f32>>
    %c_1 = stablehlo.constant dense<0> : tensor<i32>
    %5 = call @_pad_1(%4, %c_1) : (tensor<9xcomplex<f32>>, tensor<i32>) -> tensor<9xcomplex<f32>>
    %6 = call @fft_2(%5) : (tensor<9xcomplex<f32>>) -> tensor<16xf32>
    return %6 : tensor<16xf32>
  }
  func.func private @_pad(%arg0: tensor<9xf32>, %arg1: tensor<i32>) -> tensor<16xf32> {
    %0 = stablehlo.convert %arg1 : (tensor<i32>) -> tensor<f32>
    %1 = stablehlo.pad %arg0, %0, low = [0], high = [7], interior = [0] : (tensor<9xf32>, tensor<f32>) -> tensor<16xf32>
    return %1 : tensor<16xf32>
  }
  func.func private @fft(%arg0: tensor<16xf32>) -> tensor<9xcomplex<f32>> {
    %0 = stablehlo.fft %arg0, type = RFFT, length = [16] : (tensor<16xf32>) -> tensor<9xcomplex<f32>>
    return %0 : tensor<9xcomplex<f32>>
  }
  func.func private @_pad_0(%arg0: tensor<5xf32>, %arg1: tensor<i32>) -> tensor<16xf32> {
    %0 = stablehlo.convert %arg1 : (tensor<i32>) -> tensor<f32>
    %1 = stablehlo.pad %arg0, %0, low = [0], high = [11], interior = [0] : (tensor<5xf32>, tensor<f32>) -> tensor<16xf32>
    return %1 : tensor<16xf32>
  }
  func.func private @_pad_1(%arg0: tensor<9xcomplex<f32>>, %arg1: tensor<i32>) -> tensor<9xcomplex<f32>> {
    %0 = stablehlo.convert %arg1 : (tensor<i32>) -> tensor<complex<f32>>
    %1 = stablehlo.pad %arg0, %0, low = [0], high = [0], interior = [0] : (tensor<9xcomplex<f32>>, tensor<complex<f32>>) -> tensor<9xcomplex<f32>>
    return %1 : tensor<9xcomplex<f32>>
  }
  func.func private @fft_2(%arg0: tensor<9xcomplex<f32>>) -> tensor<16xf32> {
    %0 = stablehlo.fft %arg0, type = IRFFT, length = [16] : (tensor<9xcomplex<f32>>) -> tensor<16xf32>
    return %0 : tensor<16xf32>
  }
}
