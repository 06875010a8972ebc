"""Data set loaders: Fashion-MNIST, MNIST, EMNIST, CIFAR-10/100.

Every loader returns a :class:`netfl.learn.data.Dataset`. Image features are float32 of shape
(N, C, H, W), standardized per channel with the mean and (population) standard deviation of the
TRAINING split's raw 0-255 pixel values; the test split is standardized with those same training
statistics. Labels are int64 in 0..num_classes-1. No augmentation, resizing or shuffling is done.

Where files are looked for (``root`` is the scenario's ``data.root``; without one, the cache
directory ``~/.cache/netfl/datasets`` takes its place for the torchvision sets):

* Fashion-MNIST: ``root``, then Debian's ``/usr/share/datasets/fashion-mnist`` (package
  ``dataset-fashion-mnist``), then (without ``root``) the cache directory; for each directory also
  ``<dir>/raw`` and ``<dir>/FashionMNIST/raw`` (torchvision's layout). The four IDX files may be
  plain or gzip-compressed; they are read here (:func:`read_idx`), without torchvision.
* MNIST and EMNIST: the IDX files in ``root``, ``root/raw``, ``root/MNIST/raw`` (``EMNIST``),
  then torchvision's dataset class on ``root``.
* CIFAR-10/100: torchvision's dataset class on ``root`` (``root/cifar-10-batches-py``,
  ``root/cifar-100-python``).

torchvision downloads only when ``download`` is true and nothing was found; a failed download
(no internet) ends in :class:`~netfl.errors.DatasetNotFound`, whose message lists every place
searched and the ways to provide the data. A file that is there but unreadable raises
:class:`CorruptDataFile`, naming the file.
"""

from __future__ import annotations

import gzip
import math
import struct
import zlib
from pathlib import Path

import numpy as np

from netfl.errors import CorruptDataFile, DatasetNotFound
from netfl.learn.arrays import Dataset

DEBIAN_FASHION_MNIST = Path("/usr/share/datasets/fashion-mnist")
DEFAULT_CACHE_DIR = Path("~/.cache/netfl/datasets")

IDX_IMAGES_MAGIC = 0x00000803  # unsigned bytes, 3 dimensions (count, rows, columns)
IDX_LABELS_MAGIC = 0x00000801  # unsigned bytes, 1 dimension (count)
_IDX_DTYPES = {0x08: ">u1", 0x09: ">i1", 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}

MNIST_FILES = ("train-images-idx3-ubyte", "train-labels-idx1-ubyte",
               "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")
EMNIST_CLASSES = {"balanced": 47, "byclass": 62, "bymerge": 47, "digits": 10, "letters": 26,
                  "mnist": 10}
_TORCHVISION_CLASSES = {"mnist": "MNIST", "emnist": "EMNIST", "cifar10": "CIFAR10",
                        "cifar100": "CIFAR100"}


def default_cache_dir() -> Path:
    """``~/.cache/netfl/datasets``, expanded for the current user."""
    return DEFAULT_CACHE_DIR.expanduser()


# --- IDX files ------------------------------------------------------------------------------

