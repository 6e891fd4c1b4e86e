module @jit__lambda attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<5x8xf32>) -> (tensor<5x8xf32> {jax.result_info = "result[0]"}, tensor<5x8xf32> {jax.result_info = "result[1]"}, tensor<5x8xf32> {jax.result_info = "result[2]"}, tensor<5x8xf32> {jax.result_info = "result[3]"}, tensor<5x8xf32> {jax.result_info = "result[4]"}) {
    %0 = chlo.sinh %arg0 : tensor<5x8xf32> -> tensor<5x8xf32>
    %1 = chlo.cosh %arg0 : tensor<5x8xf32> -> tensor<5x8xf32>
    %2 = chlo.asinh %arg0 : tensor<5x8xf32> -> tensor<5x8xf32>
    %3 = stablehlo.abs %arg0 : tensor<5x8xf32>
    %cst = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %4 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<5x8xf32>
    %5 = stablehlo.add %4, %3 : tensor<5x8xf32>
    %6 = call @arccosh(%5) : (tensor<5x8xf32>) -> tensor<5x8xf32>
    %7 = stablehlo.tanh %arg0 : tensor<5x8xf32>
    %cst_0 = stablehlo.constant dense<0.899999976> : tensor<f32>
    %8 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<5x8xf32>
    %9 = stablehlo.multiply %7, %8 : tensor<5x8xf32>
    %10 = chlo.atanh %9 : tensor<5x8xf32> -> tensor<5x8xf32>
    return %0, %1, %2, %6, %10 : tensor<5x8xf32>, tensor<5x8xf32>, tensor<5x8xf32>, tensor<5x8xf32>, tensor<5x8xf32>
  }
  func.func private @arccosh(%arg0: tensor<5x8xf32>) -> tensor<5x8xf32> {
    %0 = chlo.acosh %arg0 : tensor<5x8xf32> -> tensor<5x8xf32>
    return %0 : tensor<5x8xf32>
  }
}
