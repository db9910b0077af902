-- An organization's erasure: an admin schedules it (erase_at, the end of the grace period, and
-- who asked); until then its admins may cancel it and it queues no new run. The erase job
-- claims a due organization with a lease (erase_lease_until) so that one replica erases it at a
-- time, and deletes its rows, table by table, the organization's own row last.

-- +goose Up
ALTER TABLE organizations ADD COLUMN erase_at BIGINT;
ALTER TABLE organizations ADD COLUMN erase_requested_by TEXT NOT NULL DEFAULT '';
ALTER TABLE organizations ADD COLUMN erase_lease_until BIGINT;
CREATE INDEX organizations_erase_due ON organizations (erase_at) WHERE erase_at IS NOT NULL;

-- +goose Down
DROP INDEX organizations_erase_due;
ALTER TABLE organizations DROP COLUMN erase_lease_until;
ALTER TABLE organizations DROP COLUMN erase_requested_by;
ALTER TABLE organizations DROP COLUMN erase_at;
