module @jit__lambda attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<8x40xi32>, %arg1: tensor<8x40xf32>, %arg2: tensor<8x40xf32>) -> (tensor<8x40xi32> {jax.result_info = "result[0]"}, tensor<8x40xf32> {jax.result_info = "result[1]"}, tensor<8x40xf32> {jax.result_info = "result[2]"}) {
    %0:3 = "stablehlo.sort"(%arg0, %arg1, %arg2) <{dimension = 1 : i64, is_stable = true}> ({
    ^bb0(%arg3: tensor<i32>, %arg4: tensor<i32>, %arg5: tensor<f32>, %arg6: tensor<f32>, %arg7: tensor<f32>, %arg8: tensor<f32>):
      %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
      %1 = stablehlo.compare EQ, %arg5, %cst, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %cst_0 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
      %2 = stablehlo.select %1, %cst_0, %arg5 : tensor<i1>, tensor<f32>
      %3 = stablehlo.compare NE, %arg5, %arg5, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %cst_1 = stablehlo.constant dense<0x7FC00000> : tensor<f32>
      %4 = stablehlo.select %3, %cst_1, %2 : tensor<i1>, tensor<f32>
      %cst_2 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
      %5 = stablehlo.compare EQ, %arg6, %cst_2, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %cst_3 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
      %6 = stablehlo.select %5, %cst_3, %arg6 : tensor<i1>, tensor<f32>
      %7 = stablehlo.compare NE, %arg6, %arg6, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %cst_4 = stablehlo.constant dense<0x7FC00000> : tensor<f32>
      %8 = stablehlo.select %7, %cst_4, %6 : tensor<i1>, tensor<f32>
      %9 = stablehlo.compare LT, %4, %8, TOTALORDER : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %10 = stablehlo.compare LT, %arg3, %arg4, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      %11 = stablehlo.compare EQ, %arg3, %arg4, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      %12 = stablehlo.and %11, %9 : tensor<i1>
      %13 = stablehlo.or %10, %12 : tensor<i1>
      stablehlo.return %13 : tensor<i1>
    }) : (tensor<8x40xi32>, tensor<8x40xf32>, tensor<8x40xf32>) -> (tensor<8x40xi32>, tensor<8x40xf32>, tensor<8x40xf32>)
    return %0#0, %0#1, %0#2 : tensor<8x40xi32>, tensor<8x40xf32>, tensor<8x40xf32>
  }
}
