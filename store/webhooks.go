package store

import (
	"context"
	"time"
)

// deliveriesKept is how long a signed webhook's delivery is remembered:
// longer than any tolerance a route may set (flow.MaxToleranceS), past
// which the delivery's own timestamp refuses it again.
const deliveriesKept = 25 * time.Hour

// ClaimDelivery records that a route accepts the delivery of a signed
// webhook named id (docs/webhooks.md), and says whether it is the first
// to: false is a delivery accepted before (a replay, or a retry of one
// that ran).
func (s *Store) ClaimDelivery(ctx context.Context, project, route, id string) (_ bool, err error) {
	defer wrap(&err, "claim delivery", project, route)
	tag, err := s.db.Exec(ctx, `INSERT INTO webhook_deliveries (project_id, route_id, delivery_id) VALUES ($1, $2, $3)
		ON CONFLICT DO NOTHING`, project, route, id)
	if err != nil {
		return false, err
	}
	return tag.RowsAffected() == 1, nil
}

// ReleaseDelivery forgets a delivery ClaimDelivery recorded, whose run did
// not succeed: the sender's retry runs.
func (s *Store) ReleaseDelivery(ctx context.Context, project, route, id string) (err error) {
	defer wrap(&err, "release delivery", project, route)
	_, err = s.db.Exec(ctx, "DELETE FROM webhook_deliveries WHERE project_id = $1 AND route_id = $2 AND delivery_id = $3", project, route, id)
	return err
}

// sweepDeliveries forgets deliveries older than deliveriesKept.
func (s *Store) sweepDeliveries(ctx context.Context) error {
	_, err := s.db.Exec(ctx, "DELETE FROM webhook_deliveries WHERE received_at < $1", time.Now().Add(-deliveriesKept))
	return err
}
