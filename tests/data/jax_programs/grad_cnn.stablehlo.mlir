module @jit__lambda attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<3x3x2x4xf32>, %arg1: tensor<3x3x4x2xf32>, %arg2: tensor<72x3xf32>, %arg3: tensor<2x6x6x2xf32>) -> (tensor<3x3x2x4xf32> {jax.result_info = "result[0]"}, tensor<3x3x4x2xf32> {jax.result_info = "result[1]"}, tensor<72x3xf32> {jax.result_info = "result[2]"}) {
    %0 = stablehlo.convolution(%arg3, %arg0) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[1, 1], [1, 1]], lhs_dilate = [1, 1], rhs_dilate = [1, 1], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<2x6x6x2xf32>, tensor<3x3x2x4xf32>) -> tensor<2x6x6x4xf32>
    %1 = call @relu(%0) : (tensor<2x6x6x4xf32>) -> tensor<2x6x6x4xf32>
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %2 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<2x6x6x4xf32>
    %3 = stablehlo.compare GT, %0, %2, FLOAT : (tensor<2x6x6x4xf32>, tensor<2x6x6x4xf32>) -> tensor<2x6x6x4xi1>
    %cst_0 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %4 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<f32>
    %5 = "stablehlo.reduce_window"(%1, %4) <{base_dilations = array<i64: 1, 1, 1, 1>, padding = dense<0> : tensor<4x2xi64>, window_dilations = array<i64: 1, 1, 1, 1>, window_dimensions = array<i64: 1, 2, 2, 1>, window_strides = array<i64: 1, 2, 2, 1>}> ({
    ^bb0(%arg4: tensor<f32>, %arg5: tensor<f32>):
      %36 = stablehlo.maximum %arg4, %arg5 : tensor<f32>
      stablehlo.return %36 : tensor<f32>
    }) : (tensor<2x6x6x4xf32>, tensor<f32>) -> tensor<2x3x3x4xf32>
    %6 = stablehlo.convolution(%5, %arg1) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[2, 1], [2, 1]], lhs_dilate = [2, 2], rhs_dilate = [1, 1], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<2x3x3x4xf32>, tensor<3x3x4x2xf32>) -> tensor<2x6x6x2xf32>
    %cst_1 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %7 = stablehlo.broadcast_in_dim %cst_1, dims = [] : (tensor<f32>) -> tensor<f32>
    %8 = "stablehlo.reduce_window"(%6, %7) <{base_dilations = array<i64: 1, 1, 1, 1>, padding = dense<[[0, 0], [0, 1], [0, 1], [0, 0]]> : tensor<4x2xi64>, window_dilations = array<i64: 1, 1, 1, 1>, window_dimensions = array<i64: 1, 2, 2, 1>, window_strides = array<i64: 1, 1, 1, 1>}> ({
    ^bb0(%arg4: tensor<f32>, %arg5: tensor<f32>):
      %36 = stablehlo.add %arg4, %arg5 : tensor<f32>
      stablehlo.return %36 : tensor<f32>
    }) : (tensor<2x6x6x2xf32>, tensor<f32>) -> tensor<2x6x6x2xf32>
    %cst_2 = stablehlo.constant dense<4.000000e+00> : tensor<f32>
    %9 = stablehlo.broadcast_in_dim %cst_2, dims = [] : (tensor<f32>) -> tensor<2x6x6x2xf32>
    %10 = stablehlo.divide %8, %9 : tensor<2x6x6x2xf32>
    %11 = stablehlo.reshape %10 : (tensor<2x6x6x2xf32>) -> tensor<2x72xf32>
    %12 = stablehlo.dot_general %11, %arg2, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x72xf32>, tensor<72x3xf32>) -> tensor<2x3xf32>
    %cst_3 = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    %13 = stablehlo.broadcast_in_dim %cst_3, dims = [] : (tensor<f32>) -> tensor<2x3xf32>
    %14 = stablehlo.multiply %13, %12 : tensor<2x3xf32>
    %cst_4 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %cst_5 = stablehlo.constant dense<6.000000e+00> : tensor<f32>
    %15 = stablehlo.divide %cst_4, %cst_5 : tensor<f32>
    %16 = stablehlo.broadcast_in_dim %15, dims = [] : (tensor<f32>) -> tensor<2x3xf32>
    %17 = stablehlo.multiply %16, %14 : tensor<2x3xf32>
    %18 = stablehlo.dot_general %17, %11, contracting_dims = [0] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x3xf32>, tensor<2x72xf32>) -> tensor<3x72xf32>
    %19 = stablehlo.transpose %18, dims = [1, 0] : (tensor<3x72xf32>) -> tensor<72x3xf32>
    %20 = stablehlo.dot_general %17, %arg2, contracting_dims = [1] x [1], precision = [DEFAULT, DEFAULT] : (tensor<2x3xf32>, tensor<72x3xf32>) -> tensor<2x72xf32>
    %21 = stablehlo.reshape %20 : (tensor<2x72xf32>) -> tensor<2x6x6x2xf32>
    %cst_6 = stablehlo.constant dense<4.000000e+00> : tensor<f32>
    %22 = stablehlo.broadcast_in_dim %cst_6, dims = [] : (tensor<f32>) -> tensor<2x6x6x2xf32>
    %23 = stablehlo.divide %21, %22 : tensor<2x6x6x2xf32>
    %cst_7 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %24 = stablehlo.pad %23, %cst_7, low = [0, 1, 1, 0], high = [0, 0, 0, 0], interior = [0, 0, 0, 0] : (tensor<2x6x6x2xf32>, tensor<f32>) -> tensor<2x7x7x2xf32>
    %cst_8 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %25 = stablehlo.broadcast_in_dim %cst_8, dims = [] : (tensor<f32>) -> tensor<f32>
    %26 = "stablehlo.reduce_window"(%24, %25) <{base_dilations = array<i64: 1, 1, 1, 1>, padding = dense<0> : tensor<4x2xi64>, window_dilations = array<i64: 1, 1, 1, 1>, window_dimensions = array<i64: 1, 2, 2, 1>, window_strides = array<i64: 1, 1, 1, 1>}> ({
    ^bb0(%arg4: tensor<f32>, %arg5: tensor<f32>):
      %36 = stablehlo.add %arg4, %arg5 : tensor<f32>
      stablehlo.return %36 : tensor<f32>
    }) : (tensor<2x7x7x2xf32>, tensor<f32>) -> tensor<2x6x6x2xf32>
    %27 = stablehlo.convolution(%5, %26) dim_numbers = [f, 0, 1, b]x[i, 0, 1, o]->[0, 1, b, f], window = {stride = [1, 1], pad = [[2, 1], [2, 1]], lhs_dilate = [2, 2], rhs_dilate = [1, 1], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<2x3x3x4xf32>, tensor<2x6x6x2xf32>) -> tensor<3x3x4x2xf32>
    %28 = stablehlo.reverse %arg1, dims = [0, 1] : tensor<3x3x4x2xf32>
    %29 = stablehlo.convolution(%26, %28) dim_numbers = [b, 0, 1, f]x[0, 1, o, i]->[b, 0, 1, f], window = {stride = [2, 2], pad = [[0, 1], [0, 1]], lhs_dilate = [1, 1], rhs_dilate = [1, 1], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<2x6x6x2xf32>, tensor<3x3x4x2xf32>) -> tensor<2x3x3x4xf32>
    %cst_9 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %30 = stablehlo.pad %1, %cst_9, low = [0, 0, 0, 0], high = [0, 0, 0, 0], interior = [0, 0, 0, 0] : (tensor<2x6x6x4xf32>, tensor<f32>) -> tensor<2x6x6x4xf32>
    %cst_10 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %31 = "stablehlo.select_and_scatter"(%30, %29, %cst_10) <{padding = dense<0> : tensor<4x2xi64>, window_dimensions = array<i64: 1, 2, 2, 1>, window_strides = array<i64: 1, 2, 2, 1>}> ({
    ^bb0(%arg4: tensor<f32>, %arg5: tensor<f32>):
      %36 = stablehlo.compare GE, %arg4, %arg5, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      stablehlo.return %36 : tensor<i1>
    }, {
    ^bb0(%arg4: tensor<f32>, %arg5: tensor<f32>):
      %36 = stablehlo.add %arg4, %arg5 : tensor<f32>
      stablehlo.return %36 : tensor<f32>
    }) : (tensor<2x6x6x4xf32>, tensor<2x3x3x4xf32>, tensor<f32>) -> tensor<2x6x6x4xf32>
    %32 = stablehlo.slice %31 [0:2, 0:6, 0:6, 0:4] : (tensor<2x6x6x4xf32>) -> tensor<2x6x6x4xf32>
    %cst_11 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %33 = stablehlo.broadcast_in_dim %cst_11, dims = [] : (tensor<f32>) -> tensor<2x6x6x4xf32>
    %34 = stablehlo.select %3, %32, %33 : tensor<2x6x6x4xi1>, tensor<2x6x6x4xf32>
    %35 = stablehlo.convolution(%arg3, %34) dim_numbers = [f, 0, 1, b]x[i, 0, 1, o]->[0, 1, b, f], window = {stride = [1, 1], pad = [[1, 1], [1, 1]], lhs_dilate = [1, 1], rhs_dilate = [1, 1], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<2x6x6x2xf32>, tensor<2x6x6x4xf32>) -> tensor<3x3x2x4xf32>
    return %35, %27, %19 : tensor<3x3x2x4xf32>, tensor<3x3x4x2xf32>, tensor<72x3xf32>
  }
  func.func private @relu(%arg0: tensor<2x6x6x4xf32>) -> tensor<2x6x6x4xf32> {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<2x6x6x4xf32>
    %1 = stablehlo.maximum %arg0, %0 : tensor<2x6x6x4xf32>
    return %1 : tensor<2x6x6x4xf32>
  }
}
