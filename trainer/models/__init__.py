"""The model registry: --model / --input names resolved to built-in or user
model_fn and input_fn modules."""
