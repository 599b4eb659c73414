"""Memory consolidation: agents save lessons, facts, decisions and preferences.

``memory add`` validates candidate lines and stages each valid one as a file
under ``staging/<project>/`` (:mod:`.staging`); one ``memory.consolidate`` job
per project (:mod:`.jobs`) shortlists every candidate against the project's
active records (:mod:`.shortlist`), asks an adjudicator for a verdict
(:mod:`.adjudicate`) in a job worker, and the supervisor applies each
candidate's verdict alone (:mod:`memoryd.storage.records`). Records are
mirrored as markdown (:mod:`.mirror`).
"""

#: A record's statuses (light here: the CLI lists them without loading the service).
STATUSES = ("active", "superseded", "merged", "flagged", "archived")
#: A record's kinds (here for the same reason: :mod:`.candidates` imports the text stack).
KINDS = ("lesson", "fact", "decision", "preference")
