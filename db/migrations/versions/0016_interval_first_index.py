"""An index of the past intervals by GPU and start, so a GPU's first price (``db.reads.first_price_at``,
read on every history and GPU page) is one index step instead of a read of all its intervals.

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-03 14:00:00.000000

"""
from typing import Sequence, Union

from alembic import op

# revision identifiers, used by Alembic.
revision: str = '0016'
down_revision: Union[str, Sequence[str], None] = '0015'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    """Upgrade schema."""
    # a store made from the models (before migrations existed) has it already
    op.create_index('ix_price_interval_past_gpu_first', 'price_interval_past', ['gpu_id', 'first_seen'],
                    if_not_exists=True)


def downgrade() -> None:
    """Downgrade schema."""
    op.drop_index('ix_price_interval_past_gpu_first', table_name='price_interval_past', if_exists=True)
