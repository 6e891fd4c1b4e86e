module @jit__lambda attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<4x9xf32>) -> (tensor<4x3xf32> {jax.result_info = "result[0]"}, tensor<4x3xi32> {jax.result_info = "result[1]"}) {
    %values, %indices = chlo.top_k(%arg0, k = 3) : tensor<4x9xf32> -> (tensor<4x3xf32>, tensor<4x3xi32>)
    return %values, %indices : tensor<4x3xf32>, tensor<4x3xi32>
  }
}
