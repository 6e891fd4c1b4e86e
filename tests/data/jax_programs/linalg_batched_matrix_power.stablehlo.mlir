module @jit__lambda attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<2x3x3xf32>) -> (tensor<2x3x3xf32> {jax.result_info = "result[0]"}, tensor<2x3x3xf32> {jax.result_info = "result[1]"}) {
    %0 = call @matrix_power(%arg0) : (tensor<2x3x3xf32>) -> tensor<2x3x3xf32>
    %1 = stablehlo.transpose %arg0, dims = [0, 2, 1] : (tensor<2x3x3xf32>) -> tensor<2x3x3xf32>
    %2 = stablehlo.dot_general %arg0, %1, batching_dims = [0] x [0], contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<2x3x3xf32>, tensor<2x3x3xf32>) -> tensor<2x3x3xf32>
    %3 = stablehlo.iota dim = 0 : tensor<3x3xi32>
    %4 = stablehlo.iota dim = 1 : tensor<3x3xi32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %5 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i32>) -> tensor<3x3xi32>
    %6 = stablehlo.add %3, %5 : tensor<3x3xi32>
    %7 = stablehlo.compare EQ, %6, %4, SIGNED : (tensor<3x3xi32>, tensor<3x3xi32>) -> tensor<3x3xi1>
    %8 = stablehlo.convert %7 : (tensor<3x3xi1>) -> tensor<3x3xf32>
    %cst = stablehlo.constant dense<3.000000e+00> : tensor<f32>
    %9 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<3x3xf32>
    %10 = stablehlo.multiply %9, %8 : tensor<3x3xf32>
    %11 = stablehlo.broadcast_in_dim %10, dims = [1, 2] : (tensor<3x3xf32>) -> tensor<1x3x3xf32>
    %12 = stablehlo.broadcast_in_dim %11, dims = [0, 1, 2] : (tensor<1x3x3xf32>) -> tensor<2x3x3xf32>
    %13 = stablehlo.add %2, %12 : tensor<2x3x3xf32>
    %14 = call @cholesky(%13) : (tensor<2x3x3xf32>) -> tensor<2x3x3xf32>
    return %0, %14 : tensor<2x3x3xf32>, tensor<2x3x3xf32>
  }
  func.func private @matrix_power(%arg0: tensor<2x3x3xf32>) -> tensor<2x3x3xf32> {
    %0 = stablehlo.dot_general %arg0, %arg0, batching_dims = [0] x [0], contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<2x3x3xf32>, tensor<2x3x3xf32>) -> tensor<2x3x3xf32>
    %1 = stablehlo.dot_general %0, %arg0, batching_dims = [0] x [0], contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<2x3x3xf32>, tensor<2x3x3xf32>) -> tensor<2x3x3xf32>
    return %1 : tensor<2x3x3xf32>
  }
  func.func private @cholesky(%arg0: tensor<2x3x3xf32>) -> tensor<2x3x3xf32> {
    %0 = stablehlo.transpose %arg0, dims = [0, 2, 1] : (tensor<2x3x3xf32>) -> tensor<2x3x3xf32>
    %1 = stablehlo.add %arg0, %0 : tensor<2x3x3xf32>
    %cst = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    %2 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<2x3x3xf32>
    %3 = stablehlo.divide %1, %2 : tensor<2x3x3xf32>
    %4:2 = stablehlo.custom_call @lapack_spotrf_ffi(%3) {backend_config = "", mhlo.backend_config = {uplo = 76 : ui8}, mhlo.frontend_attributes = {num_batch_dims = "1"}, operand_layouts = [dense<[1, 2, 0]> : tensor<3xindex>], output_operand_aliases = [#stablehlo.output_operand_alias<output_tuple_indices = [0], operand_index = 0, operand_tuple_indices = []>], result_layouts = [dense<[1, 2, 0]> : tensor<3xindex>, dense<0> : tensor<1xindex>], sdy.sharding_rule = #sdy.op_sharding_rule<([i, j, k])->([i, l, m], [i]) {i=2, j=3, k=3, l=3, m=3}, custom>} : (tensor<2x3x3xf32>) -> (tensor<2x3x3xf32>, tensor<2xi32>)
    %c = stablehlo.constant dense<0> : tensor<i32>
    %5 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i32>) -> tensor<2xi32>
    %6 = stablehlo.compare EQ, %4#1, %5, SIGNED : (tensor<2xi32>, tensor<2xi32>) -> tensor<2xi1>
    %7 = stablehlo.broadcast_in_dim %6, dims = [0] : (tensor<2xi1>) -> tensor<2x1x1xi1>
    %cst_0 = stablehlo.constant dense<0x7FC00000> : tensor<f32>
    %8 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<2x3x3xf32>
    %9 = stablehlo.broadcast_in_dim %7, dims = [0, 1, 2] : (tensor<2x1x1xi1>) -> tensor<2x3x3xi1>
    %10 = stablehlo.select %9, %4#0, %8 : tensor<2x3x3xi1>, tensor<2x3x3xf32>
    %11 = stablehlo.iota dim = 0 : tensor<3x3xi32>
    %c_1 = stablehlo.constant dense<0> : tensor<i32>
    %12 = stablehlo.broadcast_in_dim %c_1, dims = [] : (tensor<i32>) -> tensor<3x3xi32>
    %13 = stablehlo.add %11, %12 : tensor<3x3xi32>
    %14 = stablehlo.iota dim = 1 : tensor<3x3xi32>
    %15 = stablehlo.compare GE, %13, %14, SIGNED : (tensor<3x3xi32>, tensor<3x3xi32>) -> tensor<3x3xi1>
    %16 = stablehlo.broadcast_in_dim %15, dims = [1, 2] : (tensor<3x3xi1>) -> tensor<2x3x3xi1>
    %cst_2 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %17 = stablehlo.broadcast_in_dim %cst_2, dims = [] : (tensor<f32>) -> tensor<2x3x3xf32>
    %18 = stablehlo.select %16, %10, %17 : tensor<2x3x3xi1>, tensor<2x3x3xf32>
    return %18 : tensor<2x3x3xf32>
  }
}
