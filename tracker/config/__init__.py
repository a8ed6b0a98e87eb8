"""Configuration: the settings model (TOML plus env), its checker, and the example file."""
