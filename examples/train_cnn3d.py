"""Train a small 3-D CNN to tell spheres, cubes and tori apart, entirely through Session.run.

The data set is generated here: 16^3 occupancy grids of randomly sized, placed and oriented
shapes plus Gaussian noise. The model is three Conv3D+BiasAdd+Relu layers (the last two
with stride 2) and a dense layer; gp.gradients builds the backward graph
(Conv3DBackpropInputV2 / Conv3DBackpropFilterV2 nodes) and gp.train.AdamOptimizer the
updates. Each batch is shown under a random symmetry of the cube (data augmentation).

    python examples/train_cnn3d.py            # full run (>= 90% test accuracy)
    python examples/train_cnn3d.py --quick    # a smaller, faster run
"""

import argparse
import sys
import time

import numpy as np

import graphops as gp

GRID = 16
CLASSES = ("sphere", "cube", "torus")


# ----------------------------------------------------------------------------- data

def _random_rotation(rng):
    """A uniformly random 3-D rotation matrix (QR of a Gaussian matrix)."""
    q, r = np.linalg.qr(rng.normal(size=(3, 3)))
    return q * np.sign(np.diag(r))


def make_shape(kind, rng, noise=0.25):
    """One [GRID, GRID, GRID] float32 grid holding a random shape of class `kind`."""
    axis = np.arange(GRID) + 0.5
    points = np.stack(np.meshgrid(axis, axis, axis, indexing="ij"), axis=-1)
    center = rng.uniform(7.0, GRID - 7.0, size=3)
    local = (points - center) @ _random_rotation(rng)
    if kind == "sphere":
        solid = np.linalg.norm(local, axis=-1) <= rng.uniform(4.0, 6.0)
    elif kind == "cube":
        solid = np.abs(local).max(axis=-1) <= rng.uniform(3.5, 5.0)
    else:
        major, minor = rng.uniform(4.0, 5.5), rng.uniform(1.5, 2.2)
        ring = np.hypot(local[..., 0], local[..., 1]) - major
        solid = ring ** 2 + local[..., 2] ** 2 <= minor ** 2
    grid = solid.astype(np.float32) + rng.normal(0.0, noise, size=solid.shape)
    return grid.astype(np.float32)


def augment(voxels, rng):
    """The batch under one random symmetry of the cube (axis permutation and flips): the
    classes do not change, so the model sees new examples every epoch."""
    perm = list(1 + rng.permutation(3))
    voxels = voxels.transpose([0] + perm + [4])
    flips = [axis for axis in (1, 2, 3) if rng.random() < 0.5]
    return np.ascontiguousarray(np.flip(voxels, flips) if flips else voxels)


def make_dataset(count, rng):
    """(voxels [count, GRID, GRID, GRID, 1], labels [count]) with balanced classes."""
    labels = np.arange(count) % len(CLASSES)
    rng.shuffle(labels)
    voxels = np.stack([make_shape(CLASSES[k], rng) for k in labels])[..., None]
    return voxels, labels.astype(np.int64)


# ----------------------------------------------------------------------------- model

def _he(rng, shape, fan_in):
    return (rng.normal(size=shape) * np.sqrt(2.0 / fan_in)).astype(np.float32)


LAYERS = (("conv1", 1, 8, 1), ("conv2", 8, 16, 2), ("conv3", 16, 16, 2))   # name, in, out, stride


