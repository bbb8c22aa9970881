-- The deliveries of signed webhooks a route accepted (docs/webhooks.md), by
-- the id their scheme carries (Standard Webhooks' webhook-id): one that
-- comes again answers 200 and runs nothing. A delivery whose run failed
-- (5xx) is released, so that the sender's retry runs. Kept a day, longer
-- than any tolerance a route may set.
CREATE TABLE webhook_deliveries (
    project_id  text NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    route_id    text NOT NULL,
    delivery_id text NOT NULL CHECK (length(delivery_id) BETWEEN 1 AND 200),
    received_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (project_id, route_id, delivery_id)
);
CREATE INDEX webhook_deliveries_received_idx ON webhook_deliveries (received_at);
