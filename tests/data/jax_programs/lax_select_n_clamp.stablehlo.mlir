module @jit__lambda attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<5x6xi32>, %arg1: tensor<5x6xf32>) -> (tensor<5x6xf32> {jax.result_info = "result[0]"}, tensor<5x6xf32> {jax.result_info = "result[1]"}) {
    %0 = stablehlo.negate %arg1 : tensor<5x6xf32>
    %cst = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    %1 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<5x6xf32>
    %2 = stablehlo.multiply %arg1, %1 : tensor<5x6xf32>
    %c = stablehlo.constant dense<1> : tensor<i32>
    %3 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i32>) -> tensor<5x6xi32>
    %4 = stablehlo.compare LT, %arg0, %3, SIGNED : (tensor<5x6xi32>, tensor<5x6xi32>) -> tensor<5x6xi1>
    %c_0 = stablehlo.constant dense<2> : tensor<i32>
    %5 = stablehlo.broadcast_in_dim %c_0, dims = [] : (tensor<i32>) -> tensor<5x6xi32>
    %6 = stablehlo.compare LT, %arg0, %5, SIGNED : (tensor<5x6xi32>, tensor<5x6xi32>) -> tensor<5x6xi1>
    %7 = stablehlo.select %6, %0, %2 : tensor<5x6xi1>, tensor<5x6xf32>
    %8 = stablehlo.select %4, %arg1, %7 : tensor<5x6xi1>, tensor<5x6xf32>
    %cst_1 = stablehlo.constant dense<-3.000000e-01> : tensor<f32>
    %cst_2 = stablehlo.constant dense<4.000000e-01> : tensor<f32>
    %9 = stablehlo.broadcast_in_dim %cst_1, dims = [] : (tensor<f32>) -> tensor<5x6xf32>
    %10 = stablehlo.broadcast_in_dim %cst_2, dims = [] : (tensor<f32>) -> tensor<5x6xf32>
    %11 = stablehlo.clamp %9, %arg1, %10 : tensor<5x6xf32>
    return %8, %11 : tensor<5x6xf32>, tensor<5x6xf32>
  }
}
