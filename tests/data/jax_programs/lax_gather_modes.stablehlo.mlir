module @jit_gather_all attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<5x6xf32>, %arg1: tensor<5x1xi32>) -> (tensor<5x6xf32> {jax.result_info = "result[0]"}, tensor<5x6xf32> {jax.result_info = "result[1]"}, tensor<5x6xf32> {jax.result_info = "result[2]"}, tensor<3x3xf32> {jax.result_info = "result[3]"}, tensor<2x2xf32> {jax.result_info = "result[4]"}) {
    %0 = stablehlo.reshape %arg1 : (tensor<5x1xi32>) -> tensor<5xi32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %1 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i32>) -> tensor<5xi32>
    %2 = stablehlo.compare LT, %0, %1, SIGNED : (tensor<5xi32>, tensor<5xi32>) -> tensor<5xi1>
    %c_0 = stablehlo.constant dense<5> : tensor<i32>
    %3 = stablehlo.broadcast_in_dim %c_0, dims = [] : (tensor<i32>) -> tensor<5xi32>
    %4 = stablehlo.add %0, %3 : tensor<5xi32>
    %5 = stablehlo.select %2, %4, %0 : tensor<5xi1>, tensor<5xi32>
    %6 = stablehlo.broadcast_in_dim %5, dims = [0] : (tensor<5xi32>) -> tensor<5x1xi32>
    %7 = "stablehlo.gather"(%arg0, %6) <{dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = array<i64: 1, 6>}> : (tensor<5x6xf32>, tensor<5x1xi32>) -> tensor<5x6xf32>
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
    %c_4 = stablehlo.constant dense<0> : tensor<i32>
    %15 = stablehlo.broadcast_in_dim %c_4, dims = [] : (tensor<i32>) -> tensor<5x1xi32>
    %16 = stablehlo.compare GE, %14, %15, SIGNED : (tensor<5x1xi32>, tensor<5x1xi32>) -> tensor<5x1xi1>
    %17 = stablehlo.broadcast_in_dim %c_3, dims = [1] : (tensor<1xi32>) -> tensor<1x1xi32>
    %18 = stablehlo.broadcast_in_dim %17, dims = [0, 1] : (tensor<1x1xi32>) -> tensor<5x1xi32>
    %19 = stablehlo.compare LE, %14, %18, SIGNED : (tensor<5x1xi32>, tensor<5x1xi32>) -> tensor<5x1xi1>
    %20 = stablehlo.and %16, %19 : tensor<5x1xi1>
    %c_5 = stablehlo.constant dense<true> : tensor<i1>
    %21 = stablehlo.reduce(%20 init: %c_5) applies stablehlo.and across dimensions = [1] : (tensor<5x1xi1>, tensor<i1>) -> tensor<5xi1>
    %22 = "stablehlo.gather"(%arg0, %14) <{dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = array<i64: 1, 6>}> : (tensor<5x6xf32>, tensor<5x1xi32>) -> tensor<5x6xf32>
    %23 = stablehlo.broadcast_in_dim %21, dims = [0] : (tensor<5xi1>) -> tensor<5x6xi1>
    %cst = stablehlo.constant dense<-1.000000e+00> : tensor<f32>
    %24 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<5x6xf32>
    %25 = stablehlo.select %23, %22, %24 : tensor<5x6xi1>, tensor<5x6xf32>
    %26 = stablehlo.reshape %arg1 : (tensor<5x1xi32>) -> tensor<5xi32>
    %27 = stablehlo.abs %26 : tensor<5xi32>
    %c_6 = stablehlo.constant dense<5> : tensor<i32>
    %28 = call @remainder(%27, %c_6) : (tensor<5xi32>, tensor<i32>) -> tensor<5xi32>
    %c_7 = stablehlo.constant dense<0> : tensor<i32>
    %29 = stablehlo.broadcast_in_dim %c_7, dims = [] : (tensor<i32>) -> tensor<5xi32>
    %30 = stablehlo.compare LT, %28, %29, SIGNED : (tensor<5xi32>, tensor<5xi32>) -> tensor<5xi1>
    %c_8 = stablehlo.constant dense<5> : tensor<i32>
    %31 = stablehlo.broadcast_in_dim %c_8, dims = [] : (tensor<i32>) -> tensor<5xi32>
    %32 = stablehlo.add %28, %31 : tensor<5xi32>
    %33 = stablehlo.select %30, %32, %28 : tensor<5xi1>, tensor<5xi32>
    %34 = stablehlo.broadcast_in_dim %33, dims = [0] : (tensor<5xi32>) -> tensor<5x1xi32>
    %35 = "stablehlo.gather"(%arg0, %34) <{dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = array<i64: 1, 6>}> : (tensor<5x6xf32>, tensor<5x1xi32>) -> tensor<5x6xf32>
    %36 = stablehlo.slice %arg0 [1:4, 0:6:2] : (tensor<5x6xf32>) -> tensor<3x3xf32>
    %37 = stablehlo.slice %arg1 [0:2, 0:1] : (tensor<5x1xi32>) -> tensor<2x1xi32>
    %38 = stablehlo.reshape %37 : (tensor<2x1xi32>) -> tensor<2xi32>
    %c_9 = stablehlo.constant dense<5> : tensor<i32>
    %39 = call @remainder_0(%38, %c_9) : (tensor<2xi32>, tensor<i32>) -> tensor<2xi32>
    %c_10 = stablehlo.constant dense<0> : tensor<i32>
    %40 = stablehlo.broadcast_in_dim %c_10, dims = [] : (tensor<i32>) -> tensor<2xi32>
    %41 = stablehlo.compare LT, %39, %40, SIGNED : (tensor<2xi32>, tensor<2xi32>) -> tensor<2xi1>
    %c_11 = stablehlo.constant dense<5> : tensor<i32>
    %42 = stablehlo.broadcast_in_dim %c_11, dims = [] : (tensor<i32>) -> tensor<2xi32>
    %43 = stablehlo.add %39, %42 : tensor<2xi32>
    %44 = stablehlo.select %41, %43, %39 : tensor<2xi1>, tensor<2xi32>
    %45 = stablehlo.broadcast_in_dim %44, dims = [0] : (tensor<2xi32>) -> tensor<2x1xi32>
    %c_12 = stablehlo.constant dense<1> : tensor<i32>
    %46 = stablehlo.broadcast_in_dim %c_12, dims = [] : (tensor<i32>) -> tensor<2x1xi32>
    %47 = stablehlo.concatenate %45, %46, dim = 1 : (tensor<2x1xi32>, tensor<2x1xi32>) -> tensor<2x2xi32>
    %48 = "stablehlo.gather"(%arg0, %47) <{dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0, 1], index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = array<i64: 1, 2>}> : (tensor<5x6xf32>, tensor<2x2xi32>) -> tensor<2x2xf32>
    return %7, %25, %35, %36, %48 : tensor<5x6xf32>, tensor<5x6xf32>, tensor<5x6xf32>, tensor<3x3xf32>, tensor<2x2xf32>
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
  func.func private @remainder_0(%arg0: tensor<2xi32>, %arg1: tensor<i32>) -> tensor<2xi32> {
    %0 = stablehlo.convert %arg1 : tensor<i32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %1 = stablehlo.compare EQ, %0, %c, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %c_0 = stablehlo.constant dense<1> : tensor<i32>
    %2 = call @_where(%1, %c_0, %0) : (tensor<i1>, tensor<i32>, tensor<i32>) -> tensor<i32>
    %3 = stablehlo.broadcast_in_dim %2, dims = [] : (tensor<i32>) -> tensor<2xi32>
    %4 = stablehlo.remainder %arg0, %3 : tensor<2xi32>
    %c_1 = stablehlo.constant dense<0> : tensor<i32>
    %5 = stablehlo.broadcast_in_dim %c_1, dims = [] : (tensor<i32>) -> tensor<2xi32>
    %6 = stablehlo.compare NE, %4, %5, SIGNED : (tensor<2xi32>, tensor<2xi32>) -> tensor<2xi1>
    %c_2 = stablehlo.constant dense<0> : tensor<i32>
    %7 = stablehlo.broadcast_in_dim %c_2, dims = [] : (tensor<i32>) -> tensor<2xi32>
    %8 = stablehlo.compare LT, %4, %7, SIGNED : (tensor<2xi32>, tensor<2xi32>) -> tensor<2xi1>
    %c_3 = stablehlo.constant dense<0> : tensor<i32>
    %9 = stablehlo.compare LT, %2, %c_3, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %10 = stablehlo.broadcast_in_dim %9, dims = [] : (tensor<i1>) -> tensor<2xi1>
    %11 = stablehlo.compare NE, %8, %10, UNSIGNED : (tensor<2xi1>, tensor<2xi1>) -> tensor<2xi1>
    %12 = stablehlo.and %11, %6 : tensor<2xi1>
    %13 = stablehlo.broadcast_in_dim %2, dims = [] : (tensor<i32>) -> tensor<2xi32>
    %14 = stablehlo.add %4, %13 : tensor<2xi32>
    %15 = stablehlo.select %12, %14, %4 : tensor<2xi1>, tensor<2xi32>
    return %15 : tensor<2xi32>
  }
}
