"""Export tests read the replayed store the web tests build (module-scoped)."""

from tests.web.conftest import secret_env, store  # noqa: F401
