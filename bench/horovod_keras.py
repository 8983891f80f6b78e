"""A small Keras training under Horovod (MPI), for bench/horovod_keras.sh.

Each rank trains a 3-layer MLP (about 1.9 M float32 parameters, so a
7.6 MB gradient per step, fused by Horovod into one MPI_Allreduce) on its
own shard of a fixed synthetic classification set.  Prints one JSON line
(rank 0): training time, samples per second, the loss before and after, and
whether every rank ends with bit-identical weights.  Exits non-zero when the
weights differ or the loss did not fall."""
import hashlib
import json
import sys
import time

import numpy as np
import tensorflow as tf
import horovod.tensorflow as hvd_tf
import horovod.tensorflow.keras as hvd

EPOCHS = int(sys.argv[1]) if len(sys.argv) > 1 else 3
SAMPLES, FEATURES, CLASSES, BATCH = 8192, 784, 10, 64

hvd.init()
tf.config.threading.set_intra_op_parallelism_threads(1)
tf.config.threading.set_inter_op_parallelism_threads(1)

# the same data set on every rank (fixed seed), each rank taking its shard
rng = np.random.default_rng(2026)
centres = rng.normal(size=(CLASSES, FEATURES)).astype(np.float32)
labels = rng.integers(0, CLASSES, size=SAMPLES)
data = centres[labels] + rng.normal(scale=2.0, size=(SAMPLES, FEATURES)).astype(np.float32)
x, y = data[hvd.rank()::hvd.size()], labels[hvd.rank()::hvd.size()]

tf.random.set_seed(hvd.rank())   # different initial weights: the broadcast must fix them
model = tf.keras.Sequential([
    tf.keras.layers.Dense(1024, activation="relu", input_shape=(FEATURES,)),
    tf.keras.layers.Dense(1024, activation="relu"),
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
                      "steps": steps, "seconds": round(seconds, 3),
                      "samples_per_s": round(EPOCHS * SAMPLES / seconds, 1),
                      "loss_before": round(before, 4), "loss_after": round(after, 4),
                      "identical_weights": identical}), flush=True)
sys.exit(0 if identical and after < before else 1)
