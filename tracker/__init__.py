"""gpu-price-tracker: watches what GPU clouds charge by the hour."""

__version__ = "0.1.0"
