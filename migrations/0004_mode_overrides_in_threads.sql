-- Control-mode overrides moved into each thread's Durable Object (read right before every turn
-- without a D1 round trip); D1 no longer holds them.
DROP INDEX IF EXISTS mode_overrides_route;
DROP TABLE IF EXISTS mode_overrides;
