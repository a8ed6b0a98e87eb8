"""Each series' newest hourly run moves to its own small table, ``rollup_hour_open``: the run an
hourly collection lengthens is rewritten there instead of in a page of ``rollup_hour_run`` per
series. Every run is kept; downgrade moves them back.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-02 07:20:00.000000

"""
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa

# revision identifiers, used by Alembic.
revision: str = '0009'
down_revision: Union[str, Sequence[str], None] = '0008'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None

_COLUMNS = "series_id, start, hours, min, median, max, offers"


def upgrade() -> None:
    """Upgrade schema."""
    if 'rollup_hour_open' not in sa.inspect(op.get_bind()).get_table_names():
        op.create_table('rollup_hour_open',
        sa.Column('series_id', sa.SmallInteger(), autoincrement=False, nullable=False),
        sa.Column('start', sa.Integer(), nullable=False),
        sa.Column('hours', sa.SmallInteger(), nullable=False),
        sa.Column('min', sa.Float(), nullable=False),
        sa.Column('median', sa.Float(), nullable=False),
        sa.Column('max', sa.Float(), nullable=False),
        sa.Column('offers', sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint('series_id')
        )
    op.execute(f"INSERT INTO rollup_hour_open ({_COLUMNS}) SELECT {_COLUMNS} FROM rollup_hour_run r "
               "WHERE start = (SELECT MAX(start) FROM rollup_hour_run n WHERE n.series_id = r.series_id)")
    op.execute("DELETE FROM rollup_hour_run WHERE EXISTS (SELECT 1 FROM rollup_hour_open o "
               "WHERE o.series_id = rollup_hour_run.series_id AND o.start = rollup_hour_run.start)")


def downgrade() -> None:
    """Downgrade schema: the newest runs back among the others."""
    op.execute(f"INSERT INTO rollup_hour_run ({_COLUMNS}) SELECT {_COLUMNS} FROM rollup_hour_open")
    op.drop_table('rollup_hour_open')
