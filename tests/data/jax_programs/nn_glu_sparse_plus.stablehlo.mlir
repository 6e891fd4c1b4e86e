module @jit__lambda attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<4x10xf32>) -> (tensor<4x5xf32> {jax.result_info = "result[0]"}, tensor<4x10xf32> {jax.result_info = "result[1]"}, tensor<4x10xf32> {jax.result_info = "result[2]"}) {
    %0 = call @glu(%arg0) : (tensor<4x10xf32>) -> tensor<4x5xf32>
    %1 = call @sparse_plus(%arg0) : (tensor<4x10xf32>) -> tensor<4x10xf32>
    %2 = call @squareplus(%arg0) : (tensor<4x10xf32>) -> tensor<4x10xf32>
    return %0, %1, %2 : tensor<4x5xf32>, tensor<4x10xf32>, tensor<4x10xf32>
  }
  func.func private @glu(%arg0: tensor<4x10xf32>) -> tensor<4x5xf32> {
    %0 = stablehlo.slice %arg0 [0:4, 0:5] : (tensor<4x10xf32>) -> tensor<4x5xf32>
    %1 = stablehlo.slice %arg0 [0:4, 5:10] : (tensor<4x10xf32>) -> tensor<4x5xf32>
    %2 = stablehlo.negate %1 : tensor<4x5xf32>
    %3 = stablehlo.exponential %2 : tensor<4x5xf32>
    %cst = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %4 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<4x5xf32>
    %5 = stablehlo.add %4, %3 : tensor<4x5xf32>
    %cst_0 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %6 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<4x5xf32>
    %7 = stablehlo.divide %6, %5 : tensor<4x5xf32>
    %8 = stablehlo.multiply %0, %7 : tensor<4x5xf32>
    return %8 : tensor<4x5xf32>
  }
  func.func private @sparse_plus(%arg0: tensor<4x10xf32>) -> tensor<4x10xf32> {
    %cst = stablehlo.constant dense<-1.000000e+00> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<4x10xf32>
    %1 = stablehlo.compare LE, %arg0, %0, FLOAT : (tensor<4x10xf32>, tensor<4x10xf32>) -> tensor<4x10xi1>
    %cst_0 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %2 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<4x10xf32>
    %3 = stablehlo.compare GE, %arg0, %2, FLOAT : (tensor<4x10xf32>, tensor<4x10xf32>) -> tensor<4x10xi1>
    %cst_1 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %4 = stablehlo.broadcast_in_dim %cst_1, dims = [] : (tensor<f32>) -> tensor<4x10xf32>
    %5 = stablehlo.add %arg0, %4 : tensor<4x10xf32>
    %6 = stablehlo.multiply %5, %5 : tensor<4x10xf32>
    %cst_2 = stablehlo.constant dense<4.000000e+00> : tensor<f32>
    %7 = stablehlo.broadcast_in_dim %cst_2, dims = [] : (tensor<f32>) -> tensor<4x10xf32>
    %8 = stablehlo.divide %6, %7 : tensor<4x10xf32>
    %9 = call @_where(%3, %arg0, %8) : (tensor<4x10xi1>, tensor<4x10xf32>, tensor<4x10xf32>) -> tensor<4x10xf32>
    %cst_3 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %10 = call @_where_0(%1, %cst_3, %9) : (tensor<4x10xi1>, tensor<f32>, tensor<4x10xf32>) -> tensor<4x10xf32>
    return %10 : tensor<4x10xf32>
  }
  func.func private @_where(%arg0: tensor<4x10xi1>, %arg1: tensor<4x10xf32>, %arg2: tensor<4x10xf32>) -> tensor<4x10xf32> {
    %0 = stablehlo.select %arg0, %arg1, %arg2 : tensor<4x10xi1>, tensor<4x10xf32>
    return %0 : tensor<4x10xf32>
  }
  func.func private @_where_0(%arg0: tensor<4x10xi1>, %arg1: tensor<f32>, %arg2: tensor<4x10xf32>) -> tensor<4x10xf32> {
    %0 = stablehlo.convert %arg1 : tensor<f32>
    %1 = stablehlo.broadcast_in_dim %0, dims = [] : (tensor<f32>) -> tensor<4x10xf32>
    %2 = stablehlo.select %arg0, %1, %arg2 : tensor<4x10xi1>, tensor<4x10xf32>
    return %2 : tensor<4x10xf32>
  }
  func.func private @squareplus(%arg0: tensor<4x10xf32>) -> tensor<4x10xf32> {
    %0 = chlo.square %arg0 : tensor<4x10xf32> -> tensor<4x10xf32>
    %cst = stablehlo.constant dense<4.000000e+00> : tensor<f32>
    %1 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<4x10xf32>
    %2 = stablehlo.add %0, %1 : tensor<4x10xf32>
    %3 = stablehlo.sqrt %2 : tensor<4x10xf32>
    %4 = stablehlo.add %arg0, %3 : tensor<4x10xf32>
    %cst_0 = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    %5 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<4x10xf32>
    %6 = stablehlo.divide %4, %5 : tensor<4x10xf32>
    return %6 : tensor<4x10xf32>
  }
}
