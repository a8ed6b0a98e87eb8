"""Compact history: integer times and label ids in price_interval, current state, roll-ups.

Moves every stored interval (same ids, same prices, times floored to whole seconds) into the
compact layout, sets ``ends_at`` from the provider's next recorded scrape attempt, builds
``offer_state`` from each offer's newest interval and computes the roll-ups.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-01 12:00:00.000000

"""
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa
import db.models

# revision identifiers, used by Alembic.
revision: str = '0003'
down_revision: Union[str, Sequence[str], None] = '0002'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def _epoch(dialect: str, column: str) -> str:
    if dialect == "sqlite":
        return f"CAST(strftime('%s', {column}) AS INTEGER)"
    return f"CAST(FLOOR(EXTRACT(EPOCH FROM {column})) AS BIGINT)"


def _columns(table: str) -> set[str]:
    return {c["name"] for c in sa.inspect(op.get_bind()).get_columns(table)}


def upgrade() -> None:
    """Upgrade schema."""
    bind = op.get_bind()
    dialect = bind.dialect.name
    # A database made before migrations existed is adopted at 0001 and may already have this layout.
    if "provider_id" in _columns("price_interval"):
        return

    op.create_table('label',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('space', sa.String(length=16), nullable=False),
    sa.Column('name', sa.String(length=255), nullable=False),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('space', 'name', name='uq_label_space_name')
    )
    op.create_table('offer_state',
    sa.Column('offer_id', sa.Integer(), autoincrement=False, nullable=False),
    sa.Column('interval_id', sa.Integer(), nullable=False),
    sa.Column('provider_id', sa.SmallInteger(), nullable=False),
    sa.Column('last_seen', sa.BigInteger(), nullable=False),
    sa.ForeignKeyConstraint(['offer_id'], ['offer.id'], ),
    sa.PrimaryKeyConstraint('offer_id')
    )
    with op.batch_alter_table('offer_state', schema=None) as batch_op:
        batch_op.create_index('ix_offer_state_provider', ['provider_id', 'last_seen'], unique=False)
    for name in ('rollup_hour', 'rollup_day'):
        op.create_table(name,
        sa.Column('gpu_id', sa.SmallInteger(), autoincrement=False, nullable=False),
        sa.Column('bucket', sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column('provider_id', sa.SmallInteger(), autoincrement=False, nullable=False),
        sa.Column('kind_id', sa.SmallInteger(), autoincrement=False, nullable=False),
        sa.Column('min', sa.Float(), nullable=False),
        sa.Column('median', sa.Float(), nullable=False),
        sa.Column('max', sa.Float(), nullable=False),
        sa.Column('offers', sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint('gpu_id', 'bucket', 'provider_id', 'kind_id'),
        sqlite_with_rowid=False,
        )
    with op.batch_alter_table('provider', schema=None) as batch_op:
        batch_op.add_column(sa.Column('last_attempt_at', db.models.UTCDateTime(), nullable=True))
        batch_op.add_column(sa.Column('interval_s', sa.Integer(), nullable=True))
    with op.batch_alter_table('scrape_run', schema=None) as batch_op:
        batch_op.add_column(sa.Column('returned_offers', sa.Integer(), nullable=False, server_default='0'))

    # labels for every name the old rows repeat
    for space, sql in (("provider", "SELECT name AS n FROM provider UNION SELECT provider AS n FROM price_interval"),
                       ("gpu", "SELECT gpu AS n FROM price_interval WHERE gpu IS NOT NULL"),
                       ("kind", "SELECT kind AS n FROM price_interval UNION SELECT kind AS n FROM offer"),
                       ("currency", "SELECT currency AS n FROM price_interval")):
        op.execute(f"INSERT INTO label (space, name) SELECT DISTINCT '{space}', x.n FROM ({sql}) AS x")
    op.execute("UPDATE provider SET last_attempt_at = "
               "(SELECT MAX(r.started_at) FROM scrape_run r WHERE r.provider = provider.name)")

    op.create_table('price_interval_new',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('offer_id', sa.Integer(), nullable=False),
    sa.Column('provider_id', sa.SmallInteger(), nullable=False),
    sa.Column('gpu_id', sa.SmallInteger(), nullable=True),
    sa.Column('kind_id', sa.SmallInteger(), nullable=False),
    sa.Column('currency_id', sa.SmallInteger(), nullable=False),
    sa.Column('price_per_hour', sa.Float(), nullable=False),
    sa.Column('price_per_gpu_hour', sa.Float(), nullable=False),
    sa.Column('available', sa.Boolean(), nullable=True),
    sa.Column('first_seen', sa.BigInteger(), nullable=False),
    sa.Column('last_seen', sa.BigInteger(), nullable=False),
    sa.Column('ends_at', sa.BigInteger(), nullable=True),
    sa.Column('observations', sa.Integer(), nullable=False),
    sa.ForeignKeyConstraint(['offer_id'], ['offer.id'], name='fk_price_interval_offer'),
    sa.PrimaryKeyConstraint('id', name='pk_price_interval_new')
    )
    # ends_at: the provider's first recorded attempt after the interval's last observation,
    # unless the interval is still current (seen by the provider's latest successful scrape
    # with no attempt after it).
    next_attempt = ("(SELECT MIN(r.started_at) FROM scrape_run r WHERE r.provider = pi.provider "
                    "AND r.started_at > pi.last_seen)")
    op.execute(
        "INSERT INTO price_interval_new (id, offer_id, provider_id, gpu_id, kind_id, currency_id, price_per_hour, "
        "price_per_gpu_hour, available, first_seen, last_seen, ends_at, observations) "
        "SELECT pi.id, pi.offer_id, lp.id, lg.id, lk.id, lc.id, pi.price_per_hour, pi.price_per_gpu_hour, pi.available, "
        f"{_epoch(dialect, 'pi.first_seen')}, {_epoch(dialect, 'pi.last_seen')}, "
        f"{_epoch(dialect, next_attempt)}, pi.observations "
        "FROM price_interval pi "
        "JOIN label lp ON lp.space = 'provider' AND lp.name = pi.provider "
        "LEFT JOIN label lg ON lg.space = 'gpu' AND lg.name = pi.gpu "
        "JOIN label lk ON lk.space = 'kind' AND lk.name = pi.kind "
        "JOIN label lc ON lc.space = 'currency' AND lc.name = pi.currency"
    )
    # the newest interval per offer (the old store's rule: the highest id) is the current state
    op.execute(
        "INSERT INTO offer_state (offer_id, interval_id, provider_id, last_seen) "
        "SELECT n.offer_id, n.id, n.provider_id, n.last_seen FROM price_interval_new n "
        "WHERE n.id IN (SELECT MAX(id) FROM price_interval_new GROUP BY offer_id)"
    )
    op.drop_table('price_interval')
    op.rename_table('price_interval_new', 'price_interval')
    if dialect == "postgresql":
        op.execute("ALTER TABLE price_interval RENAME CONSTRAINT pk_price_interval_new TO price_interval_pkey")
        op.execute("ALTER SEQUENCE IF EXISTS price_interval_new_id_seq RENAME TO price_interval_id_seq")
        op.execute("SELECT setval('price_interval_id_seq', COALESCE((SELECT MAX(id) FROM price_interval), 0) + 1, false)")
    with op.batch_alter_table('price_interval', schema=None) as batch_op:
        batch_op.create_index('ix_price_interval_gpu_last', ['gpu_id', 'last_seen'], unique=False)
    # the roll-ups are computed from these intervals by 0006, in the layout the code writes


def downgrade() -> None:
    """The compact layout cannot be turned back into the old one without losing sub-second times."""
    raise NotImplementedError("0003 is a one-way migration: restore a backup taken before upgrading")
