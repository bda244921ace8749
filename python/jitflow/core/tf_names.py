"""The public names of TensorFlow 2.21 (`dir(tf)` and of its namespaces, taken from
tensorflow-cpu 2.21.0): a name here that jitflow lacks raises an AttributeError saying
jitflow does not implement it yet, rather than a bare "has no attribute"."""

TF_NAMES = {
    "": (
        "AggregationMethod Assert CriticalSection DType DeviceSpec GradientTape Graph "
        "IndexedSlices IndexedSlicesSpec Module NoneTensorSpec Operation OptionalSpec "
        "RaggedTensor RaggedTensorSpec RegisterGradient SparseTensor SparseTensorSpec Tensor "
        "TensorArray TensorArraySpec TensorShape TensorSpec TypeSpec UnconnectedGradients "
        "Variable VariableAggregation VariableSynchronization abs acos acosh add add_n "
        "approx_top_k argmax argmin argsort as_dtype as_string asin asinh assert_equal "
        "assert_greater assert_less assert_rank atan atan2 atanh audio autodiff autograph "
        "batch_to_space bfloat16 bitcast bitwise bool boolean_mask broadcast_dynamic_shape "
        "broadcast_static_shape broadcast_to case cast check_pinned clip_by_global_norm "
        "clip_by_norm clip_by_value compat complex complex128 complex64 concat cond config "
        "constant constant_initializer control_dependencies conv conv2d_backprop_filter_v2 "
        "conv2d_backprop_input_v2 convert_to_tensor cos cosh cumsum custom_gradient data "
        "debugging device distribute divide double dtensor dtypes dynamic_partition "
        "dynamic_stitch edit_distance eig eigvals einsum ensure_shape equal errors "
        "executing_eagerly exp expand_dims experimental extract_volume_patches eye feature_column "
        "fftnd fill fingerprint float16 float32 float64 floor foldl foldr function gather "
        "gather_nd get_current_name_scope get_logger get_static_value grad_pass_through gradients "
        "graph_util greater greater_equal group guarantee_const half hessians "
        "histogram_fixed_width histogram_fixed_width_bins identity identity_n ifftnd image "
        "import_graph_def init_scope initializers inside_function int16 int32 int64 int8 io "
        "irfftnd is_symbolic_tensor is_tensor keras less less_equal linalg linspace lite "
        "load_library load_op_library logical_and logical_not logical_or lookup losses "
        "make_ndarray make_tensor_proto map_fn math matmul matrix_square_root maximum meshgrid "
        "metrics minimum mlir multiply name_scope negative nest newaxis nn no_gradient no_op "
        "nondifferentiable_batch_function norm not_equal numpy_function one_hot ones "
        "ones_initializer ones_like optimizers pad parallel_stack pow print profiler py_function "
        "qint16 qint32 qint8 quantization queue quint16 quint8 ragged ragged_fill_empty_rows "
        "ragged_fill_empty_rows_grad random random_index_shuffle random_normal_initializer "
        "random_uniform_initializer range rank raw_ops realdiv recompute_grad reduce_all "
        "reduce_any reduce_logsumexp reduce_max reduce_mean reduce_min reduce_prod reduce_sum "
        "register_tensor_conversion_function repeat required_space_to_batch_paddings reshape "
        "resource reverse reverse_sequence rfftnd roll round saturate_cast saved_model scalar_mul "
        "scan scatter_nd searchsorted security sequence_mask sets shape shape_n sigmoid sign "
        "signal sin sinh size slice sort space_to_batch space_to_batch_nd sparse split sqrt "
        "square squeeze stack stop_gradient strided_slice string strings subtract summary "
        "switch_case sysconfig tan tanh tensor_scatter_nd_add tensor_scatter_nd_max "
        "tensor_scatter_nd_min tensor_scatter_nd_sub tensor_scatter_nd_update tensordot test tile "
        "timestamp tools tpu train transpose truediv truncatediv truncatemod tuple "
        "type_spec_from_value types uint16 uint32 uint64 uint8 unique unique_with_counts "
        "unravel_index unstack variable_creator_scope variant vectorized_map version where "
        "while_loop xla zeros zeros_initializer zeros_like "
    ),
    "audio": (
        "decode_wav encode_wav "
    ),
    "autodiff": (
        "ForwardAccumulator GradientTape "
    ),
    "autograph": (
        "experimental set_verbosity to_code to_graph trace "
    ),
    "bitwise": (
        "bitwise_and bitwise_or bitwise_xor invert left_shift right_shift "
    ),
    "config": (
        "LogicalDevice LogicalDeviceConfiguration PhysicalDevice experimental "
        "experimental_connect_to_cluster experimental_connect_to_host "
        "experimental_functions_run_eagerly experimental_run_functions_eagerly "
        "functions_run_eagerly get_logical_device_configuration get_soft_device_placement "
        "get_visible_devices list_logical_devices list_physical_devices optimizer "
        "run_functions_eagerly set_logical_device_configuration set_soft_device_placement "
        "set_visible_devices threading "
    ),
    "distribute": (
        "CrossDeviceOps DistributedDataset DistributedIterator DistributedValues "
        "HierarchicalCopyAllReduce InputContext InputOptions InputReplicationMode MirroredStrategy "
        "MultiWorkerMirroredStrategy NcclAllReduce OneDeviceStrategy ParameterServerStrategy ReduceOp "
        "ReductionToOneDevice ReplicaContext RunOptions Server Strategy StrategyExtended TPUStrategy "
        "cluster_resolver coordinator experimental experimental_set_strategy get_replica_context "
        "get_strategy has_strategy in_cross_replica_context "
    ),
    "distribute.experimental": (
        "CentralStorageStrategy CollectiveCommunication CollectiveHints CommunicationImplementation "
        "CommunicationOptions MultiWorkerMirroredStrategy ParameterServerStrategy "
        "PreemptionCheckpointHandler PreemptionWatcher TPUStrategy TerminationConfig ValueContext "
        "coordinator partitioners rpc "
    ),
    "data": (
        "AUTOTUNE Dataset DatasetSpec FixedLengthRecordDataset INFINITE_CARDINALITY Iterator "
        "IteratorSpec NumpyIterator Options TFRecordDataset TextLineDataset ThreadingOptions "
        "UNKNOWN_CARDINALITY experimental "
    ),
    "data.experimental": (
        "AUTOTUNE AutoShardPolicy AutotuneAlgorithm AutotuneOptions Counter CsvDataset DatasetInitializer "
        "DistributeOptions ExternalStatePolicy INFINITE_CARDINALITY OptimizationOptions Optional RandomDataset "
        "Reducer SHARD_HINT ServiceOptions SqlDataset TFRecordWriter ThreadingOptions UNKNOWN_CARDINALITY "
        "assert_cardinality at bucket_by_sequence_length cardinality choose_from_datasets copy_to_device "
        "dense_to_ragged_batch dense_to_sparse_batch distributed_save enable_debug_mode enumerate_dataset from_list "
        "from_variant get_model_proto get_next_as_optional get_single_element get_structure group_by_reducer "
        "group_by_window ignore_errors index_table_from_dataset load make_batched_features_dataset make_csv_dataset "
        "make_saveable_from_iterator map_and_batch pad_to_cardinality parallel_interleave parse_example_dataset "
        "prefetch_to_device rejection_resample sample_from_datasets save scan service shuffle_and_repeat snapshot "
        "table_from_dataset take_while to_variant unbatch unique "
    ),
    "debugging": (
        "Assert assert_all_finite assert_equal assert_greater assert_greater_equal assert_integer "
        "assert_less assert_less_equal assert_near assert_negative assert_non_negative "
        "assert_non_positive assert_none_equal assert_positive assert_proper_iterable assert_rank "
        "assert_rank_at_least assert_rank_in assert_same_float_dtype assert_scalar assert_shapes "
        "assert_type check_numerics disable_check_numerics disable_traceback_filtering "
        "enable_check_numerics enable_traceback_filtering experimental get_log_device_placement "
        "is_numeric_tensor is_traceback_filtering_enabled set_log_device_placement "
    ),
    "dtypes": (
        "DType QUANTIZED_DTYPES as_dtype bfloat16 bool cast complex complex128 complex64 double "
        "experimental float16 float32 float64 half int16 int32 int64 int8 qint16 qint32 qint8 "
        "quint16 quint8 resource saturate_cast string uint16 uint32 uint64 uint8 variant "
    ),
    "errors": (
        "ABORTED ALREADY_EXISTS AbortedError AlreadyExistsError CANCELLED CancelledError "
        "DATA_LOSS DEADLINE_EXCEEDED DataLossError DeadlineExceededError FAILED_PRECONDITION "
        "FailedPreconditionError INTERNAL INVALID_ARGUMENT InternalError InvalidArgumentError "
        "NOT_FOUND NotFoundError OK OUT_OF_RANGE OpError OperatorNotAllowedInGraphError "
        "OutOfRangeError PERMISSION_DENIED PermissionDeniedError RESOURCE_EXHAUSTED "
        "ResourceExhaustedError UNAUTHENTICATED UNAVAILABLE UNIMPLEMENTED UNKNOWN "
        "UnauthenticatedError UnavailableError UnimplementedError UnknownError "
    ),
    "graph_util": (
        "import_graph_def "
    ),
    "image": (
        "ResizeMethod adjust_brightness adjust_contrast adjust_gamma adjust_hue "
        "adjust_jpeg_quality adjust_saturation central_crop combined_non_max_suppression "
        "convert_image_dtype crop_and_resize crop_to_bounding_box decode_and_crop_jpeg decode_bmp "
        "decode_gif decode_image decode_jpeg decode_jxl decode_png decode_webp "
        "draw_bounding_boxes encode_jpeg encode_png extract_glimpse extract_jpeg_shape "
        "extract_patches flip_left_right flip_up_down generate_bounding_box_proposals "
        "grayscale_to_rgb hsv_to_rgb image_gradients is_jpeg non_max_suppression "
        "non_max_suppression_overlaps non_max_suppression_padded non_max_suppression_with_scores "
        "pad_to_bounding_box per_image_standardization psnr random_brightness random_contrast "
        "random_crop random_flip_left_right random_flip_up_down random_hue random_jpeg_quality "
        "random_saturation resize resize_with_crop_or_pad resize_with_pad rgb_to_grayscale "
        "rgb_to_hsv rgb_to_yiq rgb_to_yuv rot90 sample_distorted_bounding_box sobel_edges ssim "
        "ssim_multiscale stateless_random_brightness stateless_random_contrast "
        "stateless_random_crop stateless_random_flip_left_right stateless_random_flip_up_down "
        "stateless_random_hue stateless_random_jpeg_quality stateless_random_saturation "
        "stateless_sample_distorted_bounding_box total_variation transpose yiq_to_rgb yuv_to_rgb "
    ),
    "initializers": (
        "Constant GlorotNormal GlorotUniform HeNormal HeUniform Identity IdentityInitializer "
        "Initializer LecunNormal LecunUniform Ones Orthogonal OrthogonalInitializer RandomNormal "
        "RandomUniform STFT STFTInitializer TruncatedNormal VarianceScaling Zeros constant "
        "deserialize get glorot_normal glorot_uniform he_normal he_uniform identity lecun_normal "
        "lecun_uniform ones orthogonal random_normal random_uniform serialize stft "
        "truncated_normal variance_scaling zeros "
    ),
    "io": (
        "FixedLenFeature FixedLenSequenceFeature RaggedFeature SparseFeature TFRecordOptions "
        "TFRecordWriter VarLenFeature decode_and_crop_jpeg decode_base64 decode_bmp "
        "decode_compressed decode_csv decode_gif decode_image decode_jpeg decode_json_example "
        "decode_jxl decode_png decode_proto decode_raw decode_webp deserialize_many_sparse "
        "encode_base64 encode_jpeg encode_png encode_proto extract_jpeg_shape gfile is_jpeg "
        "match_filenames_once matching_files parse_example parse_sequence_example "
        "parse_single_example parse_single_sequence_example parse_tensor read_file "
        "serialize_many_sparse serialize_sparse serialize_tensor write_file write_graph "
    ),
    "linalg": (
        "LinearOperator LinearOperatorAdjoint LinearOperatorBlockDiag "
        "LinearOperatorBlockLowerTriangular LinearOperatorCirculant LinearOperatorCirculant2D "
        "LinearOperatorCirculant3D LinearOperatorComposition LinearOperatorDiag "
        "LinearOperatorFullMatrix LinearOperatorHouseholder LinearOperatorIdentity "
        "LinearOperatorInversion LinearOperatorKronecker LinearOperatorLowRankUpdate "
        "LinearOperatorLowerTriangular LinearOperatorPermutation LinearOperatorScaledIdentity "
        "LinearOperatorToeplitz LinearOperatorTridiag LinearOperatorZeros adjoint band_part "
        "banded_triangular_solve cholesky cholesky_solve cross det diag diag_part eig eigh "
        "eigh_tridiagonal eigvals eigvalsh einsum experimental expm eye global_norm inv "
        "l2_normalize logdet logm lstsq lu lu_matrix_inverse lu_reconstruct lu_solve matmul "
        "matrix_rank matrix_transpose matvec norm normalize pinv qr set_diag slogdet solve sqrtm "
        "svd tensor_diag tensor_diag_part tensordot trace triangular_solve tridiagonal_matmul "
        "tridiagonal_solve "
    ),
    "losses": (
        "BinaryCrossentropy BinaryFocalCrossentropy CTC CategoricalCrossentropy "
        "CategoricalFocalCrossentropy CategoricalGeneralizedCrossEntropy CategoricalHinge Circle "
        "CosineSimilarity Dice Hinge Huber KLD KLDivergence LogCosh Loss MAE MAPE MSE MSLE "
        "MeanAbsoluteError MeanAbsolutePercentageError MeanSquaredError "
        "MeanSquaredLogarithmicError Poisson Reduction SparseCategoricalCrossentropy SquaredHinge "
        "Tversky binary_crossentropy binary_focal_crossentropy categorical_crossentropy "
        "categorical_focal_crossentropy categorical_generalized_cross_entropy categorical_hinge "
        "circle cosine_similarity ctc deserialize dice get hinge huber kld "
        "kullback_leibler_divergence logcosh mae mape mse msle poisson serialize "
        "sparse_categorical_crossentropy squared_hinge tversky "
    ),
    "math": (
        "abs accumulate_n acos acosh add add_n angle approx_max_k approx_min_k argmax argmin asin "
        "asinh atan atan2 atanh bessel_i0 bessel_i0e bessel_i1 bessel_i1e betainc bincount ceil "
        "confusion_matrix conj cos cosh count_nonzero cumprod cumsum cumulative_logsumexp digamma "
        "divide divide_no_nan equal erf erfc erfcinv erfinv exp expm1 floor floordiv floormod "
        "greater greater_equal igamma igammac imag in_top_k invert_permutation is_finite is_inf "
        "is_nan is_non_decreasing is_strictly_increasing l2_normalize lbeta less less_equal "
        "lgamma log log1p log_sigmoid log_softmax logical_and logical_not logical_or logical_xor "
        "maximum minimum mod multiply multiply_no_nan ndtri negative nextafter not_equal "
        "polygamma polyval pow real reciprocal reciprocal_no_nan reduce_all reduce_any "
        "reduce_euclidean_norm reduce_logsumexp reduce_max reduce_mean reduce_min reduce_prod "
        "reduce_std reduce_sum reduce_variance rint round rsqrt scalar_mul segment_max "
        "segment_mean segment_min segment_prod segment_sum sigmoid sign sin sinh sobol_sample "
        "softmax softplus softsign special sqrt square squared_difference subtract tan tanh top_k "
        "truediv unsorted_segment_max unsorted_segment_mean unsorted_segment_min "
        "unsorted_segment_prod unsorted_segment_sqrt_n unsorted_segment_sum xdivy xlog1py xlogy "
        "zero_fraction zeta "
    ),
    "metrics": (
        "AUC Accuracy BinaryAccuracy BinaryCrossentropy BinaryIoU CategoricalAccuracy "
        "CategoricalCrossentropy CategoricalHinge ConcordanceCorrelation CosineSimilarity F1Score "
        "FBetaScore FalseNegatives FalsePositives Hinge IoU KLD KLDivergence LogCoshError MAE "
        "MAPE MSE MSLE Mean MeanAbsoluteError MeanAbsolutePercentageError MeanIoU "
        "MeanMetricWrapper MeanSquaredError MeanSquaredLogarithmicError Metric OneHotIoU "
        "OneHotMeanIoU PearsonCorrelation Poisson Precision PrecisionAtRecall R2Score Recall "
        "RecallAtPrecision RootMeanSquaredError SensitivityAtSpecificity "
        "SparseCategoricalAccuracy SparseCategoricalCrossentropy SparseTopKCategoricalAccuracy "
        "SpecificityAtSensitivity SquaredHinge Sum TopKCategoricalAccuracy TrueNegatives "
        "TruePositives binary_accuracy binary_crossentropy binary_focal_crossentropy "
        "categorical_accuracy categorical_crossentropy categorical_focal_crossentropy "
        "categorical_hinge concordance_correlation deserialize get hinge huber kld "
        "kullback_leibler_divergence logcosh mae mape mse msle pearson_correlation poisson "
        "serialize sparse_categorical_accuracy sparse_categorical_crossentropy "
        "sparse_top_k_categorical_accuracy squared_hinge top_k_categorical_accuracy "
    ),
    "nest": (
        "assert_same_structure flatten is_nested map_structure pack_sequence_as "
    ),
    "nn": (
        "RNNCellDeviceWrapper RNNCellDropoutWrapper RNNCellResidualWrapper all_candidate_sampler "
        "approx_max_k approx_min_k atrous_conv2d atrous_conv2d_transpose avg_pool avg_pool1d "
        "avg_pool2d avg_pool3d batch_norm_with_global_normalization batch_normalization bias_add "
        "collapse_repeated compute_accidental_hits compute_average_loss conv1d conv1d_transpose "
        "conv2d conv2d_transpose conv3d conv3d_transpose conv_transpose convolution crelu "
        "ctc_beam_search_decoder ctc_greedy_decoder ctc_loss ctc_unique_labels depth_to_space "
        "depthwise_conv2d depthwise_conv2d_backprop_filter depthwise_conv2d_backprop_input "
        "dilation2d dropout elu embedding_lookup embedding_lookup_sparse erosion2d experimental "
        "fixed_unigram_candidate_sampler fractional_avg_pool fractional_max_pool gelu in_top_k "
        "isotonic_regression l2_loss l2_normalize leaky_relu learned_unigram_candidate_sampler "
        "local_response_normalization log_poisson_loss log_softmax lrn max_pool max_pool1d "
        "max_pool2d max_pool3d max_pool_with_argmax moments nce_loss normalize_moments pool relu "
        "relu6 safe_embedding_lookup_sparse sampled_softmax_loss scale_regularization_loss selu "
        "separable_conv2d sigmoid sigmoid_cross_entropy_with_logits silu softmax "
        "softmax_cross_entropy_with_logits softplus softsign space_to_batch space_to_depth "
        "sparse_softmax_cross_entropy_with_logits sufficient_statistics swish tanh top_k "
        "weighted_cross_entropy_with_logits weighted_moments with_space_to_batch zero_fraction "
    ),
    "optimizers": (
        "Adadelta Adafactor Adagrad Adam AdamW Adamax Ftrl Lamb Lion LossScaleOptimizer "
        "MultiOptimizer Muon Nadam Optimizer OptimizerMap RMSprop SGD ScheduleFreeAdamW "
        "deserialize get legacy schedules serialize "
    ),
    "profiler": (
        "experimental "
    ),
    "quantization": (
        "dequantize experimental fake_quant_with_min_max_args "
        "fake_quant_with_min_max_args_gradient fake_quant_with_min_max_vars "
        "fake_quant_with_min_max_vars_gradient fake_quant_with_min_max_vars_per_channel "
        "fake_quant_with_min_max_vars_per_channel_gradient quantize quantize_and_dequantize "
        "quantize_and_dequantize_v2 quantized_concat "
    ),
    "ragged": (
        "boolean_mask constant cross cross_hashed map_flat_values range row_splits_to_segment_ids "
        "segment_ids_to_row_splits stack stack_dynamic_partitions "
    ),
    "random": (
        "Algorithm Generator all_candidate_sampler categorical create_rng_state experimental "
        "fixed_unigram_candidate_sampler fold_in gamma get_global_generator "
        "learned_unigram_candidate_sampler log_uniform_candidate_sampler normal poisson "
        "set_global_generator set_seed shuffle split stateless_binomial stateless_categorical "
        "stateless_gamma stateless_normal stateless_parameterized_truncated_normal "
        "stateless_poisson stateless_truncated_normal stateless_uniform truncated_normal uniform "
        "uniform_candidate_sampler "
    ),
    "sets": (
        "difference intersection size union "
    ),
    "signal": (
        "dct fft fft2d fft3d fftnd fftshift frame hamming_window hann_window idct ifft ifft2d "
        "ifft3d ifftnd ifftshift inverse_mdct inverse_stft inverse_stft_window_fn irfft irfft2d "
        "irfft3d irfftnd kaiser_bessel_derived_window kaiser_window linear_to_mel_weight_matrix "
        "mdct mfccs_from_log_mel_spectrograms overlap_and_add rfft rfft2d rfft3d rfftnd stft "
        "vorbis_window "
    ),
    "sparse": (
        "SparseTensor add bincount concat cross cross_hashed expand_dims eye fill_empty_rows "
        "from_dense map_values mask maximum minimum reduce_max reduce_sum reorder reset_shape "
        "reshape retain sampled_addmm segment_mean segment_sqrt_n segment_sum slice softmax "
        "sparse_dense_matmul split to_dense to_indicator transpose "
    ),
    "strings": (
        "as_string bytes_split format join length lower ngrams reduce_join regex_full_match "
        "regex_replace split strip substr to_hash_bucket to_hash_bucket_fast "
        "to_hash_bucket_strong to_number unicode_decode unicode_decode_with_offsets "
        "unicode_encode unicode_script unicode_split unicode_split_with_offsets unicode_transcode "
        "unsorted_segment_join upper "
    ),
    "test": (
        "Benchmark TestCase assert_equal_graph_def benchmark_config compute_gradient "
        "create_local_cluster disable_with_predicate experimental gpu_device_name "
        "is_built_with_cuda is_built_with_gpu_support is_built_with_rocm is_built_with_xla "
        "is_cpu_target_available is_gpu_available main with_eager_op_as_function "
    ),
    "train": (
        "BytesList Checkpoint CheckpointManager CheckpointOptions CheckpointView ClusterDef "
        "ClusterSpec Coordinator Example ExponentialMovingAverage Feature FeatureList "
        "FeatureLists Features FloatList Int64List JobDef SequenceExample ServerDef TrackableView "
        "checkpoints_iterator experimental get_checkpoint_state latest_checkpoint list_variables "
        "load_checkpoint load_variable "
    ),
    "types": (
        "experimental "
    ),
    "xla": (
        "experimental "
    ),
}
