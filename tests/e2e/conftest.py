"""The end-to-end layer's fixtures: the single-node SLURM cluster of tests/fixtures/slurm.py."""
from __future__ import annotations

from tests.fixtures.slurm import slurm_cluster  # noqa: F401
