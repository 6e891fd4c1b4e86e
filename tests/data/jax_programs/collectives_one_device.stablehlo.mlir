module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<4x3xf32>) -> (tensor<4x3xf32> {jax.result_info = "result[0]"}, tensor<1x4x3xf32> {jax.result_info = "result[1]"}, tensor<4x3xf32> {jax.result_info = "result[2]"}, tensor<4x3xf32> {jax.result_info = "result[3]"}, tensor<4x3xf32> {jax.result_info = "result[4]"}, tensor<4x3xf32> {jax.result_info = "result[5]"}) {
    %0 = "stablehlo.all_reduce"(%arg0) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<0> : tensor<1x1xi64>, use_global_device_ids}> ({
    ^bb0(%arg1: tensor<f32>, %arg2: tensor<f32>):
      %6 = stablehlo.add %arg1, %arg2 : tensor<f32>
      stablehlo.return %6 : tensor<f32>
    }) : (tensor<4x3xf32>) -> tensor<4x3xf32>
    %1 = stablehlo.broadcast_in_dim %arg0, dims = [1, 2] : (tensor<4x3xf32>) -> tensor<1x4x3xf32>
    %2 = "stablehlo.all_gather"(%1) <{all_gather_dim = 0 : i64, channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<0> : tensor<1x1xi64>, use_global_device_ids}> : (tensor<1x4x3xf32>) -> tensor<1x4x3xf32>
    %3 = "stablehlo.reduce_scatter"(%arg0) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<0> : tensor<1x1xi64>, scatter_dimension = 0 : i64, use_global_device_ids}> ({
    ^bb0(%arg1: tensor<f32>, %arg2: tensor<f32>):
      %6 = stablehlo.add %arg1, %arg2 : tensor<f32>
      stablehlo.return %6 : tensor<f32>
    }) : (tensor<4x3xf32>) -> tensor<4x3xf32>
    %4 = "stablehlo.collective_permute"(%arg0) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, source_target_pairs = dense<0> : tensor<1x2xi64>}> : (tensor<4x3xf32>) -> tensor<4x3xf32>
    %5 = "stablehlo.all_reduce"(%arg0) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<0> : tensor<1x1xi64>, use_global_device_ids}> ({
    ^bb0(%arg1: tensor<f32>, %arg2: tensor<f32>):
      %6 = stablehlo.maximum %arg1, %arg2 : tensor<f32>
      stablehlo.return %6 : tensor<f32>
    }) : (tensor<4x3xf32>) -> tensor<4x3xf32>
    return %0, %2, %3, %4, %arg0, %5 : tensor<4x3xf32>, tensor<1x4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>
  }
}
