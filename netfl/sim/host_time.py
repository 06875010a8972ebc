"""Where a run's host time goes (``summary.json``'s ``host_time_s_by_part``).

Parts, in seconds of host (wall-clock) time:

* ``setup_s``: building the world, network, data, model and algorithm;
* ``training_s``: inside the trainer's local training and gradients (the model's FLOPs);
* ``evaluation_s``: inside the trainer's evaluations;
* ``compression_s``: inside the algorithm's compressor (QSGD's or int8's quantization of what
  is sent upwards) and its ``compressed_towards`` (the update's difference and sum);
* ``event_loop_s``: the rest of the run: SimPy's event loop, the network model, the algorithm's
  own code (aggregation included) and the recorder;
* ``writing_s``: the results directory, up to ``summary.json`` itself (tables, plots, files).

Only the outermost of nested timed calls counts (a trainer's gradients may call its own local
training).
"""

from __future__ import annotations

import functools
import time

TRAINING_METHODS = ("local_train", "gradients", "weighted_gradient", "smoothness")
EVALUATION_METHODS = ("evaluate",)
COMPRESSOR_METHODS = ("compress",)  # of the algorithm's compressor
ALGORITHM_COMPRESSION_METHODS = ("compressed_towards",)  # of the algorithm


class HostTimes:
    """Accumulated host seconds per part (see the module docstring)."""

    def __init__(self):
        self.parts: dict[str, float] = {"setup_s": 0.0, "training_s": 0.0,
                                        "evaluation_s": 0.0, "compression_s": 0.0,
                                        "event_loop_s": 0.0,
                                        "writing_s": 0.0}
        self._depth = 0

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
        return {key: round(value, 6) for key, value in self.parts.items()}
