"""Dialects defined by tilemlir (the `tile` dialect, through IRDL)."""

from tilemlir.dialects.tile import make_context, register_dialect

__all__ = ["make_context", "register_dialect"]