def build_model(rng, learning_rate):
    """Placeholders, logits, loss, accuracy and the training op of the 3-D CNN."""
    x = gp.placeholder(gp.float32, [None, GRID, GRID, GRID, 1], name="voxels")
    y = gp.placeholder(gp.int64, [None], name="labels")
    h = x
    for name, c_in, c_out, stride in LAYERS:
        with gp.name_scope(name):
            w = gp.Variable(_he(rng, (3, 3, 3, c_in, c_out), 27 * c_in), name="kernel")
            b = gp.Variable(np.zeros(c_out, np.float32), name="bias")
            h = gp.nn.conv3d(h, w, strides=[1, stride, stride, stride, 1], padding="SAME")
            h = gp.raw_ops.Relu(features=gp.raw_ops.BiasAdd(value=h, bias=b))
    flat_size = (GRID // 4) ** 3 * LAYERS[-1][2]
    with gp.name_scope("dense"):
        w = gp.Variable(_he(rng, (flat_size, len(CLASSES)), flat_size), name="kernel")
        b = gp.Variable(np.zeros(len(CLASSES), np.float32), name="bias")
        flat = gp.raw_ops.Reshape(tensor=h, shape=np.int32([-1, flat_size]))
        logits = gp.raw_ops.BiasAdd(value=gp.raw_ops.MatMul(a=flat, b=w), bias=b)
    loss = gp.reduce_mean(gp.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
    correct = gp.equal(gp.argmax(logits, axis=1), y)
    accuracy = gp.reduce_mean(gp.cast(correct, gp.float32))
    train_op = gp.train.AdamOptimizer(learning_rate).minimize(loss)
    return x, y, loss, accuracy, train_op


# ----------------------------------------------------------------------------- training

def progress(epoch, epochs, done, total, loss, start, width=30):
    filled = width * done // total
    bar = "#" * filled + "." * (width - filled)
    sys.stdout.write(f"\repoch {epoch:2d}/{epochs} [{bar}] {done:4d}/{total} "
                     f"loss {loss:.4f}  {time.time() - start:5.1f}s")
    sys.stdout.flush()


def evaluate(sess, fetches, x, y, voxels, labels, batch):
    """Mean loss and accuracy over a data set, batch by batch."""
    totals = np.zeros(2)
    for i in range(0, len(labels), batch):
        values = sess.run(fetches, {x: voxels[i:i + batch], y: labels[i:i + batch]})
        totals += np.array(values) * len(labels[i:i + batch])
    return totals / len(labels)


def save_plot(history, path):
    """A PNG of the loss curves, when matplotlib is installed."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no plot")
        return
    epochs = np.arange(1, len(history) + 1)
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(epochs, [h[0] for h in history], label="train loss")
    ax.plot(epochs, [h[2] for h in history], label="test loss")
    ax.set_xlabel("epoch")
    ax.set_ylabel("cross-entropy")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    print(f"loss curve saved to {path}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=None, help="epochs (default 8, quick 3)")
    parser.add_argument("--quick", action="store_true", help="smaller data set, fewer epochs")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--plot", default="train_cnn3d_loss.png", help="PNG path ('' = none)")
    args = parser.parse_args(argv)
    epochs = args.epochs or (3 if args.quick else 8)
    train_count, test_count = (150, 60) if args.quick else (900, 300)

    rng = np.random.default_rng(args.seed)
    start = time.time()
    train_x, train_y = make_dataset(train_count, rng)
    test_x, test_y = make_dataset(test_count, rng)
    print(f"data: {train_count} training and {test_count} test grids of {GRID}^3 "
          f"({time.time() - start:.1f}s)")

    graph = gp.Graph()
    with graph.as_default():
        x, y, loss, accuracy, train_op = build_model(rng, args.lr)
        init = gp.global_variables_initializer()
    graph.finalize()

    history = []
    with gp.Session(graph=graph) as sess:
        sess.run(init)
        step = sess.make_callable([loss, train_op], [x, y])
        for epoch in range(1, epochs + 1):
            start = time.time()
            order = rng.permutation(train_count)
            losses = []
            for i in range(0, train_count, args.batch):
                batch = order[i:i + args.batch]
                losses.append(step(augment(train_x[batch], rng), train_y[batch])[0])
                progress(epoch, epochs, min(i + args.batch, train_count), train_count,
                         float(np.mean(losses)), start)
            test_loss, test_acc = evaluate(sess, [loss, accuracy], x, y, test_x, test_y,
                                           args.batch)
            _, train_acc = evaluate(sess, [loss, accuracy], x, y, train_x, train_y, args.batch)
            history.append((float(np.mean(losses)), train_acc, test_loss, test_acc))
            print(f"  train acc {train_acc:.3f}  test loss {test_loss:.4f}  "
                  f"test acc {test_acc:.3f}")
    if args.plot:
        save_plot(history, args.plot)
    return history


if __name__ == "__main__":
    main()
