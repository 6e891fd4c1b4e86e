module @jit__lambda attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<5x6xi32>, %arg1: tensor<5x6xi32>) -> (tensor<5x6xi32> {jax.result_info = "result[0]"}, tensor<5x6xi32> {jax.result_info = "result[1]"}, tensor<5x6xi32> {jax.result_info = "result[2]"}, tensor<5x6xi32> {jax.result_info = "result[3]"}, tensor<5x6xi32> {jax.result_info = "result[4]"}, tensor<5x6xi32> {jax.result_info = "result[5]"}) {
    %c = stablehlo.constant dense<1> : tensor<i32>
    %0 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i32>) -> tensor<5x6xi32>
    %1 = stablehlo.maximum %arg1, %0 : tensor<5x6xi32>
    %2 = call @floor_divide(%arg0, %1) : (tensor<5x6xi32>, tensor<5x6xi32>) -> tensor<5x6xi32>
    %c_0 = stablehlo.constant dense<7> : tensor<i32>
    %3 = call @remainder(%arg0, %c_0) : (tensor<5x6xi32>, tensor<i32>) -> tensor<5x6xi32>
    %c_1 = stablehlo.constant dense<2> : tensor<i32>
    %4 = stablehlo.broadcast_in_dim %c_1, dims = [] : (tensor<i32>) -> tensor<5x6xi32>
    %5 = stablehlo.shift_left %arg0, %4 : tensor<5x6xi32>
    %6 = stablehlo.xor %arg0, %arg1 : tensor<5x6xi32>
    %7 = call @gcd(%arg0, %arg1) : (tensor<5x6xi32>, tensor<5x6xi32>) -> tensor<5x6xi32>
    %c_2 = stablehlo.constant dense<9> : tensor<i32>
    %8 = call @remainder(%arg0, %c_2) : (tensor<5x6xi32>, tensor<i32>) -> tensor<5x6xi32>
    %c_3 = stablehlo.constant dense<9> : tensor<i32>
    %9 = call @remainder(%arg1, %c_3) : (tensor<5x6xi32>, tensor<i32>) -> tensor<5x6xi32>
    %10 = call @lcm(%8, %9) : (tensor<5x6xi32>, tensor<5x6xi32>) -> tensor<5x6xi32>
    return %2, %3, %5, %6, %7, %10 : tensor<5x6xi32>, tensor<5x6xi32>, tensor<5x6xi32>, tensor<5x6xi32>, tensor<5x6xi32>, tensor<5x6xi32>
  }
  func.func private @floor_divide(%arg0: tensor<5x6xi32>, %arg1: tensor<5x6xi32>) -> tensor<5x6xi32> {
    %0 = stablehlo.divide %arg0, %arg1 : tensor<5x6xi32>
    %1 = stablehlo.sign %arg0 : tensor<5x6xi32>
    %2 = stablehlo.sign %arg1 : tensor<5x6xi32>
    %3 = stablehlo.compare NE, %1, %2, SIGNED : (tensor<5x6xi32>, tensor<5x6xi32>) -> tensor<5x6xi1>
    %4 = stablehlo.remainder %arg0, %arg1 : tensor<5x6xi32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %5 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i32>) -> tensor<5x6xi32>
    %6 = stablehlo.compare NE, %4, %5, SIGNED : (tensor<5x6xi32>, tensor<5x6xi32>) -> tensor<5x6xi1>
    %7 = stablehlo.and %3, %6 : tensor<5x6xi1>
    %c_0 = stablehlo.constant dense<1> : tensor<i32>
    %8 = stablehlo.broadcast_in_dim %c_0, dims = [] : (tensor<i32>) -> tensor<5x6xi32>
    %9 = stablehlo.subtract %0, %8 : tensor<5x6xi32>
    %10 = call @_where(%7, %9, %0) : (tensor<5x6xi1>, tensor<5x6xi32>, tensor<5x6xi32>) -> tensor<5x6xi32>
    return %10 : tensor<5x6xi32>
  }
  func.func private @_where(%arg0: tensor<5x6xi1>, %arg1: tensor<5x6xi32>, %arg2: tensor<5x6xi32>) -> tensor<5x6xi32> {
    %0 = stablehlo.select %arg0, %arg1, %arg2 : tensor<5x6xi1>, tensor<5x6xi32>
    return %0 : tensor<5x6xi32>
  }
  func.func private @remainder(%arg0: tensor<5x6xi32>, %arg1: tensor<i32>) -> tensor<5x6xi32> {
    %0 = stablehlo.convert %arg1 : tensor<i32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %1 = stablehlo.compare EQ, %0, %c, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %c_0 = stablehlo.constant dense<1> : tensor<i32>
    %2 = call @_where_0(%1, %c_0, %0) : (tensor<i1>, tensor<i32>, tensor<i32>) -> tensor<i32>
    %3 = stablehlo.broadcast_in_dim %2, dims = [] : (tensor<i32>) -> tensor<5x6xi32>
    %4 = stablehlo.remainder %arg0, %3 : tensor<5x6xi32>
    %c_1 = stablehlo.constant dense<0> : tensor<i32>
    %5 = stablehlo.broadcast_in_dim %c_1, dims = [] : (tensor<i32>) -> tensor<5x6xi32>
    %6 = stablehlo.compare NE, %4, %5, SIGNED : (tensor<5x6xi32>, tensor<5x6xi32>) -> tensor<5x6xi1>
    %c_2 = stablehlo.constant dense<0> : tensor<i32>
    %7 = stablehlo.broadcast_in_dim %c_2, dims = [] : (tensor<i32>) -> tensor<5x6xi32>
    %8 = stablehlo.compare LT, %4, %7, SIGNED : (tensor<5x6xi32>, tensor<5x6xi32>) -> tensor<5x6xi1>
    %c_3 = stablehlo.constant dense<0> : tensor<i32>
    %9 = stablehlo.compare LT, %2, %c_3, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %10 = stablehlo.broadcast_in_dim %9, dims = [] : (tensor<i1>) -> tensor<5x6xi1>
    %11 = stablehlo.compare NE, %8, %10, UNSIGNED : (tensor<5x6xi1>, tensor<5x6xi1>) -> tensor<5x6xi1>
    %12 = stablehlo.and %11, %6 : tensor<5x6xi1>
    %13 = stablehlo.broadcast_in_dim %2, dims = [] : (tensor<i32>) -> tensor<5x6xi32>
    %14 = stablehlo.add %4, %13 : tensor<5x6xi32>
    %15 = stablehlo.select %12, %14, %4 : tensor<5x6xi1>, tensor<5x6xi32>
    return %15 : tensor<5x6xi32>
  }
  func.func private @_where_0(%arg0: tensor<i1>, %arg1: tensor<i32>, %arg2: tensor<i32>) -> tensor<i32> {
    %0 = stablehlo.select %arg0, %arg1, %arg2 : tensor<i1>, tensor<i32>
    return %0 : tensor<i32>
  }
  func.func private @gcd(%arg0: tensor<5x6xi32>, %arg1: tensor<5x6xi32>) -> tensor<5x6xi32> {
    %0 = stablehlo.abs %arg0 : tensor<5x6xi32>
    %1 = stablehlo.abs %arg1 : tensor<5x6xi32>
    %2:2 = stablehlo.while(%iterArg = %0, %iterArg_0 = %1) : tensor<5x6xi32>, tensor<5x6xi32>
    cond {
      %c = stablehlo.constant dense<0> : tensor<i32>
      %3 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i32>) -> tensor<5x6xi32>
      %4 = stablehlo.compare NE, %iterArg_0, %3, SIGNED : (tensor<5x6xi32>, tensor<5x6xi32>) -> tensor<5x6xi1>
      %c_1 = stablehlo.constant dense<false> : tensor<i1>
      %5 = stablehlo.reduce(%4 init: %c_1) applies stablehlo.or across dimensions = [0, 1] : (tensor<5x6xi1>, tensor<i1>) -> tensor<i1>
      stablehlo.return %5 : tensor<i1>
    } do {
      %c = stablehlo.constant dense<0> : tensor<i32>
      %3 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i32>) -> tensor<5x6xi32>
      %4 = stablehlo.compare NE, %iterArg_0, %3, SIGNED : (tensor<5x6xi32>, tensor<5x6xi32>) -> tensor<5x6xi1>
      %5 = func.call @_where_1(%4, %iterArg_0, %iterArg) : (tensor<5x6xi1>, tensor<5x6xi32>, tensor<5x6xi32>) -> tensor<5x6xi32>
      %c_1 = stablehlo.constant dense<0> : tensor<i32>
      %6 = stablehlo.broadcast_in_dim %c_1, dims = [] : (tensor<i32>) -> tensor<5x6xi32>
      %7 = stablehlo.compare NE, %iterArg_0, %6, SIGNED : (tensor<5x6xi32>, tensor<5x6xi32>) -> tensor<5x6xi1>
      %8 = stablehlo.remainder %iterArg, %iterArg_0 : tensor<5x6xi32>
      %c_2 = stablehlo.constant dense<0> : tensor<i32>
      %9 = func.call @_where_2(%7, %8, %c_2) : (tensor<5x6xi1>, tensor<5x6xi32>, tensor<i32>) -> tensor<5x6xi32>
      %10 = stablehlo.compare LT, %5, %9, SIGNED : (tensor<5x6xi32>, tensor<5x6xi32>) -> tensor<5x6xi1>
      %11 = func.call @_where_1(%10, %9, %5) : (tensor<5x6xi1>, tensor<5x6xi32>, tensor<5x6xi32>) -> tensor<5x6xi32>
      %12 = stablehlo.compare LT, %5, %9, SIGNED : (tensor<5x6xi32>, tensor<5x6xi32>) -> tensor<5x6xi1>
      %13 = func.call @_where_1(%12, %5, %9) : (tensor<5x6xi1>, tensor<5x6xi32>, tensor<5x6xi32>) -> tensor<5x6xi32>
      stablehlo.return %11, %13 : tensor<5x6xi32>, tensor<5x6xi32>
    }
    return %2#0 : tensor<5x6xi32>
  }
  func.func private @_where_1(%arg0: tensor<5x6xi1>, %arg1: tensor<5x6xi32>, %arg2: tensor<5x6xi32>) -> tensor<5x6xi32> {
    %0 = stablehlo.select %arg0, %arg1, %arg2 : tensor<5x6xi1>, tensor<5x6xi32>
    return %0 : tensor<5x6xi32>
  }
  func.func private @_where_2(%arg0: tensor<5x6xi1>, %arg1: tensor<5x6xi32>, %arg2: tensor<i32>) -> tensor<5x6xi32> {
    %0 = stablehlo.broadcast_in_dim %arg2, dims = [] : (tensor<i32>) -> tensor<5x6xi32>
    %1 = stablehlo.select %arg0, %arg1, %0 : tensor<5x6xi1>, tensor<5x6xi32>
    return %1 : tensor<5x6xi32>
  }
  func.func private @lcm(%arg0: tensor<5x6xi32>, %arg1: tensor<5x6xi32>) -> tensor<5x6xi32> {
    %0 = stablehlo.abs %arg0 : tensor<5x6xi32>
    %1 = stablehlo.abs %arg1 : tensor<5x6xi32>
    %2 = call @gcd(%0, %1) : (tensor<5x6xi32>, tensor<5x6xi32>) -> tensor<5x6xi32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %3 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i32>) -> tensor<5x6xi32>
    %4 = stablehlo.compare EQ, %2, %3, SIGNED : (tensor<5x6xi32>, tensor<5x6xi32>) -> tensor<5x6xi1>
    %5 = call @floor_divide(%1, %2) : (tensor<5x6xi32>, tensor<5x6xi32>) -> tensor<5x6xi32>
    %6 = stablehlo.multiply %0, %5 : tensor<5x6xi32>
    %c_0 = stablehlo.constant dense<0> : tensor<i32>
    %7 = call @_where_3(%4, %c_0, %6) : (tensor<5x6xi1>, tensor<i32>, tensor<5x6xi32>) -> tensor<5x6xi32>
    return %7 : tensor<5x6xi32>
  }
  func.func private @_where_3(%arg0: tensor<5x6xi1>, %arg1: tensor<i32>, %arg2: tensor<5x6xi32>) -> tensor<5x6xi32> {
    %0 = stablehlo.broadcast_in_dim %arg1, dims = [] : (tensor<i32>) -> tensor<5x6xi32>
    %1 = stablehlo.select %arg0, %0, %arg2 : tensor<5x6xi1>, tensor<5x6xi32>
    return %1 : tensor<5x6xi32>
  }
}
