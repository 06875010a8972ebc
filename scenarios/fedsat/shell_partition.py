"""Write by-shell.json: Fashion-MNIST's training set split as the WCL paper's non-i.i.d. runs
split theirs ("half of the available classes are distributed to the 500km orbital shell and the
other half to that at 2000 km"): classes 0-4 to the five 500 km satellites (clients 0-4, the
TLE file's first five), classes 5-9 to the five 2000 km ones, each class's samples dealt in
turn to its shell's satellites (6,000 each). Run from this folder: python shell_partition.py
"""

import json

import numpy as np

from netfl.learn.datasets import load_fashion_mnist

labels = np.asarray(load_fashion_mnist(None, download=False).train_y)
clients: dict[str, list[int]] = {str(k): [] for k in range(10)}
for shell, classes in ((range(0, 5), range(0, 5)), (range(5, 10), range(5, 10))):
    samples = np.flatnonzero(np.isin(labels, list(classes)))
    for i, sample in enumerate(samples):
        clients[str(list(shell)[i % 5])].append(int(sample))
with open("by-shell.json", "w", encoding="utf-8") as out:
    json.dump(clients, out, separators=(",", ":"))
