module @jit__lambda attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<5x6xf32>) -> (tensor<5x6xf32> {jax.result_info = "result"}) {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %0:2 = stablehlo.while(%iterArg = %arg0, %iterArg_0 = %c) : tensor<5x6xf32>, tensor<i32>
    cond {
      %c_1 = stablehlo.constant dense<5> : tensor<i32>
      %1 = stablehlo.compare LT, %iterArg_0, %c_1, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %1 : tensor<i1>
    } do {
      %cst = stablehlo.constant dense<1.100000e+00> : tensor<f32>
      %1 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<5x6xf32>
      %2 = stablehlo.multiply %iterArg, %1 : tensor<5x6xf32>
      %cst_1 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
      %3 = stablehlo.broadcast_in_dim %cst_1, dims = [] : (tensor<f32>) -> tensor<5x6xf32>
      %4 = stablehlo.add %2, %3 : tensor<5x6xf32>
      %c_2 = stablehlo.constant dense<1> : tensor<i32>
      %5 = stablehlo.add %iterArg_0, %c_2 : tensor<i32>
      stablehlo.return %4, %5 : tensor<5x6xf32>, tensor<i32>
    }
    return %0#0 : tensor<5x6xf32>
  }
}
