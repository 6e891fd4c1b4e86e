module @jit__lambda attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<4x4xf32>) -> (tensor<4x4xf32> {jax.result_info = "result[0]"}, tensor<f32> {jax.result_info = "result[1]"}, tensor<f32> {jax.result_info = "result[2].sign"}, tensor<f32> {jax.result_info = "result[2].logabsdet"}) {
    %0 = call @inv(%arg0) : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %1 = call @det(%arg0) : (tensor<4x4xf32>) -> tensor<f32>
    %2:2 = call @slogdet(%arg0) : (tensor<4x4xf32>) -> (tensor<f32>, tensor<f32>)
    return %0, %1, %2#0, %2#1 : tensor<4x4xf32>, tensor<f32>, tensor<f32>, tensor<f32>
  }
  func.func private @inv(%arg0: tensor<4x4xf32>) -> tensor<4x4xf32> {
    %0 = stablehlo.iota dim = 0 : tensor<4x4xi32>
    %1 = stablehlo.iota dim = 1 : tensor<4x4xi32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %2 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i32>) -> tensor<4x4xi32>
    %3 = stablehlo.add %0, %2 : tensor<4x4xi32>
    %4 = stablehlo.compare EQ, %3, %1, SIGNED : (tensor<4x4xi32>, tensor<4x4xi32>) -> tensor<4x4xi1>
    %5 = stablehlo.convert %4 : (tensor<4x4xi1>) -> tensor<4x4xf32>
    %6 = call @solve(%arg0, %5) : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    return %6 : tensor<4x4xf32>
  }
  func.func private @solve(%arg0: tensor<4x4xf32>, %arg1: tensor<4x4xf32>) -> tensor<4x4xf32> {
    %0:3 = stablehlo.custom_call @lapack_sgetrf_ffi(%arg0) {backend_config = "", mhlo.backend_config = {}, mhlo.frontend_attributes = {num_batch_dims = "0"}, operand_layouts = [dense<[0, 1]> : tensor<2xindex>], output_operand_aliases = [#stablehlo.output_operand_alias<output_tuple_indices = [0], operand_index = 0, operand_tuple_indices = []>], result_layouts = [dense<[0, 1]> : tensor<2xindex>, dense<0> : tensor<1xindex>, dense<> : tensor<0xindex>], sdy.sharding_rule = #sdy.op_sharding_rule<([i, j])->([k, l], [m], []) {i=4, j=4, k=4, l=4, m=4}, custom>} : (tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4xi32>, tensor<i32>)
    %c = stablehlo.constant dense<1> : tensor<i32>
    %1 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i32>) -> tensor<4xi32>
    %2 = stablehlo.subtract %0#1, %1 : tensor<4xi32>
    %c_0 = stablehlo.constant dense<0> : tensor<i32>
    %3 = stablehlo.broadcast_in_dim %c_0, dims = [] : (tensor<i32>) -> tensor<i32>
    %4 = stablehlo.compare GE, %0#2, %3, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %5 = stablehlo.broadcast_in_dim %4, dims = [] : (tensor<i1>) -> tensor<1x1xi1>
    %cst = stablehlo.constant dense<0x7FC00000> : tensor<f32>
    %6 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<4x4xf32>
    %7 = stablehlo.broadcast_in_dim %5, dims = [0, 1] : (tensor<1x1xi1>) -> tensor<4x4xi1>
    %8 = stablehlo.select %7, %0#0, %6 : tensor<4x4xi1>, tensor<4x4xf32>
    %9 = stablehlo.iota dim = 0 : tensor<4xi32>
    %c_1 = stablehlo.constant dense<0> : tensor<i32>
    %c_2 = stablehlo.constant dense<0> : tensor<i32>
    %10:4 = stablehlo.while(%iterArg = %2, %iterArg_3 = %c_2, %iterArg_4 = %c_1, %iterArg_5 = %9) : tensor<4xi32>, tensor<i32>, tensor<i32>, tensor<4xi32>
    cond {
      %c_6 = stablehlo.constant dense<4> : tensor<i32>
      %14 = stablehlo.compare LT, %iterArg_3, %c_6, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %14 : tensor<i1>
    } do {
      %14:2 = func.call @closed_call(%iterArg, %iterArg_4, %iterArg_5) : (tensor<4xi32>, tensor<i32>, tensor<4xi32>) -> (tensor<i32>, tensor<4xi32>)
      %c_6 = stablehlo.constant dense<1> : tensor<i32>
      %15 = stablehlo.add %iterArg_3, %c_6 : tensor<i32>
      stablehlo.return %iterArg, %15, %14#0, %14#1 : tensor<4xi32>, tensor<i32>, tensor<i32>, tensor<4xi32>
    }
    %11 = stablehlo.transpose %arg1, dims = [1, 0] : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %12 = call @_lu_solve(%8, %10#3, %11) : (tensor<4x4xf32>, tensor<4xi32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %13 = stablehlo.transpose %12, dims = [1, 0] : (tensor<4x4xf32>) -> tensor<4x4xf32>
    return %13 : tensor<4x4xf32>
  }
  func.func private @closed_call(%arg0: tensor<4xi32>, %arg1: tensor<i32>, %arg2: tensor<4xi32>) -> (tensor<i32>, tensor<4xi32>) {
    %c = stablehlo.constant dense<1> : tensor<i32>
    %0 = stablehlo.add %arg1, %c : tensor<i32>
    %c_0 = stablehlo.constant dense<0> : tensor<i32>
    %1 = stablehlo.compare LT, %arg1, %c_0, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %2 = stablehlo.convert %arg1 : tensor<i32>
    %c_1 = stablehlo.constant dense<4> : tensor<i32>
    %3 = stablehlo.add %2, %c_1 : tensor<i32>
    %4 = stablehlo.select %1, %3, %arg1 : tensor<i1>, tensor<i32>
    %5 = stablehlo.dynamic_slice %arg0, %4, sizes = [1] : (tensor<4xi32>, tensor<i32>) -> tensor<1xi32>
    %6 = stablehlo.reshape %5 : (tensor<1xi32>) -> tensor<i32>
    %c_2 = stablehlo.constant dense<0> : tensor<i32>
    %7 = stablehlo.compare LT, %arg1, %c_2, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %8 = stablehlo.convert %arg1 : tensor<i32>
    %c_3 = stablehlo.constant dense<4> : tensor<i32>
    %9 = stablehlo.add %8, %c_3 : tensor<i32>
    %10 = stablehlo.select %7, %9, %arg1 : tensor<i1>, tensor<i32>
    %11 = stablehlo.dynamic_slice %arg2, %10, sizes = [1] : (tensor<4xi32>, tensor<i32>) -> tensor<1xi32>
    %12 = stablehlo.reshape %11 : (tensor<1xi32>) -> tensor<i32>
    %c_4 = stablehlo.constant dense<0> : tensor<i32>
    %13 = stablehlo.compare LT, %6, %c_4, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %c_5 = stablehlo.constant dense<4> : tensor<i32>
    %14 = stablehlo.add %6, %c_5 : tensor<i32>
    %15 = stablehlo.select %13, %14, %6 : tensor<i1>, tensor<i32>
    %16 = stablehlo.dynamic_slice %arg2, %15, sizes = [1] : (tensor<4xi32>, tensor<i32>) -> tensor<1xi32>
    %17 = stablehlo.reshape %16 : (tensor<1xi32>) -> tensor<i32>
    %c_6 = stablehlo.constant dense<0> : tensor<i32>
    %18 = stablehlo.compare LT, %arg1, %c_6, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %c_7 = stablehlo.constant dense<4> : tensor<i32>
    %19 = stablehlo.add %arg1, %c_7 : tensor<i32>
    %20 = stablehlo.select %18, %19, %arg1 : tensor<i1>, tensor<i32>
    %21 = stablehlo.convert %20 : tensor<i32>
    %22 = stablehlo.broadcast_in_dim %21, dims = [] : (tensor<i32>) -> tensor<1xi32>
    %23 = "stablehlo.scatter"(%arg2, %22, %17) <{indices_are_sorted = true, scatter_dimension_numbers = #stablehlo.scatter<inserted_window_dims = [0], scatter_dims_to_operand_dims = [0]>, unique_indices = true}> ({
    ^bb0(%arg3: tensor<i32>, %arg4: tensor<i32>):
      stablehlo.return %arg4 : tensor<i32>
    }) : (tensor<4xi32>, tensor<1xi32>, tensor<i32>) -> tensor<4xi32>
    %c_8 = stablehlo.constant dense<0> : tensor<i32>
    %24 = stablehlo.compare LT, %6, %c_8, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %c_9 = stablehlo.constant dense<4> : tensor<i32>
    %25 = stablehlo.add %6, %c_9 : tensor<i32>
    %26 = stablehlo.select %24, %25, %6 : tensor<i1>, tensor<i32>
    %27 = stablehlo.broadcast_in_dim %26, dims = [] : (tensor<i32>) -> tensor<1xi32>
    %28 = "stablehlo.scatter"(%23, %27, %12) <{indices_are_sorted = true, scatter_dimension_numbers = #stablehlo.scatter<inserted_window_dims = [0], scatter_dims_to_operand_dims = [0]>, unique_indices = true}> ({
    ^bb0(%arg3: tensor<i32>, %arg4: tensor<i32>):
      stablehlo.return %arg4 : tensor<i32>
    }) : (tensor<4xi32>, tensor<1xi32>, tensor<i32>) -> tensor<4xi32>
    return %0, %28 : tensor<i32>, tensor<4xi32>
  }
  func.func private @_lu_solve(%arg0: tensor<4x4xf32>, %arg1: tensor<4xi32>, %arg2: tensor<4x4xf32>) -> tensor<4x4xf32> {
    %0 = stablehlo.broadcast_in_dim %arg2, dims = [0, 1] : (tensor<4x4xf32>) -> tensor<4x4x1xf32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %1 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i32>) -> tensor<4xi32>
    %2 = stablehlo.compare LT, %arg1, %1, SIGNED : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi1>
    %c_0 = stablehlo.constant dense<4> : tensor<i32>
    %3 = stablehlo.broadcast_in_dim %c_0, dims = [] : (tensor<i32>) -> tensor<4xi32>
    %4 = stablehlo.add %arg1, %3 : tensor<4xi32>
    %5 = stablehlo.select %2, %4, %arg1 : tensor<4xi1>, tensor<4xi32>
    %6 = stablehlo.broadcast_in_dim %5, dims = [0] : (tensor<4xi32>) -> tensor<4x1xi32>
    %7 = "stablehlo.gather"(%0, %6) <{dimension_numbers = #stablehlo.gather<offset_dims = [0, 2], collapsed_slice_dims = [1], start_index_map = [1], index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = array<i64: 4, 1, 1>}> : (tensor<4x4x1xf32>, tensor<4x1xi32>) -> tensor<4x4x1xf32>
    %8 = stablehlo.transpose %7, dims = [1, 2, 0] : (tensor<4x4x1xf32>) -> tensor<4x1x4xf32>
    %9 = stablehlo.reshape %8 : (tensor<4x1x4xf32>) -> tensor<4x4xf32>
    %10 = stablehlo.custom_call @lapack_strsm_ffi(%arg0, %9) {backend_config = "", mhlo.backend_config = {diag = 85 : ui8, side = 76 : ui8, trans_x = 78 : ui8, uplo = 76 : ui8}, mhlo.frontend_attributes = {num_batch_dims = "0"}, operand_layouts = [dense<[0, 1]> : tensor<2xindex>, dense<[0, 1]> : tensor<2xindex>], output_operand_aliases = [#stablehlo.output_operand_alias<output_tuple_indices = [], operand_index = 1, operand_tuple_indices = []>], result_layouts = [dense<[0, 1]> : tensor<2xindex>], sdy.sharding_rule = #sdy.op_sharding_rule<([i, j], [k, l])->([m, n]) {i=4, j=4, k=4, l=4, m=4, n=4}, custom>} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %11 = stablehlo.reshape %10 : (tensor<4x4xf32>) -> tensor<4x1x4xf32>
    %12 = stablehlo.reshape %11 : (tensor<4x1x4xf32>) -> tensor<4x4xf32>
    %13 = stablehlo.custom_call @lapack_strsm_ffi(%arg0, %12) {backend_config = "", mhlo.backend_config = {diag = 78 : ui8, side = 76 : ui8, trans_x = 78 : ui8, uplo = 85 : ui8}, mhlo.frontend_attributes = {num_batch_dims = "0"}, operand_layouts = [dense<[0, 1]> : tensor<2xindex>, dense<[0, 1]> : tensor<2xindex>], output_operand_aliases = [#stablehlo.output_operand_alias<output_tuple_indices = [], operand_index = 1, operand_tuple_indices = []>], result_layouts = [dense<[0, 1]> : tensor<2xindex>], sdy.sharding_rule = #sdy.op_sharding_rule<([i, j], [k, l])->([m, n]) {i=4, j=4, k=4, l=4, m=4, n=4}, custom>} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %14 = stablehlo.reshape %13 : (tensor<4x4xf32>) -> tensor<4x1x4xf32>
    %15 = stablehlo.transpose %14, dims = [2, 0, 1] : (tensor<4x1x4xf32>) -> tensor<4x4x1xf32>
    %16 = stablehlo.reshape %15 : (tensor<4x4x1xf32>) -> tensor<4x4xf32>
    return %16 : tensor<4x4xf32>
  }
  func.func private @det(%arg0: tensor<4x4xf32>) -> tensor<f32> {
    %0:2 = call @slogdet(%arg0) : (tensor<4x4xf32>) -> (tensor<f32>, tensor<f32>)
    %1 = stablehlo.exponential %0#1 : tensor<f32>
    %2 = stablehlo.multiply %0#0, %1 : tensor<f32>
    return %2 : tensor<f32>
  }
  func.func private @slogdet(%arg0: tensor<4x4xf32>) -> (tensor<f32>, tensor<f32>) {
    %0:3 = stablehlo.custom_call @lapack_sgetrf_ffi(%arg0) {backend_config = "", mhlo.backend_config = {}, mhlo.frontend_attributes = {num_batch_dims = "0"}, operand_layouts = [dense<[0, 1]> : tensor<2xindex>], output_operand_aliases = [#stablehlo.output_operand_alias<output_tuple_indices = [0], operand_index = 0, operand_tuple_indices = []>], result_layouts = [dense<[0, 1]> : tensor<2xindex>, dense<0> : tensor<1xindex>, dense<> : tensor<0xindex>], sdy.sharding_rule = #sdy.op_sharding_rule<([i, j])->([k, l], [m], []) {i=4, j=4, k=4, l=4, m=4}, custom>} : (tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4xi32>, tensor<i32>)
    %c = stablehlo.constant dense<1> : tensor<i32>
    %1 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i32>) -> tensor<4xi32>
    %2 = stablehlo.subtract %0#1, %1 : tensor<4xi32>
    %c_0 = stablehlo.constant dense<0> : tensor<i32>
    %3 = stablehlo.broadcast_in_dim %c_0, dims = [] : (tensor<i32>) -> tensor<i32>
    %4 = stablehlo.compare GE, %0#2, %3, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %5 = stablehlo.broadcast_in_dim %4, dims = [] : (tensor<i1>) -> tensor<1x1xi1>
    %cst = stablehlo.constant dense<0x7FC00000> : tensor<f32>
    %6 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<4x4xf32>
    %7 = stablehlo.broadcast_in_dim %5, dims = [0, 1] : (tensor<1x1xi1>) -> tensor<4x4xi1>
    %8 = stablehlo.select %7, %0#0, %6 : tensor<4x4xi1>, tensor<4x4xf32>
    %9 = stablehlo.iota dim = 0 : tensor<4xi32>
    %c_1 = stablehlo.constant dense<0> : tensor<i32>
    %c_2 = stablehlo.constant dense<0> : tensor<i32>
    %10:4 = stablehlo.while(%iterArg = %2, %iterArg_13 = %c_2, %iterArg_14 = %c_1, %iterArg_15 = %9) : tensor<4xi32>, tensor<i32>, tensor<i32>, tensor<4xi32>
    cond {
      %c_16 = stablehlo.constant dense<4> : tensor<i32>
      %32 = stablehlo.compare LT, %iterArg_13, %c_16, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %32 : tensor<i1>
    } do {
      %32:2 = func.call @closed_call(%iterArg, %iterArg_14, %iterArg_15) : (tensor<4xi32>, tensor<i32>, tensor<4xi32>) -> (tensor<i32>, tensor<4xi32>)
      %c_16 = stablehlo.constant dense<1> : tensor<i32>
      %33 = stablehlo.add %iterArg_13, %c_16 : tensor<i32>
      stablehlo.return %iterArg, %33, %32#0, %32#1 : tensor<4xi32>, tensor<i32>, tensor<i32>, tensor<4xi32>
    }
    %11 = call @diagonal(%8) : (tensor<4x4xf32>) -> tensor<4xf32>
    %cst_3 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %12 = stablehlo.broadcast_in_dim %cst_3, dims = [] : (tensor<f32>) -> tensor<4xf32>
    %13 = stablehlo.compare EQ, %11, %12, FLOAT : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
    %c_4 = stablehlo.constant dense<false> : tensor<i1>
    %14 = stablehlo.reduce(%13 init: %c_4) applies stablehlo.or across dimensions = [0] : (tensor<4xi1>, tensor<i1>) -> tensor<i1>
    %15 = stablehlo.iota dim = 0 : tensor<4xi32>
    %16 = stablehlo.compare NE, %2, %15, SIGNED : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi1>
    %17 = call @count_nonzero(%16) : (tensor<4xi1>) -> tensor<i32>
    %cst_5 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %18 = stablehlo.broadcast_in_dim %cst_5, dims = [] : (tensor<f32>) -> tensor<4xf32>
    %19 = stablehlo.compare LT, %11, %18, FLOAT : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
    %20 = call @count_nonzero(%19) : (tensor<4xi1>) -> tensor<i32>
    %21 = stablehlo.add %17, %20 : tensor<i32>
    %c_6 = stablehlo.constant dense<2> : tensor<i32>
    %22 = call @remainder(%21, %c_6) : (tensor<i32>, tensor<i32>) -> tensor<i32>
    %c_7 = stablehlo.constant dense<-2> : tensor<i32>
    %23 = stablehlo.multiply %c_7, %22 : tensor<i32>
    %c_8 = stablehlo.constant dense<1> : tensor<i32>
    %24 = stablehlo.add %23, %c_8 : tensor<i32>
    %25 = stablehlo.convert %24 : (tensor<i32>) -> tensor<f32>
    %cst_9 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %26 = stablehlo.multiply %cst_9, %25 : tensor<f32>
    %cst_10 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %27 = call @_where_0(%14, %cst_10, %26) : (tensor<i1>, tensor<f32>, tensor<f32>) -> tensor<f32>
    %28 = stablehlo.abs %11 : tensor<4xf32>
    %29 = stablehlo.log %28 : tensor<4xf32>
    %cst_11 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %30 = stablehlo.reduce(%29 init: %cst_11) applies stablehlo.add across dimensions = [0] : (tensor<4xf32>, tensor<f32>) -> tensor<f32>
    %cst_12 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %31 = call @_where_0(%14, %cst_12, %30) : (tensor<i1>, tensor<f32>, tensor<f32>) -> tensor<f32>
    return %27, %31 : tensor<f32>, tensor<f32>
  }
  func.func private @diagonal(%arg0: tensor<4x4xf32>) -> tensor<4xf32> {
    %0 = stablehlo.iota dim = 0 : tensor<4x4xi32>
    %1 = stablehlo.iota dim = 1 : tensor<4x4xi32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %2 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i32>) -> tensor<4x4xi32>
    %3 = stablehlo.add %0, %2 : tensor<4x4xi32>
    %4 = stablehlo.compare EQ, %3, %1, SIGNED : (tensor<4x4xi32>, tensor<4x4xi32>) -> tensor<4x4xi1>
    %5 = stablehlo.convert %4 : (tensor<4x4xi1>) -> tensor<4x4xf32>
    %c_0 = stablehlo.constant dense<1> : tensor<i32>
    %6 = "stablehlo.case"(%c_0) ({
      %c_1 = stablehlo.constant dense<0> : tensor<i32>
      stablehlo.return %c_1 : tensor<i32>
    }, {
      %c_1 = stablehlo.constant dense<0> : tensor<i32>
      stablehlo.return %c_1 : tensor<i32>
    }) : (tensor<i32>) -> tensor<i32>
    %7 = "stablehlo.case"(%6) ({
      %8 = stablehlo.iota dim = 0 : tensor<4xi32>
      %9 = stablehlo.iota dim = 0 : tensor<4xi32>
      %c_1 = stablehlo.constant dense<0> : tensor<i32>
      %10 = stablehlo.broadcast_in_dim %c_1, dims = [] : (tensor<i32>) -> tensor<4xi32>
      %11 = stablehlo.compare LT, %8, %10, SIGNED : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi1>
      %c_2 = stablehlo.constant dense<4> : tensor<i32>
      %12 = stablehlo.broadcast_in_dim %c_2, dims = [] : (tensor<i32>) -> tensor<4xi32>
      %13 = stablehlo.add %8, %12 : tensor<4xi32>
      %14 = stablehlo.select %11, %13, %8 : tensor<4xi1>, tensor<4xi32>
      %c_3 = stablehlo.constant dense<0> : tensor<i32>
      %15 = stablehlo.broadcast_in_dim %c_3, dims = [] : (tensor<i32>) -> tensor<4xi32>
      %16 = stablehlo.compare LT, %9, %15, SIGNED : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi1>
      %c_4 = stablehlo.constant dense<4> : tensor<i32>
      %17 = stablehlo.broadcast_in_dim %c_4, dims = [] : (tensor<i32>) -> tensor<4xi32>
      %18 = stablehlo.add %9, %17 : tensor<4xi32>
      %19 = stablehlo.select %16, %18, %9 : tensor<4xi1>, tensor<4xi32>
      %20 = stablehlo.broadcast_in_dim %14, dims = [0] : (tensor<4xi32>) -> tensor<4x1xi32>
      %21 = stablehlo.broadcast_in_dim %19, dims = [0] : (tensor<4xi32>) -> tensor<4x1xi32>
      %22 = stablehlo.concatenate %20, %21, dim = 1 : (tensor<4x1xi32>, tensor<4x1xi32>) -> tensor<4x2xi32>
      %23 = "stablehlo.gather"(%arg0, %22) <{dimension_numbers = #stablehlo.gather<collapsed_slice_dims = [0, 1], start_index_map = [0, 1], index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = array<i64: 1, 1>}> : (tensor<4x4xf32>, tensor<4x2xi32>) -> tensor<4xf32>
      stablehlo.return %23 : tensor<4xf32>
    }) : (tensor<i32>) -> tensor<4xf32>
    return %7 : tensor<4xf32>
  }
  func.func private @count_nonzero(%arg0: tensor<4xi1>) -> tensor<i32> {
    %c = stablehlo.constant dense<false> : tensor<i1>
    %0 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i1>) -> tensor<4xi1>
    %1 = stablehlo.compare NE, %arg0, %0, UNSIGNED : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
    %2 = stablehlo.convert %1 : (tensor<4xi1>) -> tensor<4xi32>
    %c_0 = stablehlo.constant dense<0> : tensor<i32>
    %3 = stablehlo.reduce(%2 init: %c_0) applies stablehlo.add across dimensions = [0] : (tensor<4xi32>, tensor<i32>) -> tensor<i32>
    return %3 : tensor<i32>
  }
  func.func private @remainder(%arg0: tensor<i32>, %arg1: tensor<i32>) -> tensor<i32> {
    %0 = stablehlo.convert %arg1 : tensor<i32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %1 = stablehlo.compare EQ, %0, %c, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %c_0 = stablehlo.constant dense<1> : tensor<i32>
    %2 = call @_where(%1, %c_0, %0) : (tensor<i1>, tensor<i32>, tensor<i32>) -> tensor<i32>
    %3 = stablehlo.remainder %arg0, %2 : tensor<i32>
    %c_1 = stablehlo.constant dense<0> : tensor<i32>
    %4 = stablehlo.compare NE, %3, %c_1, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %c_2 = stablehlo.constant dense<0> : tensor<i32>
    %5 = stablehlo.compare LT, %3, %c_2, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %c_3 = stablehlo.constant dense<0> : tensor<i32>
    %6 = stablehlo.compare LT, %2, %c_3, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %7 = stablehlo.compare NE, %5, %6, UNSIGNED : (tensor<i1>, tensor<i1>) -> tensor<i1>
    %8 = stablehlo.and %7, %4 : tensor<i1>
    %9 = stablehlo.add %3, %2 : tensor<i32>
    %10 = stablehlo.select %8, %9, %3 : tensor<i1>, tensor<i32>
    return %10 : tensor<i32>
  }
  func.func private @_where(%arg0: tensor<i1>, %arg1: tensor<i32>, %arg2: tensor<i32>) -> tensor<i32> {
    %0 = stablehlo.select %arg0, %arg1, %arg2 : tensor<i1>, tensor<i32>
    return %0 : tensor<i32>
  }
  func.func private @_where_0(%arg0: tensor<i1>, %arg1: tensor<f32>, %arg2: tensor<f32>) -> tensor<f32> {
    %0 = stablehlo.select %arg0, %arg1, %arg2 : tensor<i1>, tensor<f32>
    return %0 : tensor<f32>
  }
}
