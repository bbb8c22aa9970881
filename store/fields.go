package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"stencil/schema"
)

// The fields of typed collections (docs/collections.md): every write of a
// record checks its data against its collection's schema in the service
// (schema.Prepare), and confirms in its own statement, through
// records_fields_hold (migration 050), that the schema checked against is
// still the collection's. That function share-locks the collection's row,
// so a change of the fields waits for the writes in flight and holds new
// ones off until it commits; a write that checked against fields changed
// meanwhile fails with a serialization failure and is checked again.

// maxSchemas bounds the schemas kept: past it the cache starts afresh.
const maxSchemas = 10_000

// schemaCache keeps collections' schemas as last read, by project and
// collection, shared by a pool's Store and its transactions'. A stale
// entry costs a write a retry, never a record checked against old fields.
type schemaCache struct {
	mu sync.RWMutex
	m  map[collectionKey]*schema.Schema
}

type collectionKey struct{ project, collection string }

func newSchemaCache() *schemaCache {
	return &schemaCache{m: map[collectionKey]*schema.Schema{}}
}

func (c *schemaCache) get(k collectionKey) *schema.Schema {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.m[k]
}

func (c *schemaCache) put(k collectionKey, s *schema.Schema) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= maxSchemas {
		clear(c.m)
	}
	c.m[k] = s
}

// note forgets the schema a write found changed (err, from
// records_fields_hold).
func (c *schemaCache) note(err error) {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "40001" {
		return
	}
	name, ok := strings.CutPrefix(pgErr.Hint, fieldsChangedHint)
	if !ok {
		return
	}
	project, collection, _ := strings.Cut(name, "/")
	c.mu.Lock()
	delete(c.m, collectionKey{project, collection})
	c.mu.Unlock()
}

// forget drops a collection's schema (its fields changed here).
func (c *schemaCache) forget(project, collection string) {
	c.mu.Lock()
	delete(c.m, collectionKey{project, collection})
	c.mu.Unlock()
}

// fieldsChangedHint leads the hint of records_fields_hold's failure.
const fieldsChangedHint = "stencil.fields:"

// FieldsChanged says whether err is a write that checked a record against
// fields its collection no longer has: run again, it checks against the
// new ones.
func FieldsChanged(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "40001" && strings.HasPrefix(pgErr.Hint, fieldsChangedHint)
}

// holdSQL is the condition a write of a record puts first: the fields are
// still those its data was checked against ($h, their hash), or false
// when the collection ($p, $c) does not exist.
func holdSQL(p, c, h string) string {
	return "records_fields_hold(" + p + ", " + c + ", " + h + ")"
}

// Schema returns the fields of a project's collection (ErrNotFound when
// it does not exist), from the cache when they were read before.
func (s *Store) Schema(ctx context.Context, project, collection string) (_ *schema.Schema, err error) {
	k := collectionKey{project, collection}
	if sch := s.schemas.get(k); sch != nil {
		return sch, nil
	}
	defer wrap(&err, "schema", project, collection)
	var fields []byte
	sch := &schema.Schema{}
	err = s.db.QueryRow(ctx, "SELECT fields, NOT additional FROM collections WHERE project_id = $1 AND id = $2",
		project, collection).Scan(&fields, &sch.Strict)
	if err != nil {
		return nil, translate(err)
	}
	if err := json.Unmarshal(fields, &sch.Fields); err != nil {
		return nil, err
	}
	if err := sch.Compile(); err != nil {
		return nil, err
	}
	s.schemas.put(k, sch)
	return sch, nil
}

// prepareRecord checks a record's data as every write does: its shape
// (RecordData), then its collection's fields, a default given to each
// field absent on create, and each reference's record there. It returns
// the data to write and the hash its statement confirms.
func (s *Store) prepareRecord(ctx context.Context, project, collection string, raw []byte, create bool) (json.RawMessage, string, error) {
	data, err := RecordData(raw)
	if err != nil {
		return nil, "", err
	}
	sch, err := s.Schema(ctx, project, collection)
	if err != nil {
		return nil, "", err
	}
	data, refs, err := sch.Prepare(data, create)
	if err != nil {
		return nil, "", err
	}
	if len(refs) > 0 {
		if err := s.checkRefs(ctx, project, refs); err != nil {
			return nil, "", err
		}
	}
	return data, sch.Hash(), nil
}

