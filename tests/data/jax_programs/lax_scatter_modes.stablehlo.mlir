module @jit_scatter_all attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<5x6xf32>, %arg1: tensor<5x1xi32>, %arg2: tensor<5x6xf32>) -> (tensor<5x6xf32> {jax.result_info = "result[0]"}, tensor<5x6xf32> {jax.result_info = "result[1]"}, tensor<5x6xf32> {jax.result_info = "result[2]"}, tensor<5x6xf32> {jax.result_info = "result[3]"}, tensor<5x6xf32> {jax.result_info = "result[4]"}, tensor<5x6xf32> {jax.result_info = "result[5]"}) {
    %0 = stablehlo.reshape %arg1 : (tensor<5x1xi32>) -> tensor<5xi32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %1 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i32>) -> tensor<5xi32>
    %2 = stablehlo.compare LT, %0, %1, SIGNED : (tensor<5xi32>, tensor<5xi32>) -> tensor<5xi1>
    %c_0 = stablehlo.constant dense<5> : tensor<i32>
    %3 = stablehlo.broadcast_in_dim %c_0, dims = [] : (tensor<i32>) -> tensor<5xi32>
    %4 = stablehlo.add %0, %3 : tensor<5xi32>
    %5 = stablehlo.select %2, %4, %0 : tensor<5xi1>, tensor<5xi32>
    %6 = stablehlo.broadcast_in_dim %5, dims = [0] : (tensor<5xi32>) -> tensor<5x1xi32>
    %7 = "stablehlo.scatter"(%arg0, %6, %arg2) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>, unique_indices = false}> ({
    ^bb0(%arg3: tensor<f32>, %arg4: tensor<f32>):
      %60 = stablehlo.add %arg3, %arg4 : tensor<f32>
      stablehlo.return %60 : tensor<f32>
    }) : (tensor<5x6xf32>, tensor<5x1xi32>, tensor<5x6xf32>) -> tensor<5x6xf32>
    %8 = stablehlo.reshape %arg1 : (tensor<5x1xi32>) -> tensor<5xi32>
    %c_1 = stablehlo.constant dense<0> : tensor<i32>
    %9 = stablehlo.broadcast_in_dim %c_1, dims = [] : (tensor<i32>) -> tensor<5xi32>
    %10 = stablehlo.compare LT, %8, %9, SIGNED : (tensor<5xi32>, tensor<5xi32>) -> tensor<5xi1>
    %c_2 = stablehlo.constant dense<5> : tensor<i32>
    %11 = stablehlo.broadcast_in_dim %c_2, dims = [] : (tensor<i32>) -> tensor<5xi32>
    %12 = stablehlo.add %8, %11 : tensor<5xi32>
    %13 = stablehlo.select %10, %12, %8 : tensor<5xi1>, tensor<5xi32>
    %14 = stablehlo.broadcast_in_dim %13, dims = [0] : (tensor<5xi32>) -> tensor<5x1xi32>
    %c_3 = stablehlo.constant dense<4> : tensor<1xi32>
    %c_4 = stablehlo.constant dense<2147483647> : tensor<i32>
    %15 = stablehlo.broadcast_in_dim %c_4, dims = [] : (tensor<i32>) -> tensor<1xi32>
    %16 = stablehlo.minimum %c_3, %15 : tensor<1xi32>
    %17 = stablehlo.broadcast_in_dim %16, dims = [1] : (tensor<1xi32>) -> tensor<5x1xi32>
    %c_5 = stablehlo.constant dense<0> : tensor<i32>
    %18 = stablehlo.broadcast_in_dim %c_5, dims = [] : (tensor<i32>) -> tensor<5x1xi32>
    %19 = stablehlo.clamp %18, %14, %17 : tensor<5x1xi32>
    %20 = "stablehlo.scatter"(%arg0, %19, %arg2) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>, unique_indices = false}> ({
    ^bb0(%arg3: tensor<f32>, %arg4: tensor<f32>):
      %60 = stablehlo.multiply %arg3, %arg4 : tensor<f32>
      stablehlo.return %60 : tensor<f32>
    }) : (tensor<5x6xf32>, tensor<5x1xi32>, tensor<5x6xf32>) -> tensor<5x6xf32>
    %21 = stablehlo.reshape %arg1 : (tensor<5x1xi32>) -> tensor<5xi32>
    %c_6 = stablehlo.constant dense<0> : tensor<i32>
    %22 = stablehlo.broadcast_in_dim %c_6, dims = [] : (tensor<i32>) -> tensor<5xi32>
    %23 = stablehlo.compare LT, %21, %22, SIGNED : (tensor<5xi32>, tensor<5xi32>) -> tensor<5xi1>
    %c_7 = stablehlo.constant dense<5> : tensor<i32>
    %24 = stablehlo.broadcast_in_dim %c_7, dims = [] : (tensor<i32>) -> tensor<5xi32>
    %25 = stablehlo.add %21, %24 : tensor<5xi32>
    %26 = stablehlo.select %23, %25, %21 : tensor<5xi1>, tensor<5xi32>
    %27 = stablehlo.broadcast_in_dim %26, dims = [0] : (tensor<5xi32>) -> tensor<5x1xi32>
    %28 = "stablehlo.scatter"(%arg0, %27, %arg2) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>, unique_indices = false}> ({
    ^bb0(%arg3: tensor<f32>, %arg4: tensor<f32>):
      %60 = stablehlo.minimum %arg3, %arg4 : tensor<f32>
      stablehlo.return %60 : tensor<f32>
    }) : (tensor<5x6xf32>, tensor<5x1xi32>, tensor<5x6xf32>) -> tensor<5x6xf32>
    %29 = stablehlo.reshape %arg1 : (tensor<5x1xi32>) -> tensor<5xi32>
    %c_8 = stablehlo.constant dense<0> : tensor<i32>
    %30 = stablehlo.broadcast_in_dim %c_8, dims = [] : (tensor<i32>) -> tensor<5xi32>
    %31 = stablehlo.compare LT, %29, %30, SIGNED : (tensor<5xi32>, tensor<5xi32>) -> tensor<5xi1>
    %c_9 = stablehlo.constant dense<5> : tensor<i32>
    %32 = stablehlo.broadcast_in_dim %c_9, dims = [] : (tensor<i32>) -> tensor<5xi32>
    %33 = stablehlo.add %29, %32 : tensor<5xi32>
    %34 = stablehlo.select %31, %33, %29 : tensor<5xi1>, tensor<5xi32>
    %35 = stablehlo.broadcast_in_dim %34, dims = [0] : (tensor<5xi32>) -> tensor<5x1xi32>
    %c_10 = stablehlo.constant dense<4> : tensor<1xi32>
    %c_11 = stablehlo.constant dense<2147483647> : tensor<i32>
    %36 = stablehlo.broadcast_in_dim %c_11, dims = [] : (tensor<i32>) -> tensor<1xi32>
    %37 = stablehlo.minimum %c_10, %36 : tensor<1xi32>
    %38 = stablehlo.broadcast_in_dim %37, dims = [1] : (tensor<1xi32>) -> tensor<5x1xi32>
    %c_12 = stablehlo.constant dense<0> : tensor<i32>
    %39 = stablehlo.broadcast_in_dim %c_12, dims = [] : (tensor<i32>) -> tensor<5x1xi32>
    %40 = stablehlo.clamp %39, %35, %38 : tensor<5x1xi32>
    %41 = "stablehlo.scatter"(%arg0, %40, %arg2) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>, unique_indices = false}> ({
    ^bb0(%arg3: tensor<f32>, %arg4: tensor<f32>):
      %60 = stablehlo.maximum %arg3, %arg4 : tensor<f32>
      stablehlo.return %60 : tensor<f32>
    }) : (tensor<5x6xf32>, tensor<5x1xi32>, tensor<5x6xf32>) -> tensor<5x6xf32>
    %42 = stablehlo.reshape %arg1 : (tensor<5x1xi32>) -> tensor<5xi32>
    %c_13 = stablehlo.constant dense<0> : tensor<i32>
    %43 = stablehlo.broadcast_in_dim %c_13, dims = [] : (tensor<i32>) -> tensor<5xi32>
    %44 = stablehlo.compare LT, %42, %43, SIGNED : (tensor<5xi32>, tensor<5xi32>) -> tensor<5xi1>
    %c_14 = stablehlo.constant dense<5> : tensor<i32>
    %45 = stablehlo.broadcast_in_dim %c_14, dims = [] : (tensor<i32>) -> tensor<5xi32>
    %46 = stablehlo.add %42, %45 : tensor<5xi32>
    %47 = stablehlo.select %44, %46, %42 : tensor<5xi1>, tensor<5xi32>
    %48 = stablehlo.broadcast_in_dim %47, dims = [0] : (tensor<5xi32>) -> tensor<5x1xi32>
    %49 = "stablehlo.scatter"(%arg0, %48, %arg2) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>, unique_indices = false}> ({
    ^bb0(%arg3: tensor<f32>, %arg4: tensor<f32>):
      stablehlo.return %arg4 : tensor<f32>
    }) : (tensor<5x6xf32>, tensor<5x1xi32>, tensor<5x6xf32>) -> tensor<5x6xf32>
    %50 = stablehlo.reshape %arg1 : (tensor<5x1xi32>) -> tensor<5xi32>
    %51 = stablehlo.abs %50 : tensor<5xi32>
    %c_15 = stablehlo.constant dense<5> : tensor<i32>
    %52 = call @remainder(%51, %c_15) : (tensor<5xi32>, tensor<i32>) -> tensor<5xi32>
    %c_16 = stablehlo.constant dense<0> : tensor<i32>
    %53 = stablehlo.broadcast_in_dim %c_16, dims = [] : (tensor<i32>) -> tensor<5xi32>
    %54 = stablehlo.compare LT, %52, %53, SIGNED : (tensor<5xi32>, tensor<5xi32>) -> tensor<5xi1>
    %c_17 = stablehlo.constant dense<5> : tensor<i32>
    %55 = stablehlo.broadcast_in_dim %c_17, dims = [] : (tensor<i32>) -> tensor<5xi32>
    %56 = stablehlo.add %52, %55 : tensor<5xi32>
    %57 = stablehlo.select %54, %56, %52 : tensor<5xi1>, tensor<5xi32>
    %58 = stablehlo.broadcast_in_dim %57, dims = [0] : (tensor<5xi32>) -> tensor<5x1xi32>
    %59 = "stablehlo.scatter"(%arg0, %58, %arg2) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>, unique_indices = true}> ({
    ^bb0(%arg3: tensor<f32>, %arg4: tensor<f32>):
      stablehlo.return %arg4 : tensor<f32>
    }) : (tensor<5x6xf32>, tensor<5x1xi32>, tensor<5x6xf32>) -> tensor<5x6xf32>
    return %7, %20, %28, %41, %49, %59 : tensor<5x6xf32>, tensor<5x6xf32>, tensor<5x6xf32>, tensor<5x6xf32>, tensor<5x6xf32>, tensor<5x6xf32>
  }
  func.func private @remainder(%arg0: tensor<5xi32>, %arg1: tensor<i32>) -> tensor<5xi32> {
    %0 = stablehlo.convert %arg1 : tensor<i32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %1 = stablehlo.compare EQ, %0, %c, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %c_0 = stablehlo.constant dense<1> : tensor<i32>
    %2 = call @_where(%1, %c_0, %0) : (tensor<i1>, tensor<i32>, tensor<i32>) -> tensor<i32>
    %3 = stablehlo.broadcast_in_dim %2, dims = [] : (tensor<i32>) -> tensor<5xi32>
    %4 = stablehlo.remainder %arg0, %3 : tensor<5xi32>
    %c_1 = stablehlo.constant dense<0> : tensor<i32>
    %5 = stablehlo.broadcast_in_dim %c_1, dims = [] : (tensor<i32>) -> tensor<5xi32>
    %6 = stablehlo.compare NE, %4, %5, SIGNED : (tensor<5xi32>, tensor<5xi32>) -> tensor<5xi1>
    %c_2 = stablehlo.constant dense<0> : tensor<i32>
    %7 = stablehlo.broadcast_in_dim %c_2, dims = [] : (tensor<i32>) -> tensor<5xi32>
    %8 = stablehlo.compare LT, %4, %7, SIGNED : (tensor<5xi32>, tensor<5xi32>) -> tensor<5xi1>
    %c_3 = stablehlo.constant dense<0> : tensor<i32>
    %9 = stablehlo.compare LT, %2, %c_3, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %10 = stablehlo.broadcast_in_dim %9, dims = [] : (tensor<i1>) -> tensor<5xi1>
    %11 = stablehlo.compare NE, %8, %10, UNSIGNED : (tensor<5xi1>, tensor<5xi1>) -> tensor<5xi1>
    %12 = stablehlo.and %11, %6 : tensor<5xi1>
    %13 = stablehlo.broadcast_in_dim %2, dims = [] : (tensor<i32>) -> tensor<5xi32>
    %14 = stablehlo.add %4, %13 : tensor<5xi32>
    %15 = stablehlo.select %12, %14, %4 : tensor<5xi1>, tensor<5xi32>
    return %15 : tensor<5xi32>
  }
  func.func private @_where(%arg0: tensor<i1>, %arg1: tensor<i32>, %arg2: tensor<i32>) -> tensor<i32> {
    %0 = stablehlo.select %arg0, %arg1, %arg2 : tensor<i1>, tensor<i32>
    return %0 : tensor<i32>
  }
}
