"""Data set loaders: IDX reading, the not-found contract, Fashion-MNIST, Synthetic(alpha, beta).

No test downloads anything: every loader call passes download=False.
"""

from __future__ import annotations

import gzip
import struct
from pathlib import Path

import numpy as np
import pytest

from netfl.errors import DatasetNotFound, NetflError
from netfl.learn import datasets
from netfl.learn.datasets import (
    IDX_IMAGES_MAGIC,
    IDX_LABELS_MAGIC,
    MNIST_FILES,
    CorruptDataFile,
    load_fashion_mnist,
    load_torchvision,
    read_idx,
)
from tests.conftest import needs_fashion_mnist


def idx_bytes(array: np.ndarray, type_code: int) -> bytes:
    """An IDX file's bytes, written independently of the reader: header, then big-endian data."""
    big = {0x08: ">u1", 0x09: ">i1", 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}
    header = bytes([0, 0, type_code, array.ndim]) + struct.pack(f">{array.ndim}I", *array.shape)
    return header + array.astype(big[type_code]).tobytes()


def write(path: Path, data: bytes, compress: bool) -> Path:
    if compress:
        path = path.with_name(path.name + ".gz")
        path.write_bytes(gzip.compress(data))
    else:
        path.write_bytes(data)
    return path


def write_mnist_like(directory: Path, rng: np.random.Generator, n_train: int = 12,
                     n_test: int = 5, compress: bool = True) -> dict[str, np.ndarray]:
    """Four tiny 28x28 IDX files named like (Fashion-)MNIST's; returns what was written."""
    directory.mkdir(parents=True, exist_ok=True)
    arrays = {
        MNIST_FILES[0]: rng.integers(0, 256, (n_train, 28, 28), dtype=np.uint8),
        MNIST_FILES[1]: rng.integers(0, 10, n_train).astype(np.uint8),
        MNIST_FILES[2]: rng.integers(0, 256, (n_test, 28, 28), dtype=np.uint8),
        MNIST_FILES[3]: rng.integers(0, 10, n_test).astype(np.uint8),
    }
    for name, array in arrays.items():
        write(directory / name, idx_bytes(array, 0x08), compress)
    return arrays


# --- IDX --------------------------------------------------------------------------------------

@pytest.mark.parametrize("compress", [False, True])
@pytest.mark.parametrize("type_code, values", [
    (0x08, np.arange(24, dtype=np.uint8).reshape(2, 3, 4)),
    (0x08, np.array([0, 9, 255], dtype=np.uint8)),
    (0x09, np.array([[-128, 0], [5, 127]], dtype=np.int8)),
    (0x0B, np.array([-30000, 1, 30000], dtype=np.int16)),
    (0x0C, np.array([[-(2**31), 7], [2**31 - 1, 0]], dtype=np.int32)),
    (0x0D, np.array([1.5, -2.25, 3e7], dtype=np.float32)),
    (0x0E, np.array([[np.pi], [-1e300]], dtype=np.float64)),
])
def test_idx_round_trip_is_exact(tmp_path, compress, type_code, values):
    path = write(tmp_path / "data-idx", idx_bytes(values, type_code), compress)
    read = read_idx(path)
    assert read.shape == values.shape
    assert read.dtype == values.dtype and read.dtype.isnative
    np.testing.assert_array_equal(read, values)


def test_idx_expected_magic_accepts_images_and_labels(tmp_path):
    images = np.arange(2 * 3 * 3, dtype=np.uint8).reshape(2, 3, 3)
    labels = np.array([1, 0], dtype=np.uint8)
    ipath = write(tmp_path / "i", idx_bytes(images, 0x08), compress=False)
    lpath = write(tmp_path / "l", idx_bytes(labels, 0x08), compress=True)
    np.testing.assert_array_equal(read_idx(ipath, IDX_IMAGES_MAGIC), images)
    np.testing.assert_array_equal(read_idx(lpath, IDX_LABELS_MAGIC), labels)


