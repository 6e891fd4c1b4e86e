module @jit__lambda attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<5x6xf32>) -> (tensor<5xf32> {jax.result_info = "result[0]"}, tensor<5x6xf32> {jax.result_info = "result[1]"}) {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<5xf32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %1:3 = stablehlo.while(%iterArg = %arg0, %iterArg_4 = %c, %iterArg_5 = %0) : tensor<5x6xf32>, tensor<i32>, tensor<5xf32>
    cond {
      %c_6 = stablehlo.constant dense<5> : tensor<i32>
      %23 = stablehlo.compare LT, %iterArg_4, %c_6, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %23 : tensor<i1>
    } do {
      %23 = func.call @dynamic_index_in_dim(%iterArg, %iterArg_4) : (tensor<5x6xf32>, tensor<i32>) -> tensor<6xf32>
      %24 = func.call @closed_call(%23) : (tensor<6xf32>) -> tensor<f32>
      %25 = func.call @dynamic_update_index_in_dim(%iterArg_5, %24, %iterArg_4) : (tensor<5xf32>, tensor<f32>, tensor<i32>) -> tensor<5xf32>
      %c_6 = stablehlo.constant dense<1> : tensor<i32>
      %26 = stablehlo.add %iterArg_4, %c_6 : tensor<i32>
      stablehlo.return %iterArg, %26, %25 : tensor<5x6xf32>, tensor<i32>, tensor<5xf32>
    }
    %2 = stablehlo.slice %arg0 [0:5, 0:5:2] : (tensor<5x6xf32>) -> tensor<5x3xf32>
    %3 = stablehlo.slice %arg0 [0:5, 1:6:2] : (tensor<5x6xf32>) -> tensor<5x3xf32>
    %4 = stablehlo.add %2, %3 : tensor<5x3xf32>
    %5 = stablehlo.slice %4 [0:5, 0:2:2] : (tensor<5x3xf32>) -> tensor<5x1xf32>
    %6 = stablehlo.slice %4 [0:5, 1:3:2] : (tensor<5x3xf32>) -> tensor<5x1xf32>
    %7 = stablehlo.add %5, %6 : tensor<5x1xf32>
    %8 = stablehlo.slice %4 [0:5, 2:3:2] : (tensor<5x3xf32>) -> tensor<5x1xf32>
    %9 = stablehlo.add %7, %8 : tensor<5x1xf32>
    %10 = stablehlo.slice %4 [0:5, 0:1] : (tensor<5x3xf32>) -> tensor<5x1xf32>
    %11 = stablehlo.concatenate %10, %9, dim = 1 : (tensor<5x1xf32>, tensor<5x1xf32>) -> tensor<5x2xf32>
    %cst_0 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %12 = stablehlo.pad %11, %cst_0, low = [0, 0], high = [0, 0], interior = [0, 1] : (tensor<5x2xf32>, tensor<f32>) -> tensor<5x3xf32>
    %cst_1 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %13 = stablehlo.pad %7, %cst_1, low = [0, 1], high = [0, 1], interior = [0, 1] : (tensor<5x1xf32>, tensor<f32>) -> tensor<5x3xf32>
    %14 = stablehlo.add %12, %13 : tensor<5x3xf32>
    %15 = stablehlo.slice %14 [0:5, 0:2] : (tensor<5x3xf32>) -> tensor<5x2xf32>
    %16 = stablehlo.slice %arg0 [0:5, 2:6:2] : (tensor<5x6xf32>) -> tensor<5x2xf32>
    %17 = stablehlo.add %15, %16 : tensor<5x2xf32>
    %18 = stablehlo.slice %arg0 [0:5, 0:1] : (tensor<5x6xf32>) -> tensor<5x1xf32>
    %19 = stablehlo.concatenate %18, %17, dim = 1 : (tensor<5x1xf32>, tensor<5x2xf32>) -> tensor<5x3xf32>
    %cst_2 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %20 = stablehlo.pad %19, %cst_2, low = [0, 0], high = [0, 1], interior = [0, 1] : (tensor<5x3xf32>, tensor<f32>) -> tensor<5x6xf32>
    %cst_3 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %21 = stablehlo.pad %14, %cst_3, low = [0, 1], high = [0, 0], interior = [0, 1] : (tensor<5x3xf32>, tensor<f32>) -> tensor<5x6xf32>
    %22 = stablehlo.add %20, %21 : tensor<5x6xf32>
    return %1#2, %22 : tensor<5xf32>, tensor<5x6xf32>
  }
  func.func private @dynamic_index_in_dim(%arg0: tensor<5x6xf32>, %arg1: tensor<i32>) -> tensor<6xf32> {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %0 = stablehlo.dynamic_slice %arg0, %arg1, %c, sizes = [1, 6] : (tensor<5x6xf32>, tensor<i32>, tensor<i32>) -> tensor<1x6xf32>
    %1 = stablehlo.reshape %0 : (tensor<1x6xf32>) -> tensor<6xf32>
    return %1 : tensor<6xf32>
  }
  func.func private @closed_call(%arg0: tensor<6xf32>) -> tensor<f32> {
    %0 = stablehlo.multiply %arg0, %arg0 : tensor<6xf32>
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %1 = stablehlo.reduce(%0 init: %cst) applies stablehlo.add across dimensions = [0] : (tensor<6xf32>, tensor<f32>) -> tensor<f32>
    return %1 : tensor<f32>
  }
  func.func private @dynamic_update_index_in_dim(%arg0: tensor<5xf32>, %arg1: tensor<f32>, %arg2: tensor<i32>) -> tensor<5xf32> {
    %0 = stablehlo.broadcast_in_dim %arg1, dims = [] : (tensor<f32>) -> tensor<1xf32>
    %1 = stablehlo.dynamic_update_slice %arg0, %0, %arg2 : (tensor<5xf32>, tensor<1xf32>, tensor<i32>) -> tensor<5xf32>
    return %1 : tensor<5xf32>
  }
}
