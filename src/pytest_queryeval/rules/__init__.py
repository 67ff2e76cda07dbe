"""The rules a case states about its metrics: its thresholds (:mod:`.thresholds`), how its
repeated runs combine (:mod:`.repeats`), and which relaxation would have made a failing case
pass (:mod:`.nearmiss`).

Why a folder of its own, below the kinds and suite reading: suite reading checks these rules
when it reads a case, the kinds compute the near-miss metrics, the engine applies the rules and
the reports print them; kept in ``engine/`` they made suite reading and the kinds import the
engine, which imports both (issue 51 item 1).
"""
