"""A Keras training under Horovod (MPI), for bench/horovod_keras.sh.

    horovod_keras.py [EPOCHS [WIDTH [BATCH [STEPS]]]]  (defaults 3, 1024, 64, all)

Each rank trains a 3-layer MLP (two hidden layers of WIDTH units: about
1.9 M float32 parameters at 1024, a 7.6 MB gradient per step, fused by
Horovod into MPI_Allreduces; 17.6 M, 70 MB, at 4096) on its own shard of a
fixed synthetic classification set, BATCH samples a step, at most STEPS
steps an epoch.  Prints one JSON
line (rank 0): training time, steps and samples per second, the loss before
and after, and whether every rank ends with bit-identical weights.  Exits
non-zero when the weights differ or the loss did not fall."""
import hashlib
import json
import sys
import time

import numpy as np
import tensorflow as tf
import horovod.tensorflow as hvd_tf
import horovod.tensorflow.keras as hvd

EPOCHS = int(sys.argv[1]) if len(sys.argv) > 1 else 3
WIDTH = int(sys.argv[2]) if len(sys.argv) > 2 else 1024
BATCH = int(sys.argv[3]) if len(sys.argv) > 3 else 64
STEPS = int(sys.argv[4]) if len(sys.argv) > 4 else 0
SAMPLES, FEATURES, CLASSES = 8192, 784, 10

hvd.init()
tf.config.threading.set_intra_op_parallelism_threads(1)
tf.config.threading.set_inter_op_parallelism_threads(1)

# the same data set on every rank (fixed seed), each rank taking its shard
rng = np.random.default_rng(2026)
centres = rng.normal(size=(CLASSES, FEATURES)).astype(np.float32)
labels = rng.integers(0, CLASSES, size=SAMPLES)
data = centres[labels] + rng.normal(scale=2.0, size=(SAMPLES, FEATURES)).astype(np.float32)
x, y = data[hvd.rank()::hvd.size()], labels[hvd.rank()::hvd.size()]
if STEPS > 0:
    x, y = x[:STEPS * BATCH], y[:STEPS * BATCH]

tf.random.set_seed(hvd.rank())   # different initial weights: the broadcast must fix them
model = tf.keras.Sequential([
    tf.keras.layers.Dense(WIDTH, activation="relu", input_shape=(FEATURES,)),
    tf.keras.layers.Dense(WIDTH, activation="relu"),
    tf.keras.layers.Dense(CLASSES),
])
optimizer = hvd.DistributedOptimizer(tf.keras.optimizers.SGD(0.01 * hvd.size()))
loss = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
model.compile(optimizer=optimizer, loss=loss)

callbacks = [hvd.callbacks.BroadcastGlobalVariablesCallback(0)]
model.fit(x[:BATCH], y[:BATCH], batch_size=BATCH, epochs=1, callbacks=callbacks, verbose=0)  # warm-up
before = float(hvd.allreduce(tf.constant(model.evaluate(x, y, verbose=0)), op=hvd.Average))
start = time.perf_counter()
model.fit(x, y, batch_size=BATCH, epochs=EPOCHS, verbose=0, shuffle=False)
seconds = time.perf_counter() - start
after = float(hvd.allreduce(tf.constant(model.evaluate(x, y, verbose=0)), op=hvd.Average))

weights = np.concatenate([w.numpy().ravel() for w in model.weights])
digests = hvd_tf.allgather_object(hashlib.sha256(weights.tobytes()).hexdigest())
identical = len(set(digests)) == 1
if hvd.rank() == 0:
    steps = EPOCHS * (len(x) // BATCH + (len(x) % BATCH > 0))
    print(json.dumps({"ranks": hvd.size(), "parameters": int(weights.size), "epochs": EPOCHS,
                      "batch": BATCH, "steps": steps, "seconds": round(seconds, 3),
                      "steps_per_s": round(steps / seconds, 2),
                      "samples_per_s": round(EPOCHS * len(x) * hvd.size() / seconds, 1),
                      "loss_before": round(before, 4), "loss_after": round(after, 4),
                      "identical_weights": identical}), flush=True)
sys.exit(0 if identical and after < before else 1)
