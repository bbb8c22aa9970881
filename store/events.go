package store

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Actor is who makes the changes of a request: the signed-in user and, when
// the request came with a personal access token, that token. Handlers put
// it on the request's context (WithActor); the store writes it into every
// event. A change without one (the first user made at start-up, a test
// calling the store) is written with no user.
type Actor struct {
	UserID   int64
	Username string
	TokenID  *int64
}

type actorKey struct{}

// WithActor returns ctx carrying a as the author of the changes made with it.
func WithActor(ctx context.Context, a Actor) context.Context {
	return context.WithValue(ctx, actorKey{}, a)
}

// Event is one change in the event log (docs/events.md): who made it, when, its
// type (route_update, vault_create, member_add …), the project it belongs
// to (nil for users, configs and global templates), the object's id or key
// and a short summary, which never holds a secret value.
type Event struct {
	ID        int64     `json:"id"`
	At        time.Time `json:"at"`
	UserID    *int64    `json:"uid"`
	Username  string    `json:"username"`
	TokenID   *int64    `json:"token_id"`
	Type      string    `json:"type"`
	ProjectID *string   `json:"project_id"`
	Object    string    `json:"object"`
	Summary   string    `json:"summary"`
}

// EventTypes are the types of events, by the object they tell of.
// vault_undelete and vault_destroy are no longer written (a delete is
// permanent since migration 024); the log keeps those it has.
var EventTypes = []string{
	"user_create", "user_role", "user_delete", "user_password", "password_reset_request", "password_reset",
	"token_create", "token_revoke",
	"config_create", "config_update", "config_delete",
	"project_create", "project_update", "project_delete", "member_add", "member_remove", "member_role",
	"invitation_create", "invitation_revoke", "invitation_accept",
	"route_create", "route_update", "route_upgrade", "route_restore", "route_delete",
	"route_test_create", "route_test_update", "route_test_delete",
	"schedule_create", "schedule_update", "schedule_delete", "job_cancel", "job_retry",
	"template_create", "template_update", "template_restore", "template_delete",
	"collection_create", "collection_update", "collection_delete", "record_create", "record_update", "record_delete", "record_import",
	"vault_create", "vault_update", "vault_restore", "vault_delete", "vault_undelete", "vault_destroy", "vault_import",
	"email_template_create", "email_template_update", "email_template_delete", "email_retry", "email_cancel",
}

// EventsKept is how long the event log keeps an event unless
// EVENT_RETENTION says otherwise.
const EventsKept = 90 * 24 * time.Hour

// summaryMax bounds a summary; what it quotes (a route's path, a name) is
// cut to fit.
const summaryMax = 300

// in returns the project id as an event's, nil for "".
func in(project string) *string {
	if project == "" {
		return nil
	}
	return &project
}

// change runs fn in one transaction (the caller's, when s is in one) and
// writes the event fn returns in it: the change and its event commit
// together or not at all. An error from fn writes nothing.
func (s *Store) change(ctx context.Context, fn func(tx *Store) (Event, error)) error {
	return s.InTx(ctx, func(tx *Store) error {
		ev, err := fn(tx)
		if err != nil {
			return err
		}
		return tx.writeEvent(ctx, ev)
	})
}

// writeEvent inserts ev with the context's actor, unless ev names its
// user already (a user who accepts an invitation is the actor of it).
func (s *Store) writeEvent(ctx context.Context, ev Event) error {
	ev.Summary = strings.ReplaceAll(ev.Summary, "%", "%%")
	_, err := s.db.Exec(ctx, `INSERT INTO events (uid, username, token_id, type, project_id, object, summary)
		VALUES ($1, $2, $3, $4, $5, $6, `+summarySQL("$7", "")+`)`, eventArgs(ctx, ev)...)
	return err
}

// eventCTE is a data-modifying CTE that writes an event in the statement
// it ends, for each row of that statement's CTE r (none: no event): a
// change that is one statement stays one round trip. Its parameters are
// $n to $n+6 (eventArgs); "%s" in the summary stands for r.version.
func eventCTE(n int) string {
	return fmt.Sprintf(`, e AS (INSERT INTO events (uid, username, token_id, type, project_id, object, summary)
		SELECT $%d, $%d, $%d, $%d, $%d, $%d, %s FROM r)`, n, n+1, n+2, n+3, n+4, n+5, summarySQL(fmt.Sprintf("$%d", n+6), ", r.version"))
}

