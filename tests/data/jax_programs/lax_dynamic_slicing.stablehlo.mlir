module @jit__lambda attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<5x6xf32>, %arg1: tensor<i32>) -> (tensor<2x3xf32> {jax.result_info = "result[0]"}, tensor<5x6xf32> {jax.result_info = "result[1]"}) {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %0 = stablehlo.compare LT, %arg1, %c, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %c_0 = stablehlo.constant dense<5> : tensor<i32>
    %1 = stablehlo.add %arg1, %c_0 : tensor<i32>
    %2 = stablehlo.select %0, %1, %arg1 : tensor<i1>, tensor<i32>
    %c_1 = stablehlo.constant dense<0> : tensor<i32>
    %3 = stablehlo.compare LT, %arg1, %c_1, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %c_2 = stablehlo.constant dense<6> : tensor<i32>
    %4 = stablehlo.add %arg1, %c_2 : tensor<i32>
    %5 = stablehlo.select %3, %4, %arg1 : tensor<i1>, tensor<i32>
    %6 = stablehlo.dynamic_slice %arg0, %2, %5, sizes = [2, 3] : (tensor<5x6xf32>, tensor<i32>, tensor<i32>) -> tensor<2x3xf32>
    %cst = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %7 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<2x2xf32>
    %c_3 = stablehlo.constant dense<3> : tensor<i32>
    %8 = stablehlo.add %arg1, %c_3 : tensor<i32>
    %c_4 = stablehlo.constant dense<0> : tensor<i32>
    %9 = stablehlo.compare LT, %8, %c_4, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %c_5 = stablehlo.constant dense<5> : tensor<i32>
    %10 = stablehlo.add %8, %c_5 : tensor<i32>
    %11 = stablehlo.select %9, %10, %8 : tensor<i1>, tensor<i32>
    %c_6 = stablehlo.constant dense<0> : tensor<i32>
    %12 = stablehlo.compare LT, %arg1, %c_6, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %c_7 = stablehlo.constant dense<6> : tensor<i32>
    %13 = stablehlo.add %arg1, %c_7 : tensor<i32>
    %14 = stablehlo.select %12, %13, %arg1 : tensor<i1>, tensor<i32>
    %15 = stablehlo.dynamic_update_slice %arg0, %7, %11, %14 : (tensor<5x6xf32>, tensor<2x2xf32>, tensor<i32>, tensor<i32>) -> tensor<5x6xf32>
    return %6, %15 : tensor<2x3xf32>, tensor<5x6xf32>
  }
}
