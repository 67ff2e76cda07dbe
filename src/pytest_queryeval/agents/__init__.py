"""Data agents: the trajectory a prediction may carry (:mod:`.trajectory`), the counts taken
where the plugin runs an agent's tool queries (:mod:`.ledger`), and the agent metrics
(:mod:`pytest_queryeval.metrics.evalbench_trajectory`, :mod:`.scoring`).

Kept out of ``predict/`` and ``engine/`` so that a source, the tool loop, the engine and the
reports all read one definition of a trajectory without importing each other.
"""
