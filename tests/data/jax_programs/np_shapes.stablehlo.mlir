module @jit__lambda attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<3x5xf32>) -> (tensor<6x5xf32> {jax.result_info = "result[0]"}, tensor<3x5x2xf32> {jax.result_info = "result[1]"}, tensor<3x5xf32> {jax.result_info = "result[2]"}, tensor<2x5xf32> {jax.result_info = "result[3]"}, tensor<3x5xf32> {jax.result_info = "result[4]"}, tensor<6x5xf32> {jax.result_info = "result[5]"}) {
    %0 = stablehlo.reverse %arg0, dims = [0] : tensor<3x5xf32>
    %1 = stablehlo.concatenate %arg0, %0, dim = 0 : (tensor<3x5xf32>, tensor<3x5xf32>) -> tensor<6x5xf32>
    %2 = stablehlo.negate %arg0 : tensor<3x5xf32>
    %3 = stablehlo.broadcast_in_dim %arg0, dims = [0, 1] : (tensor<3x5xf32>) -> tensor<3x5x1xf32>
    %4 = stablehlo.broadcast_in_dim %2, dims = [0, 1] : (tensor<3x5xf32>) -> tensor<3x5x1xf32>
    %5 = stablehlo.concatenate %3, %4, dim = 2 : (tensor<3x5x1xf32>, tensor<3x5x1xf32>) -> tensor<3x5x2xf32>
    %6 = call @_roll_static(%arg0) : (tensor<3x5xf32>) -> tensor<3x5xf32>
    %7 = stablehlo.slice %arg0 [0:1, 0:5] : (tensor<3x5xf32>) -> tensor<1x5xf32>
    %8 = stablehlo.reshape %7 : (tensor<1x5xf32>) -> tensor<1x1x1x5xf32>
    %9 = stablehlo.broadcast_in_dim %8, dims = [0, 1, 2, 3] : (tensor<1x1x1x5xf32>) -> tensor<2x1x1x5xf32>
    %10 = stablehlo.reshape %9 : (tensor<2x1x1x5xf32>) -> tensor<2x5xf32>
    %11 = call @_flip(%arg0) : (tensor<3x5xf32>) -> tensor<3x5xf32>
    %12 = stablehlo.broadcast_in_dim %arg0, dims = [0, 2] : (tensor<3x5xf32>) -> tensor<3x2x5xf32>
    %13 = stablehlo.reshape %12 : (tensor<3x2x5xf32>) -> tensor<6x5xf32>
    return %1, %5, %6, %10, %11, %13 : tensor<6x5xf32>, tensor<3x5x2xf32>, tensor<3x5xf32>, tensor<2x5xf32>, tensor<3x5xf32>, tensor<6x5xf32>
  }
  func.func private @_roll_static(%arg0: tensor<3x5xf32>) -> tensor<3x5xf32> {
    %0 = stablehlo.slice %arg0 [0:3, 3:5] : (tensor<3x5xf32>) -> tensor<3x2xf32>
    %1 = stablehlo.slice %arg0 [0:3, 0:3] : (tensor<3x5xf32>) -> tensor<3x3xf32>
    %2 = stablehlo.concatenate %0, %1, dim = 1 : (tensor<3x2xf32>, tensor<3x3xf32>) -> tensor<3x5xf32>
    return %2 : tensor<3x5xf32>
  }
  func.func private @_flip(%arg0: tensor<3x5xf32>) -> tensor<3x5xf32> {
    %0 = stablehlo.reverse %arg0, dims = [1] : tensor<3x5xf32>
    return %0 : tensor<3x5xf32>
  }
}
