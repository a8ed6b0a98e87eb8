"""The GPU index of the earlier intervals carries the columns the reads of prices in effect filter
on and return (kind, currency, provider, price, end, offer), so a moment's prices months back
are read from the index alone instead of one table lookup per interval.

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-04 08:00:00.000000

"""
from typing import Sequence, Union

from alembic import op

# revision identifiers, used by Alembic.
revision: str = '0017'
down_revision: Union[str, Sequence[str], None] = '0016'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None

NAME = 'ix_price_interval_past_gpu_last_first'
KEY = ['gpu_id', 'last_seen', 'first_seen']
COVERED = ['kind_id', 'currency_id', 'provider_id', 'price_per_gpu_hour', 'ends_at', 'offer_id']


def upgrade() -> None:
    """Upgrade schema."""
    op.drop_index(NAME, table_name='price_interval_past', if_exists=True)
    op.create_index(NAME, 'price_interval_past', KEY + COVERED)


def downgrade() -> None:
    """Downgrade schema."""
    op.drop_index(NAME, table_name='price_interval_past', if_exists=True)
    op.create_index(NAME, 'price_interval_past', KEY)
