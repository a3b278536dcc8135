"""Every private TensorFlow access and every run-time patch of TF.

Outside this package no module imports TF's private modules
(tensorflow.python, tf_keras.src, ...) or reads a `_`-prefixed TF attribute
(tests/layering_test.py checks both). Each access is a small named function:
  tf_private      what the runners read or call (loss scaling, summary
                  writer init ops, Session callables, evaluation, Savers,
                  SavedModel builders, the coordination service, ...);
  facade_private  what the Estimator facade reads (export outputs, hook
                  configuration, timers, gfile, eager mode, FileWriter);
  tpu_rewrite     the TF1 graph pieces of a TPU inference graph;
  estimator_calls Estimator's calling conventions (fn_args, call_logit_fn).
The run-time patches, each active only inside its context or once its
install function is called:
  checkpoint_init   init_from_checkpoint recorded, applied when the runner
                    restores nothing (the tf2 runner);
  graph_collections per-thread graph collections of a model_fn call;
  iterator_capture  the TF1 iterator constructors of an input_fn;
  op_seeds          the op seeds of a model_fn's random ops;
  tf1_semantics     TF1 graph semantics for traced legacy model code;
  cpu_fallback      TPUClusterResolver (--cpu_fallback);
  v2_behavior       TF2 behaviour for one tf2-runner call of the facade;
  facade_private.replace_file_writer  TF's FileWriter (FakeSummaryWriter).
"""
