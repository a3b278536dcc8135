"""What runs the facade's Estimator calls: the graph engine (graph/, one
device, as Estimator) and the tf2 runner under tf.distribute
(distributed/)."""
