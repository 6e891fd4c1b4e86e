module @jit__lambda attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<5x6xf32>) -> (tensor<5x6xf32> {jax.result_info = "result[0]"}, tensor<5x6xf32> {jax.result_info = "result[1]"}, tensor<5x6xf32> {jax.result_info = "result[2]"}, tensor<5x6xf32> {jax.result_info = "result[3]"}, tensor<5x6xf32> {jax.result_info = "result[4]"}, tensor<5x6xf32> {jax.result_info = "result[5]"}) {
    %0 = stablehlo.tanh %arg0 : tensor<5x6xf32>
    %1 = chlo.erf_inv %0 : tensor<5x6xf32> -> tensor<5x6xf32>
    %2 = stablehlo.abs %arg0 : tensor<5x6xf32>
    %cst = stablehlo.constant dense<1.000000e-01> : tensor<f32>
    %3 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<5x6xf32>
    %4 = stablehlo.add %2, %3 : tensor<5x6xf32>
    %5 = chlo.lgamma %4 : tensor<5x6xf32> -> tensor<5x6xf32>
    %6 = stablehlo.abs %arg0 : tensor<5x6xf32>
    %cst_0 = stablehlo.constant dense<1.000000e-01> : tensor<f32>
    %7 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<5x6xf32>
    %8 = stablehlo.add %6, %7 : tensor<5x6xf32>
    %9 = chlo.digamma %8 : tensor<5x6xf32> -> tensor<5x6xf32>
    %cst_1 = stablehlo.constant dense<3.000000e+00> : tensor<f32>
    %10 = stablehlo.broadcast_in_dim %cst_1, dims = [] : (tensor<f32>) -> tensor<5x6xf32>
    %11 = stablehlo.multiply %arg0, %10 : tensor<5x6xf32>
    %12 = chlo.erfc %11 : tensor<5x6xf32> -> tensor<5x6xf32>
    %13 = chlo.bessel_i1e %arg0 : tensor<5x6xf32> -> tensor<5x6xf32>
    %14 = stablehlo.abs %arg0 : tensor<5x6xf32>
    %cst_2 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %15 = stablehlo.broadcast_in_dim %cst_2, dims = [] : (tensor<f32>) -> tensor<5x6xf32>
    %16 = stablehlo.add %14, %15 : tensor<5x6xf32>
    %17 = stablehlo.abs %arg0 : tensor<5x6xf32>
    %18 = stablehlo.compare NE, %16, %16, FLOAT : (tensor<5x6xf32>, tensor<5x6xf32>) -> tensor<5x6xi1>
    %19 = stablehlo.compare NE, %17, %17, FLOAT : (tensor<5x6xf32>, tensor<5x6xf32>) -> tensor<5x6xi1>
    %20 = stablehlo.or %18, %19 : tensor<5x6xi1>
    %cst_3 = stablehlo.constant dense<0x7F800000> : tensor<f32>
    %21 = stablehlo.broadcast_in_dim %cst_3, dims = [] : (tensor<f32>) -> tensor<5x6xf32>
    %22 = stablehlo.compare EQ, %17, %21, FLOAT : (tensor<5x6xf32>, tensor<5x6xf32>) -> tensor<5x6xi1>
    %cst_4 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %23 = stablehlo.broadcast_in_dim %cst_4, dims = [] : (tensor<f32>) -> tensor<5x6xf32>
    %24 = stablehlo.compare EQ, %16, %23, FLOAT : (tensor<5x6xf32>, tensor<5x6xf32>) -> tensor<5x6xi1>
    %cst_5 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %25 = stablehlo.broadcast_in_dim %cst_5, dims = [] : (tensor<f32>) -> tensor<5x6xf32>
    %26 = stablehlo.compare EQ, %17, %25, FLOAT : (tensor<5x6xf32>, tensor<5x6xf32>) -> tensor<5x6xi1>
    %cst_6 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %27 = stablehlo.broadcast_in_dim %cst_6, dims = [] : (tensor<f32>) -> tensor<5x6xf32>
    %28 = stablehlo.compare LT, %17, %27, FLOAT : (tensor<5x6xf32>, tensor<5x6xf32>) -> tensor<5x6xi1>
    %cst_7 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %29 = stablehlo.broadcast_in_dim %cst_7, dims = [] : (tensor<f32>) -> tensor<5x6xf32>
    %30 = stablehlo.compare LT, %16, %29, FLOAT : (tensor<5x6xf32>, tensor<5x6xf32>) -> tensor<5x6xi1>
    %31 = stablehlo.and %24, %26 : tensor<5x6xi1>
    %32 = stablehlo.or %28, %30 : tensor<5x6xi1>
    %33 = stablehlo.or %32, %31 : tensor<5x6xi1>
    %34 = stablehlo.or %33, %20 : tensor<5x6xi1>
    %cst_8 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %35 = stablehlo.broadcast_in_dim %cst_8, dims = [] : (tensor<f32>) -> tensor<5x6xf32>
    %36 = stablehlo.compare GE, %17, %35, FLOAT : (tensor<5x6xf32>, tensor<5x6xf32>) -> tensor<5x6xi1>
    %37 = stablehlo.compare GT, %17, %16, FLOAT : (tensor<5x6xf32>, tensor<5x6xf32>) -> tensor<5x6xi1>
    %38 = stablehlo.and %36, %37 : tensor<5x6xi1>
    %39 = stablehlo.log %17 : tensor<5x6xf32>
    %40 = stablehlo.multiply %16, %39 : tensor<5x6xf32>
    %41 = stablehlo.subtract %40, %17 : tensor<5x6xf32>
    %42 = chlo.lgamma %16 : tensor<5x6xf32> -> tensor<5x6xf32>
    %43 = stablehlo.subtract %41, %42 : tensor<5x6xf32>
    %cst_9 = stablehlo.constant dense<3.40282347E+38> : tensor<f32>
    %44 = stablehlo.log %cst_9 : tensor<f32>
    %45 = stablehlo.negate %44 : tensor<f32>
    %46 = stablehlo.broadcast_in_dim %45, dims = [] : (tensor<f32>) -> tensor<5x6xf32>
    %47 = stablehlo.compare LT, %43, %46, FLOAT : (tensor<5x6xf32>, tensor<5x6xf32>) -> tensor<5x6xi1>
    %48 = stablehlo.exponential %43 : tensor<5x6xf32>
    %49 = stablehlo.or %26, %34 : tensor<5x6xi1>
    %50 = stablehlo.or %49, %47 : tensor<5x6xi1>
    %51 = stablehlo.or %50, %22 : tensor<5x6xi1>
    %52 = stablehlo.not %51 : tensor<5x6xi1>
    %53 = stablehlo.and %52, %38 : tensor<5x6xi1>
    %cst_10 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %54 = stablehlo.broadcast_in_dim %cst_10, dims = [] : (tensor<f32>) -> tensor<5x6xf32>
    %55 = stablehlo.subtract %54, %16 : tensor<5x6xf32>
    %56 = stablehlo.add %17, %55 : tensor<5x6xf32>
    %cst_11 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %57 = stablehlo.broadcast_in_dim %cst_11, dims = [] : (tensor<f32>) -> tensor<5x6xf32>
    %58 = stablehlo.add %56, %57 : tensor<5x6xf32>
    %cst_12 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %59 = stablehlo.broadcast_in_dim %cst_12, dims = [] : (tensor<f32>) -> tensor<5x6xf32>
    %cst_13 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %60 = stablehlo.broadcast_in_dim %cst_13, dims = [] : (tensor<f32>) -> tensor<5x6xf32>
    %61 = stablehlo.add %17, %60 : tensor<5x6xf32>
    %62 = stablehlo.multiply %58, %17 : tensor<5x6xf32>
    %63 = stablehlo.divide %61, %62 : tensor<5x6xf32>
    %cst_14 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %64 = stablehlo.broadcast_in_dim %cst_14, dims = [] : (tensor<f32>) -> tensor<5x6xf32>
    %cst_15 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %65 = stablehlo.broadcast_in_dim %cst_15, dims = [] : (tensor<f32>) -> tensor<5x6xf32>
    %cst_16 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %66 = stablehlo.broadcast_in_dim %cst_16, dims = [] : (tensor<f32>) -> tensor<5x6xf32>
    %cst_17 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %67 = stablehlo.broadcast_in_dim %cst_17, dims = [] : (tensor<f32>) -> tensor<5x6xf32>
    %68 = stablehlo.negate %17 : tensor<5x6xf32>
    %69 = stablehlo.multiply %63, %68 : tensor<5x6xf32>
    %70 = stablehlo.subtract %67, %69 : tensor<5x6xf32>
    %71 = stablehlo.divide %70, %62 : tensor<5x6xf32>
    %cst_18 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %72:15 = stablehlo.while(%iterArg = %53, %iterArg_27 = %63, %iterArg_28 = %64, %iterArg_29 = %55, %iterArg_30 = %58, %iterArg_31 = %cst_18, %iterArg_32 = %61, %iterArg_33 = %62, %iterArg_34 = %59, %iterArg_35 = %17, %iterArg_36 = %65, %iterArg_37 = %66, %iterArg_38 = %67, %iterArg_39 = %68, %iterArg_40 = %71) : tensor<5x6xi1>, tensor<5x6xf32>, tensor<5x6xf32>, tensor<5x6xf32>, tensor<5x6xf32>, tensor<f32>, tensor<5x6xf32>, tensor<5x6xf32>, tensor<5x6xf32>, tensor<5x6xf32>, tensor<5x6xf32>, tensor<5x6xf32>, tensor<5x6xf32>, tensor<5x6xf32>, tensor<5x6xf32>
    cond {
      %cst_41 = stablehlo.constant dense<2.000000e+03> : tensor<f32>
      %92 = stablehlo.compare LT, %iterArg_31, %cst_41, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %c = stablehlo.constant dense<false> : tensor<i1>
      %93 = stablehlo.reduce(%iterArg init: %c) applies stablehlo.or across dimensions = [0, 1] : (tensor<5x6xi1>, tensor<i1>) -> tensor<i1>
      %94 = stablehlo.and %92, %93 : tensor<i1>
      stablehlo.return %94 : tensor<i1>
    } do {
      %cst_41 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
      %92 = stablehlo.add %iterArg_31, %cst_41 : tensor<f32>
      %cst_42 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
      %93 = stablehlo.broadcast_in_dim %cst_42, dims = [] : (tensor<f32>) -> tensor<5x6xf32>
      %94 = stablehlo.add %iterArg_29, %93 : tensor<5x6xf32>
      %cst_43 = stablehlo.constant dense<2.000000e+00> : tensor<f32>
      %95 = stablehlo.broadcast_in_dim %cst_43, dims = [] : (tensor<f32>) -> tensor<5x6xf32>
      %96 = stablehlo.add %iterArg_30, %95 : tensor<5x6xf32>
      %97 = stablehlo.broadcast_in_dim %92, dims = [] : (tensor<f32>) -> tensor<5x6xf32>
      %98 = stablehlo.multiply %94, %97 : tensor<5x6xf32>
      %99 = stablehlo.multiply %iterArg_32, %96 : tensor<5x6xf32>
      %100 = stablehlo.multiply %iterArg_34, %98 : tensor<5x6xf32>
      %101 = stablehlo.subtract %99, %100 : tensor<5x6xf32>
      %102 = stablehlo.multiply %iterArg_33, %96 : tensor<5x6xf32>
      %103 = stablehlo.multiply %iterArg_35, %98 : tensor<5x6xf32>
      %104 = stablehlo.subtract %102, %103 : tensor<5x6xf32>
      %cst_44 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
      %105 = stablehlo.broadcast_in_dim %cst_44, dims = [] : (tensor<f32>) -> tensor<5x6xf32>
      %106 = stablehlo.compare NE, %104, %105, FLOAT : (tensor<5x6xf32>, tensor<5x6xf32>) -> tensor<5x6xi1>
      %107 = stablehlo.divide %101, %104 : tensor<5x6xf32>
      %108 = stablehlo.subtract %iterArg_27, %107 : tensor<5x6xf32>
      %109 = stablehlo.divide %108, %107 : tensor<5x6xf32>
      %110 = stablehlo.abs %109 : tensor<5x6xf32>
      %cst_45 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
      %111 = stablehlo.broadcast_in_dim %cst_45, dims = [] : (tensor<f32>) -> tensor<5x6xf32>
      %112 = stablehlo.select %106, %110, %111 : tensor<5x6xi1>, tensor<5x6xf32>
      %113 = stablehlo.select %106, %107, %iterArg_27 : tensor<5x6xi1>, tensor<5x6xf32>
      %114 = stablehlo.multiply %iterArg_38, %96 : tensor<5x6xf32>
      %115 = stablehlo.subtract %114, %iterArg_32 : tensor<5x6xf32>
      %116 = stablehlo.multiply %iterArg_36, %98 : tensor<5x6xf32>
      %117 = stablehlo.subtract %115, %116 : tensor<5x6xf32>
      %118 = stablehlo.broadcast_in_dim %92, dims = [] : (tensor<f32>) -> tensor<5x6xf32>
      %119 = stablehlo.multiply %iterArg_34, %118 : tensor<5x6xf32>
      %120 = stablehlo.add %117, %119 : tensor<5x6xf32>
      %121 = stablehlo.multiply %iterArg_39, %96 : tensor<5x6xf32>
      %122 = stablehlo.subtract %121, %iterArg_33 : tensor<5x6xf32>
      %123 = stablehlo.multiply %iterArg_37, %98 : tensor<5x6xf32>
      %124 = stablehlo.subtract %122, %123 : tensor<5x6xf32>
      %125 = stablehlo.broadcast_in_dim %92, dims = [] : (tensor<f32>) -> tensor<5x6xf32>
      %126 = stablehlo.multiply %iterArg_35, %125 : tensor<5x6xf32>
      %127 = stablehlo.add %124, %126 : tensor<5x6xf32>
      %128 = stablehlo.multiply %113, %127 : tensor<5x6xf32>
      %129 = stablehlo.subtract %120, %128 : tensor<5x6xf32>
      %130 = stablehlo.divide %129, %104 : tensor<5x6xf32>
      %131 = stablehlo.select %106, %130, %iterArg_40 : tensor<5x6xi1>, tensor<5x6xf32>
      %132 = stablehlo.subtract %131, %iterArg_40 : tensor<5x6xf32>
      %133 = stablehlo.abs %132 : tensor<5x6xf32>
      %cst_46 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
      %134 = stablehlo.broadcast_in_dim %cst_46, dims = [] : (tensor<f32>) -> tensor<5x6xf32>
      %135 = stablehlo.select %106, %133, %134 : tensor<5x6xi1>, tensor<5x6xf32>
      %136 = stablehlo.abs %101 : tensor<5x6xf32>
      %cst_47 = stablehlo.constant dense<1.1920929E-7> : tensor<f32>
      %cst_48 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
      %137 = stablehlo.broadcast_in_dim %cst_48, dims = [] : (tensor<f32>) -> tensor<f32>
      %138 = stablehlo.divide %137, %cst_47 : tensor<f32>
      %139 = stablehlo.broadcast_in_dim %138, dims = [] : (tensor<f32>) -> tensor<5x6xf32>
      %140 = stablehlo.compare GT, %136, %139, FLOAT : (tensor<5x6xf32>, tensor<5x6xf32>) -> tensor<5x6xi1>
      %cst_49 = stablehlo.constant dense<1.1920929E-7> : tensor<f32>
      %141 = stablehlo.broadcast_in_dim %cst_49, dims = [] : (tensor<f32>) -> tensor<5x6xf32>
      %142 = stablehlo.multiply %iterArg_32, %141 : tensor<5x6xf32>
      %143 = stablehlo.select %140, %142, %iterArg_32 : tensor<5x6xi1>, tensor<5x6xf32>
      %cst_50 = stablehlo.constant dense<1.1920929E-7> : tensor<f32>
      %144 = stablehlo.broadcast_in_dim %cst_50, dims = [] : (tensor<f32>) -> tensor<5x6xf32>
      %145 = stablehlo.multiply %101, %144 : tensor<5x6xf32>
      %146 = stablehlo.select %140, %145, %101 : tensor<5x6xi1>, tensor<5x6xf32>
      %cst_51 = stablehlo.constant dense<1.1920929E-7> : tensor<f32>
      %147 = stablehlo.broadcast_in_dim %cst_51, dims = [] : (tensor<f32>) -> tensor<5x6xf32>
      %148 = stablehlo.multiply %iterArg_33, %147 : tensor<5x6xf32>
      %149 = stablehlo.select %140, %148, %iterArg_33 : tensor<5x6xi1>, tensor<5x6xf32>
      %cst_52 = stablehlo.constant dense<1.1920929E-7> : tensor<f32>
      %150 = stablehlo.broadcast_in_dim %cst_52, dims = [] : (tensor<f32>) -> tensor<5x6xf32>
      %151 = stablehlo.multiply %104, %150 : tensor<5x6xf32>
      %152 = stablehlo.select %140, %151, %104 : tensor<5x6xi1>, tensor<5x6xf32>
      %cst_53 = stablehlo.constant dense<1.1920929E-7> : tensor<f32>
      %153 = stablehlo.broadcast_in_dim %cst_53, dims = [] : (tensor<f32>) -> tensor<5x6xf32>
      %154 = stablehlo.multiply %iterArg_38, %153 : tensor<5x6xf32>
      %155 = stablehlo.select %140, %154, %iterArg_38 : tensor<5x6xi1>, tensor<5x6xf32>
      %cst_54 = stablehlo.constant dense<1.1920929E-7> : tensor<f32>
      %156 = stablehlo.broadcast_in_dim %cst_54, dims = [] : (tensor<f32>) -> tensor<5x6xf32>
      %157 = stablehlo.multiply %iterArg_39, %156 : tensor<5x6xf32>
      %158 = stablehlo.select %140, %157, %iterArg_39 : tensor<5x6xi1>, tensor<5x6xf32>
      %cst_55 = stablehlo.constant dense<1.1920929E-7> : tensor<f32>
      %159 = stablehlo.broadcast_in_dim %cst_55, dims = [] : (tensor<f32>) -> tensor<5x6xf32>
      %160 = stablehlo.multiply %120, %159 : tensor<5x6xf32>
      %161 = stablehlo.select %140, %160, %120 : tensor<5x6xi1>, tensor<5x6xf32>
      %cst_56 = stablehlo.constant dense<1.1920929E-7> : tensor<f32>
      %162 = stablehlo.broadcast_in_dim %cst_56, dims = [] : (tensor<f32>) -> tensor<5x6xf32>
      %163 = stablehlo.multiply %127, %162 : tensor<5x6xf32>
      %164 = stablehlo.select %140, %163, %127 : tensor<5x6xi1>, tensor<5x6xf32>
      %cst_57 = stablehlo.constant dense<1.1920929E-7> : tensor<f32>
      %165 = stablehlo.broadcast_in_dim %cst_57, dims = [] : (tensor<f32>) -> tensor<5x6xf32>
      %166 = stablehlo.compare GT, %112, %165, FLOAT : (tensor<5x6xf32>, tensor<5x6xf32>) -> tensor<5x6xi1>
      %167 = stablehlo.and %iterArg, %166 : tensor<5x6xi1>
      %168 = stablehlo.select %iterArg, %113, %iterArg_27 : tensor<5x6xi1>, tensor<5x6xf32>
      %169 = stablehlo.select %iterArg, %112, %iterArg_28 : tensor<5x6xi1>, tensor<5x6xf32>
      %170 = stablehlo.select %iterArg, %94, %iterArg_29 : tensor<5x6xi1>, tensor<5x6xf32>
      %171 = stablehlo.select %iterArg, %96, %iterArg_30 : tensor<5x6xi1>, tensor<5x6xf32>
      %172 = stablehlo.select %iterArg, %146, %iterArg_32 : tensor<5x6xi1>, tensor<5x6xf32>
      %173 = stablehlo.select %iterArg, %152, %iterArg_33 : tensor<5x6xi1>, tensor<5x6xf32>
      %174 = stablehlo.select %iterArg, %143, %iterArg_34 : tensor<5x6xi1>, tensor<5x6xf32>
      %175 = stablehlo.select %iterArg, %149, %iterArg_35 : tensor<5x6xi1>, tensor<5x6xf32>
      %176 = stablehlo.select %iterArg, %155, %iterArg_36 : tensor<5x6xi1>, tensor<5x6xf32>
      %177 = stablehlo.select %iterArg, %158, %iterArg_37 : tensor<5x6xi1>, tensor<5x6xf32>
      %178 = stablehlo.select %iterArg, %161, %iterArg_38 : tensor<5x6xi1>, tensor<5x6xf32>
      %179 = stablehlo.select %iterArg, %164, %iterArg_39 : tensor<5x6xi1>, tensor<5x6xf32>
      %180 = stablehlo.select %iterArg, %131, %iterArg_40 : tensor<5x6xi1>, tensor<5x6xf32>
      stablehlo.return %167, %168, %169, %170, %171, %92, %172, %173, %174, %175, %176, %177, %178, %179, %180 : tensor<5x6xi1>, tensor<5x6xf32>, tensor<5x6xf32>, tensor<5x6xf32>, tensor<5x6xf32>, tensor<f32>, tensor<5x6xf32>, tensor<5x6xf32>, tensor<5x6xf32>, tensor<5x6xf32>, tensor<5x6xf32>, tensor<5x6xf32>, tensor<5x6xf32>, tensor<5x6xf32>, tensor<5x6xf32>
    }
    %73 = stablehlo.multiply %72#1, %48 : tensor<5x6xf32>
    %cst_19 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %74 = stablehlo.broadcast_in_dim %cst_19, dims = [] : (tensor<f32>) -> tensor<5x6xf32>
    %75 = stablehlo.subtract %74, %73 : tensor<5x6xf32>
    %76 = stablehlo.not %38 : tensor<5x6xi1>
    %77 = stablehlo.and %52, %76 : tensor<5x6xi1>
    %cst_20 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %78 = stablehlo.broadcast_in_dim %cst_20, dims = [] : (tensor<f32>) -> tensor<5x6xf32>
    %cst_21 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %79 = stablehlo.broadcast_in_dim %cst_21, dims = [] : (tensor<f32>) -> tensor<5x6xf32>
    %cst_22 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %80 = stablehlo.broadcast_in_dim %cst_22, dims = [] : (tensor<f32>) -> tensor<5x6xf32>
    %cst_23 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %81 = stablehlo.broadcast_in_dim %cst_23, dims = [] : (tensor<f32>) -> tensor<5x6xf32>
    %82:7 = stablehlo.while(%iterArg = %77, %iterArg_27 = %16, %iterArg_28 = %78, %iterArg_29 = %79, %iterArg_30 = %17, %iterArg_31 = %80, %iterArg_32 = %81) : tensor<5x6xi1>, tensor<5x6xf32>, tensor<5x6xf32>, tensor<5x6xf32>, tensor<5x6xf32>, tensor<5x6xf32>, tensor<5x6xf32>
    cond {
      %c = stablehlo.constant dense<false> : tensor<i1>
      %92 = stablehlo.reduce(%iterArg init: %c) applies stablehlo.or across dimensions = [0, 1] : (tensor<5x6xi1>, tensor<i1>) -> tensor<i1>
      stablehlo.return %92 : tensor<i1>
    } do {
      %cst_33 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
      %92 = stablehlo.broadcast_in_dim %cst_33, dims = [] : (tensor<f32>) -> tensor<5x6xf32>
      %93 = stablehlo.add %iterArg_27, %92 : tensor<5x6xf32>
      %94 = stablehlo.divide %iterArg_30, %93 : tensor<5x6xf32>
      %95 = stablehlo.multiply %iterArg_31, %94 : tensor<5x6xf32>
      %96 = stablehlo.multiply %iterArg_28, %iterArg_30 : tensor<5x6xf32>
      %97 = stablehlo.multiply %93, %93 : tensor<5x6xf32>
      %98 = stablehlo.divide %96, %97 : tensor<5x6xf32>
      %99 = stablehlo.subtract %95, %98 : tensor<5x6xf32>
      %100 = stablehlo.add %iterArg_32, %99 : tensor<5x6xf32>
      %101 = stablehlo.divide %iterArg_30, %93 : tensor<5x6xf32>
      %102 = stablehlo.multiply %iterArg_28, %101 : tensor<5x6xf32>
      %103 = stablehlo.add %iterArg_29, %102 : tensor<5x6xf32>
      %104 = stablehlo.divide %102, %103 : tensor<5x6xf32>
      %cst_34 = stablehlo.constant dense<1.1920929E-7> : tensor<f32>
      %105 = stablehlo.broadcast_in_dim %cst_34, dims = [] : (tensor<f32>) -> tensor<5x6xf32>
      %106 = stablehlo.compare GT, %104, %105, FLOAT : (tensor<5x6xf32>, tensor<5x6xf32>) -> tensor<5x6xi1>
      %107 = stablehlo.and %iterArg, %106 : tensor<5x6xi1>
      %108 = stablehlo.select %iterArg, %93, %iterArg_27 : tensor<5x6xi1>, tensor<5x6xf32>
      %109 = stablehlo.select %iterArg, %102, %iterArg_28 : tensor<5x6xi1>, tensor<5x6xf32>
      %110 = stablehlo.select %iterArg, %103, %iterArg_29 : tensor<5x6xi1>, tensor<5x6xf32>
      %111 = stablehlo.select %iterArg, %iterArg_30, %iterArg_30 : tensor<5x6xi1>, tensor<5x6xf32>
      %112 = stablehlo.select %iterArg, %99, %iterArg_31 : tensor<5x6xi1>, tensor<5x6xf32>
      %113 = stablehlo.select %iterArg, %100, %iterArg_32 : tensor<5x6xi1>, tensor<5x6xf32>
      stablehlo.return %107, %108, %109, %110, %111, %112, %113 : tensor<5x6xi1>, tensor<5x6xf32>, tensor<5x6xf32>, tensor<5x6xf32>, tensor<5x6xf32>, tensor<5x6xf32>, tensor<5x6xf32>
    }
    %83 = stablehlo.multiply %82#3, %48 : tensor<5x6xf32>
    %84 = stablehlo.divide %83, %16 : tensor<5x6xf32>
    %85 = stablehlo.select %38, %75, %84 : tensor<5x6xi1>, tensor<5x6xf32>
    %cst_24 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %86 = stablehlo.broadcast_in_dim %cst_24, dims = [] : (tensor<f32>) -> tensor<5x6xf32>
    %87 = stablehlo.select %26, %86, %85 : tensor<5x6xi1>, tensor<5x6xf32>
    %cst_25 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %88 = stablehlo.broadcast_in_dim %cst_25, dims = [] : (tensor<f32>) -> tensor<5x6xf32>
    %89 = stablehlo.select %22, %88, %87 : tensor<5x6xi1>, tensor<5x6xf32>
    %cst_26 = stablehlo.constant dense<0x7FC00000> : tensor<f32>
    %90 = stablehlo.broadcast_in_dim %cst_26, dims = [] : (tensor<f32>) -> tensor<5x6xf32>
    %91 = stablehlo.select %34, %90, %89 : tensor<5x6xi1>, tensor<5x6xf32>
    return %1, %5, %9, %12, %13, %91 : tensor<5x6xf32>, tensor<5x6xf32>, tensor<5x6xf32>, tensor<5x6xf32>, tensor<5x6xf32>, tensor<5x6xf32>
  }
}
