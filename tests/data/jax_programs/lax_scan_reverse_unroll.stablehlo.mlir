module @jit__lambda attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<5x6xf32>) -> (tensor<6xf32> {jax.result_info = "result[0]"}, tensor<5x6xf32> {jax.result_info = "result[1]"}) {
    %cst = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<6xf32>
    %1 = stablehlo.slice %arg0 [0:1, 0:6] : (tensor<5x6xf32>) -> tensor<1x6xf32>
    %2 = stablehlo.slice %arg0 [1:5, 0:6] : (tensor<5x6xf32>) -> tensor<4x6xf32>
    %3 = stablehlo.reshape %2 : (tensor<4x6xf32>) -> tensor<2x2x6xf32>
    %cst_0 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %4 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<2x2x6xf32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %5:4 = stablehlo.while(%iterArg = %3, %iterArg_1 = %c, %iterArg_2 = %0, %iterArg_3 = %4) : tensor<2x2x6xf32>, tensor<i32>, tensor<6xf32>, tensor<2x2x6xf32>
    cond {
      %c_4 = stablehlo.constant dense<2> : tensor<i32>
      %12 = stablehlo.compare LT, %iterArg_1, %c_4, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %12 : tensor<i1>
    } do {
      %c_4 = stablehlo.constant dense<2> : tensor<i32>
      %12 = stablehlo.subtract %c_4, %iterArg_1 : tensor<i32>
      %c_5 = stablehlo.constant dense<1> : tensor<i32>
      %13 = stablehlo.subtract %12, %c_5 : tensor<i32>
      %14 = func.call @dynamic_index_in_dim(%iterArg, %13) : (tensor<2x2x6xf32>, tensor<i32>) -> tensor<2x6xf32>
      %15 = stablehlo.slice %14 [1:2, 0:6] : (tensor<2x6xf32>) -> tensor<1x6xf32>
      %16 = stablehlo.reshape %15 : (tensor<1x6xf32>) -> tensor<6xf32>
      %17:2 = func.call @closed_call(%iterArg_2, %16) : (tensor<6xf32>, tensor<6xf32>) -> (tensor<6xf32>, tensor<6xf32>)
      %18 = stablehlo.slice %14 [0:1, 0:6] : (tensor<2x6xf32>) -> tensor<1x6xf32>
      %19 = stablehlo.reshape %18 : (tensor<1x6xf32>) -> tensor<6xf32>
      %20:2 = func.call @closed_call(%17#0, %19) : (tensor<6xf32>, tensor<6xf32>) -> (tensor<6xf32>, tensor<6xf32>)
      %21 = stablehlo.broadcast_in_dim %20#1, dims = [1] : (tensor<6xf32>) -> tensor<1x6xf32>
      %22 = stablehlo.broadcast_in_dim %17#1, dims = [1] : (tensor<6xf32>) -> tensor<1x6xf32>
      %23 = stablehlo.concatenate %21, %22, dim = 0 : (tensor<1x6xf32>, tensor<1x6xf32>) -> tensor<2x6xf32>
      %24 = func.call @dynamic_update_index_in_dim(%iterArg_3, %23, %13) : (tensor<2x2x6xf32>, tensor<2x6xf32>, tensor<i32>) -> tensor<2x2x6xf32>
      %c_6 = stablehlo.constant dense<1> : tensor<i32>
      %25 = stablehlo.add %iterArg_1, %c_6 : tensor<i32>
      stablehlo.return %iterArg, %25, %20#0, %24 : tensor<2x2x6xf32>, tensor<i32>, tensor<6xf32>, tensor<2x2x6xf32>
    }
    %6 = stablehlo.reshape %5#3 : (tensor<2x2x6xf32>) -> tensor<4x6xf32>
    %7 = stablehlo.slice %1 [0:1, 0:6] : (tensor<1x6xf32>) -> tensor<1x6xf32>
    %8 = stablehlo.reshape %7 : (tensor<1x6xf32>) -> tensor<6xf32>
    %9:2 = call @closed_call(%5#2, %8) : (tensor<6xf32>, tensor<6xf32>) -> (tensor<6xf32>, tensor<6xf32>)
    %10 = stablehlo.broadcast_in_dim %9#1, dims = [1] : (tensor<6xf32>) -> tensor<1x6xf32>
    %11 = stablehlo.concatenate %10, %6, dim = 0 : (tensor<1x6xf32>, tensor<4x6xf32>) -> tensor<5x6xf32>
    return %9#0, %11 : tensor<6xf32>, tensor<5x6xf32>
  }
  func.func private @dynamic_index_in_dim(%arg0: tensor<2x2x6xf32>, %arg1: tensor<i32>) -> tensor<2x6xf32> {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %c_0 = stablehlo.constant dense<0> : tensor<i32>
    %0 = stablehlo.dynamic_slice %arg0, %arg1, %c, %c_0, sizes = [1, 2, 6] : (tensor<2x2x6xf32>, tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<1x2x6xf32>
    %1 = stablehlo.reshape %0 : (tensor<1x2x6xf32>) -> tensor<2x6xf32>
    return %1 : tensor<2x6xf32>
  }
  func.func private @closed_call(%arg0: tensor<6xf32>, %arg1: tensor<6xf32>) -> (tensor<6xf32>, tensor<6xf32>) {
    %0 = stablehlo.add %arg0, %arg1 : tensor<6xf32>
    %1 = stablehlo.multiply %arg0, %arg1 : tensor<6xf32>
    return %0, %1 : tensor<6xf32>, tensor<6xf32>
  }
  func.func private @dynamic_update_index_in_dim(%arg0: tensor<2x2x6xf32>, %arg1: tensor<2x6xf32>, %arg2: tensor<i32>) -> tensor<2x2x6xf32> {
    %0 = stablehlo.broadcast_in_dim %arg1, dims = [1, 2] : (tensor<2x6xf32>) -> tensor<1x2x6xf32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %c_0 = stablehlo.constant dense<0> : tensor<i32>
    %1 = stablehlo.dynamic_update_slice %arg0, %0, %arg2, %c, %c_0 : (tensor<2x2x6xf32>, tensor<1x2x6xf32>, tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<2x2x6xf32>
    return %1 : tensor<2x2x6xf32>
  }
}
