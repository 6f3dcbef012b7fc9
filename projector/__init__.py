"""Management-mode projector: cell status mirrored back upstream (arrives with a later issue)."""
