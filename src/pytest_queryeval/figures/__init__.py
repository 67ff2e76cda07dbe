"""The figures every room shows alike: the order of metric columns (:mod:`.columns`), a
percentage (:mod:`.numbers`), a conversation's by-turn table (:mod:`.by_turn`, in the Spider
test-suite evaluator's layout: :mod:`.turn_table`).

Why a folder of its own, below the baseline and the reports: the baseline compares and stores
by these columns and the reports print them, and the reports read the baseline; kept in
``report/`` they made the baseline and the reports import each other (issue 51 item 1).
"""
