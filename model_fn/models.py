"""The built-in model_fns (trainer/models/builtin.py registers them under
the names --model knows them by)."""

from model_fn import classifier
from model_fn import mlp
from model_fn import resnet

mlp_model_fn = classifier.build_classifier_model_fn(mlp.mlp)
resnet_model_fn = classifier.build_classifier_model_fn(resnet.resnet)
