module @jit__lambda attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<2x3x4xf32>, %arg1: tensor<2x4x5xf32>, %arg2: tensor<5x2xf32>) -> (tensor<2x3x2xf32> {jax.result_info = "result"}) {
    %0 = stablehlo.dot_general %arg2, %arg1, contracting_dims = [0] x [2], precision = [DEFAULT, DEFAULT] : (tensor<5x2xf32>, tensor<2x4x5xf32>) -> tensor<2x2x4xf32>
    %1 = stablehlo.dot_general %arg0, %0, batching_dims = [0] x [1], contracting_dims = [2] x [2], precision = [DEFAULT, DEFAULT] : (tensor<2x3x4xf32>, tensor<2x2x4xf32>) -> tensor<2x3x2xf32>
    return %1 : tensor<2x3x2xf32>
  }
}
