// The geometry of a convolution or pooling window (TF's attrs resolved on shapes): shape
// inference and the kernels read the same struct, so their output sizes and paddings agree.
#pragma once
#include <string>
#include <vector>

#include "ir/op_registry.h"

namespace jf {

struct ConvGeom {
  static constexpr int kMaxSpatial = 3;
  int sp = 2;                   // spatial dims
  bool channels_first = false;  // NCHW (NCDHW) rather than NHWC (NDHWC)
  int64_t batch = -1, c_in = -1, c_out = -1;
  int64_t groups = 1;  // depthwise: c_in groups of one input channel and c_out / c_in outputs
  // Per spatial dim: input and output sizes, window, stride, dilation, padding before/after.
  int64_t in[kMaxSpatial] = {}, out[kMaxSpatial] = {}, k[kMaxSpatial] = {};
  int64_t stride[kMaxSpatial] = {}, dil[kMaxSpatial] = {}, pad_lo[kMaxSpatial] = {}, pad_hi[kMaxSpatial] = {};

  // The dim index of batch, channel and spatial dim i in a tensor of this layout.
  int batch_dim() const { return 0; }
  int channel_dim() const { return channels_first ? 1 : sp + 1; }
  int spatial_dim(int i) const { return channels_first ? 2 + i : 1 + i; }
  // A tensor shape in this layout from its batch, channels and spatial sizes.
  Shape layout_shape(int64_t n, int64_t c, const int64_t* s) const;
  Shape input_shape() const { return layout_shape(batch, c_in, in); }
  Shape output_shape() const { return layout_shape(batch, c_out, out); }
};

// Conv2D's geometry from its input and filter shapes (HWIO filter) and attrs; raises TF's
// errors (rank, strides, dilations, padding, depths). Unknown dims give unknown outputs.
ConvGeom conv_geom(const OpCall& c, const Shape& input, const Shape& filter);
// The ops whose filter is depthwise ([h, w, channels, multiplier]: DepthwiseConv2dNative and
// its gradients) take this with `depthwise`.
bool is_depthwise(OpId op);
// MaxPool / AvgPool: ksize, strides, padding (and MaxPool's explicit_paddings).
ConvGeom pool_geom(const OpCall& c, const Shape& input);

// A fused convolution's fused_ops (FusedConv2D, FusedDepthwiseConv2dNative, FusedConv3D,
// FusedConv2DBackpropInput), in order, each taking the next input after the convolution's own:
// "BiasAdd" (first, a bias vector), "Add" (a residual of the output's shape), "MulChannel",
// "AddChannel", "SubChannel" (one value per output channel: a batch norm's scale and shift),
// and at most one activation, which takes no input ("Relu", "Elu", "Sigmoid", "Tanh",
// "LeakyRelu" with leakyrelu_alpha). Refuses other lists.
struct ConvPostOps {
  std::vector<std::string> ops;
  std::vector<int> input;  // per op: the input it reads, or -1
  int bias = -1;           // the bias input, or -1
  int residual = -1;       // the residual input, or -1
  double alpha = 0.2;
};
ConvPostOps conv_post_ops(const OpCall& c);

// The channel block of oneDNN's preferred blocked activation layout on this CPU (16 for
// nChw16c, 8 for nChw8c), or 0 where it prefers TF's NHWC: passes/conv_layout.cc keeps a
// chain of convolutions in it (kernels/conv_ops.cc asks oneDNN).
int64_t conv_blocked_block();

}  // namespace jf
