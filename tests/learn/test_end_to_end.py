"""Real training end to end on Fashion-MNIST, and the error where it is absent."""

from pathlib import Path

import pytest
from typer.testing import CliRunner

import netfl
from netfl.cli import app
from netfl.learn import datasets
from tests.conftest import needs_fashion_mnist

ROOT = Path(__file__).resolve().parents[2]


@needs_fashion_mnist
@pytest.mark.slow
def test_a_short_fashion_mnist_run_learns(tmp_path):
    result = netfl.run(ROOT / "scenarios" / "fmnist_hierfedavg.yaml", overrides=[
        "world.clients=20", "world.edge_servers=4", "algorithm.rounds=3",
        "stop.target_accuracy=null"], out_dir=tmp_path)
    accuracy = result.metrics["accuracy"].tolist()
    assert accuracy[0] < 0.3 and accuracy[-1] > 0.6  # from chance to well above it
    assert result.summary["model_params"] == 199_210
    assert (result.path / "partition.png").is_file()


def test_a_missing_data_set_is_a_clear_error_naming_every_place(tmp_path, monkeypatch):
    monkeypatch.setattr(datasets, "DEBIAN_FASHION_MNIST", tmp_path / "no-debian")
    monkeypatch.setattr(datasets, "DEFAULT_CACHE_DIR", tmp_path / "no-cache")
    result = CliRunner().invoke(app, [
        "run", str(ROOT / "scenarios" / "fmnist_hierfedavg.yaml"), "--out", str(tmp_path),
        "--set", f"data.root={tmp_path / 'nowhere'}", "--set", "data.download=false"])
    assert result.exit_code == 1
    assert "Fashion-MNIST not found" in result.output
    assert str(tmp_path / "nowhere") in result.output
    assert "apt-get install dataset-fashion-mnist" in result.output
    assert "Traceback" not in result.output
    assert not (tmp_path / "fmnist-hierfedavg").exists()
