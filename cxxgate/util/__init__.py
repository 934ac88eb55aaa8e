"""Small utilities every layer shares: files written whole (atomic), YAML read into pydantic models
with messages naming file and key (yamlfile)."""
