"""The interval index carries first_seen (index-only "in effect during a range"); store_meta
holds the raw-retention horizon.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-01 21:00:00.000000

"""
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa
import sqlmodel

# revision identifiers, used by Alembic.
revision: str = '0004'
down_revision: Union[str, Sequence[str], None] = '0003'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    """Upgrade schema."""
    inspector = sa.inspect(op.get_bind())
    if 'store_meta' not in inspector.get_table_names():
        op.create_table('store_meta',
        sa.Column('key', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column('value', sqlmodel.sql.sqltypes.AutoString(length=255), nullable=False),
        sa.PrimaryKeyConstraint('key', name='pk_store_meta')
        )
    indexes = {i['name'] for i in inspector.get_indexes('price_interval')}
    if 'ix_price_interval_gpu_last_first' not in indexes:
        op.create_index('ix_price_interval_gpu_last_first', 'price_interval', ['gpu_id', 'last_seen', 'first_seen'],
                        unique=False)
    if 'ix_price_interval_gpu_last' in indexes:
        op.drop_index('ix_price_interval_gpu_last', table_name='price_interval')


def downgrade() -> None:
    """Downgrade schema."""
    op.create_index('ix_price_interval_gpu_last', 'price_interval', ['gpu_id', 'last_seen'], unique=False)
    op.drop_index('ix_price_interval_gpu_last_first', table_name='price_interval')
    op.drop_table('store_meta')
