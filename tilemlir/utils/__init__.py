"""Helpers TileLang programs import from `tilelang.utils` (`tilemlir.utils.tensor`)."""
