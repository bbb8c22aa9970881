package store

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/jackc/pgx/v5"

	"stencil/schema"
)

// The indexes of unique and indexed fields (docs/collections.md): one
// index of the records table per field, partial to its collection, built
// with CREATE INDEX CONCURRENTLY (reads and writes go on while it builds)
// before the fields that need it are stored, and dropped the same way
// once they no longer do.

// fieldIndex is the index a unique or indexed field has.
type fieldIndex struct {
	name, field string
	ddl         string // CREATE INDEX CONCURRENTLY …
}

// FieldValueSQL is the expression a field's index keeps of a record: the
// value as jsonb (1 and 1.0 are one number), null for JSON null, and an
// email's text in lower case (one address whatever its case).
func FieldValueSQL(f schema.Field) string {
	if f.Type == schema.Email {
		return "lower(data ->> " + literal(f.Name) + ")"
	}
	return "NULLIF(data -> " + literal(f.Name) + ", 'null'::jsonb)"
}

// literal quotes s as an SQL string literal.
func literal(s string) string {
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}

// scopeSQL is the predicate of a collection's field indexes.
func scopeSQL(project, collection string) string {
	return "project_id = " + literal(project) + " AND collection_id = " + literal(collection)
}

// fieldIndexes lists the indexes the unique and indexed fields of sch need.
func fieldIndexes(project, collection string, sch schema.Schema) []fieldIndex {
	var out []fieldIndex
	for _, f := range sch.Fields {
		if !f.Unique && !f.Indexed {
			continue
		}
		ix := fieldIndex{name: FieldIndex(project, collection, f.Name, f.Unique), field: f.Name}
		if f.Unique {
			ix.ddl = fmt.Sprintf("CREATE UNIQUE INDEX CONCURRENTLY %s ON records ((%s)) WHERE %s", ix.name, FieldValueSQL(f), scopeSQL(project, collection))
		} else {
			// With the id: a match's newest first, read in index order.
			ix.ddl = fmt.Sprintf("CREATE INDEX CONCURRENTLY %s ON records ((%s), id) WHERE %s", ix.name, FieldValueSQL(f), scopeSQL(project, collection))
		}
		out = append(out, ix)
	}
	return out
}

// buildFieldIndexes builds the indexes of next that cur has not, on the
// pool (CREATE INDEX CONCURRENTLY runs in no transaction), and returns
// their names. A unique index that stored records break is not left
// behind: the refusal is a *FieldsRefused naming them.
func (s *Store) buildFieldIndexes(ctx context.Context, project, collection string, cur, next schema.Schema) ([]string, error) {
	have := map[string]bool{}
	for _, ix := range fieldIndexes(project, collection, cur) {
		have[ix.name] = true
	}
	var built []string
	for _, ix := range fieldIndexes(project, collection, next) {
		if have[ix.name] {
			continue
		}
		// One left by a build that failed is invalid: build it anew.
		if _, err := s.pool.Exec(ctx, "DROP INDEX CONCURRENTLY IF EXISTS "+ix.name); err != nil {
			return built, err
		}
		if _, err := s.pool.Exec(ctx, ix.ddl); err != nil {
			_, _ = s.pool.Exec(context.WithoutCancel(ctx), "DROP INDEX CONCURRENTLY IF EXISTS "+ix.name)
			var conflict *ConflictError
			if err = translate(err); errors.As(err, &conflict) {
				f, _ := next.Field(ix.field)
				return built, s.duplicates(ctx, project, collection, f)
			}
			return built, err
		}
		built = append(built, ix.name)
	}
	return built, nil
}

// duplicates names the records holding a value of f that another record
// of the collection holds too.
func (s *Store) duplicates(ctx context.Context, project, collection string, f schema.Field) error {
	value := FieldValueSQL(f)
	rows, err := s.pool.Query(ctx, fmt.Sprintf(`SELECT id, count(*) OVER () FROM records r
		WHERE %[1]s AND %[2]s IN (SELECT %[2]s FROM records WHERE %[1]s AND %[2]s IS NOT NULL GROUP BY 1 HAVING count(*) > 1)
		ORDER BY id LIMIT %[3]d`, scopeSQL(project, collection), value, maxRefusedIDs))
	if err != nil {
		return err
	}
	refused := &FieldsRefused{First: &schema.Violation{Field: f.Name, Message: "must be unique"}}
	var id int64
	_, err = pgx.ForEachRow(rows, []any{&id, &refused.Count}, func() error {
		refused.IDs = append(refused.IDs, id)
		return nil
	})
	if err != nil {
		return err
	}
	if refused.Count == 0 {
		// Written meanwhile and gone again: try the change once more.
		return ErrStale
	}
	return refused
}

