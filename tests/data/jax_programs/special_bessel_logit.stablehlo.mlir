module @jit__lambda attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<3x7xf32>) -> (tensor<3x7xf32> {jax.result_info = "result[0]"}, tensor<3x7xf32> {jax.result_info = "result[1]"}, tensor<3x7xf32> {jax.result_info = "result[2]"}, tensor<3x7xf32> {jax.result_info = "result[3]"}, tensor<3x7xf32> {jax.result_info = "result[4]"}, tensor<3x7xf32> {jax.result_info = "result[5]"}) {
    %cst = stablehlo.constant dense<1.000000e+01> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<3x7xf32>
    %1 = stablehlo.multiply %arg0, %0 : tensor<3x7xf32>
    %2 = stablehlo.abs %1 : tensor<3x7xf32>
    %cst_0 = stablehlo.constant dense<5.000000e-01> : tensor<f32>
    %3 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<3x7xf32>
    %cst_1 = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    %4 = stablehlo.broadcast_in_dim %cst_1, dims = [] : (tensor<f32>) -> tensor<3x7xf32>
    %cst_2 = stablehlo.constant dense<3.200000e+01> : tensor<f32>
    %5 = stablehlo.broadcast_in_dim %cst_2, dims = [] : (tensor<f32>) -> tensor<3x7xf32>
    %6 = stablehlo.multiply %3, %2 : tensor<3x7xf32>
    %7 = stablehlo.subtract %6, %4 : tensor<3x7xf32>
    %cst_3 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %8 = stablehlo.broadcast_in_dim %cst_3, dims = [] : (tensor<f32>) -> tensor<3x7xf32>
    %cst_4 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %9 = stablehlo.broadcast_in_dim %cst_4, dims = [] : (tensor<f32>) -> tensor<3x7xf32>
    %cst_5 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %10 = stablehlo.broadcast_in_dim %cst_5, dims = [] : (tensor<f32>) -> tensor<3x7xf32>
    %11 = stablehlo.multiply %7, %8 : tensor<3x7xf32>
    %12 = stablehlo.subtract %11, %9 : tensor<3x7xf32>
    %cst_6 = stablehlo.constant dense<-1.30002498E-8> : tensor<f32>
    %13 = stablehlo.broadcast_in_dim %cst_6, dims = [] : (tensor<f32>) -> tensor<3x7xf32>
    %14 = stablehlo.add %12, %13 : tensor<3x7xf32>
    %15 = stablehlo.multiply %7, %14 : tensor<3x7xf32>
    %16 = stablehlo.subtract %15, %8 : tensor<3x7xf32>
    %cst_7 = stablehlo.constant dense<6.04699508E-8> : tensor<f32>
    %17 = stablehlo.broadcast_in_dim %cst_7, dims = [] : (tensor<f32>) -> tensor<3x7xf32>
    %18 = stablehlo.add %16, %17 : tensor<3x7xf32>
    %19 = stablehlo.multiply %7, %18 : tensor<3x7xf32>
    %20 = stablehlo.subtract %19, %14 : tensor<3x7xf32>
    %cst_8 = stablehlo.constant dense<-2.67079372E-7> : tensor<f32>
    %21 = stablehlo.broadcast_in_dim %cst_8, dims = [] : (tensor<f32>) -> tensor<3x7xf32>
    %22 = stablehlo.add %20, %21 : tensor<3x7xf32>
    %23 = stablehlo.multiply %7, %22 : tensor<3x7xf32>
    %24 = stablehlo.subtract %23, %18 : tensor<3x7xf32>
    %cst_9 = stablehlo.constant dense<1.11738757E-6> : tensor<f32>
    %25 = stablehlo.broadcast_in_dim %cst_9, dims = [] : (tensor<f32>) -> tensor<3x7xf32>
    %26 = stablehlo.add %24, %25 : tensor<3x7xf32>
    %27 = stablehlo.multiply %7, %26 : tensor<3x7xf32>
    %28 = stablehlo.subtract %27, %22 : tensor<3x7xf32>
    %cst_10 = stablehlo.constant dense<-4.41673819E-6> : tensor<f32>
    %29 = stablehlo.broadcast_in_dim %cst_10, dims = [] : (tensor<f32>) -> tensor<3x7xf32>
    %30 = stablehlo.add %28, %29 : tensor<3x7xf32>
    %31 = stablehlo.multiply %7, %30 : tensor<3x7xf32>
    %32 = stablehlo.subtract %31, %26 : tensor<3x7xf32>
    %cst_11 = stablehlo.constant dense<1.64484482E-5> : tensor<f32>
    %33 = stablehlo.broadcast_in_dim %cst_11, dims = [] : (tensor<f32>) -> tensor<3x7xf32>
    %34 = stablehlo.add %32, %33 : tensor<3x7xf32>
    %35 = stablehlo.multiply %7, %34 : tensor<3x7xf32>
    %36 = stablehlo.subtract %35, %30 : tensor<3x7xf32>
    %cst_12 = stablehlo.constant dense<-5.75419508E-5> : tensor<f32>
    %37 = stablehlo.broadcast_in_dim %cst_12, dims = [] : (tensor<f32>) -> tensor<3x7xf32>
    %38 = stablehlo.add %36, %37 : tensor<3x7xf32>
    %39 = stablehlo.multiply %7, %38 : tensor<3x7xf32>
    %40 = stablehlo.subtract %39, %34 : tensor<3x7xf32>
    %cst_13 = stablehlo.constant dense<1.88502891E-4> : tensor<f32>
    %41 = stablehlo.broadcast_in_dim %cst_13, dims = [] : (tensor<f32>) -> tensor<3x7xf32>
    %42 = stablehlo.add %40, %41 : tensor<3x7xf32>
    %43 = stablehlo.multiply %7, %42 : tensor<3x7xf32>
    %44 = stablehlo.subtract %43, %38 : tensor<3x7xf32>
    %cst_14 = stablehlo.constant dense<-5.76375576E-4> : tensor<f32>
    %45 = stablehlo.broadcast_in_dim %cst_14, dims = [] : (tensor<f32>) -> tensor<3x7xf32>
    %46 = stablehlo.add %44, %45 : tensor<3x7xf32>
    %47 = stablehlo.multiply %7, %46 : tensor<3x7xf32>
    %48 = stablehlo.subtract %47, %42 : tensor<3x7xf32>
    %cst_15 = stablehlo.constant dense<0.00163947558> : tensor<f32>
    %49 = stablehlo.broadcast_in_dim %cst_15, dims = [] : (tensor<f32>) -> tensor<3x7xf32>
    %50 = stablehlo.add %48, %49 : tensor<3x7xf32>
    %51 = stablehlo.multiply %7, %50 : tensor<3x7xf32>
    %52 = stablehlo.subtract %51, %46 : tensor<3x7xf32>
    %cst_16 = stablehlo.constant dense<-4.324310e-03> : tensor<f32>
    %53 = stablehlo.broadcast_in_dim %cst_16, dims = [] : (tensor<f32>) -> tensor<3x7xf32>
    %54 = stablehlo.add %52, %53 : tensor<3x7xf32>
    %55 = stablehlo.multiply %7, %54 : tensor<3x7xf32>
    %56 = stablehlo.subtract %55, %50 : tensor<3x7xf32>
    %cst_17 = stablehlo.constant dense<0.0105464607> : tensor<f32>
    %57 = stablehlo.broadcast_in_dim %cst_17, dims = [] : (tensor<f32>) -> tensor<3x7xf32>
    %58 = stablehlo.add %56, %57 : tensor<3x7xf32>
    %59 = stablehlo.multiply %7, %58 : tensor<3x7xf32>
    %60 = stablehlo.subtract %59, %54 : tensor<3x7xf32>
    %cst_18 = stablehlo.constant dense<-0.0237374157> : tensor<f32>
    %61 = stablehlo.broadcast_in_dim %cst_18, dims = [] : (tensor<f32>) -> tensor<3x7xf32>
    %62 = stablehlo.add %60, %61 : tensor<3x7xf32>
    %63 = stablehlo.multiply %7, %62 : tensor<3x7xf32>
    %64 = stablehlo.subtract %63, %58 : tensor<3x7xf32>
    %cst_19 = stablehlo.constant dense<0.0493052825> : tensor<f32>
    %65 = stablehlo.broadcast_in_dim %cst_19, dims = [] : (tensor<f32>) -> tensor<3x7xf32>
    %66 = stablehlo.add %64, %65 : tensor<3x7xf32>
    %67 = stablehlo.multiply %7, %66 : tensor<3x7xf32>
    %68 = stablehlo.subtract %67, %62 : tensor<3x7xf32>
    %cst_20 = stablehlo.constant dense<-9.490110e-02> : tensor<f32>
    %69 = stablehlo.broadcast_in_dim %cst_20, dims = [] : (tensor<f32>) -> tensor<3x7xf32>
    %70 = stablehlo.add %68, %69 : tensor<3x7xf32>
    %71 = stablehlo.multiply %7, %70 : tensor<3x7xf32>
    %72 = stablehlo.subtract %71, %66 : tensor<3x7xf32>
    %cst_21 = stablehlo.constant dense<0.171620905> : tensor<f32>
    %73 = stablehlo.broadcast_in_dim %cst_21, dims = [] : (tensor<f32>) -> tensor<3x7xf32>
    %74 = stablehlo.add %72, %73 : tensor<3x7xf32>
    %75 = stablehlo.multiply %7, %74 : tensor<3x7xf32>
    %76 = stablehlo.subtract %75, %70 : tensor<3x7xf32>
    %cst_22 = stablehlo.constant dense<-0.304682672> : tensor<f32>
    %77 = stablehlo.broadcast_in_dim %cst_22, dims = [] : (tensor<f32>) -> tensor<3x7xf32>
    %78 = stablehlo.add %76, %77 : tensor<3x7xf32>
    %79 = stablehlo.multiply %7, %78 : tensor<3x7xf32>
    %80 = stablehlo.subtract %79, %74 : tensor<3x7xf32>
    %cst_23 = stablehlo.constant dense<0.676795303> : tensor<f32>
    %81 = stablehlo.broadcast_in_dim %cst_23, dims = [] : (tensor<f32>) -> tensor<3x7xf32>
    %82 = stablehlo.add %80, %81 : tensor<3x7xf32>
    %83 = stablehlo.subtract %82, %74 : tensor<3x7xf32>
    %cst_24 = stablehlo.constant dense<5.000000e-01> : tensor<f32>
    %84 = stablehlo.broadcast_in_dim %cst_24, dims = [] : (tensor<f32>) -> tensor<3x7xf32>
    %85 = stablehlo.multiply %84, %83 : tensor<3x7xf32>
    %86 = stablehlo.divide %5, %2 : tensor<3x7xf32>
    %87 = stablehlo.subtract %86, %4 : tensor<3x7xf32>
    %cst_25 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %88 = stablehlo.broadcast_in_dim %cst_25, dims = [] : (tensor<f32>) -> tensor<3x7xf32>
    %cst_26 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %89 = stablehlo.broadcast_in_dim %cst_26, dims = [] : (tensor<f32>) -> tensor<3x7xf32>
    %cst_27 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %90 = stablehlo.broadcast_in_dim %cst_27, dims = [] : (tensor<f32>) -> tensor<3x7xf32>
    %91 = stablehlo.multiply %87, %88 : tensor<3x7xf32>
    %92 = stablehlo.subtract %91, %89 : tensor<3x7xf32>
    %cst_28 = stablehlo.constant dense<3.39623196E-9> : tensor<f32>
    %93 = stablehlo.broadcast_in_dim %cst_28, dims = [] : (tensor<f32>) -> tensor<3x7xf32>
    %94 = stablehlo.add %92, %93 : tensor<3x7xf32>
    %95 = stablehlo.multiply %87, %94 : tensor<3x7xf32>
    %96 = stablehlo.subtract %95, %88 : tensor<3x7xf32>
    %cst_29 = stablehlo.constant dense<2.26666899E-8> : tensor<f32>
    %97 = stablehlo.broadcast_in_dim %cst_29, dims = [] : (tensor<f32>) -> tensor<3x7xf32>
    %98 = stablehlo.add %96, %97 : tensor<3x7xf32>
    %99 = stablehlo.multiply %87, %98 : tensor<3x7xf32>
    %100 = stablehlo.subtract %99, %94 : tensor<3x7xf32>
    %cst_30 = stablehlo.constant dense<2.04891862E-7> : tensor<f32>
    %101 = stablehlo.broadcast_in_dim %cst_30, dims = [] : (tensor<f32>) -> tensor<3x7xf32>
    %102 = stablehlo.add %100, %101 : tensor<3x7xf32>
    %103 = stablehlo.multiply %87, %102 : tensor<3x7xf32>
    %104 = stablehlo.subtract %103, %98 : tensor<3x7xf32>
    %cst_31 = stablehlo.constant dense<2.89137051E-6> : tensor<f32>
    %105 = stablehlo.broadcast_in_dim %cst_31, dims = [] : (tensor<f32>) -> tensor<3x7xf32>
    %106 = stablehlo.add %104, %105 : tensor<3x7xf32>
    %107 = stablehlo.multiply %87, %106 : tensor<3x7xf32>
    %108 = stablehlo.subtract %107, %102 : tensor<3x7xf32>
    %cst_32 = stablehlo.constant dense<6.88975852E-5> : tensor<f32>
    %109 = stablehlo.broadcast_in_dim %cst_32, dims = [] : (tensor<f32>) -> tensor<3x7xf32>
    %110 = stablehlo.add %108, %109 : tensor<3x7xf32>
    %111 = stablehlo.multiply %87, %110 : tensor<3x7xf32>
    %112 = stablehlo.subtract %111, %106 : tensor<3x7xf32>
    %cst_33 = stablehlo.constant dense<0.00336911646> : tensor<f32>
    %113 = stablehlo.broadcast_in_dim %cst_33, dims = [] : (tensor<f32>) -> tensor<3x7xf32>
    %114 = stablehlo.add %112, %113 : tensor<3x7xf32>
    %115 = stablehlo.multiply %87, %114 : tensor<3x7xf32>
    %116 = stablehlo.subtract %115, %110 : tensor<3x7xf32>
    %cst_34 = stablehlo.constant dense<0.804490387> : tensor<f32>
    %117 = stablehlo.broadcast_in_dim %cst_34, dims = [] : (tensor<f32>) -> tensor<3x7xf32>
    %118 = stablehlo.add %116, %117 : tensor<3x7xf32>
    %119 = stablehlo.subtract %118, %110 : tensor<3x7xf32>
    %cst_35 = stablehlo.constant dense<5.000000e-01> : tensor<f32>
    %120 = stablehlo.broadcast_in_dim %cst_35, dims = [] : (tensor<f32>) -> tensor<3x7xf32>
    %121 = stablehlo.multiply %120, %119 : tensor<3x7xf32>
    %122 = stablehlo.sqrt %2 : tensor<3x7xf32>
    %123 = stablehlo.divide %121, %122 : tensor<3x7xf32>
    %cst_36 = stablehlo.constant dense<8.000000e+00> : tensor<f32>
    %124 = stablehlo.broadcast_in_dim %cst_36, dims = [] : (tensor<f32>) -> tensor<3x7xf32>
    %125 = stablehlo.compare LE, %2, %124, FLOAT : (tensor<3x7xf32>, tensor<3x7xf32>) -> tensor<3x7xi1>
    %126 = stablehlo.select %125, %85, %123 : tensor<3x7xi1>, tensor<3x7xf32>
    %cst_37 = stablehlo.constant dense<1.000000e+01> : tensor<f32>
    %127 = stablehlo.broadcast_in_dim %cst_37, dims = [] : (tensor<f32>) -> tensor<3x7xf32>
    %128 = stablehlo.multiply %arg0, %127 : tensor<3x7xf32>
    %129 = chlo.bessel_i1e %128 : tensor<3x7xf32> -> tensor<3x7xf32>
    %130 = stablehlo.abs %arg0 : tensor<3x7xf32>
    %131 = stablehlo.exponential %130 : tensor<3x7xf32>
    %132 = stablehlo.abs %arg0 : tensor<3x7xf32>
    %cst_38 = stablehlo.constant dense<5.000000e-01> : tensor<f32>
    %133 = stablehlo.broadcast_in_dim %cst_38, dims = [] : (tensor<f32>) -> tensor<3x7xf32>
    %cst_39 = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    %134 = stablehlo.broadcast_in_dim %cst_39, dims = [] : (tensor<f32>) -> tensor<3x7xf32>
    %cst_40 = stablehlo.constant dense<3.200000e+01> : tensor<f32>
    %135 = stablehlo.broadcast_in_dim %cst_40, dims = [] : (tensor<f32>) -> tensor<3x7xf32>
    %136 = stablehlo.multiply %133, %132 : tensor<3x7xf32>
    %137 = stablehlo.subtract %136, %134 : tensor<3x7xf32>
    %cst_41 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %138 = stablehlo.broadcast_in_dim %cst_41, dims = [] : (tensor<f32>) -> tensor<3x7xf32>
    %cst_42 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %139 = stablehlo.broadcast_in_dim %cst_42, dims = [] : (tensor<f32>) -> tensor<3x7xf32>
    %cst_43 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %140 = stablehlo.broadcast_in_dim %cst_43, dims = [] : (tensor<f32>) -> tensor<3x7xf32>
    %141 = stablehlo.multiply %137, %138 : tensor<3x7xf32>
    %142 = stablehlo.subtract %141, %139 : tensor<3x7xf32>
    %cst_44 = stablehlo.constant dense<-1.30002498E-8> : tensor<f32>
    %143 = stablehlo.broadcast_in_dim %cst_44, dims = [] : (tensor<f32>) -> tensor<3x7xf32>
    %144 = stablehlo.add %142, %143 : tensor<3x7xf32>
    %145 = stablehlo.multiply %137, %144 : tensor<3x7xf32>
    %146 = stablehlo.subtract %145, %138 : tensor<3x7xf32>
    %cst_45 = stablehlo.constant dense<6.04699508E-8> : tensor<f32>
    %147 = stablehlo.broadcast_in_dim %cst_45, dims = [] : (tensor<f32>) -> tensor<3x7xf32>
    %148 = stablehlo.add %146, %147 : tensor<3x7xf32>
    %149 = stablehlo.multiply %137, %148 : tensor<3x7xf32>
    %150 = stablehlo.subtract %149, %144 : tensor<3x7xf32>
    %cst_46 = stablehlo.constant dense<-2.67079372E-7> : tensor<f32>
    %151 = stablehlo.broadcast_in_dim %cst_46, dims = [] : (tensor<f32>) -> tensor<3x7xf32>
    %152 = stablehlo.add %150, %151 : tensor<3x7xf32>
    %153 = stablehlo.multiply %137, %152 : tensor<3x7xf32>
    %154 = stablehlo.subtract %153, %148 : tensor<3x7xf32>
    %cst_47 = stablehlo.constant dense<1.11738757E-6> : tensor<f32>
    %155 = stablehlo.broadcast_in_dim %cst_47, dims = [] : (tensor<f32>) -> tensor<3x7xf32>
    %156 = stablehlo.add %154, %155 : tensor<3x7xf32>
    %157 = stablehlo.multiply %137, %156 : tensor<3x7xf32>
    %158 = stablehlo.subtract %157, %152 : tensor<3x7xf32>
    %cst_48 = stablehlo.constant dense<-4.41673819E-6> : tensor<f32>
    %159 = stablehlo.broadcast_in_dim %cst_48, dims = [] : (tensor<f32>) -> tensor<3x7xf32>
    %160 = stablehlo.add %158, %159 : tensor<3x7xf32>
    %161 = stablehlo.multiply %137, %160 : tensor<3x7xf32>
    %162 = stablehlo.subtract %161, %156 : tensor<3x7xf32>
    %cst_49 = stablehlo.constant dense<1.64484482E-5> : tensor<f32>
    %163 = stablehlo.broadcast_in_dim %cst_49, dims = [] : (tensor<f32>) -> tensor<3x7xf32>
    %164 = stablehlo.add %162, %163 : tensor<3x7xf32>
    %165 = stablehlo.multiply %137, %164 : tensor<3x7xf32>
    %166 = stablehlo.subtract %165, %160 : tensor<3x7xf32>
    %cst_50 = stablehlo.constant dense<-5.75419508E-5> : tensor<f32>
    %167 = stablehlo.broadcast_in_dim %cst_50, dims = [] : (tensor<f32>) -> tensor<3x7xf32>
    %168 = stablehlo.add %166, %167 : tensor<3x7xf32>
    %169 = stablehlo.multiply %137, %168 : tensor<3x7xf32>
    %170 = stablehlo.subtract %169, %164 : tensor<3x7xf32>
    %cst_51 = stablehlo.constant dense<1.88502891E-4> : tensor<f32>
    %171 = stablehlo.broadcast_in_dim %cst_51, dims = [] : (tensor<f32>) -> tensor<3x7xf32>
    %172 = stablehlo.add %170, %171 : tensor<3x7xf32>
    %173 = stablehlo.multiply %137, %172 : tensor<3x7xf32>
    %174 = stablehlo.subtract %173, %168 : tensor<3x7xf32>
    %cst_52 = stablehlo.constant dense<-5.76375576E-4> : tensor<f32>
    %175 = stablehlo.broadcast_in_dim %cst_52, dims = [] : (tensor<f32>) -> tensor<3x7xf32>
    %176 = stablehlo.add %174, %175 : tensor<3x7xf32>
    %177 = stablehlo.multiply %137, %176 : tensor<3x7xf32>
    %178 = stablehlo.subtract %177, %172 : tensor<3x7xf32>
    %cst_53 = stablehlo.constant dense<0.00163947558> : tensor<f32>
    %179 = stablehlo.broadcast_in_dim %cst_53, dims = [] : (tensor<f32>) -> tensor<3x7xf32>
    %180 = stablehlo.add %178, %179 : tensor<3x7xf32>
    %181 = stablehlo.multiply %137, %180 : tensor<3x7xf32>
    %182 = stablehlo.subtract %181, %176 : tensor<3x7xf32>
    %cst_54 = stablehlo.constant dense<-4.324310e-03> : tensor<f32>
    %183 = stablehlo.broadcast_in_dim %cst_54, dims = [] : (tensor<f32>) -> tensor<3x7xf32>
    %184 = stablehlo.add %182, %183 : tensor<3x7xf32>
    %185 = stablehlo.multiply %137, %184 : tensor<3x7xf32>
    %186 = stablehlo.subtract %185, %180 : tensor<3x7xf32>
    %cst_55 = stablehlo.constant dense<0.0105464607> : tensor<f32>
    %187 = stablehlo.broadcast_in_dim %cst_55, dims = [] : (tensor<f32>) -> tensor<3x7xf32>
    %188 = stablehlo.add %186, %187 : tensor<3x7xf32>
    %189 = stablehlo.multiply %137, %188 : tensor<3x7xf32>
    %190 = stablehlo.subtract %189, %184 : tensor<3x7xf32>
    %cst_56 = stablehlo.constant dense<-0.0237374157> : tensor<f32>
    %191 = stablehlo.broadcast_in_dim %cst_56, dims = [] : (tensor<f32>) -> tensor<3x7xf32>
    %192 = stablehlo.add %190, %191 : tensor<3x7xf32>
    %193 = stablehlo.multiply %137, %192 : tensor<3x7xf32>
    %194 = stablehlo.subtract %193, %188 : tensor<3x7xf32>
    %cst_57 = stablehlo.constant dense<0.0493052825> : tensor<f32>
    %195 = stablehlo.broadcast_in_dim %cst_57, dims = [] : (tensor<f32>) -> tensor<3x7xf32>
    %196 = stablehlo.add %194, %195 : tensor<3x7xf32>
    %197 = stablehlo.multiply %137, %196 : tensor<3x7xf32>
    %198 = stablehlo.subtract %197, %192 : tensor<3x7xf32>
    %cst_58 = stablehlo.constant dense<-9.490110e-02> : tensor<f32>
    %199 = stablehlo.broadcast_in_dim %cst_58, dims = [] : (tensor<f32>) -> tensor<3x7xf32>
    %200 = stablehlo.add %198, %199 : tensor<3x7xf32>
    %201 = stablehlo.multiply %137, %200 : tensor<3x7xf32>
    %202 = stablehlo.subtract %201, %196 : tensor<3x7xf32>
    %cst_59 = stablehlo.constant dense<0.171620905> : tensor<f32>
    %203 = stablehlo.broadcast_in_dim %cst_59, dims = [] : (tensor<f32>) -> tensor<3x7xf32>
    %204 = stablehlo.add %202, %203 : tensor<3x7xf32>
    %205 = stablehlo.multiply %137, %204 : tensor<3x7xf32>
    %206 = stablehlo.subtract %205, %200 : tensor<3x7xf32>
    %cst_60 = stablehlo.constant dense<-0.304682672> : tensor<f32>
    %207 = stablehlo.broadcast_in_dim %cst_60, dims = [] : (tensor<f32>) -> tensor<3x7xf32>
    %208 = stablehlo.add %206, %207 : tensor<3x7xf32>
    %209 = stablehlo.multiply %137, %208 : tensor<3x7xf32>
    %210 = stablehlo.subtract %209, %204 : tensor<3x7xf32>
    %cst_61 = stablehlo.constant dense<0.676795303> : tensor<f32>
    %211 = stablehlo.broadcast_in_dim %cst_61, dims = [] : (tensor<f32>) -> tensor<3x7xf32>
    %212 = stablehlo.add %210, %211 : tensor<3x7xf32>
    %213 = stablehlo.subtract %212, %204 : tensor<3x7xf32>
    %cst_62 = stablehlo.constant dense<5.000000e-01> : tensor<f32>
    %214 = stablehlo.broadcast_in_dim %cst_62, dims = [] : (tensor<f32>) -> tensor<3x7xf32>
    %215 = stablehlo.multiply %214, %213 : tensor<3x7xf32>
    %216 = stablehlo.divide %135, %132 : tensor<3x7xf32>
    %217 = stablehlo.subtract %216, %134 : tensor<3x7xf32>
    %cst_63 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %218 = stablehlo.broadcast_in_dim %cst_63, dims = [] : (tensor<f32>) -> tensor<3x7xf32>
    %cst_64 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %219 = stablehlo.broadcast_in_dim %cst_64, dims = [] : (tensor<f32>) -> tensor<3x7xf32>
    %cst_65 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %220 = stablehlo.broadcast_in_dim %cst_65, dims = [] : (tensor<f32>) -> tensor<3x7xf32>
    %221 = stablehlo.multiply %217, %218 : tensor<3x7xf32>
    %222 = stablehlo.subtract %221, %219 : tensor<3x7xf32>
    %cst_66 = stablehlo.constant dense<3.39623196E-9> : tensor<f32>
    %223 = stablehlo.broadcast_in_dim %cst_66, dims = [] : (tensor<f32>) -> tensor<3x7xf32>
    %224 = stablehlo.add %222, %223 : tensor<3x7xf32>
    %225 = stablehlo.multiply %217, %224 : tensor<3x7xf32>
    %226 = stablehlo.subtract %225, %218 : tensor<3x7xf32>
    %cst_67 = stablehlo.constant dense<2.26666899E-8> : tensor<f32>
    %227 = stablehlo.broadcast_in_dim %cst_67, dims = [] : (tensor<f32>) -> tensor<3x7xf32>
    %228 = stablehlo.add %226, %227 : tensor<3x7xf32>
    %229 = stablehlo.multiply %217, %228 : tensor<3x7xf32>
    %230 = stablehlo.subtract %229, %224 : tensor<3x7xf32>
    %cst_68 = stablehlo.constant dense<2.04891862E-7> : tensor<f32>
    %231 = stablehlo.broadcast_in_dim %cst_68, dims = [] : (tensor<f32>) -> tensor<3x7xf32>
    %232 = stablehlo.add %230, %231 : tensor<3x7xf32>
    %233 = stablehlo.multiply %217, %232 : tensor<3x7xf32>
    %234 = stablehlo.subtract %233, %228 : tensor<3x7xf32>
    %cst_69 = stablehlo.constant dense<2.89137051E-6> : tensor<f32>
    %235 = stablehlo.broadcast_in_dim %cst_69, dims = [] : (tensor<f32>) -> tensor<3x7xf32>
    %236 = stablehlo.add %234, %235 : tensor<3x7xf32>
    %237 = stablehlo.multiply %217, %236 : tensor<3x7xf32>
    %238 = stablehlo.subtract %237, %232 : tensor<3x7xf32>
    %cst_70 = stablehlo.constant dense<6.88975852E-5> : tensor<f32>
    %239 = stablehlo.broadcast_in_dim %cst_70, dims = [] : (tensor<f32>) -> tensor<3x7xf32>
    %240 = stablehlo.add %238, %239 : tensor<3x7xf32>
    %241 = stablehlo.multiply %217, %240 : tensor<3x7xf32>
    %242 = stablehlo.subtract %241, %236 : tensor<3x7xf32>
    %cst_71 = stablehlo.constant dense<0.00336911646> : tensor<f32>
    %243 = stablehlo.broadcast_in_dim %cst_71, dims = [] : (tensor<f32>) -> tensor<3x7xf32>
    %244 = stablehlo.add %242, %243 : tensor<3x7xf32>
    %245 = stablehlo.multiply %217, %244 : tensor<3x7xf32>
    %246 = stablehlo.subtract %245, %240 : tensor<3x7xf32>
    %cst_72 = stablehlo.constant dense<0.804490387> : tensor<f32>
    %247 = stablehlo.broadcast_in_dim %cst_72, dims = [] : (tensor<f32>) -> tensor<3x7xf32>
    %248 = stablehlo.add %246, %247 : tensor<3x7xf32>
    %249 = stablehlo.subtract %248, %240 : tensor<3x7xf32>
    %cst_73 = stablehlo.constant dense<5.000000e-01> : tensor<f32>
    %250 = stablehlo.broadcast_in_dim %cst_73, dims = [] : (tensor<f32>) -> tensor<3x7xf32>
    %251 = stablehlo.multiply %250, %249 : tensor<3x7xf32>
    %252 = stablehlo.sqrt %132 : tensor<3x7xf32>
    %253 = stablehlo.divide %251, %252 : tensor<3x7xf32>
    %cst_74 = stablehlo.constant dense<8.000000e+00> : tensor<f32>
    %254 = stablehlo.broadcast_in_dim %cst_74, dims = [] : (tensor<f32>) -> tensor<3x7xf32>
    %255 = stablehlo.compare LE, %132, %254, FLOAT : (tensor<3x7xf32>, tensor<3x7xf32>) -> tensor<3x7xi1>
    %256 = stablehlo.select %255, %215, %253 : tensor<3x7xi1>, tensor<3x7xf32>
    %257 = stablehlo.multiply %131, %256 : tensor<3x7xf32>
    %258 = stablehlo.abs %arg0 : tensor<3x7xf32>
    %259 = stablehlo.exponential %258 : tensor<3x7xf32>
    %260 = chlo.bessel_i1e %arg0 : tensor<3x7xf32> -> tensor<3x7xf32>
    %261 = stablehlo.multiply %259, %260 : tensor<3x7xf32>
    %262 = stablehlo.negate %arg0 : tensor<3x7xf32>
    %263 = stablehlo.exponential %262 : tensor<3x7xf32>
    %cst_75 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %264 = stablehlo.broadcast_in_dim %cst_75, dims = [] : (tensor<f32>) -> tensor<3x7xf32>
    %265 = stablehlo.add %264, %263 : tensor<3x7xf32>
    %cst_76 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %266 = stablehlo.broadcast_in_dim %cst_76, dims = [] : (tensor<f32>) -> tensor<3x7xf32>
    %267 = stablehlo.divide %266, %265 : tensor<3x7xf32>
    %cst_77 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %268 = stablehlo.broadcast_in_dim %cst_77, dims = [] : (tensor<f32>) -> tensor<3x7xf32>
    %269 = stablehlo.subtract %268, %267 : tensor<3x7xf32>
    %270 = stablehlo.divide %267, %269 : tensor<3x7xf32>
    %271 = stablehlo.log %270 : tensor<3x7xf32>
    %272 = stablehlo.abs %arg0 : tensor<3x7xf32>
    %273 = stablehlo.abs %arg0 : tensor<3x7xf32>
    %cst_78 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %274 = stablehlo.broadcast_in_dim %cst_78, dims = [] : (tensor<f32>) -> tensor<3x7xf32>
    %275 = stablehlo.add %273, %274 : tensor<3x7xf32>
    %cst_79 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %276 = stablehlo.broadcast_in_dim %cst_79, dims = [] : (tensor<f32>) -> tensor<3x7xf32>
    %277 = stablehlo.compare NE, %272, %276, FLOAT : (tensor<3x7xf32>, tensor<3x7xf32>) -> tensor<3x7xi1>
    %278 = stablehlo.compare NE, %275, %275, FLOAT : (tensor<3x7xf32>, tensor<3x7xf32>) -> tensor<3x7xi1>
    %279 = stablehlo.or %277, %278 : tensor<3x7xi1>
    %280 = stablehlo.log %275 : tensor<3x7xf32>
    %281 = stablehlo.multiply %272, %280 : tensor<3x7xf32>
    %cst_80 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %282 = stablehlo.broadcast_in_dim %cst_80, dims = [] : (tensor<f32>) -> tensor<3x7xf32>
    %283 = call @_where(%279, %281, %282) : (tensor<3x7xi1>, tensor<3x7xf32>, tensor<3x7xf32>) -> tensor<3x7xf32>
    return %126, %129, %257, %261, %271, %283 : tensor<3x7xf32>, tensor<3x7xf32>, tensor<3x7xf32>, tensor<3x7xf32>, tensor<3x7xf32>, tensor<3x7xf32>
  }
  func.func private @_where(%arg0: tensor<3x7xi1>, %arg1: tensor<3x7xf32>, %arg2: tensor<3x7xf32>) -> tensor<3x7xf32> {
    %0 = stablehlo.select %arg0, %arg1, %arg2 : tensor<3x7xi1>, tensor<3x7xf32>
    return %0 : tensor<3x7xf32>
  }
}
