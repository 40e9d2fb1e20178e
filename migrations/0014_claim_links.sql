-- Claim links (issue 15; docs/login.md): a one-time `clm-` token that carries a key to another
-- device. Only the SHA-256 of the token is stored. The key itself does not exist until the link is
-- claimed (POST /api/login/claim): the row holds the policy to mint, and the claim batch consumes
-- the row, mints the key from it and deletes it, so a used link leaves nothing behind. Expired rows
-- are read as gone and pruned by the Worker's cron (pruneClaimLinks).
CREATE TABLE claim_links (
  token_hash        TEXT PRIMARY KEY,      -- SHA-256 hex of the raw `clm-` token
  user_id           TEXT NOT NULL,         -- the key to mint (reserved while the link is open)
  description       TEXT NOT NULL,
  scopes            TEXT NOT NULL,         -- JSON array of scope strings
  condition         TEXT,
  role              TEXT,
  owner_user_id     TEXT NOT NULL,         -- the creator: the minted key is owned by it
  created_at        TEXT NOT NULL,
  expires_at        INTEGER NOT NULL,      -- epoch ms
  claim_fingerprint TEXT                   -- set by the one claim that wins (within its batch)
);
CREATE INDEX claim_links_user ON claim_links(user_id);
CREATE INDEX claim_links_expiry ON claim_links(expires_at);
