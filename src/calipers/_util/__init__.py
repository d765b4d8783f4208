"""Small helpers with no calipers dependencies (layer 0)."""
