module @jit__lambda attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<2xui32>) -> (tensor<4x4xi32> {jax.result_info = "result[0]"}, tensor<9xi1> {jax.result_info = "result[1]"}) {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %c_0 = stablehlo.constant dense<100> : tensor<i32>
    %0 = call @_randint(%arg0, %c, %c_0) : (tensor<2xui32>, tensor<i32>, tensor<i32>) -> tensor<4x4xi32>
    %cst = stablehlo.constant dense<3.000000e-01> : tensor<f32>
    %1 = call @_bernoulli(%arg0, %cst) : (tensor<2xui32>, tensor<f32>) -> tensor<9xi1>
    return %0, %1 : tensor<4x4xi32>, tensor<9xi1>
  }
  func.func private @_randint(%arg0: tensor<2xui32>, %arg1: tensor<i32>, %arg2: tensor<i32>) -> tensor<4x4xi32> {
    %c = stablehlo.constant dense<2147483647> : tensor<i32>
    %c_0 = stablehlo.constant dense<-2147483648> : tensor<i32>
    %c_1 = stablehlo.constant dense<2147483647> : tensor<i32>
    %0 = call @clip(%c, %c_0, %c_1) : (tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<i32>
    %1 = stablehlo.compare GT, %arg2, %0, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %c_2 = stablehlo.constant dense<-2147483648> : tensor<i32>
    %c_3 = stablehlo.constant dense<2147483647> : tensor<i32>
    %2 = call @clip_0(%arg1, %c_2, %c_3) : (tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<i32>
    %3 = stablehlo.convert %2 : tensor<i32>
    %c_4 = stablehlo.constant dense<-2147483648> : tensor<i32>
    %c_5 = stablehlo.constant dense<2147483647> : tensor<i32>
    %4 = call @clip_0(%arg2, %c_4, %c_5) : (tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<i32>
    %5 = stablehlo.convert %4 : tensor<i32>
    %6 = stablehlo.broadcast_in_dim %3, dims = [] : (tensor<i32>) -> tensor<1x1xi32>
    %7 = stablehlo.broadcast_in_dim %5, dims = [] : (tensor<i32>) -> tensor<1x1xi32>
    %8 = call @_threefry_split(%arg0) : (tensor<2xui32>) -> tensor<2x2xui32>
    %9 = stablehlo.slice %8 [0:1, 0:2] : (tensor<2x2xui32>) -> tensor<1x2xui32>
    %10 = stablehlo.reshape %9 : (tensor<1x2xui32>) -> tensor<2xui32>
    %11 = stablehlo.slice %8 [1:2, 0:2] : (tensor<2x2xui32>) -> tensor<1x2xui32>
    %12 = stablehlo.reshape %11 : (tensor<1x2xui32>) -> tensor<2xui32>
    %13 = stablehlo.slice %10 [0:1] : (tensor<2xui32>) -> tensor<1xui32>
    %14 = stablehlo.reshape %13 : (tensor<1xui32>) -> tensor<ui32>
    %15 = stablehlo.slice %10 [1:2] : (tensor<2xui32>) -> tensor<1xui32>
    %16 = stablehlo.reshape %15 : (tensor<1xui32>) -> tensor<ui32>
    %17 = stablehlo.iota dim = 0 : tensor<4x4xui64>
    %18 = stablehlo.iota dim = 1 : tensor<4x4xui64>
    %c_6 = stablehlo.constant dense<4> : tensor<ui64>
    %19 = stablehlo.broadcast_in_dim %c_6, dims = [] : (tensor<ui64>) -> tensor<4x4xui64>
    %20 = stablehlo.multiply %19, %17 : tensor<4x4xui64>
    %c_7 = stablehlo.constant dense<1> : tensor<ui64>
    %21 = stablehlo.broadcast_in_dim %c_7, dims = [] : (tensor<ui64>) -> tensor<4x4xui64>
    %22 = stablehlo.multiply %21, %18 : tensor<4x4xui64>
    %23 = stablehlo.add %20, %22 : tensor<4x4xui64>
    %c_8 = stablehlo.constant dense<32> : tensor<ui64>
    %24 = stablehlo.broadcast_in_dim %c_8, dims = [] : (tensor<ui64>) -> tensor<4x4xui64>
    %25 = stablehlo.shift_right_logical %23, %24 : tensor<4x4xui64>
    %26 = stablehlo.convert %23 : (tensor<4x4xui64>) -> tensor<4x4xui32>
    %27 = stablehlo.convert %25 : (tensor<4x4xui64>) -> tensor<4x4xui32>
    %28:2 = call @threefry2x32_1(%14, %16, %27, %26) : (tensor<ui32>, tensor<ui32>, tensor<4x4xui32>, tensor<4x4xui32>) -> (tensor<4x4xui32>, tensor<4x4xui32>)
    %29 = stablehlo.xor %28#0, %28#1 : tensor<4x4xui32>
    %30 = stablehlo.slice %12 [0:1] : (tensor<2xui32>) -> tensor<1xui32>
    %31 = stablehlo.reshape %30 : (tensor<1xui32>) -> tensor<ui32>
    %32 = stablehlo.slice %12 [1:2] : (tensor<2xui32>) -> tensor<1xui32>
    %33 = stablehlo.reshape %32 : (tensor<1xui32>) -> tensor<ui32>
    %34 = stablehlo.iota dim = 0 : tensor<4x4xui64>
    %35 = stablehlo.iota dim = 1 : tensor<4x4xui64>
    %c_9 = stablehlo.constant dense<4> : tensor<ui64>
    %36 = stablehlo.broadcast_in_dim %c_9, dims = [] : (tensor<ui64>) -> tensor<4x4xui64>
    %37 = stablehlo.multiply %36, %34 : tensor<4x4xui64>
    %c_10 = stablehlo.constant dense<1> : tensor<ui64>
    %38 = stablehlo.broadcast_in_dim %c_10, dims = [] : (tensor<ui64>) -> tensor<4x4xui64>
    %39 = stablehlo.multiply %38, %35 : tensor<4x4xui64>
    %40 = stablehlo.add %37, %39 : tensor<4x4xui64>
    %c_11 = stablehlo.constant dense<32> : tensor<ui64>
    %41 = stablehlo.broadcast_in_dim %c_11, dims = [] : (tensor<ui64>) -> tensor<4x4xui64>
    %42 = stablehlo.shift_right_logical %40, %41 : tensor<4x4xui64>
    %43 = stablehlo.convert %40 : (tensor<4x4xui64>) -> tensor<4x4xui32>
    %44 = stablehlo.convert %42 : (tensor<4x4xui64>) -> tensor<4x4xui32>
    %45:2 = call @threefry2x32_1(%31, %33, %44, %43) : (tensor<ui32>, tensor<ui32>, tensor<4x4xui32>, tensor<4x4xui32>) -> (tensor<4x4xui32>, tensor<4x4xui32>)
    %46 = stablehlo.xor %45#0, %45#1 : tensor<4x4xui32>
    %47 = stablehlo.subtract %7, %6 : tensor<1x1xi32>
    %48 = stablehlo.convert %47 : (tensor<1x1xi32>) -> tensor<1x1xui32>
    %49 = stablehlo.compare LE, %7, %6, SIGNED : (tensor<1x1xi32>, tensor<1x1xi32>) -> tensor<1x1xi1>
    %c_12 = stablehlo.constant dense<1> : tensor<ui32>
    %50 = stablehlo.broadcast_in_dim %c_12, dims = [] : (tensor<ui32>) -> tensor<1x1xui32>
    %51 = stablehlo.select %49, %50, %48 : tensor<1x1xi1>, tensor<1x1xui32>
    %52 = stablehlo.compare GT, %7, %6, SIGNED : (tensor<1x1xi32>, tensor<1x1xi32>) -> tensor<1x1xi1>
    %53 = stablehlo.broadcast_in_dim %1, dims = [] : (tensor<i1>) -> tensor<1x1xi1>
    %54 = stablehlo.and %53, %52 : tensor<1x1xi1>
    %c_13 = stablehlo.constant dense<1> : tensor<ui32>
    %55 = stablehlo.broadcast_in_dim %c_13, dims = [] : (tensor<ui32>) -> tensor<1x1xui32>
    %56 = stablehlo.add %51, %55 : tensor<1x1xui32>
    %57 = stablehlo.select %54, %56, %51 : tensor<1x1xi1>, tensor<1x1xui32>
    %c_14 = stablehlo.constant dense<65536> : tensor<ui32>
    %58 = stablehlo.broadcast_in_dim %c_14, dims = [] : (tensor<ui32>) -> tensor<1x1xui32>
    %59 = stablehlo.remainder %58, %57 : tensor<1x1xui32>
    %60 = stablehlo.multiply %59, %59 : tensor<1x1xui32>
    %61 = stablehlo.remainder %60, %57 : tensor<1x1xui32>
    %62 = stablehlo.broadcast_in_dim %57, dims = [0, 1] : (tensor<1x1xui32>) -> tensor<4x4xui32>
    %63 = stablehlo.remainder %29, %62 : tensor<4x4xui32>
    %64 = stablehlo.broadcast_in_dim %61, dims = [0, 1] : (tensor<1x1xui32>) -> tensor<4x4xui32>
    %65 = stablehlo.multiply %63, %64 : tensor<4x4xui32>
    %66 = stablehlo.broadcast_in_dim %57, dims = [0, 1] : (tensor<1x1xui32>) -> tensor<4x4xui32>
    %67 = stablehlo.remainder %46, %66 : tensor<4x4xui32>
    %68 = stablehlo.add %65, %67 : tensor<4x4xui32>
    %69 = stablehlo.broadcast_in_dim %57, dims = [0, 1] : (tensor<1x1xui32>) -> tensor<4x4xui32>
    %70 = stablehlo.remainder %68, %69 : tensor<4x4xui32>
    %71 = stablehlo.convert %70 : (tensor<4x4xui32>) -> tensor<4x4xi32>
    %72 = stablehlo.broadcast_in_dim %6, dims = [0, 1] : (tensor<1x1xi32>) -> tensor<4x4xi32>
    %73 = stablehlo.add %72, %71 : tensor<4x4xi32>
    return %73 : tensor<4x4xi32>
  }
  func.func private @clip(%arg0: tensor<i32>, %arg1: tensor<i32>, %arg2: tensor<i32>) -> tensor<i32> {
    %0 = stablehlo.maximum %arg1, %arg0 : tensor<i32>
    %1 = stablehlo.minimum %arg2, %0 : tensor<i32>
    return %1 : tensor<i32>
  }
  func.func private @clip_0(%arg0: tensor<i32>, %arg1: tensor<i32>, %arg2: tensor<i32>) -> tensor<i32> {
    %0 = stablehlo.maximum %arg1, %arg0 : tensor<i32>
    %1 = stablehlo.minimum %arg2, %0 : tensor<i32>
    return %1 : tensor<i32>
  }
  func.func private @_threefry_split(%arg0: tensor<2xui32>) -> tensor<2x2xui32> {
    %0 = stablehlo.slice %arg0 [0:1] : (tensor<2xui32>) -> tensor<1xui32>
    %1 = stablehlo.reshape %0 : (tensor<1xui32>) -> tensor<ui32>
    %2 = stablehlo.slice %arg0 [1:2] : (tensor<2xui32>) -> tensor<1xui32>
    %3 = stablehlo.reshape %2 : (tensor<1xui32>) -> tensor<ui32>
    %4 = stablehlo.iota dim = 0 : tensor<2xui64>
    %c = stablehlo.constant dense<1> : tensor<ui64>
    %5 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<ui64>) -> tensor<2xui64>
    %6 = stablehlo.multiply %5, %4 : tensor<2xui64>
    %c_0 = stablehlo.constant dense<32> : tensor<ui64>
    %7 = stablehlo.broadcast_in_dim %c_0, dims = [] : (tensor<ui64>) -> tensor<2xui64>
    %8 = stablehlo.shift_right_logical %6, %7 : tensor<2xui64>
    %9 = stablehlo.convert %6 : (tensor<2xui64>) -> tensor<2xui32>
    %10 = stablehlo.convert %8 : (tensor<2xui64>) -> tensor<2xui32>
    %11:2 = call @threefry2x32(%1, %3, %10, %9) : (tensor<ui32>, tensor<ui32>, tensor<2xui32>, tensor<2xui32>) -> (tensor<2xui32>, tensor<2xui32>)
    %12 = stablehlo.broadcast_in_dim %11#0, dims = [0] : (tensor<2xui32>) -> tensor<2x1xui32>
    %13 = stablehlo.broadcast_in_dim %11#1, dims = [0] : (tensor<2xui32>) -> tensor<2x1xui32>
    %14 = stablehlo.concatenate %12, %13, dim = 1 : (tensor<2x1xui32>, tensor<2x1xui32>) -> tensor<2x2xui32>
    return %14 : tensor<2x2xui32>
  }
  func.func private @threefry2x32(%arg0: tensor<ui32>, %arg1: tensor<ui32>, %arg2: tensor<2xui32>, %arg3: tensor<2xui32>) -> (tensor<2xui32>, tensor<2xui32>) {
    %c = stablehlo.constant dense<[13, 15, 26, 6]> : tensor<4xui32>
    %c_0 = stablehlo.constant dense<[17, 29, 16, 24]> : tensor<4xui32>
    %0 = stablehlo.xor %arg0, %arg1 : tensor<ui32>
    %c_1 = stablehlo.constant dense<466688986> : tensor<ui32>
    %1 = stablehlo.xor %0, %c_1 : tensor<ui32>
    %2 = stablehlo.broadcast_in_dim %arg0, dims = [] : (tensor<ui32>) -> tensor<2xui32>
    %3 = stablehlo.add %arg2, %2 : tensor<2xui32>
    %4 = stablehlo.broadcast_in_dim %arg1, dims = [] : (tensor<ui32>) -> tensor<2xui32>
    %5 = stablehlo.add %arg3, %4 : tensor<2xui32>
    %c_2 = stablehlo.constant dense<0> : tensor<i32>
    %c_3 = stablehlo.constant dense<0> : tensor<i32>
    %6:9 = stablehlo.while(%iterArg = %c_3, %iterArg_4 = %c_2, %iterArg_5 = %3, %iterArg_6 = %5, %iterArg_7 = %arg1, %iterArg_8 = %1, %iterArg_9 = %arg0, %iterArg_10 = %c, %iterArg_11 = %c_0) : tensor<i32>, tensor<i32>, tensor<2xui32>, tensor<2xui32>, tensor<ui32>, tensor<ui32>, tensor<ui32>, tensor<4xui32>, tensor<4xui32>
    cond {
      %c_12 = stablehlo.constant dense<5> : tensor<i32>
      %7 = stablehlo.compare LT, %iterArg, %c_12, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %7 : tensor<i1>
    } do {
      %7:8 = func.call @closed_call(%iterArg_4, %iterArg_5, %iterArg_6, %iterArg_7, %iterArg_8, %iterArg_9, %iterArg_10, %iterArg_11) : (tensor<i32>, tensor<2xui32>, tensor<2xui32>, tensor<ui32>, tensor<ui32>, tensor<ui32>, tensor<4xui32>, tensor<4xui32>) -> (tensor<i32>, tensor<2xui32>, tensor<2xui32>, tensor<ui32>, tensor<ui32>, tensor<ui32>, tensor<4xui32>, tensor<4xui32>)
      %c_12 = stablehlo.constant dense<1> : tensor<i32>
      %8 = stablehlo.add %iterArg, %c_12 : tensor<i32>
      stablehlo.return %8, %7#0, %7#1, %7#2, %7#3, %7#4, %7#5, %7#6, %7#7 : tensor<i32>, tensor<i32>, tensor<2xui32>, tensor<2xui32>, tensor<ui32>, tensor<ui32>, tensor<ui32>, tensor<4xui32>, tensor<4xui32>
    }
    return %6#2, %6#3 : tensor<2xui32>, tensor<2xui32>
  }
  func.func private @closed_call(%arg0: tensor<i32>, %arg1: tensor<2xui32>, %arg2: tensor<2xui32>, %arg3: tensor<ui32>, %arg4: tensor<ui32>, %arg5: tensor<ui32>, %arg6: tensor<4xui32>, %arg7: tensor<4xui32>) -> (tensor<i32>, tensor<2xui32>, tensor<2xui32>, tensor<ui32>, tensor<ui32>, tensor<ui32>, tensor<4xui32>, tensor<4xui32>) {
    %c = stablehlo.constant dense<1> : tensor<i32>
    %0 = stablehlo.add %arg0, %c : tensor<i32>
    %1 = stablehlo.slice %arg6 [0:1] : (tensor<4xui32>) -> tensor<1xui32>
    %2 = stablehlo.reshape %1 : (tensor<1xui32>) -> tensor<ui32>
    %3 = stablehlo.add %arg1, %arg2 : tensor<2xui32>
    %4 = stablehlo.broadcast_in_dim %2, dims = [] : (tensor<ui32>) -> tensor<2xui32>
    %5 = stablehlo.shift_left %arg2, %4 : tensor<2xui32>
    %c_0 = stablehlo.constant dense<32> : tensor<ui32>
    %6 = stablehlo.subtract %c_0, %2 : tensor<ui32>
    %7 = stablehlo.broadcast_in_dim %6, dims = [] : (tensor<ui32>) -> tensor<2xui32>
    %8 = stablehlo.shift_right_logical %arg2, %7 : tensor<2xui32>
    %9 = stablehlo.or %5, %8 : tensor<2xui32>
    %10 = stablehlo.xor %3, %9 : tensor<2xui32>
    %11 = stablehlo.slice %arg6 [1:2] : (tensor<4xui32>) -> tensor<1xui32>
    %12 = stablehlo.reshape %11 : (tensor<1xui32>) -> tensor<ui32>
    %13 = stablehlo.add %3, %10 : tensor<2xui32>
    %14 = stablehlo.broadcast_in_dim %12, dims = [] : (tensor<ui32>) -> tensor<2xui32>
    %15 = stablehlo.shift_left %10, %14 : tensor<2xui32>
    %c_1 = stablehlo.constant dense<32> : tensor<ui32>
    %16 = stablehlo.subtract %c_1, %12 : tensor<ui32>
    %17 = stablehlo.broadcast_in_dim %16, dims = [] : (tensor<ui32>) -> tensor<2xui32>
    %18 = stablehlo.shift_right_logical %10, %17 : tensor<2xui32>
    %19 = stablehlo.or %15, %18 : tensor<2xui32>
    %20 = stablehlo.xor %13, %19 : tensor<2xui32>
    %21 = stablehlo.slice %arg6 [2:3] : (tensor<4xui32>) -> tensor<1xui32>
    %22 = stablehlo.reshape %21 : (tensor<1xui32>) -> tensor<ui32>
    %23 = stablehlo.add %13, %20 : tensor<2xui32>
    %24 = stablehlo.broadcast_in_dim %22, dims = [] : (tensor<ui32>) -> tensor<2xui32>
    %25 = stablehlo.shift_left %20, %24 : tensor<2xui32>
    %c_2 = stablehlo.constant dense<32> : tensor<ui32>
    %26 = stablehlo.subtract %c_2, %22 : tensor<ui32>
    %27 = stablehlo.broadcast_in_dim %26, dims = [] : (tensor<ui32>) -> tensor<2xui32>
    %28 = stablehlo.shift_right_logical %20, %27 : tensor<2xui32>
    %29 = stablehlo.or %25, %28 : tensor<2xui32>
    %30 = stablehlo.xor %23, %29 : tensor<2xui32>
    %31 = stablehlo.slice %arg6 [3:4] : (tensor<4xui32>) -> tensor<1xui32>
    %32 = stablehlo.reshape %31 : (tensor<1xui32>) -> tensor<ui32>
    %33 = stablehlo.add %23, %30 : tensor<2xui32>
    %34 = stablehlo.broadcast_in_dim %32, dims = [] : (tensor<ui32>) -> tensor<2xui32>
    %35 = stablehlo.shift_left %30, %34 : tensor<2xui32>
    %c_3 = stablehlo.constant dense<32> : tensor<ui32>
    %36 = stablehlo.subtract %c_3, %32 : tensor<ui32>
    %37 = stablehlo.broadcast_in_dim %36, dims = [] : (tensor<ui32>) -> tensor<2xui32>
    %38 = stablehlo.shift_right_logical %30, %37 : tensor<2xui32>
    %39 = stablehlo.or %35, %38 : tensor<2xui32>
    %40 = stablehlo.xor %33, %39 : tensor<2xui32>
    %41 = stablehlo.broadcast_in_dim %arg3, dims = [] : (tensor<ui32>) -> tensor<2xui32>
    %42 = stablehlo.add %33, %41 : tensor<2xui32>
    %43 = stablehlo.broadcast_in_dim %arg4, dims = [] : (tensor<ui32>) -> tensor<2xui32>
    %44 = stablehlo.add %40, %43 : tensor<2xui32>
    %c_4 = stablehlo.constant dense<1> : tensor<i32>
    %45 = stablehlo.add %arg0, %c_4 : tensor<i32>
    %46 = stablehlo.convert %45 : (tensor<i32>) -> tensor<ui32>
    %47 = stablehlo.broadcast_in_dim %46, dims = [] : (tensor<ui32>) -> tensor<2xui32>
    %48 = stablehlo.add %44, %47 : tensor<2xui32>
    return %0, %42, %48, %arg4, %arg5, %arg3, %arg7, %arg6 : tensor<i32>, tensor<2xui32>, tensor<2xui32>, tensor<ui32>, tensor<ui32>, tensor<ui32>, tensor<4xui32>, tensor<4xui32>
  }
  func.func private @threefry2x32_1(%arg0: tensor<ui32>, %arg1: tensor<ui32>, %arg2: tensor<4x4xui32>, %arg3: tensor<4x4xui32>) -> (tensor<4x4xui32>, tensor<4x4xui32>) {
    %c = stablehlo.constant dense<[13, 15, 26, 6]> : tensor<4xui32>
    %c_0 = stablehlo.constant dense<[17, 29, 16, 24]> : tensor<4xui32>
    %0 = stablehlo.xor %arg0, %arg1 : tensor<ui32>
    %c_1 = stablehlo.constant dense<466688986> : tensor<ui32>
    %1 = stablehlo.xor %0, %c_1 : tensor<ui32>
    %2 = stablehlo.broadcast_in_dim %arg0, dims = [] : (tensor<ui32>) -> tensor<4x4xui32>
    %3 = stablehlo.add %arg2, %2 : tensor<4x4xui32>
    %4 = stablehlo.broadcast_in_dim %arg1, dims = [] : (tensor<ui32>) -> tensor<4x4xui32>
    %5 = stablehlo.add %arg3, %4 : tensor<4x4xui32>
    %c_2 = stablehlo.constant dense<0> : tensor<i32>
    %c_3 = stablehlo.constant dense<0> : tensor<i32>
    %6:9 = stablehlo.while(%iterArg = %c_3, %iterArg_4 = %c_2, %iterArg_5 = %3, %iterArg_6 = %5, %iterArg_7 = %arg1, %iterArg_8 = %1, %iterArg_9 = %arg0, %iterArg_10 = %c, %iterArg_11 = %c_0) : tensor<i32>, tensor<i32>, tensor<4x4xui32>, tensor<4x4xui32>, tensor<ui32>, tensor<ui32>, tensor<ui32>, tensor<4xui32>, tensor<4xui32>
    cond {
      %c_12 = stablehlo.constant dense<5> : tensor<i32>
      %7 = stablehlo.compare LT, %iterArg, %c_12, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %7 : tensor<i1>
    } do {
      %7:8 = func.call @closed_call_2(%iterArg_4, %iterArg_5, %iterArg_6, %iterArg_7, %iterArg_8, %iterArg_9, %iterArg_10, %iterArg_11) : (tensor<i32>, tensor<4x4xui32>, tensor<4x4xui32>, tensor<ui32>, tensor<ui32>, tensor<ui32>, tensor<4xui32>, tensor<4xui32>) -> (tensor<i32>, tensor<4x4xui32>, tensor<4x4xui32>, tensor<ui32>, tensor<ui32>, tensor<ui32>, tensor<4xui32>, tensor<4xui32>)
      %c_12 = stablehlo.constant dense<1> : tensor<i32>
      %8 = stablehlo.add %iterArg, %c_12 : tensor<i32>
      stablehlo.return %8, %7#0, %7#1, %7#2, %7#3, %7#4, %7#5, %7#6, %7#7 : tensor<i32>, tensor<i32>, tensor<4x4xui32>, tensor<4x4xui32>, tensor<ui32>, tensor<ui32>, tensor<ui32>, tensor<4xui32>, tensor<4xui32>
    }
    return %6#2, %6#3 : tensor<4x4xui32>, tensor<4x4xui32>
  }
  func.func private @closed_call_2(%arg0: tensor<i32>, %arg1: tensor<4x4xui32>, %arg2: tensor<4x4xui32>, %arg3: tensor<ui32>, %arg4: tensor<ui32>, %arg5: tensor<ui32>, %arg6: tensor<4xui32>, %arg7: tensor<4xui32>) -> (tensor<i32>, tensor<4x4xui32>, tensor<4x4xui32>, tensor<ui32>, tensor<ui32>, tensor<ui32>, tensor<4xui32>, tensor<4xui32>) {
    %c = stablehlo.constant dense<1> : tensor<i32>
    %0 = stablehlo.add %arg0, %c : tensor<i32>
    %1 = stablehlo.slice %arg6 [0:1] : (tensor<4xui32>) -> tensor<1xui32>
    %2 = stablehlo.reshape %1 : (tensor<1xui32>) -> tensor<ui32>
    %3 = stablehlo.add %arg1, %arg2 : tensor<4x4xui32>
    %4 = stablehlo.broadcast_in_dim %2, dims = [] : (tensor<ui32>) -> tensor<4x4xui32>
    %5 = stablehlo.shift_left %arg2, %4 : tensor<4x4xui32>
    %c_0 = stablehlo.constant dense<32> : tensor<ui32>
    %6 = stablehlo.subtract %c_0, %2 : tensor<ui32>
    %7 = stablehlo.broadcast_in_dim %6, dims = [] : (tensor<ui32>) -> tensor<4x4xui32>
    %8 = stablehlo.shift_right_logical %arg2, %7 : tensor<4x4xui32>
    %9 = stablehlo.or %5, %8 : tensor<4x4xui32>
    %10 = stablehlo.xor %3, %9 : tensor<4x4xui32>
    %11 = stablehlo.slice %arg6 [1:2] : (tensor<4xui32>) -> tensor<1xui32>
    %12 = stablehlo.reshape %11 : (tensor<1xui32>) -> tensor<ui32>
    %13 = stablehlo.add %3, %10 : tensor<4x4xui32>
    %14 = stablehlo.broadcast_in_dim %12, dims = [] : (tensor<ui32>) -> tensor<4x4xui32>
    %15 = stablehlo.shift_left %10, %14 : tensor<4x4xui32>
    %c_1 = stablehlo.constant dense<32> : tensor<ui32>
    %16 = stablehlo.subtract %c_1, %12 : tensor<ui32>
    %17 = stablehlo.broadcast_in_dim %16, dims = [] : (tensor<ui32>) -> tensor<4x4xui32>
    %18 = stablehlo.shift_right_logical %10, %17 : tensor<4x4xui32>
    %19 = stablehlo.or %15, %18 : tensor<4x4xui32>
    %20 = stablehlo.xor %13, %19 : tensor<4x4xui32>
    %21 = stablehlo.slice %arg6 [2:3] : (tensor<4xui32>) -> tensor<1xui32>
    %22 = stablehlo.reshape %21 : (tensor<1xui32>) -> tensor<ui32>
    %23 = stablehlo.add %13, %20 : tensor<4x4xui32>
    %24 = stablehlo.broadcast_in_dim %22, dims = [] : (tensor<ui32>) -> tensor<4x4xui32>
    %25 = stablehlo.shift_left %20, %24 : tensor<4x4xui32>
    %c_2 = stablehlo.constant dense<32> : tensor<ui32>
    %26 = stablehlo.subtract %c_2, %22 : tensor<ui32>
    %27 = stablehlo.broadcast_in_dim %26, dims = [] : (tensor<ui32>) -> tensor<4x4xui32>
    %28 = stablehlo.shift_right_logical %20, %27 : tensor<4x4xui32>
    %29 = stablehlo.or %25, %28 : tensor<4x4xui32>
    %30 = stablehlo.xor %23, %29 : tensor<4x4xui32>
    %31 = stablehlo.slice %arg6 [3:4] : (tensor<4xui32>) -> tensor<1xui32>
    %32 = stablehlo.reshape %31 : (tensor<1xui32>) -> tensor<ui32>
    %33 = stablehlo.add %23, %30 : tensor<4x4xui32>
    %34 = stablehlo.broadcast_in_dim %32, dims = [] : (tensor<ui32>) -> tensor<4x4xui32>
    %35 = stablehlo.shift_left %30, %34 : tensor<4x4xui32>
    %c_3 = stablehlo.constant dense<32> : tensor<ui32>
    %36 = stablehlo.subtract %c_3, %32 : tensor<ui32>
    %37 = stablehlo.broadcast_in_dim %36, dims = [] : (tensor<ui32>) -> tensor<4x4xui32>
    %38 = stablehlo.shift_right_logical %30, %37 : tensor<4x4xui32>
    %39 = stablehlo.or %35, %38 : tensor<4x4xui32>
    %40 = stablehlo.xor %33, %39 : tensor<4x4xui32>
    %41 = stablehlo.broadcast_in_dim %arg3, dims = [] : (tensor<ui32>) -> tensor<4x4xui32>
    %42 = stablehlo.add %33, %41 : tensor<4x4xui32>
    %43 = stablehlo.broadcast_in_dim %arg4, dims = [] : (tensor<ui32>) -> tensor<4x4xui32>
    %44 = stablehlo.add %40, %43 : tensor<4x4xui32>
    %c_4 = stablehlo.constant dense<1> : tensor<i32>
    %45 = stablehlo.add %arg0, %c_4 : tensor<i32>
    %46 = stablehlo.convert %45 : (tensor<i32>) -> tensor<ui32>
    %47 = stablehlo.broadcast_in_dim %46, dims = [] : (tensor<ui32>) -> tensor<4x4xui32>
    %48 = stablehlo.add %44, %47 : tensor<4x4xui32>
    return %0, %42, %48, %arg4, %arg5, %arg3, %arg7, %arg6 : tensor<i32>, tensor<4x4xui32>, tensor<4x4xui32>, tensor<ui32>, tensor<ui32>, tensor<ui32>, tensor<4xui32>, tensor<4xui32>
  }
  func.func private @_bernoulli(%arg0: tensor<2xui32>, %arg1: tensor<f32>) -> tensor<9xi1> {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %cst_0 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %0 = call @_uniform(%arg0, %cst, %cst_0) : (tensor<2xui32>, tensor<f32>, tensor<f32>) -> tensor<9xf32>
    %1 = stablehlo.broadcast_in_dim %arg1, dims = [] : (tensor<f32>) -> tensor<9xf32>
    %2 = stablehlo.compare LT, %0, %1, FLOAT : (tensor<9xf32>, tensor<9xf32>) -> tensor<9xi1>
    return %2 : tensor<9xi1>
  }
  func.func private @_uniform(%arg0: tensor<2xui32>, %arg1: tensor<f32>, %arg2: tensor<f32>) -> tensor<9xf32> {
    %0 = stablehlo.convert %arg1 : tensor<f32>
    %1 = stablehlo.convert %arg2 : tensor<f32>
    %2 = stablehlo.broadcast_in_dim %0, dims = [] : (tensor<f32>) -> tensor<1xf32>
    %3 = stablehlo.broadcast_in_dim %1, dims = [] : (tensor<f32>) -> tensor<1xf32>
    %4 = stablehlo.slice %arg0 [0:1] : (tensor<2xui32>) -> tensor<1xui32>
    %5 = stablehlo.reshape %4 : (tensor<1xui32>) -> tensor<ui32>
    %6 = stablehlo.slice %arg0 [1:2] : (tensor<2xui32>) -> tensor<1xui32>
    %7 = stablehlo.reshape %6 : (tensor<1xui32>) -> tensor<ui32>
    %8 = stablehlo.iota dim = 0 : tensor<9xui64>
    %c = stablehlo.constant dense<1> : tensor<ui64>
    %9 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<ui64>) -> tensor<9xui64>
    %10 = stablehlo.multiply %9, %8 : tensor<9xui64>
    %c_0 = stablehlo.constant dense<32> : tensor<ui64>
    %11 = stablehlo.broadcast_in_dim %c_0, dims = [] : (tensor<ui64>) -> tensor<9xui64>
    %12 = stablehlo.shift_right_logical %10, %11 : tensor<9xui64>
    %13 = stablehlo.convert %10 : (tensor<9xui64>) -> tensor<9xui32>
    %14 = stablehlo.convert %12 : (tensor<9xui64>) -> tensor<9xui32>
    %15:2 = call @threefry2x32_3(%5, %7, %14, %13) : (tensor<ui32>, tensor<ui32>, tensor<9xui32>, tensor<9xui32>) -> (tensor<9xui32>, tensor<9xui32>)
    %16 = stablehlo.xor %15#0, %15#1 : tensor<9xui32>
    %c_1 = stablehlo.constant dense<9> : tensor<ui32>
    %17 = stablehlo.broadcast_in_dim %c_1, dims = [] : (tensor<ui32>) -> tensor<9xui32>
    %18 = stablehlo.shift_right_logical %16, %17 : tensor<9xui32>
    %c_2 = stablehlo.constant dense<1065353216> : tensor<ui32>
    %19 = stablehlo.broadcast_in_dim %c_2, dims = [] : (tensor<ui32>) -> tensor<9xui32>
    %20 = stablehlo.or %18, %19 : tensor<9xui32>
    %21 = stablehlo.bitcast_convert %20 : (tensor<9xui32>) -> tensor<9xf32>
    %cst = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %22 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<9xf32>
    %23 = stablehlo.subtract %21, %22 : tensor<9xf32>
    %24 = stablehlo.subtract %3, %2 : tensor<1xf32>
    %25 = stablehlo.broadcast_in_dim %24, dims = [0] : (tensor<1xf32>) -> tensor<9xf32>
    %26 = stablehlo.multiply %23, %25 : tensor<9xf32>
    %27 = stablehlo.broadcast_in_dim %2, dims = [0] : (tensor<1xf32>) -> tensor<9xf32>
    %28 = stablehlo.add %26, %27 : tensor<9xf32>
    %29 = stablehlo.broadcast_in_dim %2, dims = [0] : (tensor<1xf32>) -> tensor<9xf32>
    %30 = stablehlo.maximum %29, %28 : tensor<9xf32>
    return %30 : tensor<9xf32>
  }
  func.func private @threefry2x32_3(%arg0: tensor<ui32>, %arg1: tensor<ui32>, %arg2: tensor<9xui32>, %arg3: tensor<9xui32>) -> (tensor<9xui32>, tensor<9xui32>) {
    %c = stablehlo.constant dense<[13, 15, 26, 6]> : tensor<4xui32>
    %c_0 = stablehlo.constant dense<[17, 29, 16, 24]> : tensor<4xui32>
    %0 = stablehlo.xor %arg0, %arg1 : tensor<ui32>
    %c_1 = stablehlo.constant dense<466688986> : tensor<ui32>
    %1 = stablehlo.xor %0, %c_1 : tensor<ui32>
    %2 = stablehlo.broadcast_in_dim %arg0, dims = [] : (tensor<ui32>) -> tensor<9xui32>
    %3 = stablehlo.add %arg2, %2 : tensor<9xui32>
    %4 = stablehlo.broadcast_in_dim %arg1, dims = [] : (tensor<ui32>) -> tensor<9xui32>
    %5 = stablehlo.add %arg3, %4 : tensor<9xui32>
    %c_2 = stablehlo.constant dense<0> : tensor<i32>
    %c_3 = stablehlo.constant dense<0> : tensor<i32>
    %6:9 = stablehlo.while(%iterArg = %c_3, %iterArg_4 = %c_2, %iterArg_5 = %3, %iterArg_6 = %5, %iterArg_7 = %arg1, %iterArg_8 = %1, %iterArg_9 = %arg0, %iterArg_10 = %c, %iterArg_11 = %c_0) : tensor<i32>, tensor<i32>, tensor<9xui32>, tensor<9xui32>, tensor<ui32>, tensor<ui32>, tensor<ui32>, tensor<4xui32>, tensor<4xui32>
    cond {
      %c_12 = stablehlo.constant dense<5> : tensor<i32>
      %7 = stablehlo.compare LT, %iterArg, %c_12, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %7 : tensor<i1>
    } do {
      %7:8 = func.call @closed_call_4(%iterArg_4, %iterArg_5, %iterArg_6, %iterArg_7, %iterArg_8, %iterArg_9, %iterArg_10, %iterArg_11) : (tensor<i32>, tensor<9xui32>, tensor<9xui32>, tensor<ui32>, tensor<ui32>, tensor<ui32>, tensor<4xui32>, tensor<4xui32>) -> (tensor<i32>, tensor<9xui32>, tensor<9xui32>, tensor<ui32>, tensor<ui32>, tensor<ui32>, tensor<4xui32>, tensor<4xui32>)
      %c_12 = stablehlo.constant dense<1> : tensor<i32>
      %8 = stablehlo.add %iterArg, %c_12 : tensor<i32>
      stablehlo.return %8, %7#0, %7#1, %7#2, %7#3, %7#4, %7#5, %7#6, %7#7 : tensor<i32>, tensor<i32>, tensor<9xui32>, tensor<9xui32>, tensor<ui32>, tensor<ui32>, tensor<ui32>, tensor<4xui32>, tensor<4xui32>
    }
    return %6#2, %6#3 : tensor<9xui32>, tensor<9xui32>
  }
  func.func private @closed_call_4(%arg0: tensor<i32>, %arg1: tensor<9xui32>, %arg2: tensor<9xui32>, %arg3: tensor<ui32>, %arg4: tensor<ui32>, %arg5: tensor<ui32>, %arg6: tensor<4xui32>, %arg7: tensor<4xui32>) -> (tensor<i32>, tensor<9xui32>, tensor<9xui32>, tensor<ui32>, tensor<ui32>, tensor<ui32>, tensor<4xui32>, tensor<4xui32>) {
    %c = stablehlo.constant dense<1> : tensor<i32>
    %0 = stablehlo.add %arg0, %c : tensor<i32>
    %1 = stablehlo.slice %arg6 [0:1] : (tensor<4xui32>) -> tensor<1xui32>
    %2 = stablehlo.reshape %1 : (tensor<1xui32>) -> tensor<ui32>
    %3 = stablehlo.add %arg1, %arg2 : tensor<9xui32>
    %4 = stablehlo.broadcast_in_dim %2, dims = [] : (tensor<ui32>) -> tensor<9xui32>
    %5 = stablehlo.shift_left %arg2, %4 : tensor<9xui32>
    %c_0 = stablehlo.constant dense<32> : tensor<ui32>
    %6 = stablehlo.subtract %c_0, %2 : tensor<ui32>
    %7 = stablehlo.broadcast_in_dim %6, dims = [] : (tensor<ui32>) -> tensor<9xui32>
    %8 = stablehlo.shift_right_logical %arg2, %7 : tensor<9xui32>
    %9 = stablehlo.or %5, %8 : tensor<9xui32>
    %10 = stablehlo.xor %3, %9 : tensor<9xui32>
    %11 = stablehlo.slice %arg6 [1:2] : (tensor<4xui32>) -> tensor<1xui32>
    %12 = stablehlo.reshape %11 : (tensor<1xui32>) -> tensor<ui32>
    %13 = stablehlo.add %3, %10 : tensor<9xui32>
    %14 = stablehlo.broadcast_in_dim %12, dims = [] : (tensor<ui32>) -> tensor<9xui32>
    %15 = stablehlo.shift_left %10, %14 : tensor<9xui32>
    %c_1 = stablehlo.constant dense<32> : tensor<ui32>
    %16 = stablehlo.subtract %c_1, %12 : tensor<ui32>
    %17 = stablehlo.broadcast_in_dim %16, dims = [] : (tensor<ui32>) -> tensor<9xui32>
    %18 = stablehlo.shift_right_logical %10, %17 : tensor<9xui32>
    %19 = stablehlo.or %15, %18 : tensor<9xui32>
    %20 = stablehlo.xor %13, %19 : tensor<9xui32>
    %21 = stablehlo.slice %arg6 [2:3] : (tensor<4xui32>) -> tensor<1xui32>
    %22 = stablehlo.reshape %21 : (tensor<1xui32>) -> tensor<ui32>
    %23 = stablehlo.add %13, %20 : tensor<9xui32>
    %24 = stablehlo.broadcast_in_dim %22, dims = [] : (tensor<ui32>) -> tensor<9xui32>
    %25 = stablehlo.shift_left %20, %24 : tensor<9xui32>
    %c_2 = stablehlo.constant dense<32> : tensor<ui32>
    %26 = stablehlo.subtract %c_2, %22 : tensor<ui32>
    %27 = stablehlo.broadcast_in_dim %26, dims = [] : (tensor<ui32>) -> tensor<9xui32>
    %28 = stablehlo.shift_right_logical %20, %27 : tensor<9xui32>
    %29 = stablehlo.or %25, %28 : tensor<9xui32>
    %30 = stablehlo.xor %23, %29 : tensor<9xui32>
    %31 = stablehlo.slice %arg6 [3:4] : (tensor<4xui32>) -> tensor<1xui32>
    %32 = stablehlo.reshape %31 : (tensor<1xui32>) -> tensor<ui32>
    %33 = stablehlo.add %23, %30 : tensor<9xui32>
    %34 = stablehlo.broadcast_in_dim %32, dims = [] : (tensor<ui32>) -> tensor<9xui32>
    %35 = stablehlo.shift_left %30, %34 : tensor<9xui32>
    %c_3 = stablehlo.constant dense<32> : tensor<ui32>
    %36 = stablehlo.subtract %c_3, %32 : tensor<ui32>
    %37 = stablehlo.broadcast_in_dim %36, dims = [] : (tensor<ui32>) -> tensor<9xui32>
    %38 = stablehlo.shift_right_logical %30, %37 : tensor<9xui32>
    %39 = stablehlo.or %35, %38 : tensor<9xui32>
    %40 = stablehlo.xor %33, %39 : tensor<9xui32>
    %41 = stablehlo.broadcast_in_dim %arg3, dims = [] : (tensor<ui32>) -> tensor<9xui32>
    %42 = stablehlo.add %33, %41 : tensor<9xui32>
    %43 = stablehlo.broadcast_in_dim %arg4, dims = [] : (tensor<ui32>) -> tensor<9xui32>
    %44 = stablehlo.add %40, %43 : tensor<9xui32>
    %c_4 = stablehlo.constant dense<1> : tensor<i32>
    %45 = stablehlo.add %arg0, %c_4 : tensor<i32>
    %46 = stablehlo.convert %45 : (tensor<i32>) -> tensor<ui32>
    %47 = stablehlo.broadcast_in_dim %46, dims = [] : (tensor<ui32>) -> tensor<9xui32>
    %48 = stablehlo.add %44, %47 : tensor<9xui32>
    return %0, %42, %48, %arg4, %arg5, %arg3, %arg7, %arg6 : tensor<i32>, tensor<9xui32>, tensor<9xui32>, tensor<ui32>, tensor<ui32>, tensor<ui32>, tensor<4xui32>, tensor<4xui32>
  }
}