def read_idx(path: Path | str, expected_magic: int | None = None) -> np.ndarray:
    """Read one IDX file (LeCun's MNIST format), gzip-compressed or plain, into a numpy array.

    The header is two zero bytes, a type byte (0x08 uint8, 0x09 int8, 0x0B int16, 0x0C int32,
    0x0D float32, 0x0E float64), a byte with the number of dimensions d, then d big-endian
    uint32 sizes; the values follow, big-endian, row-major. Compression is detected from the
    content (gzip's magic bytes), not the file name. ``expected_magic`` (for example
    :data:`IDX_IMAGES_MAGIC`) is checked before anything else is read. The result is a
    native-endian array of shape (size_1, ..., size_d).

    Raises:
        CorruptDataFile: unreadable gzip data, a wrong or unknown magic number, or a payload
            whose length does not match the sizes in the header. The message names the file.
    """
    path = Path(path)
    raw = path.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError, zlib.error) as exc:
            raise CorruptDataFile(f"{path}: not a readable gzip file ({exc})") from exc
    if len(raw) < 4:
        raise CorruptDataFile(f"{path}: {len(raw)} bytes, too short for an IDX header")
    magic = int.from_bytes(raw[:4], "big")
    if expected_magic is not None and magic != expected_magic:
        raise CorruptDataFile(
            f"{path}: magic number 0x{magic:08x}, expected 0x{expected_magic:08x} "
            f"({_describe_magic(expected_magic)}); the file is corrupt or not this kind of file")
    type_code, ndim = raw[2], raw[3]
    if raw[:2] != b"\0\0" or type_code not in _IDX_DTYPES or ndim == 0:
        raise CorruptDataFile(f"{path}: magic number 0x{magic:08x} is not an IDX header")
    header = 4 + 4 * ndim
    if len(raw) < header:
        raise CorruptDataFile(f"{path}: file ends inside the IDX header ({ndim} dimensions)")
    dims = struct.unpack(f">{ndim}I", raw[4:header])
    dtype = np.dtype(_IDX_DTYPES[type_code])
    expected = math.prod(dims) * dtype.itemsize
    if len(raw) - header != expected:
        raise CorruptDataFile(
            f"{path}: header says shape {dims} ({expected} bytes of values) but the file holds "
            f"{len(raw) - header} bytes after the header; it is truncated or corrupt")
    values = np.frombuffer(raw, dtype=dtype, offset=header).reshape(dims)
    return values.astype(dtype.newbyteorder("="))


def _describe_magic(magic: int) -> str:
    names = {0x08: "unsigned bytes", 0x09: "signed bytes", 0x0B: "int16", 0x0C: "int32",
             0x0D: "float32", 0x0E: "float64"}
    return f"{names.get((magic >> 8) & 0xFF, '?')}, {magic & 0xFF} dimensions"


def _find_files(dirs: list[Path], names: tuple[str, ...],
                searched: list[str]) -> dict[str, Path] | None:
    """The first directory holding every name (plain or ``.gz``); appends each miss to searched."""
    for directory in dirs:
        if not directory.is_dir():
            searched.append(f"{directory}: no such directory")
            continue
        found: dict[str, Path] = {}
        for name in names:
            for candidate in (directory / name, directory / f"{name}.gz"):
                if candidate.is_file():
                    found[name] = candidate
                    break
        if len(found) == len(names):
            return found
        missing = ", ".join(n for n in names if n not in found)
        searched.append(f"{directory}: missing {missing}")
    return None


def _layouts(directory: Path, torchvision_name: str) -> list[Path]:
    """A directory as given, its ``raw/`` and torchvision's ``<name>/raw/``."""
    return [directory, directory / "raw", directory / torchvision_name / "raw"]


