"""The index roll-up, ``index_day``: per (gpu, day, provider, kind, via) the median per-GPU-hour
price observed that day and the distinct offers (``db.index_rollup``), filled from the stored
intervals by 0014, which moves them where the roll-up code reads them.

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-03 09:40:00.000000

"""
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa
import sqlmodel

# revision identifiers, used by Alembic.
revision: str = '0013'
down_revision: Union[str, Sequence[str], None] = '0012'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    """Upgrade schema."""
    bind = op.get_bind()
    if 'index_day' not in sa.inspect(bind).get_table_names():
        op.create_table('index_day',
        sa.Column('gpu_id', sa.SmallInteger(), autoincrement=False, nullable=False),
        sa.Column('bucket', sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column('provider_id', sa.SmallInteger(), autoincrement=False, nullable=False),
        sa.Column('kind_id', sa.SmallInteger(), autoincrement=False, nullable=False),
        sa.Column('via', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column('median', sa.Float(), nullable=False),
        sa.Column('offers', sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint('gpu_id', 'bucket', 'provider_id', 'kind_id', 'via'),
        sqlite_with_rowid=False,
        )
    # filled by 0014's rebuild: the roll-up code reads intervals through the view 0014 makes (here
    # an open interval's row still holds the sentinel last_seen)


def downgrade() -> None:
    """Downgrade schema."""
    op.drop_table('index_day')
