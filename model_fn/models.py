"""The built-in model_fns, by the name --model knows them by."""

from model_fn import classifier
from model_fn import mlp
from model_fn import resnet

mlp_model_fn = classifier.build_classifier_model_fn(mlp.mlp)
resnet_model_fn = classifier.build_classifier_model_fn(resnet.resnet)

MODEL_FNS = {
    'mlp': mlp_model_fn,
    'resnet': resnet_model_fn,
}
