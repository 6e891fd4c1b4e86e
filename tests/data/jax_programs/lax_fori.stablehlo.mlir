module @jit__lambda attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<5x6xf32>) -> (tensor<5x6xf32> {jax.result_info = "result"}) {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %c_0 = stablehlo.constant dense<0> : tensor<i32>
    %0:3 = stablehlo.while(%iterArg = %c_0, %iterArg_1 = %c, %iterArg_2 = %arg0) : tensor<i32>, tensor<i32>, tensor<5x6xf32>
    cond {
      %c_3 = stablehlo.constant dense<4> : tensor<i32>
      %1 = stablehlo.compare LT, %iterArg, %c_3, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %1 : tensor<i1>
    } do {
      %1:2 = func.call @closed_call(%iterArg_1, %iterArg_2) : (tensor<i32>, tensor<5x6xf32>) -> (tensor<i32>, tensor<5x6xf32>)
      %c_3 = stablehlo.constant dense<1> : tensor<i32>
      %2 = stablehlo.add %iterArg, %c_3 : tensor<i32>
      stablehlo.return %2, %1#0, %1#1 : tensor<i32>, tensor<i32>, tensor<5x6xf32>
    }
    return %0#2 : tensor<5x6xf32>
  }
  func.func private @closed_call(%arg0: tensor<i32>, %arg1: tensor<5x6xf32>) -> (tensor<i32>, tensor<5x6xf32>) {
    %c = stablehlo.constant dense<1> : tensor<i32>
    %0 = stablehlo.add %arg0, %c : tensor<i32>
    %1 = stablehlo.tanh %arg1 : tensor<5x6xf32>
    %2 = stablehlo.convert %arg0 : (tensor<i32>) -> tensor<f32>
    %3 = stablehlo.broadcast_in_dim %2, dims = [] : (tensor<f32>) -> tensor<5x6xf32>
    %4 = stablehlo.multiply %1, %3 : tensor<5x6xf32>
    %5 = stablehlo.add %arg1, %4 : tensor<5x6xf32>
    return %0, %5 : tensor<i32>, tensor<5x6xf32>
  }
}
