module @jit__lambda attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<6x9xf32>) -> (tensor<9xf32> {jax.result_info = "result[0]"}, tensor<6xf32> {jax.result_info = "result[1]"}, tensor<f32> {jax.result_info = "result[2]"}, tensor<6xi32> {jax.result_info = "result[3]"}, tensor<9xf32> {jax.result_info = "result[4]"}, tensor<i1> {jax.result_info = "result[5]"}, tensor<6xf32> {jax.result_info = "result[6]"}) {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.reduce(%arg0 init: %cst) applies stablehlo.add across dimensions = [0] : (tensor<6x9xf32>, tensor<f32>) -> tensor<9xf32>
    %cst_0 = stablehlo.constant dense<6.000000e+00> : tensor<f32>
    %1 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<9xf32>
    %2 = stablehlo.divide %0, %1 : tensor<9xf32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %3 = call @_std(%arg0, %c) : (tensor<6x9xf32>, tensor<i32>) -> tensor<6xf32>
    %cst_1 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %4 = stablehlo.reduce(%arg0 init: %cst_1) applies stablehlo.maximum across dimensions = [0, 1] : (tensor<6x9xf32>, tensor<f32>) -> tensor<f32>
    %5 = call @argmin(%arg0) : (tensor<6x9xf32>) -> tensor<6xi32>
    %6 = stablehlo.slice %arg0 [0:3, 0:9] : (tensor<6x9xf32>) -> tensor<3x9xf32>
    %cst_2 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %7 = stablehlo.reduce(%6 init: %cst_2) applies stablehlo.multiply across dimensions = [0] : (tensor<3x9xf32>, tensor<f32>) -> tensor<9xf32>
    %cst_3 = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    %8 = stablehlo.broadcast_in_dim %cst_3, dims = [] : (tensor<f32>) -> tensor<6x9xf32>
    %9 = stablehlo.compare GT, %arg0, %8, FLOAT : (tensor<6x9xf32>, tensor<6x9xf32>) -> tensor<6x9xi1>
    %c_4 = stablehlo.constant dense<false> : tensor<i1>
    %10 = stablehlo.reduce(%9 init: %c_4) applies stablehlo.or across dimensions = [0, 1] : (tensor<6x9xi1>, tensor<i1>) -> tensor<i1>
    %11 = call @median(%arg0) : (tensor<6x9xf32>) -> tensor<6xf32>
    return %2, %3, %4, %5, %7, %10, %11 : tensor<9xf32>, tensor<6xf32>, tensor<f32>, tensor<6xi32>, tensor<9xf32>, tensor<i1>, tensor<6xf32>
  }
  func.func private @_std(%arg0: tensor<6x9xf32>, %arg1: tensor<i32>) -> tensor<6xf32> {
    %0 = call @_var(%arg0, %arg1) : (tensor<6x9xf32>, tensor<i32>) -> tensor<6xf32>
    %1 = stablehlo.sqrt %0 : tensor<6xf32>
    return %1 : tensor<6xf32>
  }
  func.func private @_var(%arg0: tensor<6x9xf32>, %arg1: tensor<i32>) -> tensor<6xf32> {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.reduce(%arg0 init: %cst) applies stablehlo.add across dimensions = [1] : (tensor<6x9xf32>, tensor<f32>) -> tensor<6xf32>
    %1 = stablehlo.broadcast_in_dim %0, dims = [0] : (tensor<6xf32>) -> tensor<6x1xf32>
    %cst_0 = stablehlo.constant dense<9.000000e+00> : tensor<f32>
    %2 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<6x1xf32>
    %3 = stablehlo.divide %1, %2 : tensor<6x1xf32>
    %4 = stablehlo.broadcast_in_dim %3, dims = [0, 1] : (tensor<6x1xf32>) -> tensor<6x9xf32>
    %5 = stablehlo.subtract %arg0, %4 : tensor<6x9xf32>
    %6 = chlo.square %5 : tensor<6x9xf32> -> tensor<6x9xf32>
    %7 = stablehlo.convert %arg1 : (tensor<i32>) -> tensor<f32>
    %cst_1 = stablehlo.constant dense<9.000000e+00> : tensor<f32>
    %8 = stablehlo.subtract %cst_1, %7 : tensor<f32>
    %cst_2 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %9 = stablehlo.reduce(%6 init: %cst_2) applies stablehlo.add across dimensions = [1] : (tensor<6x9xf32>, tensor<f32>) -> tensor<6xf32>
    %10 = stablehlo.broadcast_in_dim %8, dims = [] : (tensor<f32>) -> tensor<6xf32>
    %11 = stablehlo.divide %9, %10 : tensor<6xf32>
    %cst_3 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %12 = stablehlo.compare GT, %8, %cst_3, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
    %cst_4 = stablehlo.constant dense<0x7FC00000> : tensor<f32>
    %13 = call @_where(%12, %11, %cst_4) : (tensor<i1>, tensor<6xf32>, tensor<f32>) -> tensor<6xf32>
    return %13 : tensor<6xf32>
  }
  func.func private @_where(%arg0: tensor<i1>, %arg1: tensor<6xf32>, %arg2: tensor<f32>) -> tensor<6xf32> {
    %0 = stablehlo.convert %arg2 : tensor<f32>
    %1 = stablehlo.broadcast_in_dim %0, dims = [] : (tensor<f32>) -> tensor<6xf32>
    %2 = stablehlo.select %arg0, %arg1, %1 : tensor<i1>, tensor<6xf32>
    return %2 : tensor<6xf32>
  }
  func.func private @argmin(%arg0: tensor<6x9xf32>) -> tensor<6xi32> {
    %0 = stablehlo.iota dim = 1 : tensor<6x9xi32>
    %cst = stablehlo.constant dense<0x7F800000> : tensor<f32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %1:2 = stablehlo.reduce(%arg0 init: %cst), (%0 init: %c) across dimensions = [1] : (tensor<6x9xf32>, tensor<6x9xi32>, tensor<f32>, tensor<i32>) -> (tensor<6xf32>, tensor<6xi32>)
     reducer(%arg1: tensor<f32>, %arg3: tensor<f32>) (%arg2: tensor<i32>, %arg4: tensor<i32>)  {
      %2 = stablehlo.compare LT, %arg1, %arg3, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %3 = stablehlo.compare NE, %arg1, %arg1, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %4 = stablehlo.or %2, %3 : tensor<i1>
      %5 = stablehlo.compare EQ, %arg1, %arg3, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %6 = stablehlo.compare LT, %arg2, %arg4, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      %7 = stablehlo.and %5, %6 : tensor<i1>
      %8 = stablehlo.or %4, %7 : tensor<i1>
      %9 = stablehlo.select %4, %arg1, %arg3 : tensor<i1>, tensor<f32>
      %10 = stablehlo.select %8, %arg2, %arg4 : tensor<i1>, tensor<i32>
      stablehlo.return %9, %10 : tensor<f32>, tensor<i32>
    }
    return %1#1 : tensor<6xi32>
  }
  func.func private @median(%arg0: tensor<6x9xf32>) -> tensor<6xf32> {
    %cst = stablehlo.constant dense<5.000000e-01> : tensor<f32>
    %0 = call @quantile(%arg0, %cst) : (tensor<6x9xf32>, tensor<f32>) -> tensor<6xf32>
    return %0 : tensor<6xf32>
  }
  func.func private @quantile(%arg0: tensor<6x9xf32>, %arg1: tensor<f32>) -> tensor<6xf32> {
    %0 = stablehlo.compare NE, %arg0, %arg0, FLOAT : (tensor<6x9xf32>, tensor<6x9xf32>) -> tensor<6x9xi1>
    %c = stablehlo.constant dense<false> : tensor<i1>
    %1 = stablehlo.reduce(%0 init: %c) applies stablehlo.or across dimensions = [1] : (tensor<6x9xi1>, tensor<i1>) -> tensor<6xi1>
    %2 = stablehlo.broadcast_in_dim %1, dims = [0] : (tensor<6xi1>) -> tensor<6x1xi1>
    %cst = stablehlo.constant dense<0x7FC00000> : tensor<f32>
    %3 = call @_where_0(%2, %cst, %arg0) : (tensor<6x1xi1>, tensor<f32>, tensor<6x9xf32>) -> tensor<6x9xf32>
    %4 = "stablehlo.sort"(%3) <{dimension = 1 : i64, is_stable = true}> ({
    ^bb0(%arg2: tensor<f32>, %arg3: tensor<f32>):
      %cst_9 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
      %22 = stablehlo.compare EQ, %arg2, %cst_9, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %cst_10 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
      %23 = stablehlo.select %22, %cst_10, %arg2 : tensor<i1>, tensor<f32>
      %24 = stablehlo.compare NE, %arg2, %arg2, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %cst_11 = stablehlo.constant dense<0x7FC00000> : tensor<f32>
      %25 = stablehlo.select %24, %cst_11, %23 : tensor<i1>, tensor<f32>
      %cst_12 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
      %26 = stablehlo.compare EQ, %arg3, %cst_12, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %cst_13 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
      %27 = stablehlo.select %26, %cst_13, %arg3 : tensor<i1>, tensor<f32>
      %28 = stablehlo.compare NE, %arg3, %arg3, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %cst_14 = stablehlo.constant dense<0x7FC00000> : tensor<f32>
      %29 = stablehlo.select %28, %cst_14, %27 : tensor<i1>, tensor<f32>
      %30 = stablehlo.compare LT, %25, %29, TOTALORDER : (tensor<f32>, tensor<f32>) -> tensor<i1>
      stablehlo.return %30 : tensor<i1>
    }) : (tensor<6x9xf32>) -> tensor<6x9xf32>
    %cst_0 = stablehlo.constant dense<9.000000e+00> : tensor<f32>
    %cst_1 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %5 = stablehlo.subtract %cst_0, %cst_1 : tensor<f32>
    %6 = stablehlo.multiply %arg1, %5 : tensor<f32>
    %7 = stablehlo.floor %6 : tensor<f32>
    %8 = stablehlo.ceil %6 : tensor<f32>
    %cst_2 = stablehlo.constant dense<9.000000e+00> : tensor<f32>
    %cst_3 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %9 = stablehlo.subtract %cst_2, %cst_3 : tensor<f32>
    %cst_4 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %10 = stablehlo.clamp %cst_4, %7, %9 : tensor<f32>
    %cst_5 = stablehlo.constant dense<9.000000e+00> : tensor<f32>
    %cst_6 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %11 = stablehlo.subtract %cst_5, %cst_6 : tensor<f32>
    %cst_7 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %12 = stablehlo.clamp %cst_7, %8, %11 : tensor<f32>
    %13 = stablehlo.convert %10 : (tensor<f32>) -> tensor<i32>
    %14 = stablehlo.convert %12 : (tensor<f32>) -> tensor<i32>
    %15 = stablehlo.broadcast_in_dim %13, dims = [] : (tensor<i32>) -> tensor<1xi32>
    %16 = "stablehlo.gather"(%4, %15) <{dimension_numbers = #stablehlo.gather<offset_dims = [0], collapsed_slice_dims = [1], start_index_map = [1]>, indices_are_sorted = false, slice_sizes = array<i64: 6, 1>}> : (tensor<6x9xf32>, tensor<1xi32>) -> tensor<6xf32>
    %17 = stablehlo.broadcast_in_dim %14, dims = [] : (tensor<i32>) -> tensor<1xi32>
    %18 = "stablehlo.gather"(%4, %17) <{dimension_numbers = #stablehlo.gather<offset_dims = [0], collapsed_slice_dims = [1], start_index_map = [1]>, indices_are_sorted = false, slice_sizes = array<i64: 6, 1>}> : (tensor<6x9xf32>, tensor<1xi32>) -> tensor<6xf32>
    %19 = stablehlo.add %16, %18 : tensor<6xf32>
    %cst_8 = stablehlo.constant dense<5.000000e-01> : tensor<f32>
    %20 = stablehlo.broadcast_in_dim %cst_8, dims = [] : (tensor<f32>) -> tensor<6xf32>
    %21 = stablehlo.multiply %19, %20 : tensor<6xf32>
    return %21 : tensor<6xf32>
  }
  func.func private @_where_0(%arg0: tensor<6x1xi1>, %arg1: tensor<f32>, %arg2: tensor<6x9xf32>) -> tensor<6x9xf32> {
    %0 = stablehlo.convert %arg1 : tensor<f32>
    %1 = stablehlo.broadcast_in_dim %arg0, dims = [0, 1] : (tensor<6x1xi1>) -> tensor<6x9xi1>
    %2 = stablehlo.broadcast_in_dim %0, dims = [] : (tensor<f32>) -> tensor<6x9xf32>
    %3 = stablehlo.select %1, %2, %arg2 : tensor<6x9xi1>, tensor<6x9xf32>
    return %3 : tensor<6x9xf32>
  }
}
