"""What the benchmark offers, by name and without TensorFlow, so that its --help lists
them where TensorFlow is not installed: the Horovod variants it also reports, its models
(`models` has them) and their data."""

# Options the benchmark also reports for Horovod; none is a default (they change the math
# or its precision).
HOROVOD_VARIANTS = {
    "fp16": ("--hvd_compression=fp16",),
    "accumulate2": ("--backward_passes_per_step=2",),
}
MODELS = ("mnist_cnn", "mnist_dnn", "resnet20")
DATA = ("synthetic", "digits")
