module @jit__lambda attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<6x7xf32>, %arg1: tensor<6x7xf32>) -> (tensor<6x7xf32> {jax.result_info = "result[0]"}, tensor<6x7xf32> {jax.result_info = "result[1]"}, tensor<6x7xf32> {jax.result_info = "result[2]"}) {
    %0 = stablehlo.exponential %arg0 : tensor<6x7xf32>
    %1 = stablehlo.abs %arg1 : tensor<6x7xf32>
    %2 = stablehlo.log_plus_one %1 : tensor<6x7xf32>
    %3 = stablehlo.multiply %0, %2 : tensor<6x7xf32>
    %4 = stablehlo.abs %arg0 : tensor<6x7xf32>
    %5 = stablehlo.sqrt %4 : tensor<6x7xf32>
    %6 = stablehlo.multiply %arg1, %arg1 : tensor<6x7xf32>
    %cst = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %7 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<6x7xf32>
    %8 = stablehlo.add %7, %6 : tensor<6x7xf32>
    %9 = stablehlo.divide %5, %8 : tensor<6x7xf32>
    %10 = stablehlo.subtract %3, %9 : tensor<6x7xf32>
    %cst_0 = stablehlo.constant dense<-5.000000e-01> : tensor<f32>
    %cst_1 = stablehlo.constant dense<5.000000e-01> : tensor<f32>
    %11 = call @clip(%arg0, %cst_0, %cst_1) : (tensor<6x7xf32>, tensor<f32>, tensor<f32>) -> tensor<6x7xf32>
    %12 = stablehlo.compare GT, %arg0, %arg1, FLOAT : (tensor<6x7xf32>, tensor<6x7xf32>) -> tensor<6x7xi1>
    %13 = stablehlo.multiply %arg1, %arg1 : tensor<6x7xf32>
    %14 = stablehlo.multiply %13, %arg1 : tensor<6x7xf32>
    %15 = call @_where(%12, %arg0, %14) : (tensor<6x7xi1>, tensor<6x7xf32>, tensor<6x7xf32>) -> tensor<6x7xf32>
    return %10, %11, %15 : tensor<6x7xf32>, tensor<6x7xf32>, tensor<6x7xf32>
  }
  func.func private @clip(%arg0: tensor<6x7xf32>, %arg1: tensor<f32>, %arg2: tensor<f32>) -> tensor<6x7xf32> {
    %0 = stablehlo.convert %arg1 : tensor<f32>
    %1 = stablehlo.broadcast_in_dim %0, dims = [] : (tensor<f32>) -> tensor<6x7xf32>
    %2 = stablehlo.maximum %1, %arg0 : tensor<6x7xf32>
    %3 = stablehlo.convert %arg2 : tensor<f32>
    %4 = stablehlo.broadcast_in_dim %3, dims = [] : (tensor<f32>) -> tensor<6x7xf32>
    %5 = stablehlo.minimum %4, %2 : tensor<6x7xf32>
    return %5 : tensor<6x7xf32>
  }
  func.func private @_where(%arg0: tensor<6x7xi1>, %arg1: tensor<6x7xf32>, %arg2: tensor<6x7xf32>) -> tensor<6x7xf32> {
    %0 = stablehlo.select %arg0, %arg1, %arg2 : tensor<6x7xi1>, tensor<6x7xf32>
    return %0 : tensor<6x7xf32>
  }
}
