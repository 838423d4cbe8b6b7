"""A small ResNet for 32x32 images (ResNet-20 of He et al., 2016, section 4.2).

  python -m model_zoo.resnet --model_dir=/tmp/resnet [--strategy=...] [--resnet_blocks=3]

Three stages of `resnet_blocks` basic blocks (16, 32, 64 filters; 6n+2 layers), batch
normalization, global average pooling, 10 logits. On scikit-learn's digits the images
are upsampled to 32x32.
"""

import tensorflow as tf
from absl import flags

import estimator_dist as ed
from model_zoo import data
from model_zoo import heads

IMAGE_SIZE = 32
flags.DEFINE_integer("resnet_blocks", 3, "Basic blocks per stage (3: ResNet-20).", lower_bound=1)


def _batch_norm(net, training):
  return tf.compat.v1.layers.batch_normalization(net, momentum=0.9, epsilon=1e-5,
                                                 training=training)


def _block(net, filters, stride, training):
  layers = tf.compat.v1.layers
  shortcut = net
  if stride != 1 or net.shape[-1] != filters:
    shortcut = layers.conv2d(net, filters, 1, strides=stride, use_bias=False)
    shortcut = _batch_norm(shortcut, training)
  net = layers.conv2d(net, filters, 3, strides=stride, padding="same", use_bias=False)
  net = tf.nn.relu(_batch_norm(net, training))
  net = layers.conv2d(net, filters, 3, padding="same", use_bias=False)
  return tf.nn.relu(_batch_norm(net, training) + shortcut)


def logits(features, mode, params):
  """ResNet-(6n+2) logits of [batch, 32, 32] or [batch, 32, 32, channels] images."""
  training = mode == tf.estimator.ModeKeys.TRAIN
  net = features if features.shape.ndims == 4 else features[..., tf.newaxis]
  net = tf.compat.v1.layers.conv2d(net, 16, 3, padding="same", use_bias=False)
  net = tf.nn.relu(_batch_norm(net, training))
  for stage, filters in enumerate((16, 32, 64)):
    for block in range(params.get("resnet_blocks", 3)):
      net = _block(net, filters, 2 if stage and not block else 1, training)
  net = tf.reduce_mean(net, axis=[1, 2])
  return tf.compat.v1.layers.dense(net, 10)


model_fn = heads.classifier_model_fn(logits)


input_fn = data.digits_input_fn(image_size=IMAGE_SIZE)


def main(_):
  data.train_from_flags(model_fn, image_size=IMAGE_SIZE, resnet_blocks=flags.FLAGS.resnet_blocks)


if __name__ == "__main__":
  ed.define_flags(batch_size=64, learning_rate=0.05, train_steps=500)
  data.define_flags()
  ed.run_program(main)
