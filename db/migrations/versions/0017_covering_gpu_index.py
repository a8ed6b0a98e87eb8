"""On SQLite the GPU index of the earlier intervals carries the columns the reads of prices in
effect filter on and return (kind, currency, provider, price, end, offer), so a moment's prices
months back are read from the index alone instead of one table lookup per interval. PostgreSQL
keeps the key alone (``db.models.GPU_INDEX``).

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

OLD = 'ix_price_interval_past_gpu_last_first'
NEW = 'ix_price_interval_past_gpu_covering'
KEY = ['gpu_id', 'last_seen', 'first_seen']
COVERED = ['kind_id', 'currency_id', 'provider_id', 'price_per_gpu_hour', 'ends_at', 'offer_id']


def upgrade() -> None:
    """Upgrade schema."""
    if op.get_bind().dialect.name != 'sqlite':
        return
    op.drop_index(OLD, table_name='price_interval_past', if_exists=True)
    # a store made from the models (before migrations existed) has it already
    op.create_index(NEW, 'price_interval_past', KEY + COVERED, if_not_exists=True)


def downgrade() -> None:
    """Downgrade schema."""
    if op.get_bind().dialect.name != 'sqlite':
        return
    op.drop_index(NEW, table_name='price_interval_past', if_exists=True)
    op.create_index(OLD, 'price_interval_past', KEY)
