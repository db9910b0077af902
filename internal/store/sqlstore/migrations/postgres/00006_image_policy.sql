-- The organization's own image policy: patterns that narrow the server's allowed images.

-- +goose Up
ALTER TABLE organizations ADD COLUMN allowed_images TEXT NOT NULL DEFAULT '[]';

-- +goose Down
ALTER TABLE organizations DROP COLUMN allowed_images;
