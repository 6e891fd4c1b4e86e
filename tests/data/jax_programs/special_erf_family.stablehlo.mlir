module @jit__lambda attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<3x7xf32>) -> (tensor<3x7xf32> {jax.result_info = "result[0]"}, tensor<3x7xf32> {jax.result_info = "result[1]"}, tensor<3x7xf32> {jax.result_info = "result[2]"}, tensor<3x7xf32> {jax.result_info = "result[3]"}) {
    %cst = stablehlo.constant dense<[-59.9633484, 98.0010757, -56.6762848, 13.9312611, -1.23916578]> : tensor<5xf32>
    %cst_0 = stablehlo.constant dense<[1.000000e+00, 1.95448864, 4.67627907, 86.3602447, -225.462692, 200.260208, -82.0372238, 15.9056225, -1.18331623]> : tensor<9xf32>
    %cst_1 = stablehlo.constant dense<[3.23774886, 6.91522884, 3.93881035, 1.33303463, 0.201485395, 0.0123716639, 3.01581546E-4, 2.65806966E-6, 6.23974561E-9]> : tensor<9xf32>
    %cst_2 = stablehlo.constant dense<[1.000000e+00, 6.02427053, 3.67983556, 1.37702096, 2.162370e-01, 1.342040e-02, 3.28014459E-4, 2.89247873E-6, 6.79019418E-9]> : tensor<9xf32>
    %cst_3 = stablehlo.constant dense<[4.05544901, 31.5251102, 57.1628189, 44.0805092, 14.6849566, 2.18663311, -0.140256077, -0.035042461, -8.57456762E-4]> : tensor<9xf32>
    %cst_4 = stablehlo.constant dense<[1.000000e+00, 15.7799883, 45.3907623, 41.3172035, 15.0425386, 2.5046494, -0.142182916, -0.0380806401, -9.33259492E-4]> : tensor<9xf32>
    %0 = chlo.erf %arg0 : tensor<3x7xf32> -> tensor<3x7xf32>
    %cst_5 = stablehlo.constant dense<4.000000e+00> : tensor<f32>
    %1 = stablehlo.broadcast_in_dim %cst_5, dims = [] : (tensor<f32>) -> tensor<3x7xf32>
    %2 = stablehlo.multiply %arg0, %1 : tensor<3x7xf32>
    %3 = chlo.erfc %2 : tensor<3x7xf32> -> tensor<3x7xf32>
    %4 = stablehlo.tanh %arg0 : tensor<3x7xf32>
    %5 = chlo.erf_inv %4 : tensor<3x7xf32> -> tensor<3x7xf32>
    %6 = stablehlo.abs %arg0 : tensor<3x7xf32>
    %c = stablehlo.constant dense<1> : tensor<i32>
    %7 = call @remainder(%6, %c) : (tensor<3x7xf32>, tensor<i32>) -> tensor<3x7xf32>
    %cst_6 = stablehlo.constant dense<9.800000e-01> : tensor<f32>
    %8 = stablehlo.broadcast_in_dim %cst_6, dims = [] : (tensor<f32>) -> tensor<3x7xf32>
    %9 = stablehlo.multiply %7, %8 : tensor<3x7xf32>
    %cst_7 = stablehlo.constant dense<0.00999999977> : tensor<f32>
    %10 = stablehlo.broadcast_in_dim %cst_7, dims = [] : (tensor<f32>) -> tensor<3x7xf32>
    %11 = stablehlo.add %9, %10 : tensor<3x7xf32>
    %cst_8 = stablehlo.constant dense<0.864664733> : tensor<f32>
    %12 = stablehlo.broadcast_in_dim %cst_8, dims = [] : (tensor<f32>) -> tensor<3x7xf32>
    %13 = stablehlo.compare GT, %11, %12, FLOAT : (tensor<3x7xf32>, tensor<3x7xf32>) -> tensor<3x7xi1>
    %cst_9 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %14 = stablehlo.broadcast_in_dim %cst_9, dims = [] : (tensor<f32>) -> tensor<3x7xf32>
    %15 = stablehlo.subtract %14, %11 : tensor<3x7xf32>
    %16 = call @_where(%13, %15, %11) : (tensor<3x7xi1>, tensor<3x7xf32>, tensor<3x7xf32>) -> tensor<3x7xf32>
    %cst_10 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %17 = stablehlo.broadcast_in_dim %cst_10, dims = [] : (tensor<f32>) -> tensor<3x7xf32>
    %18 = stablehlo.compare EQ, %16, %17, FLOAT : (tensor<3x7xf32>, tensor<3x7xf32>) -> tensor<3x7xi1>
    %cst_11 = stablehlo.constant dense<5.000000e-01> : tensor<f32>
    %19 = stablehlo.broadcast_in_dim %cst_11, dims = [] : (tensor<f32>) -> tensor<3x7xf32>
    %20 = call @_where(%18, %19, %16) : (tensor<3x7xi1>, tensor<3x7xf32>, tensor<3x7xf32>) -> tensor<3x7xf32>
    %cst_12 = stablehlo.constant dense<5.000000e-01> : tensor<f32>
    %21 = stablehlo.broadcast_in_dim %cst_12, dims = [] : (tensor<f32>) -> tensor<3x7xf32>
    %22 = stablehlo.subtract %20, %21 : tensor<3x7xf32>
    %23 = chlo.square %22 : tensor<3x7xf32> -> tensor<3x7xf32>
    %24 = stablehlo.multiply %22, %23 : tensor<3x7xf32>
    %25 = call @polyval(%cst, %23) : (tensor<5xf32>, tensor<3x7xf32>) -> tensor<3x7xf32>
    %26 = call @polyval_0(%cst_0, %23) : (tensor<9xf32>, tensor<3x7xf32>) -> tensor<3x7xf32>
    %27 = stablehlo.divide %25, %26 : tensor<3x7xf32>
    %28 = stablehlo.multiply %24, %27 : tensor<3x7xf32>
    %29 = stablehlo.add %22, %28 : tensor<3x7xf32>
    %cst_13 = stablehlo.constant dense<-2.50662827> : tensor<f32>
    %30 = stablehlo.broadcast_in_dim %cst_13, dims = [] : (tensor<f32>) -> tensor<3x7xf32>
    %31 = stablehlo.multiply %29, %30 : tensor<3x7xf32>
    %32 = stablehlo.log %20 : tensor<3x7xf32>
    %cst_14 = stablehlo.constant dense<-2.000000e+00> : tensor<f32>
    %33 = stablehlo.broadcast_in_dim %cst_14, dims = [] : (tensor<f32>) -> tensor<3x7xf32>
    %34 = stablehlo.multiply %33, %32 : tensor<3x7xf32>
    %35 = stablehlo.sqrt %34 : tensor<3x7xf32>
    %36 = stablehlo.log %35 : tensor<3x7xf32>
    %37 = stablehlo.divide %36, %35 : tensor<3x7xf32>
    %38 = stablehlo.subtract %35, %37 : tensor<3x7xf32>
    %cst_15 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %39 = stablehlo.broadcast_in_dim %cst_15, dims = [] : (tensor<f32>) -> tensor<3x7xf32>
    %40 = stablehlo.divide %39, %35 : tensor<3x7xf32>
    %41 = call @polyval_0(%cst_1, %40) : (tensor<9xf32>, tensor<3x7xf32>) -> tensor<3x7xf32>
    %cst_16 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %42 = stablehlo.broadcast_in_dim %cst_16, dims = [] : (tensor<f32>) -> tensor<3x7xf32>
    %43 = stablehlo.divide %42, %35 : tensor<3x7xf32>
    %44 = call @polyval_0(%cst_2, %43) : (tensor<9xf32>, tensor<3x7xf32>) -> tensor<3x7xf32>
    %45 = stablehlo.divide %41, %44 : tensor<3x7xf32>
    %46 = stablehlo.divide %45, %35 : tensor<3x7xf32>
    %cst_17 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %47 = stablehlo.broadcast_in_dim %cst_17, dims = [] : (tensor<f32>) -> tensor<3x7xf32>
    %48 = stablehlo.divide %47, %35 : tensor<3x7xf32>
    %49 = call @polyval_0(%cst_3, %48) : (tensor<9xf32>, tensor<3x7xf32>) -> tensor<3x7xf32>
    %cst_18 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %50 = stablehlo.broadcast_in_dim %cst_18, dims = [] : (tensor<f32>) -> tensor<3x7xf32>
    %51 = stablehlo.divide %50, %35 : tensor<3x7xf32>
    %52 = call @polyval_0(%cst_4, %51) : (tensor<9xf32>, tensor<3x7xf32>) -> tensor<3x7xf32>
    %53 = stablehlo.divide %49, %52 : tensor<3x7xf32>
    %54 = stablehlo.divide %53, %35 : tensor<3x7xf32>
    %55 = stablehlo.subtract %38, %46 : tensor<3x7xf32>
    %56 = stablehlo.subtract %38, %54 : tensor<3x7xf32>
    %cst_19 = stablehlo.constant dense<0.135335281> : tensor<f32>
    %57 = stablehlo.broadcast_in_dim %cst_19, dims = [] : (tensor<f32>) -> tensor<3x7xf32>
    %58 = stablehlo.compare GT, %20, %57, FLOAT : (tensor<3x7xf32>, tensor<3x7xf32>) -> tensor<3x7xi1>
    %cst_20 = stablehlo.constant dense<8.000000e+00> : tensor<f32>
    %59 = stablehlo.broadcast_in_dim %cst_20, dims = [] : (tensor<f32>) -> tensor<3x7xf32>
    %60 = stablehlo.compare GE, %35, %59, FLOAT : (tensor<3x7xf32>, tensor<3x7xf32>) -> tensor<3x7xi1>
    %61 = call @_where(%60, %55, %56) : (tensor<3x7xi1>, tensor<3x7xf32>, tensor<3x7xf32>) -> tensor<3x7xf32>
    %62 = call @_where(%58, %31, %61) : (tensor<3x7xi1>, tensor<3x7xf32>, tensor<3x7xf32>) -> tensor<3x7xf32>
    %cst_21 = stablehlo.constant dense<0.864664733> : tensor<f32>
    %63 = stablehlo.broadcast_in_dim %cst_21, dims = [] : (tensor<f32>) -> tensor<3x7xf32>
    %64 = stablehlo.compare GT, %11, %63, FLOAT : (tensor<3x7xf32>, tensor<3x7xf32>) -> tensor<3x7xi1>
    %65 = stablehlo.negate %62 : tensor<3x7xf32>
    %66 = call @_where(%64, %62, %65) : (tensor<3x7xi1>, tensor<3x7xf32>, tensor<3x7xf32>) -> tensor<3x7xf32>
    %cst_22 = stablehlo.constant dense<0x7F800000> : tensor<f32>
    %67 = stablehlo.broadcast_in_dim %cst_22, dims = [] : (tensor<f32>) -> tensor<3x7xf32>
    %cst_23 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %68 = stablehlo.broadcast_in_dim %cst_23, dims = [] : (tensor<f32>) -> tensor<3x7xf32>
    %69 = stablehlo.compare EQ, %11, %68, FLOAT : (tensor<3x7xf32>, tensor<3x7xf32>) -> tensor<3x7xi1>
    %70 = stablehlo.negate %67 : tensor<3x7xf32>
    %cst_24 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %71 = stablehlo.broadcast_in_dim %cst_24, dims = [] : (tensor<f32>) -> tensor<3x7xf32>
    %72 = stablehlo.compare EQ, %11, %71, FLOAT : (tensor<3x7xf32>, tensor<3x7xf32>) -> tensor<3x7xi1>
    %73 = call @_where(%72, %67, %66) : (tensor<3x7xi1>, tensor<3x7xf32>, tensor<3x7xf32>) -> tensor<3x7xf32>
    %74 = call @_where(%69, %70, %73) : (tensor<3x7xi1>, tensor<3x7xf32>, tensor<3x7xf32>) -> tensor<3x7xf32>
    return %0, %3, %5, %74 : tensor<3x7xf32>, tensor<3x7xf32>, tensor<3x7xf32>, tensor<3x7xf32>
  }
  func.func private @remainder(%arg0: tensor<3x7xf32>, %arg1: tensor<i32>) -> tensor<3x7xf32> {
    %0 = stablehlo.convert %arg1 : (tensor<i32>) -> tensor<f32>
    %1 = stablehlo.broadcast_in_dim %0, dims = [] : (tensor<f32>) -> tensor<3x7xf32>
    %2 = stablehlo.remainder %arg0, %1 : tensor<3x7xf32>
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %3 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<3x7xf32>
    %4 = stablehlo.compare NE, %2, %3, FLOAT : (tensor<3x7xf32>, tensor<3x7xf32>) -> tensor<3x7xi1>
    %cst_0 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %5 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<3x7xf32>
    %6 = stablehlo.compare LT, %2, %5, FLOAT : (tensor<3x7xf32>, tensor<3x7xf32>) -> tensor<3x7xi1>
    %cst_1 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %7 = stablehlo.compare LT, %0, %cst_1, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
    %8 = stablehlo.broadcast_in_dim %7, dims = [] : (tensor<i1>) -> tensor<3x7xi1>
    %9 = stablehlo.compare NE, %6, %8, UNSIGNED : (tensor<3x7xi1>, tensor<3x7xi1>) -> tensor<3x7xi1>
    %10 = stablehlo.and %9, %4 : tensor<3x7xi1>
    %11 = stablehlo.broadcast_in_dim %0, dims = [] : (tensor<f32>) -> tensor<3x7xf32>
    %12 = stablehlo.add %2, %11 : tensor<3x7xf32>
    %13 = stablehlo.select %10, %12, %2 : tensor<3x7xi1>, tensor<3x7xf32>
    return %13 : tensor<3x7xf32>
  }
  func.func private @_where(%arg0: tensor<3x7xi1>, %arg1: tensor<3x7xf32>, %arg2: tensor<3x7xf32>) -> tensor<3x7xf32> {
    %0 = stablehlo.select %arg0, %arg1, %arg2 : tensor<3x7xi1>, tensor<3x7xf32>
    return %0 : tensor<3x7xf32>
  }
  func.func private @polyval(%arg0: tensor<5xf32>, %arg1: tensor<3x7xf32>) -> tensor<3x7xf32> {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<3x7xf32>
    %1 = stablehlo.slice %arg0 [0:0] : (tensor<5xf32>) -> tensor<0xf32>
    %2 = stablehlo.slice %arg0 [0:5] : (tensor<5xf32>) -> tensor<5xf32>
    %3 = stablehlo.slice %2 [0:1] : (tensor<5xf32>) -> tensor<1xf32>
    %4 = stablehlo.reshape %3 : (tensor<1xf32>) -> tensor<f32>
    %5 = call @closed_call(%arg1, %0, %4) : (tensor<3x7xf32>, tensor<3x7xf32>, tensor<f32>) -> tensor<3x7xf32>
    %6 = stablehlo.slice %2 [1:2] : (tensor<5xf32>) -> tensor<1xf32>
    %7 = stablehlo.reshape %6 : (tensor<1xf32>) -> tensor<f32>
    %8 = call @closed_call(%arg1, %5, %7) : (tensor<3x7xf32>, tensor<3x7xf32>, tensor<f32>) -> tensor<3x7xf32>
    %9 = stablehlo.slice %2 [2:3] : (tensor<5xf32>) -> tensor<1xf32>
    %10 = stablehlo.reshape %9 : (tensor<1xf32>) -> tensor<f32>
    %11 = call @closed_call(%arg1, %8, %10) : (tensor<3x7xf32>, tensor<3x7xf32>, tensor<f32>) -> tensor<3x7xf32>
    %12 = stablehlo.slice %2 [3:4] : (tensor<5xf32>) -> tensor<1xf32>
    %13 = stablehlo.reshape %12 : (tensor<1xf32>) -> tensor<f32>
    %14 = call @closed_call(%arg1, %11, %13) : (tensor<3x7xf32>, tensor<3x7xf32>, tensor<f32>) -> tensor<3x7xf32>
    %15 = stablehlo.slice %2 [4:5] : (tensor<5xf32>) -> tensor<1xf32>
    %16 = stablehlo.reshape %15 : (tensor<1xf32>) -> tensor<f32>
    %17 = call @closed_call(%arg1, %14, %16) : (tensor<3x7xf32>, tensor<3x7xf32>, tensor<f32>) -> tensor<3x7xf32>
    return %17 : tensor<3x7xf32>
  }
  func.func private @closed_call(%arg0: tensor<3x7xf32>, %arg1: tensor<3x7xf32>, %arg2: tensor<f32>) -> tensor<3x7xf32> {
    %0 = stablehlo.multiply %arg1, %arg0 : tensor<3x7xf32>
    %1 = stablehlo.broadcast_in_dim %arg2, dims = [] : (tensor<f32>) -> tensor<3x7xf32>
    %2 = stablehlo.add %0, %1 : tensor<3x7xf32>
    return %2 : tensor<3x7xf32>
  }
  func.func private @polyval_0(%arg0: tensor<9xf32>, %arg1: tensor<3x7xf32>) -> tensor<3x7xf32> {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<3x7xf32>
    %1 = stablehlo.slice %arg0 [0:0] : (tensor<9xf32>) -> tensor<0xf32>
    %2 = stablehlo.slice %arg0 [0:9] : (tensor<9xf32>) -> tensor<9xf32>
    %3 = stablehlo.slice %2 [0:1] : (tensor<9xf32>) -> tensor<1xf32>
    %4 = stablehlo.reshape %3 : (tensor<1xf32>) -> tensor<f32>
    %5 = call @closed_call_1(%arg1, %0, %4) : (tensor<3x7xf32>, tensor<3x7xf32>, tensor<f32>) -> tensor<3x7xf32>
    %6 = stablehlo.slice %2 [1:2] : (tensor<9xf32>) -> tensor<1xf32>
    %7 = stablehlo.reshape %6 : (tensor<1xf32>) -> tensor<f32>
    %8 = call @closed_call_1(%arg1, %5, %7) : (tensor<3x7xf32>, tensor<3x7xf32>, tensor<f32>) -> tensor<3x7xf32>
    %9 = stablehlo.slice %2 [2:3] : (tensor<9xf32>) -> tensor<1xf32>
    %10 = stablehlo.reshape %9 : (tensor<1xf32>) -> tensor<f32>
    %11 = call @closed_call_1(%arg1, %8, %10) : (tensor<3x7xf32>, tensor<3x7xf32>, tensor<f32>) -> tensor<3x7xf32>
    %12 = stablehlo.slice %2 [3:4] : (tensor<9xf32>) -> tensor<1xf32>
    %13 = stablehlo.reshape %12 : (tensor<1xf32>) -> tensor<f32>
    %14 = call @closed_call_1(%arg1, %11, %13) : (tensor<3x7xf32>, tensor<3x7xf32>, tensor<f32>) -> tensor<3x7xf32>
    %15 = stablehlo.slice %2 [4:5] : (tensor<9xf32>) -> tensor<1xf32>
    %16 = stablehlo.reshape %15 : (tensor<1xf32>) -> tensor<f32>
    %17 = call @closed_call_1(%arg1, %14, %16) : (tensor<3x7xf32>, tensor<3x7xf32>, tensor<f32>) -> tensor<3x7xf32>
    %18 = stablehlo.slice %2 [5:6] : (tensor<9xf32>) -> tensor<1xf32>
    %19 = stablehlo.reshape %18 : (tensor<1xf32>) -> tensor<f32>
    %20 = call @closed_call_1(%arg1, %17, %19) : (tensor<3x7xf32>, tensor<3x7xf32>, tensor<f32>) -> tensor<3x7xf32>
    %21 = stablehlo.slice %2 [6:7] : (tensor<9xf32>) -> tensor<1xf32>
    %22 = stablehlo.reshape %21 : (tensor<1xf32>) -> tensor<f32>
    %23 = call @closed_call_1(%arg1, %20, %22) : (tensor<3x7xf32>, tensor<3x7xf32>, tensor<f32>) -> tensor<3x7xf32>
    %24 = stablehlo.slice %2 [7:8] : (tensor<9xf32>) -> tensor<1xf32>
    %25 = stablehlo.reshape %24 : (tensor<1xf32>) -> tensor<f32>
    %26 = call @closed_call_1(%arg1, %23, %25) : (tensor<3x7xf32>, tensor<3x7xf32>, tensor<f32>) -> tensor<3x7xf32>
    %27 = stablehlo.slice %2 [8:9] : (tensor<9xf32>) -> tensor<1xf32>
    %28 = stablehlo.reshape %27 : (tensor<1xf32>) -> tensor<f32>
    %29 = call @closed_call_1(%arg1, %26, %28) : (tensor<3x7xf32>, tensor<3x7xf32>, tensor<f32>) -> tensor<3x7xf32>
    return %29 : tensor<3x7xf32>
  }
  func.func private @closed_call_1(%arg0: tensor<3x7xf32>, %arg1: tensor<3x7xf32>, %arg2: tensor<f32>) -> tensor<3x7xf32> {
    %0 = stablehlo.multiply %arg1, %arg0 : tensor<3x7xf32>
    %1 = stablehlo.broadcast_in_dim %arg2, dims = [] : (tensor<f32>) -> tensor<3x7xf32>
    %2 = stablehlo.add %0, %1 : tensor<3x7xf32>
    return %2 : tensor<3x7xf32>
  }
}
