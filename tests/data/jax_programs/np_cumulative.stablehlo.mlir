module @jit__lambda attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<4x6xf32>) -> (tensor<4x6xf32> {jax.result_info = "result[0]"}, tensor<4x6xf32> {jax.result_info = "result[1]"}, tensor<4x5xf32> {jax.result_info = "result[2]"}) {
    %0 = call @cumsum(%arg0) : (tensor<4x6xf32>) -> tensor<4x6xf32>
    %cst = stablehlo.constant dense<5.000000e-01> : tensor<f32>
    %1 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<4x6xf32>
    %2 = stablehlo.multiply %arg0, %1 : tensor<4x6xf32>
    %cst_0 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %3 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<4x6xf32>
    %4 = stablehlo.add %2, %3 : tensor<4x6xf32>
    %5 = call @cumprod(%4) : (tensor<4x6xf32>) -> tensor<4x6xf32>
    %6 = call @diff(%arg0) : (tensor<4x6xf32>) -> tensor<4x5xf32>
    return %0, %5, %6 : tensor<4x6xf32>, tensor<4x6xf32>, tensor<4x5xf32>
  }
  func.func private @cumsum(%arg0: tensor<4x6xf32>) -> tensor<4x6xf32> {
    %0 = call @cumsum_0(%arg0) : (tensor<4x6xf32>) -> tensor<4x6xf32>
    return %0 : tensor<4x6xf32>
  }
  func.func private @cumsum_0(%arg0: tensor<4x6xf32>) -> tensor<4x6xf32> {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<f32>
    %1 = "stablehlo.reduce_window"(%arg0, %0) <{base_dilations = array<i64: 1, 1>, padding = dense<[[0, 0], [5, 0]]> : tensor<2x2xi64>, window_dilations = array<i64: 1, 1>, window_dimensions = array<i64: 1, 6>, window_strides = array<i64: 1, 1>}> ({
    ^bb0(%arg1: tensor<f32>, %arg2: tensor<f32>):
      %2 = stablehlo.add %arg1, %arg2 : tensor<f32>
      stablehlo.return %2 : tensor<f32>
    }) : (tensor<4x6xf32>, tensor<f32>) -> tensor<4x6xf32>
    return %1 : tensor<4x6xf32>
  }
  func.func private @cumprod(%arg0: tensor<4x6xf32>) -> tensor<4x6xf32> {
    %0 = call @cumprod_1(%arg0) : (tensor<4x6xf32>) -> tensor<4x6xf32>
    return %0 : tensor<4x6xf32>
  }
  func.func private @cumprod_1(%arg0: tensor<4x6xf32>) -> tensor<4x6xf32> {
    %cst = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %0 = "stablehlo.reduce_window"(%arg0, %cst) <{base_dilations = array<i64: 1, 1>, padding = dense<[[3, 0], [0, 0]]> : tensor<2x2xi64>, window_dilations = array<i64: 1, 1>, window_dimensions = array<i64: 4, 1>, window_strides = array<i64: 1, 1>}> ({
    ^bb0(%arg1: tensor<f32>, %arg2: tensor<f32>):
      %1 = stablehlo.multiply %arg1, %arg2 : tensor<f32>
      stablehlo.return %1 : tensor<f32>
    }) : (tensor<4x6xf32>, tensor<f32>) -> tensor<4x6xf32>
    return %0 : tensor<4x6xf32>
  }
  func.func private @diff(%arg0: tensor<4x6xf32>) -> tensor<4x5xf32> {
    %0 = stablehlo.slice %arg0 [0:4, 1:6] : (tensor<4x6xf32>) -> tensor<4x5xf32>
    %1 = stablehlo.slice %arg0 [0:4, 0:5] : (tensor<4x6xf32>) -> tensor<4x5xf32>
    %2 = stablehlo.subtract %0, %1 : tensor<4x5xf32>
    return %2 : tensor<4x5xf32>
  }
}
