module @jit__lambda attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<5xf32>) -> (tensor<7x5xf32> {jax.result_info = "result"}) {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %c_0 = stablehlo.constant dense<1> : tensor<i32>
    %0 = call @_linspace(%c, %c_0) : (tensor<i32>, tensor<i32>) -> tensor<7xf32>
    %1 = stablehlo.broadcast_in_dim %0, dims = [0] : (tensor<7xf32>) -> tensor<7x1xf32>
    %2 = stablehlo.broadcast_in_dim %arg0, dims = [1] : (tensor<5xf32>) -> tensor<1x5xf32>
    %3 = stablehlo.broadcast_in_dim %1, dims = [0, 1] : (tensor<7x1xf32>) -> tensor<7x5xf32>
    %4 = stablehlo.broadcast_in_dim %2, dims = [0, 1] : (tensor<1x5xf32>) -> tensor<7x5xf32>
    %5 = stablehlo.multiply %3, %4 : tensor<7x5xf32>
    %6 = stablehlo.iota dim = 0 : tensor<7xf32>
    %7 = stablehlo.broadcast_in_dim %6, dims = [0] : (tensor<7xf32>) -> tensor<7x1xf32>
    %8 = stablehlo.broadcast_in_dim %7, dims = [0, 1] : (tensor<7x1xf32>) -> tensor<7x5xf32>
    %9 = stablehlo.add %5, %8 : tensor<7x5xf32>
    return %9 : tensor<7x5xf32>
  }
  func.func private @_linspace(%arg0: tensor<i32>, %arg1: tensor<i32>) -> tensor<7xf32> {
    %0 = stablehlo.convert %arg0 : (tensor<i32>) -> tensor<f32>
    %1 = stablehlo.convert %arg1 : (tensor<i32>) -> tensor<f32>
    %2 = stablehlo.iota dim = 0 : tensor<6xf32>
    %cst = stablehlo.constant dense<6.000000e+00> : tensor<f32>
    %3 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<6xf32>
    %4 = stablehlo.divide %2, %3 : tensor<6xf32>
    %5 = stablehlo.reshape %0 : (tensor<f32>) -> tensor<1xf32>
    %cst_0 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %6 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<6xf32>
    %7 = stablehlo.subtract %6, %4 : tensor<6xf32>
    %8 = stablehlo.broadcast_in_dim %5, dims = [0] : (tensor<1xf32>) -> tensor<6xf32>
    %9 = stablehlo.multiply %8, %7 : tensor<6xf32>
    %10 = stablehlo.reshape %1 : (tensor<f32>) -> tensor<1xf32>
    %11 = stablehlo.broadcast_in_dim %10, dims = [0] : (tensor<1xf32>) -> tensor<6xf32>
    %12 = stablehlo.multiply %11, %4 : tensor<6xf32>
    %13 = stablehlo.add %9, %12 : tensor<6xf32>
    %14 = stablehlo.broadcast_in_dim %1, dims = [] : (tensor<f32>) -> tensor<1xf32>
    %15 = stablehlo.concatenate %13, %14, dim = 0 : (tensor<6xf32>, tensor<1xf32>) -> tensor<7xf32>
    return %15 : tensor<7xf32>
  }
}
