module @jit__lambda attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<4x10xf32>) -> (tensor<4x10xf32> {jax.result_info = "result[0]"}, tensor<4x10xf32> {jax.result_info = "result[1]"}, tensor<4xf32> {jax.result_info = "result[2]"}) {
    %cst = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %0 = stablehlo.reduce(%arg0 init: %cst) applies stablehlo.maximum across dimensions = [1] : (tensor<4x10xf32>, tensor<f32>) -> tensor<4xf32>
    %cst_0 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %1 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<4xf32>
    %2 = stablehlo.maximum %1, %0 : tensor<4xf32>
    %3 = stablehlo.broadcast_in_dim %2, dims = [0] : (tensor<4xf32>) -> tensor<4x1xf32>
    %4 = stablehlo.broadcast_in_dim %3, dims = [0, 1] : (tensor<4x1xf32>) -> tensor<4x10xf32>
    %5 = stablehlo.subtract %arg0, %4 : tensor<4x10xf32>
    %6 = stablehlo.exponential %5 : tensor<4x10xf32>
    %cst_1 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %7 = stablehlo.reduce(%6 init: %cst_1) applies stablehlo.add across dimensions = [1] : (tensor<4x10xf32>, tensor<f32>) -> tensor<4xf32>
    %8 = stablehlo.broadcast_in_dim %7, dims = [0] : (tensor<4xf32>) -> tensor<4x1xf32>
    %9 = stablehlo.broadcast_in_dim %8, dims = [0, 1] : (tensor<4x1xf32>) -> tensor<4x10xf32>
    %10 = stablehlo.divide %6, %9 : tensor<4x10xf32>
    %11 = call @log_softmax(%arg0) : (tensor<4x10xf32>) -> tensor<4x10xf32>
    %cst_2 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %12 = stablehlo.reduce(%arg0 init: %cst_2) applies stablehlo.maximum across dimensions = [1] : (tensor<4x10xf32>, tensor<f32>) -> tensor<4xf32>
    %cst_3 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %13 = stablehlo.broadcast_in_dim %cst_3, dims = [] : (tensor<f32>) -> tensor<4xf32>
    %14 = stablehlo.maximum %13, %12 : tensor<4xf32>
    %15 = stablehlo.is_finite %14 : (tensor<4xf32>) -> tensor<4xi1>
    %cst_4 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %16 = stablehlo.broadcast_in_dim %cst_4, dims = [] : (tensor<f32>) -> tensor<4xf32>
    %17 = stablehlo.select %15, %14, %16 : tensor<4xi1>, tensor<4xf32>
    %18 = stablehlo.broadcast_in_dim %17, dims = [0] : (tensor<4xf32>) -> tensor<4x1xf32>
    %19 = stablehlo.broadcast_in_dim %18, dims = [0, 1] : (tensor<4x1xf32>) -> tensor<4x10xf32>
    %20 = stablehlo.subtract %arg0, %19 : tensor<4x10xf32>
    %21 = stablehlo.exponential %20 : tensor<4x10xf32>
    %cst_5 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %22 = stablehlo.reduce(%21 init: %cst_5) applies stablehlo.add across dimensions = [1] : (tensor<4x10xf32>, tensor<f32>) -> tensor<4xf32>
    %23 = stablehlo.abs %22 : tensor<4xf32>
    %24 = stablehlo.log %23 : tensor<4xf32>
    %25 = stablehlo.add %24, %17 : tensor<4xf32>
    return %10, %11, %25 : tensor<4x10xf32>, tensor<4x10xf32>, tensor<4xf32>
  }
  func.func private @log_softmax(%arg0: tensor<4x10xf32>) -> tensor<4x10xf32> {
    %cst = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %0 = stablehlo.reduce(%arg0 init: %cst) applies stablehlo.maximum across dimensions = [0] : (tensor<4x10xf32>, tensor<f32>) -> tensor<10xf32>
    %cst_0 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %1 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<10xf32>
    %2 = stablehlo.maximum %1, %0 : tensor<10xf32>
    %3 = stablehlo.broadcast_in_dim %2, dims = [1] : (tensor<10xf32>) -> tensor<1x10xf32>
    %4 = stablehlo.broadcast_in_dim %3, dims = [0, 1] : (tensor<1x10xf32>) -> tensor<4x10xf32>
    %5 = stablehlo.subtract %arg0, %4 : tensor<4x10xf32>
    %6 = stablehlo.exponential %5 : tensor<4x10xf32>
    %cst_1 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %7 = stablehlo.reduce(%6 init: %cst_1) applies stablehlo.add across dimensions = [0] : (tensor<4x10xf32>, tensor<f32>) -> tensor<10xf32>
    %8 = stablehlo.broadcast_in_dim %7, dims = [1] : (tensor<10xf32>) -> tensor<1x10xf32>
    %9 = stablehlo.log %8 : tensor<1x10xf32>
    %10 = stablehlo.broadcast_in_dim %9, dims = [0, 1] : (tensor<1x10xf32>) -> tensor<4x10xf32>
    %11 = stablehlo.subtract %5, %10 : tensor<4x10xf32>
    return %11 : tensor<4x10xf32>
  }
}