// checkRefs confirms that each reference's record exists, and keeps it
// from being deleted until the write commits (a key-share lock, as a
// foreign key takes).
func (s *Store) checkRefs(ctx context.Context, project string, refs []schema.Ref) error {
	missing, err := s.missingRefs(ctx, project, refs, 1)
	if err != nil || len(missing) == 0 {
		return err
	}
	r := refs[missing[0]]
	return &schema.Violation{Field: r.Field, Message: refMessage(r)}
}

// missingRefs gives the places in refs, in order and at most limit, of
// the references whose record does not exist; those that do are
// key-share locked for the rest of the transaction (none: a read alone).
func (s *Store) missingRefs(ctx context.Context, project string, refs []schema.Ref, limit int) ([]int, error) {
	collections, ids := make([]string, len(refs)), make([]int64, len(refs))
	for i, r := range refs {
		collections[i], ids[i] = r.Collection, r.ID
	}
	rows, err := s.db.Query(ctx, `SELECT q.n - 1 FROM unnest($2::text[], $3::bigint[]) WITH ORDINALITY AS q (collection_id, id, n)
		WHERE NOT EXISTS (SELECT 1 FROM records r WHERE r.project_id = $1 AND r.collection_id = q.collection_id AND r.id = q.id FOR KEY SHARE)
		ORDER BY q.n LIMIT $4`, project, collections, ids, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[int])
}

// refMessage says what a reference whose record does not exist must be.
func refMessage(r schema.Ref) string { return "must be the id of a record of " + r.Collection }

// retryFields runs a write again when the fields it checked against
// changed meanwhile (FieldsChanged), a few times.
func retryFields(fn func() error) error {
	var err error
	for range 3 {
		if err = fn(); !FieldsChanged(err) {
			return err
		}
	}
	return err
}

// FieldIndex names the index of a unique or indexed field: a hash of its
// collection and name, since those together pass PostgreSQL's 63
// characters.
func FieldIndex(project, collection, field string, unique bool) string {
	kind := "records_i_"
	if unique {
		kind = "records_u_"
	}
	sum := sha256.Sum256([]byte(project + "/" + collection + "/" + field))
	return kind + hex.EncodeToString(sum[:12])
}

// uniqueViolation turns err, when it is a conflict on the unique index of
// a field of the collection, into the field's *schema.Violation.
func (s *Store) uniqueViolation(ctx context.Context, project, collection string, err error) error {
	var conflict *ConflictError
	if !errors.As(err, &conflict) || !strings.HasPrefix(conflict.Constraint, "records_u_") {
		return err
	}
	sch, serr := s.Schema(ctx, project, collection)
	if serr != nil {
		return err
	}
	for _, f := range sch.Fields {
		if f.Unique && FieldIndex(project, collection, f.Name, true) == conflict.Constraint {
			return &schema.Violation{Field: f.Name, Message: "must be unique", Conflict: true}
		}
	}
	return err
}

// fieldsJSON is a schema's fields as the collections table keeps them.
func fieldsJSON(s schema.Schema) (string, error) {
	if s.Fields == nil {
		return "[]", nil
	}
	text, err := json.Marshal(s.Fields)
	return string(text), err
}

// FieldsRefused is a change of a collection's fields that records already
// stored break: how many, the ids of the first (at most 10) and what the
// first of them breaks.
type FieldsRefused struct {
	Count int
	IDs   []int64
	First *schema.Violation
}

func (e *FieldsRefused) Error() string {
	ids := make([]string, len(e.IDs))
	for i, id := range e.IDs {
		ids[i] = strconv.FormatInt(id, 10)
	}
	if e.Count == 1 {
		return fmt.Sprintf("1 record does not fit: %s (id %s)", e.First, ids[0])
	}
	return fmt.Sprintf("%d records do not fit: %s (ids %s)", e.Count, e.First, strings.Join(ids, ", "))
}

// maxRefusedIDs is how many ids a FieldsRefused names.
const maxRefusedIDs = 10

// FieldsChange is what a change of fields does to the records beside
// checking them: Rename moves each renamed field's values (old name → new
// name) to the new name, then Backfill fills new fields (field → value)
// into the records that lack them or hold null.
type FieldsChange struct {
	Rename   map[string]string
	Backfill map[string]json.RawMessage
}

// fitCheck checks records against a schema for a change of fields, each
// first changed as the change does (renamed, then backfilled), and
// gathers those that break it.
type fitCheck struct {
	next    *schema.Schema
	change  FieldsChange
	refused FieldsRefused
}

