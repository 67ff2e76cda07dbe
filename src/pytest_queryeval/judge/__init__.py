"""An LLM judge where execution disagrees, with its own reliability measured (issue 26).

Why the judge measures itself: execution match fails answers experts accept and passes answers
that are right by coincidence, and an LLM judge is wrong too, in other ways, and differently
from one run to the next. A judge whose agreement with experts is unknown cannot gate a model.
:mod:`.agreement` computes that agreement (Cohen's kappa, precision, recall, the flip rate over
repeated asks) exactly as scikit-learn does, so a team's figure means what the literature's
does.
"""
