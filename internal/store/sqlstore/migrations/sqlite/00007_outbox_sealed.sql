-- Mail bodies are sealed at rest (AES-256-GCM): an invitation's body carries a token that
-- joins the organization. Rows queued before keep their plain bodies (sealed = 0) and are
-- still sent; the bodies of sent and abandoned mails, never read again, are dropped.

-- +goose Up
ALTER TABLE mail_outbox ADD COLUMN sealed INTEGER NOT NULL DEFAULT 0;
UPDATE mail_outbox SET body_html = '', body_text = '' WHERE sent_at IS NOT NULL OR given_up;

-- +goose Down
-- Code from before cannot open sealed bodies: it must not send them as they are.
UPDATE mail_outbox SET given_up = 1 WHERE sealed AND sent_at IS NULL;
ALTER TABLE mail_outbox DROP COLUMN sealed;
