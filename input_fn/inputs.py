"""The built-in input_fns, by the name --input knows them by."""

from input_fn import synthetic
from input_fn import tfrecord

INPUT_FNS = {
    'tfrecord': tfrecord.input_fn,
    'synthetic': synthetic.input_fn,
}