def test_corrupt_magic_number_names_the_file(tmp_path):
    data = bytearray(idx_bytes(np.zeros((2, 28, 28), np.uint8), 0x08))
    data[0] = 0x42
    path = write(tmp_path / "train-images-idx3-ubyte", bytes(data), compress=True)
    with pytest.raises(CorruptDataFile) as info:
        read_idx(path)
    assert str(path) in str(info.value) and "magic number" in str(info.value)
    # Images where labels are expected: a clear error naming the file and both magic numbers.
    good = write(tmp_path / "labels", idx_bytes(np.zeros((2, 28, 28), np.uint8), 0x08), False)
    with pytest.raises(CorruptDataFile, match="0x00000803, expected 0x00000801") as info:
        read_idx(good, IDX_LABELS_MAGIC)
    assert str(good) in str(info.value)
    assert isinstance(info.value, NetflError)


def test_truncated_and_bad_gzip_files_name_the_file(tmp_path):
    data = idx_bytes(np.ones((3, 28, 28), np.uint8), 0x08)
    short = write(tmp_path / "short", data[:-10], compress=False)
    with pytest.raises(CorruptDataFile, match="truncated or corrupt") as info:
        read_idx(short)
    assert str(short) in str(info.value)
    broken = tmp_path / "broken.gz"
    broken.write_bytes(gzip.compress(data)[:40])
    with pytest.raises(CorruptDataFile, match="gzip") as info:
        read_idx(broken)
    assert str(broken) in str(info.value)


def test_image_and_label_counts_must_agree(tmp_path, monkeypatch):
    monkeypatch.setattr(datasets, "DEBIAN_FASHION_MNIST", tmp_path / "absent")
    write_mnist_like(tmp_path / "root", np.random.default_rng(0))
    labels = tmp_path / "root" / (MNIST_FILES[3] + ".gz")
    labels.write_bytes(gzip.compress(idx_bytes(np.zeros(4, np.uint8), 0x08)))
    with pytest.raises(CorruptDataFile, match="5 images but") as info:
        load_fashion_mnist(tmp_path / "root", download=False)
    assert str(labels) in str(info.value)


# --- locating files ---------------------------------------------------------------------------

@pytest.mark.parametrize("layout", ["", "raw", "FashionMNIST/raw"])
@pytest.mark.parametrize("compress", [False, True])
def test_fashion_mnist_from_a_given_root(tmp_path, monkeypatch, layout, compress):
    monkeypatch.setattr(datasets, "DEBIAN_FASHION_MNIST", tmp_path / "absent")
    written = write_mnist_like(tmp_path / "root" / layout, np.random.default_rng(1),
                               compress=compress)
    data = load_fashion_mnist(tmp_path / "root", download=False)
    train_raw = written[MNIST_FILES[0]].astype(np.float64)
    mean, std = train_raw.mean(), train_raw.std()
    assert data.train_x.shape == (12, 1, 28, 28) and data.test_x.shape == (5, 1, 28, 28)
    assert data.train_x.dtype == np.float32 and data.train_y.dtype == np.int64
    np.testing.assert_allclose(data.train_x[:, 0], (train_raw - mean) / std, atol=1e-5)
    np.testing.assert_allclose(data.test_x[:, 0], (written[MNIST_FILES[2]] - mean) / std,
                               atol=1e-5)
    np.testing.assert_array_equal(data.train_y, written[MNIST_FILES[1]])
    np.testing.assert_array_equal(data.test_y, written[MNIST_FILES[3]])
    assert data.num_classes == 10


def test_missing_fashion_mnist_lists_every_place_and_every_way(tmp_path, monkeypatch):
    debian = tmp_path / "no-debian" / "fashion-mnist"
    root = tmp_path / "no-root"
    monkeypatch.setattr(datasets, "DEBIAN_FASHION_MNIST", debian)
    with pytest.raises(DatasetNotFound) as info:
        load_fashion_mnist(root, download=False)
    message = str(info.value)
    searched = [root, root / "raw", root / "FashionMNIST" / "raw",
                debian, debian / "raw", debian / "FashionMNIST" / "raw"]
    lines = message.splitlines()
    for place in searched:
        assert any(line.strip().startswith(f"{place}:") for line in lines), place
    for name in MNIST_FILES:
        assert name in message
    assert "apt-get install dataset-fashion-mnist" in message
    assert "data.root: DIR" in message
    assert "data.download: true" in message
    assert "not attempted" in message


