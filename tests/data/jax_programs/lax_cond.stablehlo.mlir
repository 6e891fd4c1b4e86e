module @jit__lambda attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<i32>, %arg1: tensor<5x6xf32>) -> (tensor<5x6xf32> {jax.result_info = "result"}) {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %0 = stablehlo.compare GT, %arg0, %c, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %1 = stablehlo.convert %0 : (tensor<i1>) -> tensor<i32>
    %2 = "stablehlo.case"(%1) ({
      %cst = stablehlo.constant dense<1.000000e+00> : tensor<f32>
      %3 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<5x6xf32>
      %4 = stablehlo.subtract %arg1, %3 : tensor<5x6xf32>
      stablehlo.return %4 : tensor<5x6xf32>
    }, {
      %3 = stablehlo.cosine %arg1 : tensor<5x6xf32>
      %cst = stablehlo.constant dense<2.000000e+00> : tensor<f32>
      %4 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<5x6xf32>
      %5 = stablehlo.multiply %3, %4 : tensor<5x6xf32>
      stablehlo.return %5 : tensor<5x6xf32>
    }) : (tensor<i32>) -> tensor<5x6xf32>
    return %2 : tensor<5x6xf32>
  }
}