def _read_image_set(images_path: Path, labels_path: Path, num_classes: int,
                    label_offset: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """One split: uint8 images (N, H, W) and int64 labels (N,), counts and labels checked."""
    images = read_idx(images_path, IDX_IMAGES_MAGIC)
    labels = read_idx(labels_path, IDX_LABELS_MAGIC).astype(np.int64) - label_offset
    if len(images) != len(labels):
        raise CorruptDataFile(f"{images_path} holds {len(images)} images but {labels_path} "
                              f"holds {len(labels)} labels; one of them is corrupt")
    if len(labels) and (labels.min() < 0 or labels.max() >= num_classes):
        raise CorruptDataFile(f"{labels_path}: labels span {labels.min() + label_offset}.."
                              f"{labels.max() + label_offset}, expected {num_classes} classes")
    return images, labels


def _idx_dataset(name: str, files: dict[str, Path], prefix: tuple[str, str, str, str],
                 num_classes: int, transpose: bool = False, label_offset: int = 0) -> Dataset:
    train_x, train_y = _read_image_set(files[prefix[0]], files[prefix[1]], num_classes,
                                       label_offset)
    test_x, test_y = _read_image_set(files[prefix[2]], files[prefix[3]], num_classes,
                                     label_offset)
    if transpose:
        train_x, test_x = train_x.transpose(0, 2, 1), test_x.transpose(0, 2, 1)
    train, test = _standardize(train_x[:, None], test_x[:, None])
    return Dataset(name, train, train_y, test, test_y, num_classes)


def _standardize(train: np.ndarray, test: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """uint8 (N, C, H, W) -> float32, x' = (x - mean_c) / std_c with the train split's stats.

    mean_c and std_c (population std) are exact, from a 256-bin histogram of channel c over
    the training images; a constant channel (std 0) is only centred.
    """
    if train.dtype != np.uint8 or test.dtype != np.uint8:
        raise TypeError(f"expected uint8 images, got {train.dtype} and {test.dtype}")
    values = np.arange(256, dtype=np.float64)
    channels = train.shape[1]
    mean, std = np.zeros(channels), np.ones(channels)
    for c in range(channels):
        counts = np.bincount(train[:, c].ravel(), minlength=256).astype(np.float64)
        total = counts.sum()
        if total == 0:
            continue
        mean[c] = counts @ values / total
        var = counts @ (values - mean[c]) ** 2 / total
        std[c] = math.sqrt(var) if var > 0 else 1.0
    shift = mean.astype(np.float32)[None, :, None, None]
    scale = std.astype(np.float32)[None, :, None, None]
    out = []
    for images in (train, test):
        x = images.astype(np.float32)
        x -= shift
        x /= scale
        out.append(x)
    return out[0], out[1]


# --- errors ---------------------------------------------------------------------------------

def _not_found(title: str, looked_for: str, searched: list[str], attempts: list[str],
               ways: list[str]) -> DatasetNotFound:
    lines = [f"{title} not found. Looked for {looked_for} in:"]
    lines += [f"  {entry}" for entry in searched]
    lines += [f"  {entry}" for entry in attempts]
    lines.append("To provide it, do one of:")
    lines += [f"  * {way}" for way in ways]
    return DatasetNotFound("\n".join(lines))


def _torchvision(class_name: str, root: Path, download: bool, **kwargs):
    """(train, test) torchvision dataset objects, or the error text of the failed attempt."""
    try:
        import torchvision.datasets as tv_datasets

        cls = getattr(tv_datasets, class_name)
        train = cls(str(root), train=True, download=download, **kwargs)
        test = cls(str(root), train=False, download=False, **kwargs)
    except Exception as exc:  # no torchvision, no network, missing or corrupt files alike
        text = " ".join(str(exc).split()) or "(no message)"
        return None, f"{type(exc).__name__}: {text}"
    return (train, test), None


# --- Fashion-MNIST --------------------------------------------------------------------------

def load_fashion_mnist(root: Path | None, download: bool) -> Dataset:
    """Fashion-MNIST ("Fashion-MNIST: a Novel Image Dataset for Benchmarking Machine Learning
    Algorithms", arXiv:1708.07747): 60,000 train and 10,000 test 28x28 grey images, 10 classes.

    Searches, in order: ``root`` (when given), :data:`DEBIAN_FASHION_MNIST`, and (when no root is
    given) the cache directory; in each, the directory itself, ``raw/`` and
    ``FashionMNIST/raw/``. The first directory holding all four IDX files (``train-images-
    idx3-ubyte``, ``train-labels-idx1-ubyte``, ``t10k-images-idx3-ubyte``,
    ``t10k-labels-idx1-ubyte``, each plain or ``.gz``) is read with :func:`read_idx`. Only where
    none does and ``download`` is true, torchvision downloads into ``root`` (or the cache
    directory) and the files it wrote are read the same way.

    Returns features float32 (N, 1, 28, 28) standardized with the training split's pixel mean
    and std (about 72.94 and 90.02 on the 0-255 scale), labels int64 0..9.

    Raises:
        DatasetNotFound: nothing found (and no download, or it failed); the message lists every
            directory searched and the ways to provide the files.
        CorruptDataFile: a file is found but corrupt (bad magic number, truncated, counts of
            images and labels differ, labels out of 0..9); the message names the file.
    """
    root = Path(root).expanduser() if root is not None else None
    dirs = _layouts(root, "FashionMNIST") if root is not None else []
    dirs += _layouts(DEBIAN_FASHION_MNIST, "FashionMNIST")
    if root is None:
        dirs += _layouts(default_cache_dir(), "FashionMNIST")
    searched: list[str] = []
    files = _find_files(dirs, MNIST_FILES, searched)
    attempts = []
    target = root if root is not None else default_cache_dir()
    if files is None and download:
        _, error = _torchvision("FashionMNIST", target, download=True)
        files = _find_files(_layouts(target, "FashionMNIST"), MNIST_FILES, [])
        if files is None:
            attempts.append(f"download with torchvision into {target / 'FashionMNIST' / 'raw'}: "
                            f"{error or 'no IDX files written'}")
    elif files is None:
        attempts.append("download: not attempted (data.download is false)")
    if files is None:
        raise _not_found(
            "Fashion-MNIST", ", ".join(MNIST_FILES) + " (each plain or .gz)", searched, attempts,
            ["apt-get install dataset-fashion-mnist (installs the files in "
             f"{DEBIAN_FASHION_MNIST})",
             "data.root: DIR in the scenario, DIR holding the four IDX files above",
             "data.download: true on a machine with internet (torchvision fetches them into "
             f"data.root or {DEFAULT_CACHE_DIR})"])
    return _idx_dataset("fashion-mnist", files, MNIST_FILES, 10)


# --- torchvision sets -----------------------------------------------------------------------

def load_torchvision(name: str, root: Path | None, download: bool,
                     emnist_split: str = "balanced") -> Dataset:
    """MNIST, EMNIST, CIFAR-10 or CIFAR-100, from ``root`` (default: the cache directory).

    * ``mnist`` ("Gradient-Based Learning Applied to Document Recognition", Proceedings of the
      IEEE 1998): 60,000/10,000 28x28 grey digits, 10 classes. The four IDX files (as for
      Fashion-MNIST, plain or ``.gz``) are read with :func:`read_idx` from ``root``,
      ``root/raw`` or ``root/MNIST/raw`` without torchvision; failing that,
      ``torchvision.datasets.MNIST``.
    * ``emnist`` ("EMNIST: an extension of MNIST to handwritten letters", IJCNN 2017), split
      ``emnist_split`` (see :data:`EMNIST_CLASSES`): 28x28 grey characters. The IDX files
      ``emnist-<split>-{train,test}-{images-idx3,labels-idx1}-ubyte`` are looked for the same
      way (``root/EMNIST/raw``), then ``torchvision.datasets.EMNIST``. The raw EMNIST files
      store every image transposed (columns first) and torchvision returns them as stored; here
      each image is transposed back (axes H and W swapped) so that characters are upright like
      MNIST's. The ``letters`` split labels 1..26 in the files; they are shifted to 0..25 (26
      classes).
    * ``cifar10`` / ``cifar100`` ("Learning Multiple Layers of Features from Tiny Images",
      technical report, University of Toronto 2009): 50,000/10,000 32x32 colour images, 10 or
      100 (fine) classes, via torchvision (``root/cifar-10-batches-py``,
      ``root/cifar-100-python``); features (N, 3, 32, 32).

    torchvision downloads only when ``download`` is true. Features are float32 (N, C, H, W),
    standardized per channel with the training split's mean and std; labels int64.

    Raises:
        ValueError: an unknown ``name`` or ``emnist_split``.
        DatasetNotFound: nothing found (and no download, or it failed); the message lists
            every place searched and the ways to provide the data.
        CorruptDataFile: an IDX file is found but corrupt; the message names it.
    """
    key = name.lower()
    if key not in _TORCHVISION_CLASSES:
        raise ValueError(f"unknown torchvision data set {name!r}; valid: "
                         f"{', '.join(_TORCHVISION_CLASSES)}")
    if key == "emnist" and emnist_split not in EMNIST_CLASSES:
        raise ValueError(f"unknown EMNIST split {emnist_split!r}; valid: "
                         f"{', '.join(EMNIST_CLASSES)}")
    class_name = _TORCHVISION_CLASSES[key]
    base = Path(root).expanduser() if root is not None else default_cache_dir()
    searched: list[str] = []
    if key in ("mnist", "emnist"):
        if key == "mnist":
            names, num_classes, offset, title = MNIST_FILES, 10, 0, "mnist"
        else:
            stem = f"emnist-{emnist_split}"
            names = tuple(f"{stem}-{split}-{kind}-ubyte" for split in ("train", "test")
                          for kind in ("images-idx3", "labels-idx1"))
            num_classes = EMNIST_CLASSES[emnist_split]
            offset = 1 if emnist_split == "letters" else 0
            title = f"emnist-{emnist_split}"
        files = _find_files(_layouts(base, class_name), names, searched)
        if files is not None:
            return _idx_dataset(title, files, names, num_classes, transpose=key == "emnist",
                                label_offset=offset)
    kwargs = {"split": emnist_split} if key == "emnist" else {}
    splits, error = _torchvision(class_name, base, download, **kwargs)
    if splits is None:
        folder = {"mnist": "MNIST/raw", "emnist": "EMNIST/raw", "cifar10": "cifar-10-batches-py",
                  "cifar100": "cifar-100-python"}[key]
        how = "download failed" if download else "no download (data.download is false)"
        attempt = f"{base / folder}: torchvision.datasets.{class_name}, {how}: {error}"
        looked_for = (", ".join(names) + " (each plain or .gz)" if key in ("mnist", "emnist")
                      else f"torchvision's {folder}/ (python pickles)")
        provide = ("the four IDX files above" if key in ("mnist", "emnist")
                   else f"{folder}/ as extracted from the official python archive")
        raise _not_found(
            name, looked_for, searched, [attempt],
            [f"data.root: DIR in the scenario, DIR holding {provide}",
             "data.download: true on a machine with internet (torchvision fetches it into "
             f"data.root or {DEFAULT_CACHE_DIR})"])
    return _from_torchvision(key, splits, emnist_split)


def _from_torchvision(key: str, splits, emnist_split: str) -> Dataset:
    train, test = splits
    if key in ("cifar10", "cifar100"):
        xs = [np.asarray(s.data).transpose(0, 3, 1, 2) for s in (train, test)]  # NHWC -> NCHW
        ys = [np.asarray(s.targets, dtype=np.int64) for s in (train, test)]
        name, num_classes = key, 10 if key == "cifar10" else 100
    else:
        xs = [s.data.numpy()[:, None] for s in (train, test)]
        ys = [s.targets.numpy().astype(np.int64) for s in (train, test)]
        name, num_classes = key, 10
        if key == "emnist":
            xs = [x.transpose(0, 1, 3, 2) for x in xs]  # stored transposed; make upright
            name, num_classes = f"emnist-{emnist_split}", EMNIST_CLASSES[emnist_split]
            if emnist_split == "letters":
                ys = [y - 1 for y in ys]
    train_x, test_x = _standardize(np.ascontiguousarray(xs[0]), np.ascontiguousarray(xs[1]))
    return Dataset(name, train_x, ys[0], test_x, ys[1], num_classes)
