package store

import "context"

// TakeXRate counts one request of client (an address) at project's /x
// routes against a limit of rate requests a second with burst at once,
// and says whether it may run. The state is one row per project and
// client, shared by every instance, changed in one statement: two
// instances never both let the same request through. A client's row ends
// its bucket's emptying time (the generic cell rate algorithm); a request
// that would push it past burst intervals from now is refused and changes
// nothing.
func (s *Store) TakeXRate(ctx context.Context, project, client string, rate, burst int) (_ bool, err error) {
	defer wrap(&err, "take x rate", project)
	interval := 1 / float64(rate)
	rows, err := s.db.Query(ctx, `INSERT INTO x_rates AS r (project_id, client, tat)
		VALUES ($1, $2, now() + make_interval(secs => $3))
		ON CONFLICT (project_id, client) DO UPDATE SET tat = greatest(r.tat, now()) + make_interval(secs => $3)
		WHERE greatest(r.tat, now()) + make_interval(secs => $3) <= now() + make_interval(secs => $3 * $4)
		RETURNING true`, project, client, interval, burst)
	if err != nil {
		return false, err
	}
	defer rows.Close()
	allowed := rows.Next()
	return allowed, rows.Err()
}
