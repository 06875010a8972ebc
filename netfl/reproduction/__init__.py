"""Reproducing the four papers: plans of sweeps, verdicts on their findings, and
docs/reproduction.md rebuilt from the results (``netfl reproduce``)."""