// summarySQL is the summary as stored: the format param filled with args
// and cut to summaryMax characters with an ellipsis.
func summarySQL(param, args string) string {
	return fmt.Sprintf(`(SELECT CASE WHEN length(x) > %d THEN left(x, %d) || '…' ELSE x END FROM format(%s%s) AS x)`,
		summaryMax, summaryMax-1, param, args)
}

// eventArgs are the parameters of ev's row: the context's actor (unless
// ev names one), then type, project, object and summary.
func eventArgs(ctx context.Context, ev Event) []any {
	if a, ok := ctx.Value(actorKey{}).(Actor); ok && ev.UserID == nil {
		ev.UserID, ev.Username, ev.TokenID = &a.UserID, a.Username, a.TokenID
	}
	return []any{ev.UserID, ev.Username, ev.TokenID, ev.Type, ev.ProjectID, ev.Object, ev.Summary}
}

// EventQuery selects events: those of Projects only (nil: every event, for
// ROOT), narrowed by ProjectID, Type and UserID when set, newest first.
type EventQuery struct {
	Projects  []string
	ProjectID string
	Type      string
	UserID    int64
	Keyset
	Offset int
	Limit  int
}

// Events returns a page of the events q selects, newest first, and how many
// it selects: every one (event_counts, migration 034), but with UserID,
// up to LogCountCap (EventsCounted).
func (s *Store) Events(ctx context.Context, q EventQuery) (_ []Event, _ int, err error) {
	defer wrap(&err, "events")
	l, none := eventsSQL(q)
	if none {
		return []Event{}, 0, nil
	}
	return countedPage[Event](ctx, s.db, l, q.Offset, q.Limit)
}

// EventsCounted says whether q's count is exact: a count of one user's
// events stops at LogCountCap, shown as "10,000 or more".
func EventsCounted(q EventQuery) bool { return q.UserID == 0 }

// eventCountSQL is the count of events kept in event_counts, of the rows
// cond selects (its parameters the list's).
func eventCountSQL(cond string) string {
	return "SELECT coalesce(sum(n), 0) FROM event_counts" + cond
}

// eventsSQL is the count and the page of q's events; none says q
// selects nothing (a project outside q.Projects). As the run log's
// (runsSQL), a page of one project's or one user's events is ordered by
// that column, then id, the column bounded from both sides: an order only
// its index gives, so that the planner never walks the whole table's
// newest events backwards through the primary key for a project or user
// that was quiet lately. The count reads the same index in the same order
// (a project's events of one type have one of their own, migration 030).
func eventsSQL(q EventQuery) (l listSQL, none bool) {
	var where []string
	arg := func(cond string, v any) {
		l.args = append(l.args, v)
		where = append(where, strings.ReplaceAll(cond, "$?", "$"+strconv.Itoa(len(l.args))))
	}
	order := "id"
	switch {
	case q.ProjectID != "":
		if q.Projects != nil && !slices.Contains(q.Projects, q.ProjectID) {
			return listSQL{}, true
		}
		if q.Type != "" {
			// The project's events of a type have an index of their own
			// (migration 030): the project named by "=" and the type
			// bounded, the scan starts at them. With the project bounded
			// instead, it read every event of the project.
			arg("project_id = $?", q.ProjectID)
			arg("type >= $? AND type <= $?", q.Type)
			order = "type"
			l.writtenLimit = true
			break
		}
		if q.UserID != 0 {
			// A user's events in the project: their own index
			// (migration 044), both columns bounded and in its order,
			// which no other index gives.
			arg("project_id >= $? AND project_id <= $?", q.ProjectID)
			arg("uid >= $? AND uid <= $?", q.UserID)
			order = "project_id, uid"
			break
		}
		arg("project_id >= $? AND project_id <= $?", q.ProjectID)
		order = "project_id"
	case q.Projects != nil && q.UserID == 0:
		return projectsEventsSQL(q), false
	case q.Projects != nil:
		arg("project_id = ANY($?)", q.Projects)
	}
	if q.Type != "" && q.ProjectID == "" {
		arg("type = $?", q.Type)
	}
	if q.UserID != 0 && order != "project_id, uid" {
		if q.ProjectID == "" {
			arg("uid >= $? AND uid <= $?", q.UserID)
			order = "uid"
		} else {
			arg("uid = $?", q.UserID)
		}
	}
	cond := " WHERE true"
	if len(where) > 0 {
		cond = " WHERE " + strings.Join(where, " AND ")
	}
	newest := orderBy(order, false)
	n := len(l.args)
	bound, kargs, ascending := q.bound(n + 1)
	l.pageArgs = kargs
	l.ascending = ascending
	switch {
	case q.UserID != 0:
		l.count = "SELECT count(*) FROM (SELECT 1 FROM events" + cond + newest + " LIMIT " + strconv.Itoa(LogCountCap) + ") AS capped"
		l.planCount = true
	case q.ProjectID != "" && q.Type != "":
		l.count = eventCountSQL(" WHERE project_id = $1 AND type = $2")
	case q.ProjectID != "":
		l.count = eventCountSQL(" WHERE project_id = $1")
	case q.Type != "":
		l.count = eventCountSQL(" WHERE type = $1")
	default:
		l.count = eventCountSQL("")
	}
	l.page = `SELECT id, at, uid, username, token_id, type, project_id, object, summary FROM events` + cond + bound + orderBy(order, ascending)
	return l, false
}

