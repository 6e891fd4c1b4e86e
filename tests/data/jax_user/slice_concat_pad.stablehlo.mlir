module @jit__lambda attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<21x5xf32>) -> (tensor<21x8xf32> {jax.result_info = "result"}) {
    %0 = stablehlo.slice %arg0 [0:21:2, 0:5] : (tensor<21x5xf32>) -> tensor<11x5xf32>
    %1 = stablehlo.slice %arg0 [1:21:3, 0:5] : (tensor<21x5xf32>) -> tensor<7x5xf32>
    %2 = stablehlo.concatenate %0, %1, dim = 0 : (tensor<11x5xf32>, tensor<7x5xf32>) -> tensor<18x5xf32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %3 = call @_pad(%2, %c) : (tensor<18x5xf32>, tensor<i32>) -> tensor<21x8xf32>
    return %3 : tensor<21x8xf32>
  }
  func.func private @_pad(%arg0: tensor<18x5xf32>, %arg1: tensor<i32>) -> tensor<21x8xf32> {
    %0 = stablehlo.convert %arg1 : (tensor<i32>) -> tensor<f32>
    %1 = stablehlo.pad %arg0, %0, low = [1, 0], high = [2, 3], interior = [0, 0] : (tensor<18x5xf32>, tensor<f32>) -> tensor<21x8xf32>
    return %1 : tensor<21x8xf32>
  }
}