func (f *fitCheck) record(id int64, data []byte) error {
	if len(f.change.Rename) > 0 || len(f.change.Backfill) > 0 {
		var doc map[string]json.RawMessage
		if err := json.Unmarshal(data, &doc); err != nil {
			return err
		}
		for old, name := range f.change.Rename {
			v, ok := doc[old]
			if !ok {
				continue
			}
			if _, taken := doc[name]; taken {
				f.refuse(id, &schema.Violation{Field: name, Message: "already holds a value: renaming " + old + " would overwrite it"})
				return nil
			}
			doc[name] = v
			delete(doc, old)
		}
		for k, v := range f.change.Backfill {
			if cur, ok := doc[k]; !ok || string(cur) == "null" {
				doc[k] = v
			}
		}
		var err error
		if data, err = json.Marshal(doc); err != nil {
			return err
		}
	}
	_, _, err := f.next.Prepare(data, false)
	var v *schema.Violation
	switch {
	case errors.As(err, &v):
		f.refuse(id, v)
		return nil
	default:
		return err
	}
}

// refuse counts record id as one that breaks the change, by v.
func (f *fitCheck) refuse(id int64, v *schema.Violation) {
	if f.refused.Count == 0 {
		f.refused.First = v
	}
	if f.refused.Count++; len(f.refused.IDs) < maxRefusedIDs {
		f.refused.IDs = append(f.refused.IDs, id)
	}
}

// SetFields changes a collection's fields to next (its definitions checked
// by the caller: schema.Schema.Check), filling backfill's fields (field →
// value, each of next) in the records that lack them. Records that would
// break next refuse the change whole, a *FieldsRefused; so does a change
// of the fields by another meanwhile (ErrStale).
//
// Every record is first checked on a snapshot, with no lock: reads and
// writes go on. Then one transaction locks the collection's row (a write
// of a record holds a share lock on it, so this waits for the writes in
// flight and holds new ones off), checks again the records written since
// that snapshot, fills the backfill and stores the fields: writes wait for
// that final step only (docs/collections.md).
func (s *Store) SetFields(ctx context.Context, project, collection string, next schema.Schema, backfill map[string]json.RawMessage) (err error) {
	defer wrap(&err, "set fields", project, collection)
	return s.fieldsChange(ctx, project, collection, next, FieldsChange{Backfill: backfill}, nil)
}

// UpdateCollectionFields is SetFields with a change that may also rename
// fields (with their values, in the final step), and that also stores c's
// name and description, in the same transaction and event (c.Schema
// becomes next). The caller checks the change against c's fields and next
// (a renamed field is one of c's, not of next; its new name one of next's).
func (s *Store) UpdateCollectionFields(ctx context.Context, c *Collection, next schema.Schema, change FieldsChange) (err error) {
	defer wrap(&err, "update collection fields", c.ProjectID, c.ID)
	return s.fieldsChange(ctx, c.ProjectID, c.ID, next, change, c)
}

func (s *Store) fieldsChange(ctx context.Context, project, collection string, next schema.Schema, change FieldsChange, named *Collection) error {
	if inTransaction(s.db) {
		return s.setFields(ctx, project, collection, next, change, named)
	}
	return s.withFieldsLock(ctx, project, collection, func() error {
		return s.setFields(ctx, project, collection, next, change, named)
	})
}

