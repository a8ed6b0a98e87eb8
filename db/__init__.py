"""Storage: SQLModel tables (``models``), engine/session set-up (``engine``), query functions (``queries``)."""
