"""netfl's version, on its own so that any layer may read it without importing the package."""

__version__ = "0.1.0"
