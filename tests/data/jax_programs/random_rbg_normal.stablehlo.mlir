module @jit__lambda attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<4xui32>) -> (tensor<3x4xf32> {jax.result_info = "result"}) {
    %0 = call @_normal(%arg0) : (tensor<4xui32>) -> tensor<3x4xf32>
    return %0 : tensor<3x4xf32>
  }
  func.func private @_normal(%arg0: tensor<4xui32>) -> tensor<3x4xf32> {
    %0 = call @_normal_real(%arg0) : (tensor<4xui32>) -> tensor<3x4xf32>
    return %0 : tensor<3x4xf32>
  }
  func.func private @_normal_real(%arg0: tensor<4xui32>) -> tensor<3x4xf32> {
    %cst = stablehlo.constant dense<-0.99999994> : tensor<f32>
    %cst_0 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %0 = call @_uniform(%arg0, %cst, %cst_0) : (tensor<4xui32>, tensor<f32>, tensor<f32>) -> tensor<3x4xf32>
    %1 = chlo.erf_inv %0 : tensor<3x4xf32> -> tensor<3x4xf32>
    %cst_1 = stablehlo.constant dense<1.41421354> : tensor<f32>
    %2 = stablehlo.broadcast_in_dim %cst_1, dims = [] : (tensor<f32>) -> tensor<3x4xf32>
    %3 = stablehlo.multiply %2, %1 : tensor<3x4xf32>
    return %3 : tensor<3x4xf32>
  }
  func.func private @_uniform(%arg0: tensor<4xui32>, %arg1: tensor<f32>, %arg2: tensor<f32>) -> tensor<3x4xf32> {
    %0 = stablehlo.broadcast_in_dim %arg1, dims = [] : (tensor<f32>) -> tensor<1x1xf32>
    %1 = stablehlo.broadcast_in_dim %arg2, dims = [] : (tensor<f32>) -> tensor<1x1xf32>
    %2 = stablehlo.reshape %arg0 : (tensor<4xui32>) -> tensor<2x2xui32>
    %3 = stablehlo.bitcast_convert %2 : (tensor<2x2xui32>) -> tensor<2xui64>
    %output_state, %output = stablehlo.rng_bit_generator %3, algorithm = DEFAULT : (tensor<2xui64>) -> (tensor<2xui64>, tensor<3x4xui32>)
    %4 = stablehlo.bitcast_convert %output_state : (tensor<2xui64>) -> tensor<2x2xui32>
    %5 = stablehlo.reshape %4 : (tensor<2x2xui32>) -> tensor<4xui32>
    %c = stablehlo.constant dense<9> : tensor<ui32>
    %6 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<ui32>) -> tensor<3x4xui32>
    %7 = stablehlo.shift_right_logical %output, %6 : tensor<3x4xui32>
    %c_0 = stablehlo.constant dense<1065353216> : tensor<ui32>
    %8 = stablehlo.broadcast_in_dim %c_0, dims = [] : (tensor<ui32>) -> tensor<3x4xui32>
    %9 = stablehlo.or %7, %8 : tensor<3x4xui32>
    %10 = stablehlo.bitcast_convert %9 : (tensor<3x4xui32>) -> tensor<3x4xf32>
    %cst = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %11 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<3x4xf32>
    %12 = stablehlo.subtract %10, %11 : tensor<3x4xf32>
    %13 = stablehlo.subtract %1, %0 : tensor<1x1xf32>
    %14 = stablehlo.broadcast_in_dim %13, dims = [0, 1] : (tensor<1x1xf32>) -> tensor<3x4xf32>
    %15 = stablehlo.multiply %12, %14 : tensor<3x4xf32>
    %16 = stablehlo.broadcast_in_dim %0, dims = [0, 1] : (tensor<1x1xf32>) -> tensor<3x4xf32>
    %17 = stablehlo.add %15, %16 : tensor<3x4xf32>
    %18 = stablehlo.broadcast_in_dim %0, dims = [0, 1] : (tensor<1x1xf32>) -> tensor<3x4xf32>
    %19 = stablehlo.maximum %18, %17 : tensor<3x4xf32>
    return %19 : tensor<3x4xf32>
  }
}
