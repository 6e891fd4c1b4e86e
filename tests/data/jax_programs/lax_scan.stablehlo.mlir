module @jit_scan_fn attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<5x6xf32>) -> (tensor<6xf32> {jax.result_info = "result[0]"}, tensor<5x6xf32> {jax.result_info = "result[1]"}) {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<6xf32>
    %cst_0 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %1 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<5x6xf32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %2:4 = stablehlo.while(%iterArg = %arg0, %iterArg_1 = %c, %iterArg_2 = %0, %iterArg_3 = %1) : tensor<5x6xf32>, tensor<i32>, tensor<6xf32>, tensor<5x6xf32>
    cond {
      %c_4 = stablehlo.constant dense<5> : tensor<i32>
      %3 = stablehlo.compare LT, %iterArg_1, %c_4, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %3 : tensor<i1>
    } do {
      %3 = func.call @dynamic_index_in_dim(%iterArg, %iterArg_1) : (tensor<5x6xf32>, tensor<i32>) -> tensor<6xf32>
      %4:2 = func.call @closed_call(%iterArg_2, %3) : (tensor<6xf32>, tensor<6xf32>) -> (tensor<6xf32>, tensor<6xf32>)
      %5 = func.call @dynamic_update_index_in_dim(%iterArg_3, %4#1, %iterArg_1) : (tensor<5x6xf32>, tensor<6xf32>, tensor<i32>) -> tensor<5x6xf32>
      %c_4 = stablehlo.constant dense<1> : tensor<i32>
      %6 = stablehlo.add %iterArg_1, %c_4 : tensor<i32>
      stablehlo.return %iterArg, %6, %4#0, %5 : tensor<5x6xf32>, tensor<i32>, tensor<6xf32>, tensor<5x6xf32>
    }
    return %2#2, %2#3 : tensor<6xf32>, tensor<5x6xf32>
  }
  func.func private @dynamic_index_in_dim(%arg0: tensor<5x6xf32>, %arg1: tensor<i32>) -> tensor<6xf32> {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %0 = stablehlo.dynamic_slice %arg0, %arg1, %c, sizes = [1, 6] : (tensor<5x6xf32>, tensor<i32>, tensor<i32>) -> tensor<1x6xf32>
    %1 = stablehlo.reshape %0 : (tensor<1x6xf32>) -> tensor<6xf32>
    return %1 : tensor<6xf32>
  }
  func.func private @closed_call(%arg0: tensor<6xf32>, %arg1: tensor<6xf32>) -> (tensor<6xf32>, tensor<6xf32>) {
    %cst = stablehlo.constant dense<5.000000e-01> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<6xf32>
    %1 = stablehlo.multiply %arg0, %0 : tensor<6xf32>
    %2 = stablehlo.add %1, %arg1 : tensor<6xf32>
    %3 = stablehlo.sine %2 : tensor<6xf32>
    return %2, %3 : tensor<6xf32>, tensor<6xf32>
  }
  func.func private @dynamic_update_index_in_dim(%arg0: tensor<5x6xf32>, %arg1: tensor<6xf32>, %arg2: tensor<i32>) -> tensor<5x6xf32> {
    %0 = stablehlo.broadcast_in_dim %arg1, dims = [1] : (tensor<6xf32>) -> tensor<1x6xf32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %1 = stablehlo.dynamic_update_slice %arg0, %0, %arg2, %c : (tensor<5x6xf32>, tensor<1x6xf32>, tensor<i32>, tensor<i32>) -> tensor<5x6xf32>
    return %1 : tensor<5x6xf32>
  }
}
