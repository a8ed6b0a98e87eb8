"""Digest state: when each [[digests]] entry was last sent and the prices it reported.

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-01 09:00:00.000000

"""
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa
import db.models
import sqlmodel

# revision identifiers, used by Alembic.
revision: str = '0002'
down_revision: Union[str, Sequence[str], None] = '0001'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    """Upgrade schema."""
    # A database made before migrations existed is adopted at 0001 (db.migrate.upgrade)
    # and may already hold this table when it was created from the current models.
    if 'digest_state' in sa.inspect(op.get_bind()).get_table_names():
        return
    op.create_table('digest_state',
    sa.Column('name', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
    sa.Column('created_at', db.models.UTCDateTime(), nullable=False),
    sa.Column('last_sent_at', db.models.UTCDateTime(), nullable=True),
    sa.Column('last_event_id', sa.Integer(), nullable=True),
    sa.Column('last_values', sa.JSON(), nullable=False),
    sa.Column('version', sa.Integer(), nullable=False),
    sa.PrimaryKeyConstraint('name')
    )


def downgrade() -> None:
    """Downgrade schema."""
    op.drop_table('digest_state')
