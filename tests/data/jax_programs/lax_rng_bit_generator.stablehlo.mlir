module @jit__lambda attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<4xui32>) -> (tensor<4xui32> {jax.result_info = "result[0][0]"}, tensor<3x5xui32> {jax.result_info = "result[0][1]"}, tensor<4xui32> {jax.result_info = "result[1][0]"}, tensor<7xui32> {jax.result_info = "result[1][1]"}, tensor<4xui32> {jax.result_info = "result[2][0]"}, tensor<2x3xui8> {jax.result_info = "result[2][1]"}) {
    %0 = stablehlo.reshape %arg0 : (tensor<4xui32>) -> tensor<2x2xui32>
    %1 = stablehlo.bitcast_convert %0 : (tensor<2x2xui32>) -> tensor<2xui64>
    %output_state, %output = stablehlo.rng_bit_generator %1, algorithm = THREE_FRY : (tensor<2xui64>) -> (tensor<2xui64>, tensor<3x5xui32>)
    %2 = stablehlo.bitcast_convert %output_state : (tensor<2xui64>) -> tensor<2x2xui32>
    %3 = stablehlo.reshape %2 : (tensor<2x2xui32>) -> tensor<4xui32>
    %4 = stablehlo.reshape %arg0 : (tensor<4xui32>) -> tensor<2x2xui32>
    %5 = stablehlo.bitcast_convert %4 : (tensor<2x2xui32>) -> tensor<2xui64>
    %output_state_0, %output_1 = stablehlo.rng_bit_generator %5, algorithm = PHILOX : (tensor<2xui64>) -> (tensor<2xui64>, tensor<7xui32>)
    %6 = stablehlo.bitcast_convert %output_state_0 : (tensor<2xui64>) -> tensor<2x2xui32>
    %7 = stablehlo.reshape %6 : (tensor<2x2xui32>) -> tensor<4xui32>
    %8 = stablehlo.reshape %arg0 : (tensor<4xui32>) -> tensor<2x2xui32>
    %9 = stablehlo.bitcast_convert %8 : (tensor<2x2xui32>) -> tensor<2xui64>
    %output_state_2, %output_3 = stablehlo.rng_bit_generator %9, algorithm = DEFAULT : (tensor<2xui64>) -> (tensor<2xui64>, tensor<2x3xui8>)
    %10 = stablehlo.bitcast_convert %output_state_2 : (tensor<2xui64>) -> tensor<2x2xui32>
    %11 = stablehlo.reshape %10 : (tensor<2x2xui32>) -> tensor<4xui32>
    return %3, %output, %7, %output_1, %11, %output_3 : tensor<4xui32>, tensor<3x5xui32>, tensor<4xui32>, tensor<7xui32>, tensor<4xui32>, tensor<2x3xui8>
  }
}
