"""The rule catalogue: one module per rule, named by its code, each exposing ``RULE``."""