// projectsEventsSQL is eventsSQL for the events of several projects (an
// ADMIN's log of theirs): each project's newest, read by its own index as
// one project's are, at most as many as the page needs (or the count's
// cap), then merged newest first (offset + limit of each, saturating: an
// offset near the largest bigint is a page past the end, not an
// overflow). By id alone, the log walked every newer event of the
// service's other projects.
func projectsEventsSQL(q EventQuery) listSQL {
	l := listSQL{args: []any{q.Projects}}
	cond, column := "project_id >= p.id AND project_id <= p.id", "project_id"
	if q.Type != "" { // as eventsSQL's of one project
		l.args = append(l.args, q.Type)
		cond, column = "project_id = p.id AND type >= $2 AND type <= $2", "type"
	}
	n := len(l.args)
	bound, kargs, ascending := q.bound(n + 1)
	l.pageArgs, n = kargs, n+len(kargs)
	l.ascending = ascending
	each := func(columns, cond, order, limit string) string {
		return "FROM unnest($1::text[]) AS p(id) CROSS JOIN LATERAL (SELECT " + columns + " FROM events WHERE " + cond + order + " LIMIT " + limit + ") e"
	}
	const columns = "id, at, uid, username, token_id, type, project_id, object, summary"
	off, lim := "$"+strconv.Itoa(n+1), "$"+strconv.Itoa(n+2)
	dir := " DESC"
	if ascending {
		dir = ""
	}
	l.count = eventCountSQL(" WHERE project_id = ANY($1)")
	if q.Type != "" {
		l.count = eventCountSQL(" WHERE project_id = ANY($1) AND type = $2")
	}
	l.page = "SELECT e.id, e.at, e.uid, e.username, e.token_id, e.type, e.project_id, e.object, e.summary " +
		each(columns, cond+bound, orderBy(column, ascending), "least("+off+"::bigint, "+strconv.FormatInt(math.MaxInt64, 10)+" - "+lim+") + "+lim) +
		" ORDER BY e.id" + dir // then its offset and limit, off and lim (pageStatement)
	return l
}

// sweepEvents removes the events older than kept, then folds the event
// counts (see foldCounts).
func (s *Store) sweepEvents(ctx context.Context, kept time.Duration) error {
	if err := s.sweepLog(ctx, eventLog, kept); err != nil {
		return err
	}
	return s.foldCounts(ctx, "event_counts", "project_id, type, day")
}

// foldCounts folds a table of counts kept as rows of deltas (event_counts,
// record_counts) into one row a key: the rows its snapshot sees are
// deleted and their sums inserted, while rows writers insert meanwhile
// stay as they are; a key whose sum is 0 goes. One instance folds a table
// at a time (the others skip it).
func (s *Store) foldCounts(ctx context.Context, table, key string) error {
	return s.InTx(ctx, func(tx *Store) error {
		var mine bool
		if err := tx.db.QueryRow(ctx, "SELECT pg_try_advisory_xact_lock(hashtextextended($1, 0))", table).Scan(&mine); err != nil || !mine {
			return err
		}
		_, err := tx.db.Exec(ctx, `WITH gone AS (DELETE FROM `+table+` RETURNING `+key+`, n)
			INSERT INTO `+table+` (`+key+`, n)
			SELECT `+key+`, sum(n) FROM gone GROUP BY `+key+` HAVING sum(n) <> 0`)
		return err
	})
}