func (s *Store) setFields(ctx context.Context, project, collection string, next schema.Schema, change FieldsChange, named *Collection) error {
	cur, err := s.Collection(ctx, project, collection)
	if err != nil {
		return err
	}
	before := cur.Schema.Hash()
	check := &fitCheck{next: &next, change: change}
	var xmin string
	err = s.inReadSnapshot(ctx, func(tx *Store) error {
		// The oldest transaction the snapshot does not see: a record
		// written since has an xmin at least as new.
		if err := tx.db.QueryRow(ctx, "SELECT pg_snapshot_xmin(pg_current_snapshot())::text").Scan(&xmin); err != nil {
			return err
		}
		return tx.eachRecord(ctx, project, collection, "", check.record)
	})
	if err != nil {
		return err
	}
	if check.refused.Count > 0 {
		return &check.refused
	}
	fields, err := fieldsJSON(next)
	if err != nil {
		return err
	}
	built, err := s.fieldIndexesFor(ctx, project, collection, cur.Schema, next)
	if err != nil {
		return err
	}
	err = s.change(ctx, func(tx *Store) (Event, error) {
		name, description := cur.Name, cur.Description
		if named != nil {
			name, description = named.Name, named.Description
		}
		err := tx.db.QueryRow(ctx, `UPDATE collections SET fields = $3, additional = $4, fields_hash = $5, name = $7, description = $8, updated_at = now()
			WHERE project_id = $1 AND id = $2 AND fields_hash = $6 RETURNING created_by, created_at, updated_at`,
			project, collection, fields, !next.Strict, next.Hash(), before, name, description).Scan(&cur.CreatedBy, &cur.CreatedAt, &cur.UpdatedAt)
		if errors.Is(err, pgx.ErrNoRows) {
			return Event{}, ErrStale
		}
		if err != nil {
			return Event{}, err
		}
		if named != nil {
			named.CreatedBy, named.CreatedAt, named.UpdatedAt, named.Schema = cur.CreatedBy, cur.CreatedAt, cur.UpdatedAt, next
		}
		// age() compares 32-bit transaction ids as PostgreSQL does, past
		// their wraparound.
		since := ` AND age(xmin) <= age(($3::bigint % 4294967296)::text::xid)`
		if err := tx.eachRecord(ctx, project, collection, since, check.record, xmin); err != nil {
			return Event{}, err
		}
		if check.refused.Count > 0 {
			return Event{}, &check.refused
		}
		if len(change.Rename) > 0 {
			var olds, names []string
			for old, name := range change.Rename {
				olds, names = append(olds, old), append(names, name)
			}
			_, err = tx.db.Exec(ctx, `UPDATE records SET data = (data - $3::text[])
					|| (SELECT jsonb_object_agg(r.name, data -> r.old) FROM unnest($3::text[], $4::text[]) AS r (old, name) WHERE data ? r.old),
					updated_at = now()
				WHERE project_id = $1 AND collection_id = $2 AND data ?| $3::text[]`,
				project, collection, olds, names)
			if err != nil {
				return Event{}, err
			}
		}
		if backfill := change.Backfill; len(backfill) > 0 {
			fill, err := json.Marshal(backfill)
			if err != nil {
				return Event{}, err
			}
			_, err = tx.db.Exec(ctx, `UPDATE records SET data = data || (SELECT jsonb_object_agg(k, v) FROM jsonb_each($3::jsonb) AS b (k, v)
					WHERE records.data -> k IS NULL OR records.data -> k = 'null'), updated_at = now()
				WHERE project_id = $1 AND collection_id = $2
					AND EXISTS (SELECT 1 FROM jsonb_object_keys($3::jsonb) AS k WHERE records.data -> k IS NULL OR records.data -> k = 'null')`,
				project, collection, string(fill))
			if err != nil {
				return Event{}, err
			}
		}
		summary := "collection " + collection + " fields changed"
		if name != cur.Name {
			summary += ", renamed " + name
		}
		return collectionEvent("update", project, collection, summary), nil
	})
	s.schemas.forget(project, collection)
	if err != nil {
		_ = s.dropFieldIndexes(context.WithoutCancel(ctx), built)
		return err
	}
	if inTransaction(s.db) {
		return nil
	}
	return s.dropFieldIndexes(ctx, unusedFieldIndexes(project, collection, cur.Schema, next))
}

// fieldIndexesFor builds the field indexes next needs and cur has not
// (buildFieldIndexes), and returns their names; on error none is left.
// They are built on the pool, outside any transaction, so a Store in one
// cannot change which fields are unique or indexed.
func (s *Store) fieldIndexesFor(ctx context.Context, project, collection string, cur, next schema.Schema) ([]string, error) {
	need := unusedFieldIndexes(project, collection, next, cur)
	switch {
	case inTransaction(s.db):
		// Built beforehand (PrepareFieldIndexes), or the change cannot be
		// made here; those next no longer needs are the caller's to drop.
		return nil, s.fieldIndexesBuilt(ctx, need)
	case len(need) == 0:
		return nil, nil // none to build
	}
	built, err := s.buildFieldIndexes(ctx, project, collection, cur, next)
	if err != nil {
		_ = s.dropFieldIndexes(context.WithoutCancel(ctx), built)
		return nil, err
	}
	return built, nil
}

