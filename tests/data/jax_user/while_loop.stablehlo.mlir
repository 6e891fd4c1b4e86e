module @jit__lambda attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<8xf32>, %arg1: tensor<f32>) -> (tensor<f32> {jax.result_info = "result[0]"}, tensor<8xf32> {jax.result_info = "result[1]"}) {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0:3 = stablehlo.while(%iterArg = %arg1, %iterArg_0 = %cst, %iterArg_1 = %arg0) : tensor<f32>, tensor<f32>, tensor<8xf32>
    cond {
      %cst_2 = stablehlo.constant dense<5.000000e+01> : tensor<f32>
      %1 = stablehlo.compare LT, %iterArg_0, %cst_2, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      stablehlo.return %1 : tensor<i1>
    } do {
      %1 = stablehlo.add %iterArg_0, %iterArg : tensor<f32>
      %cst_2 = stablehlo.constant dense<1.500000e+00> : tensor<f32>
      %2 = stablehlo.broadcast_in_dim %cst_2, dims = [] : (tensor<f32>) -> tensor<8xf32>
      %3 = stablehlo.multiply %iterArg_1, %2 : tensor<8xf32>
      stablehlo.return %iterArg, %1, %3 : tensor<f32>, tensor<f32>, tensor<8xf32>
    }
    return %0#1, %0#2 : tensor<f32>, tensor<8xf32>
  }
}
