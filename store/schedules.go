package store

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Schedule runs a route at the ticks of a cron expression read in a time
// zone, with the query and body it keeps (docs/schedules.md). Ticks after
// Since run: its creation, a change of its expression or zone, its
// resumption.
type Schedule struct {
	ID        int64
	ProjectID string
	RouteID   string
	Cron      string
	Timezone  string
	Query     string
	Body      json.RawMessage // nil: none
	Active    bool
	Since     time.Time
	CreatedBy *int64
	CreatedAt time.Time
	UpdatedAt time.Time
}

const scheduleColumns = "id, project_id, route_id, cron, timezone, query, body, active, since, created_by, created_at, updated_at"

func scanSchedule(row pgx.CollectableRow) (Schedule, error) {
	var sc Schedule
	var body []byte
	err := row.Scan(&sc.ID, &sc.ProjectID, &sc.RouteID, &sc.Cron, &sc.Timezone, &sc.Query, &body, &sc.Active, &sc.Since,
		&sc.CreatedBy, &sc.CreatedAt, &sc.UpdatedAt)
	if body != nil {
		sc.Body = body
	}
	return sc, err
}

// scheduleEvent tells of a change of schedule id of a route.
func scheduleEvent(verb string, sc *Schedule, summary string) Event {
	return Event{Type: "schedule_" + verb, ProjectID: in(sc.ProjectID), Object: sc.RouteID + "/" + strconv.FormatInt(sc.ID, 10), Summary: summary}
}

// bodyArg is a schedule's body as a statement takes it: NULL for none.
func bodyArg(b json.RawMessage) any {
	if len(b) == 0 {
		return nil
	}
	return string(b)
}

// CreateSchedule inserts sc, made by user uid; its route must exist
// (ErrNotFound).
func (s *Store) CreateSchedule(ctx context.Context, sc *Schedule, uid int64) (err error) {
	defer wrap(&err, "create schedule", sc.ProjectID, sc.RouteID)
	return s.change(ctx, func(tx *Store) (Event, error) {
		var by *int64
		if uid > 0 {
			by = &uid
		}
		row, err := tx.db.Query(ctx, `INSERT INTO route_schedules (project_id, route_id, cron, timezone, query, body, active, created_by)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING `+scheduleColumns,
			sc.ProjectID, sc.RouteID, sc.Cron, sc.Timezone, sc.Query, bodyArg(sc.Body), sc.Active, by)
		if err != nil {
			return Event{}, translate(err)
		}
		made, err := pgx.CollectExactlyOneRow(row, scanSchedule)
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "23503" { // no such route
			return Event{}, ErrNotFound
		}
		if err != nil {
			return Event{}, translate(err)
		}
		*sc = made
		return scheduleEvent("create", sc, "schedule "+sc.Cron+" ("+sc.Timezone+") of route "+sc.RouteID+" created"), nil
	})
}

// UpdateSchedule stores sc's expression, zone, query, body and whether it
// is active. A change of the expression or the zone, or a resumption,
// moves Since to now: ticks before it never run.
func (s *Store) UpdateSchedule(ctx context.Context, sc *Schedule) (err error) {
	defer wrap(&err, "update schedule", sc.ProjectID, strconv.FormatInt(sc.ID, 10))
	return s.change(ctx, func(tx *Store) (Event, error) {
		row, err := tx.db.Query(ctx, `UPDATE route_schedules SET cron = $3, timezone = $4, query = $5, body = $6, active = $7,
				since = CASE WHEN cron <> $3 OR timezone <> $4 OR ($7 AND NOT active) THEN now() ELSE since END, updated_at = now()
			WHERE project_id = $1 AND id = $2 RETURNING `+scheduleColumns,
			sc.ProjectID, sc.ID, sc.Cron, sc.Timezone, sc.Query, bodyArg(sc.Body), sc.Active)
		if err != nil {
			return Event{}, translate(err)
		}
		got, err := pgx.CollectExactlyOneRow(row, scanSchedule)
		if err != nil {
			return Event{}, translate(err)
		}
		*sc = got
		verb := "changed"
		if !sc.Active {
			verb = "changed (paused)"
		}
		return scheduleEvent("update", sc, "schedule "+strconv.FormatInt(sc.ID, 10)+" of route "+sc.RouteID+" "+verb), nil
	})
}

// DeleteSchedule removes schedule id of project.
func (s *Store) DeleteSchedule(ctx context.Context, project string, id int64) (err error) {
	defer wrap(&err, "delete schedule", project, strconv.FormatInt(id, 10))
	return s.change(ctx, func(tx *Store) (Event, error) {
		var route string
		err := tx.db.QueryRow(ctx, "DELETE FROM route_schedules WHERE project_id = $1 AND id = $2 RETURNING route_id", project, id).Scan(&route)
		if err != nil {
			return Event{}, translate(err)
		}
		sc := Schedule{ID: id, ProjectID: project, RouteID: route}
		return scheduleEvent("delete", &sc, "schedule "+strconv.FormatInt(id, 10)+" of route "+route+" deleted"), nil
	})
}