// ErrIndexInTx is a change that needs a field's index made inside a
// transaction, where PostgreSQL cannot build one without blocking writes,
// and that was not built beforehand (PrepareFieldIndexes).
var ErrIndexInTx = errors.New("a field becomes unique or indexed: its index is built before the transaction that makes the change")

// fieldIndexesBuilt is nil when every index named is built and valid, else
// ErrIndexInTx.
func (s *Store) fieldIndexesBuilt(ctx context.Context, names []string) error {
	if len(names) == 0 {
		return nil
	}
	var valid int
	err := s.db.QueryRow(ctx, `SELECT count(*) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
		WHERE c.relname = ANY($1) AND c.relnamespace = current_schema()::regnamespace AND i.indisvalid`, names).Scan(&valid)
	if err != nil {
		return err
	}
	if valid != len(names) {
		return ErrIndexInTx
	}
	return nil
}

// PrepareFieldIndexes builds, outside any transaction and without
// blocking the records' reads and writes, the indexes that a change of a
// collection's fields from cur to next needs (next's unique and indexed
// fields that cur has not), so that a transaction can then make the
// change (SetFields and CreateCollection inside one find them built). It
// returns their names, for the caller to drop (DropFieldIndexes) when the
// change is not made; a unique field that stored records break is a
// *FieldsRefused. UnusedFieldIndexes are those to drop once it is made.
func (s *Store) PrepareFieldIndexes(ctx context.Context, project, collection string, cur, next schema.Schema) (_ []string, err error) {
	defer wrap(&err, "prepare field indexes", project, collection)
	if inTransaction(s.db) {
		return nil, ErrIndexInTx
	}
	built, err := s.buildFieldIndexes(ctx, project, collection, cur, next)
	if err != nil {
		_ = s.dropFieldIndexes(context.WithoutCancel(ctx), built)
		return nil, err
	}
	return built, nil
}

// UnusedFieldIndexes names the indexes of a collection's fields cur that
// fields next no longer need.
func UnusedFieldIndexes(project, collection string, cur, next schema.Schema) []string {
	return unusedFieldIndexes(project, collection, cur, next)
}

// DropFieldIndexes drops the field indexes named, without blocking the
// records' reads and writes.
func (s *Store) DropFieldIndexes(ctx context.Context, names []string) (err error) {
	defer wrap(&err, "drop field indexes")
	return s.dropFieldIndexes(ctx, names)
}

// eachRecord calls fn with each record of a collection that meets where
// (SQL after the collection's condition; its parameters from $3, args),
// in id order, a page at a time.
func (s *Store) eachRecord(ctx context.Context, project, collection, where string, fn func(id int64, data []byte) error, args ...any) error {
	const page = 5_000
	after := int64(0)
	for {
		n := len(args) + 3
		rows, err := s.db.Query(ctx, `SELECT id, data FROM records WHERE project_id = $1 AND collection_id = $2`+where+
			` AND id > $`+strconv.Itoa(n)+` ORDER BY id LIMIT `+strconv.Itoa(page), append(append([]any{project, collection}, args...), after)...)
		if err != nil {
			return err
		}
		var id int64
		var data []byte
		count := 0
		_, err = pgx.ForEachRow(rows, []any{&id, &data}, func() error {
			count++
			after = id
			return fn(id, data)
		})
		if err != nil || count < page {
			return err
		}
	}
}

// TypedCollections returns the schemas of a project's typed collections,
// by id, and a digest of them all (their hashes): what a document made
// from them depends on.
func (s *Store) TypedCollections(ctx context.Context, project string) (_ map[string]schema.Schema, digest string, err error) {
	defer wrap(&err, "typed collections", project)
	rows, err := s.db.Query(ctx, `SELECT id, fields, NOT additional, fields_hash FROM collections
		WHERE project_id = $1 AND fields_hash <> '' ORDER BY id`, project)
	if err != nil {
		return nil, "", err
	}
	out := map[string]schema.Schema{}
	var id, hash string
	var fields []byte
	var strict bool
	var b strings.Builder
	_, err = pgx.ForEachRow(rows, []any{&id, &fields, &strict, &hash}, func() error {
		sch := schema.Schema{Strict: strict}
		if err := json.Unmarshal(fields, &sch.Fields); err != nil {
			return err
		}
		out[id] = sch
		b.WriteString(id + "=" + hash + ";")
		return nil
	})
	return out, b.String(), err
}
