"""Where a run's host time goes (``summary.json``'s ``host_time_s_by_part``).

``summary.json``'s ``host_time_s`` is the sum of these parts (each rounded to the microsecond
first, so the identity holds exactly up to float rounding). Parts, in seconds of host
(wall-clock) time:

* ``setup_s``: building the world, network, devices, model, trainer and algorithm;
* ``data_s``: loading the data set and partitioning it over the clients;
* ``training_s``: inside the trainer's local training and gradients (the model's FLOPs);
* ``evaluation_s``: inside the trainer's evaluations;
* ``compression_s``: inside the algorithm's compressor (QSGD's or int8's quantization of what
  is sent upwards) and its ``compressed_towards`` (the update's difference and sum);
* ``event_loop_s``: the rest of the run: SimPy's event loop, the network model, the algorithm's
  own code (aggregation included) and the recorder;
* ``writing_s``: from the end of the run up to ``summary.json`` itself: the summary, metrics and
  events tables, and the results directory (tables, plots, the timeline, files).

What lies between the parts (a few calls: starting the progress bar, the imports of the writing
code) is in none of them. Only the outermost of nested timed calls counts (a trainer's gradients
may call its own local training).
"""

from __future__ import annotations

import contextlib
import functools
import time

TRAINING_METHODS = ("local_train", "gradients", "weighted_gradient", "smoothness")
EVALUATION_METHODS = ("evaluate",)
COMPRESSOR_METHODS = ("compress",)  # of the algorithm's compressor
ALGORITHM_COMPRESSION_METHODS = ("compressed_towards",)  # of the algorithm


class HostTimes:
    """Accumulated host seconds per part (see the module docstring)."""

    def __init__(self):
        self.parts: dict[str, float] = {"setup_s": 0.0, "data_s": 0.0, "training_s": 0.0,
                                        "evaluation_s": 0.0, "compression_s": 0.0,
                                        "event_loop_s": 0.0,
                                        "writing_s": 0.0}
        self._depth = 0

    @contextlib.contextmanager
    def timing(self, part: str):
        """The ``with`` block's host seconds are added to ``part``."""
        began = time.perf_counter()
        try:
            yield
        finally:
            self.parts[part] += time.perf_counter() - began

    def time_methods(self, obj, names: tuple[str, ...], part: str) -> None:
        """Wrap ``obj``'s methods ``names`` (those it has) so their time counts to ``part``."""
        for name in names:
            method = getattr(obj, name, None)
            if callable(method):
                setattr(obj, name, self._timed(method, part))

    def _timed(self, method, part: str):
        @functools.wraps(method)
        def timed(*args, **kwargs):
            if self._depth:
                return method(*args, **kwargs)
            self._depth += 1
            began = time.perf_counter()
            try:
                return method(*args, **kwargs)
            finally:
                self.parts[part] += time.perf_counter() - began
                self._depth -= 1
        return timed

    def close_run(self, run_s: float) -> None:
        """The run took ``run_s``: what training, evaluation and compression did not take was
        the loop's."""
        self.parts["event_loop_s"] = max(run_s - self.parts["training_s"]
                                         - self.parts["evaluation_s"]
                                         - self.parts["compression_s"], 0.0)

    def as_dict(self) -> dict[str, float]:
        """The parts, in seconds rounded to the microsecond."""
        return {key: round(value, 6) for key, value in self.parts.items()}

    def total_s(self) -> float:
        """``host_time_s``: the sum of the rounded parts (``as_dict``)."""
        return total_of(self.as_dict())


def total_of(parts: dict[str, float]) -> float:
    """The host time whose parts are ``parts`` (seconds): their sum, rounded to the
    microsecond."""
    return round(sum(parts.values()), 6)
