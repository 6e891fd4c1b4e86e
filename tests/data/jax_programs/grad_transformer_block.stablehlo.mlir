module @jit__lambda attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<4x4xf32>, %arg1: tensor<4x4xf32>, %arg2: tensor<4x4xf32>, %arg3: tensor<4x4xf32>, %arg4: tensor<4x8xf32>, %arg5: tensor<8x4xf32>, %arg6: tensor<4xf32>, %arg7: tensor<2x5x4xf32>) -> (tensor<4x4xf32> {jax.result_info = "result[0]"}, tensor<4x4xf32> {jax.result_info = "result[1]"}, tensor<4x4xf32> {jax.result_info = "result[2]"}, tensor<4x4xf32> {jax.result_info = "result[3]"}, tensor<4x8xf32> {jax.result_info = "result[4]"}, tensor<8x4xf32> {jax.result_info = "result[5]"}, tensor<4xf32> {jax.result_info = "result[6]"}) {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.reduce(%arg7 init: %cst) applies stablehlo.add across dimensions = [2] : (tensor<2x5x4xf32>, tensor<f32>) -> tensor<2x5xf32>
    %1 = stablehlo.broadcast_in_dim %0, dims = [0, 1] : (tensor<2x5xf32>) -> tensor<2x5x1xf32>
    %cst_0 = stablehlo.constant dense<4.000000e+00> : tensor<f32>
    %2 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<2x5x1xf32>
    %3 = stablehlo.divide %1, %2 : tensor<2x5x1xf32>
    %4 = stablehlo.broadcast_in_dim %3, dims = [0, 1, 2] : (tensor<2x5x1xf32>) -> tensor<2x5x4xf32>
    %5 = stablehlo.subtract %arg7, %4 : tensor<2x5x4xf32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %6 = call @_var(%arg7, %c) : (tensor<2x5x4xf32>, tensor<i32>) -> tensor<2x5x1xf32>
    %cst_1 = stablehlo.constant dense<9.99999974E-6> : tensor<f32>
    %7 = stablehlo.broadcast_in_dim %cst_1, dims = [] : (tensor<f32>) -> tensor<2x5x1xf32>
    %8 = stablehlo.add %6, %7 : tensor<2x5x1xf32>
    %9 = stablehlo.sqrt %8 : tensor<2x5x1xf32>
    %10 = stablehlo.broadcast_in_dim %9, dims = [0, 1, 2] : (tensor<2x5x1xf32>) -> tensor<2x5x4xf32>
    %11 = stablehlo.divide %5, %10 : tensor<2x5x4xf32>
    %12 = stablehlo.broadcast_in_dim %arg6, dims = [2] : (tensor<4xf32>) -> tensor<1x1x4xf32>
    %13 = stablehlo.broadcast_in_dim %12, dims = [0, 1, 2] : (tensor<1x1x4xf32>) -> tensor<2x5x4xf32>
    %14 = stablehlo.multiply %11, %13 : tensor<2x5x4xf32>
    %15 = stablehlo.dot_general %14, %arg0, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x5x4xf32>, tensor<4x4xf32>) -> tensor<2x5x4xf32>
    %16 = stablehlo.dot_general %14, %arg1, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x5x4xf32>, tensor<4x4xf32>) -> tensor<2x5x4xf32>
    %17 = stablehlo.dot_general %14, %arg2, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x5x4xf32>, tensor<4x4xf32>) -> tensor<2x5x4xf32>
    %c_2 = stablehlo.constant dense<true> : tensor<i1>
    %18 = stablehlo.broadcast_in_dim %c_2, dims = [] : (tensor<i1>) -> tensor<5x5xi1>
    %19 = call @tril(%18) : (tensor<5x5xi1>) -> tensor<5x5xi1>
    %20 = stablehlo.transpose %16, dims = [0, 2, 1] : (tensor<2x5x4xf32>) -> tensor<2x4x5xf32>
    %21 = stablehlo.dot_general %15, %20, batching_dims = [0] x [0], contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<2x5x4xf32>, tensor<2x4x5xf32>) -> tensor<2x5x5xf32>
    %cst_3 = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    %22 = stablehlo.broadcast_in_dim %cst_3, dims = [] : (tensor<f32>) -> tensor<2x5x5xf32>
    %23 = stablehlo.divide %21, %22 : tensor<2x5x5xf32>
    %cst_4 = stablehlo.constant dense<-1.000000e+09> : tensor<f32>
    %24:2 = call @_where_0(%19, %23, %cst_4) : (tensor<5x5xi1>, tensor<2x5x5xf32>, tensor<f32>) -> (tensor<2x5x5xf32>, tensor<2x5x5xi1>)
    %cst_5 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %25 = stablehlo.reduce(%24#0 init: %cst_5) applies stablehlo.maximum across dimensions = [2] : (tensor<2x5x5xf32>, tensor<f32>) -> tensor<2x5xf32>
    %cst_6 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %26 = stablehlo.broadcast_in_dim %cst_6, dims = [] : (tensor<f32>) -> tensor<2x5xf32>
    %27 = stablehlo.maximum %26, %25 : tensor<2x5xf32>
    %28 = stablehlo.broadcast_in_dim %27, dims = [0, 1] : (tensor<2x5xf32>) -> tensor<2x5x1xf32>
    %29 = stablehlo.broadcast_in_dim %28, dims = [0, 1, 2] : (tensor<2x5x1xf32>) -> tensor<2x5x5xf32>
    %30 = stablehlo.subtract %24#0, %29 : tensor<2x5x5xf32>
    %31 = stablehlo.exponential %30 : tensor<2x5x5xf32>
    %cst_7 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %32 = stablehlo.reduce(%31 init: %cst_7) applies stablehlo.add across dimensions = [2] : (tensor<2x5x5xf32>, tensor<f32>) -> tensor<2x5xf32>
    %33 = stablehlo.broadcast_in_dim %32, dims = [0, 1] : (tensor<2x5xf32>) -> tensor<2x5x1xf32>
    %34 = stablehlo.broadcast_in_dim %33, dims = [0, 1, 2] : (tensor<2x5x1xf32>) -> tensor<2x5x5xf32>
    %35 = stablehlo.divide %31, %34 : tensor<2x5x5xf32>
    %36 = stablehlo.multiply %33, %33 : tensor<2x5x1xf32>
    %cst_8 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %37 = stablehlo.broadcast_in_dim %cst_8, dims = [] : (tensor<f32>) -> tensor<2x5x1xf32>
    %38 = stablehlo.divide %37, %36 : tensor<2x5x1xf32>
    %39 = stablehlo.dot_general %35, %17, batching_dims = [0] x [0], contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<2x5x5xf32>, tensor<2x5x4xf32>) -> tensor<2x5x4xf32>
    %40 = stablehlo.dot_general %39, %arg3, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x5x4xf32>, tensor<4x4xf32>) -> tensor<2x5x4xf32>
    %41 = stablehlo.add %arg7, %40 : tensor<2x5x4xf32>
    %42 = stablehlo.dot_general %41, %arg4, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x5x4xf32>, tensor<4x8xf32>) -> tensor<2x5x8xf32>
    %cst_9 = stablehlo.constant dense<5.000000e-01> : tensor<f32>
    %43 = stablehlo.broadcast_in_dim %cst_9, dims = [] : (tensor<f32>) -> tensor<2x5x8xf32>
    %44 = stablehlo.multiply %43, %42 : tensor<2x5x8xf32>
    %45 = stablehlo.negate %42 : tensor<2x5x8xf32>
    %cst_10 = stablehlo.constant dense<0.707106769> : tensor<f32>
    %46 = stablehlo.broadcast_in_dim %cst_10, dims = [] : (tensor<f32>) -> tensor<2x5x8xf32>
    %47 = stablehlo.multiply %45, %46 : tensor<2x5x8xf32>
    %48 = chlo.erfc %47 : tensor<2x5x8xf32> -> tensor<2x5x8xf32>
    %49 = chlo.square %47 : tensor<2x5x8xf32> -> tensor<2x5x8xf32>
    %50 = stablehlo.negate %49 : tensor<2x5x8xf32>
    %51 = stablehlo.exponential %50 : tensor<2x5x8xf32>
    %52 = stablehlo.multiply %44, %48 : tensor<2x5x8xf32>
    %cst_11 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %53 = stablehlo.broadcast_in_dim %cst_11, dims = [] : (tensor<f32>) -> tensor<2x5x4xf32>
    %54 = stablehlo.dot_general %53, %52, contracting_dims = [0, 1] x [0, 1], precision = [DEFAULT, DEFAULT] : (tensor<2x5x4xf32>, tensor<2x5x8xf32>) -> tensor<4x8xf32>
    %55 = stablehlo.transpose %54, dims = [1, 0] : (tensor<4x8xf32>) -> tensor<8x4xf32>
    %56 = stablehlo.dot_general %53, %arg5, contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<2x5x4xf32>, tensor<8x4xf32>) -> tensor<2x5x8xf32>
    %57 = stablehlo.multiply %44, %56 : tensor<2x5x8xf32>
    %58 = stablehlo.multiply %56, %48 : tensor<2x5x8xf32>
    %cst_12 = stablehlo.constant dense<-1.12837923> : tensor<f32>
    %59 = stablehlo.broadcast_in_dim %cst_12, dims = [] : (tensor<f32>) -> tensor<2x5x8xf32>
    %60 = stablehlo.multiply %59, %57 : tensor<2x5x8xf32>
    %61 = stablehlo.multiply %60, %51 : tensor<2x5x8xf32>
    %cst_13 = stablehlo.constant dense<0.707106769> : tensor<f32>
    %62 = stablehlo.broadcast_in_dim %cst_13, dims = [] : (tensor<f32>) -> tensor<2x5x8xf32>
    %63 = stablehlo.multiply %61, %62 : tensor<2x5x8xf32>
    %64 = stablehlo.negate %63 : tensor<2x5x8xf32>
    %cst_14 = stablehlo.constant dense<5.000000e-01> : tensor<f32>
    %65 = stablehlo.broadcast_in_dim %cst_14, dims = [] : (tensor<f32>) -> tensor<2x5x8xf32>
    %66 = stablehlo.multiply %65, %58 : tensor<2x5x8xf32>
    %67 = stablehlo.add %64, %66 : tensor<2x5x8xf32>
    %68 = stablehlo.dot_general %67, %41, contracting_dims = [0, 1] x [0, 1], precision = [DEFAULT, DEFAULT] : (tensor<2x5x8xf32>, tensor<2x5x4xf32>) -> tensor<8x4xf32>
    %69 = stablehlo.transpose %68, dims = [1, 0] : (tensor<8x4xf32>) -> tensor<4x8xf32>
    %70 = stablehlo.dot_general %67, %arg4, contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<2x5x8xf32>, tensor<4x8xf32>) -> tensor<2x5x4xf32>
    %71 = stablehlo.dot_general %70, %39, contracting_dims = [0, 1] x [0, 1], precision = [DEFAULT, DEFAULT] : (tensor<2x5x4xf32>, tensor<2x5x4xf32>) -> tensor<4x4xf32>
    %72 = stablehlo.transpose %71, dims = [1, 0] : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %73 = stablehlo.dot_general %70, %arg3, contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<2x5x4xf32>, tensor<4x4xf32>) -> tensor<2x5x4xf32>
    %74 = stablehlo.dot_general %73, %35, batching_dims = [0] x [0], contracting_dims = [1] x [1], precision = [DEFAULT, DEFAULT] : (tensor<2x5x4xf32>, tensor<2x5x5xf32>) -> tensor<2x4x5xf32>
    %75 = stablehlo.transpose %74, dims = [0, 2, 1] : (tensor<2x4x5xf32>) -> tensor<2x5x4xf32>
    %76 = stablehlo.dot_general %73, %17, batching_dims = [0] x [0], contracting_dims = [2] x [2], precision = [DEFAULT, DEFAULT] : (tensor<2x5x4xf32>, tensor<2x5x4xf32>) -> tensor<2x5x5xf32>
    %77 = stablehlo.broadcast_in_dim %38, dims = [0, 1, 2] : (tensor<2x5x1xf32>) -> tensor<2x5x5xf32>
    %78 = stablehlo.multiply %76, %77 : tensor<2x5x5xf32>
    %79 = stablehlo.multiply %78, %31 : tensor<2x5x5xf32>
    %cst_15 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %80 = stablehlo.reduce(%79 init: %cst_15) applies stablehlo.add across dimensions = [2] : (tensor<2x5x5xf32>, tensor<f32>) -> tensor<2x5xf32>
    %81 = stablehlo.reshape %80 : (tensor<2x5xf32>) -> tensor<2x5x1xf32>
    %82 = stablehlo.negate %81 : tensor<2x5x1xf32>
    %83 = stablehlo.broadcast_in_dim %33, dims = [0, 1, 2] : (tensor<2x5x1xf32>) -> tensor<2x5x5xf32>
    %84 = stablehlo.divide %76, %83 : tensor<2x5x5xf32>
    %cst_16 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %85 = stablehlo.reduce(%82 init: %cst_16) applies stablehlo.add across dimensions = [2] : (tensor<2x5x1xf32>, tensor<f32>) -> tensor<2x5xf32>
    %86 = stablehlo.broadcast_in_dim %85, dims = [0, 1] : (tensor<2x5xf32>) -> tensor<2x5x5xf32>
    %87 = stablehlo.add %84, %86 : tensor<2x5x5xf32>
    %88 = stablehlo.multiply %87, %31 : tensor<2x5x5xf32>
    %89 = call @_where_1(%24#1, %88) : (tensor<2x5x5xi1>, tensor<2x5x5xf32>) -> tensor<2x5x5xf32>
    %cst_17 = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    %90 = stablehlo.broadcast_in_dim %cst_17, dims = [] : (tensor<f32>) -> tensor<2x5x5xf32>
    %91 = stablehlo.divide %89, %90 : tensor<2x5x5xf32>
    %92 = stablehlo.dot_general %91, %15, batching_dims = [0] x [0], contracting_dims = [1] x [1], precision = [DEFAULT, DEFAULT] : (tensor<2x5x5xf32>, tensor<2x5x4xf32>) -> tensor<2x5x4xf32>
    %93 = stablehlo.transpose %92, dims = [0, 2, 1] : (tensor<2x5x4xf32>) -> tensor<2x4x5xf32>
    %94 = stablehlo.dot_general %91, %20, batching_dims = [0] x [0], contracting_dims = [2] x [2], precision = [DEFAULT, DEFAULT] : (tensor<2x5x5xf32>, tensor<2x4x5xf32>) -> tensor<2x5x4xf32>
    %95 = stablehlo.transpose %93, dims = [0, 2, 1] : (tensor<2x4x5xf32>) -> tensor<2x5x4xf32>
    %96 = stablehlo.dot_general %75, %14, contracting_dims = [0, 1] x [0, 1], precision = [DEFAULT, DEFAULT] : (tensor<2x5x4xf32>, tensor<2x5x4xf32>) -> tensor<4x4xf32>
    %97 = stablehlo.transpose %96, dims = [1, 0] : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %98 = stablehlo.dot_general %75, %arg2, contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<2x5x4xf32>, tensor<4x4xf32>) -> tensor<2x5x4xf32>
    %99 = stablehlo.dot_general %95, %14, contracting_dims = [0, 1] x [0, 1], precision = [DEFAULT, DEFAULT] : (tensor<2x5x4xf32>, tensor<2x5x4xf32>) -> tensor<4x4xf32>
    %100 = stablehlo.transpose %99, dims = [1, 0] : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %101 = stablehlo.dot_general %95, %arg1, contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<2x5x4xf32>, tensor<4x4xf32>) -> tensor<2x5x4xf32>
    %102 = stablehlo.add %98, %101 : tensor<2x5x4xf32>
    %103 = stablehlo.dot_general %94, %14, contracting_dims = [0, 1] x [0, 1], precision = [DEFAULT, DEFAULT] : (tensor<2x5x4xf32>, tensor<2x5x4xf32>) -> tensor<4x4xf32>
    %104 = stablehlo.transpose %103, dims = [1, 0] : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %105 = stablehlo.dot_general %94, %arg0, contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<2x5x4xf32>, tensor<4x4xf32>) -> tensor<2x5x4xf32>
    %106 = stablehlo.add %102, %105 : tensor<2x5x4xf32>
    %107 = stablehlo.multiply %11, %106 : tensor<2x5x4xf32>
    %cst_18 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %108 = stablehlo.reduce(%107 init: %cst_18) applies stablehlo.add across dimensions = [0, 1] : (tensor<2x5x4xf32>, tensor<f32>) -> tensor<4xf32>
    %109 = stablehlo.reshape %108 : (tensor<4xf32>) -> tensor<1x1x4xf32>
    %cst_19 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %110 = stablehlo.reduce(%109 init: %cst_19) applies stablehlo.add across dimensions = [0, 1] : (tensor<1x1x4xf32>, tensor<f32>) -> tensor<4xf32>
    return %104, %100, %97, %72, %69, %55, %110 : tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x8xf32>, tensor<8x4xf32>, tensor<4xf32>
  }
  func.func private @_var(%arg0: tensor<2x5x4xf32>, %arg1: tensor<i32>) -> tensor<2x5x1xf32> {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.reduce(%arg0 init: %cst) applies stablehlo.add across dimensions = [2] : (tensor<2x5x4xf32>, tensor<f32>) -> tensor<2x5xf32>
    %1 = stablehlo.broadcast_in_dim %0, dims = [0, 1] : (tensor<2x5xf32>) -> tensor<2x5x1xf32>
    %cst_0 = stablehlo.constant dense<4.000000e+00> : tensor<f32>
    %2 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<2x5x1xf32>
    %3 = stablehlo.divide %1, %2 : tensor<2x5x1xf32>
    %4 = stablehlo.broadcast_in_dim %3, dims = [0, 1, 2] : (tensor<2x5x1xf32>) -> tensor<2x5x4xf32>
    %5 = stablehlo.subtract %arg0, %4 : tensor<2x5x4xf32>
    %6 = chlo.square %5 : tensor<2x5x4xf32> -> tensor<2x5x4xf32>
    %7 = stablehlo.convert %arg1 : (tensor<i32>) -> tensor<f32>
    %cst_1 = stablehlo.constant dense<4.000000e+00> : tensor<f32>
    %8 = stablehlo.subtract %cst_1, %7 : tensor<f32>
    %cst_2 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %9 = stablehlo.reduce(%6 init: %cst_2) applies stablehlo.add across dimensions = [2] : (tensor<2x5x4xf32>, tensor<f32>) -> tensor<2x5xf32>
    %10 = stablehlo.broadcast_in_dim %9, dims = [0, 1] : (tensor<2x5xf32>) -> tensor<2x5x1xf32>
    %11 = stablehlo.broadcast_in_dim %8, dims = [] : (tensor<f32>) -> tensor<2x5x1xf32>
    %12 = stablehlo.divide %10, %11 : tensor<2x5x1xf32>
    %cst_3 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %13 = stablehlo.compare GT, %8, %cst_3, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
    %cst_4 = stablehlo.constant dense<0x7FC00000> : tensor<f32>
    %14 = call @_where(%13, %12, %cst_4) : (tensor<i1>, tensor<2x5x1xf32>, tensor<f32>) -> tensor<2x5x1xf32>
    return %14 : tensor<2x5x1xf32>
  }
  func.func private @_where(%arg0: tensor<i1>, %arg1: tensor<2x5x1xf32>, %arg2: tensor<f32>) -> tensor<2x5x1xf32> {
    %0 = stablehlo.convert %arg2 : tensor<f32>
    %1 = stablehlo.broadcast_in_dim %0, dims = [] : (tensor<f32>) -> tensor<2x5x1xf32>
    %2 = stablehlo.select %arg0, %arg1, %1 : tensor<i1>, tensor<2x5x1xf32>
    return %2 : tensor<2x5x1xf32>
  }
  func.func private @tril(%arg0: tensor<5x5xi1>) -> tensor<5x5xi1> {
    %0 = stablehlo.iota dim = 0 : tensor<5x5xi32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %1 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i32>) -> tensor<5x5xi32>
    %2 = stablehlo.add %0, %1 : tensor<5x5xi32>
    %3 = stablehlo.iota dim = 1 : tensor<5x5xi32>
    %4 = stablehlo.compare GE, %2, %3, SIGNED : (tensor<5x5xi32>, tensor<5x5xi32>) -> tensor<5x5xi1>
    %c_0 = stablehlo.constant dense<false> : tensor<i1>
    %5 = stablehlo.broadcast_in_dim %c_0, dims = [] : (tensor<i1>) -> tensor<5x5xi1>
    %6 = stablehlo.select %4, %arg0, %5 : tensor<5x5xi1>, tensor<5x5xi1>
    return %6 : tensor<5x5xi1>
  }
  func.func private @_where_0(%arg0: tensor<5x5xi1>, %arg1: tensor<2x5x5xf32>, %arg2: tensor<f32>) -> (tensor<2x5x5xf32>, tensor<2x5x5xi1>) {
    %0 = stablehlo.convert %arg2 : tensor<f32>
    %1 = stablehlo.broadcast_in_dim %arg0, dims = [1, 2] : (tensor<5x5xi1>) -> tensor<2x5x5xi1>
    %2 = stablehlo.broadcast_in_dim %0, dims = [] : (tensor<f32>) -> tensor<2x5x5xf32>
    %3 = stablehlo.select %1, %arg1, %2 : tensor<2x5x5xi1>, tensor<2x5x5xf32>
    return %3, %1 : tensor<2x5x5xf32>, tensor<2x5x5xi1>
  }
  func.func private @_where_1(%arg0: tensor<2x5x5xi1>, %arg1: tensor<2x5x5xf32>) -> tensor<2x5x5xf32> {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<2x5x5xf32>
    %1 = stablehlo.select %arg0, %arg1, %0 : tensor<2x5x5xi1>, tensor<2x5x5xf32>
    return %1 : tensor<2x5x5xf32>
  }
}
