"""The model registry: the built-in models, one typed entry each
(builtin.py), and --model / --input names resolved to built-in or user
model_fn and input_fn modules (registry.py)."""
