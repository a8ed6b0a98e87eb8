"""A held observation keeps its ``extra`` (``quarantine.extra``) and an interval keeps the start
its source stated when that is before its first stored observation
(``interval_stated_start``, beside the intervals: rare, so no column every row pays for): an import whose source states where each interval began
(a ``prices`` export) stores the same intervals whichever of two files comes first, even when
the observation at a stated start was held for confirmation and a later import accepts it.
Intervals from before this revision have none (not recorded; the interval began at ``first_seen``).

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-02 08:10:00.000000

"""
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa

# revision identifiers, used by Alembic.
revision: str = '0010'
down_revision: Union[str, Sequence[str], None] = '0009'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    """Upgrade schema."""
    inspector = sa.inspect(op.get_bind())
    if 'extra' not in {c['name'] for c in inspector.get_columns('quarantine')}:
        op.add_column('quarantine', sa.Column('extra', sa.JSON(), nullable=True))
    if 'interval_stated_start' not in inspector.get_table_names():
        op.create_table('interval_stated_start',
        sa.Column('interval_id', sa.Integer(), autoincrement=False, nullable=False),
        sa.Column('stated_start', sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(['interval_id'], ['price_interval.id'], ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('interval_id')
        )


def downgrade() -> None:
    """Downgrade schema."""
    op.drop_table('interval_stated_start')
    with op.batch_alter_table('quarantine') as batch:
        batch.drop_column('extra')
