module @jit__lambda attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<2xui32>, %arg1: tensor<2x3xf32>) -> (tensor<2xi32> {jax.result_info = "result[0]"}, tensor<4xf32> {jax.result_info = "result[1]"}) {
    %0 = call @_gumbel(%arg0) : (tensor<2xui32>) -> tensor<2x3xf32>
    %1 = stablehlo.add %0, %arg1 : tensor<2x3xf32>
    %2 = call @argmax(%1) : (tensor<2x3xf32>) -> tensor<2xi32>
    %3 = call @_gumbel_0(%arg0) : (tensor<2xui32>) -> tensor<4xf32>
    return %2, %3 : tensor<2xi32>, tensor<4xf32>
  }
  func.func private @_gumbel(%arg0: tensor<2xui32>) -> tensor<2x3xf32> {
    %cst = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %cst_0 = stablehlo.constant dense<1.17549435E-38> : tensor<f32>
    %0 = call @_uniform(%arg0, %cst, %cst_0) : (tensor<2xui32>, tensor<f32>, tensor<f32>) -> tensor<2x3xf32>
    %1 = stablehlo.log %0 : tensor<2x3xf32>
    %2 = stablehlo.negate %1 : tensor<2x3xf32>
    %3 = stablehlo.log %2 : tensor<2x3xf32>
    %4 = stablehlo.negate %3 : tensor<2x3xf32>
    return %4 : tensor<2x3xf32>
  }
  func.func private @_uniform(%arg0: tensor<2xui32>, %arg1: tensor<f32>, %arg2: tensor<f32>) -> tensor<2x3xf32> {
    %0 = stablehlo.convert %arg1 : tensor<f32>
    %1 = stablehlo.broadcast_in_dim %arg2, dims = [] : (tensor<f32>) -> tensor<1x1xf32>
    %2 = stablehlo.broadcast_in_dim %0, dims = [] : (tensor<f32>) -> tensor<1x1xf32>
    %3 = stablehlo.slice %arg0 [0:1] : (tensor<2xui32>) -> tensor<1xui32>
    %4 = stablehlo.reshape %3 : (tensor<1xui32>) -> tensor<ui32>
    %5 = stablehlo.slice %arg0 [1:2] : (tensor<2xui32>) -> tensor<1xui32>
    %6 = stablehlo.reshape %5 : (tensor<1xui32>) -> tensor<ui32>
    %7 = stablehlo.iota dim = 0 : tensor<2x3xui64>
    %8 = stablehlo.iota dim = 1 : tensor<2x3xui64>
    %c = stablehlo.constant dense<3> : tensor<ui64>
    %9 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<ui64>) -> tensor<2x3xui64>
    %10 = stablehlo.multiply %9, %7 : tensor<2x3xui64>
    %c_0 = stablehlo.constant dense<1> : tensor<ui64>
    %11 = stablehlo.broadcast_in_dim %c_0, dims = [] : (tensor<ui64>) -> tensor<2x3xui64>
    %12 = stablehlo.multiply %11, %8 : tensor<2x3xui64>
    %13 = stablehlo.add %10, %12 : tensor<2x3xui64>
    %c_1 = stablehlo.constant dense<32> : tensor<ui64>
    %14 = stablehlo.broadcast_in_dim %c_1, dims = [] : (tensor<ui64>) -> tensor<2x3xui64>
    %15 = stablehlo.shift_right_logical %13, %14 : tensor<2x3xui64>
    %16 = stablehlo.convert %13 : (tensor<2x3xui64>) -> tensor<2x3xui32>
    %17 = stablehlo.convert %15 : (tensor<2x3xui64>) -> tensor<2x3xui32>
    %18:2 = call @threefry2x32(%4, %6, %17, %16) : (tensor<ui32>, tensor<ui32>, tensor<2x3xui32>, tensor<2x3xui32>) -> (tensor<2x3xui32>, tensor<2x3xui32>)
    %19 = stablehlo.xor %18#0, %18#1 : tensor<2x3xui32>
    %c_2 = stablehlo.constant dense<9> : tensor<ui32>
    %20 = stablehlo.broadcast_in_dim %c_2, dims = [] : (tensor<ui32>) -> tensor<2x3xui32>
    %21 = stablehlo.shift_right_logical %19, %20 : tensor<2x3xui32>
    %c_3 = stablehlo.constant dense<1065353216> : tensor<ui32>
    %22 = stablehlo.broadcast_in_dim %c_3, dims = [] : (tensor<ui32>) -> tensor<2x3xui32>
    %23 = stablehlo.or %21, %22 : tensor<2x3xui32>
    %24 = stablehlo.bitcast_convert %23 : (tensor<2x3xui32>) -> tensor<2x3xf32>
    %cst = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %25 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<2x3xf32>
    %26 = stablehlo.subtract %24, %25 : tensor<2x3xf32>
    %27 = stablehlo.subtract %2, %1 : tensor<1x1xf32>
    %28 = stablehlo.broadcast_in_dim %27, dims = [0, 1] : (tensor<1x1xf32>) -> tensor<2x3xf32>
    %29 = stablehlo.multiply %26, %28 : tensor<2x3xf32>
    %30 = stablehlo.broadcast_in_dim %1, dims = [0, 1] : (tensor<1x1xf32>) -> tensor<2x3xf32>
    %31 = stablehlo.add %29, %30 : tensor<2x3xf32>
    %32 = stablehlo.broadcast_in_dim %1, dims = [0, 1] : (tensor<1x1xf32>) -> tensor<2x3xf32>
    %33 = stablehlo.maximum %32, %31 : tensor<2x3xf32>
    return %33 : tensor<2x3xf32>
  }
  func.func private @threefry2x32(%arg0: tensor<ui32>, %arg1: tensor<ui32>, %arg2: tensor<2x3xui32>, %arg3: tensor<2x3xui32>) -> (tensor<2x3xui32>, tensor<2x3xui32>) {
    %c = stablehlo.constant dense<[13, 15, 26, 6]> : tensor<4xui32>
    %c_0 = stablehlo.constant dense<[17, 29, 16, 24]> : tensor<4xui32>
    %0 = stablehlo.xor %arg0, %arg1 : tensor<ui32>
    %c_1 = stablehlo.constant dense<466688986> : tensor<ui32>
    %1 = stablehlo.xor %0, %c_1 : tensor<ui32>
    %2 = stablehlo.broadcast_in_dim %arg0, dims = [] : (tensor<ui32>) -> tensor<2x3xui32>
    %3 = stablehlo.add %arg2, %2 : tensor<2x3xui32>
    %4 = stablehlo.broadcast_in_dim %arg1, dims = [] : (tensor<ui32>) -> tensor<2x3xui32>
    %5 = stablehlo.add %arg3, %4 : tensor<2x3xui32>
    %c_2 = stablehlo.constant dense<0> : tensor<i32>
    %c_3 = stablehlo.constant dense<0> : tensor<i32>
    %6:9 = stablehlo.while(%iterArg = %c_3, %iterArg_4 = %c_2, %iterArg_5 = %3, %iterArg_6 = %5, %iterArg_7 = %arg1, %iterArg_8 = %1, %iterArg_9 = %arg0, %iterArg_10 = %c, %iterArg_11 = %c_0) : tensor<i32>, tensor<i32>, tensor<2x3xui32>, tensor<2x3xui32>, tensor<ui32>, tensor<ui32>, tensor<ui32>, tensor<4xui32>, tensor<4xui32>
    cond {
      %c_12 = stablehlo.constant dense<5> : tensor<i32>
      %7 = stablehlo.compare LT, %iterArg, %c_12, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %7 : tensor<i1>
    } do {
      %7:8 = func.call @closed_call(%iterArg_4, %iterArg_5, %iterArg_6, %iterArg_7, %iterArg_8, %iterArg_9, %iterArg_10, %iterArg_11) : (tensor<i32>, tensor<2x3xui32>, tensor<2x3xui32>, tensor<ui32>, tensor<ui32>, tensor<ui32>, tensor<4xui32>, tensor<4xui32>) -> (tensor<i32>, tensor<2x3xui32>, tensor<2x3xui32>, tensor<ui32>, tensor<ui32>, tensor<ui32>, tensor<4xui32>, tensor<4xui32>)
      %c_12 = stablehlo.constant dense<1> : tensor<i32>
      %8 = stablehlo.add %iterArg, %c_12 : tensor<i32>
      stablehlo.return %8, %7#0, %7#1, %7#2, %7#3, %7#4, %7#5, %7#6, %7#7 : tensor<i32>, tensor<i32>, tensor<2x3xui32>, tensor<2x3xui32>, tensor<ui32>, tensor<ui32>, tensor<ui32>, tensor<4xui32>, tensor<4xui32>
    }
    return %6#2, %6#3 : tensor<2x3xui32>, tensor<2x3xui32>
  }
  func.func private @closed_call(%arg0: tensor<i32>, %arg1: tensor<2x3xui32>, %arg2: tensor<2x3xui32>, %arg3: tensor<ui32>, %arg4: tensor<ui32>, %arg5: tensor<ui32>, %arg6: tensor<4xui32>, %arg7: tensor<4xui32>) -> (tensor<i32>, tensor<2x3xui32>, tensor<2x3xui32>, tensor<ui32>, tensor<ui32>, tensor<ui32>, tensor<4xui32>, tensor<4xui32>) {
    %c = stablehlo.constant dense<1> : tensor<i32>
    %0 = stablehlo.add %arg0, %c : tensor<i32>
    %1 = stablehlo.slice %arg6 [0:1] : (tensor<4xui32>) -> tensor<1xui32>
    %2 = stablehlo.reshape %1 : (tensor<1xui32>) -> tensor<ui32>
    %3 = stablehlo.add %arg1, %arg2 : tensor<2x3xui32>
    %4 = stablehlo.broadcast_in_dim %2, dims = [] : (tensor<ui32>) -> tensor<2x3xui32>
    %5 = stablehlo.shift_left %arg2, %4 : tensor<2x3xui32>
    %c_0 = stablehlo.constant dense<32> : tensor<ui32>
    %6 = stablehlo.subtract %c_0, %2 : tensor<ui32>
    %7 = stablehlo.broadcast_in_dim %6, dims = [] : (tensor<ui32>) -> tensor<2x3xui32>
    %8 = stablehlo.shift_right_logical %arg2, %7 : tensor<2x3xui32>
    %9 = stablehlo.or %5, %8 : tensor<2x3xui32>
    %10 = stablehlo.xor %3, %9 : tensor<2x3xui32>
    %11 = stablehlo.slice %arg6 [1:2] : (tensor<4xui32>) -> tensor<1xui32>
    %12 = stablehlo.reshape %11 : (tensor<1xui32>) -> tensor<ui32>
    %13 = stablehlo.add %3, %10 : tensor<2x3xui32>
    %14 = stablehlo.broadcast_in_dim %12, dims = [] : (tensor<ui32>) -> tensor<2x3xui32>
    %15 = stablehlo.shift_left %10, %14 : tensor<2x3xui32>
    %c_1 = stablehlo.constant dense<32> : tensor<ui32>
    %16 = stablehlo.subtract %c_1, %12 : tensor<ui32>
    %17 = stablehlo.broadcast_in_dim %16, dims = [] : (tensor<ui32>) -> tensor<2x3xui32>
    %18 = stablehlo.shift_right_logical %10, %17 : tensor<2x3xui32>
    %19 = stablehlo.or %15, %18 : tensor<2x3xui32>
    %20 = stablehlo.xor %13, %19 : tensor<2x3xui32>
    %21 = stablehlo.slice %arg6 [2:3] : (tensor<4xui32>) -> tensor<1xui32>
    %22 = stablehlo.reshape %21 : (tensor<1xui32>) -> tensor<ui32>
    %23 = stablehlo.add %13, %20 : tensor<2x3xui32>
    %24 = stablehlo.broadcast_in_dim %22, dims = [] : (tensor<ui32>) -> tensor<2x3xui32>
    %25 = stablehlo.shift_left %20, %24 : tensor<2x3xui32>
    %c_2 = stablehlo.constant dense<32> : tensor<ui32>
    %26 = stablehlo.subtract %c_2, %22 : tensor<ui32>
    %27 = stablehlo.broadcast_in_dim %26, dims = [] : (tensor<ui32>) -> tensor<2x3xui32>
    %28 = stablehlo.shift_right_logical %20, %27 : tensor<2x3xui32>
    %29 = stablehlo.or %25, %28 : tensor<2x3xui32>
    %30 = stablehlo.xor %23, %29 : tensor<2x3xui32>
    %31 = stablehlo.slice %arg6 [3:4] : (tensor<4xui32>) -> tensor<1xui32>
    %32 = stablehlo.reshape %31 : (tensor<1xui32>) -> tensor<ui32>
    %33 = stablehlo.add %23, %30 : tensor<2x3xui32>
    %34 = stablehlo.broadcast_in_dim %32, dims = [] : (tensor<ui32>) -> tensor<2x3xui32>
    %35 = stablehlo.shift_left %30, %34 : tensor<2x3xui32>
    %c_3 = stablehlo.constant dense<32> : tensor<ui32>
    %36 = stablehlo.subtract %c_3, %32 : tensor<ui32>
    %37 = stablehlo.broadcast_in_dim %36, dims = [] : (tensor<ui32>) -> tensor<2x3xui32>
    %38 = stablehlo.shift_right_logical %30, %37 : tensor<2x3xui32>
    %39 = stablehlo.or %35, %38 : tensor<2x3xui32>
    %40 = stablehlo.xor %33, %39 : tensor<2x3xui32>
    %41 = stablehlo.broadcast_in_dim %arg3, dims = [] : (tensor<ui32>) -> tensor<2x3xui32>
    %42 = stablehlo.add %33, %41 : tensor<2x3xui32>
    %43 = stablehlo.broadcast_in_dim %arg4, dims = [] : (tensor<ui32>) -> tensor<2x3xui32>
    %44 = stablehlo.add %40, %43 : tensor<2x3xui32>
    %c_4 = stablehlo.constant dense<1> : tensor<i32>
    %45 = stablehlo.add %arg0, %c_4 : tensor<i32>
    %46 = stablehlo.convert %45 : (tensor<i32>) -> tensor<ui32>
    %47 = stablehlo.broadcast_in_dim %46, dims = [] : (tensor<ui32>) -> tensor<2x3xui32>
    %48 = stablehlo.add %44, %47 : tensor<2x3xui32>
    return %0, %42, %48, %arg4, %arg5, %arg3, %arg7, %arg6 : tensor<i32>, tensor<2x3xui32>, tensor<2x3xui32>, tensor<ui32>, tensor<ui32>, tensor<ui32>, tensor<4xui32>, tensor<4xui32>
  }
  func.func private @argmax(%arg0: tensor<2x3xf32>) -> tensor<2xi32> {
    %0 = stablehlo.iota dim = 1 : tensor<2x3xi32>
    %cst = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %1:2 = stablehlo.reduce(%arg0 init: %cst), (%0 init: %c) across dimensions = [1] : (tensor<2x3xf32>, tensor<2x3xi32>, tensor<f32>, tensor<i32>) -> (tensor<2xf32>, tensor<2xi32>)
     reducer(%arg1: tensor<f32>, %arg3: tensor<f32>) (%arg2: tensor<i32>, %arg4: tensor<i32>)  {
      %2 = stablehlo.compare GT, %arg1, %arg3, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %3 = stablehlo.compare NE, %arg1, %arg1, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %4 = stablehlo.or %2, %3 : tensor<i1>
      %5 = stablehlo.compare EQ, %arg1, %arg3, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %6 = stablehlo.compare LT, %arg2, %arg4, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      %7 = stablehlo.and %5, %6 : tensor<i1>
      %8 = stablehlo.or %4, %7 : tensor<i1>
      %9 = stablehlo.select %4, %arg1, %arg3 : tensor<i1>, tensor<f32>
      %10 = stablehlo.select %8, %arg2, %arg4 : tensor<i1>, tensor<i32>
      stablehlo.return %9, %10 : tensor<f32>, tensor<i32>
    }
    return %1#1 : tensor<2xi32>
  }
  func.func private @_gumbel_0(%arg0: tensor<2xui32>) -> tensor<4xf32> {
    %cst = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %cst_0 = stablehlo.constant dense<1.17549435E-38> : tensor<f32>
    %0 = call @_uniform_1(%arg0, %cst, %cst_0) : (tensor<2xui32>, tensor<f32>, tensor<f32>) -> tensor<4xf32>
    %1 = stablehlo.log %0 : tensor<4xf32>
    %2 = stablehlo.negate %1 : tensor<4xf32>
    %3 = stablehlo.log %2 : tensor<4xf32>
    %4 = stablehlo.negate %3 : tensor<4xf32>
    return %4 : tensor<4xf32>
  }
  func.func private @_uniform_1(%arg0: tensor<2xui32>, %arg1: tensor<f32>, %arg2: tensor<f32>) -> tensor<4xf32> {
    %0 = stablehlo.convert %arg1 : tensor<f32>
    %1 = stablehlo.broadcast_in_dim %arg2, dims = [] : (tensor<f32>) -> tensor<1xf32>
    %2 = stablehlo.broadcast_in_dim %0, dims = [] : (tensor<f32>) -> tensor<1xf32>
    %3 = stablehlo.slice %arg0 [0:1] : (tensor<2xui32>) -> tensor<1xui32>
    %4 = stablehlo.reshape %3 : (tensor<1xui32>) -> tensor<ui32>
    %5 = stablehlo.slice %arg0 [1:2] : (tensor<2xui32>) -> tensor<1xui32>
    %6 = stablehlo.reshape %5 : (tensor<1xui32>) -> tensor<ui32>
    %7 = stablehlo.iota dim = 0 : tensor<4xui64>
    %c = stablehlo.constant dense<1> : tensor<ui64>
    %8 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<ui64>) -> tensor<4xui64>
    %9 = stablehlo.multiply %8, %7 : tensor<4xui64>
    %c_0 = stablehlo.constant dense<32> : tensor<ui64>
    %10 = stablehlo.broadcast_in_dim %c_0, dims = [] : (tensor<ui64>) -> tensor<4xui64>
    %11 = stablehlo.shift_right_logical %9, %10 : tensor<4xui64>
    %12 = stablehlo.convert %9 : (tensor<4xui64>) -> tensor<4xui32>
    %13 = stablehlo.convert %11 : (tensor<4xui64>) -> tensor<4xui32>
    %14:2 = call @threefry2x32_2(%4, %6, %13, %12) : (tensor<ui32>, tensor<ui32>, tensor<4xui32>, tensor<4xui32>) -> (tensor<4xui32>, tensor<4xui32>)
    %15 = stablehlo.xor %14#0, %14#1 : tensor<4xui32>
    %c_1 = stablehlo.constant dense<9> : tensor<ui32>
    %16 = stablehlo.broadcast_in_dim %c_1, dims = [] : (tensor<ui32>) -> tensor<4xui32>
    %17 = stablehlo.shift_right_logical %15, %16 : tensor<4xui32>
    %c_2 = stablehlo.constant dense<1065353216> : tensor<ui32>
    %18 = stablehlo.broadcast_in_dim %c_2, dims = [] : (tensor<ui32>) -> tensor<4xui32>
    %19 = stablehlo.or %17, %18 : tensor<4xui32>
    %20 = stablehlo.bitcast_convert %19 : (tensor<4xui32>) -> tensor<4xf32>
    %cst = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %21 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<4xf32>
    %22 = stablehlo.subtract %20, %21 : tensor<4xf32>
    %23 = stablehlo.subtract %2, %1 : tensor<1xf32>
    %24 = stablehlo.broadcast_in_dim %23, dims = [0] : (tensor<1xf32>) -> tensor<4xf32>
    %25 = stablehlo.multiply %22, %24 : tensor<4xf32>
    %26 = stablehlo.broadcast_in_dim %1, dims = [0] : (tensor<1xf32>) -> tensor<4xf32>
    %27 = stablehlo.add %25, %26 : tensor<4xf32>
    %28 = stablehlo.broadcast_in_dim %1, dims = [0] : (tensor<1xf32>) -> tensor<4xf32>
    %29 = stablehlo.maximum %28, %27 : tensor<4xf32>
    return %29 : tensor<4xf32>
  }
  func.func private @threefry2x32_2(%arg0: tensor<ui32>, %arg1: tensor<ui32>, %arg2: tensor<4xui32>, %arg3: tensor<4xui32>) -> (tensor<4xui32>, tensor<4xui32>) {
    %c = stablehlo.constant dense<[13, 15, 26, 6]> : tensor<4xui32>
    %c_0 = stablehlo.constant dense<[17, 29, 16, 24]> : tensor<4xui32>
    %0 = stablehlo.xor %arg0, %arg1 : tensor<ui32>
    %c_1 = stablehlo.constant dense<466688986> : tensor<ui32>
    %1 = stablehlo.xor %0, %c_1 : tensor<ui32>
    %2 = stablehlo.broadcast_in_dim %arg0, dims = [] : (tensor<ui32>) -> tensor<4xui32>
    %3 = stablehlo.add %arg2, %2 : tensor<4xui32>
    %4 = stablehlo.broadcast_in_dim %arg1, dims = [] : (tensor<ui32>) -> tensor<4xui32>
    %5 = stablehlo.add %arg3, %4 : tensor<4xui32>
    %c_2 = stablehlo.constant dense<0> : tensor<i32>
    %c_3 = stablehlo.constant dense<0> : tensor<i32>
    %6:9 = stablehlo.while(%iterArg = %c_3, %iterArg_4 = %c_2, %iterArg_5 = %3, %iterArg_6 = %5, %iterArg_7 = %arg1, %iterArg_8 = %1, %iterArg_9 = %arg0, %iterArg_10 = %c, %iterArg_11 = %c_0) : tensor<i32>, tensor<i32>, tensor<4xui32>, tensor<4xui32>, tensor<ui32>, tensor<ui32>, tensor<ui32>, tensor<4xui32>, tensor<4xui32>
    cond {
      %c_12 = stablehlo.constant dense<5> : tensor<i32>
      %7 = stablehlo.compare LT, %iterArg, %c_12, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %7 : tensor<i1>
    } do {
      %7:8 = func.call @closed_call_3(%iterArg_4, %iterArg_5, %iterArg_6, %iterArg_7, %iterArg_8, %iterArg_9, %iterArg_10, %iterArg_11) : (tensor<i32>, tensor<4xui32>, tensor<4xui32>, tensor<ui32>, tensor<ui32>, tensor<ui32>, tensor<4xui32>, tensor<4xui32>) -> (tensor<i32>, tensor<4xui32>, tensor<4xui32>, tensor<ui32>, tensor<ui32>, tensor<ui32>, tensor<4xui32>, tensor<4xui32>)
      %c_12 = stablehlo.constant dense<1> : tensor<i32>
      %8 = stablehlo.add %iterArg, %c_12 : tensor<i32>
      stablehlo.return %8, %7#0, %7#1, %7#2, %7#3, %7#4, %7#5, %7#6, %7#7 : tensor<i32>, tensor<i32>, tensor<4xui32>, tensor<4xui32>, tensor<ui32>, tensor<ui32>, tensor<ui32>, tensor<4xui32>, tensor<4xui32>
    }
    return %6#2, %6#3 : tensor<4xui32>, tensor<4xui32>
  }
  func.func private @closed_call_3(%arg0: tensor<i32>, %arg1: tensor<4xui32>, %arg2: tensor<4xui32>, %arg3: tensor<ui32>, %arg4: tensor<ui32>, %arg5: tensor<ui32>, %arg6: tensor<4xui32>, %arg7: tensor<4xui32>) -> (tensor<i32>, tensor<4xui32>, tensor<4xui32>, tensor<ui32>, tensor<ui32>, tensor<ui32>, tensor<4xui32>, tensor<4xui32>) {
    %c = stablehlo.constant dense<1> : tensor<i32>
    %0 = stablehlo.add %arg0, %c : tensor<i32>
    %1 = stablehlo.slice %arg6 [0:1] : (tensor<4xui32>) -> tensor<1xui32>
    %2 = stablehlo.reshape %1 : (tensor<1xui32>) -> tensor<ui32>
    %3 = stablehlo.add %arg1, %arg2 : tensor<4xui32>
    %4 = stablehlo.broadcast_in_dim %2, dims = [] : (tensor<ui32>) -> tensor<4xui32>
    %5 = stablehlo.shift_left %arg2, %4 : tensor<4xui32>
    %c_0 = stablehlo.constant dense<32> : tensor<ui32>
    %6 = stablehlo.subtract %c_0, %2 : tensor<ui32>
    %7 = stablehlo.broadcast_in_dim %6, dims = [] : (tensor<ui32>) -> tensor<4xui32>
    %8 = stablehlo.shift_right_logical %arg2, %7 : tensor<4xui32>
    %9 = stablehlo.or %5, %8 : tensor<4xui32>
    %10 = stablehlo.xor %3, %9 : tensor<4xui32>
    %11 = stablehlo.slice %arg6 [1:2] : (tensor<4xui32>) -> tensor<1xui32>
    %12 = stablehlo.reshape %11 : (tensor<1xui32>) -> tensor<ui32>
    %13 = stablehlo.add %3, %10 : tensor<4xui32>
    %14 = stablehlo.broadcast_in_dim %12, dims = [] : (tensor<ui32>) -> tensor<4xui32>
    %15 = stablehlo.shift_left %10, %14 : tensor<4xui32>
    %c_1 = stablehlo.constant dense<32> : tensor<ui32>
    %16 = stablehlo.subtract %c_1, %12 : tensor<ui32>
    %17 = stablehlo.broadcast_in_dim %16, dims = [] : (tensor<ui32>) -> tensor<4xui32>
    %18 = stablehlo.shift_right_logical %10, %17 : tensor<4xui32>
    %19 = stablehlo.or %15, %18 : tensor<4xui32>
    %20 = stablehlo.xor %13, %19 : tensor<4xui32>
    %21 = stablehlo.slice %arg6 [2:3] : (tensor<4xui32>) -> tensor<1xui32>
    %22 = stablehlo.reshape %21 : (tensor<1xui32>) -> tensor<ui32>
    %23 = stablehlo.add %13, %20 : tensor<4xui32>
    %24 = stablehlo.broadcast_in_dim %22, dims = [] : (tensor<ui32>) -> tensor<4xui32>
    %25 = stablehlo.shift_left %20, %24 : tensor<4xui32>
    %c_2 = stablehlo.constant dense<32> : tensor<ui32>
    %26 = stablehlo.subtract %c_2, %22 : tensor<ui32>
    %27 = stablehlo.broadcast_in_dim %26, dims = [] : (tensor<ui32>) -> tensor<4xui32>
    %28 = stablehlo.shift_right_logical %20, %27 : tensor<4xui32>
    %29 = stablehlo.or %25, %28 : tensor<4xui32>
    %30 = stablehlo.xor %23, %29 : tensor<4xui32>
    %31 = stablehlo.slice %arg6 [3:4] : (tensor<4xui32>) -> tensor<1xui32>
    %32 = stablehlo.reshape %31 : (tensor<1xui32>) -> tensor<ui32>
    %33 = stablehlo.add %23, %30 : tensor<4xui32>
    %34 = stablehlo.broadcast_in_dim %32, dims = [] : (tensor<ui32>) -> tensor<4xui32>
    %35 = stablehlo.shift_left %30, %34 : tensor<4xui32>
    %c_3 = stablehlo.constant dense<32> : tensor<ui32>
    %36 = stablehlo.subtract %c_3, %32 : tensor<ui32>
    %37 = stablehlo.broadcast_in_dim %36, dims = [] : (tensor<ui32>) -> tensor<4xui32>
    %38 = stablehlo.shift_right_logical %30, %37 : tensor<4xui32>
    %39 = stablehlo.or %35, %38 : tensor<4xui32>
    %40 = stablehlo.xor %33, %39 : tensor<4xui32>
    %41 = stablehlo.broadcast_in_dim %arg3, dims = [] : (tensor<ui32>) -> tensor<4xui32>
    %42 = stablehlo.add %33, %41 : tensor<4xui32>
    %43 = stablehlo.broadcast_in_dim %arg4, dims = [] : (tensor<ui32>) -> tensor<4xui32>
    %44 = stablehlo.add %40, %43 : tensor<4xui32>
    %c_4 = stablehlo.constant dense<1> : tensor<i32>
    %45 = stablehlo.add %arg0, %c_4 : tensor<i32>
    %46 = stablehlo.convert %45 : (tensor<i32>) -> tensor<ui32>
    %47 = stablehlo.broadcast_in_dim %46, dims = [] : (tensor<ui32>) -> tensor<4xui32>
    %48 = stablehlo.add %44, %47 : tensor<4xui32>
    return %0, %42, %48, %arg4, %arg5, %arg3, %arg7, %arg6 : tensor<i32>, tensor<4xui32>, tensor<4xui32>, tensor<ui32>, tensor<ui32>, tensor<ui32>, tensor<4xui32>, tensor<4xui32>
  }
}
