module @jit__lambda attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<5x6xf32>, %arg1: tensor<6xi32>) -> (tensor<5x6xf32> {jax.result_info = "result[0]"}, tensor<6xi32> {jax.result_info = "result[1]"}, tensor<6xi32> {jax.result_info = "result[2]"}, tensor<6xi32> {jax.result_info = "result[3]"}) {
    %0 = stablehlo.reduce_precision %arg0, format = e5m4 : tensor<5x6xf32>
    %1 = stablehlo.popcnt %arg1 : tensor<6xi32>
    %2 = stablehlo.count_leading_zeros %arg1 : tensor<6xi32>
    %c = stablehlo.constant dense<3> : tensor<i32>
    %3 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i32>) -> tensor<6xi32>
    %4 = stablehlo.shift_right_logical %arg1, %3 : tensor<6xi32>
    return %0, %1, %2, %4 : tensor<5x6xf32>, tensor<6xi32>, tensor<6xi32>, tensor<6xi32>
  }
}