def test_a_partial_directory_is_reported_with_what_it_lacks(tmp_path, monkeypatch):
    monkeypatch.setattr(datasets, "DEBIAN_FASHION_MNIST", tmp_path / "absent")
    write_mnist_like(tmp_path / "root", np.random.default_rng(2))
    (tmp_path / "root" / (MNIST_FILES[2] + ".gz")).unlink()
    with pytest.raises(DatasetNotFound, match=f"missing {MNIST_FILES[2]}"):
        load_fashion_mnist(tmp_path / "root", download=False)


def test_mnist_reads_a_root_of_idx_files(tmp_path):
    written = write_mnist_like(tmp_path / "MNIST" / "raw", np.random.default_rng(3),
                               compress=False)
    data = load_torchvision("mnist", tmp_path, download=False)
    assert data.name == "mnist" and data.train_x.shape == (12, 1, 28, 28)
    np.testing.assert_array_equal(data.test_y, written[MNIST_FILES[3]])


def test_emnist_images_are_made_upright_and_letters_start_at_zero(tmp_path):
    images = np.zeros((2, 28, 28), np.uint8)
    images[:, 2, 5] = 255  # as stored in the file: row 2, column 5 ...
    labels = np.array([1, 26], np.uint8)  # letters: 1..26 in the files
    stem = tmp_path / "EMNIST" / "raw"
    stem.mkdir(parents=True)
    for split in ("train", "test"):
        write(stem / f"emnist-letters-{split}-images-idx3-ubyte", idx_bytes(images, 8), True)
        write(stem / f"emnist-letters-{split}-labels-idx1-ubyte", idx_bytes(labels, 8), True)
    data = load_torchvision("emnist", tmp_path, download=False, emnist_split="letters")
    assert data.name == "emnist-letters" and data.num_classes == 26
    bright = np.argwhere(data.train_x[0, 0] == data.train_x[0, 0].max())
    np.testing.assert_array_equal(bright, [[5, 2]])  # ... is row 5, column 2 upright
    np.testing.assert_array_equal(data.train_y, [0, 25])


def test_missing_torchvision_sets_say_what_was_tried(tmp_path):
    with pytest.raises(DatasetNotFound) as info:
        load_torchvision("mnist", tmp_path / "none", download=False)
    message = str(info.value)
    for place in (tmp_path / "none", tmp_path / "none" / "raw",
                  tmp_path / "none" / "MNIST" / "raw"):
        assert f"{place}:" in message
    assert "torchvision.datasets.MNIST" in message
    assert "data.root: DIR" in message and "data.download: true" in message
    with pytest.raises(DatasetNotFound, match="cifar-10-batches-py") as info:
        load_torchvision("cifar10", tmp_path / "none", download=False)
    assert "data.download: true" in str(info.value)


def test_unknown_names_are_rejected():
    with pytest.raises(ValueError, match="cifar100"):
        load_torchvision("imagenet", None, download=False)
    with pytest.raises(ValueError, match="balanced"):
        load_torchvision("emnist", None, download=False, emnist_split="words")


@needs_fashion_mnist
@pytest.mark.skipif(not (datasets.DEBIAN_FASHION_MNIST / "train-images-idx3-ubyte.gz").is_file(),
                    reason="Debian's dataset-fashion-mnist is not installed "
                           "(/usr/share/datasets/fashion-mnist absent)")
def test_fashion_mnist_from_the_debian_package():
    data = load_fashion_mnist(None, download=False)
    assert data.train_x.shape == (60000, 1, 28, 28) and data.test_x.shape == (10000, 1, 28, 28)
    assert data.train_x.dtype == np.float32 and data.test_y.dtype == np.int64
    assert data.num_classes == 10
    np.testing.assert_array_equal(np.bincount(data.train_y), np.full(10, 6000))
    np.testing.assert_array_equal(np.bincount(data.test_y), np.full(10, 1000))
    assert abs(data.train_x.mean(dtype=np.float64)) < 1e-4
    assert abs(data.train_x.std(dtype=np.float64) - 1.0) < 1e-4
    assert abs(data.test_x.mean(dtype=np.float64)) < 0.05  # test uses the train statistics


