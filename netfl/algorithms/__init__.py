"""Algorithms, one file each, built from the primitives in ``base``; see ``registry``."""
