"""The run's progress bar follows rounds and the simulated clock, not only evaluations."""

import io

from rich.console import Console

import netfl
from netfl.results.progress import RunProgress
from netfl.simulation import Simulation


def test_the_bar_moves_with_rounds_between_evaluations(tiny):
    tiny["algorithm"].update(rounds=7, eval_every=1000)  # one evaluation: after the last round
    simulation = Simulation(netfl.load_scenario(tiny))
    seen = []
    progress = RunProgress(Console(file=io.StringIO(), force_terminal=False))
    with progress:
        progress.attach(simulation)
        task = progress._progress.tasks[0]

        def watch():  # the bar as the next refresh would draw it, after each round
            while True:
                yield simulation.env.timeout(0.05)
                list(progress._progress.get_renderables())
                seen.append(task.completed)

        simulation.env.process(watch())
        simulation.run()
    assert 0 < len(set(seen) - {0, 7})  # rounds between the first and the last were shown
    assert sorted(seen) == seen
