"""updates.png: drawn for a run whose updates went into models asynchronously, not otherwise."""

import netfl


def test_an_asynchronous_run_draws_updates_png_and_a_synchronous_one_does_not(tiny, tmp_path):
    tiny["output"] = {"dir": str(tmp_path), "plots": True}
    tiny["algorithm"] = {"kind": "hier-async", "rounds": 3, "local_steps": 2,
                         "edge": "async", "cloud": {"policy": "buffered", "buffer_size": 2}}
    asynchronous = netfl.run(tiny)
    assert (asynchronous.path / "updates.png").stat().st_size > 10_000
    tiny["algorithm"] = {"kind": "hier-fedavg", "rounds": 2, "local_steps": 2}
    assert not (netfl.run(tiny).path / "updates.png").exists()
