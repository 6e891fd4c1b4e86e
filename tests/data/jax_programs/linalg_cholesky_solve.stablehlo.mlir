module @jit__lambda attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<4x4xf32>, %arg1: tensor<4x2xf32>) -> (tensor<4x4xf32> {jax.result_info = "result[0]"}, tensor<4x2xf32> {jax.result_info = "result[1]"}) {
    %0 = call @cholesky(%arg0) : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %1 = call @_cholesky(%arg0) : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %2 = call @_cho_solve(%1, %arg1) : (tensor<4x4xf32>, tensor<4x2xf32>) -> tensor<4x2xf32>
    return %0, %2 : tensor<4x4xf32>, tensor<4x2xf32>
  }
  func.func private @cholesky(%arg0: tensor<4x4xf32>) -> tensor<4x4xf32> {
    %0 = stablehlo.transpose %arg0, dims = [1, 0] : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %1 = stablehlo.add %arg0, %0 : tensor<4x4xf32>
    %cst = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    %2 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<4x4xf32>
    %3 = stablehlo.divide %1, %2 : tensor<4x4xf32>
    %4:2 = stablehlo.custom_call @lapack_spotrf_ffi(%3) {backend_config = "", mhlo.backend_config = {uplo = 76 : ui8}, mhlo.frontend_attributes = {num_batch_dims = "0"}, operand_layouts = [dense<[0, 1]> : tensor<2xindex>], output_operand_aliases = [#stablehlo.output_operand_alias<output_tuple_indices = [0], operand_index = 0, operand_tuple_indices = []>], result_layouts = [dense<[0, 1]> : tensor<2xindex>, dense<> : tensor<0xindex>], sdy.sharding_rule = #sdy.op_sharding_rule<([i, j])->([k, l], []) {i=4, j=4, k=4, l=4}, custom>} : (tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<i32>)
    %c = stablehlo.constant dense<0> : tensor<i32>
    %5 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i32>) -> tensor<i32>
    %6 = stablehlo.compare EQ, %4#1, %5, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %7 = stablehlo.broadcast_in_dim %6, dims = [] : (tensor<i1>) -> tensor<1x1xi1>
    %cst_0 = stablehlo.constant dense<0x7FC00000> : tensor<f32>
    %8 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<4x4xf32>
    %9 = stablehlo.broadcast_in_dim %7, dims = [0, 1] : (tensor<1x1xi1>) -> tensor<4x4xi1>
    %10 = stablehlo.select %9, %4#0, %8 : tensor<4x4xi1>, tensor<4x4xf32>
    %11 = stablehlo.iota dim = 0 : tensor<4x4xi32>
    %c_1 = stablehlo.constant dense<0> : tensor<i32>
    %12 = stablehlo.broadcast_in_dim %c_1, dims = [] : (tensor<i32>) -> tensor<4x4xi32>
    %13 = stablehlo.add %11, %12 : tensor<4x4xi32>
    %14 = stablehlo.iota dim = 1 : tensor<4x4xi32>
    %15 = stablehlo.compare GE, %13, %14, SIGNED : (tensor<4x4xi32>, tensor<4x4xi32>) -> tensor<4x4xi1>
    %cst_2 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %16 = stablehlo.broadcast_in_dim %cst_2, dims = [] : (tensor<f32>) -> tensor<4x4xf32>
    %17 = stablehlo.select %15, %10, %16 : tensor<4x4xi1>, tensor<4x4xf32>
    return %17 : tensor<4x4xf32>
  }
  func.func private @_cholesky(%arg0: tensor<4x4xf32>) -> tensor<4x4xf32> {
    %0 = stablehlo.transpose %arg0, dims = [1, 0] : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %1:2 = stablehlo.custom_call @lapack_spotrf_ffi(%0) {backend_config = "", mhlo.backend_config = {uplo = 76 : ui8}, mhlo.frontend_attributes = {num_batch_dims = "0"}, operand_layouts = [dense<[0, 1]> : tensor<2xindex>], output_operand_aliases = [#stablehlo.output_operand_alias<output_tuple_indices = [0], operand_index = 0, operand_tuple_indices = []>], result_layouts = [dense<[0, 1]> : tensor<2xindex>, dense<> : tensor<0xindex>], sdy.sharding_rule = #sdy.op_sharding_rule<([i, j])->([k, l], []) {i=4, j=4, k=4, l=4}, custom>} : (tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<i32>)
    %c = stablehlo.constant dense<0> : tensor<i32>
    %2 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i32>) -> tensor<i32>
    %3 = stablehlo.compare EQ, %1#1, %2, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %4 = stablehlo.broadcast_in_dim %3, dims = [] : (tensor<i1>) -> tensor<1x1xi1>
    %cst = stablehlo.constant dense<0x7FC00000> : tensor<f32>
    %5 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<4x4xf32>
    %6 = stablehlo.broadcast_in_dim %4, dims = [0, 1] : (tensor<1x1xi1>) -> tensor<4x4xi1>
    %7 = stablehlo.select %6, %1#0, %5 : tensor<4x4xi1>, tensor<4x4xf32>
    %8 = stablehlo.iota dim = 0 : tensor<4x4xi32>
    %c_0 = stablehlo.constant dense<0> : tensor<i32>
    %9 = stablehlo.broadcast_in_dim %c_0, dims = [] : (tensor<i32>) -> tensor<4x4xi32>
    %10 = stablehlo.add %8, %9 : tensor<4x4xi32>
    %11 = stablehlo.iota dim = 1 : tensor<4x4xi32>
    %12 = stablehlo.compare GE, %10, %11, SIGNED : (tensor<4x4xi32>, tensor<4x4xi32>) -> tensor<4x4xi1>
    %cst_1 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %13 = stablehlo.broadcast_in_dim %cst_1, dims = [] : (tensor<f32>) -> tensor<4x4xf32>
    %14 = stablehlo.select %12, %7, %13 : tensor<4x4xi1>, tensor<4x4xf32>
    %15 = stablehlo.transpose %14, dims = [1, 0] : (tensor<4x4xf32>) -> tensor<4x4xf32>
    return %15 : tensor<4x4xf32>
  }
  func.func private @_cho_solve(%arg0: tensor<4x4xf32>, %arg1: tensor<4x2xf32>) -> tensor<4x2xf32> {
    %0 = stablehlo.custom_call @lapack_strsm_ffi(%arg0, %arg1) {backend_config = "", mhlo.backend_config = {diag = 78 : ui8, side = 76 : ui8, trans_x = 84 : ui8, uplo = 85 : ui8}, mhlo.frontend_attributes = {num_batch_dims = "0"}, operand_layouts = [dense<[0, 1]> : tensor<2xindex>, dense<[0, 1]> : tensor<2xindex>], output_operand_aliases = [#stablehlo.output_operand_alias<output_tuple_indices = [], operand_index = 1, operand_tuple_indices = []>], result_layouts = [dense<[0, 1]> : tensor<2xindex>], sdy.sharding_rule = #sdy.op_sharding_rule<([i, j], [k, l])->([m, n]) {i=4, j=4, k=4, l=2, m=4, n=2}, custom>} : (tensor<4x4xf32>, tensor<4x2xf32>) -> tensor<4x2xf32>
    %1 = stablehlo.custom_call @lapack_strsm_ffi(%arg0, %0) {backend_config = "", mhlo.backend_config = {diag = 78 : ui8, side = 76 : ui8, trans_x = 78 : ui8, uplo = 85 : ui8}, mhlo.frontend_attributes = {num_batch_dims = "0"}, operand_layouts = [dense<[0, 1]> : tensor<2xindex>, dense<[0, 1]> : tensor<2xindex>], output_operand_aliases = [#stablehlo.output_operand_alias<output_tuple_indices = [], operand_index = 1, operand_tuple_indices = []>], result_layouts = [dense<[0, 1]> : tensor<2xindex>], sdy.sharding_rule = #sdy.op_sharding_rule<([i, j], [k, l])->([m, n]) {i=4, j=4, k=4, l=2, m=4, n=2}, custom>} : (tensor<4x4xf32>, tensor<4x2xf32>) -> tensor<4x2xf32>
    return %1 : tensor<4x2xf32>
  }
}
