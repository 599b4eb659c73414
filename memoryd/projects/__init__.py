"""Projects as a capability: listing, renaming and removing them (:mod:`.manage`)."""
