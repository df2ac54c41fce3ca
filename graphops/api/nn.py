"""TF's ``tf.nn`` / ``tf.compat.v1.nn`` wrappers, built on ``graphops.raw_ops``: the
namespace ``gp.nn``, gathering the modules that hold them by purpose.

Same names, signatures, defaults and argument handling as TF1's wrappers (padding given
as a list of [before, after] pairs becomes ``padding="EXPLICIT"``; ``conv2d`` broadcasts
1- or 2-element strides/dilations). They work in graph and eager mode alike, since
``raw_ops`` does.

    nn_args           the shared argument conventions (explicit padding, strides lists,
                      deprecated spellings)
    nn_conv           convolutions and their backprops
    nn_activations    relu & co., softmax, log_softmax, bias_add
    nn_losses         the softmax cross-entropy losses
    nn_normalization  batch norm, moments, local response normalisation
    nn_pooling        pooling, space_to_depth / depth_to_space
    random_ops        dropout
"""

from graphops.api.nn_activations import (  # noqa: F401
    bias_add, elu, leaky_relu, log_softmax, relu, relu6, selu, softmax, softplus, softsign)
from graphops.api.nn_args import convert_padding, deprecated_argument_lookup  # noqa: F401
from graphops.api.nn_conv import (  # noqa: F401
    conv2d, conv2d_backprop_filter, conv2d_backprop_input, conv3d, conv3d_backprop_filter,
    conv3d_backprop_filter_v2, conv3d_backprop_input_v2, convolution,
    depthwise_conv2d_backprop_filter, depthwise_conv2d_backprop_input, depthwise_conv2d_native,
    depthwise_conv2d_native_backprop_filter, depthwise_conv2d_native_backprop_input)
from graphops.api.nn_losses import (  # noqa: F401
    softmax_cross_entropy_with_logits, softmax_cross_entropy_with_logits_v2,
    sparse_softmax_cross_entropy_with_logits)
from graphops.api.nn_normalization import (  # noqa: F401
    batch_normalization, fused_batch_norm, local_response_normalization, lrn, moments)
from graphops.api.nn_pooling import (  # noqa: F401
    avg_pool, avg_pool2d, avg_pool3d, depth_to_space, max_pool, max_pool2d, max_pool3d,
    max_pool_with_argmax, space_to_depth)
from graphops.api.random_ops import dropout  # noqa: F401  (tf.nn.dropout)
