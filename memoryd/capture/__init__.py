"""Capture: agent hook events from the spool into the archive (the ``capture.drain`` kind)."""
