"""An index of the earlier intervals by provider and last observation, so a collection's roll-up
refresh reads its own provider's intervals of the day (``db.rollups``) instead of walking every
provider's by GPU: each provider's store then costs what its own offers do, not the market's.

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-03 18:30:00.000000

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
    op.create_index('ix_price_interval_past_provider_last', 'price_interval_past', ['provider_id', 'last_seen'],
                    if_not_exists=True)


def downgrade() -> None:
    """Downgrade schema."""
    op.drop_index('ix_price_interval_past_provider_last', table_name='price_interval_past', if_exists=True)
