"""Command-line tools: tile-opt (and, as their issues land, tile-compile and tile-run)."""