// dropFieldIndexes drops the indexes named, as they build: without
// blocking the records' reads and writes.
func (s *Store) dropFieldIndexes(ctx context.Context, names []string) error {
	for _, name := range names {
		if _, err := s.pool.Exec(ctx, "DROP INDEX CONCURRENTLY IF EXISTS "+name); err != nil {
			return err
		}
	}
	return nil
}

// unusedFieldIndexes names the indexes of cur that next does not keep.
func unusedFieldIndexes(project, collection string, cur, next schema.Schema) []string {
	keep := map[string]bool{}
	for _, ix := range fieldIndexes(project, collection, next) {
		keep[ix.name] = true
	}
	var out []string
	for _, ix := range fieldIndexes(project, collection, cur) {
		if !keep[ix.name] {
			out = append(out, ix.name)
		}
	}
	return out
}

// indexScope reads the project and collection of a field index from its
// definition (its predicate, scopeSQL as PostgreSQL prints it).
var indexScope = regexp.MustCompile(`project_id = '([a-z0-9_]+)'::text\) AND \(collection_id = '([a-z0-9_]+)'::text`)

// sweepFieldIndexes drops the field indexes of collections that no longer
// exist, deleted with their project or alone. (A change of fields drops
// the indexes it no longer needs itself; one that stopped halfway leaves
// an index the next change of that field builds anew.)
func (s *Store) sweepFieldIndexes(ctx context.Context) error {
	rows, err := s.db.Query(ctx, `SELECT i.indexname, i.indexdef FROM pg_indexes i
		WHERE i.schemaname = current_schema() AND i.tablename = 'records' AND (i.indexname LIKE 'records\_u\_%' OR i.indexname LIKE 'records\_i\_%')`)
	if err != nil {
		return err
	}
	type index struct{ name, def string }
	var list []index
	var ix index
	if _, err := pgx.ForEachRow(rows, []any{&ix.name, &ix.def}, func() error {
		list = append(list, ix)
		return nil
	}); err != nil {
		return err
	}
	for _, ix := range list {
		m := indexScope.FindStringSubmatch(ix.def)
		if m == nil {
			continue
		}
		_, err := s.tryFieldsLock(ctx, m[1], m[2], func() error {
			var exists bool
			err := s.pool.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM collections WHERE project_id = $1 AND id = $2)", m[1], m[2]).Scan(&exists)
			if err != nil || exists {
				return err
			}
			return s.dropFieldIndexes(ctx, []string{ix.name})
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// withFieldsLock runs fn holding a session advisory lock named for the
// collection: the changes that build or drop its field indexes (a
// create, a change of fields, a delete, the sweep of indexes left) never
// overlap, so none drops an index another has just built.
func (s *Store) withFieldsLock(ctx context.Context, project, collection string, fn func() error) (err error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	key := "stencil.fields:" + project + "/" + collection
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock(hashtextextended($1, 0))", key); err != nil {
		return err
	}
	defer func() {
		if _, uerr := conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock(hashtextextended($1, 0))", key); uerr != nil {
			conn.Conn().Close(context.WithoutCancel(ctx)) // ends the session, and so its lock
		}
	}()
	return fn()
}

// tryFieldsLock is withFieldsLock that skips fn (false) when another
// holds the lock.
func (s *Store) tryFieldsLock(ctx context.Context, project, collection string, fn func() error) (bool, error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return false, err
	}
	defer conn.Release()
	key := "stencil.fields:" + project + "/" + collection
	var got bool
	if err := conn.QueryRow(ctx, "SELECT pg_try_advisory_lock(hashtextextended($1, 0))", key).Scan(&got); err != nil || !got {
		return false, err
	}
	defer func() {
		if _, uerr := conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock(hashtextextended($1, 0))", key); uerr != nil {
			conn.Conn().Close(context.WithoutCancel(ctx))
		}
	}()
	return true, fn()
}