// ScheduleByID returns schedule id of project.
func (s *Store) ScheduleByID(ctx context.Context, project string, id int64) (_ Schedule, err error) {
	defer wrap(&err, "schedule", project, strconv.FormatInt(id, 10))
	rows, err := s.db.Query(ctx, "SELECT "+scheduleColumns+" FROM route_schedules WHERE project_id = $1 AND id = $2", project, id)
	if err != nil {
		return Schedule{}, err
	}
	sc, err := pgx.CollectExactlyOneRow(rows, scanSchedule)
	return sc, translate(err)
}

// Schedules lists a project's schedules, of one route when route is not
// "", by route and id.
func (s *Store) Schedules(ctx context.Context, project, route string) (_ []Schedule, err error) {
	defer wrap(&err, "schedules", project)
	rows, err := s.db.Query(ctx, "SELECT "+scheduleColumns+` FROM route_schedules
		WHERE project_id = $1 AND ($2 = '' OR route_id = $2) ORDER BY route_id, id LIMIT 1000`, project, route)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, scanSchedule)
}

// ActiveSchedules lists every active schedule of every project, for the
// scheduler.
func (s *Store) ActiveSchedules(ctx context.Context) (_ []Schedule, err error) {
	defer wrap(&err, "active schedules")
	rows, err := s.db.Query(ctx, "SELECT "+scheduleColumns+" FROM route_schedules WHERE active ORDER BY id")
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, scanSchedule)
}

// The states of a schedule's tick (schedule_ticks).
const (
	TickRunning = "running"
	TickDone    = "done"
	TickSkipped = "skipped"
)

// ClaimTick claims tick of schedule id for this instance, and says how:
// TickRunning (run it), TickSkipped (the schedule's previous run still
// runs: a run claimed less than stale ago and not done), or "" when
// another instance claimed it first.
func (s *Store) ClaimTick(ctx context.Context, id int64, tick time.Time, stale time.Duration) (state string, err error) {
	defer wrap(&err, "claim tick", strconv.FormatInt(id, 10))
	err = s.db.QueryRow(ctx, `INSERT INTO schedule_ticks (schedule_id, tick, state)
		SELECT $1, $2, CASE WHEN EXISTS (SELECT 1 FROM schedule_ticks WHERE schedule_id = $1 AND tick < $2 AND state = 'running'
			AND claimed_at > now() - $3 * interval '1 microsecond') THEN 'skipped' ELSE 'running' END
		ON CONFLICT DO NOTHING RETURNING state`, id, tick, stale.Microseconds()).Scan(&state)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	return state, err
}

// FinishTick records that the run of a claimed tick ended with status.
func (s *Store) FinishTick(ctx context.Context, id int64, tick time.Time, status int) (err error) {
	defer wrap(&err, "finish tick", strconv.FormatInt(id, 10))
	_, err = s.db.Exec(ctx, "UPDATE schedule_ticks SET state = 'done', status = $3, finished_at = now() WHERE schedule_id = $1 AND tick = $2",
		id, tick, status)
	return err
}

// Tick is a tick of a schedule as it went.
type Tick struct {
	Tick       time.Time
	State      string
	Status     *int
	ClaimedAt  time.Time
	FinishedAt *time.Time
}

// Ticks lists the newest ticks of each schedule of ids, at most limit a
// schedule, newest first, by schedule id: one statement for a list.
func (s *Store) Ticks(ctx context.Context, ids []int64, limit int) (_ map[int64][]Tick, err error) {
	defer wrap(&err, "ticks")
	out := map[int64][]Tick{}
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := s.db.Query(ctx, `SELECT t.schedule_id, t.tick, t.state, t.status, t.claimed_at, t.finished_at
		FROM unnest($1::bigint[]) AS q (id), LATERAL (
			SELECT * FROM schedule_ticks WHERE schedule_id = q.id ORDER BY tick DESC LIMIT $2) AS t
		ORDER BY t.schedule_id, t.tick DESC`, ids, limit)
	if err != nil {
		return nil, err
	}
	var id int64
	var t Tick
	_, err = pgx.ForEachRow(rows, []any{&id, &t.Tick, &t.State, &t.Status, &t.ClaimedAt, &t.FinishedAt}, func() error {
		out[id] = append(out[id], t)
		return nil
	})
	return out, err
}

// sweepTicks forgets ticks older than the run log keeps runs.
func (s *Store) sweepTicks(ctx context.Context) error {
	_, err := s.db.Exec(ctx, "DELETE FROM schedule_ticks WHERE tick < $1", time.Now().Add(-RunsKept))
	return err
}
