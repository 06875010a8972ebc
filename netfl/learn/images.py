"""A data set of image files from the user's disk (``dataset: images``).

Two layouts under ``data.path``, each with a ``test/<class>/`` folder of held-out images:

* ``train/<class>/<image>``: one training set, split over clients by ``data.partition``;
* ``clients/<client>/<class>/<image>``: naturally federated data, one folder per client (sorted
  by name, as many as the world has clients), for ``partition: {kind: natural}``.

Class names are the folder names, sorted; labels are their indices. Every image is read with
Pillow, in one mode (grey if all are grey, else RGB) and one size, scaled to [0, 1], as
(N, C, H, W) float32.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from netfl.errors import CorruptDataFile
from netfl.learn.arrays import Dataset

IMAGE_SUFFIXES = {".png", ".jpg", ".jpeg", ".bmp", ".gif", ".tif", ".tiff", ".webp", ".ppm",
                  ".pgm"}


def load_images(root: Path, n_clients: int):
    """(Dataset, each client's training indices or None) from an image folder (see above).
    Raises CorruptDataFile naming the folder or file and what is wrong."""
    root = Path(root)
    test_dir, train_dir, clients_dir = root / "test", root / "train", root / "clients"
    if not test_dir.is_dir() or train_dir.is_dir() == clients_dir.is_dir():
        raise CorruptDataFile(f"{root}: expected test/ and exactly one of train/ or clients/ "
                              f"(one folder per class inside each)")
    sources = ([train_dir] if train_dir.is_dir()
               else sorted(p for p in clients_dir.iterdir() if p.is_dir()))
    if clients_dir.is_dir() and len(sources) != n_clients:
        raise CorruptDataFile(f"{clients_dir}: {len(sources)} client folders for a world of "
                              f"{n_clients} clients")
    classes = sorted({c.name for folder in (*sources, test_dir) for c in folder.iterdir()
                      if c.is_dir()})
    if len(classes) < 2:
        raise CorruptDataFile(f"{root}: found {len(classes)} class folders; at least 2 needed")
    files = [_listing(folder, classes) for folder in sources]
    test_files = _listing(test_dir, classes)
    everything = [f for part in files for f, _ in part] + [f for f, _ in test_files]
    mode = "L" if all(_mode(f) in ("L", "1") for f in everything) else "RGB"
    size = _size(everything[0])
    x = np.stack([_pixels(f, mode, size) for f in everything])
    y = np.array([label for part in files for _, label in part]
                 + [label for _, label in test_files], dtype=np.int64)
    n_train = sum(len(part) for part in files)
    natural = None
    if clients_dir.is_dir():
        bounds = np.cumsum([0] + [len(part) for part in files])
        natural = [np.arange(bounds[i], bounds[i + 1]) for i in range(len(files))]
    dataset = Dataset(root.name, x[:n_train], y[:n_train], x[n_train:], y[n_train:],
                      len(classes))
    return dataset, natural


def _listing(folder: Path, classes: list[str]) -> list[tuple[Path, int]]:
    """(image file, label) of every image under ``folder/<class>/``, in sorted order."""
    out = []
    for label, name in enumerate(classes):
        class_dir = folder / name
        if class_dir.is_dir():
            out += [(f, label) for f in sorted(class_dir.iterdir())
                    if f.suffix.lower() in IMAGE_SUFFIXES]
    if not out:
        raise CorruptDataFile(f"{folder}: no images in its class folders")
    return out


def _open(path: Path):
    from PIL import Image, UnidentifiedImageError

    try:
        return Image.open(path)
    except (UnidentifiedImageError, OSError) as exc:
        raise CorruptDataFile(f"{path}: not a readable image: {exc}") from None


def _mode(path: Path) -> str:
    with _open(path) as image:
        return image.mode


def _size(path: Path) -> tuple[int, int]:
    with _open(path) as image:
        return image.size


# 8-bit modes (grey, palette, colour, with or without alpha): 16-bit or float images would
# saturate when scaled by 255
MODES = {"1", "L", "LA", "P", "PA", "RGB", "RGBA"}


def _pixels(path: Path, mode: str, size: tuple[int, int]) -> np.ndarray:
    with _open(path) as image:
        if image.mode not in MODES:
            raise CorruptDataFile(f"{path}: image mode {image.mode} is not an 8-bit one "
                                  f"({', '.join(sorted(MODES))}): convert it to 8 bits")
        if image.size != size:
            raise CorruptDataFile(f"{path}: {image.size[0]}x{image.size[1]} pixels, but the "
                                  f"first image is {size[0]}x{size[1]}: resize them to one size")
        try:  # Pillow decodes lazily: a truncated file fails here
            array = np.asarray(image.convert(mode), dtype=np.float32) / 255.0
        except (OSError, ValueError) as exc:
            raise CorruptDataFile(f"{path}: not a readable image: {exc}") from None
    return array[None] if array.ndim == 2 else array.transpose(2, 0, 1)
