"""The command line, in process (CliRunner) and as the installed console script."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from netfl.cli import app

ROOT = Path(__file__).resolve().parents[1]
QUICKSTART = ROOT / "scenarios" / "quickstart.yaml"
runner = CliRunner()


def test_validate_ok():
    result = runner.invoke(app, ["validate", str(QUICKSTART)])
    assert result.exit_code == 0 and "valid" in result.output


def test_quickstart_switches_to_fedavg_with_one_override():
    result = runner.invoke(app, ["validate", str(QUICKSTART), "--set", "algorithm.kind=fedavg"])
    assert result.exit_code == 0 and "fedavg" in result.output


def test_validate_reports_every_problem_without_a_traceback(tmp_path):
    bad = tmp_path / "bad.yaml"
    text = QUICKSTART.read_text()
    assert "clients: 20" in text and "rate: 10 Mbps" in text
    bad.write_text(text.replace("clients: 20", "clientz: 20")
                   .replace("rate: 10 Mbps", "rate: 20 Mbs"))
    result = runner.invoke(app, ["validate", str(bad), "--set", "algorithm.lr=-1"])
    assert result.exit_code == 2
    assert "4 problems in scenario" in result.output  # clientz, clients missing, rate, lr
    assert "world.clients: required field is missing" in result.output
    line = bad.read_text().splitlines().index("  clientz: 20") + 1
    assert f"{bad}:{line}: world.clientz = 20: unknown key" in result.output
    assert "did you mean 'clients'" in result.output
    assert "links.access.rate = '20 Mbs': unknown rate unit" in result.output
    assert "--set: algorithm.lr = -1" in result.output
    assert "Traceback" not in result.output


def test_run_writes_results_and_prints_the_path(tmp_path):
    result = runner.invoke(app, ["run", str(QUICKSTART), "--out", str(tmp_path), "--quiet",
                                 "--set", "algorithm.rounds=2",
                                 "--set", "stop.target_accuracy=null",
                                 "--run-id", "x"])
    assert result.exit_code == 0, result.output
    path = Path(result.output.strip())
    assert path == tmp_path / "quickstart" / "x"
    assert json.loads((path / "summary.json").read_text())["rounds"] == 2


def test_run_missing_file_is_a_clean_error(tmp_path):
    result = runner.invoke(app, ["run", str(tmp_path / "nope.yaml")])
    assert result.exit_code == 2 and "file not found" in result.output
    assert "Traceback" not in result.output


def test_list():
    result = runner.invoke(app, ["list"])
    assert result.exit_code == 0
    for word in ("hier-fedavg", "fedavg", "edge", "digits", "mlp", "fake", "raspberry-pi-4"):
        assert word in result.output
    assert runner.invoke(app, ["list", "nonsense"]).exit_code == 2
    transports = runner.invoke(app, ["list", "transports"])
    assert transports.exit_code == 0
    assert all(k in transports.output for k in ("tcp", "fluid", "store-and-forward"))


def test_quickstart_end_to_end_with_the_console_script(tmp_path):
    script = shutil.which("netfl", path=str(Path(sys.executable).parent))
    if script is None:
        pytest.skip("the netfl console script is not installed beside this interpreter")
    proc = subprocess.run([script, "run", str(QUICKSTART), "--out", str(tmp_path)],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "results: " in proc.stdout
    run_dir = next((tmp_path / "quickstart").iterdir())
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["time_to_target_s"] is not None
    assert summary["final_accuracy"] >= summary["target_accuracy"]
    assert (run_dir / "accuracy_vs_time.png").is_file()


def test_validate_reads_referenced_files_and_with_data_builds_the_partition(tmp_path):
    many = ["validate", str(QUICKSTART), "--set", "world.clients=5000"]
    result = runner.invoke(app, many)  # the data are not loaded: the partition is not made
    assert result.exit_code == 0, result.output
    assert "data: digits not loaded (validate --data" in " ".join(result.output.split())
    result = runner.invoke(app, [*many, "--data"])
    assert result.exit_code == 2 and "data.partition" in result.output
    assert "cannot give 5000 clients" in result.output
    result = runner.invoke(app, ["validate", str(QUICKSTART), "--data"])
    assert result.exit_code == 0, result.output
    assert "data: digits loaded, 1,347 training samples partitioned (dirichlet) over 20 " \
           "clients" in " ".join(result.output.split())
    result = runner.invoke(app, ["validate", str(QUICKSTART), "--set",
                                 f"devices.clients.availability={{kind: trace, path: {tmp_path}}}"])
    assert result.exit_code == 2 and "not a file" in result.output


@pytest.fixture
def no_fashion_mnist(tmp_path, monkeypatch):
    """A tiny scenario file naming Fashion-MNIST, on a machine without it (nor internet)."""
    import yaml

    from netfl.learn import datasets
    from tests.conftest import TINY

    monkeypatch.setattr(datasets, "DEBIAN_FASHION_MNIST", tmp_path / "no-debian")
    monkeypatch.setattr(datasets, "DEFAULT_CACHE_DIR", tmp_path / "no-cache")
    path = tmp_path / "fmnist.yaml"
    path.write_text(yaml.safe_dump({**TINY, "data": {"dataset": "fashion-mnist",
                                                     "download": False}}, sort_keys=False))
    return path


def test_validate_checks_a_scenario_whose_data_set_is_missing_without_reading_it(
        no_fashion_mnist):
    result = runner.invoke(app, ["validate", str(no_fashion_mnist)])
    assert result.exit_code == 0, result.output
    assert "data: fashion-mnist not loaded" in result.output


def test_validate_data_and_run_report_a_missing_data_set_with_its_file_and_where_they_looked(
        no_fashion_mnist, tmp_path):
    for args in (["validate", str(no_fashion_mnist), "--data"],
                 ["run", str(no_fashion_mnist), "--out", str(tmp_path / "out"), "--quiet"]):
        result = runner.invoke(app, args)
        assert result.exit_code == 1, result.output
        flat = " ".join(result.output.split())
        assert f"error: {no_fashion_mnist}: data.dataset: Fashion-MNIST not found" in flat
        assert str(tmp_path / "no-debian") in flat and str(tmp_path / "no-cache") in flat
        assert "apt-get install dataset-fashion-mnist" in flat
        assert "Traceback" not in result.output
    assert not (tmp_path / "out" / "tiny").exists()


def test_an_override_that_adds_an_unknown_section_is_blamed_on_the_override():
    result = runner.invoke(app, ["validate", str(QUICKSTART), "--set", "foo.bar=1"])
    assert result.exit_code == 2 and "--set: foo = {'bar': 1}: unknown key" in result.output


def _tiny_file(tmp_path: Path) -> Path:
    import yaml

    from tests.conftest import TINY

    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(TINY, sort_keys=False))
    return path


def test_sweep_then_report(tmp_path):
    scenario, out = _tiny_file(tmp_path), tmp_path / "sweep"
    args = ["sweep", str(scenario), "--grid", "algorithm.kind=fedavg,hier-fedavg",
            "--seeds", "2", "--out", str(out), "--workers", "2"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "4 runs: 4 done (0 from earlier)" in result.output
    assert len(list(out.glob("runs/tiny/*/summary.json"))) == 4
    dry = runner.invoke(app, [*args, "--dry-run"])
    assert dry.exit_code == 0 and dry.output.count("done") == 4
    again = runner.invoke(app, args)  # resumes: nothing left to run
    assert again.exit_code == 0 and "4 done (4 from earlier)" in again.output
    report = runner.invoke(app, ["report", str(out)])
    assert report.exit_code == 0, report.output
    assert "fedavg" in report.output and "hier-fedavg" in report.output
    text = (out / "report" / "comparison.md").read_text()
    assert "| fedavg | 2 |" in text and "| hier-fedavg | 2 |" in text


def test_sweep_reports_a_failed_run_with_its_log_and_exits_1(tmp_path):
    scenario, out = _tiny_file(tmp_path), tmp_path / "sweep"
    result = runner.invoke(app, ["sweep", str(scenario), "--out", str(out), "--workers", "1",
                                 "--grid", "devices.clients.memory=1 kB,4 GB", "--quiet"])
    assert result.exit_code == 1, result.output
    assert "2 runs: 1 done (0 from earlier), 1 failed" in result.output
    log = next((out / "logs").glob("memory-1kB*.log"))
    assert str(log) in "".join(result.output.split())  # the table may fold the path
    assert "Traceback" not in result.output and "Traceback" in log.read_text()


def test_sweep_bad_grid_is_reported_before_anything_runs(tmp_path):
    scenario, out = _tiny_file(tmp_path), tmp_path / "sweep"
    result = runner.invoke(app, ["sweep", str(scenario), "--out", str(out),
                                 "--grid", "algorithm.lrr=0.1,0.2", "--grid", "seed=x"])
    assert result.exit_code == 2
    assert "--grid: algorithm.lrr" in result.output and "did you mean 'lr'" in result.output
    assert "--grid: seed = 'x'" in result.output
    assert f"2 problems in scenario {scenario} (a sweep):" in " ".join(result.output.split())
    assert not out.exists()
    local = runner.invoke(app, ["sweep", str(scenario), "--executor", "local",
                                "--address", "tcp://127.0.0.1:8786"])
    assert local.exit_code == 1 and "use it with --executor dask" in local.output


def test_a_sweep_file_validates_and_runs_as_its_base_scenario(tmp_path):
    import yaml

    from tests.conftest import TINY

    path = tmp_path / "swept.yaml"
    path.write_text(yaml.safe_dump({**TINY, "sweep": {"seeds": 2,
                                                      "grid": {"algorithm.rounds": [1, 2]}}}))
    checked = runner.invoke(app, ["validate", str(path)])
    assert checked.exit_code == 0, checked.output
    assert "its sweep: section, 4 runs" in checked.output
    ran = runner.invoke(app, ["run", str(path), "--out", str(tmp_path), "--quiet",
                              "--set", "algorithm.rounds=1"])
    assert ran.exit_code == 0, ran.output
    summary = json.loads((Path(ran.output.strip()) / "summary.json").read_text())
    assert summary["rounds"] == 1 and summary["seed"] == TINY["seed"]
    path.write_text(yaml.safe_dump({**TINY, "sweep": {"grid": {"algorithm.lr": [-1]}}}))
    bad = runner.invoke(app, ["validate", str(path)])
    assert bad.exit_code == 2 and "algorithm.lr = -1" in bad.output


def test_report_of_an_unfinished_sweep_warns_and_exits_1_unless_allowed(tmp_path):
    scenario, out = _tiny_file(tmp_path), tmp_path / "sweep"
    result = runner.invoke(app, ["sweep", str(scenario), "--out", str(out), "--workers", "1",
                                 "--grid", "devices.clients.memory=1 kB,4 GB", "--quiet"])
    assert result.exit_code == 1, result.output
    report = runner.invoke(app, ["report", str(out)])
    assert report.exit_code == 1, report.output
    assert "INCOMPLETE: 1 of 2 runs finished" in report.output
    assert "--allow-incomplete" in report.output
    text = (out / "report" / "comparison.md").read_text()
    assert text.startswith("**INCOMPLETE: 1 of 2 runs finished.**")
    allowed = runner.invoke(app, ["report", str(out), "--allow-incomplete"])
    assert allowed.exit_code == 0, allowed.output
    assert "INCOMPLETE: 1 of 2 runs finished" in allowed.output


def test_report_on_damaged_input_is_an_error_without_a_traceback(tmp_path):
    (tmp_path / "sweep.json").write_text("{not json")
    result = runner.invoke(app, ["report", str(tmp_path)])
    assert result.exit_code == 1
    assert "sweep.json" in result.output and "not valid JSON" in result.output
    assert "Traceback" not in result.output


def test_validate_reports_a_shell_whose_grid_links_cannot_clear_the_earth():
    walker = Path(__file__).parents[1] / "scenarios" / "leo" / "walker-40-5.yaml"
    result = runner.invoke(app, ["validate", str(walker), "--set", "world.isl={kind: grid}",
                                 "--set", "world.cache=false"])
    assert result.exit_code == 0, result.output
    flat = " ".join(result.output.split())
    assert "note: +Grid: 40 of 40 in-plane ISLs never clear the Earth by 80 km" in flat
