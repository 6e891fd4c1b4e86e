module @jit__lambda attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<33x65xf32>, %arg1: tensor<33x65xf32>) -> (tensor<33x65xf32> {jax.result_info = "result"}) {
    %0 = stablehlo.sine %arg0 : tensor<33x65xf32>
    %1 = stablehlo.cosine %arg1 : tensor<33x65xf32>
    %2 = stablehlo.multiply %0, %1 : tensor<33x65xf32>
    %3 = stablehlo.multiply %arg0, %arg0 : tensor<33x65xf32>
    %4 = stablehlo.add %2, %3 : tensor<33x65xf32>
    %5 = stablehlo.abs %arg1 : tensor<33x65xf32>
    %cst = stablehlo.constant dense<3.000000e+00> : tensor<f32>
    %6 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<33x65xf32>
    %7 = stablehlo.divide %5, %6 : tensor<33x65xf32>
    %8 = stablehlo.subtract %4, %7 : tensor<33x65xf32>
    return %8 : tensor<33x65xf32>
  }
}