def test_a_data_set_from_arrays_on_disk_trains(tiny, tmp_path):
    """dataset: arrays reads the user's own .npz."""
    import netfl

    rng = np.random.default_rng(0)
    x = rng.normal(size=(120, 5)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.int64)
    np.savez(tmp_path / "mine.npz", x_train=x[:100], y_train=y[:100], x_test=x[100:],
             y_test=y[100:])
    tiny["data"] = {"dataset": "arrays", "path": str(tmp_path / "mine.npz")}
    tiny["model"] = {"kind": "logistic"}
    tiny["algorithm"].update(lr=0.5, rounds=5)
    result = netfl.run(tiny, write=False)
    assert result.summary["final_accuracy"] > 0.8


@pytest.mark.parametrize("arrays, words", [
    ({"x_train": np.zeros((4, 2))}, "missing y_train, x_test, y_test"),
    ({"x_train": np.zeros((4, 2)), "y_train": np.zeros(3, int), "x_test": np.zeros((2, 2)),
      "y_test": np.zeros(2, int)}, "same N"),
    ({"x_train": np.full((4, 2), np.nan), "y_train": np.zeros(4, int),
      "x_test": np.zeros((2, 2)), "y_test": np.zeros(2, int)}, "finite numbers"),
    ({"x_train": np.zeros((4, 2)), "y_train": np.full(4, 0.5), "x_test": np.zeros((2, 2)),
      "y_test": np.zeros(2, int)}, "integer labels"),
])
def test_bad_arrays_are_named(tmp_path, arrays, words):
    from netfl.errors import CorruptDataFile
    from netfl.learn.data import load_arrays

    np.savez(tmp_path / "bad.npz", **arrays)
    with pytest.raises(CorruptDataFile, match=rf"bad.npz: .*{words}"):
        load_arrays(tmp_path / "bad.npz")
    (tmp_path / "junk.npz").write_bytes(b"not a zip")
    with pytest.raises(CorruptDataFile, match="junk.npz: not a readable .npz"):
        load_arrays(tmp_path / "junk.npz")


def write_images(folder, per_class: int, size=(8, 8), mode="L"):
    """``folder/<class>/<n>.png`` for two classes whose images differ (dark and light)."""
    from PIL import Image

    for label, shade in (("cat", 30), ("dog", 220)):
        (folder / label).mkdir(parents=True, exist_ok=True)
        for n in range(per_class):
            Image.new(mode, size, shade if mode == "L" else (shade, shade, 0)).save(
                folder / label / f"{n}.png")


def test_an_image_folder_trains(tiny, tmp_path):
    """dataset: images reads train/<class>/ and test/<class>/."""
    import netfl

    write_images(tmp_path / "imgs" / "train", 12)
    write_images(tmp_path / "imgs" / "test", 4)
    tiny["data"] = {"dataset": "images", "path": str(tmp_path / "imgs")}
    tiny["model"] = {"kind": "logistic"}
    tiny["algorithm"].update(lr=0.5, rounds=5)
    result = netfl.run(tiny, write=False)
    assert result.summary["final_accuracy"] == 1.0


def test_per_client_folders_are_the_natural_partition(tiny, tmp_path):
    import netfl
    from netfl.simulation import Simulation

    for client in range(6):
        write_images(tmp_path / "imgs" / "clients" / f"c{client:02d}", client + 1)
    write_images(tmp_path / "imgs" / "test", 2)
    tiny["data"] = {"dataset": "images", "path": str(tmp_path / "imgs"),
                    "partition": {"kind": "natural"}}
    partition = Simulation(netfl.load_scenario(tiny), with_model=False).partition
    assert list(partition.sizes) == [2 * (c + 1) for c in range(6)]


@pytest.mark.parametrize("damage, words", [
    ("no test", "expected test/ and exactly one of train/ or clients/"),
    ("two sizes", "4x4 pixels, but the first image is 8x8"),
    ("not an image", "not a readable image"),
])
def test_a_damaged_image_folder_is_named(tmp_path, damage, words):
    from netfl.errors import CorruptDataFile
    from netfl.learn.images import load_images

    root = tmp_path / "imgs"
    write_images(root / "train", 3)
    if damage != "no test":
        write_images(root / "test", 2)
    if damage == "two sizes":
        write_images(root / "test", 3, size=(4, 4))
    if damage == "not an image":
        (root / "train" / "cat" / "9.png").write_text("not a png")
    with pytest.raises(CorruptDataFile, match=words):
        load_images(root, 6)
