"""Parse failures: the raw payload (cut, secrets scrubbed) of a provider's last few collections
whose parse failed, kept beside the store so a changed layout is fixed from what broke it.

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-03 07:00:00.000000

"""
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa
import db.models
import sqlmodel

# revision identifiers, used by Alembic.
revision: str = '0011'
down_revision: Union[str, Sequence[str], None] = '0010'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    """Upgrade schema."""
    if 'parse_failure' in sa.inspect(op.get_bind()).get_table_names():
        return
    op.create_table('parse_failure',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('provider', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
    sa.Column('run_id', sa.Integer(), nullable=True),
    sa.Column('captured_at', db.models.UTCDateTime(), nullable=False),
    sa.Column('error', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('encoding', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
    sa.Column('payload', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('size', sa.Integer(), nullable=False),
    sa.Column('truncated', sa.Boolean(), nullable=False),
    sa.PrimaryKeyConstraint('id')
    )
    op.create_index('ix_parse_failure_provider_captured', 'parse_failure', ['provider', 'captured_at'], unique=False)


def downgrade() -> None:
    """Downgrade schema."""
    op.drop_index('ix_parse_failure_provider_captured', table_name='parse_failure')
    op.drop_table('parse_failure')
