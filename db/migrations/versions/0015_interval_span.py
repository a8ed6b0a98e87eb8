"""An index of the closed intervals' lengths (``last_seen - first_seen``), so the longest is one
index step: it bounds the ``last_seen`` of an interval in effect at a moment (``db.sql.LONGEST_SPAN``),
and reads of moments months back (trends' 30 and 90 days ago) scan the intervals around them
instead of every one since.

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-03 13:00:00.000000

"""
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa

# revision identifiers, used by Alembic.
revision: str = '0015'
down_revision: Union[str, Sequence[str], None] = '0014'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    """Upgrade schema."""
    # a store made from the models (before migrations existed) has it already
    op.create_index('ix_price_interval_past_span', 'price_interval_past', [sa.text('(last_seen - first_seen)')],
                    if_not_exists=True)


def downgrade() -> None:
    """Downgrade schema."""
    op.drop_index('ix_price_interval_past_span', table_name='price_interval_past', if_exists=True)
